//! Stage pipelining of the hybrid allreduce: a vector longer than one segment goes
//! through the three stages of `process::world` in segments, so that while a process's leader
//! is in MPI for segment k its other threads already reduce segment k + 1 in shared memory.
//! Open MPI's HAN pipelines its hierarchical collectives the same way (Luo et al. 2020, "HAN: a
//! Hierarchical AutotuNed Collective Communication Framework").
//!
//! **The cut.** Segments of [`segment_elements`] whole elements (the caller's
//! `Algorithm::Hierarchical { segment: Block::Elements(s) }`, else
//! `hierarchy::AUTO_SEGMENT_BYTES` worth, as the hierarchy within a process cuts), the last
//! one ragged (`blocks::block_range` over ⌈n / s⌉ segments). Every rank of every process computes the same cut from the
//! length and element size, which the call check compares (the segment is the call's block).
//!
//! **The order of calls**, the same on every thread of a process, so that the process's local
//! collectives stay in step (the leader's steps in brackets):
//!
//! ```text
//! local.reduce(s_0)                      [check between processes]
//! for k in 0..S:
//!     [start(k)]
//!     if k + 1 < S: local.reduce(s_{k+1})
//!     [finish(k)]                         [after the last: the closing agreement]
//!     local.broadcast(s_k)
//! ```
//!
//! Each segment is reduced within the process in thread order and between the processes in
//! process order, exactly as the whole vector was, so a non-commutative op keeps the global
//! rank order, and every rank ends with the leader's bits.
//!
//! **The stage between processes** is a [`Stage`]: `start(k)` and `finish(k)` on the leader,
//! with the local reduce of the next segment between them. The crate's schedules over
//! `MpiTransport` block, so for them ([`Blocking`]) `start` runs the whole allreduce of s_k
//! and `finish` nothing: the leader's MPI stage then overlaps only the other threads' part of
//! the next local reduce. MPI's own collective (`Algorithm::Native`, [`Immediate`]) starts
//! `MPI_Iallreduce` in `start` and waits in `finish`, so that it can progress while the
//! leader itself takes part in the next local reduce.
//!
//! **Checks and failures.** The call is checked once, with s_0's local result as the arrival
//! (`Bridge::across`). After that a local failure (an `Err` of a later segment's local
//! reduce or broadcast, say the team's timeout or another thread's failure; or a panic of the
//! op on the leader, caught and resumed after the stage between processes) must not leave the
//! other processes waiting, nor give them a wrong answer without an error: the leader keeps
//! doing the stage between processes for every remaining segment, with whatever its buffer
//! holds, and after the last one the leaders agree once more
//! ([`ProcessComm::agree_across`] with `Ready` or `Failed`). A failure anywhere thus becomes an
//! `Err` on every leader (its own local error, or [`Error::ProcessFailed`]), which fails its
//! process's run (`across` closes the process and fails the local run) before the last local
//! broadcast, so the other threads, waiting there for their leader, return it too. An error of
//! the stage itself follows from the agreed call alone (an algorithm that refuses the op, …),
//! so it is the same on every process at the same segment, and every leader stops there.

use crate::algorithms::blocks::block_range;
use crate::error::{Error, Result};
use crate::hierarchy;
use crate::mailbox::Elem;
use crate::op::Op;
use crate::process::bridge::Bridge;
use crate::process::leaders::check::{Arrival, Call};
use crate::process::leaders::native::{Chunk, PendingAllreduce};
use crate::process::ProcessComm;
use crate::select::{Algorithm, Block, Broadcast, Reduce};
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Elements per segment of a hybrid allreduce with `algorithm` on elements of `elem_size`
/// bytes: the hierarchy's rule (`hierarchy::segment_elements`) on the caller's
/// `Hierarchical { segment }`, else on `Block::Auto` (`hierarchy::AUTO_SEGMENT_BYTES`, 1 MiB,
/// measured for the hybrid too); zero-sized elements in `Auto` segments make one segment.
pub(in crate::process) fn segment_elements(algorithm: Algorithm, elem_size: usize) -> usize {
    let segment = match algorithm {
        Algorithm::Hierarchical { segment } => segment,
        _ => Block::Auto,
    };
    match segment {
        Block::Auto if elem_size == 0 => usize::MAX,
        _ => hierarchy::segment_elements(segment, elem_size),
    }
}

