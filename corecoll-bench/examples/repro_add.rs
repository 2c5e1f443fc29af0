//! How fast `repro::Accumulator::add_slice` sums, against plain `f64` sums of the same vector:
//! `iter().sum()` (one addition after the other, as written) and a sum over four independent
//! partial sums (what the compiler may vectorise). Nanoseconds per element, the median of
//! interleaved rounds, for vectors from 4 KiB (in L1) to 8 MiB (in memory), of values uniform in
//! [−1, 1) and of values of every sign over 2⁻⁶⁰ … 2⁶⁰ (which `add_slice` splits over more
//! bins).
//!
//! Then what reducing the result costs: an allreduce of one accumulator with
//! `op::ReproducibleSum` against `allreduce_value` of one `f64` with `op::Sum`, on 2 and 8
//! ranks, timed as the sweep times a cell (a barrier, then max(end) − min(start) over the
//! ranks; the median of 20 000 calls, alternating the two in three rounds).
//!
//! ```text
//! cargo run --release -p corecoll-bench --example repro_add
//! ```

use corecoll::op::{ReproducibleSum, Sum};
use corecoll::repro::Accumulator;
use corecoll::Team;
use std::hint::black_box;
use std::time::Instant;

/// Values of every sign over 2⁻⁶⁰ … 2⁶⁰ (`wide`), or uniform in [−1, 1).
fn values(n: usize, wide: bool) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let z = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let z = z ^ (z >> 29);
            let unit = (z >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            if wide {
                unit * 2f64.powi((z % 121) as i32 - 60)
            } else {
                2.0 * unit
            }
        })
        .collect()
}

/// A way to sum a vector.
type Summer = fn(&[f64]) -> f64;

fn naive(xs: &[f64]) -> f64 {
    xs.iter().sum()
}

fn four_way(xs: &[f64]) -> f64 {
    let mut s = [0.0; 4];
    let chunks = xs.chunks_exact(4);
    let rest: f64 = chunks.remainder().iter().sum();
    for c in chunks {
        for k in 0..4 {
            s[k] += c[k];
        }
    }
    (s[0] + s[1]) + (s[2] + s[3]) + rest
}

fn exact(xs: &[f64]) -> f64 {
    let mut a = Accumulator::<f64>::new();
    a.add_slice(xs);
    a.value()
}

/// Nanoseconds per element of one call of `f` on `xs`, repeated for at least 20 ms.
fn time(f: Summer, xs: &[f64]) -> f64 {
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed().as_secs_f64() < 0.02 {
        black_box(f(black_box(xs)));
        calls += 1;
    }
    start.elapsed().as_secs_f64() * 1e9 / (calls as f64 * xs.len() as f64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median of max(end) − min(start) over the ranks of `p` ranks making `call` after a
/// barrier, 20 000 times, in microseconds.
fn reduce_time(team: &Team, call: fn(&corecoll::Comm) -> corecoll::Result<f64>) -> f64 {
    const CALLS: usize = 20_000;
    let origin = Instant::now();
    let stamps = team
        .run(|comm| -> corecoll::Result<Vec<(u64, u64)>> {
            let ns = || origin.elapsed().as_nanos() as u64;
            let mut v = Vec::with_capacity(CALLS);
            for _ in 0..CALLS {
                comm.barrier()?;
                let start = ns();
                black_box(call(comm)?);
                v.push((start, ns()));
            }
            Ok(v)
        })
        .expect("the team runs")
        .into_iter()
        .collect::<corecoll::Result<Vec<_>>>()
        .expect("every call succeeds");
    median(
        (0..CALLS)
            .map(|i| {
                let end = stamps.iter().map(|s| s[i].1).max().unwrap_or(0);
                let start = stamps.iter().map(|s| s[i].0).min().unwrap_or(0);
                (end - start) as f64 / 1e3
            })
            .collect(),
    )
}

fn one_accumulator(comm: &corecoll::Comm) -> corecoll::Result<f64> {
    let mut acc = [Accumulator::<f64>::new()];
    acc[0].add(comm.rank() as f64 * 0.1);
    comm.allreduce(&mut acc, ReproducibleSum)?;
    Ok(acc[0].value())
}

fn one_f64(comm: &corecoll::Comm) -> corecoll::Result<f64> {
    comm.allreduce_value(comm.rank() as f64 * 0.1, Sum)
}

fn main() {
    const ROUNDS: usize = 7;
    let kinds: [(&str, Summer); 3] = [
        ("iter().sum()", naive),
        ("four partial sums", four_way),
        ("Accumulator::add_slice", exact),
    ];
    println!("ns per element, median of {ROUNDS} interleaved rounds");
    println!(
        "{:>11}  {:>8}  {:>14}  {:>18}  {:>23}  {:>12}  {:>12}",
        "values", "bytes", kinds[0].0, kinds[1].0, kinds[2].0, "exact/naive", "exact/4-way"
    );
    for (wide, bytes) in [false, true]
        .into_iter()
        .flat_map(|w| [4usize << 10, 64 << 10, 1 << 20, 8 << 20].map(|b| (w, b)))
    {
        let xs = values(bytes / 8, wide);
        let mut t = vec![Vec::new(); kinds.len()];
        for round in 0..ROUNDS {
            for k in 0..kinds.len() {
                let k = (k + round) % kinds.len();
                t[k].push(time(kinds[k].1, &xs));
            }
        }
        let m: Vec<f64> = t.into_iter().map(median).collect();
        println!(
            "{:>11}  {:>8}  {:>14.3}  {:>18.3}  {:>23.3}  {:>12.2}  {:>12.2}",
            if wide { "2^±60" } else { "[-1, 1)" },
            bytes,
            m[0],
            m[1],
            m[2],
            m[2] / m[0],
            m[2] / m[1]
        );
    }

    println!();
    println!("allreduce of one value, µs (median of 20 000 calls, 3 alternating rounds)");
    println!(
        "{:>6}  {:>22}  {:>22}  {:>8}",
        "ranks", "one f64, Sum", "one Accumulator<f64>", "ratio"
    );
    for p in [2, 8] {
        let team = Team::builder().ranks(p).build().expect("a team");
        let (mut plain, mut exact) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            plain.push(reduce_time(&team, one_f64));
            exact.push(reduce_time(&team, one_accumulator));
        }
        let (a, b) = (median(plain), median(exact));
        println!("{p:>6}  {a:>22.3}  {b:>22.3}  {:>8.2}", b / a);
    }
}
