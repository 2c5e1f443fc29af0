//! The shared-memory direct reduce-scatter (shm only): single copy, two synchronisations.
//!
//! Every rank publishes its input (`send`, p blocks of n elements) and its output (`recv`, n
//! elements) on the communicator's board (`shm::board`). Once every rank has arrived, rank r
//! folds block r of all p inputs, read in place from the other ranks' memory in rank order,
//! straight into its own output: x₀'s block copied in, then `fold_right` with x₁, …, x_{p−1}
//! (((x₀ ⊙ x₁) ⊙ x₂) ⊙ …, exactly the sequential left fold, so floating-point results are the
//! sequential ones). Each input byte is read once and each output byte written once, with no
//! message and no scratch buffer: the traffic lower bound, which only a shared address space
//! allows (DESIGN.md, "Shared-memory direct"; the allreduce's `algorithms::allreduce::direct`
//! does the same and then writes every slice into every output). The block is processed in
//! chunks of 4 KiB (`shm::board::fold_chunk`), so that the accumulator stays in L1 while the p operands stream
//! past it.
//!
//! **What is checked.** The published `len` is the block length n (the input holds p·n
//! elements, checked by the caller). After phase 1 each rank compares every call with its
//! own: the same n and element type. Every rank sees the same board, so a difference is seen
//! by every rank, and all return `Error::Mismatch` without touching a buffer.
//!
//! **Failures.** Nobody writes into another rank's buffer: each rank writes only its own
//! output and reads only inputs, which nobody writes during the call. If the op panics on a
//! rank, that rank's session is dropped while unwinding: it fails the run and, before the
//! unwinding can free its input, waits until every peer has finished reading it; every peer's
//! phase 2 then sees the failed rank and returns `Err`.

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::shm::fold_chunk;
use crate::shm::Member;

/// Direct reduce-scatter: block `comm.rank()` of the rank-order reduction of every rank's
/// `send` (p blocks of `recv.len()` elements; checked by the caller) lands in `recv`.
pub(crate) fn direct<T: Elem, O: Op<T>>(
    comm: &Member,
    send: &[T],
    recv: &mut [T],
    op: &O,
    tag: Tag,
) -> Result<()> {
    const OP: &str = "reduce_scatter_block";
    comm.enter(OP)?;
    let (p, me, n) = (comm.size(), comm.rank(), recv.len());
    debug_assert_eq!(send.len(), p * n);
    if p == 1 {
        crate::copy::copy_slice(&mut *recv, send);
        return Ok(());
    }
    // From here until the session ends, `recv` is touched only through `out`, by this rank.
    let out: *mut T = recv.as_mut_ptr();
    // SAFETY: `send` (p·n ≥ n elements, borrowed shared for this whole function) is valid for
    // reads and nobody writes it; `out` covers the n elements of `recv`, borrowed exclusively
    // for this whole function and used only through `out`, by this rank alone, while the
    // session lasts. The session ends (finished, withdrawn, or dropped while unwinding, which
    // waits as finishing does) before this function returns. `Comm` is not `Sync`, so this
    // thread is the only one acting as this rank, and its previous call on the board ended
    // before that call returned.
    let session = unsafe {
        comm.shared().board.open(
            comm,
            tag,
            send.as_ptr(),
            out,
            n,
            OP,
            "direct reduce_scatter_block of blocks",
        )?
    };

    #[cfg(loom)]
    for owner in 0..p {
        session.touch(owner);
    }
    let chunk = fold_chunk::<T>();
    let mut start = 0;
    while start < n {
        let len = chunk.min(n - start);
        // SAFETY: the session passed phase 1 and is open, and every rank published an input
        // of p·n elements of `T` (n checked just above, p·n by each rank's caller), so the
        // chunk's elements of block `me`, `me·n + start .. + len`, lie within every input
        // (me·n + start + len ≤ (me + 1)·n); no one writes an input during the call. `out +
        // start .. + len` lies within this rank's own output (n elements), which only this
        // rank touches and which no input overlaps (the output is an exclusive borrow, every
        // input a shared one).
        unsafe {
            let acc = std::slice::from_raw_parts_mut(out.add(start), len);
            session.fold_inputs(me * n + start, acc, 0, op);
        }
        start += len;
    }
    session.finish(true)
}
