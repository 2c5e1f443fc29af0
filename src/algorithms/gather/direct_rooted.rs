//! The shared-memory direct scatter and gather (shm only): single copy, two synchronisations,
//! the root's buffer shared through the communicator's board (`shm::board`), as the direct
//! broadcast shares the root's (`algorithms::broadcast::direct`, whose [`open_rooted`] both
//! use).
//!
//! **Scatter: every rank reads its block.** The root publishes its send buffer (p blocks of
//! n) as input; once every rank has arrived, every rank r copies block r straight from it into
//! its own receive buffer (the root too, its own block, in the same loop), and phase 2 keeps
//! the root's send buffer lent until the last reader is done. The p copies run at once, each
//! on its reader's core; the linear and binomial scatters instead hand every block through
//! the root's sends (and the binomial tree through intermediate ranks). It is the direct
//! broadcast with one block per reader instead of the whole buffer, so a scatter of m bytes
//! in all moves m/p per reader where the broadcast of m moves m: Träff, Gropp and Thakur's
//! guideline scatter(m) ≤ broadcast(m) ("Self-consistent MPI performance guidelines", 2010),
//! which the message-passing scatters missed against the direct broadcast.
//!
//! **Gather: every rank writes its block.** The root publishes its receive buffer (p blocks of
//! n) as output; every rank r copies its send block straight into block r of it, and phase 2
//! (the root waits for every rank's `done`, whose release orders that rank's writes before the
//! root's acquire) keeps the root's buffer lent until the last writer is done, and makes the
//! writes visible to the root before it returns. Writing rather than the root reading every
//! rank's published send buffer is the choice that makes the gather cheap: a reading root
//! would copy p blocks one after another, p·n elements through one core, each pulled from
//! another rank's cache, while writers copy n each, all at once. What writing costs is where
//! the lines end up: modified in the writers' caches, from which the root's first use of its
//! result pulls them; a reading root would pull the same lines, but inside the collective and
//! serially. The blocks are disjoint, so the writers never share a line except at a block's
//! edges (blocks not a multiple of a line), which costs a transfer of that line, never a
//! wrong result.
//!
//! **What is checked.** The published `len` is the block length n. After phase 1 each rank
//! compares every call with its own: the same block length and element type, and the root's
//! buffer (the scatter's input, the gather's output) non-null exactly at the rank it takes for
//! the root, null elsewhere. Lengths or types that differ are seen by every rank, and all
//! return `Error::Mismatch` without touching a buffer; a disagreement about the root is seen
//! at least by the ranks whose root does not match the board, whose failure fails every other
//! rank's phase 2 (as in the direct broadcast; `check::agree` normally reports it before).
//!
//! Nobody writes a buffer another rank reads: the scatter's readers write only their own
//! receive buffers, and the gather's writers read only their own send buffers and write
//! disjoint blocks of the root's.

use crate::algorithms::broadcast::direct::{open_rooted, Rooted};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::shm::Member;
use std::ptr;

/// Direct scatter of `root`'s `send` (p blocks of n, checked by the caller on the root;
/// unused elsewhere) into every rank's `recv` (n elements).
pub(crate) fn scatter<T: Elem>(
    comm: &Member,
    send: &[T],
    recv: &mut [T],
    root: usize,
    tag: Tag,
) -> Result<()> {
    rooted(comm, Rooted::Scatter, send, recv, root, tag)
}

/// Direct gather of every rank's `send` (n elements) into `root`'s `recv` (p blocks of n,
/// checked by the caller on the root; unused elsewhere).
pub(crate) fn gather<T: Elem>(
    comm: &Member,
    send: &[T],
    recv: &mut [T],
    root: usize,
    tag: Tag,
) -> Result<()> {
    rooted(comm, Rooted::Gather, send, recv, root, tag)
}

/// The direct scatter or gather (`shape`): every rank r copies block r between the root's
/// shared buffer and its own one (module docs).
fn rooted<T: Elem>(
    comm: &Member,
    shape: Rooted,
    send: &[T],
    recv: &mut [T],
    root: usize,
    tag: Tag,
) -> Result<()> {
    debug_assert_ne!(shape, Rooted::Broadcast);
    let scatter = shape == Rooted::Scatter;
    let name = if scatter {
        "direct scatter"
    } else {
        "direct gather"
    };
    comm.enter(shape.op())?;
    let (p, me) = (comm.size(), comm.rank());
    let n = if scatter { recv.len() } else { send.len() };
    debug_assert!(root < p);
    debug_assert!(me != root || (if scatter { send.len() } else { recv.len() }) == p * n);
    if p == 1 {
        crate::copy::copy_slice(&mut *recv, send);
        return Ok(());
    }
    // The root's buffer that the others share, published by the root only; on the root, from
    // here until the session ends, `send` (scatter) or `recv` (gather) is touched only through
    // these pointers.
    let is_root = me == root;
    let (input, output): (*const T, *mut T) = if scatter {
        let input = if is_root { send.as_ptr() } else { ptr::null() };
        (input, recv.as_mut_ptr())
    } else {
        let output = if is_root {
            recv.as_mut_ptr()
        } else {
            ptr::null_mut()
        };
        (send.as_ptr(), output)
    };
    // SAFETY: on the root the shared buffer is `send` (scatter: p·n elements, valid for reads,
    // and nobody writes it: it is borrowed shared for this whole function) or `recv` (gather:
    // p·n elements, borrowed exclusively for this whole function and used only through
    // `output` while the session lasts), as the caller checked; elsewhere it is null. The
    // other pointer is this rank's own `recv` (scatter: n elements, used only through `output`
    // by this rank) or `send` (gather: n elements, read only). The session ends (finished, or
    // dropped while unwinding) before this function returns; `root < p` (the caller checked).
    let session = unsafe { open_rooted(comm, shape, (input, output), n, root, tag, name)? };
    let theirs = session.call(root);
    #[cfg(loom)]
    if scatter {
        session.read_part(root, me);
    } else {
        session.touch(root);
    }
    // SAFETY: the session passed phase 1 and is open, so every rank published block length n
    // and type `T`, and the root's call (the one this rank takes for the root, checked) has the
    // non-null shared buffer of p blocks of n, lent until the root's session ends, which waits
    // for this rank's `done`. Scatter: block `me` of the root's input, which nobody writes,
    // into this rank's own `recv` (`output`), which nobody else reads or writes. Gather: this
    // rank's own `send` (`input`, read only) into block `me` of the root's output, which no
    // other rank writes (each writes its own block) and the root does not read or write
    // otherwise until its session ends. The source and the destination are distinct borrows
    // (this rank's `send` and `recv`, or two ranks' buffers), so they do not overlap.
    unsafe {
        if scatter {
            let src = theirs.input.cast::<T>().add(me * n);
            crate::copy::copy_elems(src, output, n);
        } else {
            let dst = theirs.output.cast::<T>().add(me * n);
            crate::copy::copy_elems(input, dst, n);
        }
    }
    session.finish(true)
}