/// The leader's stage between processes for one segment, in two halves, with the local reduce
/// of the next segment between them: `start` takes the segment, `finish` gives it back holding
/// the reduction over every process (so the loop cannot touch it in between, while a
/// non-blocking implementation still uses it). Errors must follow from the agreed call alone
/// (the same on every process at the same segment): every leader then stops at that segment.
pub(in crate::process) trait Stage<'b, T> {
    /// Starts the stage between processes of the segment `seg`.
    fn start(&mut self, pc: &ProcessComm, seg: &'b mut [T]) -> Result<()>;
    /// Completes the started stage and gives its segment back.
    fn finish(&mut self, pc: &ProcessComm) -> Result<&'b mut [T]>;
}

/// The crate's blocking schedules between processes: the whole allreduce in `start`.
struct Blocking<'b, 'o, T> {
    /// The op.
    op: &'o dyn Op<T>,
    /// The algorithm between processes.
    algorithm: Algorithm,
    /// The segment between `start` and `finish`.
    held: Option<&'b mut [T]>,
}

impl<'b, T: Elem> Stage<'b, T> for Blocking<'b, '_, T> {
    fn start(&mut self, pc: &ProcessComm, seg: &'b mut [T]) -> Result<()> {
        pc.allreduce_call(seg, self.op, self.algorithm)?;
        self.held = Some(seg);
        Ok(())
    }

    fn finish(&mut self, _pc: &ProcessComm) -> Result<&'b mut [T]> {
        Ok(self.held.take().expect("finish follows start"))
    }
}

/// MPI's own allreduce (`Algorithm::Native`) as an immediate call: `MPI_Iallreduce` started
/// in `start` progresses (in MPI's progress engine, and on every poll) while the leader takes
/// part in the next segment's local reduce, and is waited for in `finish`.
struct Immediate<'b, 'o, T> {
    /// The op.
    op: &'o dyn Op<T>,
    /// The started call.
    pending: Option<PendingAllreduce<'b, T>>,
    /// The send copy's storage between calls, allocated once per allreduce.
    spare: Vec<Chunk>,
}

impl<'b, T: Elem> Stage<'b, T> for Immediate<'b, '_, T> {
    fn start(&mut self, pc: &ProcessComm, seg: &'b mut [T]) -> Result<()> {
        let copy = std::mem::take(&mut self.spare);
        self.pending = Some(pc.native_allreduce_start(seg, self.op, copy)?);
        Ok(())
    }

    fn finish(&mut self, _pc: &ProcessComm) -> Result<&'b mut [T]> {
        let (seg, copy) = self.pending.take().expect("finish follows start").wait();
        self.spare = copy;
        Ok(seg)
    }
}

/// The leader's record of its local stages after the check: the first failure, and a caught
/// panic to resume once the processes are told.
#[derive(Default)]
struct Stages {
    /// The first local error (after which the leader skips its local stages).
    failed: Option<Error>,
    /// The payload of a panic caught in a local stage.
    panic: Option<Box<dyn Any + Send>>,
}

impl Bridge {
    /// `Comm::allreduce_with` across processes on a vector of more than one segment of `seg`
    /// elements (the module docs): `call` is the call's descriptor, with the segment as its
    /// block, `stage` the leader's stage between processes.
    pub(in crate::process) fn allreduce_pipelined<T>(
        &self,
        buf: &mut [T],
        op: &dyn Op<T>,
        seg: usize,
        call: Call,
        between: Algorithm,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "allreduce";
        let n = buf.len();
        let s = n.div_ceil(seg);
        debug_assert!(s > 1);
        let local = &self.local;
        let before = self.first_stage(OP, &call, || {
            local.reduce_with(&mut buf[block_range(n, seg, 0)], op, 0, Reduce::Auto)
        });
        let mut panic = None;
        let led = self.across(OP, call, before, |pc| {
            self.lead(pc, buf, op, seg, &call, between, &mut panic)
        });
        if let Some(payload) = panic {
            // Every process has been told (the closing agreement); now this thread's panic
            // goes on as any rank's would.
            resume_unwind(payload);
        }
        led?;
        if self.is_leader() {
            return local.broadcast_with(&mut buf[block_range(n, seg, s - 1)], 0, Broadcast::Auto);
        }
        // The other threads: the same local calls as the leader's loop, stopping at the first
        // failure (after failing the local run, so that none of the process's threads waits
        // for this one).
        let fail = |e: Error| local.fail(e);
        for k in 0..s {
            if k + 1 < s {
                local
                    .reduce_with(&mut buf[block_range(n, seg, k + 1)], op, 0, Reduce::Auto)
                    .map_err(fail)?;
            }
            local
                .broadcast_with(&mut buf[block_range(n, seg, k)], 0, Broadcast::Auto)
                .map_err(fail)?;
        }
        Ok(())
    }

