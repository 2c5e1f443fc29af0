//! Loom models of the direct broadcast: every other rank copies the root's buffer, which the
//! root lends on the communicator's board (`src/shm/README.md`, "The board of the direct
//! collectives") through `open_rooted`, which checks on the board that the ranks agree on
//! length, type and root before any buffer is touched.
//!
//! Under loom the board keeps a cell per (buffer owner, rank): the owner writes all of its
//! cells when it publishes and when it takes its buffers back (after phase 2, or after
//! withdrawing), and rank r writes its own cell in the root's slot while it copies. So loom
//! reports a data race if a rank could copy from the root's buffer before the root published
//! it, or after the root took it back, and a deadlock if a wait could last for ever (a
//! failing rank included). Each model also asserts the exact results.

use super::direct;
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::Kind;
use crate::shm::loom_world::{input, spmd, spmd_while_failing};
use crate::shm::Member;

/// `Broadcast::Direct` of `buf` from `root` on `comm`, without the call check the
/// communicator makes first. A root out of range is an error, as in the public call; a length
/// that differs between ranks is caught on the board.
fn broadcast(comm: &Member, buf: &mut [u64], root: usize) -> Result<()> {
    comm.enter("broadcast")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Broadcast));
    direct(comm, buf, root, tag)
}

/// Two ranks, two calls from root 1 on one board (the root's slot is rewritten for the second
/// call while rank 0 may still be finishing the first): rank 0 copies rank 1's buffer each
/// time, and the root's buffer is unchanged.
#[test]
fn broadcast_two_ranks_two_calls() {
    ::loom::model(|| {
        spmd(2, |comm| {
            let r = comm.rank();
            let mut v = input(r, 2);
            broadcast(&comm, &mut v, 1).expect("first");
            assert_eq!(v, input(1, 2));
            let mut w = input(r + 2, 1);
            broadcast(&comm, &mut w, 1).expect("second");
            assert_eq!(w, input(3, 1));
        });
    });
}

/// Three ranks from root 0, two elements: ranks 1 and 2 read the root's buffer at once.
#[test]
fn broadcast_three_ranks() {
    ::loom::model(|| {
        spmd(3, |comm| {
            let mut v = input(comm.rank(), 2);
            broadcast(&comm, &mut v, 0).expect("call");
            assert_eq!(v, input(0, 2));
        });
    });
}

/// Both ranks call (root 0) while a third party fails the run: each call ends, whichever of
/// the root's withdrawal and rank 1's passing phase 1 comes first. Rank 1 has either its own
/// buffer or the whole of the root's (it may have passed and copied while the root withdrew;
/// then the root waits for its `done` before taking its buffer back, which loom's cells check),
/// and has the root's if it returns `Ok`; the root's buffer is never written.
#[test]
fn broadcast_failure_races_with_the_call() {
    ::loom::model(|| {
        spmd_while_failing(2, |comm| {
            let r = comm.rank();
            let mut v = input(r, 2);
            let res = broadcast(&comm, &mut v, 0);
            if r == 0 || res.is_ok() {
                assert_eq!(v, input(0, 2));
            } else {
                assert!(v == input(1, 2) || v == input(0, 2), "{v:?}");
            }
        });
    });
}
