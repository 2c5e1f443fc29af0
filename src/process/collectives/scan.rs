//! `scan` and `exscan` of a `Comm` whose ranks span MPI processes, in the three stages of
//! `process::world`:
//! 1. within each process, the scan (or exscan) in thread order (the crate's, with the
//!    caller's algorithm), and the process's total, x_{oᵩ} ⊙ … ⊙ x_{oᵩ+tᵩ−1}, to the leader:
//!    the last thread's inclusive result (for an exscan, its exclusive result ⊙ its own
//!    operand), moved to the leader if the last thread is not the leader;
//! 2. between the leaders, an exclusive scan of the totals in process order (the crate's
//!    schedule, `algorithms::scan::run`, over MPI; the caller's algorithm, `Auto` taken as
//!    recursive doubling), which leaves process q > 0 the prefix Pᵩ = x₀ ⊙ … ⊙ x_{oᵩ−1};
//! 3. within each process q > 0, a broadcast of Pᵩ from the leader, and each rank combines it
//!    on the left of its own result: Pᵩ ⊙ (its scan within the process); for an exscan,
//!    thread 0 takes Pᵩ itself (the exclusive prefix of rank oᵩ). Process 0 has no prefix: its
//!    ranks wait for the leader (a barrier) and keep the results of stage 1, rank 0's `buf`
//!    unchanged by an exscan, as `Comm::exscan` documents.
//!
//! The lower ranks' operand stays on the left at every step, so any associative op is exact.
//! The check between processes tells scan from exscan by the `V_FORM` bit on the algorithm.

use crate::algorithms::scan as sched;
use crate::algorithms::scan;
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{Elem, Kind};
use crate::op::Op;
use crate::process::bridge::Bridge;
use crate::process::collectives::gather::common::V_FORM;
use crate::process::leaders::check::Call;
use crate::select::{Barrier, Broadcast, Decision, Scan};
use std::mem::{size_of, size_of_val};

impl Bridge {
    /// `Comm::scan_with` across processes (module docs).
    pub(crate) fn scan<T: Elem>(
        &self,
        buf: &mut [T],
        op: &dyn Op<T>,
        algorithm: Scan,
    ) -> Result<()> {
        self.prefix("scan", buf, op, algorithm, false)
    }

    /// `Comm::exscan_with` across processes (module docs).
    pub(crate) fn exscan<T: Elem>(
        &self,
        buf: &mut [T],
        op: &dyn Op<T>,
        algorithm: Scan,
    ) -> Result<()> {
        self.prefix("exscan", buf, op, algorithm, true)
    }

    /// The common body of `scan` and `exscan`.
    fn prefix<T: Elem>(
        &self,
        name: &'static str,
        buf: &mut [T],
        op: &dyn Op<T>,
        algorithm: Scan,
        exclusive: bool,
    ) -> Result<()> {
        let (q, _, t) = self.here();
        let local = &self.local;
        let me = local.rank();
        let last = me == t - 1;
        let own = (exclusive && last).then(|| crate::copy::to_vec(buf));
        let word = algorithm.id() | if exclusive { V_FORM } else { 0 };
        let call = Call::of::<T>(Kind::Coll(Collective::Scan), word, buf.len()).with_op(op);
        let before = self.first_stage(name, &call, || {
            if exclusive {
                local.exscan_with(buf, op, algorithm)
            } else {
                local.scan_with(buf, op, algorithm)
            }
        });
        // The process total, on the last thread.
        let total = |buf: &[T]| -> Vec<T> {
            match &own {
                Some(x) if t > 1 => {
                    let mut s = crate::copy::to_vec(buf);
                    op.fold_right(&mut s, x);
                    s
                }
                Some(x) => x.clone(),
                None => crate::copy::to_vec(buf),
            }
        };
        // `acc`: on the leader, the total and then the prefix (its initial contents, where it
        // is not the total, are overwritten before they are read).
        let mut acc = if last || self.is_leader() {
            total(buf)
        } else {
            Vec::new()
        };
        let before = before.and_then(|| {
            if t > 1 {
                let from = if last { acc.clone() } else { Vec::new() };
                let into: &mut [T] = if self.is_leader() { &mut acc } else { &mut [] };
                self.to_leader(t - 1, &from, into)
            } else {
                Ok(())
            }
        });
        self.across(name, call, before, |pc| {
            let np = self.layout.processes();
            let (alg, schedule) = match algorithm.schedule() {
                Some(s) => (algorithm, s),
                None => {
                    let s = scan::Schedule::RecursiveDoubling;
                    (s.alg(), s)
                }
            };
            let block = alg.block_elements(np, acc.len(), size_of::<T>(), pc.costs());
            let bytes = size_of_val(&acc[..]);
            pc.agreed(
                name,
                Kind::Coll(Collective::Scan),
                word,
                bytes,
                |tr, tag| sched::run(tr, &mut acc, &op, schedule, block, true, tag),
            )
        })?;
        if q == 0 {
            return local.barrier_with(Barrier::Auto);
        }
        if !self.is_leader() {
            acc = crate::copy::to_vec(buf);
        }
        local.broadcast_with(&mut acc, 0, Broadcast::Auto)?;
        if exclusive && me == 0 {
            crate::copy::copy_slice(&mut *buf, &acc);
        } else {
            op.fold_left(&acc, buf);
        }
        Ok(())
    }
}
