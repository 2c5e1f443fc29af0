//! The collectives on every kind of team, through one program: builds `examples/everywhere` and
//! runs it as threads of one process (no mpirun, in every build), and with the feature `mpi`
//! under `mpirun -np 2` and `-np 3 --oversubscribe` (more processes than this machine's two
//! cores), with one rank per process and with two threads per process (`--bind-to none`; with
//! `--quick`, a smaller large count for broadcast and reduce), and as 4 processes in nodes made
//! believe of two (`CORECOLL_NODE_SIZE=2`: shared memory within a node, MPI between nodes).
//! Every check must pass: exit code zero, no `FAIL` line, the summary line. Then `--panic`:
//! on threads every other rank must get an error and the run fail (the program checks it);
//! between processes the job must end through `MPI_Abort` rather than leave the others waiting
//! (also with `--panic-auto` on two nodes of two processes made believe, where the panic is in
//! a node's leader, inside the nodes' shared-memory stage).
//! The MPI runs are skipped, with a note, where `mpirun` is not installed.

// Without the `mpi` feature only the threads-only runs use the helpers.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
mod mpi_common;

use mpi_common::{build_example, run};
use std::time::Duration;

/// Hang limit of one run of the checks.
const LIMIT: Duration = Duration::from_secs(120);

/// Asserts that a run of the example passed every check.
fn assert_passed(what: &str, run: (bool, String, String)) {
    mpi_common::assert_passed(what, "everywhere: all ", run);
}

#[test]
fn one_program_on_threads_and_on_mpi_processes() {
    let exe = build_example("everywhere");
    let exe = exe.to_str().expect("a UTF-8 path");
    assert_passed("threads", run(exe, &["--ranks", "4"], LIMIT));
    // Rank 0's op panics: the program checks that every other rank fails and the run too.
    let (ok, out, err) = run(exe, &["--ranks", "4", "--panic"], LIMIT);
    assert!(
        ok && out.starts_with("ok "),
        "a panic on threads; stdout:\n{out}\nstderr:\n{err}"
    );
    #[cfg(feature = "mpi")]
    between_processes(exe);
}

/// The hybrid runs under mpirun.
#[cfg(feature = "mpi")]
fn between_processes(exe: &str) {
    if !mpi_common::on_path("mpirun") {
        eprintln!("skipped the MPI runs: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    for np in [&["-np", "2"][..], &["-np", "3", "--oversubscribe"][..]] {
        for threads in ["1", "2"] {
            let mut args = np.to_vec();
            args.extend(["--bind-to", "none", exe, "--threads", threads]);
            // Broadcast and reduce at every root of 4 or 6 ranks with 100 003 elements took
            // half of the run: the teams of threads check them at 10 007.
            if threads != "1" {
                args.push("--quick");
            }
            assert_passed(&format!("mpirun {args:?}"), run("mpirun", &args, LIMIT));
        }
    }
    // Nodes made believe of two processes each: the stage between processes through the
    // nodes' shared memory and between the nodes' leaders over MPI.
    for threads in ["1", "2"] {
        let args = two_nodes_of_two(exe, &["--quick", "--threads", threads]);
        assert_passed(&format!("mpirun {args:?}"), run("mpirun", &args, LIMIT));
    }
    // A panicking op inside the stage between processes ends the whole job (MPI_Abort),
    // promptly, with one rank per process and with two threads per process.
    for threads in ["1", "2"] {
        let args = [
            "-np",
            "2",
            "--bind-to",
            "none",
            exe,
            "--panic",
            "--threads",
            threads,
        ];
        assert_aborted(&args);
    }
    // The same through the nodes' shared memory, on two nodes of two processes made believe:
    // the node's leader panics where the other nodes' leaders wait for it in MPI.
    assert_aborted(&two_nodes_of_two(exe, &["--panic-auto", "--threads", "1"]));
}

/// `mpirun`'s arguments for 4 processes of `exe` (with `rest`) in nodes of two made believe.
#[cfg(feature = "mpi")]
fn two_nodes_of_two<'a>(exe: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["-np", "4", "--oversubscribe", "-x", "CORECOLL_NODE_SIZE=2"];
    args.extend(["--bind-to", "none", exe]);
    args.extend(rest);
    args
}

/// Asserts that `mpirun args` failed, through `MPI_Abort`.
#[cfg(feature = "mpi")]
fn assert_aborted(args: &[&str]) {
    let (ok, out, err) = run("mpirun", args, Duration::from_secs(60));
    assert!(!ok, "mpirun {args:?} succeeded:\n{out}\n{err}");
    assert!(
        err.contains("aborting the MPI job"),
        "mpirun {args:?}: no abort message; stdout:\n{out}\nstderr:\n{err}"
    );
}
