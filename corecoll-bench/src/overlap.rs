//! `--collective iallreduce` (and the other non-blocking collectives): how much of a
//! non-blocking collective hides behind computation, measured as the OSU micro-benchmarks'
//! non-blocking tests (`osu_iallreduce` and kin) do.
//!
//! For each collective and size, on a team of `--ranks` threads pinned as `--placement` says:
//!
//! - *pure*: start and wait, nothing between (the collective's own time);
//! - *compute*: a busy loop of floating-point work calibrated to last as long as *pure*, alone;
//! - *overall*: start, the compute, wait — once with no call between (progress only in the
//!   wait) and once with `test` every ~10 µs of the compute;
//! - overlap = max(0, 100 · (1 − (overall − compute) / pure)) %.
//!
//! Each figure is the median over iterations (a barrier before each) of the slowest rank's
//! time, the iterations of the four measurements interleaved in rounds so that a slow spell of
//! the machine falls on all of them alike. Buffers of `--sizes` bytes per rank of f64 (`Sum`),
//! root 0.

use crate::cli::Args;
use crate::domain::{fmt_bytes, Call, Form};
use crate::stats::Summary;
use corecoll::op::Sum;
use corecoll::{Collective, Comm, Request, Scope, Team};
use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Compute between two `test` calls in the measurement with tests.
const TEST_EVERY: Duration = Duration::from_micros(10);

/// One rank's buffers for a call of `bytes` bytes per rank.
struct Buffers {
    a: Vec<f64>,
    b: Vec<f64>,
}

impl Buffers {
    fn new(call: Call, bytes: usize, p: usize) -> Buffers {
        let n = bytes / 8;
        let (a, b) = match call.collective {
            Collective::Allgather => (n, n * p),
            Collective::Alltoall => (n * p, n * p),
            Collective::ReduceScatter => (n * p, n),
            Collective::Barrier => (0, 0),
            _ => (n, 0),
        };
        Buffers {
            a: vec![1.0; a],
            b: vec![0.0; b],
        }
    }
}

/// Starts `call` in `s` on `bufs`.
fn start<'s>(
    s: &'s Scope<'s, '_>,
    call: Call,
    a: &'s mut [f64],
    b: &'s mut [f64],
) -> corecoll::Result<Request<'s>> {
    match call.collective {
        Collective::Allreduce => s.iallreduce(a, Sum),
        Collective::Broadcast => s.ibroadcast(a, 0),
        Collective::Reduce => s.ireduce(a, Sum, 0),
        Collective::Allgather => s.iallgather(a, b),
        Collective::Alltoall => s.ialltoall(a, b),
        Collective::ReduceScatter => s.ireduce_scatter_block(a, b, Sum),
        _ => s.ibarrier(),
    }
}

/// Floating-point work: `units` dependent multiply-adds on a value the optimiser cannot see
/// (the compute of the overlap measurement and of `examples/imbalance.rs`).
pub fn compute(units: u64) {
    let mut x = black_box(1.000_000_1f64);
    for _ in 0..units {
        x = x.mul_add(1.000_000_1, 1e-12);
    }
    black_box(x);
}

/// Units of [`compute`] per microsecond on this thread.
fn units_per_us() -> f64 {
    let mut units = 1_000u64;
    loop {
        let t = Instant::now();
        compute(units);
        let e = t.elapsed();
        if e >= Duration::from_millis(5) {
            return units as f64 / (e.as_secs_f64() * 1e6);
        }
        units *= 4;
    }
}

/// What one iteration does.
#[derive(Clone, Copy)]
enum Step {
    Pure,
    Compute,
    Overall,
    OverallTested,
}

