//! Builds the OpenMP peer (`c/openmp_peer.c`) with the system's C compiler and `-fopenmp`
//! when there is one that can compile and link OpenMP (Debian: `gcc`, whose libgomp comes with
//! it). Then the crate is compiled with `cfg(corecoll_openmp)`; otherwise the build succeeds
//! without the peer, and `CORECOLL_OPENMP_MISSING` holds the one line that says why, which
//! the sweep prints where the peer's rows would be.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(corecoll_openmp)");
    println!("cargo::rerun-if-changed=c/openmp_peer.c");
    println!("cargo::rerun-if-changed=build.rs");
    for var in ["CC", "CFLAGS", "CORECOLL_NO_OPENMP"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    match openmp() {
        Ok(()) => println!("cargo::rustc-cfg=corecoll_openmp"),
        Err(why) => {
            let line = why.lines().next().unwrap_or("unknown").trim().to_string();
            println!("cargo::rustc-env=CORECOLL_OPENMP_MISSING={line}");
        }
    }
}

/// Compiles the peer into a static library that the crate links, with the OpenMP runtime;
/// `Err` says why not.
fn openmp() -> Result<(), String> {
    if std::env::var_os("CORECOLL_NO_OPENMP").is_some() {
        return Err("built with CORECOLL_NO_OPENMP set".into());
    }
    let mut build = cc::Build::new();
    build
        .file("c/openmp_peer.c")
        .flag("-fopenmp")
        .opt_level(2)
        .cargo_warnings(false);
    let compiler = build
        .try_get_compiler()
        .map_err(|e| format!("no C compiler found ({e})"))?;
    // Whether the compiler links an OpenMP program at all: compiling alone does not tell
    // (clang accepts -fopenmp without its runtime installed).
    let out = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let probe = out.join("openmp_probe.c");
    std::fs::write(
        &probe,
        "#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n",
    )
    .map_err(|e| e.to_string())?;
    let linked = Command::new(compiler.path())
        .arg("-fopenmp")
        .arg(&probe)
        .arg("-o")
        .arg(out.join("openmp_probe"))
        .output()
        .map_err(|e| {
            format!(
                "the C compiler {} does not run ({e})",
                compiler.path().display()
            )
        })?;
    if !linked.status.success() {
        return Err(format!(
            "{} cannot compile and link an OpenMP program (-fopenmp): {}",
            compiler.path().display(),
            String::from_utf8_lossy(&linked.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    build
        .try_compile("corecoll_openmp_peer")
        .map_err(|e| format!("the OpenMP peer does not compile: {e}"))?;
    let runtime = if compiler.is_like_clang() {
        "omp"
    } else {
        "gomp"
    };
    println!("cargo::rustc-link-lib={runtime}");
    Ok(())
}
