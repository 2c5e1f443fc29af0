//! The world the loom models of the communication calls run in (built only for `cargo test`
//! under `--cfg loom`): the members of one communicator of a fresh run, without a team, each
//! moved into a loom thread of its own; and inputs whose sums are recognisable.
//!
//! The generic pieces (the preemption cap, the quiet panic hook, tracked buffers) are in
//! `sync::loom_support`.

use super::{CommShared, Context, Member, Ranks, RunState};
use crate::error::Error;
use crate::sync::park::WaitPolicy;
use loom::thread;
use std::sync::Arc;

/// The members of a `p`-rank communicator of a fresh run (parkers, no timeout, the
/// oversubscribed waiting policy), and the run, to fail it or mark ranks as returned.
pub(crate) fn world(p: usize) -> (Vec<Member>, Arc<RunState>) {
    world_detecting(p, false)
}

/// [`world`], with deadlock detection on if `detect` (the team's default; off in the other
/// models, to keep their state space).
pub(crate) fn world_detecting(p: usize, detect: bool) -> (Vec<Member>, Arc<RunState>) {
    let ranks = Arc::new(Ranks {
        detect_deadlocks: detect,
        ..Ranks::new(p, WaitPolicy::OVERSUBSCRIBED, None)
    });
    let run = Arc::new(RunState::new(ranks));
    let shared = Arc::new(CommShared::new((0..p).collect()));
    // Make every mailbox now, on the model's main thread, rather than on first use: the
    // communicator makes them lazily through a std `OnceLock`, whose synchronisation loom
    // cannot see, so a mailbox made by one loom thread and then used by another would be
    // reported as a race on its freshly made atomics and cells. Made before the rank threads
    // are spawned, they are ordered before every use.
    for ctx in [Context::P2p, Context::Coll] {
        for src in 0..p {
            for dst in 0..p {
                shared.mailbox(ctx, src, dst);
            }
        }
    }
    let members = (0..p)
        .map(|r| Member::new(r, shared.clone(), run.clone()))
        .collect();
    (members, run)
}

/// Fails `run` as a panic of team rank `rank` would (`RunState::panicked`, which `Team::run`
/// calls): every pending and later communication call of the run returns `Err`. `rank` only
/// names the failure: a rank outside the world (`p` or above) stands for a third party.
pub(crate) fn fail_as_panic(run: &RunState, rank: usize) {
    run.panicked(Error::Panicked {
        rank,
        message: "failed by the model".into(),
    });
}

/// Runs `body(member, run)` on every rank of a fresh `p`-rank [`world`], rank 0 on the model's
/// main thread, and returns the results in rank order.
pub(crate) fn spmd_with_run<R: Send + 'static>(
    p: usize,
    body: impl Fn(Member, &RunState) -> R + Send + Sync + 'static,
) -> Vec<R> {
    ranks(world(p), body, false)
}

/// [`spmd_with_run`] in a world that looks for deadlocks ([`world_detecting`]).
pub(crate) fn spmd_detecting<R: Send + 'static>(
    p: usize,
    body: impl Fn(Member, &RunState) -> R + Send + Sync + 'static,
) -> Vec<R> {
    ranks(world_detecting(p, true), body, false)
}

/// Runs `body(member)` on every rank of a fresh `p`-rank [`world`] while one more loom thread
/// fails the run as a panic of a rank outside the communicator would (team rank `p`), so that
/// the failure races with every step of the ranks' calls; rank 0 on the model's main thread.
pub(crate) fn spmd_while_failing(p: usize, body: impl Fn(Member) + Send + Sync + 'static) {
    ranks(world(p), move |member, _| body(member), true);
}

/// Runs `body` on every member of `world`, with a thread that fails the run if `failing`.
fn ranks<R: Send + 'static>(
    world: (Vec<Member>, Arc<RunState>),
    body: impl Fn(Member, &RunState) -> R + Send + Sync + 'static,
    failing: bool,
) -> Vec<R> {
    let body = Arc::new(body);
    let (members, run) = world;
    let p = members.len();
    let mut members = members.into_iter();
    let first = members.next().expect("p >= 1");
    let others: Vec<_> = members
        .map(|member| {
            let (body, run) = (body.clone(), run.clone());
            thread::spawn(move || body(member, &run))
        })
        .collect();
    let failer = failing.then(|| {
        let run = run.clone();
        thread::spawn(move || fail_as_panic(&run, p))
    });
    let mut out = vec![body(first, &run)];
    out.extend(others.into_iter().map(|t| t.join().unwrap()));
    if let Some(t) = failer {
        t.join().unwrap();
    }
    out
}

/// [`spmd_with_run`] for a body that does not touch the run.
pub(crate) fn spmd<R: Send + 'static>(
    p: usize,
    body: impl Fn(Member) -> R + Send + Sync + 'static,
) -> Vec<R> {
    spmd_with_run(p, move |member, _| body(member))
}

/// Rank r's input: element i is (r + 1) · 10^i, so every sum is recognisable.
pub(crate) fn input(r: usize, n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| (r as u64 + 1) * 10u64.pow(i as u32))
        .collect()
}

/// The sum of [`input`] over `p` ranks.
pub(crate) fn total(p: usize, n: usize) -> Vec<u64> {
    let s = (p * (p + 1) / 2) as u64;
    (0..n).map(|i| s * 10u64.pow(i as u32)).collect()
}
