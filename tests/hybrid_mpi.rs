//! Hybrid MPI + threads (feature `mpi`): builds `examples/hybrid_check` and runs it under
//! `mpirun -np 2` and `-np 3 --oversubscribe` (more processes than this machine's two cores),
//! each with 1, 2 and 3 threads per process and with unequal layouts (`--threads-by-rank`:
//! process q runs q + 1 threads), in its `--quick` form; and once on a plain shared-memory
//! team (`--local`), which validates the checks themselves. On this one machine the processes
//! share a node, so the stage between them runs through its shared memory; three more runs make
//! believe nodes of one process (no node stage: MPI between all processes) and of two (-np 3
//! and 4: the nodes' shared memory, and MPI between the nodes' leaders); two more ask for the
//! long allreduce's one copy (`CORECOLL_NODE_CMA=1`, -np 2 and 3). Every check must pass: exit code zero, no `FAIL` line, the
//! summary line. Skipped, with a note, where `mpirun` is not installed.

#![cfg(feature = "mpi")]

mod mpi_common;

use mpi_common::{build_example, on_path, run};
use std::time::Duration;

/// Asserts that a run of the example passed every check.
fn assert_passed(what: &str, run: (bool, String, String)) {
    mpi_common::assert_passed(what, "hybrid_check: all ", run);
}

#[test]
fn hybrid_collectives_match_the_references_and_fail_everywhere() {
    let exe = build_example("hybrid_check");
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
    for (np, node) in [
        ("2", "CORECOLL_NODE_SIZE=1"),
        ("3", "CORECOLL_NODE_SIZE=2"),
        ("4", "CORECOLL_NODE_SIZE=2"),
        ("2", "CORECOLL_NODE_CMA=1"),
        ("3", "CORECOLL_NODE_CMA=1"),
    ] {
        let args = [
            "-np",
            np,
            "--oversubscribe",
            "-x",
            node,
            "--bind-to",
            "none",
            exe,
            "--quick",
            "--threads-by-rank",
        ];
        assert_passed(&format!("mpirun {args:?}"), run("mpirun", &args, limit));
    }
}

