//! The communicator: what a rank calls. Validation and dispatch only; the schedules live in
//! `algorithms` and the data movement in `transport`.

mod agree;
mod allreduce;
mod alltoall;
pub(crate) mod board;
pub(crate) mod gather;
mod pair;
mod reduce_scatter;
mod rooted;
mod scan;
pub(crate) mod scratch;
mod split;
mod staged;
pub(crate) mod world;

use crate::algorithms;
use crate::error::Result;
use crate::hierarchy::{Hierarchy, Plan};
use crate::profile::Level;
use crate::select::{self, Barrier};
use crate::sync::park::wait_until;
use crate::topology::{Location, Topology};
use crate::transport::shm::ShmTransport;
use crate::transport::{Kind, Tag, Transport};
use std::cell::{Cell, OnceCell};
use std::sync::Arc;
use std::time::{Duration, Instant};
use world::{CommShared, Context, RunState};

/// On a communicator whose ranks span MPI processes (feature `mpi`: a hybrid team's), returns
/// `$body` from the calling method, with `$b` bound to the rank's [`crate::hybrid::world::Bridge`];
/// on any other, does nothing. Every public method of `Comm` starts with it (or calls one that
/// does), so that the shared-memory code below never runs on a hybrid `Comm` itself (only on
/// the plain `Comm` of its own process, `Bridge::local`).
macro_rules! across_processes {
    ($self:ident, |$b:ident| $body:expr) => {
        #[cfg(feature = "mpi")]
        {
            if let Some($b) = $self.bridge.as_deref() {
                return $body;
            }
        }
    };
}
pub(crate) use across_processes;

/// One rank's handle on a communicator: a group of ranks that exchange messages and take part
/// in collectives together, as an MPI communicator.
///
/// `Team::run` hands each rank a `Comm` over all ranks (the world); [`Comm::split`] makes
/// sub-communicators, which are full communicators in their own right. A `Comm` is used by one
/// thread at a time (it is `Send` but not `Sync`). Ranks must call collectives (`barrier`,
/// `split`, …) on a communicator in the same order; a rank that calls another collective, or
/// skips one, makes the others fail with [`crate::Error::Mismatch`] or
/// [`crate::Error::PeerExited`] instead of hanging.
///
/// Messages between two ranks of one communicator are received in the order they were sent
/// `Auto`'s decisions for one collective on a communicator: ranges of sizes by their first
/// size, each with the decided algorithm's id (`None`: the crate's fixed rule).
type AutoRanges = Box<[(usize, Option<u8>)]>;

