//! The shared-memory direct reduce (shm only): single copy into the root, two
//! synchronisations.
//!
//! Every rank publishes its buffer on the communicator's board (`shm::board`), and once all
//! have arrived, rank `i` reduces slice `i` of the vector (the partition of
//! `algorithms::allreduce::direct`: `n mod p` slices of ⌈n/p⌉ first), reading the p inputs
//! straight from the other ranks' memory in rank order (x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}), and writes the
//! result straight into the root's buffer — the only output; the other ranks' buffers are
//! only read. Each input byte is read once and each output byte written once: (p + 1)S bytes
//! of memory traffic for p ranks of S bytes, with all p ranks sharing the work. This is the
//! single-copy scheme of XHC in Open MPI and of MPICH's shared-memory collectives (DESIGN.md,
//! "Shared-memory direct"), reduced to one output.
//!
//! The slice is processed in chunks of 4 KiB (`shm::board::fold_chunk`): the chunk is accumulated (input 0,
//! then `fold_right` with inputs 1 … p − 1) and written into the root's buffer while in L1.
//! The root's buffer is its input too (in place), so the accumulator is the root's own chunk
//! only where that loses no operand still to be read — root 0 (it holds x₀ already) and root 1
//! (x₀ folded in on the left gives x₀ ⊙ x₁) — as the allreduce's in-place case does; for any
//! other root a chunk-sized scratch accumulates, and the root's chunk is overwritten only
//! after its input was folded in. Every chunk is combined as ((x₀ ⊙ x₁) ⊙ x₂) ⊙ …, the
//! sequential left fold.
//!
//! Ranks that pass different lengths or element types all see it on the board after phase 1;
//! all of them then return `Error::Mismatch` without touching any buffer.

use crate::algorithms::blocks::block_start as slice_start;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::shm::Member;
use crate::shm::{fold_chunk, Session};

/// Direct reduce: the rank-order reduction of every rank's `buf` lands in `buf` on `root`;
/// the other ranks' `buf` is only read.
pub(super) fn direct_reduce<T: Elem, O: Op<T>>(
    comm: &Member,
    buf: &mut [T],
    op: &O,
    root: usize,
    tag: Tag,
) -> Result<()> {
    let (p, me, n) = (comm.size(), comm.rank(), buf.len());
    if p == 1 {
        return Ok(());
    }
    // From here until the session ends, `buf` is touched only through `ptr` (by the slice
    // owners: read everywhere, written on the root only), never through the reference.
    let ptr: *mut T = buf.as_mut_ptr();
    // SAFETY: `ptr` covers the `n` elements of `buf`, borrowed (exclusively) for this whole
    // function, and the session ends (finished, withdrawn, or dropped while unwinding, which
    // waits as finishing does) before it returns; `buf` is not used through the reference
    // meanwhile. `Comm` is not `Sync`, so this thread is the only one acting as this rank, and
    // its previous call on the board ended before that call returned.
    let session = unsafe {
        comm.shared().board.open(
            comm,
            tag,
            ptr.cast_const(),
            ptr,
            n,
            "reduce",
            "direct reduce",
        )?
    };

    // SAFETY: the session passed phase 1 and is open; every published call has `n` elements
    // of `T` (checked just above); `root < p` was checked by the caller.
    unsafe { reduce_slice(&session, p, me, n, root, op) };
    session.finish(true)
}

/// Reduces this rank's slice of the vector from every published input into the root's
/// output, chunk by chunk.
///
/// # Safety
///
/// `session` must have passed phase 1 and not be finished, every rank's call must have `n`
/// elements of `T` with `input == output` (in place), the caller is rank `me`, and
/// `root < p`.
unsafe fn reduce_slice<T: Elem, O: Op<T>>(
    session: &Session<'_>,
    p: usize,
    me: usize,
    n: usize,
    root: usize,
    op: &O,
) {
    let (lo, hi) = (slice_start(n, p, me), slice_start(n, p, me + 1));
    if lo == hi {
        return;
    }
    #[cfg(loom)]
    for owner in 0..p {
        session.touch(owner);
    }
    let chunk = fold_chunk::<T>();
    let input = |k: usize, start: usize, len: usize| {
        // SAFETY: see the loop below (`start + len ≤ n`, every input has n elements).
        unsafe { std::slice::from_raw_parts(session.call(k).input.cast::<T>().add(start), len) }
    };
    let out = session.call(root).output.cast::<T>();
    // Accumulate in the root's own chunk where no operand is lost (module docs).
    // (Not for an op that combines every operand at once, `Op::pairwise`, beyond two ranks.)
    let own_acc = root <= 1 && (op.pairwise() || p <= 2);
    let mut scratch: Vec<T> = Vec::with_capacity(if own_acc { 0 } else { chunk.min(hi - lo) });
    let mut start = lo;
    while start < hi {
        let len = chunk.min(hi - start);
        // SAFETY: for the whole chunk, by phase 1, every rank's buffer is valid for `n`
        // elements and, until this rank stores `done`, only rank `me` reads or writes the
        // elements `lo..hi` of any of them, so the slices below cover memory nobody else
        // accesses meanwhile. The inputs were written before their owners' `arrived` stores,
        // which this rank acquired. Only the root's buffer is written, and only after (or,
        // for roots 0 and 1, in the same place as) the operands it held were folded in; no
        // shared slice of it is alive while the mutable one is used.
        unsafe {
            if own_acc {
                let acc = std::slice::from_raw_parts_mut(out.add(start), len);
                // The root's chunk holds x_root: x₀ already for root 0, x₀ ⊙ x₁ after this
                // fold for root 1.
                if root == 1 {
                    op.fold_left(input(0, start, len), acc);
                }
                session.fold_inputs(start, acc, root + 1, op);
            } else {
                scratch.clear();
                crate::copy::extend(&mut scratch, input(0, start, len));
                session.fold_inputs(start, &mut scratch, 1, op);
                std::ptr::copy_nonoverlapping(scratch.as_ptr(), out.add(start), len);
            }
        }
        start += len;
    }
}
