//! Loom models of the direct scatter and gather: every rank copies its block out of the
//! root's send buffer, or into the root's receive buffer, which the root lends on the
//! communicator's board (`src/shm/README.md`, "The board of the direct collectives") through
//! the broadcast's `open_rooted`, which checks on the board that the ranks agree on length,
//! type and root before any buffer is touched.
//!
//! Under loom the board keeps a cell per (buffer owner, rank): the owner writes all of its
//! cells when it publishes and when it takes its buffers back (after phase 2, or after
//! withdrawing), and rank r accesses its own cell in the root's slot while it copies: a write
//! for the gather's copies, a read for the scatter's (the root reading its own block too). So
//! loom reports a data race if a rank could copy from (or into) the root's buffer before the
//! root published it, or after the root took it back — that is, if the root's buffer were not
//! lent for exactly as long as its readers and writers use it — and a deadlock if a wait could
//! last for ever (a failing or disagreeing rank included). Each model also asserts the exact
//! results against a reference computed here.

use super::{gather, scatter};
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::Kind;
use crate::shm::loom_world::{fail_as_panic, input, spmd, spmd_with_run};
use crate::shm::Member;

/// Panics unless `root` is a rank of `comm` and, on the root, `whole` holds `comm.size()`
/// blocks of `block`: what the communicator checks before the board (the schedules only
/// `debug_assert!` it, and the loom profile has no debug assertions). A model that breaks it
/// is wrong, not the protocol.
fn check_rooted(comm: &Member, whole: usize, block: usize, root: usize) {
    assert!(root < comm.size(), "root {root} out of range");
    if comm.rank() == root {
        assert_eq!(
            whole,
            comm.size() * block,
            "the root's buffer is not p blocks"
        );
    }
}

/// The send buffer of a scatter from `root` over `p` ranks, blocks of `n`: element i is
/// 100 · (root + 1) + i, so that each block, and whose buffer it came from, is recognisable.
fn scatter_send(root: usize, p: usize, n: usize) -> Vec<u64> {
    (0..p * n)
        .map(|i| 100 * (root as u64 + 1) + i as u64)
        .collect()
}

/// What rank `r` receives from [`scatter_send`]: block r.
fn scatter_block(root: usize, p: usize, n: usize, r: usize) -> Vec<u64> {
    scatter_send(root, p, n)[r * n..(r + 1) * n].to_vec()
}

/// What the root of a gather of `input(k, n)` from every rank k of `p` receives: the blocks
/// in rank order.
fn gathered(p: usize, n: usize) -> Vec<u64> {
    (0..p).flat_map(|k| input(k, n)).collect()
}

/// `Scatter::Direct` of blocks of `n` from `root` on `comm`, without the call check the
/// communicator makes first: the root passes [`scatter_send`], the others an empty send
/// buffer; every rank's receive buffer starts as zeros. Returns the call's result and the
/// receive buffer. A block length that differs between ranks is caught on the board.
fn scatter_from(comm: &Member, root: usize, n: usize) -> (Result<()>, Vec<u64>) {
    let send = if comm.rank() == root {
        scatter_send(root, comm.size(), n)
    } else {
        Vec::new()
    };
    let mut recv = vec![0; n];
    check_rooted(comm, send.len(), recv.len(), root);
    let res = comm.enter("scatter").and_then(|()| {
        let tag = comm.next_tag(Kind::Coll(Collective::Scatter));
        scatter(comm, &send, &mut recv, root, tag)
    });
    (res, recv)
}

/// `Gather::Direct` of `input(rank, n)` to `root` on `comm`, without the call check: the
/// root's receive buffer (p blocks) starts as zeros, the others pass an empty one. Returns
/// the call's result and the receive buffer. A block length that differs between ranks is
/// caught on the board.
fn gather_to(comm: &Member, root: usize, n: usize) -> (Result<()>, Vec<u64>) {
    let r = comm.rank();
    let send = input(r, n);
    let mut recv = vec![0; if r == root { comm.size() * n } else { 0 }];
    check_rooted(comm, recv.len(), send.len(), root);
    let res = comm.enter("gather").and_then(|()| {
        let tag = comm.next_tag(Kind::Coll(Collective::Gather));
        gather(comm, &send, &mut recv, root, tag)
    });
    assert_eq!(send, input(r, n), "the send buffer is read only");
    (res, recv)
}

// ---- Scatter::Direct ----