/// An algorithm `Auto` chose: its enum's name lookup ([`select::Choice::name_of`]) and its id.
type AutoRan = (fn(u8) -> Option<&'static str>, u8);

/// (point-to-point and collectives are separate streams, as in MPI).
pub struct Comm {
    rank: usize,
    shared: Arc<CommShared>,
    run: Arc<RunState>,
    /// Number of collective calls made on this communicator by this rank: the sequence number
    /// in the tags of the next one.
    coll_seq: Cell<u64>,
    /// This rank's hierarchies of the communicator (by location; cut into runs that keep
    /// rank order), each built by the first hierarchical collective that needs it.
    hierarchy: [OnceCell<Box<Hierarchy>>; 2],
    /// The plans of those hierarchies, computed from the ranks' locations alone (no messages)
    /// the first time a call asks for them.
    plan: [OnceCell<Box<Plan>>; 2],
    /// The pipelining lemma's constants on this communicator ([`Comm::costs`]), computed from
    /// the ranks' locations and the team's profile the first time a call asks.
    costs: OnceCell<select::Costs>,
    /// `Auto`'s decisions on this communicator ([`Comm::tuned`]), per collective and
    /// commutativity: ranges of sizes by their first size, each with the decided algorithm's
    /// id (`None`: the fixed rule), computed the first time a call asks.
    auto: Box<[[OnceCell<AutoRanges>; 2]; crate::tuning::Collective::ALL.len()]>,
    /// What `Auto` chose in the current (or last) collective call, if it chose
    /// ([`Comm::auto_choice`]): the id and the name lookup of the algorithm's enum, so that
    /// the call itself only stores two words.
    auto_ran: Cell<Option<AutoRan>>,
    /// This rank's scratch buffers, reused by the collectives from call to call.
    scratch: scratch::Pool,
    /// On a communicator whose ranks span MPI processes (a hybrid team's world), the link to
    /// them; the fields above then describe the plain `Comm` of this process's threads, which
    /// the public methods do not use (`across_processes!`).
    #[cfg(feature = "mpi")]
    bridge: Option<Box<crate::hybrid::world::Bridge>>,
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
    pub(crate) fn new(rank: usize, shared: Arc<CommShared>, run: Arc<RunState>) -> Self {
        Comm {
            rank,
            shared,
            run,
            coll_seq: Cell::new(0),
            hierarchy: [OnceCell::new(), OnceCell::new()],
            plan: [OnceCell::new(), OnceCell::new()],
            costs: OnceCell::new(),
            auto: Box::default(),
            auto_ran: Cell::new(None),
            scratch: scratch::Pool::new(),
            #[cfg(feature = "mpi")]
            bridge: None,
        }
    }

    /// The `Comm` of a rank of a hybrid team: `rank`, `shared` and `run` are those of its own
    /// process's threads (as for [`Comm::new`]), `bridge` its link to the other processes.
    #[cfg(feature = "mpi")]
    pub(crate) fn bridged(
        rank: usize,
        shared: Arc<CommShared>,
        run: Arc<RunState>,
        bridge: crate::hybrid::world::Bridge,
    ) -> Self {
        let mut comm = Comm::new(rank, shared, run);
        comm.bridge = Some(Box::new(bridge));
        comm
    }

    pub(crate) fn shared(&self) -> &CommShared {
        &self.shared
    }

    pub(crate) fn run(&self) -> &RunState {
        &self.run
    }

    /// The tag of this rank's next collective call of kind `kind`.
    pub(crate) fn next_tag(&self, kind: Kind) -> Tag {
        let seq = self.coll_seq.get();
        self.coll_seq.set(seq.wrapping_add(1));
        Tag {
            kind,
            variant: 0,
            seq,
        }
    }

    /// Fails if the run has already failed: every collective starts with this, so that even a
    /// collective that sends nothing (on one rank) reports an earlier failure.
    pub(crate) fn enter(&self, op: &'static str) -> Result<()> {
        if self.run.is_aborted() {
            return Err(crate::Error::Aborted {
                rank: self.rank,
                op,
                cause: Box::new(self.run.cause()),
            });
        }
        Ok(())
    }

    /// [`Comm::enter`] at the start of a public collective call: also forgets what `Auto`
    /// chose in the call before ([`Comm::auto_choice`]). (The schedules call `enter` again
    /// inside a call, which must not forget this call's choice.)
    pub(crate) fn enter_call(&self, op: &'static str) -> Result<()> {
        self.auto_ran.set(None);
        self.enter(op)
    }

    /// Fails the run with `e` (if it is the first failure), so that no other rank waits for
    /// this one, and returns it.
    pub(crate) fn fail(&self, e: crate::Error) -> crate::Error {
        self.run.abort(e.clone());
        e
    }

    /// When a wait of this rank's that begins now gives up: the start and the team's
    /// timeout, if it has one.
    pub(crate) fn wait_start(&self) -> Option<(Instant, Duration)> {
        self.run.ranks.timeout.map(|t| (Instant::now(), t))
    }

    /// Waits (spin, yield, then park on this rank's parker) until `pending()` names no peer
    /// left to wait for; gives up when the run fails, the peer `pending()` names has returned
    /// from the run, or the team's timeout (counted from `started`, [`Comm::wait_start`])
    /// passes, with [`Comm::stalled`]'s error. `pending` must only read what the peers
    /// publish, and every store it waits for must be followed by an unpark of this rank
    /// (`docs/protocol.md`, section 2). The waiting loop of the transport, the board and the
    /// flag barrier.
    pub(crate) fn wait_for(
        &self,
        op: &'static str,
        started: Option<(Instant, Duration)>,
        mut pending: impl FnMut() -> Option<usize>,
    ) -> Result<()> {
        let run = &self.run;
        let members = &self.shared.members;
        // A timeout too large to add to the start is no limit.
        let deadline = started.and_then(|(s, t)| s.checked_add(t));
        wait_until(
            &run.ranks.parkers[members[self.rank]],
            &run.ranks.policy,
            deadline,
            || match pending() {
                None => true,
                Some(q) => run.is_aborted() || run.is_done(members[q]),
            },
        );
        match pending() {
            None => Ok(()),
            Some(peer) => Err(self.stalled(op, peer, started)),
        }
    }

    /// The error of a wait for `peer` (begun at `started`) that ended without what it waited
    /// for: the run's failure if the run failed; else `peer` returned from the run
    /// ([`crate::Error::PeerExited`]) or the timeout passed ([`crate::Error::Timeout`]), both
    /// of which fail the run so that no other rank waits for this one.
    pub(crate) fn stalled(
        &self,
        op: &'static str,
        peer: usize,
        started: Option<(Instant, Duration)>,
    ) -> crate::Error {
        let rank = self.rank;
        if self.run.is_aborted() {
            crate::Error::Aborted {
                rank,
                op,
                cause: Box::new(self.run.cause()),
            }
        } else if self.run.is_done(self.shared.members[peer]) {
            self.fail(crate::Error::PeerExited { rank, peer, op })
        } else {
            self.fail(crate::Error::Timeout {
                rank,
                peer,
                op,
                waited: started.map(|(s, _)| s.elapsed()).unwrap_or_default(),
            })
        }
    }

    /// The plan of this communicator's hierarchy ([`Plan::of`] the ranks' locations), the one
    /// that keeps rank order if `ordered`: the same on every rank, and needing no messages, so
    /// a call may consult it before its call check. Where the groups are intervals of ranks
    /// already, the two plans are one.
    pub(crate) fn hierarchy_plan(&self, ordered: bool) -> &Plan {
        let plain = self.plan[0].get_or_init(|| {
            let locations: Vec<_> = (0..self.size()).map(|r| self.location(r)).collect();
            Box::new(Plan::of(&locations, false))
        });
        if !ordered || plain.contiguous {
            return plain;
        }
        self.plan[1].get_or_init(|| {
            let locations: Vec<_> = (0..self.size()).map(|r| self.location(r)).collect();
            Box::new(Plan::of(&locations, true))
        })
    }

    /// The cost constants `Block::Auto` uses on this communicator: the team profile's
    /// ([`crate::Profile`]) for the level the ranks span — `Oversubscribed` if the team's
    /// ranks share cores, else the widest of `L3`, `Package`, `Machine` among the ranks'
    /// locations ([`Level::spanned`]). The same on every rank (it depends on the team and the
    /// members only), and computed once per communicator.
    pub(crate) fn costs(&self) -> select::Costs {
        *self.costs.get_or_init(|| {
            let ranks = &self.run.ranks;
            let level = if ranks.policy.oversubscribed {
                Level::Oversubscribed
            } else {
                Level::spanned(
                    self.shared
                        .members
                        .iter()
                        .map(|&t| ranks.locations.get(t).copied().flatten()),
                )
            };
            ranks.profile.costs(level)
        })
    }

    /// `Auto`'s algorithm for `collective` with `bytes` bytes per rank (as `crate::tuning`
    /// counts them) and an op that is `commutative` or not, from the team's overrides and
    /// decision tables; `fixed()` (the crate's fixed rule) where none covers the call. The
    /// same on every rank of the call.
    pub(crate) fn tuned<A: crate::tuning::Named>(
        &self,
        collective: crate::tuning::Collective,
        bytes: usize,
        commutative: bool,
        fixed: impl FnOnce() -> A,
    ) -> A {
        let ranges = self.auto[collective.index()][usize::from(commutative)].get_or_init(|| {
            let ranks = &self.run.ranks;
            ranks
                .tuning
                .flatten(
                    collective,
                    self.size(),
                    ranks.policy.oversubscribed,
                    commutative,
                )
                .into_iter()
                .map(|(from, a)| (from, a.and_then(A::named).map(|a| a.id())))
                .collect()
        });
        // The last range starting at or below `bytes` (the first starts at 0).
        let i = ranges.partition_point(|&(from, _)| from <= bytes);
        let chosen = ranges[i.saturating_sub(1)]
            .1
            .and_then(A::with_id)
            .unwrap_or_else(fixed);
        self.chose(chosen);
        chosen
    }

    /// Notes that `Auto` chose `alg` in this call ([`Comm::auto_choice`]).
    pub(crate) fn chose<A: select::Choice>(&self, alg: A) {
        self.auto_ran.set(Some((A::name_of, alg.id())));
    }

    /// The algorithm `Auto` chose in the last collective call on this communicator: its name
    /// (as the algorithm enums' `name` spells it; also when a named hierarchical algorithm
    /// found one group and ran `Auto`'s flat choice), or `None` if that call named its
    /// algorithm, had nothing to choose, or ran between MPI processes (whose choices are
    /// their own).
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
    ///         comm.auto_choice()
    ///     })
    ///     .unwrap();
    /// assert!(names[0].is_some());
    /// assert_eq!(names[0], names[1]);
    /// ```
    pub fn auto_choice(&self) -> Option<&'static str> {
        self.auto_ran.get().and_then(|(name_of, id)| name_of(id))
    }

    /// This rank's hierarchy of the communicator ([`Comm::hierarchy_plan`] of `ordered`),
    /// built (collectively: every rank must call this at the same point of the same
    /// collective, after its call check) the first time.
    pub(crate) fn hierarchy(&self, ordered: bool) -> Result<&Hierarchy> {
        let which = usize::from(ordered && !self.hierarchy_plan(false).contiguous);
        if let Some(h) = self.hierarchy[which].get() {
            return Ok(h);
        }
        let h = Box::new(Hierarchy::build(self, which == 1)?);
        Ok(self.hierarchy[which].get_or_init(|| h))
    }

    /// The transport of the collective context, for operation `op`.
    pub(crate) fn coll(&self, op: &'static str) -> ShmTransport<'_> {
        ShmTransport::new(self, Context::Coll, op)
    }

    fn p2p(&self, op: &'static str) -> ShmTransport<'_> {
        ShmTransport::new(self, Context::P2p, op)
    }

    /// This rank's number in the communicator, `0..size()`.
    pub fn rank(&self) -> usize {
        across_processes!(self, |b| b.rank());
        self.rank
    }

    /// Number of ranks in the communicator.
    pub fn size(&self) -> usize {
        across_processes!(self, |b| b.size());
        self.shared.size()
    }

    /// Team rank (rank in the world communicator of the run) of communicator rank `rank`.
    pub fn team_rank(&self, rank: usize) -> Option<usize> {
        across_processes!(self, |b| (rank < b.size()).then_some(rank));
        self.shared.members.get(rank).copied()
    }

    /// Where communicator rank `rank` runs: its package, NUMA node, L3 group and core in the
    /// team's [`Comm::topology`], and the OS index of the core it is pinned to. `None` for a
    /// rank out of range or a team built with [`crate::Pinning::None`]. Every rank of the
    /// communicator sees the same answer for every rank (ranks of one group need not be
    /// contiguous: a spread placement interleaves the packages).
    pub fn location(&self, rank: usize) -> Option<Location> {
        across_processes!(self, |b| b.local_location(rank));
        let team_rank = self.team_rank(rank)?;
        self.run.ranks.locations.get(team_rank).copied().flatten()
    }

    /// The topology of the team this communicator's ranks belong to (the one its locations
    /// index into): the team builder's, or [`Topology::detect`]'s.
    pub fn topology(&self) -> &Topology {
        across_processes!(self, |b| b.local.topology());
        static NONE: std::sync::OnceLock<Topology> = std::sync::OnceLock::new();
        match &self.run.ranks.topology {
            Some(t) => t,
            None => NONE.get_or_init(Topology::detect),
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
        across_processes!(self, |b| b.barrier());
        self.enter_call("barrier")?;
        let auto = || {
            self.tuned(crate::tuning::Collective::Barrier, 0, true, || {
                select::choose_barrier(self.size(), self.run().ranks.policy.oversubscribed)
            })
        };
        let alg = match algorithm {
            // Across L3 groups or packages, with a core per rank, the barrier on shared flags
            // (docs/hierarchy.md, "When `Auto` goes hierarchical").
            Barrier::Auto
                if !self.run().ranks.policy.oversubscribed
                    && !self.hierarchy_plan(false).levels.is_empty() =>
            {
                Barrier::HierarchicalDirect
            }
            Barrier::Auto => auto(),
            // One group: `Auto`'s flat choice, decided from the plan (no messages, the same on
            // every rank), as the allreduce does.
            Barrier::Hierarchical if self.hierarchy_plan(false).levels.is_empty() => auto(),
            Barrier::Hierarchical => {
                // The call check's one hop on the whole communicator comes first: its messages
                // go r → r + 1 as dissemination's first round and the tree's first messages
                // do, under another tag variant, so a rank of another algorithm meets a
                // foreign tag at once (`hierarchy::barrier`). Only then the (cached) split.
                let tag = self.next_tag(Kind::Barrier);
                let call = agree::Call::of::<u8, _>("barrier", Barrier::Hierarchical, 0);
                self.agree(&self.coll("barrier"), tag, &call, false)?;
                return self.hierarchy(false)?.barrier(self);
            }
            Barrier::HierarchicalDirect if self.hierarchy_plan(false).levels.is_empty() => auto(),
            chosen => chosen,
        };
        if alg == Barrier::HierarchicalDirect {
            // The same one-hop check as `Hierarchical`'s, for the same reason, split in two
            // around the barrier's arrival: the descriptor goes out first, and is read and
            // compared before the barrier waits for anyone (`hierarchy::direct::barrier`).
            let tag = self.next_tag(Kind::Barrier);
            let call = agree::Call::of::<u8, _>("barrier", alg, 0);
            let t = self.coll("barrier");
            self.agree_post(&t, tag, &call)?;
            let plan = self.hierarchy_plan(false);
            let check = || self.agree_take(&t, tag, &call);
            return crate::hierarchy::direct::barrier(self, plan, tag, check);
        }
        // No call check: the messages carry the algorithm in their tag, and the tree barrier
        // is laid out so that a mix of algorithms meets a foreign tag at once
        // (`algorithms::barrier`).
        let tag = self.next_tag(Kind::Barrier).with_variant(alg.id());
        let t = self.coll("barrier");
        algorithms::barrier::run(&t, alg, tag)
    }

    /// Sends `data` to rank `dest`. Up to [`crate::EAGER_MAX`] bytes are copied into the
    /// mailbox and the call returns at once (unless the receiver is several messages behind);
    /// larger messages are read by the receiver straight from `data`, and the call returns
    /// when it has.
    pub fn send<T: Copy + Send + Sync + 'static>(&self, dest: usize, data: &[T]) -> Result<()> {
        across_processes!(self, |b| b.local.send(b.local_peer("send", dest)?, data));
        self.p2p("send").send(dest, Tag::P2P, data)
    }

    /// Receives exactly `buf.len()` elements of type `T` from rank `src`: the next message
    /// `src` sent this rank. A message of another length or element type is an error
    /// ([`crate::Error::Mismatch`]), not a partial read.
    pub fn recv<T: Copy + Send + Sync + 'static>(&self, src: usize, buf: &mut [T]) -> Result<()> {
        across_processes!(self, |b| b.local.recv(b.local_peer("recv", src)?, buf));
        self.p2p("recv").recv(src, Tag::P2P, buf)
    }

    /// Sends `send` to `dest` and receives `recv` from `src` in one call that cannot deadlock
    /// against a matching `sendrecv` (as `MPI_Sendrecv`). `dest` and `src` may be this rank.
    pub fn sendrecv<T: Copy + Send + Sync + 'static>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        recv: &mut [T],
    ) -> Result<()> {
        across_processes!(self, |b| {
            let (d, s) = (
                b.local_peer("sendrecv", dest)?,
                b.local_peer("sendrecv", src)?,
            );
            b.local.sendrecv(d, send, s, recv)
        });
        self.p2p("sendrecv")
            .sendrecv(dest, send, src, recv, Tag::P2P)
    }
}
