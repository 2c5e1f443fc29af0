//! [`Session`]: one rank's passage through a call of the board after it arrived: the stages it
//! marks and waits for, what the ranks published, the check that they made the same call, and
//! phase 2 or the withdrawal that ends the call ([module docs](super)).

use super::{reached, Board, Call};
use crate::error::{Error, Result};
use crate::shm::Member;
use crate::sync::park::wait_until;
use crate::sync::Ordering;

/// One rank's passage through a call after it arrived: dropping it without
/// [`Session::finish`] (when unwinding) fails the call for everyone and still waits until no
/// peer touches this rank's buffers.
pub(crate) struct Session<'a> {
    pub(super) board: &'a Board,
    pub(super) comm: &'a Member,
    /// `2e` for call `e`.
    pub(super) target: u64,
    /// Not yet finished or withdrawn.
    pub(super) open: bool,
    /// The collective, for error messages.
    pub(super) op: &'static str,
}

impl Session<'_> {
    /// Announces that this rank has reached stage `stage` (1 ≤ stage ≤ 3) of this call: its
    /// writes before the mark are visible to every peer that [`waits`](Session::wait_stage)
    /// for it. The stages of one call are marked in increasing order.
    pub(crate) fn mark(&self, stage: u64) {
        debug_assert!((1..=3).contains(&stage));
        let me = self.comm.rank();
        self.board.slots[me]
            .stage
            .store(self.stage_word(stage), Ordering::Release);
        self.board.wake_peers(self.comm);
    }

    /// Waits until rank `peer` has marked stage `stage` of this call (true), or has finished
    /// the call failing or withdrawn from it without getting there (false: it unwound from a
    /// panicking op, or gave up in phase 1; this rank's result will be incomplete). No deadline: a peer that passed phase 1 either
    /// computes towards the mark or fails, as in phase 2. After `true`, the peer's writes
    /// before its mark are visible to this rank.
    pub(crate) fn wait_stage(&self, peer: usize, stage: u64) -> bool {
        let me = self.comm.rank();
        if peer == me {
            return true;
        }
        let want = self.stage_word(stage);
        let slot = &self.board.slots[peer];
        let there = || reached(slot.stage.load(Ordering::Acquire), want);
        if there() {
            return true;
        }
        // Finished failing, or withdrew: a peer still in phase 1 when this rank passed may
        // give up there (its timeout) and will never get to the stage.
        let failed = || {
            slot.done.load(Ordering::Acquire) == self.target + 1
                || slot.arrived.load(Ordering::Acquire) == self.target + 1
        };
        let run = self.comm.run();
        let parker = &run.ranks.parkers[self.comm.shared().members[me]];
        wait_until(parker, &run.ranks.policy, None, || there() || failed());
        there()
    }

    /// Whether rank `peer` has marked stage `stage` of this call, without waiting: for a rank
    /// that has other work to do meanwhile. After `true`, as after [`Session::wait_stage`],
    /// the peer's writes before its mark are visible to this rank.
    pub(crate) fn has_reached(&self, peer: usize, stage: u64) -> bool {
        let word = self.board.slots[peer].stage.load(Ordering::Acquire);
        peer == self.comm.rank() || reached(word, self.stage_word(stage))
    }

    /// The stage word of stage `stage` of this call: `4·2e + stage`.
    fn stage_word(&self, stage: u64) -> u64 {
        (self.target << 2) | stage
    }

    /// What rank `rank` published for this call.
    #[inline]
    pub(crate) fn call(&self, rank: usize) -> Call {
        // SAFETY: this rank passed phase 1 (a session is returned only then): it acquired
        // `arrived = 2e` from `rank`, which was stored after the `Call` write, and `rank` does
        // not rewrite it before acquiring this rank's `done` for this call.
        self.board.slots[rank].call.with(|c| unsafe { *c })
    }

    /// Under loom: records that this rank reads and writes its part of `owner`'s buffers now.
    #[cfg(loom)]
    pub(crate) fn touch(&self, owner: usize) {
        self.touch_part(owner, self.comm.rank());
    }

    /// Under loom: records that this rank reads and writes part `part` (slice `part` of the
    /// vector) of `owner`'s buffers now.
    #[cfg(loom)]
    pub(crate) fn touch_part(&self, owner: usize, part: usize) {
        self.board.slots[owner].parts[part].with_mut(|_| ());
    }

    /// Under loom: records that this rank only reads part `part` of `owner`'s buffers now:
    /// concurrent reads of a part do not race, a concurrent [`touch_part`](Self::touch_part)
    /// (or the owner's taking its buffers back) does.
    #[cfg(loom)]
    pub(crate) fn read_part(&self, owner: usize, part: usize) {
        self.board.slots[owner].parts[part].with(|_| ());
    }

    /// The first rank whose published call `differs` from this rank's view of the call, if
    /// any. Every rank sees the same calls, so every rank finds the same answer.
    pub(crate) fn first_differing(&self, differs: impl Fn(usize, Call) -> bool) -> Option<usize> {
        (0..self.comm.size()).find(|&i| differs(i, self.call(i)))
    }

    /// Checks that every rank published `len` elements (or blocks of `len`, as the collective
    /// counts them) of the element type `typ`, as this rank did; if not, ends the call as
    /// [`Session::reject`] does, with messages in which `describe(len, same_type)` names a
    /// call: "direct allgather of blocks of 7 elements", say.
    pub(crate) fn expect_same(
        self,
        len: usize,
        typ: u64,
        describe: impl Fn(usize, bool) -> String,
    ) -> std::result::Result<Self, Error> {
        match self.first_differing(|_, c| c.len != len || c.typ != typ) {
            None => Ok(self),
            Some(peer) => {
                let theirs = self.call(peer);
                let (expected, found) =
                    (describe(len, true), describe(theirs.len, theirs.typ == typ));
                Err(self.reject(peer, expected, found))
            }
        }
    }

    /// Ends a call whose ranks did not publish the same call (rank `peer`'s, described by
    /// `found`, against this rank's, `expected`): fails the run and finishes the session as
    /// failed, so no buffer is touched, and returns the mismatch error. Every rank sees the
    /// same calls, so every rank ends this way.
    pub(crate) fn reject(self, peer: usize, expected: String, found: String) -> Error {
        let e = self.comm.fail(Error::Mismatch {
            rank: self.comm.rank(),
            peer,
            op: self.op,
            expected,
            found,
        });
        // Failing first makes every peer's phase 2 fail, even one that saw nothing wrong.
        let _ = self.finish(false);
        e
    }

    /// Phase 2: announces that this rank has finished its part (`ok`: successfully), waits
    /// until every peer has, and says whether the whole call succeeded. Afterwards no peer
    /// touches this rank's buffers or reads its slot.
    pub(crate) fn finish(mut self, ok: bool) -> Result<()> {
        self.open = false;
        if self.close(ok) {
            Ok(())
        } else {
            Err(self.aborted())
        }
    }

    /// Stores `done` and waits until every peer is done or withdrawn; true if all succeeded.
    fn close(&self, ok: bool) -> bool {
        let me = self.comm.rank();
        let target = self.target;
        let slots = &self.board.slots;
        slots[me]
            .done
            .store(target + u64::from(!ok), Ordering::Release);
        self.board.wake_peers(self.comm);
        let resolved = |i: usize| {
            reached(slots[i].done.load(Ordering::Acquire), target)
                || slots[i].arrived.load(Ordering::Acquire) == target + 1
        };
        self.wait_resolved(resolved);
        ok && (0..slots.len()).all(|i| i == me || slots[i].done.load(Ordering::Acquire) == target)
    }

    /// Withdraws from a call this rank has not passed, and waits until no peer can touch its
    /// buffers ([module docs](super), "Giving up").
    pub(super) fn withdraw(mut self) {
        self.open = false;
        let me = self.comm.rank();
        let target = self.target;
        let slots = &self.board.slots;
        slots[me].arrived.store(target + 1, Ordering::Release);
        self.board.wake_peers(self.comm);
        let resolved = |i: usize| {
            slots[i].arrived.load(Ordering::Acquire) != target
                || reached(slots[i].done.load(Ordering::Acquire), target)
        };
        self.wait_resolved(resolved);
    }

    /// Waits, without deadline and whatever the run's state, until `resolved(i)` for every
    /// peer `i`; then (under loom) takes this rank's buffers back.
    fn wait_resolved(&self, resolved: impl Fn(usize) -> bool) {
        let me = self.comm.rank();
        let p = self.board.slots.len();
        let run = self.comm.run();
        let parker = &run.ranks.parkers[self.comm.shared().members[me]];
        let mut next = 0;
        wait_until(parker, &run.ranks.policy, None, || {
            while next < p && (next == me || resolved(next)) {
                next += 1;
            }
            next == p
        });
        #[cfg(loom)]
        for part in self.board.slots[me].parts.iter() {
            part.with_mut(|_| ());
        }
    }

    /// The error of a call abandoned because the run failed.
    pub(super) fn aborted(&self) -> Error {
        Error::Aborted {
            rank: self.comm.rank(),
            op: self.op,
            cause: Box::new(self.comm.run().cause()),
        }
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if self.open {
            // Unwinding between passing and finishing: this rank's part is incomplete.
            let team_rank = self.comm.shared().members[self.comm.rank()];
            self.comm.run().abort(Error::Panicked {
                rank: team_rank,
                message: format!("panicked inside a direct {}", self.op),
            });
            self.open = false;
            self.close(false);
        }
    }
}
