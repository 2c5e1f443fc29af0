//! The collectives between MPI processes (feature `mpi`): builds `examples/mpi_check.rs` and
//! runs it under `mpirun -np 2` and `-np 3 --oversubscribe` (every check must pass: exit code
//! zero, no `FAIL` line), then with `--panic`, where a panicking op on one process must end
//! the job through `MPI_Abort` rather than leave the others waiting. Skipped, with a note,
//! where `mpirun` is not installed.

#![cfg(feature = "mpi")]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether an executable `name` is in a directory of `PATH`.
fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|dir| dir.join(name).is_file()))
}

/// Builds the example (release, as CI runs it) and returns its path.
fn build_example() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--features",
            "mpi",
            "--example",
            "mpi_check",
        ])
        .current_dir(&root)
        .status()
        .expect("cargo starts");
    assert!(status.success(), "building the mpi_check example failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let target = if target.is_absolute() {
        target
    } else {
        root.join(target)
    };
    target.join("release").join("examples").join("mpi_check")
}

/// Runs `mpirun` with `args`, killing it after `limit`; returns (success, stdout, stderr).
fn mpirun(args: &[&str], limit: Duration) -> (bool, String, String) {
    let mut cmd = Command::new("mpirun");
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: geteuid(2) takes no arguments, cannot fail and touches no memory of ours.
    if unsafe { libc::geteuid() } == 0 {
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    let mut child = cmd.spawn().expect("mpirun starts");
    // Read the pipes on threads, so that a full pipe cannot stall the run.
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for mpirun") {
            break status;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!(
                "mpirun {args:?} still ran after {limit:?} (a hang); stdout:\n{}\nstderr:\n{}",
                out.join().unwrap_or_default(),
                err.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    (status.success(), out, err)
}

#[test]
fn collectives_between_processes_match_the_references() {
    if !on_path("mpirun") {
        eprintln!("skipped: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    let exe = build_example();
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
