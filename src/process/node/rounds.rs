//! Rounds: how the processes of one node exchange data through their segment
//! (`process::node`), one writer per line.
//!
//! Each process owns one control line ([`Control`], written by it alone) and two slots of the
//! segment's data area, used in turn: round r uses slot r mod 2. A round of process q:
//!
//! 1. [`Rounds::begin`]: the round number r (one more than q's last), once every process has
//!    *left* round r − 2 (`left ≥ r − 2`), the last round that used the same slots, so that
//!    no one still reads what q is about to overwrite;
//! 2. q writes its slot r mod 2 (if it has something to say) and [`Rounds::arrive`]s: its
//!    `seq` becomes r, a release store, so whoever sees `seq ≥ r` (acquire) sees the slot;
//! 3. [`Rounds::wait_arrived`] for the processes whose slots q reads, and q reads them;
//! 4. [`Rounds::leave`]: its `left` becomes r (release), after its last read of the round.
//!
//! Every process runs the same sequence of rounds (the calls are agreed first: the check is a
//! round of its own), so the counters of all processes move together, at most two rounds apart.
//! Three processes: A cannot begin round r + 2 before B and C have left round r, and B cannot
//! have left round r before A arrived at it, so a slot is never written while it is read.
//!
//! **Waiting** spins, then yields the core between polls (a process of the node may be
//! waiting for a thread of another that is not running); nothing parks, since a wake-up
//! across processes would need a futex on the segment, and the wait is for a process that is
//! running already whenever the node has a core for it. Every so often a wait asks its
//! watcher whether to go on (the process it waits for still exists, the team's time is not
//! up) and looks at the segment's *poison*: a process that gives up a wait in the middle of a
//! call cannot tell where the others are, so it poisons the segment, and every process's
//! later waits stop too ([`Halt::Poisoned`]).

use crate::error::Error;
use crate::sync::{spin_hint, yield_now, AtomicU64, CachePadded, Ordering};
use std::cell::Cell;

/// One process's control line: written by that process only.
#[derive(Default)]
pub(crate) struct Control {
    /// The last round this process arrived at (its slot of that round is written).
    seq: AtomicU64,
    /// The last round this process left (it reads nothing of it any more).
    left: AtomicU64,
    /// Its operating system's process id (written when it joins, for the watchers).
    pid: AtomicU64,
}

/// Why a wait stopped.
#[derive(Debug)]
pub(crate) enum Halt {
    /// A process gave up a wait before (the segment is poisoned); the process this wait was
    /// for.
    Poisoned(usize),
    /// The watcher's error.
    By(Error),
}

/// Polls that only spin before a wait starts yielding, where every process of the node has a
/// core ([`Rounds::spinning`]; none under loom, whose yields are what lets the other threads of
/// a model run).
pub(crate) const SPINS: u32 = if cfg!(loom) { 0 } else { 1 << 10 };
/// Polls between two looks of the watcher (once spinning is over).
const WATCH_EVERY: u32 = if cfg!(loom) { 1 } else { 16 };

/// One process's side of the rounds of a node (module docs).
pub(crate) struct Rounds<'a> {
    poison: &'a AtomicU64,
    controls: &'a [CachePadded<Control>],
    slots: *mut u8,
    slot_bytes: usize,
    me: usize,
    /// The last round this process left.
    round: Cell<u64>,
    /// Polls a wait spins before it yields.
    spins: u32,
}

impl<'a> Rounds<'a> {
    /// Process `me`'s side of rounds over `controls` (one per process) and `slots` (two of
    /// `slot_bytes` per process, process q's at `slots + (2q + parity) · slot_bytes`), with
    /// the segment's `poison`, going on from the last round it left.
    ///
    /// # Safety
    /// `slots` must be valid for reads and writes of `2 · controls.len() · slot_bytes` bytes
    /// for `'a`, shared only with the other processes' `Rounds` over the same controls (one
    /// `Rounds` of `me` at a time), and `slot_bytes` a multiple of 128 (so that every slot is
    /// aligned for any element type).
    pub(crate) unsafe fn new(
        poison: &'a AtomicU64,
        controls: &'a [CachePadded<Control>],
        slots: *mut u8,
        slot_bytes: usize,
        me: usize,
    ) -> Self {
        debug_assert!(slot_bytes.is_multiple_of(128));
        Rounds {
            poison,
            controls,
            slots,
            slot_bytes,
            me,
            round: Cell::new(controls[me].left.load(Ordering::Acquire)),
            spins: SPINS,
        }
    }

