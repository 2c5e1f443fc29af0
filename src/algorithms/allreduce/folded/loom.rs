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
