//! What lives as long as a team ([`Ranks`]: parkers, the waiting policy, the timeout, where
//! the ranks run) and as long as one run ([`RunState`]: its first failure and who has
//! returned).

use crate::error::Error;
use crate::sync::park::{blocked_state, Parker, WaitPolicy, CONFIRMED};
use crate::sync::{fence, AtomicBool, AtomicU64, CachePadded, Mutex, Ordering};
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
    /// Whether runs look for deadlocks among their ranks ([`RunState::detect`]): not on a
    /// team whose ranks span processes, where a rank may wait for another process.
    pub detect_deadlocks: bool,
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
            // The loom models that check the detection turn it on (`shm::loom_world`); the
            // others keep their state space.
            detect_deadlocks: !cfg!(loom),
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
    /// The number of the run, from 1: a run renewed for the next ([`RunState::renew`]) has the
    /// next. The marks below hold the number of the run they were made in, so that renewing
    /// a run writes this alone, not every rank's line. A std atomic under loom too: no model
    /// renews a run, so there it is a constant, and reading it adds nothing to explore.
    number: std::sync::atomic::AtomicU64,
    /// Per team rank: the run's number, written by that rank when its closure has returned.
    done: Box<[CachePadded<AtomicU64>]>,
    /// Ranks that have begun and finished returning ([`RunState::mark_done`]): a rank between
    /// the two may still wake others, so deadlock detection waits until they are equal. On a
    /// line of their own: `aborted`, read by every wait, does not move with them.
    exits: CachePadded<[AtomicU64; 2]>,
    /// Per team rank: what it waits in and for whom (a team rank), written by that rank when
    /// it is about to park in a watched wait ([`RunState::note_wait`]).
    waits: Box<[Mutex<(&'static str, usize)>]>,
    /// A run whose ranks join it ([`RunState::joining`]): per team rank, where it runs, set
    /// when it joins. `None` where every rank is there from the start, at the team's
    /// locations.
    seats: Option<Box<[CachePadded<Seat>]>>,
}

/// Where a rank that joins a run runs ([`RunState::seat`]).
#[derive(Debug, Default)]
struct Seat {
    /// The run's number, written (release) once `place` is.
    taken: AtomicU64,
    place: Mutex<Option<Location>>,
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
            number: std::sync::atomic::AtomicU64::new(1),
            done: (0..n)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            exits: CachePadded::new([AtomicU64::new(0), AtomicU64::new(0)]),
            waits: (0..n).map(|r| Mutex::new(("", r))).collect(),
            seats: None,
        }
    }

    /// A fresh run whose ranks join it one by one, each telling where it runs
    /// ([`RunState::seat`]): the ranks of an external team (`Team::join`).
    pub(crate) fn joining(ranks: Arc<Ranks>) -> Self {
        let n = ranks.parkers.len();
        RunState {
            seats: Some((0..n).map(|_| CachePadded::new(Seat::default())).collect()),
            ..RunState::new(ranks)
        }
    }

    /// Makes a run that ended cleanly — no failure, every rank returned, and nothing else
    /// refers to it but the communicators kept for the next run — fresh again for the next run
    /// of the same ranks (`Team::join`'s reuse of a clean run): no rank has joined or returned.
    /// (The ranks' waits need no clearing: a rank's is read only while it is marked blocked,
    /// and it writes it before it marks.)
    pub(crate) fn renew(&self) {
        debug_assert!(!self.is_aborted() && self.first_panic().is_none());
        for e in self.exits.iter() {
            e.store(0, Ordering::SeqCst);
        }
        self.number.fetch_add(1, Ordering::SeqCst);
    }

    /// The run's number (see `number`).
    #[inline]
    fn number(&self) -> u64 {
        self.number.load(Ordering::Acquire)
    }

    /// Team rank `rank` has joined the run, at `place`: wakes whoever waits for it
    /// ([`RunState::location`]).
    pub(crate) fn seat(&self, rank: usize, place: Option<Location>) {
        if let Some(seat) = self.seats.as_ref().map(|s| &s[rank]) {
            *seat.place.lock() = place;
            seat.taken.store(self.number(), Ordering::Release);
            self.wake_all();
        }
    }

    /// Whether team rank `rank` is in the run (always, unless its ranks join it and this one
    /// has not yet).
    #[inline]
    pub(crate) fn seated(&self, rank: usize) -> bool {
        match &self.seats {
            None => true,
            Some(seats) => seats[rank].taken.load(Ordering::Acquire) == self.number(),
        }
    }

    /// Where team rank `rank` runs (`None`: not pinned), once it is [seated](Self::seated).
    pub(crate) fn location(&self, rank: usize) -> Option<Location> {
        match &self.seats {
            None => self.ranks.locations.get(rank).copied().flatten(),
            Some(seats) => *seats.get(rank)?.place.lock(),
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

    /// Fails the run as rank `rank`'s panic with `payload` (caught by whoever runs the rank:
    /// a team, a joined thread's seat, the low layers' test world) fails it.
    pub(crate) fn rank_panicked(&self, rank: usize, payload: &(dyn std::any::Any + Send)) {
        self.panicked(Error::Panicked {
            rank,
            message: crate::error::panic_message(payload),
        });
    }

    /// The first panic of the run, if any.
    pub(crate) fn first_panic(&self) -> Option<Error> {
        self.panic.lock().clone()
    }

    /// Team rank `rank` has returned from its closure: wake whoever waits for it. Returns how
    /// many ranks have returned, this one included.
    pub(crate) fn mark_done(&self, rank: usize) -> usize {
        self.exits[0].fetch_add(1, Ordering::SeqCst);
        self.done[rank].store(self.number(), Ordering::SeqCst);
        self.wake_all();
        let returned = self.exits[1].fetch_add(1, Ordering::SeqCst) as usize + 1;
        // The ranks it woke may have looked for a deadlock before this return was complete;
        // if they are all blocked again, nobody else would look (and with every rank returned,
        // none is).
        if returned < self.done.len() {
            self.detect(None);
        }
        returned
    }

    /// How many ranks have returned ([`RunState::mark_done`]).
    pub(crate) fn returned(&self) -> usize {
        self.exits[1].load(Ordering::SeqCst) as usize
    }

    /// Whether team rank `rank` has returned from its closure.
    #[inline]
    pub(crate) fn is_done(&self, rank: usize) -> bool {
        self.done[rank].load(Ordering::Acquire) == self.number()
    }

    /// Team rank `rank` is about to park in `op`, waiting for team rank `peer`: what a
    /// deadlock's error says of it.
    pub(crate) fn note_wait(&self, rank: usize, op: &'static str, peer: usize) {
        *self.waits[rank].lock() = (op, peer);
    }

    /// The deadlock check, made by team rank `me` when it is about to sleep in a watched wait
    /// (`sync::park`), and by a rank that has just returned (`None`): if every rank that has not returned is marked blocked at one instant —
    /// two readings of every rank's blocked word and done flag agree, and the words only grow —
    /// then no rank can wake another, and the run fails with [`Error::Deadlock`]. Returns
    /// whether it did.
    ///
    /// Each mark was set before its rank's last look at its condition and is cleared by any
    /// wake-up, so a marked rank has nothing to act on until another rank acts; when all are
    /// marked at once, none will. (This is Chandy, Misra and Haas's "all processes of a set
    /// blocked on each other" condition, read here from shared memory in one consistent
    /// snapshot by the double collect.)
    pub(crate) fn detect(&self, me: Option<usize>) -> bool {
        if !self.ranks.detect_deadlocks || self.is_aborted() {
            return false;
        }
        // Orders this rank's own confirmed mark before its reads of the others' (the
        // store-buffering pattern again: of two ranks confirming at once, at least one sees
        // the other's mark; a fence is the form of `SeqCst` that loom models).
        fence(Ordering::SeqCst);
        // Every live rank confirmed blocked, and no rank in the middle of returning.
        let read = || -> Option<Vec<u64>> {
            let started = self.exits[0].load(Ordering::SeqCst);
            let mut words = Vec::with_capacity(self.done.len() + 1);
            for (r, parker) in self.ranks.parkers.iter().enumerate() {
                if self.done[r].load(Ordering::SeqCst) == self.number() {
                    words.push(u64::MAX);
                    continue;
                }
                let w = parker.blocked_word();
                if blocked_state(w) != CONFIRMED {
                    return None;
                }
                words.push(w);
            }
            let finished = self.exits[1].load(Ordering::SeqCst);
            (started == finished).then_some(())?;
            words.push(finished);
            Some(words)
        };
        let Some(first) = read() else {
            return false;
        };
        if read().as_ref() != Some(&first) {
            return false;
        }
        let waits: Vec<Option<(&'static str, usize)>> = first[..self.done.len()]
            .iter()
            .enumerate()
            .map(|(r, &w)| (w != u64::MAX).then(|| *self.waits[r].lock()))
            .collect();
        // Described from `me`, or from the first blocked rank.
        let Some(from) = me.or_else(|| waits.iter().position(Option::is_some)) else {
            // Every rank has returned: nothing is blocked.
            return false;
        };
        let (op, _) = waits[from].unwrap_or(("", from));
        self.abort(Error::Deadlock {
            rank: from,
            op,
            waits: describe_waits(&waits, from),
        });
        true
    }

    /// The waits of a deadlock this run failed with, if it did.
    pub(crate) fn deadlock(&self) -> Option<String> {
        if !self.is_aborted() {
            return None;
        }
        match &*self.cause.lock() {
            Some(Error::Deadlock { waits, .. }) => Some(waits.clone()),
            _ => None,
        }
    }

    fn wake_all(&self) {
        for p in self.ranks.parkers.iter() {
            p.unpark();
        }
    }
}

/// Describes a deadlock's waits (per team rank: its operation and the team rank it waits for,
/// `None` for a rank that has returned): the cycle that team rank `from` is on, or leads to,
/// then every other blocked rank.
fn describe_waits(waits: &[Option<(&'static str, usize)>], from: usize) -> String {
    let one = |r: usize| match waits[r] {
        Some((op, peer)) => format!("team rank {r} waits in {op} for team rank {peer}"),
        None => format!("team rank {r} has returned"),
    };
    // Follow the waits from `from` until a rank repeats (or one has returned).
    let mut path = vec![from];
    let cycle_start = loop {
        let last = *path.last().expect("non-empty");
        let Some((_, next)) = waits[last] else {
            break None;
        };
        if let Some(i) = path.iter().position(|&r| r == next) {
            break Some(i);
        }
        if next >= waits.len() {
            break None;
        }
        path.push(next);
    };
    let shown: Vec<usize> = match cycle_start {
        Some(i) => path[i..].to_vec(),
        None => path.clone(),
    };
    let mut text = shown.iter().map(|&r| one(r)).collect::<Vec<_>>().join(", ");
    if cycle_start.is_some() && shown.len() > 1 {
        text = format!("a cycle of waits: {text}");
    }
    let others: Vec<String> = (0..waits.len())
        .filter(|r| !shown.contains(r) && waits[*r].is_some())
        .map(one)
        .collect();
    if !others.is_empty() {
        text += &format!("; also blocked: {}", others.join(", "));
    }
    text
}
