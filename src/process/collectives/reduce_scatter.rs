//! `reduce_scatter_block` of a `Comm` whose ranks span MPI processes, in the three stages of
//! `process::world`:
//! 1. within each process, a reduce (in thread order, the crate's reduce) of the whole p·m
//!    vector to the leader, on a copy of each rank's `send`;
//! 2. between the leaders, a reduce-scatter in process order that leaves each leader its
//!    process's part, the tᵩ·m elements of its ranks' blocks;
//! 3. within each process, a scatter of that part from the leader.
//!
//! Process q's ranks are an interval, so combining within the process first and then across
//! processes in process order keeps rank order, and non-commutative ops are exact.
//!
//! **Between processes.** When every process has the same number of threads t, the parts are
//! p/P blocks of t·m elements, equal, and the crate's reduce-scatter schedules run on them as
//! between threads: the caller's `Ring` or `RecursiveHalving`, and for `Auto` recursive
//! halving (Thakur, Rabenseifner and Gropp's choice in MPICH for commutative ops; the crate's
//! keeps rank order for any op). The schedules need equal blocks, so with unequal thread counts
//! the leaders run an allreduce (`Auto` between processes) of the whole vector and keep their
//! part: simple, about twice the traffic of a reduce-scatter. `Direct` needs the ranks to share
//! memory and is refused on every rank.

use crate::algorithms::reduce_scatter as sched;
use crate::algorithms::reduce_scatter;
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{Elem, Kind};
use crate::op::Op;
use crate::process::bridge::Bridge;
use crate::process::leaders::check::Call;
use crate::select::{Algorithm, Decision, Flat, Reduce, ReduceScatter, Scatter};
use std::mem::size_of;

impl Bridge {
    /// `Comm::reduce_scatter_block_with` across processes (module docs).
    pub(crate) fn reduce_scatter_block<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &dyn Op<T>,
        algorithm: ReduceScatter,
    ) -> Result<()> {
        const OP: &str = "reduce_scatter_block";
        let (p, m) = (self.size(), recv.len());
        let (_, o, t) = self.here();
        let local = &self.local;
        let call =
            Call::of::<T>(Kind::Coll(Collective::ReduceScatter), algorithm.id(), m).with_op(op);
        let mut whole = crate::copy::to_vec(send);
        let before = self.first_stage(OP, &call, || {
            local.reduce_with(&mut whole, op, 0, Reduce::Auto)
        });
        // The leader's part: its initial contents are overwritten by the stage between
        // processes.
        let mut part = if self.is_leader() {
            crate::copy::to_vec(&whole[o * m..(o + t) * m])
        } else {
            Vec::new()
        };
        self.across(OP, call, before, |pc| {
            let l = &self.layout;
            let np = l.processes();
            if algorithm == ReduceScatter::Direct {
                return Err(crate::process::leaders::comm::shared_memory_only(
                    self.rank(),
                    OP,
                    algorithm.name(),
                    "auto, ring or recursive-halving",
                ));
            }
            if (0..np).any(|q| l.threads(q) != t) {
                pc.allreduce_call(&mut whole, op, Algorithm::Auto)?;
                crate::copy::copy_slice(&mut part, &whole[o * m..(o + t) * m]);
                return Ok(());
            }
            let schedule = match algorithm.flat() {
                Some(Flat::Schedule(s)) => s,
                _ => reduce_scatter::Schedule::RecursiveHalving,
            };
            let alg = Flat::Schedule(schedule).alg();
            let bytes = p * m * size_of::<T>();
            pc.agreed(
                OP,
                Kind::Coll(Collective::ReduceScatter),
                alg.id(),
                bytes,
                |tr, tag| sched::run(tr, &whole, &mut part, &op, schedule, tag),
            )
        })?;
        local.scatter_with(&part, recv, 0, Scatter::Auto)
    }
}
