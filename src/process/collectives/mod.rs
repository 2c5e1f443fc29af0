//! The collectives of a `Comm` whose ranks span MPI processes, one file per collective's three
//! stages: allreduce (with its pipelined form in `pipeline`), broadcast, reduce, barrier,
//! gather, scatter, allgather and their `v` forms (`gather`), alltoall, `reduce_scatter_block`
//! (`reduce_scatter`), scan and exscan (`scan`).
//!
//! Each runs in the three stages of `process::world`: within each process towards its rank 0
//! (the crate's collectives on the process's own `Comm`), between the processes' leaders (`Bridge::across`: the check, then
//! the leaders' `ProcessComm`), and within each process from its rank 0. Every rank's stage 3
//! waits for its leader, so a failure anywhere in the call reaches every rank of the call.
//!
//! The algorithm a caller chooses (`allreduce_with` and the like) is the one that runs between
//! the processes, where the paper's algorithms (Träff 2021's dual root over `MPI_Sendrecv`)
//! run; within a process the crate's `Auto` runs. The hierarchical choices (`Hierarchical`,
//! `HierarchicalDirect`) are this composition itself and run `Auto` between processes; the
//! shared-memory `Direct` cannot reach another process and is refused on every rank.
//!
//! The op reaches these as `&dyn Op<T>`: the stages call the public collectives of the
//! process's own `Comm` (which would otherwise instantiate these generic methods again with
//! `&O`, `&&O`, … without end); one virtual call per folded block costs nothing measurable.
//!
//! A rank's local stages report errors with the ranks of its process's communicator (thread
//! numbers); the stage between processes names the processes' leaders by their rank.

pub(in crate::process) mod allreduce;
pub(in crate::process) mod alltoall;
pub(in crate::process) mod barrier;
pub(in crate::process) mod broadcast;
pub(in crate::process) mod gather;
pub(in crate::process) mod pipeline;
pub(in crate::process) mod reduce;
pub(in crate::process) mod reduce_scatter;
pub(in crate::process) mod scan;
