//! [`Member`]: one rank's handle on a communicator's shared state — who it is, what it shares
//! with the other ranks, the number of its next collective call, and how it waits for them.

use super::scratch::{Pool, Scratch};
use super::{CommShared, RunState};
use crate::error::{Error, Result};
use crate::mailbox::{Kind, Tag};
use crate::sync::park::{wait_until_watched, Started, Watch};
use crate::sync::{fence, Ordering};
use crate::topology::Location;
use std::cell::Cell;
use std::sync::Arc;

/// One rank of one communicator, as the layers below the API see it: its rank, the
/// communicator's shared state, the run's state, its collective call count and its scratch
/// buffers. Used by one thread at a time (it is `Send`, not `Sync`).
pub(crate) struct Member {
    /// This rank's number in the communicator.
    rank: usize,
    /// What the communicator's ranks share.
    shared: Arc<CommShared>,
    /// The run this communicator belongs to.
    run: Arc<RunState>,
    /// Number of collective calls made on this communicator by this rank: the sequence number
    /// in the tags of the next one.
    coll_seq: Cell<u64>,
    /// Number of those calls that were short allreduces folded on the communicator's slots
    /// ([`Member::next_fold`]).
    folds: Cell<u64>,
    /// This rank's scratch buffers, reused by the collectives from call to call.
    scratch: Pool,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("rank", &self.rank)
            .field("size", &self.size())
            .finish_non_exhaustive()
    }
}

/// A rank's wait as the run's deadlock detection sees it ([`Member::watch`]).
pub(crate) struct Watcher<'a> {
    run: &'a RunState,
    /// This rank's team rank.
    me: usize,
    op: &'static str,
    /// The team rank waited for.
    pub(crate) peer: Cell<usize>,
}

impl Watch for Watcher<'_> {
    fn parking(&self) {
        self.run.note_wait(self.me, self.op, self.peer.get());
    }

    fn stuck(&self) {
        // Whom it waits for may have changed since `parking` (a send and a receive).
        self.run.note_wait(self.me, self.op, self.peer.get());
        self.run.detect(Some(self.me));
    }
}

impl Member {
    /// Rank `rank` of the communicator whose shared state is `shared`, in run `run`.
    pub(crate) fn new(rank: usize, shared: Arc<CommShared>, run: Arc<RunState>) -> Self {
        Member {
            rank,
            shared,
            run,
            coll_seq: Cell::new(0),
            folds: Cell::new(0),
            scratch: Pool::new(),
        }
    }

    /// This rank's number in the communicator.
    #[inline]
    pub(crate) fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks of the communicator.
    #[inline]
    pub(crate) fn size(&self) -> usize {
        self.shared.size()
    }

    /// What the communicator's ranks share.
    #[inline]
    pub(crate) fn shared(&self) -> &CommShared {
        &self.shared
    }

    /// The run's state.
    #[inline]
    pub(crate) fn run(&self) -> &RunState {
        &self.run
    }

    /// What the communicator's ranks share, to make a member of one of its shadows.
    pub(crate) fn shared_arc(&self) -> &Arc<CommShared> {
        &self.shared
    }

    /// The run's state, to hand to a new communicator of the same run (`split`).
    pub(crate) fn run_arc(&self) -> &Arc<RunState> {
        &self.run
    }

    /// Team rank (rank in the run's world) of communicator rank `rank`.
    pub(crate) fn team_rank(&self, rank: usize) -> Option<usize> {
        self.shared.members.get(rank).copied()
    }

    /// Where communicator rank `rank` runs (`None` for a rank out of range or not pinned).
    /// In a run whose ranks join it, waits for `rank` to have joined; if the wait fails (the
    /// run failed, or `rank` did not join within the team's timeout, which fails the run),
    /// `None`, and every later wait of the run fails.
    pub(crate) fn location(&self, rank: usize) -> Option<Location> {
        let team_rank = self.team_rank(rank)?;
        if !self.run.seated(team_rank) {
            let started = self.wait_start();
            let pending = || (!self.run.seated(team_rank)).then_some(rank);
            self.wait_for("join", &started, pending).ok()?;
        }
        self.run.location(team_rank)
    }

    /// Wakes communicator rank `peer` if it is parked.
    #[inline]
    pub(crate) fn unpark(&self, peer: usize) {
        self.run.ranks.parkers[self.shared.members[peer]].unpark();
    }

    /// Wakes every other rank of the communicator that is parked or about to park: one
    /// `SeqCst` fence for them all, then each one's parker as [`Member::unpark_sleeping`]
    /// (`unpark` for each would fence once per peer).
    #[inline]
    pub(crate) fn unpark_others(&self) {
        fence(Ordering::SeqCst);
        for q in (0..self.size()).filter(|&q| q != self.rank) {
            self.unpark_sleeping(q);
        }
    }

    /// Wakes communicator rank `peer` if it is seen parked, without `unpark`'s fence: a writer
    /// that calls this must `unpark` the peer later as well, so that no wake-up is lost
    /// (`Parker::unpark_seen`).
    #[inline]
    pub(crate) fn unpark_sleeping(&self, peer: usize) {
        self.run.ranks.parkers[self.shared.members[peer]].unpark_seen();
    }

    /// The tag of this rank's next collective call of kind `kind`, which the ranks folding a
    /// short allreduce on slots are told of (`shm::calls`).
    pub(crate) fn next_tag(&self, kind: impl Into<Kind>) -> Tag {
        let tag = self.take_tag(kind.into());
        self.shared.calls.enter(self.rank, tag.encode());
        tag
    }

