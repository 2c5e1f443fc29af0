//! Helpers shared by the tests that run the examples, under MPI and without
//! (`tests/mpi_transport.rs`, `tests/hybrid_mpi.rs`): find `mpirun`, build an example, run a
//! program with a hang limit, and check that a run of checks passed.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether an executable `name` is in a directory of `PATH`.
pub fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|dir| dir.join(name).is_file()))
}

/// Builds example `name` with the library's features this test was built with (`mpi` and
/// `hwloc` where they are on), in the debug profile, and returns its path. The dependencies'
/// features are resolved over the whole workspace, so that under `cargo test --workspace
/// --all-features` (as CI runs it) this is the very build cargo made of the examples for the
/// test run and nothing is compiled again; a release build of the examples (the
/// dev-dependencies included) cost CI about a minute, and the checks are latency-bound, quick
/// in debug too.
pub fn build_example(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut features = Vec::new();
    if cfg!(feature = "mpi") {
        features.push("corecoll/mpi");
    }
    if cfg!(feature = "hwloc") {
        features.push("corecoll/hwloc");
    }
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "--workspace", "--example", name]);
    if !features.is_empty() {
        cargo.args(["--features", &features.join(",")]);
    }
    let status = cargo.current_dir(&root).status().expect("cargo starts");
    assert!(status.success(), "building the {name} example failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let target = if target.is_absolute() {
        target
    } else {
        root.join(target)
    };
    target.join("debug").join("examples").join(name)
}

/// Runs `program` with `args`, killing it after `limit` (a hang); returns (success, stdout,
/// stderr).
pub fn run(program: &str, args: &[&str], limit: Duration) -> (bool, String, String) {
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

/// Asserts that `what`, a run of a program of checks, passed every check: it succeeded,
/// printed no line starting with `FAIL`, and printed its summary line, which contains
/// `summary`.
pub fn assert_passed(what: &str, summary: &str, (ok, out, err): (bool, String, String)) {
    println!("{what}:\n{out}");
    assert!(ok, "{what} failed; stdout:\n{out}\nstderr:\n{err}");
    assert!(
        !out.lines().any(|l| l.starts_with("FAIL")),
        "{what}: a check failed:\n{out}\nstderr:\n{err}"
    );
    assert!(
        out.contains(summary),
        "{what}: no summary line:\n{out}\nstderr:\n{err}"
    );
}
