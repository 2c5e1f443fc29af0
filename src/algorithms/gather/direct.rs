//! The shared-memory direct allgather (shm only): single copy, two synchronisations.
//!
//! Every rank publishes its send block (input) and its receive buffer (output) on the
//! communicator's board (`shm::board`); once every rank has arrived, every rank copies every
//! peer's block straight from that peer's send buffer into its own receive buffer, and phase 2
//! keeps each send buffer lent until the last reader is done. Each block moves once from its
//! owner's memory into each reader's, with no intermediate buffer and no hop through other
//! ranks (DESIGN.md, "Single copy where memory is shared"; the broadcast's
//! `algorithms::broadcast::direct` does the same with one source). The direct all-to-all
//! (`algorithms::alltoall`) is the same exchange with p blocks per input, of which each rank
//! reads its own: both run [`blocks`].
//!
//! **What is checked.** The published `len` is the block length n (the output holds p·n).
//! After phase 1 each rank compares every call with its own: the same block length and
//! element type. Every rank sees the same board, so a difference is seen by every rank, and
//! all return `Error::Mismatch` without touching a buffer.
//!
//! Nobody writes into another rank's buffer: each rank writes only its own output, and reads
//! only inputs, which no one writes during the call.

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::shm::Member;

/// Direct allgather of every rank's `send` (n elements) into `recv` (p·n elements; checked by
/// the caller).
pub(crate) fn allgather<T: Elem>(
    comm: &Member,
    send: &[T],
    recv: &mut [T],
    tag: Tag,
) -> Result<()> {
    blocks(comm, "allgather", send, recv, send.len(), false, tag)
}

/// The single-copy exchange behind the direct allgather and all-to-all: every rank publishes
/// `send` and `recv` and copies one block of n elements out of every rank i's `send` into
/// block i of its own `recv` (p·n elements; checked by the caller). The block read is the
/// whole of `send` (n elements) for the allgather, or block r of p (`send` holds p·n) when
/// `own_block` is set, the all-to-all's block for this rank r.
pub(crate) fn blocks<T: Elem>(
    comm: &Member,
    op: &'static str,
    send: &[T],
    recv: &mut [T],
    n: usize,
    own_block: bool,
    tag: Tag,
) -> Result<()> {
    comm.enter(op)?;
    let (p, r) = (comm.size(), comm.rank());
    let at = if own_block { r * n } else { 0 };
    debug_assert_eq!(recv.len(), p * n);
    debug_assert_eq!(send.len(), if own_block { p * n } else { n });
    if p == 1 {
        crate::copy::copy_slice(&mut *recv, send);
        return Ok(());
    }
    // From here until the session ends, `recv` is touched only through `out`, by this rank.
    let out: *mut T = recv.as_mut_ptr();
    // SAFETY: `send` (borrowed shared for this whole function) is valid for reads and nobody
    // writes it; `out` covers the p·n elements of `recv`, borrowed for this whole function and
    // used only through `out`, by this rank alone, while the session lasts. The session ends
    // (finished, withdrawn, or dropped while unwinding) before this function returns. `Comm`
    // is not `Sync`, so this thread is the only one acting as this rank, and its previous call
    // on the board ended before that call returned.
    let session = unsafe {
        comm.shared().board.open(
            comm,
            tag,
            send.as_ptr(),
            out,
            n,
            op,
            &format!("direct {op} of blocks"),
        )?
    };

    for i in 0..p {
        #[cfg(loom)]
        session.touch(i);
        let src = session.call(i).input.cast::<T>();
        // SAFETY: the session passed phase 1 and is open; rank i published an input of `T`
        // with the same block length n (checked above) and the same shape as this rank's (n
        // elements for the allgather, p blocks of n for the all-to-all, as every caller
        // checked), which nobody writes until rank i's session ends, and that waits for this
        // rank's `done`; `src + at .. src + at + n` lies within it. `out + i·n .. out +
        // (i + 1)·n` lies within this rank's own p·n-element output, which no one else reads
        // or writes; the input is another borrow (or this rank's own `send`, a distinct borrow
        // from `recv`), so they do not overlap.
        unsafe { crate::copy::copy_elems(src.add(at), out.add(i * n), n) };
    }
    session.finish(true)
}
