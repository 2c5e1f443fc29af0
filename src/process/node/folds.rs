//! The node's share of the persistent short allreduces of a hybrid team whose processes all
//! run on one node (`process::node::fold`): slots of every rank of the node (`shm::Slots`, the same
//! protocol as among the threads of one process) in [`REGIONS`] regions of the segment, and
//! the lines that tell whose region is free and whose run has ended.
//!
//! Layout, on pages of its own (every line written by one process only):
//!
//! - one line per process: its process id, the number of runs it has begun, the number it
//!   has ended with whether that one failed (written by the thread that runs `Team::run`), and
//!   how many checks its leaders have posted on the shadows in its current run
//!   (`process::shadows`);
//! - [`REGIONS`] regions, each the slots of every rank and one line per rank
//!   (`process::node::region`).
//!
//! **Regions.** The n-th set-up of a run (from 0) takes region n mod [`REGIONS`], as a
//! generation that no earlier set-up of the team had (the run's number and n / [`REGIONS`]),
//! by the protocol of `process::node::region`.

use super::segment::Segment;
use crate::shm::slots::RANK_BYTES;
use crate::shm::Slots;
use crate::sync::{AtomicU64, CachePadded, Ordering};
use std::mem::size_of;
use std::sync::Arc;

/// Regions of the node's persistent short allreduces: how many a rank may hold at once.
pub(crate) const REGIONS: usize = 64;

/// Bytes of a line.
const LINE: usize = size_of::<CachePadded<AtomicU64>>();

/// A process's line.
#[derive(Default)]
#[repr(C)]
struct ProcessLine {
    pid: AtomicU64,
    begun: AtomicU64,
    ended: AtomicU64,
    /// The current run's number (its low [`CHECK_BITS`] bits) above the count of checks posted
    /// on the shadows in it ([`NodeFolds::count_check`]).
    checks: AtomicU64,
}

#[cfg(not(loom))]
const _: () = assert!(size_of::<ProcessLine>() <= LINE);

/// Bits of a process's count of checks on the shadows within its run's word
/// ([`ProcessLine::checks`]): far more checks than a run makes, and room for the number of
/// runs in the others (compared modulo 2^32, which a team would need 2^32 runs to confuse).
const CHECK_BITS: u32 = 32;

/// Bits of a generation's number within its run ([`generation`]).
const SETUP_BITS: u32 = 24;

/// The generation of the n-th set-up (from 0) of run `run` in its region (module docs): unique
/// over the team's life, never 0.
pub(crate) fn generation(run: u64, n: u64) -> u64 {
    debug_assert!(fits(n));
    run << SETUP_BITS | (n / REGIONS as u64 + 1)
}

/// The first generation of run `run`: those below are from runs that have ended.
pub(crate) fn first_generation(run: u64) -> u64 {
    run << SETUP_BITS
}

/// Whether the n-th set-up of a run gets a generation.
pub(crate) fn fits(n: u64) -> bool {
    n / (REGIONS as u64) + 1 < 1 << SETUP_BITS
}

/// The persistent short allreduces' share of a node's segment (module docs).
pub(crate) struct NodeFolds {
    segment: Arc<Segment>,
    /// Where the share starts in the segment.
    at: usize,
    processes: usize,
    ranks: usize,
    /// This process's place among the node's.
    me: usize,
}

impl std::fmt::Debug for NodeFolds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeFolds")
            .field("processes", &self.processes)
            .field("ranks", &self.ranks)
            .finish()
    }
}

/// Bytes of one region for `ranks` ranks: their slots, then a line each.
fn region_bytes(ranks: usize) -> usize {
    ranks * (RANK_BYTES + LINE)
}

impl NodeFolds {
    /// Bytes of the share of a node of `processes` processes and `ranks` ranks (a multiple of
    /// the page).
    pub(crate) fn bytes(processes: usize, ranks: usize) -> usize {
        ((processes * LINE).next_multiple_of(RANK_BYTES) + REGIONS * region_bytes(ranks))
            .next_multiple_of(4096)
    }

    /// Process `me`'s view of the share at byte `at` (page-aligned, zeroed when made) of
    /// `segment`, for `processes` processes and `ranks` ranks ([`NodeFolds::bytes`] long).
    pub(crate) fn new(
        segment: Arc<Segment>,
        at: usize,
        (processes, ranks): (usize, usize),
        me: usize,
    ) -> Self {
        assert!(at.is_multiple_of(4096) && me < processes);
        assert!(at + NodeFolds::bytes(processes, ranks) <= segment.len());
        NodeFolds {
            segment,
            at,
            processes,
            ranks,
            me,
        }
    }

    fn process(&self, q: usize) -> &ProcessLine {
        assert!(q < self.processes);
        // SAFETY: as `word`: process q's line, of atomics only.
        unsafe {
            &*self
                .segment
                .base()
                .add(self.at + q * LINE)
                .cast::<ProcessLine>()
        }
    }

    /// Records this process's id (once).
    pub(crate) fn join(&self, pid: u32) {
        self.process(self.me)
            .pid
            .store(u64::from(pid), Ordering::Release);
    }

    /// Process `q`'s id (0 until it joined).
    pub(crate) fn pid(&self, q: usize) -> u32 {
        self.process(q).pid.load(Ordering::Acquire) as u32
    }

