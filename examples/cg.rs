//! A distributed conjugate-gradient solver — the 1-D Poisson problem −u'' = f on (0, 1) with
//! u(0) = u(1) = 0, second-order finite differences on `n` interior points cut into blocks, one
//! per rank — written once against `Comm`: the halo exchange is one `sendrecv` per direction on
//! every rank (the ends pass no peer), the dot products are `allreduce_value` sums; f = 1. The same
//! code runs on threads of one process, on a hybrid team, and on one thread per process.
//!
//! ```text
//! cargo run --release --example cg -- --threads 4
//! cargo build --release --features mpi --example cg
//! mpirun -np 2 --bind-to none target/release/examples/cg --mpi --threads 2
//! mpirun -np 4 --oversubscribe --bind-to none target/release/examples/cg --mpi --threads 1
//! ```
//!
//! Options: `--n N` unknowns (default 2048), `--threads T` ranks per process (default 4 without
//! `--mpi`, 2 with it), `--mpi` (feature `mpi`; MPI initialised with `Threading::Multiple`,
//! every thread calling MPI for its own messages), `--funneled` (with `--mpi`: MPI initialised
//! with `Threading::Funneled`, each process's leader relaying its threads' messages). It prints the iteration count, the relative
//! residual ‖b − Ax‖/‖b‖ computed afresh from the solution, the largest error against the exact
//! solution u = x(1 − x)/2, and the time per iteration; the exit code is non-zero unless the
//! residual is below 10⁻⁸ and the error below 10⁻⁶. `--no-detect` turns deadlock detection off
//! (`TeamBuilder::deadlock_detection`), to compare.

use corecoll::{op, Comm, Result, Team};
use std::process::ExitCode;
use std::time::Instant;

/// What a solve found, on every rank alike.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Solved {
    iterations: usize,
    residual: f64,
    error: f64,
    seconds: f64,
}

/// This rank's block of the `n` unknowns: its first index and its length.
fn block(n: usize, p: usize, r: usize) -> (usize, usize) {
    let (q, extra) = (n / p, n % p);
    (r * q + r.min(extra), q + usize::from(r < extra))
}

/// y = A x on this rank's block, A = tridiag(−1, 2, −1) / h²: the neighbours' boundary values
/// come in by one halo exchange per direction (no peer at the ends: the boundary is 0).
fn apply(comm: &Comm, x: &[f64], y: &mut [f64], h2: f64) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    let left = r.checked_sub(1);
    let right = (r + 1 < p).then_some(r + 1);
    let (first, last) = (x.first().copied(), x.last().copied());
    let (mut from_left, mut from_right) = ([0.0], [0.0]);
    // Send my last value right and take my left neighbour's last; then the other way.
    comm.sendrecv(right, &[last.unwrap_or(0.0)], left, &mut from_left)?;
    comm.sendrecv(left, &[first.unwrap_or(0.0)], right, &mut from_right)?;
    let m = x.len();
    for i in 0..m {
        let l = if i == 0 { from_left[0] } else { x[i - 1] };
        let rt = if i + 1 == m { from_right[0] } else { x[i + 1] };
        y[i] = (2.0 * x[i] - l - rt) / h2;
    }
    Ok(())
}

fn dot(comm: &Comm, a: &[f64], b: &[f64]) -> Result<f64> {
    let mine: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    comm.allreduce_value(mine, op::Sum)
}