#[cfg(all(test, loom))]
mod loom;

#[cfg(all(test, not(loom)))]
mod tests {
    //! The board's own checks, which `check::agree` normally makes unreachable: the direct
    //! forms called without the call check, on calls that disagree.

    use super::{gather, scatter};
    use crate::collective::Collective;
    use crate::error::{Error, Result};
    use crate::mailbox::Kind;
    use crate::shm::testing::spmd;
    use crate::shm::Member;

    /// Runs `call` on `p` ranks (each with a fresh tag) and asserts that every rank fails
    /// with a mismatch as the root cause, leaving its buffers as they were.
    fn fails_everywhere(p: usize, what: &str, call: impl Fn(&Member) -> (Result<()>, bool) + Sync) {
        let out = spmd(p, call);
        for (r, (res, untouched)) in out.into_iter().enumerate() {
            let e = res.expect_err(&format!("{what}, rank {r}: no error"));
            assert!(
                matches!(e.root_cause(), Error::Mismatch { .. }),
                "{what}, rank {r}: {e}"
            );
            assert!(untouched, "{what}, rank {r}: a buffer was written");
        }
    }

    #[test]
    fn the_board_refuses_disagreeing_calls() {
        for p in [2, 3, 5] {
            // Block length 3, or 4 on the last rank; root 0.
            let n = |r: usize| if r == p - 1 { 4 } else { 3 };
            fails_everywhere(p, "gather, another block length", |m| {
                let (me, k) = (m.rank(), n(m.rank()));
                let mut recv = vec![0u64; if me == 0 { k * p } else { 0 }];
                let tag = m.next_tag(Kind::Coll(Collective::Gather));
                let res = gather(m, &vec![1u64; k], &mut recv, 0, tag);
                (res, recv.iter().all(|&x| x == 0))
            });
            fails_everywhere(p, "scatter, another block length", |m| {
                let (me, k) = (m.rank(), n(m.rank()));
                let mut recv = vec![0u64; k];
                let tag = m.next_tag(Kind::Coll(Collective::Scatter));
                let send = vec![1u64; if me == 0 { k * p } else { 0 }];
                let res = scatter(m, &send, &mut recv, 0, tag);
                (res, recv.iter().all(|&x| x == 0))
            });
            // Every rank its own root: every rank publishes the shared buffer.
            fails_everywhere(p, "gather, every rank its own root", |m| {
                let mut recv = vec![0u64; 2 * p];
                let tag = m.next_tag(Kind::Coll(Collective::Gather));
                let res = gather(m, &[1u64; 2], &mut recv, m.rank(), tag);
                (res, recv.iter().all(|&x| x == 0))
            });
            fails_everywhere(p, "scatter, every rank its own root", |m| {
                let mut recv = [0u64; 2];
                let tag = m.next_tag(Kind::Coll(Collective::Scatter));
                let res = scatter(m, &vec![1u64; 2 * p], &mut recv, m.rank(), tag);
                (res, recv.iter().all(|&x| x == 0))
            });
            // Another element type of the same size on rank 0 (the root).
            fails_everywhere(p, "scatter, another element type", |m| {
                let tag = m.next_tag(Kind::Coll(Collective::Scatter));
                if m.rank() == 0 {
                    let mut recv = [0f32; 2];
                    let res = scatter(m, &vec![1f32; 2 * p], &mut recv, 0, tag);
                    (res, recv.iter().all(|&x| x == 0.0))
                } else {
                    let mut recv = [0u32; 2];
                    let res = scatter(m, &[], &mut recv, 0, tag);
                    (res, recv.iter().all(|&x| x == 0))
                }
            });
        }
    }

    /// A root that only some ranks name (rank 1 for the last rank, rank 0 for the others):
    /// the ranks that see the board disagree with their root fail, and with them every rank.
    #[test]
    fn a_root_named_by_some_ranks_fails_every_rank() {
        for p in [3, 4] {
            let out = spmd(p, |m| {
                let root = usize::from(m.rank() == p - 1);
                let mut recv = vec![0u64; 2 * p];
                let tag = m.next_tag(Kind::Coll(Collective::Gather));
                gather(m, &[7u64; 2], &mut recv, root, tag)
            });
            for (r, res) in out.into_iter().enumerate() {
                let e = res.expect_err(&format!("p = {p}, rank {r}: no error"));
                assert!(
                    matches!(e.root_cause(), Error::Mismatch { .. }),
                    "p = {p}, rank {r}: {e}"
                );
            }
        }
    }
}