    /// The tag of this rank's next collective call, a short allreduce folded on the
    /// communicator's slots, and the number of that fold (1, 2, …: its start on the slots).
    pub(crate) fn next_fold(&self, kind: impl Into<Kind>) -> (Tag, u64) {
        let k = self.folds.get() + 1;
        self.folds.set(k);
        (self.take_tag(kind.into()), k)
    }

    /// The tag of this rank's next collective call, counted.
    fn take_tag(&self, kind: Kind) -> Tag {
        let seq = self.coll_seq.get();
        self.coll_seq.set(seq.wrapping_add(1));
        Tag {
            kind,
            variant: 0,
            seq,
            op: 0,
        }
    }

    /// Fails if the run has already failed: every collective starts with this, so that even a
    /// collective that sends nothing (on one rank) reports an earlier failure.
    #[inline]
    pub(crate) fn enter(&self, op: &'static str) -> Result<()> {
        if self.run.is_aborted() {
            return Err(self.aborted(op));
        }
        Ok(())
    }

    /// The error of operation `op` abandoned because the run failed.
    pub(crate) fn aborted(&self, op: &'static str) -> Error {
        Error::Aborted {
            rank: self.rank,
            op,
            cause: Box::new(self.run.cause()),
        }
    }

    /// Fails the run with `e` (if it is the first failure), so that no other rank waits for
    /// this one, and returns it.
    pub(crate) fn fail(&self, e: Error) -> Error {
        self.run.abort(e.clone());
        e
    }

    /// When a wait of this rank's that begins now gives up: the team's timeout, counted from
    /// the first moment the wait needs the clock ([`Started`]).
    pub(crate) fn wait_start(&self) -> Started {
        Started::new(self.run.ranks.timeout)
    }

    /// Waits (spin, yield, then park on this rank's parker) until `pending()` names no peer
    /// left to wait for; gives up when the run fails, the peer `pending()` names has returned
    /// from the run, or the team's timeout (counted from `started`, [`Member::wait_start`])
    /// passes, with [`Member::stalled`]'s error. `pending` must only read what the peers
    /// publish, and every store it waits for must be followed by an unpark of this rank (the
    /// parking protocol, `sync::park`). The waiting loop of the transport, the board and the
    /// flag barrier.
    #[inline]
    pub(crate) fn wait_for(
        &self,
        op: &'static str,
        started: &Started,
        mut pending: impl FnMut() -> Option<usize>,
    ) -> Result<()> {
        // Often there is no one left to wait for: then there is no wait to set up.
        if pending().is_none() {
            return Ok(());
        }
        self.wait_for_someone(op, started, pending)
    }

    /// [`Member::wait_for`] once `pending()` has named someone.
    fn wait_for_someone(
        &self,
        op: &'static str,
        started: &Started,
        mut pending: impl FnMut() -> Option<usize>,
    ) -> Result<()> {
        let run = &self.run;
        let members = &self.shared.members;
        let watch = self.watch(op);
        loop {
            // Whether `pending()` named no one (rather than the wait giving up).
            let mut met = false;
            let ended = wait_until_watched(
                &run.ranks.parkers[members[self.rank]],
                &run.ranks.policy,
                || started.deadline(),
                || match pending() {
                    None => {
                        met = true;
                        true
                    }
                    Some(q) => {
                        watch.peer.set(members[q]);
                        run.is_aborted() || run.is_done(members[q])
                    }
                },
                // Unwatched where the team does not look for deadlocks: no marks to keep.
                run.ranks.detect_deadlocks.then_some(&watch as &dyn Watch),
            );
            if met {
                return Ok(());
            }
            let Some(peer) = pending() else {
                return Ok(());
            };
            // Given up on `peer` only if the timeout passed, the run failed or `peer` itself
            // returned: the peer that ended the wait may not be the one `pending()` names now
            // (a receive from any rank names one that may still send, which may return just
            // before it is asked whether it has; then another may still send).
            if !ended || run.is_aborted() || run.is_done(members[peer]) {
                return Err(self.stalled(op, peer, started));
            }
        }
    }

    /// What a wait of this rank's in `op` tells the run when it parks (deadlock detection):
    /// set its `peer` (a team rank) to whom it waits for before it may park.
    pub(crate) fn watch(&self, op: &'static str) -> Watcher<'_> {
        Watcher {
            run: &self.run,
            me: self.shared.members[self.rank],
            op,
            peer: Cell::new(self.shared.members[self.rank]),
        }
    }

    /// Whether rank `peer` has returned from the run (what it did before is seen too).
    pub(crate) fn returned(&self, peer: usize) -> bool {
        self.run.is_done(self.shared.members[peer])
    }

    /// The error of a wait for `peer` (begun at `started`) that ended without what it waited
    /// for: the run's failure if the run failed; else `peer` returned from the run
    /// ([`Error::PeerExited`]) or the timeout passed ([`Error::Timeout`]), both of which fail
    /// the run so that no other rank waits for this one.
    pub(crate) fn stalled(&self, op: &'static str, peer: usize, started: &Started) -> Error {
        let rank = self.rank;
        if let Some(waits) = self.run.deadlock() {
            Error::Deadlock { rank, op, waits }
        } else if self.run.is_aborted() {
            self.aborted(op)
        } else if self.run.is_done(self.shared.members[peer]) {
            self.fail(Error::PeerExited { rank, peer, op })
        } else {
            self.fail(Error::Timeout {
                rank,
                peer,
                op,
                waited: started.elapsed(),
            })
        }
    }

    /// A scratch buffer of `len` possibly uninitialised `T`s from this rank's pool
    /// (`shm::scratch`), reused from earlier calls when one is big enough.
    ///
    /// Panics if `len` elements of `T` overflow `usize` bytes (as `Vec::with_capacity`).
    pub(crate) fn scratch<T>(&self, len: usize) -> Scratch<'_, T> {
        Scratch::take(&self.scratch, len)
    }
}
