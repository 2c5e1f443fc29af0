//! The collectives among the threads of one process: which algorithm, the call check, and
//! the run of the schedule (`algorithms`), the single-copy collective (`shm`'s board) or the
//! hierarchy (`hierarchy`). Arguments arrive checked (`comm::validate`).

mod allreduce;
mod alltoall;
mod exchanging;
pub(crate) mod gather;
mod p2p;
pub(crate) mod persistent;
mod reduce_scatter;
mod rooted;
mod scan;
mod split;
mod staged;
mod whole;

use crate::algorithms;
use crate::algorithms::check::{self, Call};
use crate::collective::Collective;
use crate::error::Result;
use crate::hierarchy::{Hierarchy, Plan};
use crate::mailbox::{Elem, Kind, Tag};
use crate::op::Op;
use crate::profile::Level;
use crate::select::{self, Barrier, Decision};
use crate::shm::{CommShared, Member, RunState};
use crate::sync::Mutex;
use crate::topology::{Location, Topology};
use crate::transport::shm::{Matcher, ShmTransport};
pub(crate) use exchanging::Exchanging;
use std::cell::{Cell, OnceCell};
use std::collections::HashMap;
use std::sync::Arc;

/// What a team decides with, shared by every communicator of its runs: its cost constants
/// (for `Block::Auto`) and its decision tables and overrides (for `Auto`).
#[derive(Debug, Default)]
pub(crate) struct Settings {
    /// The team's calibration profile ([`crate::Profile`]).
    pub profile: crate::profile::Profile,
    /// How `Auto` picks algorithms ([`crate::tuning::Tuning`]).
    pub tuning: crate::tuning::Tuning,
    /// `Auto`'s decisions as [`Local::tuned`] flattens them, by (collective, communicator
    /// size, oversubscribed, commutative): computed once per team, not once per communicator
    /// (a team whose threads join run after run makes a communicator per run).
    pub flattened: Mutex<HashMap<(Collective, usize, bool, bool), AutoRanges>>,
}

impl Settings {
    /// The settings of a team with `profile` and `tuning`.
    pub(crate) fn new(profile: crate::profile::Profile, tuning: crate::tuning::Tuning) -> Self {
        Settings {
            profile,
            tuning,
            flattened: Mutex::new(HashMap::new()),
        }
    }
}

/// `Auto`'s decisions for one collective on a communicator: ranges of sizes by their first
/// size, each with the decided algorithm's id (`None`: the crate's fixed rule).
type AutoRanges = Arc<[(usize, Option<u8>)]>;

/// An algorithm `Auto` chose: its enum's name lookup ([`select::Choice::name_of`]) and its id.
type AutoRan = (fn(u8) -> Option<&'static str>, u8);

/// One rank's part of a communicator among the threads of its own process — the whole
/// communicator on a team of one process — with every collective among them: it chooses the
/// algorithm (flat, single-copy or hierarchical), checks the call between the ranks and runs
/// it. The public [`crate::Comm`] checks each call's arguments and hands it here (or, on a team
/// of several processes, to `process`, which runs its stages within each process here).
pub(crate) struct Local {
    /// This rank's handle on the communicator's shared state.
    member: Member,
    /// The team's cost constants and decision tables.
    settings: Arc<Settings>,
    /// This rank's hierarchies of the communicator (by location; cut into runs that keep
    /// rank order), each built by the first hierarchical collective that needs it.
    hierarchy: [OnceCell<Box<Hierarchy<Local>>>; 2],
    /// The plans of those hierarchies, computed from the ranks' locations alone (no messages)
    /// the first time a call asks for them.
    plan: [OnceCell<Box<Plan>>; 2],
    /// The pipelining lemma's constants on this communicator ([`Local::costs`]), computed
    /// from the ranks' locations and the team's profile the first time a call asks.
    costs: OnceCell<select::Costs>,
    /// `Auto`'s decisions on this communicator ([`Local::tuned`]), per collective and
    /// commutativity: ranges of sizes by their first size, each with the decided algorithm's
    /// id (`None`: the fixed rule), computed the first time a call asks.
    auto: Box<[[OnceCell<AutoRanges>; 2]; Collective::ALL.len()]>,
    /// What `Auto` chose in the current (or last) collective call, if it chose
    /// (`Local::auto_choice`): the id and the name lookup of the algorithm's enum, so that
    /// the call itself only stores two words.
    auto_ran: Cell<Option<AutoRan>>,
    /// This rank's point-to-point messages set aside by receives that wanted others.
    matcher: Matcher,
}

impl std::fmt::Debug for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish_non_exhaustive()
    }
}

impl Local {
    pub(crate) fn new(member: Member, settings: Arc<Settings>) -> Self {
        Local {
            member,
            settings,
            hierarchy: [OnceCell::new(), OnceCell::new()],
            plan: [OnceCell::new(), OnceCell::new()],
            costs: OnceCell::new(),
            auto: Box::default(),
            auto_ran: Cell::new(None),
            matcher: Matcher::default(),
        }
    }

