//! Loom models of the folded persistent allreduce on its slots (`shm::slots`): ranks start
//! one start after the other on the same slots, each publishing into the half of its start
//! and folding every rank's half once all have published. The halves are loom cells, so loom
//! reports a race if a rank could overwrite a half that another rank may still be reading
//! (the double buffering's argument), and the folded value shows a read of the wrong start.

use super::{finish, start};
use crate::op;
use crate::shm::loom_world::{fail_as_panic, spmd, spmd_with_run};
use crate::shm::Slots;
use crate::sync::loom_support::model_capped;
use std::sync::Arc;

/// Runs `starts` starts of a `p`-rank folded allreduce of one u64 and checks every result.
fn starts(p: usize, starts: u64) {
    model_capped(move || {
        let slots = Arc::new(Slots::new(p));
        spmd(p, move |member| {
            let r = member.rank() as u64;
            for k in 1..=starts {
                let mut buf = [100 * k + r];
                // SAFETY: one slots object for this allreduce, one u64 fits, starts in order
                // after the previous one finished.
                unsafe {
                    start(&member, &slots, k, &buf);
                    finish(&member, &slots, k, &mut buf, &op::Sum).expect("no failure");
                }
                let want: u64 = (0..p as u64).map(|q| 100 * k + q).sum();
                assert_eq!(buf[0], want, "start {k} on rank {r}");
            }
        });
    });
}

/// Two ranks, three starts: each half is rewritten once while the other rank may still be
/// between its starts.
#[test]
fn folded_two_ranks_three_starts() {
    starts(2, 3);
}

/// Three ranks, two starts.
#[test]
fn folded_three_ranks_two_starts() {
    starts(3, 2);
}

/// A run that fails while a rank waits for the others' start: the wait ends with an error.
#[test]
fn folded_wait_ends_when_the_run_fails() {
    model_capped(|| {
        let slots = Arc::new(Slots::new(2));
        let out = spmd_with_run(2, move |member, run| {
            if member.rank() == 1 {
                fail_as_panic(run, 1);
                return true;
            }
            let mut buf = [1u64];
            // SAFETY: as in `starts`.
            unsafe {
                start(&member, &slots, 1, &buf);
                finish(&member, &slots, 1, &mut buf, &op::Sum).is_err() || buf[0] == 1
            }
        });
        assert!(out.iter().all(|&ok| ok));
    });
}

/// Rank `member`'s blocking fold of `buf` (`blocking::allreduce` as `Linear` calls it; the
/// descriptor made by hand, as the layers above make it).
fn blocking_sum(member: &crate::shm::Member, buf: &mut [u64]) -> crate::error::Result<()> {
    use crate::algorithms::check::Call;
    use crate::collective::Collective;
    let fold = member.next_fold(Collective::Allreduce);
    let call = Call {
        op: "allreduce",
        alg: 1,
        name_of: |_| Some("linear"),
        len: buf.len(),
        root: None,
        block: 0,
        elem: crate::mailbox::type_fingerprint::<u64>(),
        combine: None,
    }
    .with_op::<u64, _>(&op::Sum);
    super::blocking::allreduce(member, fold, &call, None, buf, &op::Sum)
}

/// Two ranks, three blocking folds in a row on the communicator's slots, each followed by
/// another collective call that the ranks enter (`shm::calls`) but whose messages the model
/// leaves out: the call check's words ride with the vectors, each result is the sum of that
/// call's inputs, and a rank that has finished a fold and entered the next call is never
/// taken, by a rank still waiting in the fold, for one that made another call instead (which
/// reading its slot before its word would allow).
#[test]
fn blocking_two_ranks_three_calls() {
    use crate::collective::Collective;
    model_capped(|| {
        spmd(2, |member| {
            let r = member.rank() as u64;
            for k in 1..=3u64 {
                let mut buf = [100 * k + r];
                blocking_sum(&member, &mut buf).expect("the ranks agree");
                assert_eq!(buf[0], 200 * k + 1, "call {k} on rank {r}");
                let _tag = member.next_tag(Collective::Barrier);
            }
        });
    });
}

/// Two ranks folding vectors of different lengths: both read the other's descriptor and fail
/// with a mismatch, neither returns a sum.
#[test]
fn blocking_lengths_differ() {
    model_capped(|| {
        let out = spmd(2, |member| {
            let mut buf = vec![1u64; 1 + member.rank()];
            blocking_sum(&member, &mut buf)
        });
        for res in out {
            let e = res.expect_err("lengths differ");
            assert!(
                matches!(e.root_cause(), crate::error::Error::Mismatch { .. }),
                "{e}"
            );
        }
    });
}

/// Rank 1 makes another collective call where rank 0 folds an allreduce: it enters a barrier
/// (its word in `shm::calls`), wakes rank 0 as its first message would, and waits for rank 0,
/// which never comes. Rank 0 sees rank 1's word while rank 1's slot stays empty, fails the run
/// with the mismatch, and so ends rank 1's wait too; whatever the interleaving, nobody hangs.
#[test]
fn blocking_against_another_collective() {
    use crate::collective::Collective;
    use crate::error::Error;
    model_capped(|| {
        let out = spmd(2, |member| {
            if member.rank() == 0 {
                let mut buf = [1u64];
                return blocking_sum(&member, &mut buf);
            }
            let _tag = member.next_tag(Collective::Barrier);
            member.unpark(0);
            member.wait_for("barrier", &member.wait_start(), || Some(0))
        });
        match out[0].as_ref().expect_err("rank 1 is in a barrier") {
            Error::Mismatch { peer: 1, found, .. } => {
                assert!(found.starts_with("barrier (collective call 1"), "{found}")
            }
            e => panic!("{e}"),
        }
        let e = out[1].as_ref().expect_err("rank 0 failed the run");
        assert!(matches!(e.root_cause(), Error::Mismatch { .. }), "{e}");
    });
}
