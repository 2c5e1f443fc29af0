//! The `limit` baseline: the ideal data movement of each collective, with no synchronisation
//! inside a call (the harness's barrier separates the timed iterations). Every rank allocates
//! its buffers on its own thread and publishes where they lie; from then on each rank reads
//! and writes the other ranks' buffers directly, so that every element crosses the memory
//! system as few times as the collective allows. Rank r's part of one call:
//!
//! - allreduce: combines elements `split(n, p, r)` of all p buffers in rank order, and writes
//!   the result into all p buffers;
//! - reduce: the same, writing into the root's buffer only;
//! - scan, exscan: the inclusive or exclusive prefixes of elements `split(n, p, r)` across
//!   the p buffers, in place;
//! - reduce-scatter: combines block r of all p send buffers into its receive buffer;
//! - broadcast: a rank other than the root copies the root's buffer into its own;
//! - allgather(v): copies every rank's send buffer into its block of r's receive buffer, r's
//!   own first, then r + 1's, …;
//! - alltoall(v): copies block r of rank q's send buffer into block q of its receive buffer,
//!   for q = r, r + 1, …;
//! - gather(v): copies its send buffer into block r of the root's receive buffer;
//! - scatter(v): copies block r of the root's send buffer into its receive buffer.
//!
//! The reductions fold in rank order, so the result is MPI's and bit-identical on every rank.
//!
//! # Why there are no data races
//!
//! Within a call, and across calls too (the warm-up calls run back to back with no barrier,
//! so two ranks may be a call apart), every element is written by at most one rank and read
//! by no other:
//! - allreduce, reduce, scan and exscan: rank r reads and writes only elements
//!   `split(n, p, r)` of any buffer, and the ranges of different ranks are disjoint;
//! - the other collectives read the send buffers only (and the root's buffer, under
//!   broadcast), and rank r writes only its own receive buffer (its own buffer, under
//!   broadcast), except under gather, where it writes block r of the root's receive buffer;
//!   no rank reads a receive buffer during a call.
//!
//! The rule holds element by element whichever buffer of a `--cold` pool a rank is at, so
//! ranks a call apart do not conflict either. The only other writes fill the buffers:
//! `Pool::new` before the setup barrier, and the check call's loading of its inputs, between
//! two more barriers. corecoll's barrier orders memory (its messages are published with
//! release and read with acquire), so whatever a rank wrote before a barrier is visible to
//! every rank after it.
//!
//! Under `--touch` a rank writes its whole send buffer before each call, between two
//! barriers of its own, so no other rank reads it meanwhile.
//!
//! # `--cold`
//!
//! Every rank advances through its pools in lockstep: the k-th call uses buffer k mod slots of
//! every rank's pools, which is the buffer `Pool::next_buffer` would have returned, so all ranks
//! agree on the buffers that make up one call.

use super::{chunk, split};
use crate::cell::{check_input, lengths, output, CellSpec};
use crate::domain::{Cache, Call, Form};
use crate::elem::Elem;
use crate::measure::{measure, Kernel, Measured, Pool, PoolLayout, Timing};
use corecoll::op::Op;
use corecoll::Collective;
use corecoll::{Comm, Team};
use std::any::Any;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// Whether `limit` has a version of `c`: every collective that moves data.
pub fn applies(c: Call) -> bool {
    !c.is_barrier()
}

