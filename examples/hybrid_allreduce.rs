//! Hybrid MPI + threads: every thread of every MPI process a rank of one `Comm`
//! (`TeamBuilder::mpi`, feature `mpi`), an allreduce over all of them with each algorithm
//! between the processes, checked against the exact sum and timed.
//!
//! ```text
//! cargo build --release --features mpi --example hybrid_allreduce
//! mpirun -np 2 --bind-to none target/release/examples/hybrid_allreduce
//! mpirun -np 2 --bind-to none target/release/examples/hybrid_allreduce --threads 3 --count 1000000
//! ```
//!
//! (As root, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.
//! `--bind-to none` lets each process's threads use every core; with Open MPI's default
//! binding for two processes, one core each, a process's threads would share one core.)
//!
//! Options: `--threads T` threads per process (default 2), `--count N` `u64` elements per rank
//! (default 100 000), `--iters K` timed calls per algorithm (default 20), `--algorithm NAME`
//! one algorithm between the processes (default: `auto` and every transport-generic one).
//!
//! Every rank prints one line per algorithm: its rank, process and thread, the first elements
//! of its result, whether the result is exact, and its median time; then rank 0 prints the
//! slowest rank's median per algorithm, and beside them Open MPI's `MPI_Allreduce` between the
//! processes alone (one rank each; with `--threads 1` and as many processes as the hybrid run
//! has ranks, the flat-MPI baseline). The exit code is non-zero if any result is wrong.

use corecoll::{op, Algorithm, Team};
use mpi::collective::SystemOperation;
use mpi::environment::Threading;
use mpi::traits::*;
use std::process::ExitCode;
use std::time::Instant;

/// The algorithms between processes that run over MPI point-to-point. Every algorithm but the
/// shared-memory ones (`Direct`, and the hierarchies, which the hybrid world itself is).
fn algorithms() -> Vec<Algorithm> {
    Algorithm::ALL
        .into_iter()
        .filter(|a| {
            !matches!(
                a,
                Algorithm::Direct | Algorithm::Hierarchical { .. } | Algorithm::HierarchicalDirect
            )
        })
        .collect()
}

/// The value of element `i` on rank `r`.
fn value(r: usize, i: usize) -> u64 {
    (r as u64 + 1) * 1_000_003 + i as u64
}

/// The value of option `name` (`--name VALUE`), parsed.
fn option<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    match args.iter().position(|a| a == name) {
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} takes a value")),
        None => default,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let threads: usize = option(&args, "--threads", 2);
    let count: usize = option(&args, "--count", 100_000);
    let iters: usize = option(&args, "--iters", 20).max(1);
    let chosen: Option<String> = args
        .iter()
        .position(|a| a == "--algorithm")
        .and_then(|i| args.get(i + 1).cloned());
    let algs: Vec<Algorithm> = match &chosen {
        Some(name) => {
            vec![Algorithm::from_name(name).unwrap_or_else(|| panic!("unknown algorithm {name:?}"))]
        }
        None => algorithms(),
    };

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
    let process = world.rank();
    // The flat baseline: Open MPI's own allreduce between the processes (one rank each, the
    // same count per process), timed the same way; with `--threads 1` and P·T processes this
    // is flat MPI at the same rank count as P processes × T threads.
    let native = {
        let nprocs = world.size() as usize;
        let send: Vec<u64> = (0..count).map(|i| value(process as usize, i)).collect();
        let expected: Vec<u64> = (0..count)
            .map(|i| {
                (0..nprocs)
                    .map(|q| value(q, i))
                    .fold(0u64, u64::wrapping_add)
            })
            .collect();
        let mut recv = vec![0u64; count];
        let mut times = Vec::with_capacity(iters);
        for _ in 0..iters {
            world.barrier();
            let start = Instant::now();
            world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
            times.push(start.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let mut slowest = 0.0;
        world.all_reduce_into(
            &times[times.len() / 2],
            &mut slowest,
            SystemOperation::max(),
        );
        (slowest, recv == expected)
    };
    let outcome = team.run(|comm| {
        let (r, p) = (comm.rank(), comm.size());
        let expected: Vec<u64> = (0..count)
            .map(|i| (0..p).map(|q| value(q, i)).fold(0u64, u64::wrapping_add))
            .collect();
        let mut all_ok = true;
        let mut medians = Vec::new();
        for &alg in &algs {
            let mut buf = vec![0u64; count];
            let mut times = Vec::with_capacity(iters);
            let mut ok = true;
            for _ in 0..iters {
                for (i, x) in buf.iter_mut().enumerate() {
                    *x = value(r, i);
                }
                comm.barrier()?;
                let start = Instant::now();
                comm.allreduce_with(&mut buf, op::Sum, alg)?;
                times.push(start.elapsed().as_secs_f64());
                ok &= buf == expected;
            }
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            println!(
                "rank {r:3} (process {process}, thread {:2}) {:18} result[..3] = {:?} {} median {:9.1} µs",
                r - process as usize * threads,
                alg.name(),
                &buf[..buf.len().min(3)],
                if ok { "exact" } else { "WRONG" },
                median * 1e6
            );
            all_ok &= ok;
            medians.push(median);
        }
        // The slowest rank's median per algorithm, and whether every rank was exact.
        comm.allreduce(&mut medians, op::Max)?;
        let mut wrong = [u64::from(!all_ok)];
        comm.allreduce(&mut wrong, op::Sum)?;
        Ok::<_, corecoll::Error>((medians, wrong[0]))
    });
    let results = match outcome {
        Ok(results) => results,
        Err(e) => {
            eprintln!("process {process}: the run failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (medians, wrong) = match results.into_iter().next().expect("rank 0 ran") {
        Ok(r) => r,
        Err(e) => {
            eprintln!("process {process}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if process == 0 {
        let p = world.size() as usize * threads;
        println!(
            "\n{} processes × {threads} threads = {p} ranks, {count} u64 per rank ({} bytes), \
             slowest rank's median of {iters}:",
            world.size(),
            count * 8
        );
        for (alg, m) in algs.iter().zip(&medians) {
            println!("  {:18} {:10.1} µs", alg.name(), m * 1e6);
        }
        println!(
            "  {:18} {:10.1} µs  (MPI_Allreduce between the {} processes alone, 1 rank each{})",
            "MPI_Allreduce",
            native.0 * 1e6,
            world.size(),
            if native.1 { "" } else { ", WRONG" }
        );
        println!("wrong results: {wrong}");
    }
    if wrong == 0 && native.1 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
