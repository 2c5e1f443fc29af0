//! Spin → yield → park waiting, and the parker a waiting rank sleeps on.
//!
//! Each rank thread of a team owns one [`Parker`]. A rank that waits for something (a message,
//! a free mailbox slot, an acknowledgement, a new job) first polls its condition in a short
//! spin, then yields the core a while, then parks. Whoever makes a condition true that another
//! rank may wait for calls [`Parker::unpark`] on that rank's parker after publishing.
//!
//! The parker is an event count: a waiter announces itself in `waiters`, then re-checks its
//! condition under the parker's lock before it sleeps; a writer publishes, then reads
//! `waiters`, and only when someone is announced takes the lock and notifies. A `SeqCst` fence
//! stands between the write and the read on both sides, so at least one of them sees the other
//! (the store-buffering pattern): either the writer sees the announcement and notifies under
//! the lock, or the waiter's re-check sees the publication. Fences rather than `SeqCst`
//! accesses, because that is the form loom can check (it models `SeqCst` loads and stores as
//! acquire/release). The protocol and the argument that no wake-up is lost: `README.md` in
//! this folder; the loom models that check it are the `loom` module beside this file.
//!
//! Several threads may wait on one parker at once (a rank may hand a sub-communicator to a
//! helper thread), which is why it counts waiters and notifies all of them rather than keeping
//! a single sleeping flag.
//!
//! A wait that may be part of a deadlock between ranks is *watched* ([`Watch`]): each time it
//! is about to sleep it marks its parker *tentatively* blocked before the last check of its
//! condition, and *confirms* the mark only if the condition was false; a writer's `unpark` that
//! finds waiters clears the mark, whichever it is. So a confirmed mark belongs to a waiter whose
//! condition was false after the mark and that no writer has woken since — a writer whose
//! publication the check missed saw the waiter announced, and clears the mark (it is running
//! until it has). When every live rank's parker is confirmed blocked at one instant, no rank
//! can ever wake another (`shm::run`'s deadlock detection reads the marks).

use super::{fence, spin_hint, yield_now, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};
use std::time::{Duration, Instant};

/// Where a waiting thread sleeps once spinning and yielding have not satisfied it.
#[derive(Debug)]
pub(crate) struct Parker {
    /// Number of threads between announcing themselves and leaving `park_until`. Written by
    /// waiters only (so a writer's read of it is a read of a line it does not own), read by
    /// every writer after each publication.
    waiters: AtomicUsize,
    /// Held by a waiter while it re-checks its condition and until the condvar releases it;
    /// taken by a writer before notifying, which is what closes the window between the re-check
    /// and the sleep.
    lock: Mutex<()>,
    /// Where waiters sleep.
    cv: Condvar,
    /// The blocked mark of a watched waiter: a count of changes above the mark's state in the
    /// low two bits (`CLEAR`, `TENTATIVE`, `CONFIRMED`; module doc). Set and confirmed by the
    /// waiter, cleared by the waiter when it leaves and by any `unpark` that finds waiters.
    /// Every change raises the count, so two equal readings mean no change in between.
    blocked: AtomicU64,
}

/// What a watched waiter adds to `waiters` besides its 1, so that a writer knows from the one
/// word it reads whether a watched waiter may be marked (a parker has far fewer than 2^16
/// waiters).
const WATCHED: usize = 1 << 16;

/// A blocked mark's state: no watched waiter is marked.
const CLEAR: u64 = 0;
/// A blocked mark's state: a watched waiter is about to check its condition a last time.
const TENTATIVE: u64 = 1;
/// A blocked mark's state: a watched waiter found its condition false and nobody has woken it.
pub(crate) const CONFIRMED: u64 = 2;

/// The state of a blocked word ([`Parker::blocked_word`]).
#[inline]
pub(crate) fn blocked_state(word: u64) -> u64 {
    word & 3
}

/// What a watched wait tells its observer ([`wait_until_watched`]).
pub(crate) trait Watch {
    /// The waiter is about to park for the first time in this wait.
    fn parking(&self);
    /// The waiter has confirmed its parker blocked (its condition was false after the mark):
    /// it is about to sleep. (Deadlock detection runs here; it may fail the run, which must
    /// make the condition true.)
    fn stuck(&self);
}

