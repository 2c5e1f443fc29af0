//! What the ranks of a communicator share for the calls that meet in shared memory without a
//! call check of messages: the slots of the blocking short allreduce folded on them
//! (`algorithms::allreduce::folded::blocking`), and per rank the tag of the last collective
//! call it entered that does not meet there.
//!
//! Why the second: a rank folding call n waits for every rank's contribution to it. A rank
//! whose call n is another collective (a barrier, or an allreduce that does not fold) never
//! contributes, and itself waits for the others' messages. So every collective call that
//! takes its tag from the mailboxes' numbering stores that tag here first (release), and a
//! folding rank that still misses rank q's contribution reads q's word (acquire) and then q's
//! slot: a word naming call n or later, with q's slot still short of this fold, is a mismatch
//! (q's call n is not this fold), which the folding rank reports by failing the run. Read in
//! that order the test cannot be fooled by a rank that folded call n and went on to a later
//! call: its release store of the later word comes after its contribution, so a reader that
//! sees the word sees the contribution too.
//!
//! The store costs a rank one write to a cache line of its own per call; the line is read by
//! others only while they wait for this rank in a fold.

use super::slots::Slots;
use crate::mailbox::Tag;
use crate::sync::{AtomicU64, CachePadded, Ordering};

/// Bytes of a contribution to a blocking fold: the call's number and descriptor (48 bytes),
/// then a vector of up to 1,032 bytes, so 1 KiB fits (the longest vector for which the
/// built-in decision tables choose `Linear`, with more ranks than cores); with its sequence
/// number a half is 17 cache lines.
pub(crate) const CALL_BYTES: usize = 1024 + 56;

/// What a communicator's ranks share for the calls folded on slots (module docs).
pub(crate) struct Calls {
    /// Per rank: `Tag::encode` of the last collective call it entered through the mailboxes'
    /// numbering (never 0: a collective's kind code is not), or 0 before its first.
    entered: Box<[CachePadded<AtomicU64>]>,
    /// The slots of the blocking short allreduces.
    pub slots: Slots<CALL_BYTES>,
}

impl std::fmt::Debug for Calls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Calls")
            .field("ranks", &self.entered.len())
            .finish_non_exhaustive()
    }
}

impl Calls {
    /// The state of `p` ranks, none of which has made a call.
    pub(crate) fn new(p: usize) -> Calls {
        Calls {
            entered: (0..p)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            slots: Slots::new(p),
        }
    }

    /// Rank `r` enters the collective call whose tag encodes to `word`, which does not fold.
    #[inline]
    pub(crate) fn enter(&self, r: usize, word: u64) {
        self.entered[r].store(word, Ordering::Release);
    }

    /// The tag word of the last call rank `q` entered that does not fold, if its call number
    /// is `seq` or later: read before `q`'s slot (module docs).
    #[inline]
    pub(crate) fn entered_since(&self, q: usize, seq: u64) -> Option<u64> {
        let word = self.entered[q].load(Ordering::Acquire);
        (word != 0 && Tag::seq_of(word) >= seq).then_some(word)
    }
}
