//! Loom models of the shared-memory direct allreduce (`src/algorithms/allreduce/direct.rs`)
//! and its board (`src/comm/board.rs`): ranks publish their buffers, wait for each other
//! (parking, since under loom every wait parks after one check), reduce their slices straight
//! from and into each other's buffers, and wait again before returning.
//!
//! The board carries, under loom, one loom cell per (buffer owner, slice) that stands for that
//! part of the owner's buffers: the owner writes all of them when it publishes and when it takes
//! its buffers back, and each rank writes the cells of its own slice while it reduces. So loom
//! reports a data race if a rank could read an input before its owner published it, or write
//! an output after its owner returned; it also checks the published addresses (a loom cell per
//! slot) against their rewriting by the next call, and reports a deadlock if a wait could last
//! for ever.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_direct`
#![cfg(loom)]

mod loom_common;

use corecoll::loom_api::{allreduce_direct, world_with_run};
use corecoll::{op, Comm, Error};
use loom::thread;
use loom_common::{input, spmd_with_run as spmd, total};

/// Two ranks, two calls on one board: in place, then out of place (the slots are rewritten
/// for the second call while the peer may still be finishing the first).
#[test]
fn two_ranks_two_calls() {
    loom::model(|| {
        spmd(2, |comm, _| {
            let r = comm.rank();
            let mut v = input(r, 3);
            allreduce_direct(&comm, None, &mut v, op::Sum).expect("in place");
            assert_eq!(v, total(2, 3));
            let send = input(r, 3);
            let mut out = vec![0; 3];
            allreduce_direct(&comm, Some(&send), &mut out, op::Sum).expect("out of place");
            assert_eq!(out, total(2, 3));
            assert_eq!(send, input(r, 3));
        });
    });
}

/// Three ranks, one call in place (one element each).
#[test]
fn three_ranks_in_place() {
    loom::model(|| {
        spmd(3, |comm, _| {
            let mut v = input(comm.rank(), 3);
            allreduce_direct(&comm, None, &mut v, op::Sum).expect("in place");
            assert_eq!(v, total(3, 3));
        });
    });
}

/// Three ranks, rank 2 fails the run instead of calling while ranks 0 and 1 arrive: both
/// withdraw, each waiting for the other to resolve, and neither touches the other's buffer.
#[test]
fn three_ranks_one_failing() {
    loom::model(|| {
        spmd(3, |comm, run| {
            if comm.rank() == 2 {
                run.panicked(2);
                return;
            }
            let mut v = input(comm.rank(), 3);
            let e = allreduce_direct(&comm, None, &mut v, op::Sum).expect_err("rank 2 failed");
            assert!(matches!(e, Error::Aborted { .. }), "{e:?}");
            assert_eq!(v, input(comm.rank(), 3), "nobody wrote into the buffer");
        });
    });
}

/// Rank 1 fails the run (as its panic would) instead of calling: rank 0, parked in phase 1,
/// is woken and returns `Aborted`.
#[test]
fn a_rank_failing_before_the_call() {
    loom::model(|| {
        spmd(2, |comm, run| {
            if comm.rank() == 1 {
                run.panicked(1);
                return;
            }
            let mut v = input(0, 2);
            let e = allreduce_direct(&comm, None, &mut v, op::Sum).expect_err("peer failed");
            assert!(matches!(e, Error::Aborted { .. }), "{e:?}");
            assert_eq!(v, input(0, 2), "nobody wrote into the buffer");
        });
    });
}

/// Rank 1 returns from the run without calling: rank 0 gets `PeerExited`.
#[test]
fn a_rank_returning_without_the_call() {
    loom::model(|| {
        spmd(2, |comm, run| {
            if comm.rank() == 1 {
                run.mark_done(1);
                return;
            }
            let mut v = input(0, 2);
            let e = allreduce_direct(&comm, None, &mut v, op::Sum).expect_err("peer gone");
            assert!(matches!(e, Error::PeerExited { peer: 1, .. }), "{e:?}");
        });
    });
}

/// Both ranks call while a third party fails the run: each call ends (no rank waits for ever
/// for a withdrawn peer), a rank that returns `Ok` has the whole sum, and no rank writes into
/// a buffer whose owner has returned (loom's cells).
#[test]
fn failure_races_with_the_call() {
    loom::model(|| {
        let (comms, run) = world_with_run(2);
        let mut comms = comms.into_iter();
        let (c0, c1) = (comms.next().unwrap(), comms.next().unwrap());
        let rank = |comm: Comm| {
            move || {
                let mut v = input(comm.rank(), 2);
                let res = allreduce_direct(&comm, None, &mut v, op::Sum);
                if res.is_ok() {
                    assert_eq!(v, total(2, 2));
                }
                res.is_ok()
            }
        };
        let t1 = thread::spawn(rank(c1));
        let t2 = thread::spawn(move || run.panicked(2));
        rank(c0)();
        t1.join().unwrap();
        t2.join().unwrap();
    });
}

/// Rank 1's operator panics while it reduces its slice, and the rank catches the panic and
/// then frees its buffer: its unwinding waits until rank 0 has finished writing into that
/// buffer (loom's cells), and rank 0 returns `Err`.
#[test]
fn a_panicking_operator() {
    const QUIET: &str = "expected by the model";
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let quiet = info
            .payload()
            .downcast_ref::<&str>()
            .is_some_and(|m| m.starts_with(QUIET));
        if !quiet {
            default(info);
        }
    }));
    loom::model(|| {
        spmd(2, |comm, _| {
            let r = comm.rank();
            let bomb = op::non_commutative(move |a: &u64, b: &u64| {
                if r == 1 {
                    panic!("{}", QUIET);
                }
                a + b
            });
            let mut v = input(r, 2);
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                allreduce_direct(&comm, None, &mut v, bomb)
            }));
            match r {
                0 => assert!(matches!(res, Ok(Err(Error::Aborted { .. }))), "{res:?}"),
                _ => assert!(res.is_err(), "rank 1 unwinds"),
            }
        });
    });
}
