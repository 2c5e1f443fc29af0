//! The shared-memory direct all-to-all (shm only): single copy, two synchronisations.
//!
//! Every rank publishes its send buffer (input) and its receive buffer (output) on the
//! communicator's board (`comm::board`); once every rank has arrived, rank r copies block r of
//! every peer i's send buffer straight into block i of its own receive buffer, and phase 2
//! keeps each send buffer lent until the last reader is done. Each block moves once, from its
//! sender's memory into its receiver's, with no intermediate buffer and no hop through other
//! ranks (DESIGN.md, "Single copy where memory is shared"); the allgather's
//! `algorithms::gather::direct` is the same with one block per rank instead of p.
//!
//! **What is checked.** The published `len` is the block length n (input and output hold p·n
//! each, as the caller checked on every rank). After phase 1 each rank compares every call with
//! its own: the same block length and element type. Every rank sees the same board, so a
//! difference is seen by every rank, and all return `Error::Mismatch` without touching a
//! buffer.
//!
//! Nobody writes into another rank's buffer: each rank writes only its own output, and reads
//! only inputs, which no one writes during the call.

use super::span;
use crate::comm::board::Call;
use crate::error::Result;
use crate::transport::{type_fingerprint, Elem, Tag};
use crate::Comm;
use std::ptr;

/// Direct all-to-all of every rank's `send` (p blocks of n elements) into `recv` (p·n;
/// checked by the caller).
pub(crate) fn alltoall<T: Elem>(comm: &Comm, send: &[T], recv: &mut [T], tag: Tag) -> Result<()> {
    comm.enter("alltoall")?;
    let (p, r) = (comm.size(), comm.rank());
    let n = send.len() / p;
    debug_assert_eq!(recv.len(), p * n);
    debug_assert_eq!(send.len(), p * n);
    if p == 1 {
        recv.copy_from_slice(send);
        return Ok(());
    }
    // From here until the session ends, `recv` is touched only through `out`, by this rank.
    let out: *mut T = recv.as_mut_ptr();
    let typ = type_fingerprint::<T>();
    let call = Call {
        input: send.as_ptr().cast(),
        output: out.cast(),
        len: n,
        typ,
        op: "alltoall",
    };
    let board = &comm.shared().board;
    // SAFETY: `send` (p·n elements, borrowed shared for this whole function) is valid for
    // reads and nobody writes it; `out` covers the p·n elements of `recv`, borrowed for this
    // whole function and used only through `out`, by this rank alone, while the session
    // lasts. The session ends (finished, withdrawn, or dropped while unwinding) before this
    // function returns. `Comm` is not `Sync`, so this thread is the only one acting as this
    // rank, and its previous call on the board ended before that call returned.
    let session = unsafe { board.arrive(comm, tag.seq.wrapping_add(1), call)? };

    let session = session.expect_same(n, typ, |len, same| {
        let ty = if same { "" } else { " of another element type" };
        format!("direct alltoall of blocks of {len} elements{ty}")
    })?;

    for i in 0..p {
        #[cfg(loom)]
        session.touch(i);
        let src = session.call(i).input.cast::<T>();
        // SAFETY: the session passed phase 1 and is open; rank i published an input of p
        // blocks of n elements of `T` (its block length and type checked above; its caller
        // checked that its send holds p blocks), which nobody writes until rank i's session
        // ends, and that waits for this rank's `done`; block r, `src + r·n .. src + (r + 1)·n`,
        // lies within it. `out + i·n .. out + (i + 1)·n` lies within this rank's own
        // p·n-element output, which no one else reads or writes; the input is another borrow
        // (or this rank's own `send`, a distinct borrow from `recv`), so they do not overlap.
        unsafe { ptr::copy_nonoverlapping(src.add(span(r, n).start), out.add(i * n), n) };
    }
    session.finish(true)
}
