//! The MPI library's own collectives as a baseline (feature `mpi`; stub: filled in next).

use crate::cli::Args;
use crate::record::Record;

/// One process of the MPI baseline, started by `mpirun`.
pub fn worker(_args: &Args) -> Result<(), String> {
    Err("not yet".into())
}

/// Runs the MPI baseline between `ranks` processes under `mpirun` and returns its records.
pub fn run(_args: &Args, _ranks: usize) -> Result<Vec<Record>, String> {
    Err("not yet".into())
}