/// The slowest rank's seconds per step kind, over `iters` rounds of the four steps.
fn measure(
    team: &Team,
    call: Call,
    bytes: usize,
    iters: usize,
    per_us: f64,
) -> Result<[f64; 4], String> {
    let p = team.size();
    let out = team
        .run(|comm: &Comm| -> corecoll::Result<Vec<[f64; 4]>> {
            let mut bufs = Buffers::new(call, bytes, p);
            let once = |bufs: &mut Buffers, step: Step, units: u64| -> corecoll::Result<f64> {
                comm.barrier()?;
                let t = Instant::now();
                let chunk = ((TEST_EVERY.as_secs_f64() * 1e6 * per_us) as u64).max(1);
                match step {
                    Step::Compute => compute(units),
                    _ => comm.scope(|s| {
                        let mut req = start(s, call, &mut bufs.a, &mut bufs.b)?;
                        match step {
                            Step::Overall => compute(units),
                            Step::OverallTested => {
                                let mut left = units;
                                while left > 0 {
                                    let c = chunk.min(left);
                                    compute(c);
                                    left -= c;
                                    req.test()?;
                                }
                            }
                            _ => {}
                        }
                        req.wait()
                    })?,
                }
                Ok(t.elapsed().as_secs_f64())
            };
            // The compute matches the pure time, measured first.
            let pure: Vec<f64> = (0..iters.clamp(3, 20))
                .map(|_| once(&mut bufs, Step::Pure, 0))
                .collect::<corecoll::Result<_>>()?;
            let median = Summary::of(&pure).expect("at least 3").median;
            let slowest = comm.allreduce_value(median, corecoll::op::Max)?;
            let units = (slowest * 1e6 * per_us) as u64;
            let mut rounds = Vec::with_capacity(iters);
            for _ in 0..iters {
                let mut r = [0.0; 4];
                for (i, step) in [
                    Step::Pure,
                    Step::Compute,
                    Step::Overall,
                    Step::OverallTested,
                ]
                .into_iter()
                .enumerate()
                {
                    r[i] = once(&mut bufs, step, units)?;
                }
                rounds.push(r);
            }
            Ok(rounds)
        })
        .map_err(|e| e.to_string())?;
    let per_rank: Vec<Vec<[f64; 4]>> = out
        .into_iter()
        .collect::<corecoll::Result<_>>()
        .map_err(|e| e.to_string())?;
    let mut med = [0.0; 4];
    for (k, m) in med.iter_mut().enumerate() {
        let slowest: Vec<f64> = (0..iters)
            .map(|i| per_rank.iter().map(|r| r[i][k]).fold(0.0, f64::max))
            .collect();
        *m = Summary::of(&slowest)
            .expect("at least one iteration")
            .median;
    }
    Ok(med)
}

/// OSU's overlap: max(0, 100 · (1 − (overall − compute) / pure)).
fn overlap(pure: f64, compute: f64, overall: f64) -> f64 {
    (100.0 * (1.0 - (overall - compute) / pure)).max(0.0)
}

fn fmt_us(s: f64) -> String {
    format!("{:.2}", s * 1e6)
}

/// Runs the overlap measurement of every non-blocking call of `--collective`.
pub fn main(args: &Args) -> Result<ExitCode, String> {
    let calls: Vec<Call> = args.collective.0.clone();
    if let Some(c) = calls.iter().find(|c| c.form != Form::Nonblocking) {
        return Err(format!(
            "--collective {c}: the non-blocking collectives are measured on their own (overlap), \
             not in a sweep with the blocking ones"
        ));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let p = args.ranks.unwrap_or(cores);
    let team = Team::builder()
        .ranks(p)
        .pinning(corecoll::Pinning::Compact)
        .build()
        .map_err(|e| e.to_string())?;
    let per_us = units_per_us();
    println!(
        "non-blocking collectives: overlap with computation as the OSU benchmarks measure it \
         (p = {p} on {cores} cores; f64 Sum, root 0; test every {} µs in the tested column)",
        TEST_EVERY.as_micros()
    );
    println!(
        "  {:<16} {:>9} {:>10} {:>10} {:>12} {:>8} {:>12} {:>8}",
        "collective",
        "bytes",
        "pure µs",
        "compute µs",
        "overall µs",
        "overlap",
        "w/ test µs",
        "overlap"
    );
    for call in calls {
        let sizes: Vec<usize> = if call.collective == Collective::Barrier {
            vec![0]
        } else {
            args.sizes.0.clone()
        };
        for bytes in sizes {
            // Iterations: enough for about `--time` seconds of the four steps, at least 5.
            let probe = measure(&team, call, bytes, 3, per_us)?;
            let round = probe.iter().sum::<f64>().max(1e-7);
            let iters = ((args.time / round) as usize).clamp(5, 2000);
            let [pure, comp, overall, tested] = measure(&team, call, bytes, iters, per_us)?;
            println!(
                "  {:<16} {:>9} {:>10} {:>10} {:>12} {:>7.0}% {:>12} {:>7.0}%",
                call.name(),
                fmt_bytes(bytes),
                fmt_us(pure),
                fmt_us(comp),
                fmt_us(overall),
                overlap(pure, comp, overall),
                fmt_us(tested),
                overlap(pure, comp, tested)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
