//! One region of the slots of persistent short allreduces across a node's processes (`folds`):
//! its ranks' slots (`shm::Slots`) and one line per rank saying which generation of the region
//! the rank took last and whether it is done with it (one writer per line: the rank).
//!
//! - A rank **takes** generation g once no rank uses another generation ([`Region::busy`]):
//!   it sets its own sequence numbers back to 0, then stores g in its line (release).
//! - It publishes its starts 1, 2, … in its slots as `Slots` says, and reads rank i's slots of
//!   start k only once it sees i's line name g (acquire) and i's sequence number reach k
//!   ([`Region::pending`]) — an earlier generation's numbers, which a reader might otherwise
//!   take for this one's, were set back before the take it saw.
//! - It is **done** with g after its last read of the others' slots: g with the done bit
//!   (release). Its own slots stay as they are until no rank uses g any more, since no rank
//!   takes another generation before that. A generation of a run that has ended is used by
//!   no one, done or not (a take never marked done was forgotten with `mem::forget`).
//!
//! The loom model beside it (`loom::a_region_taken_again_never_shows_the_last_generation`)
//! takes one region twice on two ranks; without the look at the line in `pending`, it reports
//! the first generation's vector read as the second's.

use crate::shm::Slots;
use crate::sync::{AtomicU64, CachePadded, Ordering};

/// The bit of a rank's line that says it is done with the generation the line names.
const DONE: u64 = 1 << 63;

/// A region of a node's slots, as one rank sees it: every rank's line and slots.
pub(crate) struct Region<'a> {
    lines: &'a [CachePadded<AtomicU64>],
    slots: &'a Slots,
    /// Generations below this one are no longer used, whatever their lines say (their
    /// ranks' runs have ended: a take not marked done there was forgotten).
    since: u64,
}

impl<'a> Region<'a> {
    /// The region of `slots` (of `lines.len()` ranks) with the ranks' `lines`, where no
    /// generation below `since` is used any more.
    pub(crate) fn new(lines: &'a [CachePadded<AtomicU64>], slots: &'a Slots, since: u64) -> Self {
        Region {
            lines,
            slots,
            since,
        }
    }

    /// The generation rank `i` took last (0: none yet), and whether it is done with it.
    fn taken(&self, i: usize) -> (u64, bool) {
        let word = self.lines[i].load(Ordering::Acquire);
        (word & !DONE, word & DONE != 0)
    }

    /// Whether rank `i` uses a generation other than `generation`.
    pub(crate) fn held_apart(&self, i: usize, generation: u64) -> bool {
        let (g, done) = self.taken(i);
        g >= self.since && !done && g != generation
    }

    /// The first rank that uses a generation other than `generation`, if one does: the region
    /// cannot be taken as `generation` before it is done.
    pub(crate) fn busy(&self, generation: u64) -> Option<usize> {
        (0..self.lines.len()).find(|&i| self.held_apart(i, generation))
    }

    /// Rank `me` takes `generation` (nonzero, without the done bit), once [`Region::busy`] has
    /// said none for it: its sequence numbers back to 0, then its line.
    pub(crate) fn take(&self, me: usize, generation: u64) {
        debug_assert!(generation != 0 && generation & DONE == 0);
        self.slots.reset(me);
        self.lines[me].store(generation, Ordering::Release);
    }

    /// The first rank whose start `k` of `generation` is not in its slots yet, if one's is not.
    pub(crate) fn pending(&self, generation: u64, k: u64) -> Option<usize> {
        (0..self.lines.len()).find(|&i| self.taken(i).0 != generation || !self.slots.reached(i, k))
    }

    /// Rank `me` is done with `generation`: it reads none of the others' slots any more.
    pub(crate) fn done(&self, me: usize, generation: u64) {
        self.lines[me].store(generation | DONE, Ordering::Release);
    }
}
