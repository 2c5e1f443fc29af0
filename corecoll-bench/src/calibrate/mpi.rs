//! The `mpi` level: the launcher (`mpirun -np 2` of this executable) and the worker.

use super::{ping, pong, Link, SizeTime, SIZES};
use crate::cli::Args;
use crate::mpirun;
use ::mpi::topology::SimpleCommunicator;
use ::mpi::traits::*;
use std::path::Path;
use std::time::Duration;

/// Runs the worker under `mpirun -np 2 --bind-to none` and reads rank 0's times back.
pub fn launch(args: &Args) -> Result<Vec<SizeTime>, String> {
    let mut options = vec!["--bind-to", "none"];
    if crate::placement::available_cores().len() < 2 {
        options.push("--oversubscribe");
    }
    let worker_args = |out: &Path| {
        vec![
            "--calibrate-mpi-worker".to_string(),
            "--mpi-out".into(),
            out.display().to_string(),
            "--time".into(),
            args.time.to_string(),
        ]
    };
    // A minute to start, and per size five times the budget plus a second.
    let limit = 60.0 + SIZES.len() as f64 * (1.0 + 5.0 * args.time);
    let text = mpirun::run_job(
        2,
        &options,
        worker_args,
        Some(Duration::from_secs_f64(limit)),
    )?;
    serde_json::from_str(&text).map_err(|e| format!("the MPI job's times do not parse: {e}"))
}

/// One end of the ping-pong between MPI processes 0 and 1.
struct Peer<'a> {
    world: &'a SimpleCommunicator,
    other: i32,
}

impl Link for Peer<'_> {
    fn send(&self, data: &[u8]) -> Result<(), String> {
        self.world.process_at_rank(self.other).send(data);
        Ok(())
    }
    fn recv(&self, buf: &mut [u8]) -> Result<(), String> {
        self.world.process_at_rank(self.other).receive_into(buf);
        Ok(())
    }
    fn send_count(&self, n: u64) -> Result<(), String> {
        self.world.process_at_rank(self.other).send(&n);
        Ok(())
    }
    fn recv_count(&self) -> Result<u64, String> {
        Ok(self.world.process_at_rank(self.other).receive::<u64>().0)
    }
}

/// `--calibrate-mpi-worker`: one of the two processes; rank 0 times and writes the times
/// (a JSON array of [`SizeTime`]) to `--mpi-out`.
pub fn worker(args: &Args) -> Result<(), String> {
    let out = args
        .mpi_out
        .clone()
        .ok_or("--calibrate-mpi-worker needs --mpi-out FILE")?;
    let universe = ::mpi::initialize().ok_or("MPI was initialised already")?;
    let world = universe.world();
    if world.size() != 2 {
        return Err(format!(
            "the MPI ping-pong needs 2 processes, not {}",
            world.size()
        ));
    }
    let rank = world.rank();
    let peer = Peer {
        world: &world,
        other: 1 - rank,
    };
    if rank == 0 {
        let times = ping(&peer, Duration::from_secs_f64(args.time))?;
        let text = serde_json::to_string(&times).map_err(|e| e.to_string())?;
        std::fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    } else {
        pong(&peer)?;
    }
    Ok(())
}