/// Two ranks, two calls on one board, from root 0 and then root 1, two elements per block:
/// the first call's root lends its send buffer, the second's publishes a fresh one while its
/// peer may still be finishing the first call.
#[test]
fn scatter_two_ranks_two_calls() {
    ::loom::model(|| {
        spmd(2, |comm| {
            let r = comm.rank();
            for root in [0, 1] {
                let (res, recv) = scatter_from(&comm, root, 2);
                res.expect("call");
                assert_eq!(recv, scatter_block(root, 2, 2, r), "root {root}");
            }
        });
    });
}

/// Three ranks from root 1, one element per block: ranks 0 and 2 read their blocks of the
/// root's send buffer while the root reads its own.
#[test]
fn scatter_three_ranks() {
    ::loom::model(|| {
        spmd(3, |comm| {
            let (res, recv) = scatter_from(&comm, 1, 1);
            res.expect("call");
            assert_eq!(recv, scatter_block(1, 3, 1, comm.rank()));
        });
    });
}

/// Two ranks whose block lengths differ (rank 1 expects two elements, the root 0 sends blocks
/// of one): both see it on the board after phase 1 and return `Mismatch` without touching a
/// buffer, the root still waiting for rank 1's (failed) `done` before taking its send buffer
/// back.
#[test]
fn scatter_length_mismatch() {
    ::loom::model(|| {
        spmd(2, |comm| {
            let (res, recv) = scatter_from(&comm, 0, comm.rank() + 1);
            let e = res.expect_err("the block lengths differ");
            assert!(matches!(e, Error::Mismatch { .. }), "{e:?}");
            assert!(recv.iter().all(|&x| x == 0), "nobody wrote into the buffer");
        });
    });
}

// ---- Gather::Direct ----

/// Two ranks, two calls on one board, to root 1 and then root 0, two elements per block:
/// each call's root lends its receive buffer to the other rank's write of its block.
#[test]
fn gather_two_ranks_two_calls() {
    ::loom::model(|| {
        spmd(2, |comm| {
            let r = comm.rank();
            for root in [1, 0] {
                let (res, recv) = gather_to(&comm, root, 2);
                res.expect("call");
                if r == root {
                    assert_eq!(recv, gathered(2, 2), "root {root}");
                }
            }
        });
    });
}

/// Three ranks to root 2, one element per block: ranks 0 and 1 write their blocks into the
/// root's receive buffer while the root writes its own; the root sees every block when it
/// returns.
#[test]
fn gather_three_ranks() {
    ::loom::model(|| {
        spmd(3, |comm| {
            let (res, recv) = gather_to(&comm, 2, 1);
            res.expect("call");
            if comm.rank() == 2 {
                assert_eq!(recv, gathered(3, 1));
            }
        });
    });
}

/// Three ranks, root 1; rank 2 fails the run (as its panic would) instead of calling: ranks 0
/// and 1, whichever has arrived, withdraw, each waiting until the other is resolved, and
/// return `Aborted`; nobody passed phase 1, so the root's receive buffer is untouched.
#[test]
fn gather_a_rank_failing() {
    ::loom::model(|| {
        spmd_with_run(3, |comm, run| {
            if comm.rank() == 2 {
                fail_as_panic(run, 2);
                return;
            }
            let (res, recv) = gather_to(&comm, 1, 1);
            let e = res.expect_err("rank 2 failed");
            assert!(matches!(e, Error::Aborted { .. }), "{e:?}");
            assert!(recv.iter().all(|&x| x == 0), "nobody wrote into the buffer");
        });
    });
}

/// Three ranks, blocks of one, where rank 2 names root 1 and ranks 0 and 1 name root 0: only
/// rank 2 sees that the board disagrees with its root (rank 0 publishes the receive buffer),
/// and rejects the call. Ranks 0 and 1 have passed and may write their blocks into rank 0's
/// buffer; rank 0 takes it back only after rank 1's `done` (loom's cells), and both fail in
/// phase 2 because rank 2 finished failing. Every rank returns `Err` with the mismatch as its
/// root cause, and block 2 of the root's buffer is never written.
#[test]
fn gather_root_named_by_some_ranks() {
    ::loom::model(|| {
        spmd(3, |comm| {
            let r = comm.rank();
            let root = usize::from(r == 2);
            let (res, recv) = gather_to(&comm, root, 1);
            let e = res.expect_err("the ranks name different roots");
            assert!(matches!(e.root_cause(), Error::Mismatch { .. }), "{e:?}");
            if r == 0 {
                assert_eq!(recv[2], 0, "block 2 is rank 2's, which rejected the call");
                for k in 0..2 {
                    assert!(recv[k] == 0 || recv[k] == input(k, 1)[0], "{recv:?}");
                }
            }
        });
    });
}
