//! The `v` forms: gatherv and scatterv (linear), allgatherv (ring), with blocks of per-rank
//! lengths at per-rank displacements (`MPI_Gatherv`, `MPI_Scatterv`, `MPI_Allgatherv`).
//!
//! Each uses one fixed algorithm, the one that needs no block to travel with others:
//! the star of `rooted` (every block straight between its rank and the root) and the ring of
//! `allgather` (rank r passes block (r − s) mod p on in step s, each block at its own
//! displacement). The counts and displacements are checked by `Comm` before these run
//! (lengths, bounds, no overlap in a receive buffer); each receive here takes exactly the
//! count the receiver expects, and the mailbox rejects a message of another length
//! (`Error::Mismatch`), so a rank whose send length differs from what its peers expect fails
//! the run instead of writing past a block.
//!
//! **Ending together.** A sender whose message was eager may be done before its receiver finds
//! the length wrong, and in the ring a rank may have all its blocks before a peer's last
//! receive fails. So every `v` schedule ends with a dissemination barrier
//! (`algorithms::barrier`) under its own tag variant: a rank passes it only once every rank
//! has finished its part without error, so a failure anywhere is an `Err` everywhere.

use crate::algorithms::barrier;
use crate::algorithms::blocks::split_pair;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;
use std::ops::Range;

/// The tag variant of the closing barrier (the schedules' variants are algorithm ids, far
/// below it).
const CLOSING: u8 = 0xff;

/// Elements of block `i` given `counts` and `displs`.
fn block(counts: &[usize], displs: &[usize], i: usize) -> Range<usize> {
    displs[i]..displs[i] + counts[i]
}

/// Linear gatherv of every rank's `send` into `recv` on `root`, rank i's block at
/// `displs[i] .. displs[i] + counts[i]` (`counts`, `displs` and `recv` used on the root only).
pub(crate) fn gatherv<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    counts: &[usize],
    displs: &[usize],
    root: usize,
    tag: Tag,
) -> Result<()> {
    let (p, me) = (t.size(), t.rank());
    if me == root {
        for i in 0..p {
            let dst = &mut recv[block(counts, displs, i)];
            if i == me {
                crate::copy::copy_slice(&mut *dst, send);
            } else {
                t.recv(i, tag, dst)?;
            }
        }
    } else {
        t.send(root, tag, send)?;
    }
    barrier::dissemination(t, tag.with_variant(CLOSING))
}

/// Linear scatterv of `send` on `root`, rank i's block at `displs[i] .. displs[i] +
/// counts[i]`, into every rank's `recv` (`send`, `counts` and `displs` used on the root only).
pub(crate) fn scatterv<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    counts: &[usize],
    displs: &[usize],
    recv: &mut [T],
    root: usize,
    tag: Tag,
) -> Result<()> {
    let (p, me) = (t.size(), t.rank());
    if me == root {
        for i in 0..p {
            let src = &send[block(counts, displs, i)];
            if i == me {
                crate::copy::copy_slice(&mut *recv, src);
            } else {
                t.send(i, tag, src)?;
            }
        }
    } else {
        t.recv(root, tag, recv)?;
    }
    barrier::dissemination(t, tag.with_variant(CLOSING))
}

/// Ring allgatherv of every rank's `send` into every rank's `recv`, rank i's block at
/// `displs[i] .. displs[i] + counts[i]` (blocks disjoint, checked by the caller).
pub(crate) fn allgatherv<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    counts: &[usize],
    displs: &[usize],
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    crate::copy::copy_slice(&mut recv[block(counts, displs, r)], send);
    let (right, left) = ((r + 1) % p, (r + p - 1) % p);
    for s in 0..p.saturating_sub(1) {
        let out = (r + p - s) % p;
        let inc = (r + 2 * p - s - 1) % p;
        let (o, i) = split_pair(recv, block(counts, displs, out), block(counts, displs, inc));
        t.sendrecv(right, o, left, i, tag)?;
    }
    barrier::dissemination(t, tag.with_variant(CLOSING))
}
