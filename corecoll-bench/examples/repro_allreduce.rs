//! What the reproducible sum costs against the plain one: an allreduce of `f64`s with
//! `op::ReproducibleSum` against the same call with `op::Sum`, both with `Algorithm::Auto`, on 2
//! and 8 ranks, from 8 bytes to 1 MiB per rank.
//!
//! Each call is timed as the sweep times a cell: every rank writes its input (random values of
//! both signs, so that the reproducible sum does its real work, and no value grows from call to
//! call) outside the timed window, a barrier, then max(end) − min(start) over the ranks. The two
//! ops alternate in rounds (`ROUNDS`), and each row is the median over every call of every
//! round, in microseconds; the ratio is the median of the per-round ratios.
//!
//! ```text
//! cargo run --release -p corecoll-bench --example repro_allreduce
//! ```

use corecoll::op::{Op, ReproducibleSum, Sum};
use corecoll::{Algorithm, Team};
use std::hint::black_box;
use std::time::Instant;

const ROUNDS: usize = 5;

/// Rank r's input of `n` values in [−1, 1).
fn input(r: usize, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let z = ((r * 1_000_003 + i) as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let z = (z ^ (z >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `calls` timed allreduces of `n` values with `op` on `team`: each call's
/// max(end) − min(start) in microseconds.
fn times<O: Op<f64> + Copy>(team: &Team, n: usize, calls: usize, op: O) -> Vec<f64> {
    let origin = Instant::now();
    let stamps = team
        .run(|comm| -> corecoll::Result<Vec<(u64, u64)>> {
            let ns = || origin.elapsed().as_nanos() as u64;
            let mine = input(comm.rank(), n);
            let mut buf = mine.clone();
            let mut v = Vec::with_capacity(calls);
            for _ in 0..calls {
                buf.copy_from_slice(&mine);
                comm.barrier()?;
                let start = ns();
                comm.allreduce_with(&mut buf, op, Algorithm::Auto)?;
                v.push((start, ns()));
                black_box(&buf);
            }
            Ok(v)
        })
        .expect("the team runs")
        .into_iter()
        .collect::<corecoll::Result<Vec<_>>>()
        .expect("every call succeeds");
    (0..calls)
        .map(|i| {
            let end = stamps.iter().map(|s| s[i].1).max().unwrap_or(0);
            let start = stamps.iter().map(|s| s[i].0).min().unwrap_or(0);
            (end - start) as f64 / 1e3
        })
        .collect()
}

fn main() {
    println!(
        "allreduce with Auto, µs: median over {ROUNDS} alternating rounds; ratio = median of the \
         rounds' ratios"
    );
    println!(
        "{:>3}  {:>8}  {:>10}  {:>16}  {:>8}",
        "p", "bytes", "Sum", "ReproducibleSum", "ratio"
    );
    for p in [2, 8] {
        let team = Team::new(p).expect("a team");
        for bytes in [8usize, 64, 1 << 10, 8 << 10, 64 << 10, 1 << 20] {
            let n = bytes / 8;
            // About 0.3 s per op and round on this machine's slowest cell, at least 50 calls.
            let calls = (2_000_000 / (bytes + 1_000) / p).clamp(50, 4_000);
            let (mut plain, mut exact, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
            for round in 0..ROUNDS {
                let (a, b) = if round % 2 == 0 {
                    let a = times(&team, n, calls, Sum);
                    (a, times(&team, n, calls, ReproducibleSum))
                } else {
                    let b = times(&team, n, calls, ReproducibleSum);
                    (times(&team, n, calls, Sum), b)
                };
                ratios.push(median(b.clone()) / median(a.clone()));
                plain.extend(a);
                exact.extend(b);
            }
            println!(
                "{:>3}  {:>8}  {:>10.2}  {:>16.2}  {:>8.2}",
                p,
                bytes,
                median(plain),
                median(exact),
                median(ratios)
            );
        }
    }
}
