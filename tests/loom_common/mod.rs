//! Helpers shared by the loom models (`tests/loom_*.rs`): a world of rank threads and inputs
//! whose sums are recognisable.

#![allow(dead_code)] // each model uses its own subset

use corecoll::loom_api::{world_with_run, RunHandle};
use corecoll::Comm;
use loom::thread;
use std::sync::Arc;

/// Runs `body(comm, run)` on every rank of a fresh `p`-rank world, rank 0 on the model's main
/// thread, and returns the results in rank order.
pub fn spmd_with_run<R: Send + 'static>(
    p: usize,
    body: impl Fn(Comm, RunHandle) -> R + Send + Sync + 'static,
) -> Vec<R> {
    let body = Arc::new(body);
    let (comms, run) = world_with_run(p);
    let mut comms = comms.into_iter();
    let first = comms.next().expect("p >= 1");
    let others: Vec<_> = comms
        .map(|comm| {
            let (body, run) = (body.clone(), run.clone());
            thread::spawn(move || body(comm, run))
        })
        .collect();
    let mut out = vec![body(first, run)];
    out.extend(others.into_iter().map(|t| t.join().unwrap()));
    out
}

/// Rank r's input: element i is (r + 1) · 10^i, so every sum is recognisable.
pub fn input(r: usize, n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| (r as u64 + 1) * 10u64.pow(i as u32))
        .collect()
}

/// The sum of `input` over `p` ranks.
pub fn total(p: usize, n: usize) -> Vec<u64> {
    let s = (p * (p + 1) / 2) as u64;
    (0..n).map(|i| s * 10u64.pow(i as u32)).collect()
}

/// Runs `body(comm)` on every rank of a fresh `p`-rank world, rank 0 on the model's main
/// thread, and returns the results in rank order.
pub fn spmd<R: Send + 'static>(
    p: usize,
    body: impl Fn(Comm) -> R + Send + Sync + 'static,
) -> Vec<R> {
    spmd_with_run(p, move |comm, _| body(comm))
}

/// `loom::model` for the models too large to explore at the CI's bound of two preemptions on
/// every run: at most one preemption, unless `CORECOLL_LOOM_DEEP=1` asks for the bound of
/// `LOOM_MAX_PREEMPTIONS` (docs/protocol.md, "Loom models", has the command and the last deep
/// run's times). One preemption still interleaves every pair of ranks at every point once.
pub fn model_capped<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut builder = loom::model::Builder::new();
    let deep = std::env::var("CORECOLL_LOOM_DEEP").is_ok_and(|v| v.trim() == "1");
    if !deep {
        builder.preemption_bound = Some(builder.preemption_bound.map_or(1, |b| b.min(1)));
    }
    builder.check(f);
}
