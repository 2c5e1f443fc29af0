//! Loom models of the shared-memory direct allreduce and of the board it runs on
//! (`src/shm/README.md`, "The board of the direct collectives"): ranks publish their buffers,
//! wait for each other (parking, since under loom every wait parks after one check), reduce
//! their slices straight from and into each other's buffers, and wait again before returning.
//!
//! The board carries, under loom, one loom cell per (buffer owner, slice) that stands for that
//! part of the owner's buffers: the owner writes all of them when it publishes and when it takes
//! its buffers back, and each rank writes the cells of its own slice while it reduces. So loom
//! reports a data race if a rank could read an input before its owner published it, or write
//! an output after its owner returned; it also checks the published addresses (a loom cell per
//! slot) against their rewriting by the next call, and reports a deadlock if a wait could last
//! for ever.

use super::direct;
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::Kind;
use crate::op::{self, Op};
use crate::shm::loom_world::{
    fail_as_panic, input, spmd_while_failing, spmd_with_run as spmd, total,
};
use crate::shm::Member;
use crate::sync::loom_support::{quiet_panics, QUIET};

/// The direct allreduce on `comm` with `op`, out of place when `send` is given: the board
/// protocol alone, without the agreement check the communicator makes first (which would add
/// a mailbox exchange to every model).
fn allreduce<O: Op<u64>>(
    comm: &Member,
    send: Option<&[u64]>,
    buf: &mut [u64],
    op: O,
) -> Result<()> {
    comm.enter("allreduce")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Allreduce));
    direct(comm, send, buf, &op, tag)
}

/// Two ranks, two calls on one board: in place, then out of place (the slots are rewritten
/// for the second call while the peer may still be finishing the first).
#[test]
fn two_ranks_two_calls() {
    ::loom::model(|| {
        spmd(2, |comm, _| {
            let r = comm.rank();
            let mut v = input(r, 3);
            allreduce(&comm, None, &mut v, op::Sum).expect("in place");
            assert_eq!(v, total(2, 3));
            let send = input(r, 3);
            let mut out = vec![0; 3];
            allreduce(&comm, Some(&send), &mut out, op::Sum).expect("out of place");
            assert_eq!(out, total(2, 3));
            assert_eq!(send, input(r, 3));
        });
    });
}

/// Three ranks, one call in place (one element each).
#[test]
fn three_ranks_in_place() {
    ::loom::model(|| {
        spmd(3, |comm, _| {
            let mut v = input(comm.rank(), 3);
            allreduce(&comm, None, &mut v, op::Sum).expect("in place");
            assert_eq!(v, total(3, 3));
        });
    });
}

/// Three ranks, rank 2 fails the run instead of calling while ranks 0 and 1 arrive: both
/// withdraw, each waiting for the other to resolve, and neither touches the other's buffer.
#[test]
fn three_ranks_one_failing() {
    ::loom::model(|| {
        spmd(3, |comm, run| {
            if comm.rank() == 2 {
                fail_as_panic(run, 2);
                return;
            }
            let mut v = input(comm.rank(), 3);
            let e = allreduce(&comm, None, &mut v, op::Sum).expect_err("rank 2 failed");
            assert!(matches!(e, Error::Aborted { .. }), "{e:?}");
            assert_eq!(v, input(comm.rank(), 3), "nobody wrote into the buffer");
        });
    });
}

/// Rank 1 fails the run (as its panic would) instead of calling: rank 0, parked in phase 1,
/// is woken and returns `Aborted`.
#[test]
fn a_rank_failing_before_the_call() {
    ::loom::model(|| {
        spmd(2, |comm, run| {
            if comm.rank() == 1 {
                fail_as_panic(run, 1);
                return;
            }
            let mut v = input(0, 2);
            let e = allreduce(&comm, None, &mut v, op::Sum).expect_err("peer failed");
            assert!(matches!(e, Error::Aborted { .. }), "{e:?}");
            assert_eq!(v, input(0, 2), "nobody wrote into the buffer");
        });
    });
}

/// Rank 1 returns from the run without calling: rank 0 gets `PeerExited`.
#[test]
fn a_rank_returning_without_the_call() {
    ::loom::model(|| {
        spmd(2, |comm, run| {
            if comm.rank() == 1 {
                run.mark_done(1);
                return;
            }
            let mut v = input(0, 2);
            let e = allreduce(&comm, None, &mut v, op::Sum).expect_err("peer gone");
            assert!(matches!(e, Error::PeerExited { peer: 1, .. }), "{e:?}");
        });
    });
}

/// Both ranks call while a third party fails the run: each call ends (no rank waits for ever
/// for a withdrawn peer), a rank that returns `Ok` has the whole sum, and no rank writes into
/// a buffer whose owner has returned (loom's cells).
#[test]
fn failure_races_with_the_call() {
    ::loom::model(|| {
        spmd_while_failing(2, |comm| {
            let mut v = input(comm.rank(), 2);
            if allreduce(&comm, None, &mut v, op::Sum).is_ok() {
                assert_eq!(v, total(2, 2));
            }
        });
    });
}

/// Rank 1's operator panics while it reduces its slice, and the rank catches the panic and
/// then frees its buffer: its unwinding waits until rank 0 has finished writing into that
/// buffer (loom's cells), and rank 0 returns `Err`.
#[test]
fn a_panicking_operator() {
    quiet_panics();
    ::loom::model(|| {
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
                allreduce(&comm, None, &mut v, bomb)
            }));
            match r {
                0 => assert!(matches!(res, Ok(Err(Error::Aborted { .. }))), "{res:?}"),
                _ => assert!(res.is_err(), "rank 1 unwinds"),
            }
        });
    });
}
