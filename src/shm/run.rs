//! What lives as long as a team ([`Ranks`]: parkers, the waiting policy, the timeout, where
//! the ranks run) and as long as one run ([`RunState`]: its first failure and who has
//! returned).

use crate::error::Error;
use crate::sync::park::{Parker, WaitPolicy};
use crate::sync::{AtomicBool, CachePadded, Mutex, Ordering};
use crate::topology::{Location, Topology};
use std::sync::Arc;
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
        }
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
