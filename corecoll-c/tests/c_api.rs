//! The C test program `tests/c/test_api.c`, compiled with the system's C compiler and OpenMP
//! against this crate's static library, run, and read: it checks every function's results and
//! error codes on teams of 1 to 7 OpenMP threads and must end with "N passed, 0 failed". A C++
//! compile of the header too. Skipped, with a note, where `cc -fopenmp` cannot build a program
//! (Debian: gcc).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the library (the same profile as this test) and returns the directory holding it.
fn library() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let release = !cfg!(debug_assertions);
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "-p", "corecoll-c"]);
    if release {
        cargo.arg("--release");
    }
    let status = cargo.current_dir(&root).status().expect("cargo starts");
    assert!(status.success(), "building corecoll-c failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let target = if target.is_absolute() {
        target
    } else {
        root.join(target)
    };
    target.join(if release { "release" } else { "debug" })
}

/// Compiles `source` with `compiler` and `flags` into `out`: whether it built.
fn compile(compiler: &str, source: &Path, out: &Path, flags: &[&str]) -> bool {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let status = Command::new(compiler)
        .arg(source)
        .arg("-I")
        .arg(&include)
        .arg("-o")
        .arg(out)
        .args(flags)
        .status();
    matches!(status, Ok(s) if s.success())
}

#[test]
fn the_c_test_program_passes() {
    let dir = library();
    let lib = dir.join("libcorecoll.a");
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let probe = tmp.path().join("probe.c");
    std::fs::write(
        &probe,
        "#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n",
    )
    .expect("writable");
    if !compile("cc", &probe, &tmp.path().join("probe"), &["-fopenmp"]) {
        eprintln!("skipped: `cc -fopenmp` cannot build a program here (Debian: gcc)");
        return;
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/test_api.c");
    let exe = tmp.path().join("test_api");
    let lib_arg = lib.to_str().expect("a UTF-8 path");
    let flags = [
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-O2",
        "-fopenmp",
        lib_arg,
        "-lpthread",
        "-ldl",
        "-lm",
    ];
    assert!(
        compile("cc", &source, &exe, &flags),
        "test_api.c did not compile"
    );
    let out = Command::new(&exe).output().expect("test_api runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        out.status.success() && last.ends_with(" 0 failed"),
        "test_api failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("test_api: {last}");
}

#[test]
fn the_header_compiles_as_cpp() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let source = tmp.path().join("header.cpp");
    std::fs::write(
        &source,
        "#include <corecoll.h>\nint main() { corecoll_team_t *t = nullptr; \
         return corecoll_team_size(t, nullptr) == CORECOLL_SUCCESS; }\n",
    )
    .expect("writable");
    let obj = tmp.path().join("header.o");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let status = Command::new("c++")
        .args(["-std=c++11", "-Wall", "-Werror", "-c"])
        .arg(&source)
        .arg("-I")
        .arg(&include)
        .arg("-o")
        .arg(&obj)
        .status();
    match status {
        Ok(s) => assert!(s.success(), "corecoll.h does not compile as C++"),
        Err(_) => eprintln!("skipped: no c++ compiler here (Debian: g++)"),
    }
}
