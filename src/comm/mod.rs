//! The communicator: the one public API of the crate, the same for every kind of team.
//!
//! A [`Comm`] is one rank's handle on a group of ranks. Each collective is written once here:
//! its signature, the check of its own arguments (`validate`), and the hand-over to the kind
//! of team the communicator belongs to, chosen when the team is built ([`Span`]): the threads
//! of one process (`local`: mailboxes and shared memory), or the threads of several MPI
//! processes (`process`: within each process as on one, between the processes over MPI). The
//! call check between the ranks, the choice of algorithm and the schedules are below.
//!
//! Files: `reduce` holds the reductions, `data` the collectives that move data without
//! combining it, `p2p` point-to-point, `validate` the argument checks; the rest (ranks,
//! barrier, split) is here.

mod data;
mod entries;
#[macro_use]
mod exact;
mod nonblocking;
mod p2p;
mod persistent;
mod reduce;
mod request;
mod scope;
mod shadows;
mod state;
mod taskless;
pub(crate) mod validate;

pub use p2p::{Peer, Status, ANY_TAG, TAG_MAX};
pub use persistent::Persistent;
pub use request::Request;
pub use scope::Scope;

use crate::error::{Error, Result};
use crate::local::Local;
#[cfg(feature = "mpi")]
use crate::process::Bridge;
use crate::select::Barrier;
use crate::topology::{Location, Topology};

/// One rank's handle on a communicator: a group of ranks that exchange messages and take part
/// in collectives together, as an MPI communicator.
///
/// `Team::run` hands each rank a `Comm` over all ranks (the world); [`Comm::split`] makes
/// sub-communicators, which are full communicators in their own right. The same program runs
/// unchanged whatever the team's ranks are: threads of one process ([`crate::run`],
/// [`crate::Team`]), threads of several MPI processes (`TeamBuilder::mpi`, feature `mpi`), or
/// one thread per MPI process (the same with one rank per process).
///
/// A `Comm` is used by one thread at a time (it is `Send` but not `Sync`). Ranks must call
/// collectives (`barrier`, `split`, …) on a communicator in the same order; a rank that calls
/// another collective, or skips one, makes the others fail with [`Error::Mismatch`] or
/// [`Error::PeerExited`] instead of hanging. Messages between two ranks of one communicator
/// are received in the order they were sent (point-to-point and collectives are separate
/// streams, as in MPI).
pub struct Comm {
    /// The kind of team: where the ranks are, and so how a collective runs.
    span: Span,
    /// The shadows its non-blocking collectives run on (`scope`).
    shadows: shadows::Shadows,
}

/// Where a communicator's ranks are, chosen when its team is built. The threads' variant, on
/// every call's path, stays inline (a `Comm` is one object per rank, its size immaterial); the
/// rarer one is boxed.
#[cfg_attr(feature = "mpi", allow(clippy::large_enum_variant))]
enum Span {
    /// Threads of one process: every call runs over the mailboxes and the shared memory.
    Threads(Local),
    /// Threads of several MPI processes (feature `mpi`): each collective runs within each
    /// process, between the processes' leaders over MPI, and within each process again; the
    /// bridge holds this rank's part among its own process's threads.
    #[cfg(feature = "mpi")]
    Processes(Box<Bridge>),
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish_non_exhaustive()
    }
}

impl Comm {
    /// A communicator of threads of one process.
    pub(crate) fn threads(local: Local) -> Comm {
        Comm {
            span: Span::Threads(local),
            shadows: shadows::Shadows::default(),
        }
    }

    /// A communicator whose ranks span MPI processes, through this rank's `bridge`.
    #[cfg(feature = "mpi")]
    pub(crate) fn processes(bridge: Bridge) -> Comm {
        Comm {
            span: Span::Processes(Box::new(bridge)),
            shadows: shadows::Shadows::default(),
        }
    }

    /// Whether the communicator's ranks are threads of this process only.
    pub(crate) fn is_threads(&self) -> bool {
        matches!(self.span, Span::Threads(_))
    }

    /// This rank's link to the other processes, on a communicator that spans processes.
    #[cfg(feature = "mpi")]
    pub(crate) fn bridge(&self) -> Option<&Bridge> {
        match &self.span {
            Span::Threads(_) => None,
            Span::Processes(b) => Some(b),
        }
    }

