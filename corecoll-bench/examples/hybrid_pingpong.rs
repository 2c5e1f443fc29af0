//! Point-to-point between two MPI processes: the crate's `send`/`recv` on a hybrid team of one
//! thread per process (MPI initialised with `Threading::Multiple`, so each thread calls MPI
//! itself) against MPI's own `MPI_Send`/`MPI_Recv` between the same processes, in one run.
//!
//! ```text
//! cargo build --release -p corecoll-bench --features mpi --example hybrid_pingpong
//! mpirun -np 2 --bind-to none target/release/examples/hybrid_pingpong
//! ```
//!
//! (As root, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.)
//!
//! With `--funneled`, MPI is initialised with `Threading::Funneled` and the team has two
//! threads per process: the crate's ping-pong runs between the two processes' second threads,
//! each message relayed by both processes' leaders (which only wait for the run to end), against
//! the same MPI ping-pong between the processes' main threads.
//!
//! For each size (`--sizes` in bytes, default 8, 1024, 65536 and 1 MiB) and each of `--rounds`
//! rounds (default 15), the two take turns: a timed loop of MPI ping-pongs, then a timed loop
//! of the crate's inside one `Team::run` (so no run's start is timed), each loop about
//! `--millis` milliseconds (default 20). One-way latency is half a round trip; bandwidth is the
//! bytes over the one-way time. Rank 0 prints, per size, the medians over the rounds of both,
//! and their ratio (crate / MPI latency, crate / MPI bandwidth). Every received message is
//! checked (its first and last bytes), and the exit code is non-zero on a wrong one.

use corecoll::Team;
use mpi::environment::Threading;
use mpi::point_to_point::{Destination, Source};
use mpi::traits::*;
use std::process::ExitCode;
use std::time::Instant;

fn option<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = option(&args, "--rounds").unwrap_or(15);
    let millis: f64 = option(&args, "--millis").unwrap_or(20.0);
    let sizes: Vec<usize> = option::<String>(&args, "--sizes")
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![8, 1024, 65536, 1 << 20]);
    let funneled = args.iter().any(|a| a == "--funneled");
    let asked = if funneled {
        Threading::Funneled
    } else {
        Threading::Multiple
    };
    let (universe, level) = mpi::initialize_with_threading(asked).expect("MPI initialises once");
    let world = universe.world();
    if world.size() != 2 || level < asked {
        eprintln!("hybrid_pingpong: run on 2 processes, with MPI giving {asked:?}");
        return ExitCode::FAILURE;
    }
    let me = world.rank() as usize;
    let other = world.process_at_rank(1 - world.rank());
    // The pair of world ranks that ping-pong, and the local rank whose result is read.
    let threads = if funneled { 2 } else { 1 };
    let (a, b) = if funneled { (1, 3) } else { (0, 1) };
    let team = Team::builder()
        .ranks(threads)
        .mpi(&world)
        .expect("a hybrid team");
    let mut wrong = false;
    if me == 0 {
        println!("| bytes | MPI one-way | corecoll one-way | latency ratio | MPI GB/s | corecoll GB/s | bandwidth ratio |");
        println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    }
    for &bytes in &sizes {
        let mut buf = vec![0u8; bytes];
        // Iterations per loop, from a short trial of MPI's, agreed by both processes.
        let trial = Instant::now();
        for _ in 0..10 {
            if me == 0 {
                other.send(&buf[..]);
                other.receive_into(&mut buf[..]);
            } else {
                other.receive_into(&mut buf[..]);
                other.send(&buf[..]);
            }
        }
        let per = trial.elapsed().as_secs_f64() / 10.0;
        let mut iters = ((millis / 1e3 / per.max(1e-9)) as u64).clamp(10, 1_000_000);
        world.process_at_rank(0).broadcast_into(&mut iters);
        let (mut mpi_t, mut ours_t) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let mark = (round % 251) as u8 + 1;
            world.barrier();
            let t = Instant::now();
            for _ in 0..iters {
                if me == 0 {
                    buf[0] = mark;
                    other.send(&buf[..]);
                    other.receive_into(&mut buf[..]);
                } else {
                    other.receive_into(&mut buf[..]);
                    other.send(&buf[..]);
                }
            }
            mpi_t.push(t.elapsed().as_secs_f64() / iters as f64 / 2.0);
            let out = team
                .run(|comm| {
                    let r = comm.rank();
                    let mut m = vec![mark; bytes];
                    let mut ok = true;
                    comm.barrier()?;
                    if r != a && r != b {
                        return Ok((0.0, true));
                    }
                    let peer = a + b - r;
                    let t = Instant::now();
                    for _ in 0..iters {
                        if r == a {
                            comm.send(peer, &m)?;
                            comm.recv(peer, &mut m)?;
                        } else {
                            comm.recv(peer, &mut m)?;
                            comm.send(peer, &m)?;
                        }
                        ok &= m.first().is_none_or(|&x| x == mark)
                            && m.last().is_none_or(|&x| x == mark);
                    }
                    Ok::<_, corecoll::Error>((t.elapsed().as_secs_f64() / iters as f64 / 2.0, ok))
                })
                .expect("the team runs");
            let (secs, ok) = out[threads - 1].clone().expect("the ping-pong runs");
            wrong |= !ok;
            ours_t.push(secs);
        }
        let (m, o) = (median(mpi_t), median(ours_t));
        if me == 0 {
            let gbs = |s: f64| bytes as f64 / s / 1e9;
            println!(
                "| {bytes} | {:.2} µs | {:.2} µs | {:.2} | {:.2} | {:.2} | {:.2} |",
                m * 1e6,
                o * 1e6,
                o / m,
                gbs(m),
                gbs(o),
                gbs(o) / gbs(m)
            );
        }
    }
    drop(team);
    if wrong {
        eprintln!("hybrid_pingpong: a received message was wrong");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
