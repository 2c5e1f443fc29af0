//! The benchmark of corecoll, as a library that its binaries share: `corecoll-bench` (the
//! sweep, `src/main.rs`) and `corecoll-latency` (the runtime's latency goals, `src/bin`).
//!
//! The sweep times each collective, size and algorithm of corecoll on a team of pinned
//! threads, beside baselines (the ideal data movement, a std-only version, a channel ring and,
//! with the `mpi` feature, the MPI library's own collectives), checks every result against a
//! sequential reference, and prints and plots the results; it also calibrates the machine's
//! cost constants, derives `Auto`'s decision tables and predicts sweeps with the library's
//! cost model.
//!
//! The modules, from the bottom up; each uses only modules listed before it (and
//! `tests/module_dag.rs` fails on any cycle among them):
//!
//! - `domain`: the vocabulary (calls, algorithms, element types, ops, sizes, placements);
//! - `stats`, `elem`, `placement`, `measure`: statistics, element types as Rust types, where
//!   ranks run, the timing method;
//! - `record`: one row of the results;
//! - `cell`: one cell measured with corecoll and checked;
//! - `baselines`: the same cells by other means;
//! - `output`, `plot`: the results as files, text and SVG, and the checks over a run;
//! - `cli`: the command line;
//! - `mpirun`, `mpi_baseline` (feature `mpi`): the MPI library's collectives in other
//!   processes;
//! - `calibrate`, `simulate`, `tune`, `sweep`: what the command line asks for.

pub mod domain;

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

#[cfg(feature = "mpi")]
pub mod mpi_baseline;
#[cfg(feature = "mpi")]
pub mod mpirun;

pub mod calibrate;
pub mod overlap;
pub mod simulate;
pub mod sweep;
pub mod tune;