/// Runs `limit` for `spec` on `team`.
pub fn run<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
    team: &Team,
    timing: &Timing,
    spec: &CellSpec,
    op: O,
) -> Result<Measured, String> {
    let spec = *spec;
    let board = Arc::new(Board::<T> {
        ranks: (0..spec.p).map(|_| OnceLock::new()).collect(),
    });
    measure(team, timing, true, |comm| {
        let r = comm.rank();
        let (s, v) = lengths(&spec, r);
        let fill = move |i| T::timing_value(spec.op, r, i);
        let mut send = Pool::new(s, spec.cache, spec.p, fill);
        let mut recv = Pool::new(v, spec.cache, spec.p, fill);
        let published = Published {
            send: send.layout(),
            recv: recv.layout(),
            _pools: (send, recv),
        };
        if board.ranks[r].set(published).is_err() {
            return Err(format!("rank {r} published its buffers twice"));
        }
        // After this barrier every rank's buffers are published and filled.
        comm.barrier().map_err(|e| e.to_string())?;
        Ok(Box::new(LimitKernel {
            comm,
            board: board.clone(),
            spec,
            op,
            calls: 0,
            acc: vec![T::default(); chunk::<T>()],
            tmp: vec![T::default(); chunk::<T>()],
        }) as Box<dyn Kernel + '_>)
    })
}

/// One rank's buffers, as every rank reaches them.
struct Published<T> {
    /// The send pool (the one buffer of the in-place collectives).
    send: PoolLayout<T>,
    /// The receive pool.
    recv: PoolLayout<T>,
    /// The owners of the storage that `send` and `recv` point into: not touched again (as
    /// `Pool::layout` requires) and dropped with the board, after every kernel.
    _pools: (Pool<T>, Pool<T>),
}

// SAFETY: a `Published` is two pools, which are `Send` and `Sync` when `T` is, and two
// layouts whose raw pointers point into those pools' storage. Handing the pointers to other
// threads is the point of this module; every access through them follows the rule of the
// module doc.
unsafe impl<T: Send> Send for Published<T> {}
// SAFETY: a shared `Published` hands out only its layouts, which are plain values; the ranks
// that use them read and write `T` values of other threads' pools (hence `T: Send + Sync`)
// as the rule of the module doc allows.
unsafe impl<T: Send + Sync> Sync for Published<T> {}

/// What the ranks of one run share: each rank's buffers, set by that rank in its setup.
struct Board<T> {
    /// By rank; written once each, before the setup barrier.
    ranks: Vec<OnceLock<Published<T>>>,
}

impl<T> Board<T> {
    /// Rank `q`'s buffers (published before the setup barrier).
    fn of(&self, q: usize) -> &Published<T> {
        self.ranks[q]
            .get()
            .expect("every rank publishes its buffers before the setup barrier")
    }
}

/// Elements `range` of the buffer of the `k`-th call of `layout`'s pool, to read.
///
/// # Safety
///
/// The pool is alive, and no rank writes these elements while the slice lives.
unsafe fn part<'a, T>(layout: PoolLayout<T>, k: usize, range: Range<usize>) -> &'a [T] {
    assert!(range.start <= range.end && range.end <= layout.len);
    // SAFETY: the buffer holds `layout.len` initialised elements from `layout.buffer(k)`
    // (`Pool::new` filled them) and `range` lies inside it (asserted); the pool is alive and
    // nobody writes the elements meanwhile (the caller's promise).
    unsafe { std::slice::from_raw_parts(layout.buffer(k).add(range.start), range.len()) }
}

/// Elements `range` of the buffer of the `k`-th call of `layout`'s pool, to write.
///
/// # Safety
///
/// The pool is alive, and no other rank reads or writes these elements, nor does this rank
/// through another slice, while the slice lives.
unsafe fn part_mut<'a, T>(layout: PoolLayout<T>, k: usize, range: Range<usize>) -> &'a mut [T] {
    assert!(range.start <= range.end && range.end <= layout.len);
    // SAFETY: in bounds and initialised as in `part`; the access is exclusive (the caller's
    // promise).
    unsafe { std::slice::from_raw_parts_mut(layout.buffer(k).add(range.start), range.len()) }
}

/// `range` in pieces of at most `size` elements.
fn chunks(range: Range<usize>, size: usize) -> impl Iterator<Item = Range<usize>> {
    let end = range.end;
    range.step_by(size).map(move |s| s..(s + size).min(end))
}

/// `range` shifted by `by`.
fn shift(range: &Range<usize>, by: usize) -> Range<usize> {
    range.start + by..range.end + by
}

/// The `limit` kernel of one rank.
struct LimitKernel<'c, T, O> {
    /// This rank's communicator (for the check's barriers).
    comm: &'c Comm,
    /// Every rank's buffers.
    board: Arc<Board<T>>,
    /// The cell.
    spec: CellSpec,
    /// The op of the reductions.
    op: O,
    /// Calls so far; the k-th call uses buffer k mod slots of every pool.
    calls: usize,
    /// A chunk's accumulator.
    acc: Vec<T>,
    /// A chunk's saved input (exscan).
    tmp: Vec<T>,
}

