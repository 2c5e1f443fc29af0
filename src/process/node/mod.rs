//! The node stage: the processes of one node exchange through memory they share, with MPI only
//! between the nodes' leaders (the node level of Open MPI's HAN, Luo et al. 2020).
//!
//! - What a node's processes share: the segment in `/dev/shm` (`segment`) and its layout
//!   (`memory`), the rounds through its slots (`rounds`, with loom models in `loom`), the rings
//!   of point-to-point between their ranks (`ring`, `mail`), the slots of persistent short
//!   allreduces (`folds`, `region`), cross-memory attach (`cma`).
//! - The node stage's schedules over the rounds (`schedules`, one-copy allreduce in
//!   `schedules::single`).
//! - With the feature `mpi`: the node stage's setup when the world is built (`setup`), its
//!   calls on the leaders' communicator (`stage`), persistent short allreduces folded through
//!   the segment (`fold`).
//!
//! Without the feature, the library's tests reach the shared memory and the schedules with
//! threads standing for processes over a heap buffer standing for the segment.

#[cfg(not(loom))]
pub(crate) mod cma;
#[cfg(feature = "mpi")]
mod fold;
#[cfg(not(loom))]
pub(crate) mod folds;
#[cfg(all(test, loom))]
mod loom;
#[cfg(not(loom))]
pub(crate) mod mail;
mod memory;
pub(crate) mod region;
mod ring;
mod rounds;
pub(crate) mod schedules;
#[cfg(not(loom))]
mod segment;
#[cfg(feature = "mpi")]
mod setup;
#[cfg(feature = "mpi")]
mod stage;
#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(feature = "mpi")]
pub(crate) use fold::NodeFold;
#[cfg(all(not(loom), any(test, feature = "mpi")))]
pub(crate) use memory::gone;
#[cfg(not(loom))]
pub(crate) use memory::NodeMemory;
#[cfg(feature = "mpi")]
pub(crate) use memory::SLOT_BYTES;
#[cfg(any(test, not(loom)))]
pub(crate) use rounds::Control;
#[cfg(feature = "mpi")]
pub(crate) use rounds::SPINS;
pub(crate) use rounds::{Halt, Rounds};
#[cfg(all(not(loom), any(test, feature = "mpi")))]
pub(crate) use segment::process_exists;
#[cfg(not(loom))]
pub(crate) use segment::Segment;
#[cfg(feature = "mpi")]
pub(crate) use setup::{node_stage, NodeStage, Nodes};
