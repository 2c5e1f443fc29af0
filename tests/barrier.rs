//! The barrier suite: every algorithm holds every rank until all have arrived, and a mix of
//! algorithms fails on every rank without a hang.
//!
//! **Holding** (`hold_*`, split by rank count so that the harness runs them in parallel):
//! every algorithm × p ∈ 1..=17 ∪ {31, 32, 33}, many barriers back to back, each rank adding
//! one to a shared counter before barrier k and reading it after: no rank may leave barrier k
//! before every rank has entered it (counter ≥ p(k + 1)), and none can have entered barrier
//! k + 1 before this one left barrier k (counter < p(k + 2)). A last run cycles through the
//! algorithms call by call. Beyond two ranks the team oversubscribes this 2-core machine, so
//! these are also the oversubscribed runs; `oversubscribed_33` repeats many more barriers on
//! 33 ranks.
//!
//! **Mixed algorithms** (`mixed_algorithms_fail_on_every_rank`): after a few good barriers,
//! some ranks call the tree barrier and the others dissemination — one odd rank at the start,
//! the second place, the end, every other rank, and pseudo-random mixes — and every rank must
//! return an error whose root cause is a `Mismatch`: no rank passes, and none waits until the
//! team's timeout (30 s, which would show as `Timeout`).
//!
//! **Sub-communicators and a missing rank**: barriers on the two halves of a split, and a rank
//! that skips the barrier (the others fail).
//!
//! Budget: a few seconds of wall time in a debug build on a busy 2-core machine.

mod common;

use common::team;
use corecoll::algorithm::Barrier;
use corecoll::{Comm, Error, Team};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Every barrier algorithm.
const ALGORITHMS: [Barrier; 3] = [Barrier::Auto, Barrier::Dissemination, Barrier::Tree];

/// Barriers per run of the holding check at `p` ranks (fewer where many ranks share 2 cores).
fn rounds(p: usize) -> usize {
    if p <= 17 {
        200
    } else {
        100
    }
}

/// Calls `alg(k)` for barriers k = 0 … `n` − 1 on `comm`, checking with `counter` (shared by
/// the ranks, starting at 0) that each barrier holds every rank until all have entered.
fn hold(
    comm: &Comm,
    counter: &AtomicUsize,
    n: usize,
    alg: impl Fn(usize) -> Barrier,
) -> Result<(), String> {
    let p = comm.size();
    for k in 0..n {
        counter.fetch_add(1, Ordering::SeqCst);
        comm.barrier_with(alg(k))
            .map_err(|e| format!("barrier {k} ({:?}): {e}", alg(k)))?;
        let seen = counter.load(Ordering::SeqCst);
        if seen < p * (k + 1) || seen >= p * (k + 2) {
            return Err(format!(
                "rank {} left barrier {k} ({:?}) with the counter at {seen}, outside {}..{}",
                comm.rank(),
                alg(k),
                p * (k + 1),
                p * (k + 2)
            ));
        }
    }
    Ok(())
}

/// Runs `hold` on `team` with every rank, failing the test on any rank's error.
fn hold_on(team: &Team, n: usize, alg: impl Fn(usize) -> Barrier + Sync, what: &str) {
    let p = team.size();
    let counter = AtomicUsize::new(0);
    let out = team
        .run(|comm| hold(comm, &counter, n, &alg))
        .unwrap_or_else(|e| panic!("{what}, p = {p}: {e}"));
    for (r, res) in out.into_iter().enumerate() {
        if let Err(e) = res {
            panic!("{what}, p = {p}, rank {r}: {e}");
        }
    }
    assert_eq!(counter.load(Ordering::SeqCst), p * n, "{what}, p = {p}");
}

/// The holding check for every algorithm on each p of `ps`, then with the algorithm changing
/// from call to call.
fn hold_all(ps: &[usize]) {
    for &p in ps {
        let team = team(p);
        for alg in ALGORITHMS {
            hold_on(&team, rounds(p), |_| alg, &format!("{alg:?}"));
        }
        hold_on(
            &team,
            rounds(p),
            |k| ALGORITHMS[k % ALGORITHMS.len()],
            "cycling algorithms",
        );
    }
}

