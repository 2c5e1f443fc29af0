//! # corecoll
//!
//! Collective communication between threads pinned to cores, with MPI's semantics: each
//! thread is a rank, ranks exchange messages through lock-free single-producer mailboxes (an
//! eager copy for small messages, a single-copy rendezvous for large ones), and call
//! collectives on communicators that can be split like MPI's.
//!
//! ```
//! use corecoll::op;
//!
//! // Four ranks pass a token around a ring, meet at a barrier, and sum a vector.
//! let out = corecoll::run(4, |comm| {
//!     let (r, p) = (comm.rank(), comm.size());
//!     let mut token = [0u64];
//!     comm.sendrecv((r + 1) % p, &[r as u64], (r + p - 1) % p, &mut token)?;
//!     comm.barrier()?;
//!     let mut v = vec![r as f64; 3];
//!     comm.allreduce(&mut v, op::Sum)?;
//!     Ok::<(u64, Vec<f64>), corecoll::Error>((token[0], v))
//! })
//! .unwrap();
//! let (tokens, sums): (Vec<u64>, Vec<Vec<f64>>) = out.into_iter().map(Result::unwrap).unzip();
//! assert_eq!(tokens, vec![3, 0, 1, 2]);
//! assert!(sums.iter().all(|v| v == &vec![6.0; 3]));
//! ```
//!
//! Parts (see `DESIGN.md`): [`Team`] starts and pins rank threads and runs SPMD closures;
//! [`Topology`] describes the machine (packages, NUMA nodes, L3 groups, cores; detected, or
//! described for tests) and places ranks on it by a [`Pinning`], so that [`Comm::location`]
//! tells where each rank runs; [`Comm`] is the per-rank API, with [`Comm::allreduce`] and its
//! [`Algorithm`]s; [`op`] holds the reduction operations; the mailbox, the transport and the
//! waiting protocol are internal and described beside their code (`src/mailbox/README.md`,
//! `src/sync/README.md`, `src/transport/README.md`, `src/shm/README.md`; `docs/protocol.md`
//! lists them). With the feature `mpi`, `hybrid` (`ProcessComm`) runs the same collective
//! schedules between MPI processes; [`sim`] runs them for any number of ranks under a cost
//! model and predicts their time.
//! [`profile`] holds a machine's measured cost constants ([`Profile`], written by
//! `corecoll-bench --calibrate`), which teams load for the pipelining lemma's block sizes.

mod algorithms;
mod collective;
mod comm;
mod copy;
mod error;
mod hierarchy;
#[cfg(feature = "mpi")]
mod hybrid;
mod local;
mod mailbox;
pub mod op;
pub mod profile;
mod select;
mod shm;
pub mod sim;
mod sync;
mod team;
mod topology;
mod transport;
pub mod tuning;

pub use collective::Collective;
pub use comm::Comm;
pub use error::{Error, Result};
pub use mailbox::EAGER_MAX;
pub use profile::Profile;
pub use select::{Algorithm, Block, MAX_AUTO_BLOCK, MAX_AUTO_DIRECT_BLOCK};

/// The algorithms of the collectives other than allreduce (whose [`Algorithm`] is at the
/// crate root), one enum per collective, for their `_with` variants.
pub mod algorithm {
    pub use crate::select::{
        Allgather, Alltoall, Barrier, Broadcast, Fanout, Gather, Reduce, ReduceScatter, Scan,
        Scatter,
    };
}
pub use team::{run, Team, TeamBuilder, Wait};
pub use topology::{Location, Pinning, Source, Topology};
