//! # corecoll
//!
//! Collective communication with MPI's semantics between threads pinned to cores — and, with
//! the feature `mpi`, between the threads of several MPI processes — through one communicator
//! type, [`Comm`]. Each thread of a team is a rank: it sends to and receives from other ranks,
//! and calls collectives (allreduce with every algorithm of the literature, broadcast, reduce,
//! scan, gather, scatter, allgather, all-to-all, reduce-scatter, barrier, split) whose results
//! are MPI's, bit for bit the same on every rank.
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
//! ## One API for every kind of team
//!
//! A program is written against `&Comm` and runs unchanged on
//! - a team of threads of one process: [`run`], or a [`Team`] kept across runs
//!   (`Team::builder().ranks(8).pinning(Pinning::Compact).build()?`);
//! - a hybrid team (feature `mpi`): `Team::builder().ranks(t).mpi(&world)?` in every MPI
//!   process, whose runs hand every thread of every process a rank of one `Comm`; between the
//!   processes each process's first thread calls MPI;
//! - one rank per MPI process: the same with `.ranks(1)`;
//! - any of these with the program's own threads as ranks (an OpenMP region's, a rayon pool's):
//!   `Team::builder().ranks(t).external()`, each thread calling [`Team::join`]:
//!
//! ```
//! # fn main() -> corecoll::Result<()> {
//! let team = corecoll::Team::builder().ranks(4).external().build()?;
//! let sums = std::thread::scope(|s| {
//!     let joins: Vec<_> = (0..4)
//!         .map(|rank| {
//!             let team = &team;
//!             s.spawn(move || {
//!                 team.join(rank, |comm| {
//!                     let mut x = [comm.rank() as f64];
//!                     comm.allreduce(&mut x, corecoll::op::Sum).map(|()| x[0])
//!                 })
//!             })
//!         })
//!         .collect();
//!     joins.into_iter().map(|j| j.join().unwrap()).collect::<Vec<_>>()
//! });
//! assert!(sums.into_iter().all(|s| s == Ok(Ok(6.0))));
//! # Ok(())
//! # }
//! ```
//!
//! Every collective has a form that names its algorithm (`allreduce_with(buf, op,`
//! [`Algorithm::DualRoot`]` { .. })`, and the enums of [`algorithm`]); `Auto` decides from
//! measured tables ([`tuning`]) and a machine's cost constants ([`Profile`]).
//!
//! ## Errors, never hangs
//!
//! A call that the ranks do not all make alike (another length, element type, root,
//! collective, algorithm or op), a rank out of range, a rank that returned or panicked: every
//! rank's call returns an [`Error`] that names the rank, the peer and the operation.
//!
//! ## Also here
//!
//! [`Topology`] describes the machine and places ranks on it by a [`Pinning`]; [`op`] holds the
//! reduction operations; [`sim`] runs the schedules for any number of ranks under a cost model.
//! How the crate is built, layer by layer, is `docs/architecture.md` in the repository; the
//! protocols of the mailboxes, the waiting and the shared board are argued in README files
//! beside their code.

mod algorithms;
mod collective;
mod comm;
mod copy;
mod env;
mod error;
mod hierarchy;
mod local;
mod mailbox;
pub mod op;
#[cfg(any(feature = "mpi", test))]
mod process;
pub mod profile;
pub mod repro;
mod select;
mod shm;
pub mod sim;
mod sync;
mod team;
mod topology;
mod transport;
pub mod tuning;

pub use collective::Collective;
pub use comm::{Comm, Peer, Persistent, Request, Scope, Status, ANY_TAG, TAG_MAX};
pub use env::NodeShm;
pub use error::{Error, Result};
pub use mailbox::Elem;
pub use profile::Profile;
pub use select::{Algorithm, Block};

/// The algorithms of the collectives other than allreduce (whose [`Algorithm`] is at the
/// crate root), one enum per collective, for their `_with` variants; and [`Any`](algorithm::Any),
/// one algorithm of any collective.
pub mod algorithm {
    pub use crate::select::{
        Allgather, Alltoall, Any, Barrier, Broadcast, Fanout, Gather, Reduce, ReduceScatter, Scan,
        Scatter,
    };
}
pub use team::{run, Seat, Team, TeamBuilder, Wait};
pub use topology::{Location, Pinning, Source, Topology};

/// Hooks for the benchmark and the tests (feature `unstable`), outside the stable API: they
/// follow the implementation and may change in any release.
#[cfg(feature = "unstable")]
pub mod unstable {
    pub use crate::mailbox::EAGER_MAX;
    pub use crate::select::{MAX_AUTO_BLOCK, MAX_AUTO_DIRECT_BLOCK};
    pub use crate::tuning::rules::parse_size;

    /// The algorithm `Auto` chose in the last collective call on `comm`: its name
    /// (as the algorithm enums' `name` spells it; also when a named hierarchical algorithm
    /// found one group and ran `Auto`'s flat choice), or `None` if that call named its
    /// algorithm or had nothing to choose. On a communicator whose ranks span MPI processes,
    /// where its stage between the processes ran: `"node shared memory between processes"`
    /// (every process on one node: allreduce, reduce, broadcast, allgather and barrier with
    /// `Auto` or `Direct` there) or `"MPI between processes"` (everything else).
    /// Every rank of the call sees the same. For performance work: which schedule a call of
    /// `Auto` ran, e.g. to tell a slow table entry from noise (`corecoll-bench`'s summary
    /// prints it).
    ///
    /// ```
    /// use corecoll::{op, Team};
    /// let team = Team::builder().ranks(2).build().unwrap();
    /// let names = team
    ///     .run(|comm| {
    ///         let mut v = vec![1.0f64; 4];
    ///         comm.allreduce(&mut v, op::Sum).unwrap();
    ///         corecoll::unstable::auto_choice(comm)
    ///     })
    ///     .unwrap();
    /// assert!(names[0].is_some());
    /// assert_eq!(names[0], names[1]);
    /// ```
    pub fn auto_choice(comm: &crate::Comm) -> Option<&'static str> {
        comm.auto_choice()
    }

    /// This machine as a profile records it: its host name, the cores this process may use,
    /// and `topology` in a line.
    pub fn host_here(topology: &crate::Topology) -> crate::profile::Host {
        crate::profile::Host::here(topology)
    }

    /// The simulator's machine of `nodes × sockets × cores` with the costs of a calibrated
    /// profile's levels ([`Profile::resolve`](crate::Profile::resolve)): within a socket its
    /// `l3` level, across sockets its `machine` level, across nodes its `mpi` level. One lane,
    /// bidirectional ports, and the γ of floating-point (`float`) or integer sums.
    pub fn machine_from_profile(
        profile: &crate::Profile,
        shape: (usize, usize, usize),
        float: bool,
    ) -> crate::sim::Machine {
        crate::sim::Machine::from_profile(profile, shape, float)
    }
}
