//! The collectives of a `Comm` whose ranks span MPI processes, one file per collective's three
//! stages (within each process, between the leaders, within each process again): allreduce,
//! broadcast, reduce and barrier (`staged`, with the pipelined allreduce in `pipeline`),
//! gather, scatter, allgather and their `v` forms (`gather`), alltoall (`alltoall`),
//! `reduce_scatter_block` (`reduce_scatter`), scan and exscan (`scan`).

pub(in crate::process) mod alltoall;
pub(in crate::process) mod gather;
pub(in crate::process) mod pipeline;
pub(in crate::process) mod reduce_scatter;
pub(in crate::process) mod scan;
pub(in crate::process) mod staged;
