//! The MPI baseline of `corecoll-bench` (feature `mpi`): a two-process allreduce sweep with
//! Open MPI's `MPI_Allreduce` and `MPI_Reduce` + `MPI_Bcast` rows beside corecoll's `auto`,
//! run through the built binary, whose JSON output must hold the MPI rows, checked and
//! grouped with the thread rows of the same scope. Skipped, with a note, where `mpirun` is not
//! installed.

#![cfg(feature = "mpi")]

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Whether an executable `name` is in a directory of `PATH`.
fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|dir| dir.join(name).is_file()))
}

/// The string field `key` of a record.
fn text<'a>(rec: &'a Value, key: &str) -> &'a str {
    rec[key].as_str().unwrap_or_default()
}

#[test]
fn mpi_rows_join_the_sweep() {
    if !on_path("mpirun") {
        eprintln!("skipped: mpirun is not on PATH (Debian: openmpi-bin)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("corecoll-bench-mpi-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("results.json");
    let path = |p: &Path| p.display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_corecoll-bench"))
        .args([
            "--collective",
            "allreduce",
            "--sizes",
            "8,4KiB",
            "--time",
            "0.01",
            "-q",
            "--ranks",
            "2",
            "--algorithms",
            "mpi,mpi-reduce-bcast,auto",
            "--json",
            &path(&json),
            "--csv",
            &path(&dir.join("results.csv")),
            "--plot",
            &path(&dir.join("plot.svg")),
        ])
        .output()
        .expect("corecoll-bench starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "corecoll-bench failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let written = std::fs::read_to_string(&json);
    let _ = std::fs::remove_dir_all(&dir);
    let written = written.unwrap_or_else(|e| panic!("no JSON at {}: {e}", json.display()));
    let v: Value = serde_json::from_str(&written).expect("the JSON parses");
    let records = v["records"].as_array().expect("a `records` array");
    for bytes in [8u64, 4096] {
        let find = |alg: &str| {
            records
                .iter()
                .find(|r| text(r, "algorithm") == alg && r["bytes"].as_u64() == Some(bytes))
                .unwrap_or_else(|| panic!("no `{alg}` row of {bytes} B; stderr:\n{stderr}"))
        };
        let auto = find("auto");
        for alg in ["mpi", "mpi-reduce-bcast"] {
            let r = find(alg);
            assert_eq!(text(r, "source"), "mpi", "{r}");
            assert_eq!(text(r, "collective"), "allreduce", "{r}");
            assert_eq!(text(r, "validation"), "pass", "{r}");
            assert_eq!(r["ranks"].as_u64(), Some(2), "{r}");
            assert_eq!(r["count"].as_u64(), Some(bytes / 8), "{r}");
            assert!(r["iters"].as_u64().is_some_and(|i| i >= 3), "{r}");
            assert!(r["median_us"].as_f64().is_some_and(|t| t > 0.0), "{r}");
            // Grouped with the threads' rows of the same scope.
            assert_eq!(text(r, "scope"), text(auto, "scope"), "{r}");
            assert_eq!(text(r, "placement"), text(auto, "placement"), "{r}");
            assert_eq!(text(r, "dtype"), "f64");
            assert_eq!(text(r, "op"), "sum");
        }
    }
}
