//! The `std-naive` baseline: each collective as a user would write it with the standard
//! library alone, one shared `Mutex<Vec<T>>` and one `std::sync::Barrier`. A rank locks the
//! mutex to copy its data in (or fold it into the accumulator), everyone waits at the barrier,
//! each rank locks again to copy its result out, and a second barrier keeps the next call from
//! touching the shared vector before everyone has read it.
//!
//! The reductions fold in lock order, not rank order: the first rank to arrive copies its
//! data into the accumulator and each later one folds its own in. So it needs a commutative
//! op, and for floats the result is not bit-reproducible from run to run (it is the same on
//! every rank, which copies one accumulator); a float sum still lies within the error bound
//! of any summation order, which the check allows. That is the honest naive baseline.
//!
//! A rank that fails or panics inside a call leaves the others waiting at the barrier for
//! good, as `std::sync::Barrier` cannot be cancelled; the calls here neither fail nor panic
//! in the timed loop.

use super::needs_commutative;
use crate::cell::{check_input, lengths, output, CellSpec};
use crate::domain::{Call, Form};
use crate::elem::Elem;
use crate::measure::{measure, Kernel, Measured, Pool, Timing};
use corecoll::op::Op;
use corecoll::Collective;
use corecoll::Team;
use std::any::Any;
use std::sync::{Arc, Barrier, Mutex, MutexGuard};

/// Whether `std-naive` has a version of `c`.
pub fn applies(c: Call) -> bool {
    c.form == Form::Plain
        && matches!(
            c.collective,
            Collective::Allreduce
                | Collective::Broadcast
                | Collective::Reduce
                | Collective::Allgather
                | Collective::Alltoall
                | Collective::ReduceScatter
                | Collective::Barrier
        )
}

/// Runs `std-naive` for `spec` on `team`.
pub fn run<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
    team: &Team,
    timing: &Timing,
    spec: &CellSpec,
    op: O,
) -> Result<Measured, String> {
    let spec = *spec;
    if spec.call.reduces() && !op.is_commutative() {
        return Err(needs_commutative("std-naive"));
    }
    // The shared vector: every rank's send buffer under alltoall, one buffer otherwise.
    let shared_len = match spec.call.collective {
        Collective::Alltoall => spec.p * spec.count,
        _ => spec.count,
    };
    let shared = Arc::new(Shared {
        acc: Mutex::new(Acc {
            data: vec![T::default(); shared_len],
            arrived: 0,
        }),
        barrier: Barrier::new(spec.p),
    });
    measure(team, timing, true, |comm| {
        let r = comm.rank();
        let (s, v) = lengths(&spec, r);
        let fill = move |i| T::timing_value(spec.op, r, i);
        Ok(Box::new(NaiveKernel {
            shared: shared.clone(),
            spec,
            rank: r,
            op,
            send: Pool::new(s, spec.cache, spec.p, fill),
            recv: Pool::new(v, spec.cache, spec.p, fill),
        }) as Box<dyn Kernel + '_>)
    })
}

/// What the ranks share.
struct Shared<T> {
    /// The shared vector and its arrival count.
    acc: Mutex<Acc<T>>,
    /// All ranks of the team.
    barrier: Barrier,
}

/// The mutex's contents.
struct Acc<T> {
    /// The accumulator of the reductions; the exchange buffer of the others.
    data: Vec<T>,
    /// Ranks that have folded their data into `data` in this call, modulo p: 0 means the next
    /// rank to arrive copies instead of folding.
    arrived: usize,
}

impl<T> Shared<T> {
    /// Locks the shared vector.
    fn lock(&self) -> Result<MutexGuard<'_, Acc<T>>, String> {
        self.acc
            .lock()
            .map_err(|_| "another rank panicked holding the lock".to_string())
    }
}

/// The `std-naive` kernel of one rank.
struct NaiveKernel<T, O> {
    /// Shared with every rank.
    shared: Arc<Shared<T>>,
    /// The cell.
    spec: CellSpec,
    /// This rank.
    rank: usize,
    /// The op of the reductions.
    op: O,
    /// Send buffers (the one buffer of the in-place collectives).
    send: Pool<T>,
    /// Receive buffers.
    recv: Pool<T>,
}

impl<T: Elem, O: Op<T>> NaiveKernel<T, O> {
    /// One call on the current buffers.
    fn exec(&mut self) -> Result<(), String> {
        let (p, r, n, b, root) = (
            self.spec.p,
            self.rank,
            self.spec.count,
            self.spec.block,
            self.spec.root,
        );
        let sh = &*self.shared;
        let send = self.send.current();
        let recv = self.recv.current();
        match self.spec.call.collective {
            Collective::Barrier => {
                sh.barrier.wait();
                return Ok(());
            }
            Collective::Allreduce | Collective::Reduce | Collective::ReduceScatter => {
                let mut guard = sh.lock()?;
                let acc = &mut *guard;
                if acc.arrived == 0 {
                    acc.data.copy_from_slice(send);
                } else {
                    self.op.fold_right(&mut acc.data, send);
                }
                acc.arrived = (acc.arrived + 1) % p;
            }
            Collective::Broadcast => {
                if r == root {
                    sh.lock()?.data.copy_from_slice(send);
                }
            }
            Collective::Allgather => {
                sh.lock()?.data[r * b..(r + 1) * b].copy_from_slice(send);
            }
            Collective::Alltoall => {
                sh.lock()?.data[r * n..(r + 1) * n].copy_from_slice(send);
            }
            c => return Err(format!("std-naive has no {}", c.name())),
        }
        sh.barrier.wait();
        match self.spec.call.collective {
            Collective::Reduce if r != root => {}
            Collective::Broadcast if r == root => {}
            Collective::Allreduce | Collective::Reduce | Collective::Broadcast => {
                send.copy_from_slice(&sh.lock()?.data);
            }
            Collective::ReduceScatter => {
                recv.copy_from_slice(&sh.lock()?.data[r * b..(r + 1) * b]);
            }
            Collective::Allgather => recv.copy_from_slice(&sh.lock()?.data),
            _ => {
                let acc = sh.lock()?;
                for q in 0..p {
                    let from = q * n + r * b;
                    recv[q * b..(q + 1) * b].copy_from_slice(&acc.data[from..from + b]);
                }
            }
        }
        sh.barrier.wait();
        Ok(())
    }
}

impl<T: Elem, O: Op<T>> Kernel for NaiveKernel<T, O> {
    fn touch(&mut self) -> Result<(), String> {
        self.send.touch();
        Ok(())
    }

    fn call(&mut self) -> Result<(), String> {
        self.send.next_buffer();
        self.recv.next_buffer();
        self.exec()
    }

    fn check(&mut self) -> Result<Option<Box<dyn Any + Send>>, String> {
        if self.spec.call.is_barrier() {
            return Ok(None);
        }
        // Only this rank touches its buffers, and the last call's closing barrier has kept
        // the shared vector out of every rank's reach until all had read it.
        let input = check_input::<T>(&self.spec, self.rank);
        self.send.current().copy_from_slice(&input);
        self.recv.current().fill(T::default());
        self.exec()?;
        Ok(Some(Box::new(output(
            &self.spec,
            self.send.current(),
            self.recv.current(),
        ))))
    }
}
