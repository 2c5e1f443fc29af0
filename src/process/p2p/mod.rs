//! Point-to-point between the threads of different processes, in MPI's order with the
//! messages between threads of one process: the paths and the matching (`paths`), the paths
//! through a node's rings (`node`), a leader's relay for processes where only it may call MPI
//! (`relay`), receives posted by `irecv` (`posted`), probes (`probe`).

pub(in crate::process) mod node;
pub(in crate::process) mod paths;
pub(in crate::process) mod posted;
pub(in crate::process) mod probe;
pub(in crate::process) mod relay;