    /// Whether the team's ranks share cores (its wait policy), which some of `Auto`'s fixed
    /// rules weigh.
    pub(crate) fn oversubscribed(&self) -> bool {
        self.run().ranks.policy.oversubscribed
    }

    /// This rank's handle on the communicator's shared state.
    pub(crate) fn member(&self) -> &Member {
        &self.member
    }

    pub(crate) fn shared(&self) -> &CommShared {
        self.member.shared()
    }

    /// This rank of the communicator's shadow `k` (`CommShared::shadow`): a communicator of its
    /// own over the same ranks, for a non-blocking collective.
    pub(crate) fn shadow(&self, k: usize) -> Local {
        let shared = self.member.shared_arc().shadow(k);
        let member = Member::new(self.rank(), shared, self.member.run_arc().clone());
        Local::new(member, self.settings.clone())
    }

    pub(crate) fn run(&self) -> &RunState {
        self.member.run()
    }

    /// The tag of this rank's next collective call of kind `kind`.
    pub(crate) fn next_tag(&self, kind: impl Into<Kind>) -> Tag {
        self.member.next_tag(kind)
    }

    /// Fails if the run has already failed ([`Member::enter`]).
    pub(crate) fn enter(&self, op: &'static str) -> Result<()> {
        self.member.enter(op)
    }

    /// [`Local::enter`] at the start of a public collective call: also forgets what `Auto`
    /// chose in the call before (what `unstable::auto_choice` reports). (The schedules call `enter` again
    /// inside a call, which must not forget this call's choice.)
    pub(crate) fn enter_call(&self, op: &'static str) -> Result<()> {
        self.auto_ran.set(None);
        self.enter(op)
    }

