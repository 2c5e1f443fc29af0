//! The node's share of the persistent short allreduces of a hybrid team whose processes all
//! run on one node (`hybrid::fold`): slots of every rank of the node (`shm::Slots`, the same
//! protocol as among the threads of one process) in [`REGIONS`] regions of the segment, and
//! the lines that tell whose region is free and whose run has ended.
//!
//! Layout, on pages of its own (every line written by one process only):
//!
//! - one line per process: its process id, the number of runs it has begun, and the number it
//!   has ended with whether that one failed (written by the thread that runs `Team::run`);
//! - [`REGIONS`] regions, each the slots of every rank and one line per rank
//!   (`shm::node::region`).
//!
//! **Regions.** The n-th set-up of a run (from 0) takes region n mod [`REGIONS`], as a
//! generation that no earlier set-up of the team had (the run's number and n / [`REGIONS`]),
//! by the protocol of `shm::node::region`.

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
}

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
        self.process(self.me).begun.store(run, Ordering::Release);
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

    /// The lines of region `region`, one per rank (`shm::node::region`).
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
