//! The process layer (feature `mpi`): what a team whose ranks span MPI processes needs, and
//! nothing else does. Every collective on such a team runs in three stages: within each
//! process over its threads' own communicator (`local::Local`), between the processes by each
//! process's leader (its first thread), and within each process again.
//!
//! | part | what it holds |
//! | --- | --- |
//! | `world`, `bridge`, `split`, `shadows` | building the hybrid world (`TeamBuilder::mpi`); a rank's link to the other processes (`Bridge`, inside its `Comm`); `split` and `dup` across processes; the leaders' communicators of the non-blocking collectives' shadows |
//! | `leaders` | the stage between processes: the leaders' communicator (`ProcessComm`), its call check, MPI's own collectives, `Auto`'s choice there |
//! | `node` | the node stage: the segment that a node's processes share in `/dev/shm`, its rounds, its rings of point-to-point, the slots of persistent short allreduces; the schedules over the rounds; the node stage's setup and calls |
//! | `mpi` | the stage between nodes: the crate's `Transport` over MPI point-to-point, the tags it encodes, the failure notices between processes |
//! | `p2p` | point-to-point between processes: the paths (a thread over MPI, a leader's relay, a node's rings), receives posted by `irecv`, probes |
//! | `collectives` | one file per collective's three stages; the pipelined allreduce |
//!
//! Only builds with the feature compile this layer; the node's shared memory and its schedules
//! are also compiled in the library's own tests (and loom models) without it, where threads
//! stand for a node's processes over a buffer standing for its segment (`node`).

#[cfg(feature = "mpi")]
mod bridge;
#[cfg(feature = "mpi")]
mod collectives;
#[cfg(feature = "mpi")]
mod leaders;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;
// A test build without the feature compiles the node's shared memory and schedules for their
// own tests, which leave parts that only the process layer calls unused.
#[cfg_attr(all(test, not(feature = "mpi")), allow(dead_code))]
pub(crate) mod node;
#[cfg(feature = "mpi")]
mod p2p;
#[cfg(feature = "mpi")]
mod poll;
#[cfg(all(test, not(loom), feature = "mpi"))]
mod selftest;
#[cfg(feature = "mpi")]
mod shadows;
#[cfg(feature = "mpi")]
mod split;
#[cfg(feature = "mpi")]
pub(crate) mod world;

#[cfg(feature = "mpi")]
pub(crate) use bridge::Bridge;
#[cfg(feature = "mpi")]
pub(crate) use leaders::ProcessComm;
#[cfg(feature = "mpi")]
pub(crate) use node::NodeFold;