    /// Fails the run with `e` ([`Member::fail`]) and returns it.
    pub(crate) fn fail(&self, e: crate::Error) -> crate::Error {
        self.member.fail(e)
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
            let ranks = &self.run().ranks;
            let level = if ranks.policy.oversubscribed {
                Level::Oversubscribed
            } else {
                Level::spanned(
                    self.shared()
                        .members
                        .iter()
                        .map(|&t| ranks.locations.get(t).copied().flatten()),
                )
            };
            self.settings.profile.costs(level)
        })
    }

    /// `Auto`'s algorithm for `collective` with `bytes` bytes per rank (as `crate::tuning`
    /// counts them) and an op that is `commutative` or not, from the team's overrides and
    /// decision tables; `fixed()` (the crate's fixed rule) where none covers the call. The
    /// same on every rank of the call.
    pub(crate) fn tuned<D: Decision>(
        &self,
        collective: Collective,
        bytes: usize,
        commutative: bool,
        fixed: impl FnOnce() -> D,
    ) -> D
    where
        D::Alg: crate::tuning::Named,
    {
        use crate::tuning::Named;
        let ranges = self.auto[collective.index()][usize::from(commutative)].get_or_init(|| {
            let oversubscribed = self.run().ranks.policy.oversubscribed;
            let key = (collective, self.size(), oversubscribed, commutative);
            let mut flattened = self.settings.flattened.lock();
            flattened
                .entry(key)
                .or_insert_with(|| {
                    self.settings
                        .tuning
                        .flatten(collective, self.size(), oversubscribed, commutative)
                        .into_iter()
                        .map(|(from, a)| (from, a.and_then(D::Alg::named).map(select::Choice::id)))
                        .collect()
                })
                .clone()
        });
        // The last range starting at or below `bytes` (the first starts at 0).
        let i = ranges.partition_point(|&(from, _)| from <= bytes);
        let chosen = ranges[i.saturating_sub(1)]
            .1
            .and_then(D::Alg::with_id)
            .and_then(D::of)
            .unwrap_or_else(fixed);
        self.chose(chosen.alg());
        chosen
    }

    /// Notes that `Auto` chose `alg` in this call (`Comm::auto_choice`).
    pub(crate) fn chose<A: select::Choice>(&self, alg: A) {
        self.auto_ran.set(Some((A::name_of, alg.id())));
    }

    /// What `unstable::auto_choice` reports, for a communicator of threads of one process.
    #[cfg(feature = "unstable")]
    pub(crate) fn auto_choice(&self) -> Option<&'static str> {
        self.auto_ran.get().and_then(|(name_of, id)| name_of(id))
    }

    /// This rank's hierarchy of the communicator (`Comm::hierarchy_plan` of `ordered`),
    /// built (collectively: every rank must call this at the same point of the same
    /// collective, after its call check) the first time.
    pub(crate) fn hierarchy(&self, ordered: bool) -> Result<&Hierarchy<Local>> {
        let which = usize::from(ordered && !self.hierarchy_plan(false).contiguous);
        if let Some(h) = self.hierarchy[which].get() {
            return Ok(h);
        }
        let plan = self.hierarchy_plan(which == 1).clone();
        let h = Box::new(Hierarchy::build(self, plan)?);
        Ok(self.hierarchy[which].get_or_init(|| h))
    }

    /// The transport of the collective context, for operation `op`.
    pub(crate) fn coll(&self, op: &'static str) -> ShmTransport<'_> {
        ShmTransport::coll(&self.member, op)
    }

    /// This rank's number in the communicator, `0..size()`.
    pub(crate) fn rank(&self) -> usize {
        self.member.rank()
    }

    /// Number of ranks in the communicator.
    pub(crate) fn size(&self) -> usize {
        self.member.size()
    }

    /// Team rank (rank in the world communicator of the run) of communicator rank `rank`.
    pub(crate) fn team_rank(&self, rank: usize) -> Option<usize> {
        self.member.team_rank(rank)
    }

    /// `Comm::location` for a communicator of threads of one process.
    pub(crate) fn location(&self, rank: usize) -> Option<Location> {
        self.member.location(rank)
    }

    /// The topology of the team this communicator's ranks belong to (the one its locations
    /// index into): the team builder's, or [`Topology::detect`]'s.
    pub(crate) fn topology(&self) -> &Topology {
        static NONE: std::sync::OnceLock<Topology> = std::sync::OnceLock::new();
        match &self.run().ranks.topology {
            Some(t) => t,
            None => NONE.get_or_init(Topology::detect),
        }
    }

    /// `Comm::barrier_with` among the threads of one process (`Comm` has checked the
    /// arguments).
    pub(crate) fn barrier_with(&self, algorithm: Barrier) -> Result<()> {
        self.enter_call("barrier")?;
        let levels = !self.hierarchy_plan(false).levels.is_empty();
        let hierarchy = match algorithm {
            // Across L3 groups or packages, with a core per rank, the barrier on shared flags
            // (docs/hierarchy.md, "When `Auto` goes hierarchical").
            Barrier::Auto if levels && !self.oversubscribed() => Some(Barrier::HierarchicalDirect),
            // (One group: `Auto`'s flat choice, decided from the plan, no messages and the
            // same on every rank, as the allreduce does.)
            Barrier::Hierarchical | Barrier::HierarchicalDirect if levels => Some(algorithm),
            _ => None,
        };
        if let Some(alg) = hierarchy {
            let tag = self.next_tag(Collective::Barrier);
            let call = Call::of::<u8, _>("barrier", alg, 0);
            let t = self.coll("barrier");
            if alg == Barrier::Hierarchical {
                // The call check's one hop on the whole communicator comes first: its messages
                // go r → r + 1 as dissemination's first round and the tree's first messages
                // do, under another tag variant, so a rank of another algorithm meets a
                // foreign tag at once (`hierarchy::barrier`). Only then the (cached) split.
                check::agree(&t, tag, &call, false)?;
                return self.hierarchy(false)?.barrier(self);
            }
            // The same one-hop check as `Hierarchical`'s, for the same reason, split in two
            // around the barrier's arrival: the descriptor goes out first, and is read and
            // compared before the barrier waits for anyone (`algorithms::flag_barrier`).
            check::agree_post(&t, tag, &call)?;
            let plan = self.hierarchy_plan(false);
            let check = || check::agree_take(&t, tag, &call);
            return algorithms::flag_barrier::barrier(self.member(), plan.covered(), tag, check);
        }
        let (alg, schedule) = match algorithm.schedule() {
            Some(schedule) => (algorithm, schedule),
            None => {
                let schedule = self.tuned(Collective::Barrier, 0, true, || {
                    select::choose_barrier(self.size(), self.oversubscribed())
                });
                (schedule.alg(), schedule)
            }
        };
        // No call check: the messages carry the algorithm in their tag, and the tree barrier
        // is laid out so that a mix of algorithms meets a foreign tag at once
        // (`algorithms::barrier`).
        let tag = self.next_tag(Collective::Barrier).with_variant(alg.id());
        let t = self.coll("barrier");
        algorithms::barrier::run(&t, schedule, tag)
    }
}

impl crate::hierarchy::Group for Local {
    fn rank(&self) -> usize {
        Local::rank(self)
    }

    fn size(&self) -> usize {
        Local::size(self)
    }

    fn split(&self, color: Option<usize>, key: usize) -> Result<Option<Self>> {
        Local::split(self, color, key)
    }

    fn stage_reduce<T: Elem, O: Op<T>>(&self, buf: &mut [T], op: &O, root: usize) -> Result<()> {
        Local::stage_reduce(self, buf, op, root)
    }

    fn stage_broadcast<T: Elem>(&self, buf: &mut [T], root: usize) -> Result<()> {
        Local::stage_broadcast(self, buf, root)
    }

    fn stage_allreduce<T: Elem, O: Op<T>>(&self, buf: &mut [T], op: &O) -> Result<()> {
        Local::stage_allreduce(self, buf, op)
    }

    fn barrier(&self) -> Result<()> {
        self.barrier_with(Barrier::Auto)
    }

    fn allgather<T: Elem>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.allgather_with(send, recv, crate::select::Allgather::Auto)
    }

    fn gatherv<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: usize,
    ) -> Result<()> {
        Local::gatherv(self, send, recv, counts, displs, root)
    }

    fn allgatherv<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        Local::allgatherv(self, send, recv, counts, displs)
    }
}
