//! What the ranks of one communicator share: its members, its mailboxes (one per context and
//! directed pair of ranks), the meeting place of `split`, the board of the single-copy
//! collectives, the flags of the barrier on shared flags and the slots of the folded short
//! allreduce.

use super::board::Board;
use super::calls::Calls;
use super::flags::Flags;
use super::slots::Slots;
use crate::mailbox::{Mailbox, DEFAULT_SLOTS};
use crate::sync::Mutex;
#[cfg(feature = "mpi")]
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Which message stream of a communicator: user point-to-point and the crate's collectives
/// never see each other's messages (as MPI keeps them in separate contexts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    /// `send`, `recv`, `sendrecv`.
    P2p = 0,
    /// Collectives, barrier and split.
    Coll = 1,
}

/// One split call's meeting point: every rank's (color, key), and the communicators made.
#[derive(Debug, Default)]
pub(crate) struct SplitRound {
    /// Per parent rank: (color, key) once posted.
    pub votes: Vec<Option<(Option<usize>, usize)>>,
    /// The new communicator of each color, made by the first member to look.
    pub made: HashMap<usize, Arc<CommShared>>,
    /// Ranks that have not yet picked up their result.
    pub remaining: usize,
}

/// What the ranks of one communicator share.
#[derive(Debug)]
pub(crate) struct CommShared {
    /// Team rank of each communicator rank.
    pub members: Box<[usize]>,
    /// Mailbox of each (context, source, destination), made on first use so that a team of
    /// 64 ranks pays only for the edges its algorithms use.
    boxes: Box<[OnceLock<Box<Mailbox>>]>,
    /// Split rounds in progress, by the parent's collective call number.
    pub splits: Mutex<HashMap<u64, SplitRound>>,
    /// The slots of persistent short allreduces being set up, by the setup's number, with the
    /// ranks that have not picked them up yet.
    folded: Mutex<HashMap<u64, (Arc<Slots>, usize)>>,
    /// Where the shared-memory direct collectives publish their buffers and meet; each slot
    /// written by its rank only (see `board`).
    pub board: Board,
    /// The flags of the hierarchical direct barrier; each rank's written by that rank only
    /// (see `algorithms::flag_barrier`).
    pub barrier: Flags,
    /// The slots of the blocking short allreduce folded on them, and the tag of each rank's
    /// last call that does not fold (see `calls`).
    pub calls: Calls,
    /// What a layer above attaches to the communicator for all its ranks, set once by one of
    /// them (a hybrid team's duplicate: its links between processes, made by the leader).
    #[cfg(feature = "mpi")]
    pub attached: OnceLock<Arc<dyn Any + Send + Sync>>,
    /// The communicators on which the ranks run their non-blocking collectives (the k-th
    /// started runs on shadow k mod [`SHADOWS`]), each with the same members and mailboxes and
    /// a board of its own, made by the first rank that needs it.
    shadows: Box<[OnceLock<Arc<CommShared>>]>,
}

/// Shadow communicators per communicator: how many non-blocking collectives a rank can have
/// running at once on one communicator (more are started as earlier ones finish).
pub(crate) const SHADOWS: usize = 8;

impl CommShared {
    /// A communicator over the given team ranks (in communicator-rank order).
    pub(crate) fn new(members: Vec<usize>) -> Self {
        let p = members.len();
        CommShared {
            members: members.into_boxed_slice(),
            boxes: (0..2 * p * p).map(|_| OnceLock::new()).collect(),
            splits: Mutex::new(HashMap::new()),
            folded: Mutex::new(HashMap::new()),
            board: Board::new(p),
            barrier: Flags::new(p),
            calls: Calls::new(p),
            #[cfg(feature = "mpi")]
            attached: OnceLock::new(),
            shadows: (0..SHADOWS).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The slots of the persistent short allreduce whose setup is numbered `key` (the same on
    /// every rank): made by the first rank that asks, dropped from here once every rank has.
    pub(crate) fn folded(&self, key: u64) -> Arc<Slots> {
        let mut all = self.folded.lock();
        let p = self.size();
        let entry = all
            .entry(key)
            .or_insert_with(|| (Arc::new(Slots::new(p)), p));
        let slots = entry.0.clone();
        entry.1 -= 1;
        if entry.1 == 0 {
            all.remove(&key);
        }
        slots
    }

    /// Shadow `k` (below [`SHADOWS`]), made on first use.
    pub(crate) fn shadow(&self, k: usize) -> Arc<CommShared> {
        self.shadows[k]
            .get_or_init(|| Arc::new(CommShared::new(self.members.to_vec())))
            .clone()
    }

    /// Number of ranks.
    pub(crate) fn size(&self) -> usize {
        self.members.len()
    }

    /// The mailbox from `src` to `dst` in `ctx`, made on first use.
    #[inline]
    pub(crate) fn mailbox(&self, ctx: Context, src: usize, dst: usize) -> &Mailbox {
        let p = self.members.len();
        self.boxes[(ctx as usize * p + src) * p + dst]
            .get_or_init(|| Box::new(Mailbox::new(DEFAULT_SLOTS)))
    }

    /// The mailbox from `src` to `dst` in `ctx` if it has been made.
    #[inline]
    pub(crate) fn mailbox_if_made(&self, ctx: Context, src: usize, dst: usize) -> Option<&Mailbox> {
        let p = self.members.len();
        self.boxes[(ctx as usize * p + src) * p + dst]
            .get()
            .map(|b| &**b)
    }
}
