//! Loom models of the flat single-copy rooted collectives, which share one rank's buffer on
//! the communicator's board (`src/comm/board.rs`): the direct broadcast
//! (`src/algorithms/broadcast/direct.rs`; every other rank copies the root's buffer) and the
//! direct scatter and gather (`src/algorithms/gather/direct_rooted.rs`; every rank copies its
//! block out of the root's send buffer, or into the root's receive buffer). All three publish
//! through `open_rooted`, which checks on the board that the ranks agree on length, type and
//! root before any buffer is touched.
//!
//! Under loom the board keeps a cell per (buffer owner, rank): the owner writes all of its
//! cells when it publishes and when it takes its buffers back (after phase 2, or after
//! withdrawing), and rank r accesses its own cell in the root's slot while it copies: a write
//! for the broadcast's and the gather's copies, a read for the scatter's (the root reading
//! its own block too). So loom reports a data race if a rank could copy from (or into) the
//! root's buffer before the root published it, or after the root took it back — that is, if
//! the root's buffer were not lent for exactly as long as its readers and writers use it — and
//! a deadlock if a wait could last for ever (a failing or disagreeing rank included). Each
//! model also asserts the exact results against a reference computed here.
//!
//! Run: `CARGO_TARGET_DIR=target/loom RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test
//! --profile loom --no-default-features --test loom_rooted` (what CI runs; all of it within
//! about a minute).
#![cfg(loom)]

mod loom_common;

use corecoll::loom_api::{broadcast_direct, gather_direct, scatter_direct, world_with_run};
use corecoll::{Comm, Error};
use loom::thread;
use loom_common::{input, spmd, spmd_with_run};

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

/// Scatter of blocks of `n` from `root` on `comm`: the root passes [`scatter_send`], the others
/// an empty send buffer; every rank's receive buffer starts as zeros. Returns the call's result
/// and the receive buffer.
fn scatter(comm: &Comm, root: usize, n: usize) -> (corecoll::Result<()>, Vec<u64>) {
    let send = if comm.rank() == root {
        scatter_send(root, comm.size(), n)
    } else {
        Vec::new()
    };
    let mut recv = vec![0; n];
    let res = scatter_direct(comm, &send, &mut recv, root);
    (res, recv)
}

/// Gather of `input(rank, n)` to `root` on `comm`: the root's receive buffer (p blocks) starts
/// as zeros, the others pass an empty one. Returns the call's result and the receive buffer.
fn gather(comm: &Comm, root: usize, n: usize) -> (corecoll::Result<()>, Vec<u64>) {
    let r = comm.rank();
    let send = input(r, n);
    let mut recv = vec![0; if r == root { comm.size() * n } else { 0 }];
    let res = gather_direct(comm, &send, &mut recv, root);
    assert_eq!(send, input(r, n), "the send buffer is read only");
    (res, recv)
}

// ---- Broadcast::Direct ----

/// Two ranks, two calls from root 1 on one board (the root's slot is rewritten for the second
/// call while rank 0 may still be finishing the first): rank 0 copies rank 1's buffer each
/// time, and the root's buffer is unchanged.
#[test]
fn broadcast_two_ranks_two_calls() {
    loom::model(|| {
        spmd(2, |comm| {
            let r = comm.rank();
            let mut v = input(r, 2);
            broadcast_direct(&comm, &mut v, 1).expect("first");
            assert_eq!(v, input(1, 2));
            let mut w = input(r + 2, 1);
            broadcast_direct(&comm, &mut w, 1).expect("second");
            assert_eq!(w, input(3, 1));
        });
    });
}

/// Three ranks from root 0, two elements: ranks 1 and 2 read the root's buffer at once.
#[test]
fn broadcast_three_ranks() {
    loom::model(|| {
        spmd(3, |comm| {
            let mut v = input(comm.rank(), 2);
            broadcast_direct(&comm, &mut v, 0).expect("call");
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
    loom::model(|| {
        let (comms, run) = world_with_run(2);
        let mut comms = comms.into_iter();
        let (c0, c1) = (comms.next().unwrap(), comms.next().unwrap());
        let rank = |comm: Comm| {
            move || {
                let r = comm.rank();
                let mut v = input(r, 2);
                let res = broadcast_direct(&comm, &mut v, 0);
                if r == 0 || res.is_ok() {
                    assert_eq!(v, input(0, 2));
                } else {
                    assert!(v == input(1, 2) || v == input(0, 2), "{v:?}");
                }
            }
        };
        let t1 = thread::spawn(rank(c1));
        let t2 = thread::spawn(move || run.panicked(2));
        rank(c0)();
        t1.join().unwrap();
        t2.join().unwrap();
    });
}

// ---- Scatter::Direct ----

/// Two ranks, two calls on one board, from root 0 and then root 1, two elements per block:
/// the first call's root lends its send buffer, the second's publishes a fresh one while its
/// peer may still be finishing the first call.
#[test]
fn scatter_two_ranks_two_calls() {
    loom::model(|| {
        spmd(2, |comm| {
            let r = comm.rank();
            for root in [0, 1] {
                let (res, recv) = scatter(&comm, root, 2);
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
    loom::model(|| {
        spmd(3, |comm| {
            let (res, recv) = scatter(&comm, 1, 1);
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
    loom::model(|| {
        spmd(2, |comm| {
            let (res, recv) = scatter(&comm, 0, comm.rank() + 1);
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
    loom::model(|| {
        spmd(2, |comm| {
            let r = comm.rank();
            for root in [1, 0] {
                let (res, recv) = gather(&comm, root, 2);
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
    loom::model(|| {
        spmd(3, |comm| {
            let (res, recv) = gather(&comm, 2, 1);
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
    loom::model(|| {
        spmd_with_run(3, |comm, run| {
            if comm.rank() == 2 {
                run.panicked(2);
                return;
            }
            let (res, recv) = gather(&comm, 1, 1);
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
    loom::model(|| {
        spmd(3, |comm| {
            let r = comm.rank();
            let root = usize::from(r == 2);
            let (res, recv) = gather(&comm, root, 1);
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
