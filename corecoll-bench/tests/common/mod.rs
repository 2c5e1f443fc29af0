//! What the tests that run the `corecoll-bench` binary share: where it is, a scratch directory
//! per test, running it and reading its output and its JSON records.

// Each test file includes this module and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_corecoll-bench");

/// A fresh directory for one test's files.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("corecoll-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the bench with `args` and returns its exit status and output. `--cold` buffers span
/// 1 MiB (`CORECOLL_COLD_BYTES`): enough of them to use each in turn, quick to fill in a
/// debug build.
pub fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("CORECOLL_COLD_BYTES", "1MiB")
        .output()
        .expect("corecoll-bench starts")
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs the bench, asserts that it exits successfully, and returns what it printed.
pub fn run_ok(args: &[&str]) -> String {
    let out = run(args);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{}",
        out.status,
        text(&out.stderr)
    );
    stdout
}

/// The records of a `--json` result file.
pub fn records(json: &Path) -> Vec<serde_json::Value> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    v["records"].as_array().expect("a records array").clone()
}

/// [`run_ok`] with `args` followed by [`outputs_in`]`(dir, stem)`.
pub fn run_ok_into(dir: &Path, stem: &str, args: &[&str]) -> String {
    let outputs = outputs_in(dir, stem);
    let all: Vec<&str> = args
        .iter()
        .copied()
        .chain(outputs.iter().map(String::as_str))
        .collect();
    run_ok(&all)
}

/// The arguments that send a run's CSV, JSON and plot to `dir`, as `stem.csv`, `stem.json` and
/// `stem.svg`.
pub fn outputs_in(dir: &Path, stem: &str) -> Vec<String> {
    ["csv", "json", "plot"]
        .iter()
        .zip(["csv", "json", "svg"])
        .flat_map(|(flag, ext)| {
            [
                format!("--{flag}"),
                dir.join(format!("{stem}.{ext}")).display().to_string(),
            ]
        })
        .collect()
}
