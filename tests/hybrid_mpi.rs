//! Hybrid MPI + threads (feature `mpi`): builds `examples/hybrid_check` and runs it under
//! `mpirun -np 2` and `-np 3 --oversubscribe` (more processes than this machine's two cores),
//! each with 1, 2 and 3 threads per process and with unequal layouts (`--threads-by-rank`:
//! process q runs q + 1 threads), in its `--quick` form; and once on a plain shared-memory
//! team (`--local`), which validates the checks themselves. Every check must pass: exit code
//! zero, no `FAIL` line, the summary line. Skipped, with a note, where `mpirun` is not
//! installed.

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
}

/// Point-to-point between the threads of different processes (`examples/hybrid_p2p`): under
/// `Threading::Multiple` with 1, 2, 3 and unequal threads per process on 2 and 3 processes,
/// and the refusal under `Funneled`.
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
            &["--threads", "3"][..],
            &["--threads-by-rank"][..],
            &["--funneled", "--threads", "2"][..],
        ] {
            let mut args = np.to_vec();
            args.extend(["--bind-to", "none", exe]);
            args.extend(layout);
            let what = format!("mpirun {args:?}");
            mpi_common::assert_passed(&what, "hybrid_p2p: all ", run("mpirun", &args, limit));
        }
    }
}
