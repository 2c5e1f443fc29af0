//! Hybrid MPI + threads (feature `mpi`): builds `examples/hybrid_check` and runs it under
//! `mpirun -np 2` and `-np 3 --oversubscribe` (more processes than this machine's two cores),
//! each with 1, 2 and 3 threads per process and with unequal layouts (`--threads-by-rank`:
//! process q runs q + 1 threads), in its `--quick` form; and once on a plain shared-memory
//! team (`--local`), which validates the checks themselves. Every check must pass: exit code
//! zero, no `FAIL` line, the summary line. Skipped, with a note, where `mpirun` is not
//! installed.

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
            "hybrid_check",
        ])
        .current_dir(&root)
        .status()
        .expect("cargo starts");
    assert!(status.success(), "building the hybrid_check example failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let target = if target.is_absolute() {
        target
    } else {
        root.join(target)
    };
    target.join("release").join("examples").join("hybrid_check")
}

/// Runs `program` with `args`, killing it after `limit` (a hang); returns (success, stdout,
/// stderr).
fn run(program: &str, args: &[&str], limit: Duration) -> (bool, String, String) {
    let mut cmd = Command::new(program);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: geteuid(2) takes no arguments, cannot fail and touches no memory of ours.
    if unsafe { libc::geteuid() } == 0 {
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    let mut child = cmd.spawn().expect("the program starts");
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
        if let Some(status) = child.try_wait().expect("waiting for the program") {
            break status;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!(
                "{program} {args:?} still ran after {limit:?} (a hang); stdout:\n{}\nstderr:\n{}",
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

/// Asserts that a run of the example passed every check.
fn assert_passed(what: &str, (ok, out, err): (bool, String, String)) {
    println!("{what}:\n{out}");
    assert!(ok, "{what} failed; stdout:\n{out}\nstderr:\n{err}");
    assert!(
        !out.lines().any(|l| l.starts_with("FAIL")),
        "{what}: a check failed:\n{out}\nstderr:\n{err}"
    );
    assert!(
        out.contains("hybrid_check: all "),
        "{what}: no summary line:\n{out}\nstderr:\n{err}"
    );
}

#[test]
fn hybrid_collectives_match_the_references_and_fail_everywhere() {
    let exe = build_example();
    let exe = exe.to_str().expect("a UTF-8 path");
    let limit = Duration::from_secs(120);
    // The checks themselves, on a plain team cut into groups of 1, 2 and 3 ranks.
    let local = [exe, "--local", "6", "--threads-by-rank", "--quick"];
    assert_passed(&format!("{local:?}"), run(local[0], &local[1..], limit));
    if !on_path("mpirun") {
        eprintln!("skipped the MPI runs: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    for np in [&["-np", "2"][..], &["-np", "3", "--oversubscribe"][..]] {
        for layout in [
            &["--threads", "1"][..],
            &["--threads", "2"][..],
            &["--threads", "3"][..],
            &["--threads-by-rank"][..],
        ] {
            let mut args = np.to_vec();
            args.extend(["--bind-to", "none", exe, "--quick"]);
            args.extend(layout);
            assert_passed(&format!("mpirun {args:?}"), run("mpirun", &args, limit));
        }
    }
}