#[test]
fn hold_p_1_to_9() {
    hold_all(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
}

#[test]
fn hold_p_10_to_17() {
    hold_all(&[10, 11, 12, 13, 14, 15, 16, 17]);
}

#[test]
fn hold_p_31_to_33() {
    hold_all(&[31, 32, 33]);
}

/// 33 ranks on 2 cores: many barriers of each algorithm finish (and hold).
#[test]
fn oversubscribed_33() {
    let team = team(33);
    for alg in ALGORITHMS {
        hold_on(&team, 1000, |_| alg, &format!("{alg:?}, many"));
    }
}

/// Runs `call` on every rank of `team` and checks that every rank fails with a `Mismatch` at
/// the root.
fn check_fails(team: &Team, what: &str, call: &(dyn Fn(&Comm) -> corecoll::Result<()> + Sync)) {
    let p = team.size();
    let out = team
        .run(call)
        .unwrap_or_else(|e| panic!("{what}, p = {p}: {e}"));
    for (r, res) in out.into_iter().enumerate() {
        let e = res.expect_err(&format!("{what}, p = {p}, rank {r}: no error"));
        assert!(
            matches!(e.root_cause(), Error::Mismatch { .. }),
            "{what}, p = {p}, rank {r}: unexpected {e}"
        );
    }
}

/// Which ranks call the tree barrier (the others call dissemination) in the mixes tried at
/// `p` ranks.
fn mixes(p: usize) -> Vec<Vec<bool>> {
    let mut out: Vec<Vec<bool>> = Vec::new();
    for odd in [0, 1, p / 2, p - 1] {
        for tree_is_odd in [true, false] {
            out.push((0..p).map(|r| (r == odd) == tree_is_odd).collect());
        }
    }
    out.push((0..p).map(|r| r % 2 == 0).collect());
    out.push((0..p).map(|r| r % 2 == 1).collect());
    let mut x = 0x2545_f491_4f6c_dd1du64 ^ p as u64;
    for _ in 0..4 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push((0..p).map(|r| x >> (r % 64) & 1 == 1).collect());
    }
    // Only the real mixes, each once.
    out.retain(|m| m.iter().any(|&t| t) && m.iter().any(|&t| !t));
    out.sort();
    out.dedup();
    out
}

#[test]
fn mixed_algorithms_fail_on_every_rank() {
    for p in (2..=17).chain([31, 32, 33]) {
        let team = team(p);
        for mix in mixes(p) {
            let what: String = mix.iter().map(|&t| if t { 'T' } else { 'D' }).collect();
            check_fails(&team, &format!("mix {what}"), &|comm| {
                for _ in 0..3 {
                    comm.barrier()?;
                }
                let alg = if mix[comm.rank()] {
                    Barrier::Tree
                } else {
                    Barrier::Dissemination
                };
                comm.barrier_with(alg)
            });
        }
    }
}

/// Barriers of every algorithm on the two halves of a split, each half with its own counter.
#[test]
fn barriers_on_sub_communicators() {
    for p in [2, 5, 8, 11] {
        let team = team(p);
        let counters = [AtomicUsize::new(0), AtomicUsize::new(0)];
        let out = team
            .run(|comm| -> Result<(), String> {
                let half = comm.rank() % 2;
                let sub = comm
                    .split(Some(half), comm.rank())
                    .map_err(|e| e.to_string())?
                    .expect("every rank has a colour");
                for alg in ALGORITHMS {
                    counters[half].store(0, Ordering::SeqCst);
                    sub.barrier().map_err(|e| e.to_string())?;
                    hold(&sub, &counters[half], 20, |_| alg)?;
                    sub.barrier().map_err(|e| e.to_string())?;
                }
                Ok(())
            })
            .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            res.unwrap_or_else(|e| panic!("p = {p}, rank {r}: {e}"));
        }
    }
}

/// A rank that returns without calling the barrier makes every other rank fail.
#[test]
fn a_missing_rank_fails_the_others() {
    for p in [2, 3, 8] {
        let team = team(p);
        for alg in [Barrier::Dissemination, Barrier::Tree] {
            for absent in [0, p - 1] {
                let out = team
                    .run(|comm| {
                        if comm.rank() == absent {
                            return Ok(());
                        }
                        comm.barrier_with(alg)
                    })
                    .unwrap();
                for (r, res) in out.into_iter().enumerate() {
                    if r != absent {
                        let e = res.expect_err(&format!(
                            "{alg:?}, p = {p}, rank {absent} absent: rank {r} passed"
                        ));
                        assert!(
                            matches!(
                                e.root_cause(),
                                Error::PeerExited { .. } | Error::Aborted { .. }
                            ),
                            "{alg:?}, p = {p}, rank {absent} absent, rank {r}: unexpected {e}"
                        );
                    }
                }
            }
        }
    }
}