impl<T: Elem, O: Op<T>> LimitKernel<'_, T, O> {
    /// Rank r's part of the `k`-th call (the list in the module doc). Every `unsafe` block
    /// below stays within rank r's elements as the module doc's rule assigns them.
    fn exec(&mut self, k: usize) {
        let LimitKernel {
            comm,
            board,
            spec,
            op,
            acc,
            tmp,
            ..
        } = self;
        let (p, r, n, b, root) = (spec.p, comm.rank(), spec.count, spec.block, spec.root);
        let send = |q: usize| board.of(q).send;
        let recv = |q: usize| board.of(q).recv;
        let size = chunk::<T>();
        let exclusive = spec.call.form == Form::Exclusive;
        match spec.call.collective {
            Collective::Allreduce | Collective::Reduce if p > 1 => {
                // The accumulator is the chunk of one of the buffers themselves (rank 0's
                // for allreduce, the root's for reduce), so each input chunk is read once,
                // the combined chunk written once there, and copied on while it is in the
                // first-level cache: the fewest bytes moved. Rank order holds: inputs below
                // the accumulator's owner fold in from the left, the others from the right.
                let (owner, to_all) = match spec.call.collective {
                    Collective::Allreduce => (0, true),
                    _ => (root, false),
                };
                for c in chunks(split::<T>(n, p, r), size) {
                    // SAFETY: `c` lies in `split(n, p, r)`, elements
                    // that only rank r reads or writes, in any rank's buffer; `acc` and each
                    // operand are chunks of two different buffers.
                    let acc = unsafe { part_mut(send(owner), k, c.clone()) };
                    for q in (0..owner).rev() {
                        // SAFETY: elements `c` of rank r's range in rank q's buffer, which is not `acc`'s.
                        op.fold_left(unsafe { part(send(q), k, c.clone()) }, acc);
                    }
                    for q in owner + 1..p {
                        // SAFETY: elements `c` of rank r's range in rank q's buffer, which is not `acc`'s.
                        op.fold_right(acc, unsafe { part(send(q), k, c.clone()) });
                    }
                    if to_all {
                        for q in 1..p {
                            // SAFETY: elements `c` of rank r's range in rank q's buffer
                            // (q ≠ 0), which is not `acc`'s.
                            unsafe { part_mut(send(q), k, c.clone()) }.copy_from_slice(acc);
                        }
                    }
                }
            }
            Collective::Scan if p > 1 && !exclusive => {
                for c in chunks(split::<T>(n, p, r), size) {
                    for q in 1..p {
                        // SAFETY: elements `c` of rank r's range (as above), in two different
                        // ranks' buffers, so the two slices do not overlap.
                        let lhs = unsafe { part(send(q - 1), k, c.clone()) };
                        // SAFETY: as for `lhs`: rank q's buffer is not rank q − 1's.
                        let out = unsafe { part_mut(send(q), k, c.clone()) };
                        op.fold_left(lhs, out);
                    }
                }
            }
            Collective::Scan if p > 1 && exclusive => {
                for c in chunks(split::<T>(n, p, r), size) {
                    let (acc, tmp) = (&mut acc[..c.len()], &mut tmp[..c.len()]);
                    // SAFETY: elements `c` of rank r's range, as under allreduce, of rank 0's
                    // buffer; one slice at a time.
                    acc.copy_from_slice(unsafe { part(send(0), k, c.clone()) });
                    for q in 1..p {
                        // SAFETY: elements `c` of rank r's range in rank q's buffer; no other slice of it lives.
                        let out = unsafe { part_mut(send(q), k, c.clone()) };
                        tmp.copy_from_slice(out);
                        out.copy_from_slice(acc);
                        if q + 1 < p {
                            op.fold_right(acc, tmp);
                        }
                    }
                }
            }
            Collective::ReduceScatter => {
                let mine = r * b..(r + 1) * b;
                for c in chunks(0..b, size) {
                    // SAFETY: rank r alone writes its receive buffer; send buffers are only
                    // read during calls; they are different pools, so the slices are disjoint.
                    let out = unsafe { part_mut(recv(r), k, c.clone()) };
                    // SAFETY: a block of rank 0's send buffer, only read during calls.
                    out.copy_from_slice(unsafe { part(send(0), k, shift(&c, mine.start)) });
                    for q in 1..p {
                        // SAFETY: a block of rank q's send buffer, only read during calls.
                        op.fold_right(out, unsafe { part(send(q), k, shift(&c, mine.start)) });
                    }
                }
            }
            Collective::Broadcast if r != root => {
                // SAFETY: a non-root rank alone reads and writes its own buffer; the root's is
                // only read during calls.
                let out = unsafe { part_mut(send(r), k, 0..n) };
                // SAFETY: the root's buffer, only read during calls.
                out.copy_from_slice(unsafe { part(send(root), k, 0..n) });
            }
            Collective::Gather => {
                // SAFETY: rank r alone writes block r of the root's receive buffer, which no
                // rank reads during a call; send buffers are only read.
                let out = unsafe { part_mut(recv(root), k, r * b..(r + 1) * b) };
                // SAFETY: block r of rank r's send buffer, only read during calls.
                out.copy_from_slice(unsafe { part(send(r), k, 0..b) });
            }
            Collective::Scatter => {
                // SAFETY: rank r alone touches its receive buffer; send buffers are only read.
                let out = unsafe { part_mut(recv(r), k, 0..b) };
                // SAFETY: the root's send buffer, only read during calls.
                out.copy_from_slice(unsafe { part(send(root), k, r * b..(r + 1) * b) });
            }
            Collective::Allgather => {
                for q in (r..p).chain(0..r) {
                    // SAFETY: as under scatter.
                    let out = unsafe { part_mut(recv(r), k, q * b..(q + 1) * b) };
                    // SAFETY: rank q's send buffer, only read during calls.
                    out.copy_from_slice(unsafe { part(send(q), k, 0..b) });
                }
            }
            Collective::Alltoall => {
                for q in (r..p).chain(0..r) {
                    // SAFETY: as under scatter.
                    let out = unsafe { part_mut(recv(r), k, q * b..(q + 1) * b) };
                    // SAFETY: rank q's send buffer, only read during calls.
                    out.copy_from_slice(unsafe { part(send(q), k, r * b..(r + 1) * b) });
                }
            }
            // The reductions on one rank (the input is the result), the broadcast's root, and
            // the barrier (which has no `limit`): nothing moves.
            _ => {}
        }
    }
}

