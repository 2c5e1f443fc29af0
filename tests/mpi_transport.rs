//! The collectives between MPI processes (feature `mpi`): builds `examples/mpi_check.rs` and
//! runs it under `mpirun -np 2` and `-np 3 --oversubscribe` (every check must pass: exit code
//! zero, no `FAIL` line), then with `--panic`, where a panicking op on one process must end
//! the job through `MPI_Abort` rather than leave the others waiting. Skipped, with a note,
//! where `mpirun` is not installed.

#![cfg(feature = "mpi")]

mod mpi_common;

use mpi_common::{build_example, on_path, run};
use std::time::Duration;

/// Runs `mpirun` with `args`, killing it after `limit`; returns (success, stdout, stderr).
fn mpirun(args: &[&str], limit: Duration) -> (bool, String, String) {
    run("mpirun", args, limit)
}

#[test]
fn collectives_between_processes_match_the_references() {
    if !on_path("mpirun") {
        eprintln!("skipped: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    let exe = build_example("mpi_check");
    let exe = exe.to_str().expect("a UTF-8 path");
    let limit = Duration::from_secs(120);
    for args in [
        vec!["-np", "2", exe],
        vec!["-np", "3", "--oversubscribe", exe],
    ] {
        let (ok, out, err) = mpirun(&args, limit);
        println!("mpirun {args:?}:\n{out}");
        assert!(ok, "mpirun {args:?} failed; stdout:\n{out}\nstderr:\n{err}");
        assert!(
            !out.contains("FAIL"),
            "a check failed:\n{out}\nstderr:\n{err}"
        );
        let p = args[1];
        assert!(
            out.contains(&format!("checks passed on {p} processes")),
            "no summary line:\n{out}"
        );
    }
    // A panicking op on one process ends the whole job (MPI_Abort), promptly.
    let (ok, out, err) = mpirun(&["-np", "2", exe, "--panic"], Duration::from_secs(60));
    assert!(!ok, "the job with a panicking op succeeded:\n{out}\n{err}");
    assert!(
        err.contains("aborting the MPI job"),
        "no abort message; stdout:\n{out}\nstderr:\n{err}"
    );
}