/// Point-to-point between the threads of different processes (`examples/hybrid_p2p`): under
/// `Threading::Multiple` with 1, 2 and unequal threads per process on 2 and 3 processes, and
/// under `Funneled` with 2 and unequal threads per process, through the node's rings; over
/// MPI (the threads calling it, or the leaders relaying) with nodes of one process; both ways
/// with nodes of two processes made believe.
#[test]
fn hybrid_point_to_point_between_processes() {
    if !on_path("mpirun") {
        eprintln!("skipped: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    let exe = build_example("hybrid_p2p");
    let exe = exe.to_str().expect("a UTF-8 path");
    let limit = Duration::from_secs(120);
    for np in [&["-np", "2"][..], &["-np", "3", "--oversubscribe"][..]] {
        for layout in [
            &["--threads", "1"][..],
            &["--threads", "2"][..],
            &["--threads-by-rank"][..],
            &["--funneled", "--threads", "2"][..],
            &["--funneled", "--threads-by-rank"][..],
        ] {
            let mut args = np.to_vec();
            args.extend(["--bind-to", "none", exe]);
            args.extend(layout);
            let what = format!("mpirun {args:?}");
            mpi_common::assert_passed(&what, "hybrid_p2p: all ", run("mpirun", &args, limit));
        }
    }
    // On one node the runs above go through the node's rings. Nodes of one process make MPI
    // carry every message instead; nodes of two processes, some through the rings (within a
    // node) and some over MPI (between nodes) — with the threads calling MPI and with the
    // leaders relaying.
    let multiple = &["--threads-by-rank"][..];
    let funneled = &["--funneled", "--threads-by-rank"][..];
    for (np, node, layout) in [
        ("3", "CORECOLL_NODE_SIZE=1", multiple),
        ("3", "CORECOLL_NODE_SIZE=1", funneled),
        ("3", "CORECOLL_NODE_SIZE=2", multiple),
        ("3", "CORECOLL_NODE_SIZE=2", funneled),
        ("4", "CORECOLL_NODE_SIZE=2", multiple),
    ] {
        let mut args = vec!["-np", np, "--oversubscribe", "-x", node];
        args.extend(["--bind-to", "none", exe]);
        args.extend(layout);
        let what = format!("mpirun {args:?}");
        mpi_common::assert_passed(&what, "hybrid_p2p: all ", run("mpirun", &args, limit));
    }
}

/// `examples/cg` (a conjugate-gradient solver written once against `Comm`) as 4 threads of
/// one process, as 2 processes × 2 threads (under `Multiple` and, the leaders relaying, under
/// `Funneled`) and as 4 processes × 1 thread: each converges, with the residual check the
/// example makes, in the same number of iterations.
#[test]
fn one_cg_solver_on_threads_hybrid_and_processes() {
    let exe = build_example("cg");
    let exe = exe.to_str().expect("a UTF-8 path");
    let limit = Duration::from_secs(120);
    let iterations = |what: &str, (ok, out, err): (bool, String, String)| -> String {
        println!("{what}:\n{out}");
        assert!(ok, "{what} failed; stdout:\n{out}\nstderr:\n{err}");
        let line = out
            .lines()
            .find(|l| l.starts_with("cg: "))
            .expect("a result line");
        let n = line.split(": ").nth(2).expect("a count");
        n.split(',').next().expect("iterations").to_string()
    };
    let threads = iterations(
        "4 threads",
        run(exe, &["--n", "400", "--threads", "4"], limit),
    );
    assert_eq!(threads, "200 iterations");
    if !on_path("mpirun") {
        eprintln!("skipped the MPI runs: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    for args in [
        &[
            "-np",
            "2",
            "--bind-to",
            "none",
            exe,
            "--mpi",
            "--threads",
            "2",
        ][..],
        &[
            "-np",
            "4",
            "--oversubscribe",
            "--bind-to",
            "none",
            exe,
            "--mpi",
            "--threads",
            "1",
        ],
        &[
            "-np",
            "2",
            "--bind-to",
            "none",
            exe,
            "--mpi",
            "--funneled",
            "--threads",
            "2",
        ],
    ] {
        let mut args = args.to_vec();
        args.extend(["--n", "400"]);
        let what = format!("mpirun {args:?}");
        assert_eq!(
            iterations(&what, run("mpirun", &args, limit)),
            threads,
            "{what}"
        );
    }
}

/// A `/dev/shm` too small for the node's segment (64 KiB, in a private mount namespace: as
/// root, where `unshare -m` works), or read-only: with the default choice the team falls back
/// to MPI between the processes with one warning line and every check passes; with
/// `CORECOLL_NODE_SHM=require` the build fails on every process, naming the bytes. No SIGBUS.
#[test]
fn a_small_dev_shm_falls_back_to_mpi_or_fails_when_required() {
    if !on_path("mpirun") {
        eprintln!("skipped: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    let probe = std::process::Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs -o size=64k tmpfs /dev/shm",
        ])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!(
            "skipped: no private mount namespace with a small /dev/shm here (needs root and \
             `unshare -m`)"
        );
        return;
    }
    let exe = build_example("hybrid_check");
    let exe = exe.to_str().expect("a UTF-8 path");
    let limit = Duration::from_secs(120);
    let small = |env: &str| {
        let script = format!(
            "mount -t tmpfs -o size=64k tmpfs /dev/shm && exec mpirun -np 2 -x {env} \
             --bind-to none {exe} --quick --threads 2"
        );
        run("unshare", &["-m", "sh", "-c", &script], limit)
    };
    // A /dev/shm that cannot be written: the same fallback.
    let script = format!(
        "mount -t tmpfs -o ro,size=4m tmpfs /dev/shm && exec mpirun -np 2 --bind-to none \
         {exe} --quick --threads 1"
    );
    let (ok, out, err) = run("unshare", &["-m", "sh", "-c", &script], limit);
    assert!(
        ok && err.matches("corecoll: warning: ").count() == 1
            && err.contains("Read-only file system")
            && out.contains("hybrid_check: all "),
        "read-only /dev/shm: exit ok {ok}\n{out}\n{err}"
    );
    // Two nodes of two processes made believe, whose segments need 0.9 and 2.3 MiB, on a
    // /dev/shm of 2 MiB: the second node falls back to MPI between its processes, the first
    // keeps its shared memory (unless the two reservations race for the space, when both
    // fall back), and every check passes.
    let script = format!(
        "mount -t tmpfs -o size=2m tmpfs /dev/shm && exec mpirun -np 4 --oversubscribe -x \
         CORECOLL_NODE_SIZE=2 --bind-to none {exe} --quick --threads-by-rank"
    );
    let (ok, out, err) = run("unshare", &["-m", "sh", "-c", &script], limit);
    let warnings = err.matches("corecoll: warning: ").count();
    assert!(
        ok && (1..=2).contains(&warnings) && out.contains("hybrid_check: all "),
        "two nodes, one too large: exit ok {ok}, {warnings} warnings\n{out}\n{err}"
    );
    let (ok, out, err) = small("CORECOLL_NODE_SHM=auto");
    let warnings = err.matches("corecoll: warning: ").count();
    assert!(
        ok && warnings == 1 && err.contains("No space left on device"),
        "auto: exit ok {ok}, {warnings} warnings\n{out}\n{err}"
    );
    assert!(out.contains("hybrid_check: all "), "{out}");
    let (ok, out, err) = small("CORECOLL_NODE_SHM=require");
    let both = format!("{out}{err}");
    assert!(!ok, "require: the run passed\n{both}");
    // Both processes report the build's error. (The processes' lines on stderr may interleave
    // between the pieces a line is written in, so only text written in one piece is looked
    // for: the error's description, formatted before it is printed.)
    let required = "shared memory between the processes is required";
    assert_eq!(both.matches(required).count(), 2, "{both}");
    assert!(
        both.contains("1226752 bytes") || both.contains(" bytes in /dev/shm"),
        "{both}"
    );
}

/// An environment variable with a bad value in one process only: every process's build fails
/// (the refusal travels with the thread counts), none waits for the other.
#[test]
fn a_bad_environment_variable_in_one_process_fails_every_process() {
    if !on_path("mpirun") {
        eprintln!("skipped: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    let exe = build_example("hybrid_check");
    let exe = exe.to_str().expect("a UTF-8 path");
    let args = [
        "-np",
        "1",
        "-x",
        "CORECOLL_SPINS=lots",
        "--bind-to",
        "none",
        exe,
        "--quick",
        ":",
        "-np",
        "1",
        "--bind-to",
        "none",
        exe,
        "--quick",
    ];
    let (ok, out, err) = run("mpirun", &args, Duration::from_secs(60));
    let both = format!("{out}{err}");
    assert!(!ok, "the run passed\n{both}");
    // (Pieces that each process writes whole: its lines may interleave with the other's.)
    assert!(
        both.contains("CORECOLL_SPINS") && both.contains("is not accepted: it takes "),
        "{both}"
    );
    assert!(
        both.contains("process 0 refused an environment variable's value"),
        "{both}"
    );
}

/// The randomized fault test (`examples/hybrid_faults`): random sequences of collectives —
/// every kind, `v` forms, splits, duplicates, requests, persistent calls — with at most one
/// rank misbehaving per run (another root, count, op, type, algorithm or collective; a panic;
/// an early return). Every rank of a faulty run gets an `Err` (never the team's timeout), every
/// rank of a clean run the sequential reference's bits, on one team reused run after run. On a
/// plain team, then under `mpirun -np 2` and `-np 3` with 1–3 threads per process, `Funneled`
/// and `Multiple`, and with nodes of one process made believe (MPI between all processes).
/// The seeds come from the clock, so each pass tries new runs; every run prints its seed
/// (`--seed N --runs 1` runs it again).
#[test]
fn random_faults_are_errors_everywhere_and_clean_runs_are_exact() {
    let exe = build_example("hybrid_faults");
    let exe = exe.to_str().expect("a UTF-8 path");
    let limit = Duration::from_secs(300);
    let summary = "hybrid_faults: all ";
    let local = [exe, "--local", "6", "--threads-by-rank", "--runs", "300"];
    mpi_common::assert_passed(
        &format!("{local:?}"),
        summary,
        run(local[0], &local[1..], limit),
    );
    if !on_path("mpirun") {
        eprintln!("skipped the MPI runs: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    // (processes, an environment variable, the layout and threading)
    let runs: [(&str, Option<&str>, &[&str]); 7] = [
        ("2", None, &["--threads", "1"]),
        ("2", None, &["--threads", "2"]),
        ("2", None, &["--threads", "3", "--multiple"]),
        ("3", None, &["--threads-by-rank"]),
        ("3", None, &["--threads", "2", "--multiple"]),
        (
            "3",
            Some("CORECOLL_NODE_SIZE=1"),
            &["--threads-by-rank", "--multiple"],
        ),
        ("4", Some("CORECOLL_NODE_SIZE=2"), &["--threads", "1"]),
    ];
    for (np, env, layout) in runs {
        let mut args = vec!["-np", np, "--oversubscribe"];
        if let Some(env) = env {
            args.extend(["-x", env]);
        }
        args.extend(["--bind-to", "none", exe, "--runs", "150"]);
        args.extend(layout);
        let what = format!("mpirun {args:?}");
        mpi_common::assert_passed(&what, summary, run("mpirun", &args, limit));
    }
}

/// Hybrid teams whose ranks are threads of the program that join them
/// (`TeamBuilder::external`, `Team::join`): the whole of `examples/hybrid_check` (every
/// collective against the references, the failures, pipelines, requests, persistent calls,
/// and rank 0 joined from a thread that did not initialise MPI under `Funneled`) and the
/// randomized fault test, on a plain team and under `mpirun -np 2` and `-np 3` with 1–3 and
/// unequal threads per process, `Funneled` and `Multiple`, and with nodes of one process made
/// believe.
#[test]
fn joined_threads_make_hybrid_teams() {
    let check = build_example("hybrid_check");
    let check = check.to_str().expect("a UTF-8 path");
    let faults = build_example("hybrid_faults");
    let faults = faults.to_str().expect("a UTF-8 path");
    let limit = Duration::from_secs(300);
    let local = [
        check,
        "--local",
        "6",
        "--threads-by-rank",
        "--quick",
        "--join",
    ];
    assert_passed(&format!("{local:?}"), run(local[0], &local[1..], limit));
    let local = [faults, "--local", "5", "--runs", "200", "--join"];
    mpi_common::assert_passed(
        &format!("{local:?}"),
        "hybrid_faults: all ",
        run(local[0], &local[1..], limit),
    );
    if !on_path("mpirun") {
        eprintln!("skipped the MPI runs: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    // (processes, an environment variable, the layout)
    let layouts: [(&str, Option<&str>, &[&str]); 4] = [
        ("2", None, &["--threads", "1"]),
        ("2", None, &["--threads", "2"]),
        ("3", None, &["--threads-by-rank"]),
        ("3", Some("CORECOLL_NODE_SIZE=1"), &["--threads", "2"]),
    ];
    for (np, env, layout) in layouts {
        let mut args = vec!["-np", np, "--oversubscribe"];
        if let Some(env) = env {
            args.extend(["-x", env]);
        }
        args.extend(["--bind-to", "none"]);
        let mut checks = args.clone();
        checks.extend([check, "--quick", "--join"]);
        checks.extend(layout);
        assert_passed(&format!("mpirun {checks:?}"), run("mpirun", &checks, limit));
        for threading in [&[][..], &["--multiple"][..]] {
            let mut random = args.clone();
            random.extend([faults, "--runs", "100", "--join"]);
            random.extend(layout);
            random.extend(threading);
            mpi_common::assert_passed(
                &format!("mpirun {random:?}"),
                "hybrid_faults: all ",
                run("mpirun", &random, limit),
            );
        }
    }
}
