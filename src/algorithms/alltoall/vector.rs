//! Alltoallv: the pairwise exchange with per-peer counts and displacements
//! (`MPI_Alltoallv`).
//!
//! Rank r copies its block for itself locally, then in step k = 1 … p − 1 sends
//! `send[send_displs[r + k] ..][.. send_counts[r + k]]` to rank r + k and receives
//! `recv_counts[r − k]` elements from rank r − k into `recv[recv_displs[r − k] ..]` (mod p),
//! as `pairwise` does with equal blocks (Thakur, Rabenseifner and Gropp 2005). No block
//! travels with another, so nothing needs packing and each moves once. The counts and
//! displacements are checked by `Comm` before this runs (lengths, bounds, no overlap in the
//! receive buffer); each receive takes exactly the count the receiver expects, and the mailbox
//! rejects a message of another length (`Error::Mismatch`), so a sender whose count differs
//! from its receiver's fails the run instead of writing past a block.
//!
//! **Ending together.** A sender whose message was eager may be done before its receiver finds
//! the length wrong, and a rank may have all its blocks before a peer's later receive fails.
//! So the schedule ends with a dissemination barrier (`algorithms::barrier`) under its own tag
//! variant, as the gather family's `v` forms do: a rank passes it only once every rank has
//! finished its part without error, so a failure anywhere is an `Err` everywhere. No rank
//! hangs on the way: a rank that fails stops the run, which wakes every rank waiting for it
//! (a sender of a large message waiting for its receiver to read included).

use crate::algorithms::barrier;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;
use std::ops::Range;

/// The tag variant of the closing barrier (the schedule's variant is 0x80 | an algorithm id,
/// below it).
const CLOSING: u8 = 0xff;

/// Elements of block `i` given `counts` and `displs`.
fn block(counts: &[usize], displs: &[usize], i: usize) -> Range<usize> {
    displs[i]..displs[i] + counts[i]
}

/// Pairwise alltoallv: rank r's block for rank j is `send[send_displs[j] ..][..
/// send_counts[j]]`, received at `recv[recv_displs[r] ..][.. recv_counts[r]]` on rank j
/// (layouts checked by the caller, and `send_counts[r] == recv_counts[r]`).
pub(crate) fn alltoallv<Tr: Transport, T: Elem>(
    t: &Tr,
    send: (&[T], &[usize], &[usize]),
    recv: (&mut [T], &[usize], &[usize]),
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    let (send, send_counts, send_displs) = send;
    let (recv, recv_counts, recv_displs) = recv;
    crate::copy::copy_slice(
        &mut recv[block(recv_counts, recv_displs, r)],
        &send[block(send_counts, send_displs, r)],
    );
    for k in 1..p {
        let (dest, src) = ((r + k) % p, (r + p - k) % p);
        t.sendrecv(
            dest,
            &send[block(send_counts, send_displs, dest)],
            src,
            &mut recv[block(recv_counts, recv_displs, src)],
            tag,
        )?;
    }
    barrier::dissemination(t, tag.with_variant(CLOSING))
}