    /// This process (the thread of `Team::run`) begins its run `run` (1, 2, …).
    pub(crate) fn begin_run(&self, run: u64) {
        let line = self.process(self.me);
        line.checks.store(run << CHECK_BITS, Ordering::SeqCst);
        line.begun.store(run, Ordering::Release);
    }

    /// A leader of this process is about to post a check on a shadow in the current run.
    pub(crate) fn count_check(&self) {
        self.process(self.me).checks.fetch_add(1, Ordering::SeqCst);
    }

    /// How many checks process `q` has posted on the shadows in run `run` (0 if it is in
    /// another run).
    fn checks(&self, q: usize, run: u64) -> u64 {
        let word = self.process(q).checks.load(Ordering::SeqCst);
        let low = |w: u64| w & ((1 << CHECK_BITS) - 1);
        if low(word >> CHECK_BITS) == low(run) {
            low(word)
        } else {
            0
        }
    }

    /// Whether another process has posted more checks on the shadows in run `run` than this
    /// one has.
    pub(crate) fn others_checked_more(&self, run: u64) -> bool {
        let mine = self.checks(self.me, run);
        (0..self.processes).any(|q| q != self.me && self.checks(q, run) > mine)
    }

    /// This process has ended its run `run` (which `failed`, or not): its ranks start nothing
    /// more in it.
    pub(crate) fn end_run(&self, run: u64, failed: bool) {
        let word = run << 1 | u64::from(failed);
        self.process(self.me).ended.store(word, Ordering::Release);
    }

    /// The run this process is in (the last it began).
    pub(crate) fn run(&self) -> u64 {
        self.process(self.me).begun.load(Ordering::Acquire)
    }

    /// Whether process `q` has ended run `run` (and so will not start anything more in it):
    /// if it has, whether that run failed there.
    pub(crate) fn ended(&self, q: usize, run: u64) -> Option<bool> {
        let word = self.process(q).ended.load(Ordering::Acquire);
        (word >> 1 >= run).then_some(word >> 1 == run && word & 1 == 1)
    }

    /// Where region `region` starts in the share.
    fn region_at(&self, region: usize) -> usize {
        assert!(region < REGIONS);
        (self.processes * LINE).next_multiple_of(RANK_BYTES) + region * region_bytes(self.ranks)
    }

    /// The lines of region `region`, one per rank (`process::node::region`).
    pub(crate) fn lines(&self, region: usize) -> &[CachePadded<AtomicU64>] {
        let at = self.region_at(region) + self.ranks * RANK_BYTES;
        debug_assert_eq!(size_of::<CachePadded<AtomicU64>>(), LINE);
        debug_assert!((self.at + at).is_multiple_of(std::mem::align_of::<CachePadded<AtomicU64>>()));
        // SAFETY: `ranks` lines of `LINE` bytes within the share (`region_bytes`), aligned as
        // a `CachePadded` (the share is page-aligned, and the region's lines follow slots of a
        // multiple of 128 bytes from a multiple of 128); zeroed memory is a valid atomic, and
        // the lines are used through atomics only.
        unsafe {
            std::slice::from_raw_parts(
                self.segment
                    .base()
                    .add(self.at + at)
                    .cast::<CachePadded<AtomicU64>>(),
                self.ranks,
            )
        }
    }

    /// The slots of region `region`, for every rank of the node.
    pub(crate) fn slots(self: &Arc<Self>, region: usize) -> Slots {
        let at = self.region_at(region);
        // SAFETY: the region's slots lie within the share, at a multiple of `RANK_BYTES` (a
        // multiple of 64) from its page-aligned start; the segment was zeroed when made and
        // its regions are used as slots only; `self` (kept by the slots) keeps it mapped.
        unsafe {
            Slots::within(
                self.segment.base().add(self.at + at),
                self.ranks,
                Box::new(self.clone()),
            )
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{NodeFolds, Segment};
    use std::sync::Arc;

    /// Three processes' views of one share.
    fn views() -> Vec<NodeFolds> {
        let bytes = NodeFolds::bytes(3, 3);
        let segment = Arc::new(Segment::private(bytes).expect("an anonymous mapping"));
        (0..3)
            .map(|me| NodeFolds::new(segment.clone(), 0, (3, 3), me))
            .collect()
    }

    #[test]
    fn a_process_sees_another_that_checked_more_in_its_run_only() {
        let f = views();
        for (q, v) in f.iter().enumerate() {
            v.begin_run(1);
            for _ in 0..q.min(1) {
                v.count_check();
            }
        }
        // Process 0 made no check; 1 and 2 one each.
        assert!(f[0].others_checked_more(1));
        assert!(!f[1].others_checked_more(1));
        assert!(!f[2].others_checked_more(1));
        f[0].count_check();
        assert!(!f[0].others_checked_more(1));
        f[2].count_check();
        assert!(f[0].others_checked_more(1) && f[1].others_checked_more(1));
        // A process that has gone on to the next run made no check in this one; counts start
        // afresh in every run.
        f[2].begin_run(2);
        f[2].count_check();
        assert!(!f[1].others_checked_more(1));
        assert!(!f[0].others_checked_more(1));
        assert!(f[0].others_checked_more(2) && f[1].others_checked_more(2));
        assert!(!f[2].others_checked_more(2));
        // Run numbers are told apart modulo 2^32 only.
        f[1].begin_run(1 << 32 | 3);
        f[1].count_check();
        assert!(f[0].others_checked_more(3));
    }
}
