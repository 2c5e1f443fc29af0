//! The MPI libraries' rows of `corecoll-bench`: a two-process sweep of allreduce and
//! broadcast with each MPI library that the build found (Open MPI, MPICH), their native and
//! `MPI_Reduce` + `MPI_Bcast` rows beside corecoll's `auto`, run through the built binary,
//! whose JSON output must hold every library's rows, checked and grouped with the thread rows
//! of the same scope. A library whose layer the build did not make, or whose launcher is not
//! installed, has no rows, and the sweep must say why instead.

mod common;

use common::{records, run_ok_into, scratch};
use serde_json::Value;

/// The string field `key` of a record.
fn text<'a>(rec: &'a Value, key: &str) -> &'a str {
    rec[key].as_str().unwrap_or_default()
}

#[test]
fn each_mpi_librarys_rows_join_the_sweep() {
    // (row name, as people name it, the layer the build made, its launcher's Debian name)
    let libraries = [
        (
            "openmpi",
            "Open MPI",
            option_env!("CORECOLL_MPI_LAYER_OPENMPI"),
            "mpirun.openmpi",
        ),
        (
            "mpich",
            "MPICH",
            option_env!("CORECOLL_MPI_LAYER_MPICH"),
            "mpiexec.mpich",
        ),
    ];
    for mode in ["--warmup=2", "--touch"] {
        let dir = scratch(&format!("mpi{mode}"));
        let stdout = run_ok_into(
            &dir,
            "r",
            &[
                "--collective",
                "allreduce,broadcast",
                "--sizes",
                "8,4KiB",
                "--time",
                "0.01",
                "-q",
                mode,
                "--ranks",
                "2",
                "--algorithms",
                "mpi,mpi-reduce-bcast,auto",
            ],
        );
        let recs = records(&dir.join("r.json"));
        let _ = std::fs::remove_dir_all(&dir);
        for (label, name, layer, launcher) in libraries {
            if layer.is_none() || corecoll_bench::on_path::find_on_path(launcher).is_none() {
                assert!(
                    stdout.contains(&format!("Not measured: {name}: ")),
                    "{name} has no rows and the sweep does not say why:\n{stdout}"
                );
                eprintln!("{name}: not built or not installed here, and the sweep says so");
                continue;
            }
            for bytes in [8u64, 4096] {
                let find = |collective: &str, alg: &str| {
                    recs.iter()
                        .find(|r| {
                            text(r, "collective") == collective
                                && text(r, "algorithm") == alg
                                && r["bytes"].as_u64() == Some(bytes)
                        })
                        .unwrap_or_else(|| {
                            panic!("no {collective} `{alg}` row of {bytes} B:\n{stdout}")
                        })
                };
                let auto = find("allreduce", "auto");
                for (collective, alg) in [
                    ("allreduce", label.to_string()),
                    ("allreduce", format!("{label}-reduce-bcast")),
                    ("broadcast", label.to_string()),
                ] {
                    let r = find(collective, &alg);
                    assert_eq!(text(r, "source"), "mpi", "{r}");
                    assert_eq!(text(r, "validation"), "pass", "{r}");
                    assert!(text(r, "note").contains(name), "{r}");
                    assert_eq!(r["ranks"].as_u64(), Some(2), "{r}");
                    assert!(r["iters"].as_u64().is_some_and(|i| i >= 3), "{r}");
                    assert!(r["median_us"].as_f64().is_some_and(|t| t > 0.0), "{r}");
                    assert!(r["switches"].as_f64().is_some_and(|s| s >= 0.0), "{r}");
                    // Grouped with the threads' rows of the same scope.
                    assert_eq!(text(r, "scope"), text(auto, "scope"), "{r}");
                    assert_eq!(text(r, "placement"), text(auto, "placement"), "{r}");
                    if mode == "--touch" {
                        assert_eq!(text(r, "cache"), "touch", "{r}");
                        assert!(r["touch_us"].as_f64().is_some(), "{r}");
                    }
                }
            }
        }
        assert!(stdout.contains("Against the peers"), "{stdout}");
    }
}
