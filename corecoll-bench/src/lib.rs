//! The benchmark of corecoll, as a library that its binaries share: `corecoll-bench` (the
//! sweep, `src/main.rs`) and `corecoll-latency` (the runtime's latency goals, `src/bin`).
//!
//! The sweep times each collective, size and algorithm of corecoll on a team of pinned
//! threads, beside baselines (the ideal data movement, a std-only version, a channel ring) and
//! peers (OpenMP, rayon, and the MPI libraries' own collectives), checks every result against a
//! sequential reference, and prints and plots the results; it also calibrates the machine's
//! cost constants, derives `Auto`'s decision tables and predicts sweeps with the library's
//! cost model.
//!
//! The modules, from the bottom up; each uses only modules listed before it (and
//! `tests/module_dag.rs` fails on any cycle among them):
//!
//! - `domain`: the vocabulary (calls, algorithms, element types, ops, sizes, placements);
//! - `on_path`: finding an executable on `PATH` (shared with the build script);
//! - `stats`, `elem`, `placement`, `measure`: statistics, element types as Rust types, where
//!   ranks run, the timing method;
//! - `record`: one row of the results;
//! - `cell`: one cell measured with corecoll and checked;
//! - `baselines`: the same cells by other means, on the team's threads;
//! - `peers`: the same cells as OpenMP and rayon programs, on threads of their own;
//! - `output`, `plot`: the results as files, text and SVG, and the checks over a run;
//! - `cli`: the command line;
//! - `mpirun`, `mpi_baseline`: the MPI libraries' collectives (Open MPI's, MPICH's) in other
//!   processes;
//! - `calibrate`, `simulate`, `tune`, `sweep`: what the command line asks for.

pub mod domain;
pub mod on_path;

pub mod elem;
pub mod measure;
pub mod placement;
pub mod stats;

pub mod record;

pub mod cell;

pub mod baselines;
pub mod peers;

pub mod output;
pub mod plot;

pub mod cli;

pub mod mpi_baseline;
pub mod mpirun;

pub mod calibrate;
pub mod overlap;
pub mod simulate;
pub mod sweep;
pub mod tune;
