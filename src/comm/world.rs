//! State shared by the ranks: per team (parkers), per run (failure, who has returned) and per
//! communicator (members and mailboxes).

use super::board::Board;
use crate::error::Error;
use crate::hierarchy::direct::Flags;
use crate::mailbox::{Mailbox, DEFAULT_SLOTS};
use crate::profile::Profile;
use crate::sync::park::{Parker, WaitPolicy};
use crate::sync::{AtomicBool, CachePadded, Mutex, Ordering};
use crate::topology::{Location, Topology};
use crate::tuning::Tuning;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// What lives as long as a team: one parker per rank thread and how ranks wait.
#[derive(Debug)]
pub(crate) struct Ranks {
    /// Parker of each team rank; anyone may unpark, only that rank's thread(s) park on it.
    pub parkers: Box<[CachePadded<Parker>]>,
    /// Spin / yield budget before parking.
    pub policy: WaitPolicy,
    /// Longest a single wait may last before it fails with `Error::Timeout`.
    pub timeout: Option<Duration>,
    /// The team's topology, shared by every communicator of its runs; `None` outside a team
    /// (the loom models).
    pub topology: Option<Arc<Topology>>,
    /// Where each team rank runs, by team rank (`None`: not pinned).
    pub locations: Box<[Option<Location>]>,
    /// The team's cost constants, from which each communicator takes those of the level its
    /// ranks span (`Comm::costs`).
    pub profile: Arc<Profile>,
    /// How `Auto` picks algorithms on the team's communicators (`Comm::tuned`).
    pub tuning: Arc<Tuning>,
}

impl Ranks {
    /// Parkers for `n` ranks, with no topology and no locations (see [`Ranks::placed`]).
    pub(crate) fn new(n: usize, policy: WaitPolicy, timeout: Option<Duration>) -> Self {
        Ranks {
            parkers: (0..n).map(|_| CachePadded::new(Parker::new())).collect(),
            policy,
            timeout,
            topology: None,
            locations: vec![None; n].into_boxed_slice(),
            profile: Arc::new(Profile::default()),
            tuning: Arc::new(Tuning::default()),
        }
    }

    /// The same ranks with the cost constants of `profile`.
    pub(crate) fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = Arc::new(profile);
        self
    }

    /// The same ranks with the algorithm choices of `tuning`.
    pub(crate) fn with_tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Arc::new(tuning);
        self
    }

    /// The same ranks placed on `topology` at `locations` (one per rank).
    pub(crate) fn placed(mut self, topology: Topology, locations: Vec<Option<Location>>) -> Self {
        debug_assert_eq!(locations.len(), self.parkers.len());
        self.topology = Some(Arc::new(topology));
        self.locations = locations.into_boxed_slice();
        self
    }
}

/// What lives as long as one run: the first failure and who has returned.
#[derive(Debug)]
pub(crate) struct RunState {
    /// The team's parkers and waiting policy.
    pub ranks: Arc<Ranks>,
    /// Set (once, release) by the first failure of the run; read (acquire) by every wait.
    aborted: AtomicBool,
    /// The first failure; written under the lock before `aborted` is set.
    cause: Mutex<Option<Error>>,
    /// The first panic, which `Team::run` reports.
    panic: Mutex<Option<Error>>,
    /// Per team rank: set by that rank when its closure has returned.
    done: Box<[CachePadded<AtomicBool>]>,
}

impl RunState {
    /// A fresh run over the team's ranks.
    pub(crate) fn new(ranks: Arc<Ranks>) -> Self {
        let n = ranks.parkers.len();
        RunState {
            ranks,
            aborted: AtomicBool::new(false),
            cause: Mutex::new(None),
            panic: Mutex::new(None),
            done: (0..n)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
        }
    }

    /// Whether the run has failed.
    #[inline]
    pub(crate) fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Acquire)
    }

    /// The run's first failure (only meaningful once `is_aborted`).
    pub(crate) fn cause(&self) -> Error {
        self.cause
            .lock()
            .clone()
            .unwrap_or(Error::Pinning("run aborted without a cause".into()))
    }

    /// Records `e` as the run's failure if it is the first, and wakes every rank so that all
    /// pending waits see it.
    pub(crate) fn abort(&self, e: Error) {
        {
            let mut c = self.cause.lock();
            if c.is_none() {
                *c = Some(e);
            }
        }
        self.aborted.store(true, Ordering::Release);
        self.wake_all();
    }

    /// Records a rank's panic and fails the run.
    pub(crate) fn panicked(&self, e: Error) {
        {
            let mut p = self.panic.lock();
            if p.is_none() {
                *p = Some(e.clone());
            }
        }
        self.abort(e);
    }

    /// The first panic of the run, if any.
    pub(crate) fn first_panic(&self) -> Option<Error> {
        self.panic.lock().clone()
    }

    /// Team rank `rank` has returned from its closure: wake whoever waits for it.
    pub(crate) fn mark_done(&self, rank: usize) {
        self.done[rank].store(true, Ordering::Release);
        self.wake_all();
    }

    /// Whether team rank `rank` has returned from its closure.
    #[inline]
    pub(crate) fn is_done(&self, rank: usize) -> bool {
        self.done[rank].load(Ordering::Acquire)
    }

    fn wake_all(&self) {
        for p in self.ranks.parkers.iter() {
            p.unpark();
        }
    }
}

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
    /// Where the shared-memory direct collectives publish their buffers and meet; each slot
    /// written by its rank only (see `board`).
    pub board: Board,
    /// The flags of the hierarchical direct barrier; each rank's written by that rank only
    /// (see `hierarchy::direct::barrier`).
    pub barrier: Flags,
}

impl CommShared {
    /// A communicator over the given team ranks (in communicator-rank order).
    pub(crate) fn new(members: Vec<usize>) -> Self {
        let p = members.len();
        CommShared {
            members: members.into_boxed_slice(),
            boxes: (0..2 * p * p).map(|_| OnceLock::new()).collect(),
            splits: Mutex::new(HashMap::new()),
            board: Board::new(p),
            barrier: Flags::new(p),
        }
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
}
