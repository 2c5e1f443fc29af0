//! A world for the unit tests of the low layers (built only for `cargo test`): the members of
//! one communicator of a fresh run, each on a thread of its own, and no team — so that the
//! transports and the schedules are tested against the layers they are written for
//! (docs/architecture.md). The loom models have their own (`loom_world`).

use super::{CommShared, Member, Ranks, RunState};
use crate::error::Error;
use crate::sync::park::WaitPolicy;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

/// How long a wait of a test may last before it fails instead of hanging the test run.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Runs `body` on every member of a fresh `p`-rank communicator, each on a thread of its own
/// (waiting as an oversubscribed team does, with deadlock detection), and returns the values
/// in rank order. A rank that panics fails the run, as on a team, so that every other rank's
/// wait ends; the first panic is then carried on out of this call.
pub(crate) fn spmd<R: Send>(p: usize, body: impl Fn(&Member) -> R + Sync) -> Vec<R> {
    ranks(p, TIMEOUT, body)
        .0
        .into_iter()
        .map(|o| o.unwrap_or_else(|payload| resume_unwind(payload)))
        .collect()
}

/// [`spmd`] whose waits time out after `timeout`, and whose ranks' panics are the run's
/// failure, as `Team::run` returns it: the values in rank order, or the run's first panic.
pub(crate) fn spmd_with<R: Send>(
    p: usize,
    timeout: Duration,
    body: impl Fn(&Member) -> R + Sync,
) -> Result<Vec<R>, Error> {
    let (outcomes, run) = ranks(p, timeout, body);
    if let Some(e) = run.first_panic() {
        return Err(e);
    }
    Ok(outcomes.into_iter().map(|o| o.expect("no panic")).collect())
}

/// Each rank's outcome (its value, or its panic's payload), and the run.
fn ranks<R: Send>(
    p: usize,
    timeout: Duration,
    body: impl Fn(&Member) -> R + Sync,
) -> (Vec<std::thread::Result<R>>, Arc<RunState>) {
    let ranks = Arc::new(Ranks::new(p, WaitPolicy::OVERSUBSCRIBED, Some(timeout)));
    let run = Arc::new(RunState::new(ranks));
    let shared = Arc::new(CommShared::new((0..p).collect()));
    let outcomes = std::thread::scope(|s| {
        let threads: Vec<_> = (0..p)
            .map(|rank| {
                let member = Member::new(rank, shared.clone(), run.clone());
                let (body, run) = (&body, &run);
                s.spawn(move || {
                    let out = catch_unwind(AssertUnwindSafe(|| body(&member)));
                    if let Err(payload) = &out {
                        run.rank_panicked(rank, payload.as_ref());
                    }
                    drop(member);
                    run.mark_done(rank);
                    out
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    (outcomes, run)
}