    /// This rank's part among the threads of its own process: the whole communicator on a
    /// team of one process.
    pub(crate) fn local(&self) -> &Local {
        match &self.span {
            Span::Threads(l) => l,
            #[cfg(feature = "mpi")]
            Span::Processes(b) => &b.local,
        }
    }

    /// Fails the run (this process's, on a team of several) with `e`, so that no rank waits
    /// for this one, and returns it.
    pub(crate) fn fail(&self, e: Error) -> Error {
        self.local().fail(e)
    }

    /// Fails the run with [`Error::InvalidArgument`] `what` of `op`.
    pub(crate) fn invalid(&self, op: &'static str, what: String) -> Error {
        self.fail(Error::InvalidArgument {
            rank: self.rank(),
            op,
            what,
        })
    }

    /// This rank's number in the communicator, `0..size()`.
    pub fn rank(&self) -> usize {
        match &self.span {
            Span::Threads(l) => l.rank(),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.rank(),
        }
    }

    /// Number of ranks in the communicator.
    pub fn size(&self) -> usize {
        match &self.span {
            Span::Threads(l) => l.size(),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.size(),
        }
    }

    /// Team rank (rank in the world communicator of the run) of communicator rank `rank`.
    pub fn team_rank(&self, rank: usize) -> Option<usize> {
        match &self.span {
            Span::Threads(l) => l.team_rank(rank),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => (rank < b.size()).then_some(rank),
        }
    }

    /// Where communicator rank `rank` runs: its package, NUMA node, L3 group and core in the
    /// team's [`Comm::topology`], and the OS index of the core it is pinned to. `None` for a
    /// rank out of range or a team built with [`crate::Pinning::None`]. Every rank of the
    /// communicator sees the same answer for every rank (ranks of one group need not be
    /// contiguous: a spread placement interleaves the packages).
    pub fn location(&self, rank: usize) -> Option<Location> {
        match &self.span {
            Span::Threads(l) => l.location(rank),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.local_location(rank),
        }
    }

    /// The topology of the team this communicator's ranks belong to (the one its locations
    /// index into): the team builder's, or [`Topology::detect`]'s.
    pub fn topology(&self) -> &Topology {
        self.local().topology()
    }

    /// The algorithm `Auto` chose in the last collective call on this communicator
    /// (`unstable::auto_choice` documents what it names).
    #[cfg(feature = "unstable")]
    pub(crate) fn auto_choice(&self) -> Option<&'static str> {
        match &self.span {
            Span::Threads(l) => l.auto_choice(),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.between(),
        }
    }

    /// Blocks until every rank of the communicator has called `barrier`.
    ///
    /// The algorithm is `Auto`'s choice ([`Comm::barrier_with`]): the barrier on shared flags
    /// (`HierarchicalDirect`) when the ranks span several L3 groups or packages and have a
    /// core each, else dissemination, which measured faster than the tree with and without a
    /// core per rank.
    pub fn barrier(&self) -> Result<()> {
        self.barrier_with(Barrier::Auto)
    }

    /// [`Comm::barrier`] with a chosen algorithm: `Dissemination` (Hensgen, Finkel and Manber
    /// 1988: ⌈log₂ p⌉ rounds, in round k rank r signals r + 2ᵏ and waits for r − 2ᵏ (mod p);
    /// p⌈log₂ p⌉ messages) or `Tree` (arrivals up a binomial tree to rank 0, the release back
    /// down: twice the depth, but about 2.5p messages). Every rank must choose the same
    /// algorithm (after `Auto`); ranks that do not all fail with [`crate::Error::Mismatch`]
    /// or [`crate::Error::Aborted`], none hangs or passes.
    pub fn barrier_with(&self, algorithm: Barrier) -> Result<()> {
        self.local().enter_call("barrier")?;
        match &self.span {
            Span::Threads(l) => l.barrier_with(algorithm),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.barrier(algorithm),
        }
    }

    /// Splits the communicator as `MPI_Comm_split`: ranks that pass the same `color` form a
    /// new communicator, ordered by `key` and then by rank in this one; a rank that passes
    /// `None` takes part in the call but gets `Ok(None)`. Every rank of this communicator must
    /// call it. The new communicators are full communicators (point-to-point, barrier,
    /// collectives, further splits).
    pub fn split(&self, color: Option<usize>, key: usize) -> Result<Option<Comm>> {
        self.local().enter_call("split")?;
        let split = match &self.span {
            Span::Threads(l) => l.split(color, key)?,
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.split(color, key)?,
        };
        Ok(split.map(Comm::threads))
    }
}
