//! A short allreduce between MPI processes, back to back: Open MPI's `MPI_Allreduce` between
//! the processes, the crate's blocking `Comm::allreduce` on a hybrid team (`TeamBuilder::mpi`),
//! its persistent allreduce (`Scope::allreduce_init`, then `start` and `wait` per call) and its
//! `iallreduce` (started and waited), in interleaved rounds of the same run.
//!
//! ```text
//! cargo build --release -p corecoll-bench --features mpi --example hybrid_persistent
//! mpirun -np 2 --bind-to none target/release/examples/hybrid_persistent
//! mpirun -np 2 --bind-to none target/release/examples/hybrid_persistent --threads 2 --count 31
//! ```
//!
//! (As root, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.)
//!
//! Options: `--threads T` threads per process (default 1), `--count N` `f64`s per rank (default
//! 1: 8 bytes), `--iters K` calls per timing (default 20 000), `--rounds R` (default 7). Each
//! round times K calls of each method back to back (as `osu_allreduce` does) after a barrier,
//! and takes the slowest process's mean per call; `MPI_Allreduce` runs between the team's runs
//! (one rank per process, the team's threads asleep), the crate's methods inside one run per
//! round. Every rank's buffer holds zeros, so the sums stay zero whatever the repetitions, and
//! the last result of each method is checked against zero. Rank 0 prints each round and the
//! medians over the rounds, with each method's median over `MPI_Allreduce`'s.

// The timing method shared with the other MPI examples; this one uses its option parsing.
#[allow(dead_code)]
#[path = "common/timing.rs"]
mod timing;

use corecoll::{op, Comm, Result, Team};
use mpi::collective::SystemOperation;
use mpi::environment::Threading;
use mpi::traits::*;
use std::process::ExitCode;
use std::time::Instant;
use timing::option;

/// The crate's methods, in the order they are timed in a round.
const METHODS: [&str; 3] = ["allreduce", "persistent", "iallreduce"];

/// Seconds per call of each of the crate's methods on this rank: `iters` calls each, after a
/// barrier; an error if a result is not zero.
fn time_methods(comm: &Comm, count: usize, iters: usize) -> Result<[f64; 3]> {
    let mut out = [0.0; 3];
    let mut buf = vec![0f64; count];
    comm.barrier()?;
    let t = Instant::now();
    for _ in 0..iters {
        comm.allreduce(&mut buf, op::Sum)?;
    }
    out[0] = t.elapsed().as_secs_f64() / iters as f64;
    let mut x = vec![0f64; count];
    comm.scope(|s| -> Result<()> {
        let mut ar = s.allreduce_init(&mut x, op::Sum)?;
        comm.barrier()?;
        let t = Instant::now();
        for _ in 0..iters {
            ar.start()?;
            ar.wait()?;
        }
        out[1] = t.elapsed().as_secs_f64() / iters as f64;
        Ok(())
    })?;
    comm.barrier()?;
    let t = Instant::now();
    for _ in 0..iters {
        comm.scope(|s| s.iallreduce(&mut buf, op::Sum)?.wait())?;
    }
    out[2] = t.elapsed().as_secs_f64() / iters as f64;
    let zero = buf.iter().chain(&x).all(|&v| v == 0.0);
    assert!(zero, "a sum of zeros is not zero");
    Ok(out)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let threads: usize = option(&args, "--threads", 1usize).max(1);
    let count: usize = option(&args, "--count", 1usize);
    let iters: usize = option(&args, "--iters", 20_000usize).max(1);
    let rounds: usize = option(&args, "--rounds", 7usize).max(1);

    let (universe, level) =
        mpi::initialize_with_threading(Threading::Funneled).expect("MPI initialises once");
    let world = universe.world();
    if level < Threading::Funneled {
        eprintln!("MPI gave {level:?}; a hybrid team needs Threading::Funneled");
        return ExitCode::FAILURE;
    }
    let team = match Team::builder().ranks(threads).mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("process {}: {e}", world.rank());
            return ExitCode::FAILURE;
        }
    };
    let slowest = |v: f64| {
        let mut out = 0.0;
        world.all_reduce_into(&v, &mut out, SystemOperation::max());
        out
    };
    let me = world.rank() == 0;
    if me {
        println!(
            "{} processes x {threads} threads, {} bytes per rank, {iters} calls per timing, \
             {rounds} rounds (microseconds per call, slowest process)",
            world.size(),
            count * 8
        );
        println!("round  MPI_Allreduce  allreduce  persistent  iallreduce");
    }
    let mut table: Vec<[f64; 4]> = Vec::new();
    for round in 0..rounds {
        let send = vec![0f64; count];
        let mut recv = vec![0f64; count];
        world.barrier();
        let t = Instant::now();
        for _ in 0..iters {
            world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
        }
        let mpi = slowest(t.elapsed().as_secs_f64() / iters as f64);
        let outcome = team.run(|comm| time_methods(comm, count, iters));
        let mine = match outcome {
            Ok(per_rank) => match per_rank.into_iter().collect::<Result<Vec<_>>>() {
                Ok(times) => times,
                Err(e) => {
                    eprintln!("process {}: {e}", world.rank());
                    return ExitCode::FAILURE;
                }
            },
            Err(e) => {
                eprintln!("process {}: {e}", world.rank());
                return ExitCode::FAILURE;
            }
        };
        let mut row = [mpi, 0.0, 0.0, 0.0];
        for m in 0..METHODS.len() {
            row[m + 1] = slowest(mine.iter().map(|t| t[m]).fold(0.0, f64::max));
        }
        if me {
            let us: Vec<String> = row.iter().map(|t| format!("{:.3}", t * 1e6)).collect();
            println!(
                "{round:5}  {:>13}  {:>9}  {:>10}  {:>10}",
                us[0], us[1], us[2], us[3]
            );
        }
        table.push(row);
    }
    if me {
        let medians: Vec<f64> = (0..4)
            .map(|c| median(table.iter().map(|r| r[c]).collect()))
            .collect();
        println!(
            "median {:>13.3}  {:>9.3}  {:>10.3}  {:>10.3}",
            medians[0] * 1e6,
            medians[1] * 1e6,
            medians[2] * 1e6,
            medians[3] * 1e6
        );
        println!(
            "over MPI_Allreduce (median of the rounds' ratios): allreduce {:.2}, persistent {:.2}, \
             iallreduce {:.2}",
            median(table.iter().map(|r| r[1] / r[0]).collect()),
            median(table.iter().map(|r| r[2] / r[0]).collect()),
            median(table.iter().map(|r| r[3] / r[0]).collect()),
        );
    }
    drop(team); // before MPI is finalised with `universe`
    ExitCode::SUCCESS
}