    /// The leader's part after the check (s_0 reduced within the process, every process
    /// ready): the loop of the module docs up to the last segment's stage between processes,
    /// then the closing agreement. A panic caught in a local stage is left in `panic`.
    #[allow(clippy::too_many_arguments)]
    fn lead<T>(
        &self,
        pc: &ProcessComm,
        buf: &mut [T],
        op: &dyn Op<T>,
        seg: usize,
        call: &Call,
        between: Algorithm,
        panic: &mut Option<Box<dyn Any + Send>>,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "allreduce";
        let n = buf.len();
        let s = n.div_ceil(seg);
        let mut state = Stages::default();
        let (mut blocking, mut immediate);
        let stage: &mut dyn Stage<'_, T> = if between == Algorithm::Native {
            immediate = Immediate {
                op,
                pending: None,
                spare: Vec::new(),
            };
            &mut immediate
        } else {
            blocking = Blocking {
                op,
                algorithm: between,
                held: None,
            };
            &mut blocking
        };
        let mut segs: Vec<Option<&mut [T]>> = buf.chunks_mut(seg).map(Some).collect();
        debug_assert_eq!(segs.len(), s);
        for k in 0..s {
            let this = segs[k].take().expect("each segment once");
            if let Err(e) = stage.start(pc, this) {
                *panic = state.panic.take();
                return Err(state.failed.unwrap_or(e));
            }
            if let Some(Some(next)) = segs.get_mut(k + 1) {
                self.guarded(&mut state, |local| {
                    local.reduce_with(next, op, 0, Reduce::Auto)
                });
            }
            let this = match stage.finish(pc) {
                Ok(this) => this,
                Err(e) => {
                    *panic = state.panic.take();
                    return Err(state.failed.unwrap_or(e));
                }
            };
            if k + 1 < s {
                self.guarded(&mut state, |local| {
                    local.broadcast_with(this, 0, Broadcast::Auto)
                });
            }
        }
        let arrival = if state.failed.is_none() {
            Arrival::Ready
        } else {
            Arrival::Failed
        };
        let agreed = pc.agree_across(call, arrival, self.rank(), self.layout.leaders(), OP);
        *panic = state.panic.take();
        match (state.failed, agreed) {
            (Some(e), _) => Err(e),
            (None, r) => r,
        }
    }

    /// Runs a local stage of the leader's loop, unless one failed already: an `Err` fails the
    /// local run and is kept, a panic too (its payload kept for later).
    fn guarded(&self, state: &mut Stages, f: impl FnOnce(&crate::local::Local) -> Result<()>) {
        if state.failed.is_some() {
            return;
        }
        let local = &self.local;
        match catch_unwind(AssertUnwindSafe(|| f(local))) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => state.failed = Some(local.fail(e)),
            Err(payload) => {
                let e = Error::Panicked {
                    rank: self.rank(),
                    message: crate::error::panic_message(payload.as_ref()),
                };
                state.failed = Some(local.fail(e));
                state.panic = Some(payload);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::hierarchy::AUTO_SEGMENT_BYTES;

    #[test]
    fn segments_cover_the_vector_in_order() {
        for (n, seg) in [
            (1usize, 1usize),
            (7, 1),
            (8, 7),
            (73, 7),
            (64, 64),
            (65, 64),
            (643, 64),
        ] {
            let s = n.div_ceil(seg);
            let mut next = 0;
            for k in 0..s {
                let r = block_range(n, seg, k);
                assert_eq!(r.start, next);
                assert!(!r.is_empty() && r.len() <= seg);
                next = r.end;
            }
            assert_eq!(next, n);
        }
    }

    #[test]
    fn segment_sizes() {
        let h = |s| Algorithm::Hierarchical { segment: s };
        assert_eq!(segment_elements(h(Block::Elements(7)), 8), 7);
        assert_eq!(segment_elements(h(Block::Elements(0)), 8), 1);
        assert_eq!(segment_elements(h(Block::Auto), 8), AUTO_SEGMENT_BYTES / 8);
        assert_eq!(
            segment_elements(Algorithm::Auto, 16),
            AUTO_SEGMENT_BYTES / 16
        );
        assert_eq!(segment_elements(Algorithm::Auto, 3 << 20), 1);
        assert_eq!(segment_elements(Algorithm::Auto, 0), usize::MAX);
    }
}