impl Default for Parker {
    fn default() -> Self {
        Parker::new()
    }
}

impl Parker {
    /// A parker with nobody waiting.
    pub(crate) fn new() -> Self {
        Parker {
            waiters: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            blocked: AtomicU64::new(0),
        }
    }

    /// The blocked word (see the field), for deadlock detection: its state is
    /// [`blocked_state`]`(word)`.
    #[inline]
    pub(crate) fn blocked_word(&self) -> u64 {
        self.blocked.load(Ordering::SeqCst)
    }

    /// Moves the mark from a state in `from` to `to`, raising the count; false if the mark
    /// is in no state of `from`.
    fn mark(&self, from: &[u64], to: u64) -> bool {
        let mut w = self.blocked.load(Ordering::SeqCst);
        loop {
            if !from.contains(&blocked_state(w)) {
                return false;
            }
            let next = ((w >> 2) + 1) << 2 | to;
            match self
                .blocked
                .compare_exchange(w, next, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// Clears the blocked mark if it is set.
    fn unblock(&self) {
        self.mark(&[TENTATIVE, CONFIRMED], CLEAR);
    }

    /// Wakes every thread parked here. Call it after publishing (with a release store or any
    /// stronger write) whatever they may be waiting for. Costs a fence and one load when nobody
    /// sleeps.
    #[inline]
    pub(crate) fn unpark(&self) {
        // Orders the caller's publication before the read of `waiters` (see the module doc).
        fence(Ordering::SeqCst);
        let waiters = self.waiters.load(Ordering::Relaxed);
        if waiters > 0 {
            self.wake_slow(waiters);
        }
    }

    /// Wakes the threads parked here if this thread sees one announced, without the fence of
    /// [`Parker::unpark`]: the announcement may not be visible yet, so this can miss a thread
    /// that is about to sleep, and a writer that uses it must call `unpark` afterwards too. It
    /// spares the writer the fence's wait for its publication to reach the other cores when
    /// nobody has long been asleep (the folded allreduce's start).
    #[inline]
    pub(crate) fn unpark_seen(&self) {
        let waiters = self.waiters.load(Ordering::Relaxed);
        if waiters > 0 {
            self.wake_slow(waiters);
        }
    }

    #[cold]
    fn wake_slow(&self, waiters: usize) {
        // A watched waiter marked blocked is blocked no longer: it has something to look at.
        // (Unwatched waiters never mark, and skipping the word keeps their wake-ups as they
        // were, also for loom.)
        if waiters >= WATCHED {
            self.unblock();
        }
        // Taking the lock orders this notification after any waiter's re-check that is
        // already under way: that waiter is then inside `cv.wait` and receives it.
        drop(self.lock.lock());
        self.cv.notify_all();
    }

    /// Sleeps until `ready()` is true or `deadline` passes; returns whether `ready()` held.
    /// `ready` must only read (acquire loads of what writers publish before `unpark`). (The
    /// crate parks through [`wait_until`]; the loom models park here directly.)
    #[cfg(all(test, loom))]
    pub(crate) fn park_until(
        &self,
        ready: impl FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        self.park_watched(ready, deadline, None)
    }

    /// `Parker::park_until`, marking the parker blocked before each sleep and telling
    /// `watch` when it finds itself stuck (module doc).
    fn park_watched(
        &self,
        mut ready: impl FnMut() -> bool,
        deadline: Option<Instant>,
        watch: Option<&dyn Watch>,
    ) -> bool {
        let expired = || deadline.is_some_and(|d| Instant::now() >= d);
        let count = if watch.is_some() { 1 + WATCHED } else { 1 };
        self.waiters.fetch_add(count, Ordering::Relaxed);
        let satisfied = match watch {
            None => {
                // Orders the announcement before `ready`'s reads (see the module doc).
                fence(Ordering::SeqCst);
                let mut guard = self.lock.lock();
                loop {
                    if ready() {
                        break true;
                    }
                    if expired() {
                        break false;
                    }
                    self.cv.wait(&mut guard, deadline);
                }
            }
            Some(watch) => loop {
                self.mark(&[CLEAR, TENTATIVE, CONFIRMED], TENTATIVE);
                // Orders the announcement and the mark before `ready`'s reads.
                fence(Ordering::SeqCst);
                if ready() {
                    break true;
                }
                // Not confirmed if a writer cleared the mark meanwhile: it has woken us.
                if self.mark(&[TENTATIVE], CONFIRMED) {
                    watch.stuck();
                }
                let mut guard = self.lock.lock();
                if ready() {
                    break true;
                }
                if expired() {
                    break false;
                }
                // A writer that cleared the mark since has notified before we held the lock:
                // mark and look again rather than sleep unmarked. (One that clears it from now
                // on notifies after we sleep.)
                if blocked_state(self.blocked.load(Ordering::SeqCst)) != CONFIRMED {
                    continue;
                }
                // Woken (or timed out): mark and look again.
                self.cv.wait(&mut guard, deadline);
            },
        };
        self.waiters.fetch_sub(count, Ordering::Relaxed);
        if watch.is_some() {
            self.unblock();
        }
        satisfied
    }
}

/// How long a waiter spins and yields before it parks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WaitPolicy {
    /// Polls of the condition with a spin hint between them.
    pub spins: u32,
    /// How long to keep polling with `yield_now` between polls once spinning is over.
    pub yield_for: Duration,
    /// Whether the team has more ranks than cores (schedules' cost estimates use it).
    pub oversubscribed: bool,
}

impl WaitPolicy {
    /// One rank per core: spin long enough to catch a peer that is some tens of microseconds
    /// behind (a spin hint costs tens of nanoseconds on the machines measured, figures in
    /// `docs/results/2026-11-29-figures-behind-the-code.md`), yield a while, then sleep.
    pub(crate) const DEDICATED: WaitPolicy = WaitPolicy {
        spins: 2048,
        yield_for: Duration::from_micros(200),
        oversubscribed: false,
    };
    /// More ranks than cores: the peer we wait for probably needs our core, so poll only a
    /// few times and hand the core over.
    pub(crate) const OVERSUBSCRIBED: WaitPolicy = WaitPolicy {
        spins: 8,
        yield_for: Duration::from_micros(200),
        oversubscribed: true,
    };
    /// A worker between runs: catch a run that follows at once (a benchmark loop), otherwise
    /// sleep soon so that an idle team costs nothing.
    pub(crate) const IDLE: WaitPolicy = WaitPolicy {
        spins: 256,
        yield_for: Duration::from_micros(50),
        oversubscribed: false,
    };

    /// The policy for `ranks` threads on `cores` cores, overridden field by field by the
    /// environment variables `CORECOLL_SPINS` (polls before yielding) and `CORECOLL_YIELD_US`
    /// (microseconds of yielding before parking), as OpenMP runtimes take `GOMP_SPINCOUNT`.
    pub(crate) fn for_load(ranks: usize, cores: usize) -> WaitPolicy {
        let mut policy = if ranks > cores.max(1) {
            WaitPolicy::OVERSUBSCRIBED
        } else {
            WaitPolicy::DEDICATED
        };
        if let Some(spins) = crate::env::spins() {
            policy.spins = spins;
        }
        if let Some(us) = crate::env::yield_us() {
            policy.yield_for = Duration::from_micros(us);
        }
        policy
    }
}

/// When a call began to wait, for the team's timeout. The clock is read the first time one of
/// the call's waits needs it — once its spinning is over, or for an error's report — so a
/// wait whose condition holds at once or within the spin reads no clock: a clock read costs
/// about a fifth of the cache-line handoff a short collective waits for, and the persistent
/// short allreduce's completion would pay it every time. (The timeout is so counted from that
/// first need, a few microseconds after the call began at most.)
#[derive(Debug)]
pub(crate) struct Started {
    timeout: Option<Duration>,
    at: std::cell::Cell<Option<Instant>>,
}

impl Started {
    /// A wait (or a call's waits) bounded by `timeout`, if any.
    pub(crate) fn new(timeout: Option<Duration>) -> Started {
        Started {
            timeout,
            at: std::cell::Cell::new(None),
        }
    }

    /// The instant the wait began: now, if no wait has asked before.
    fn at(&self) -> Instant {
        self.at.get().unwrap_or_else(|| {
            let now = Instant::now();
            self.at.set(Some(now));
            now
        })
    }

    /// When the timeout passes (`None`: no timeout, or one too large to add to the start).
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let limit = self.timeout?;
        self.at().checked_add(limit)
    }

    /// Whether the timeout has passed.
    #[cfg(feature = "mpi")]
    pub(crate) fn expired(&self) -> bool {
        self.deadline().is_some_and(|d| Instant::now() >= d)
    }

    /// How long since the wait began.
    pub(crate) fn elapsed(&self) -> Duration {
        self.at().elapsed()
    }
}

/// Polls without a spin hint at the start of a wait.
const TIGHT_POLLS: u32 = 64;

/// Waits until `ready()` holds or `deadline` passes: spins, then yields, then parks on
/// `parker`. Returns whether `ready()` held. Under loom it parks at once (loom has no time and
/// spinning only multiplies the states to explore).
#[inline]
pub(crate) fn wait_until(
    parker: &Parker,
    policy: &WaitPolicy,
    deadline: Option<Instant>,
    ready: impl FnMut() -> bool,
) -> bool {
    wait_until_watched(parker, policy, || deadline, ready, None)
}

/// [`wait_until`] for a wait that may be part of a deadlock between ranks: parks watched by
/// `watch` (module doc). `deadline` is asked only if `ready()` does not hold at once, and
/// outside a task only once the spinning is over ([`Started`]).
#[inline]
pub(crate) fn wait_until_watched(
    parker: &Parker,
    policy: &WaitPolicy,
    deadline: impl FnOnce() -> Option<Instant>,
    mut ready: impl FnMut() -> bool,
    watch: Option<&dyn Watch>,
) -> bool {
    if ready() {
        return true;
    }
    if super::task::inside() {
        // A task does not wait: it stops here until its resumer finds the condition true.
        return super::task::suspend_until(parker, policy, deadline(), &mut ready, watch);
    }
    if !cfg!(loom) {
        // The first polls go without a spin hint: on some cores a hint costs as much as a
        // good part of a message's latency, which would be added to a message that arrives
        // during it.
        for i in 0..policy.spins {
            if i >= TIGHT_POLLS {
                spin_hint();
            }
            if ready() {
                return true;
            }
        }
    }
    let deadline = deadline();
    if !cfg!(loom) {
        // Yield until `yield_for` has passed since the wait began, or, for a thread with an
        // idle hook (`idle`), since the hook last found work: its work wakes nobody, so such a
        // thread then sleeps in short stretches and runs the hook between them instead of
        // parking until woken.
        let hook = super::idle::installed();
        let mut active = Instant::now();
        loop {
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return ready();
            }
            if now.duration_since(active) < policy.yield_for {
                yield_now();
            } else if hook && super::idle::precise() {
                // Hooks whose work wakes this thread: park until woken, on the wait's condition
                // or theirs, watched on both (blocked only if neither can become true).
                if let Some(w) = watch {
                    w.parking();
                }
                let mut either = || ready() || super::idle::ready();
                parker.park_watched(&mut either, deadline, watch);
                if ready() {
                    return true;
                }
            } else if hook {
                if let Some(w) = watch {
                    w.parking();
                }
                let slice = now + super::idle::IDLE_PARK;
                let until = deadline.map_or(slice, |d| d.min(slice));
                if parker.park_watched(&mut ready, Some(until), watch) {
                    return true;
                }
            } else {
                break;
            }
            if super::idle::run() {
                active = Instant::now();
            }
            if ready() {
                return true;
            }
        }
    }
    if let Some(w) = watch {
        w.parking();
    }
    parker.park_watched(ready, deadline, watch)
}

#[cfg(all(test, loom))]
mod loom;