/// Solves A u = 1 with CG from u = 0 until ‖r‖ ≤ 10⁻¹⁰ ‖b‖ (at most 2n iterations).
fn solve(comm: &Comm, n: usize) -> Result<Solved> {
    let (r, p) = (comm.rank(), comm.size());
    let (start, m) = block(n, p, r);
    let h = 1.0 / (n + 1) as f64;
    let h2 = h * h;
    let xs: Vec<f64> = (0..m).map(|i| (start + i + 1) as f64 * h).collect();
    let b = vec![1.0; m];
    let mut u = vec![0.0; m];
    let mut res = b.clone();
    let mut dir = res.clone();
    let mut ad = vec![0.0; m];
    let bb = dot(comm, &b, &b)?;
    let mut rr = bb;
    let t0 = Instant::now();
    let mut iterations = 0;
    while iterations < 2 * n && rr > 1e-20 * bb {
        apply(comm, &dir, &mut ad, h2)?;
        let alpha = rr / dot(comm, &dir, &ad)?;
        for i in 0..m {
            u[i] += alpha * dir[i];
            res[i] -= alpha * ad[i];
        }
        let next = dot(comm, &res, &res)?;
        let beta = next / rr;
        for i in 0..m {
            dir[i] = res[i] + beta * dir[i];
        }
        rr = next;
        iterations += 1;
    }
    let seconds = t0.elapsed().as_secs_f64();
    // The residual afresh, and the error against the exact solution x(1 − x)/2 (which the
    // second-order differences reproduce at the grid points, up to rounding).
    apply(comm, &u, &mut ad, h2)?;
    let diff: Vec<f64> = b.iter().zip(&ad).map(|(b, a)| b - a).collect();
    let residual = (dot(comm, &diff, &diff)? / bb).sqrt();
    let mine = u
        .iter()
        .zip(&xs)
        .map(|(u, x)| (u - x * (1.0 - x) / 2.0).abs())
        .fold(0.0, f64::max);
    let error = comm.allreduce_value(mine, op::Max)?;
    let seconds = comm.allreduce_value(seconds, op::Max)?;
    Ok(Solved {
        iterations,
        residual,
        error,
        seconds,
    })
}

fn option(args: &[String], name: &str) -> Option<usize> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

/// Prints rank 0's result and returns the exit code.
fn report(what: &str, n: usize, out: Vec<Result<Solved>>) -> ExitCode {
    let first = match out.first() {
        Some(Ok(s)) => *s,
        Some(Err(e)) => {
            eprintln!("cg: {e}");
            return ExitCode::FAILURE;
        }
        None => return ExitCode::SUCCESS,
    };
    if let Some(e) = out.iter().find_map(|r| r.as_ref().err()) {
        eprintln!("cg: {e}");
        return ExitCode::FAILURE;
    }
    println!(
        "cg: n = {n} on {what}: {} iterations, residual {:.2e}, max error {:.2e}, {:.2} µs per \
         iteration",
        first.iterations,
        first.residual,
        first.error,
        first.seconds / first.iterations.max(1) as f64 * 1e6
    );
    if first.residual < 1e-8 && first.error < 1e-6 {
        ExitCode::SUCCESS
    } else {
        eprintln!("cg: the residual is not below 1e-8, or the error not below 1e-6");
        ExitCode::FAILURE
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let n = option(&args, "--n").unwrap_or(2048);
    if args.iter().any(|a| a == "--mpi") {
        return run_mpi(&args, n);
    }
    let threads = option(&args, "--threads").unwrap_or(4);
    let detect = !args.iter().any(|a| a == "--no-detect");
    let team = Team::builder()
        .ranks(threads)
        .deadlock_detection(detect)
        .build();
    let out = match team.and_then(|team| team.run(|comm| solve(comm, n))) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("cg: {e}");
            return ExitCode::FAILURE;
        }
    };
    report(&format!("{threads} threads of one process"), n, out)
}

#[cfg(feature = "mpi")]
fn run_mpi(args: &[String], n: usize) -> ExitCode {
    use mpi::environment::Threading;
    use mpi::traits::*;
    let threads = option(args, "--threads").unwrap_or(2);
    let asked = if args.iter().any(|a| a == "--funneled") {
        Threading::Funneled
    } else {
        Threading::Multiple
    };
    let (universe, level) = mpi::initialize_with_threading(asked).expect("MPI initialises once");
    if level < asked {
        eprintln!("cg: MPI gave {level:?} for {asked:?}");
        return ExitCode::FAILURE;
    }
    let world = universe.world();
    let processes = world.size();
    let team = match Team::builder().ranks(threads).mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("cg: {e}");
            return ExitCode::FAILURE;
        }
    };
    let out = team.run(|comm| solve(comm, n));
    drop(team);
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            eprintln!("cg: {e}");
            return ExitCode::FAILURE;
        }
    };
    if world.rank() != 0 {
        return if out.iter().all(Result::is_ok) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    report(
        &format!("{processes} processes × {threads} threads ({asked:?})"),
        n,
        out,
    )
}

#[cfg(not(feature = "mpi"))]
fn run_mpi(_args: &[String], _n: usize) -> ExitCode {
    eprintln!("cg: --mpi needs the mpi feature (cargo build --features mpi --example cg)");
    ExitCode::FAILURE
}