    /// These rounds with waits that spin `spins` polls before they yield ([`SPINS`] by
    /// default; none on a node whose processes outnumber its cores, where a spinning waiter
    /// holds the core of the process it waits for).
    pub(crate) fn spinning(mut self, spins: u32) -> Self {
        self.spins = spins;
        self
    }

    /// Records `pid` as this process's id, for the other processes' watchers.
    pub(crate) fn join(&self, pid: u32) {
        self.controls[self.me]
            .pid
            .store(u64::from(pid), Ordering::Release);
    }

    /// Processes of the node.
    pub(crate) fn size(&self) -> usize {
        self.controls.len()
    }

    /// This process's index.
    pub(crate) fn me(&self) -> usize {
        self.me
    }

    /// Bytes of a slot.
    pub(crate) fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// Process `q`'s id, as it recorded it (0 before it joined).
    pub(crate) fn pid(&self, q: usize) -> u32 {
        self.controls[q].pid.load(Ordering::Acquire) as u32
    }

    /// Whether a process gave up a wait on this segment.
    pub(crate) fn is_poisoned(&self) -> bool {
        self.poison.load(Ordering::Acquire) != 0
    }

    /// Marks the segment poisoned (module docs).
    pub(crate) fn poison(&self) {
        self.poison.store(1, Ordering::Release);
    }

    /// Starts the next round: its number, once every process has left the one two before.
    pub(crate) fn begin(&self, watch: &mut dyn FnMut(usize) -> Option<Error>) -> Result<u64, Halt> {
        let r = self.round.get() + 1;
        if r > 2 {
            self.wait(
                |q| self.controls[q].left.load(Ordering::Acquire) >= r - 2,
                None,
                watch,
            )?;
        }
        Ok(r)
    }

    /// This process's slot of round `r`.
    pub(crate) fn mine(&self, r: u64) -> *mut u8 {
        self.slot_of(self.me, r)
    }

    /// Process `q`'s slot of round `r` (to read once it has arrived).
    pub(crate) fn slot(&self, q: usize, r: u64) -> *const u8 {
        self.slot_of(q, r)
    }

    fn slot_of(&self, q: usize, r: u64) -> *mut u8 {
        let i = 2 * q + (r % 2) as usize;
        // SAFETY: within the slots' area (`new`'s contract: 2 slots per process).
        unsafe { self.slots.add(i * self.slot_bytes) }
    }

    /// This process's slot of round `r` is written.
    pub(crate) fn arrive(&self, r: u64) {
        self.controls[self.me].seq.store(r, Ordering::Release);
    }

    /// Waits until process `from` (`None`: every process) has arrived at round `r`.
    pub(crate) fn wait_arrived(
        &self,
        r: u64,
        from: Option<usize>,
        watch: &mut dyn FnMut(usize) -> Option<Error>,
    ) -> Result<(), Halt> {
        self.wait(
            |q| self.controls[q].seq.load(Ordering::Acquire) >= r,
            from,
            watch,
        )
    }

    /// This process has read all it reads of round `r`.
    pub(crate) fn leave(&self, r: u64) {
        self.controls[self.me].left.store(r, Ordering::Release);
        self.round.set(r);
    }

    /// Polls until `done(q)` holds for process `from` (or every process), spinning first and
    /// then yielding, asking `watch` about the first process not done now and then.
    fn wait(
        &self,
        done: impl Fn(usize) -> bool,
        from: Option<usize>,
        watch: &mut dyn FnMut(usize) -> Option<Error>,
    ) -> Result<(), Halt> {
        let mut polls: u32 = 0;
        loop {
            let pending = match from {
                Some(q) => (!done(q)).then_some(q),
                None => (0..self.size()).find(|&q| !done(q)),
            };
            let Some(q) = pending else {
                return Ok(());
            };
            polls = polls.wrapping_add(1);
            if polls < self.spins {
                spin_hint();
                continue;
            }
            yield_now();
            if polls.is_multiple_of(WATCH_EVERY) {
                if self.is_poisoned() {
                    return Err(Halt::Poisoned(q));
                }
                if let Some(e) = watch(q) {
                    return Err(Halt::By(e));
                }
            }
        }
    }
}
