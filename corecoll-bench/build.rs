//! Builds the C parts of the peers, each only where the system has what it needs, so that
//! the build succeeds without any of them and the sweep says why a peer is missing:
//!
//! - the OpenMP peer (`c/openmp_peer.c`), with the system's C compiler and `-fopenmp` when it
//!   can compile and link OpenMP (Debian: `gcc`, whose libgomp comes with it): the crate is
//!   then compiled with `cfg(corecoll_openmp)`, and otherwise `CORECOLL_OPENMP_MISSING` holds
//!   the one line that says why;
//! - the layer over each MPI library (`c/mpi_peer.c`), a shared library built with that MPI's
//!   own `mpicc` (Open MPI's `mpicc.openmpi`, MPICH's `mpicc.mpich`, as Debian names them):
//!   `CORECOLL_MPI_LAYER_OPENMPI` (`_MPICH`) holds its path, or `…_MISSING` why there is none.

#[path = "src/on_path.rs"]
mod on_path;

use on_path::find_on_path;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(corecoll_openmp)");
    println!("cargo::rerun-if-changed=c/openmp_peer.c");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/on_path.rs");
    for var in ["CC", "CFLAGS", "CORECOLL_NO_OPENMP"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rerun-if-changed=c/mpi_peer.c");
    match openmp() {
        Ok(()) => println!("cargo::rustc-cfg=corecoll_openmp"),
        Err(why) => println!(
            "cargo::rustc-env=CORECOLL_OPENMP_MISSING={}",
            one_line(&why)
        ),
    }
    for (label, wrappers, marker) in [
        ("OPENMPI", ["mpicc.openmpi", "mpicc"], "Open MPI"),
        ("MPICH", ["mpicc.mpich", "mpicc"], "MPICH"),
    ] {
        println!("cargo::rerun-if-env-changed=CORECOLL_MPICC_{label}");
        match mpi_layer(label, &wrappers, marker) {
            Ok(path) => println!(
                "cargo::rustc-env=CORECOLL_MPI_LAYER_{label}={}",
                path.display()
            ),
            Err(why) => println!(
                "cargo::rustc-env=CORECOLL_MPI_LAYER_{label}_MISSING={}",
                one_line(&why)
            ),
        }
    }
}

/// The first line of `text`, trimmed (a `rustc-env` value is one line).
fn one_line(text: &str) -> String {
    text.lines().next().unwrap_or("unknown").trim().to_string()
}

/// Builds the layer over the MPI library labelled `label` with the first of its `wrappers`
/// on PATH (a plain `mpicc` only if `mpicc -show`/`-showme` names the MPI, `marker`), or with
/// the compiler in `CORECOLL_MPICC_<label>`; returns the shared library's path.
fn mpi_layer(label: &str, wrappers: &[&str], marker: &str) -> Result<PathBuf, String> {
    let chosen = std::env::var_os(format!("CORECOLL_MPICC_{label}"))
        .map(PathBuf::from)
        .or_else(|| {
            wrappers.iter().find_map(|w| {
                let path = find_on_path(w)?;
                (w.contains('.') || names_mpi(&path, marker)).then_some(path)
            })
        })
        .ok_or_else(|| format!("no MPI compiler wrapper ({}) on PATH", wrappers.join(", ")))?;
    let out = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let lib = out.join(format!("libcorecoll_mpi_{}.so", label.to_lowercase()));
    let built = Command::new(&chosen)
        .args(["-O2", "-shared", "-fPIC", "c/mpi_peer.c", "-o"])
        .arg(&lib)
        .output()
        .map_err(|e| format!("{} does not run ({e})", chosen.display()))?;
    if !built.status.success() {
        return Err(format!(
            "{} cannot build the MPI layer: {}",
            chosen.display(),
            String::from_utf8_lossy(&built.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    Ok(lib)
}

/// Whether the compiler wrapper at `path` wraps the MPI named `marker` (Open MPI's answers
/// `-showme:version`, MPICH's `-show` names its include directory).
fn names_mpi(path: &std::path::Path, marker: &str) -> bool {
    ["-showme:version", "-show"].iter().any(|flag| {
        Command::new(path).arg(flag).output().is_ok_and(|o| {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            text.contains(marker) || text.to_lowercase().contains(&marker.to_lowercase())
        })
    })
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
