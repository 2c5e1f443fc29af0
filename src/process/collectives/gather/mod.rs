//! Gather, scatter and allgather of a `Comm` whose ranks span MPI processes: what their stages
//! share (`common`), one block per rank (`fixed`), the `v` forms (`v_forms`).

pub(in crate::process) mod common;
pub(in crate::process) mod fixed;
pub(in crate::process) mod v_forms;