impl<T: Elem, O: Op<T>> Kernel for LimitKernel<'_, T, O> {
    /// Under `--touch`, between two barriers of its own, writes this rank's whole send buffer
    /// of the next call as `Pool::new` filled it: nothing inside a call synchronises, so
    /// without the first the other ranks might still read the buffer in the call before, and
    /// without the second (the warm-up calls have no barrier of the harness between them)
    /// already in the next.
    fn touch(&mut self) -> Result<(), String> {
        if self.spec.cache != Cache::Touch {
            return Ok(());
        }
        self.comm.barrier().map_err(|e| e.to_string())?;
        let (r, op) = (self.comm.rank(), self.spec.op);
        let send = self.board.of(r).send;
        // SAFETY: after the first barrier every rank has finished the calls before the next,
        // and none starts the next before the second, so no rank reads or writes this buffer
        // meanwhile.
        let buf = unsafe { part_mut(send, self.calls + 1, 0..send.len) };
        for (i, x) in buf.iter_mut().enumerate() {
            *x = T::timing_value(op, r, i);
        }
        self.comm.barrier().map_err(|e| e.to_string())
    }

    fn call(&mut self) -> Result<(), String> {
        self.calls += 1;
        self.exec(self.calls);
        Ok(())
    }

    fn check(&mut self) -> Result<Option<Box<dyn Any + Send>>, String> {
        let e = |e: corecoll::Error| e.to_string();
        let (r, k) = (self.comm.rank(), self.calls);
        let (send, recv) = {
            let me = self.board.of(r);
            (me.send, me.recv)
        };
        // Every rank has finished its last timed call after this barrier…
        self.comm.barrier().map_err(e)?;
        let input = check_input::<T>(&self.spec, r);
        // SAFETY: between this barrier and the next no rank calls, so this rank alone touches
        // its own buffers.
        unsafe { part_mut(send, k, 0..send.len) }.copy_from_slice(&input);
        // SAFETY: as above.
        unsafe { part_mut(recv, k, 0..recv.len) }.fill(T::default());
        // …and has loaded its inputs after this one.
        self.comm.barrier().map_err(e)?;
        self.exec(k);
        // After this barrier every rank's call is done and nobody writes any more.
        self.comm.barrier().map_err(e)?;
        // SAFETY: no rank writes after the last barrier.
        let out = output(&self.spec, unsafe { part(send, k, 0..send.len) }, unsafe {
            part(recv, k, 0..recv.len)
        });
        Ok(Some(Box::new(out)))
    }
}
