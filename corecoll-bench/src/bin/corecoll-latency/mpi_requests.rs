//! The requests table's MPI rows (feature `mpi`): the same ping-pong, exchange and 8-byte
//! allreduce, blocking and with requests, between 2 processes of the MPI library the bench
//! was built against, started by its `mpirun` on this very executable (`--mpi-requests FILE`)
//! and bound to the first two cores, as the threads' ranks are pinned.
//!
//! Each process times rounds of the six works in turn, as the threads' table does, with a
//! barrier before each; rank 0's time per repetition of each round is written to FILE, one
//! line per work: its name, then the rounds' seconds.

use mpi::collective::SystemOperation;
use mpi::traits::*;
use std::path::Path;
use std::time::Instant;

/// The works, in the order of the lines: their names.
pub const WORKS: [&str; 6] = [
    "ping-pong irecv+isend",
    "ping-pong recv+send",
    "exchange irecv+isend+waitall",
    "exchange sendrecv",
    "iallreduce+wait",
    "allreduce",
];

/// Repetitions per round of each work.
const REPS: u32 = 2000;

/// One process of the job: measures `rounds` rounds of every work; rank 0 writes `out`.
pub fn worker(out: &Path, rounds: usize) -> Result<(), String> {
    let universe = mpi::initialize().ok_or("MPI was initialised already")?;
    let world = universe.world();
    if world.size() != 2 {
        return Err(format!(
            "the requests' MPI rows run on 2 processes, not {}",
            world.size()
        ));
    }
    let rank = world.rank();
    let peer = world.process_at_rank(1 - rank);
    let (mut a, mut b) = ([1u8; 8], [0u8; 8]);
    let (x, mut y) = ([1.0f64], [0.0f64]);
    let mut one = |work: usize| match work {
        0 if rank == 0 => mpi::request::scope(|s| {
            let reply = peer.immediate_receive_into(s, &mut b);
            let send = peer.immediate_send(s, &a);
            send.wait();
            reply.wait();
        }),
        0 => {
            mpi::request::scope(|s| {
                peer.immediate_receive_into(s, &mut a).wait();
            });
            mpi::request::scope(|s| {
                peer.immediate_send(s, &a).wait();
            });
        }
        1 if rank == 0 => {
            peer.send(&a);
            peer.receive_into(&mut b);
        }
        1 => {
            peer.receive_into(&mut a);
            peer.send(&a);
        }
        2 => mpi::request::scope(|s| {
            let recv = peer.immediate_receive_into(s, &mut b);
            let send = peer.immediate_send(s, &a);
            recv.wait();
            send.wait();
        }),
        3 => {
            mpi::point_to_point::send_receive_into(&a, &peer, &mut b, &peer);
        }
        4 => mpi::request::scope(|s| {
            world
                .immediate_all_reduce_into(s, &x, &mut y, SystemOperation::sum())
                .wait();
        }),
        _ => world.all_reduce_into(&x, &mut y, SystemOperation::sum()),
    };
    let mut times = vec![Vec::with_capacity(rounds); WORKS.len()];
    for work in 0..WORKS.len() {
        for _ in 0..REPS / 10 {
            one(work);
        }
    }
    for _ in 0..rounds {
        for (work, t) in times.iter_mut().enumerate() {
            world.barrier();
            let start = Instant::now();
            for _ in 0..REPS {
                one(work);
            }
            t.push(start.elapsed().as_secs_f64() / f64::from(REPS));
        }
    }
    if rank == 0 {
        let text: String = WORKS
            .iter()
            .zip(&times)
            .map(|(name, t)| {
                let secs: Vec<String> = t.iter().map(|s| format!("{s:e}")).collect();
                format!("{name}\t{}\n", secs.join("\t"))
            })
            .collect();
        std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    Ok(())
}

/// Runs the job and returns each work's rounds, in the order of [`WORKS`].
pub fn measure(rounds: usize) -> Result<Vec<Vec<f64>>, String> {
    let text = corecoll_bench::mpirun::run_job(
        2,
        &["--map-by", "core", "--bind-to", "core"],
        |file| {
            vec![
                "--mpi-requests".into(),
                file.display().to_string(),
                rounds.to_string(),
            ]
        },
        Some(std::time::Duration::from_secs(300)),
    )?;
    let parsed: Result<Vec<Vec<f64>>, String> = text
        .lines()
        .map(|line| {
            line.split('\t')
                .skip(1)
                .map(|s| s.parse::<f64>().map_err(|e| format!("{s}: {e}")))
                .collect()
        })
        .collect();
    let parsed = parsed?;
    if parsed.len() != WORKS.len() || parsed.iter().any(Vec::is_empty) {
        return Err(format!(
            "the MPI job wrote {} lines, not {}",
            parsed.len(),
            WORKS.len()
        ));
    }
    Ok(parsed)
}
