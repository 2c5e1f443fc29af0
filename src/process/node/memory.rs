//! What the processes of one node share: a segment of memory ([`Segment`], in `/dev/shm`)
//! laid out for [`Rounds`] — the segment's poison flag, one control line per process, and two
//! data slots per process — through which the node stage of a hybrid team's collectives runs
//! (`process::node::schedules`), with no MPI; then the persistent short allreduces' slots (`folds`)
//! and the point-to-point rings (`mail`), if the node has them. Positions within the segment, never pointers, are what
//! the processes agree on: each maps it at its own address.

#[cfg(all(not(loom), any(test, feature = "mpi")))]
use super::process_exists;
#[cfg(not(loom))]
use super::Rounds;
#[cfg(not(loom))]
use super::{folds, mail, Control, Segment};
#[cfg(not(loom))]
use crate::sync::{AtomicU64, CachePadded};
#[cfg(not(loom))]
use std::mem::size_of;

/// Bytes of each slot of a process (two per process): the unit of a pipelined exchange.
pub(crate) const SLOT_BYTES: usize = 128 << 10;

/// A node's segment as this process maps it, and its place among the node's processes.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct NodeMemory {
    segment: std::sync::Arc<Segment>,
    processes: usize,
    /// The node's ranks.
    ranks: usize,
    me: usize,
}

/// Bytes of a line of the layout (a `CachePadded` value).
#[cfg(not(loom))]
const LINE: usize = size_of::<CachePadded<Control>>();

/// Whether process `q` of `r`'s node joined and its process no longer exists: what a node's
/// waits ask of the process they wait for.
#[cfg(all(not(loom), any(test, feature = "mpi")))]
pub(crate) fn gone(r: &Rounds<'_>, q: usize) -> bool {
    let pid = r.pid(q);
    pid != 0 && !process_exists(pid)
}

#[cfg(not(loom))]
impl NodeMemory {
    /// Bytes of the segment of a node of `processes` processes and `ranks` ranks, with
    /// point-to-point rings among them if `rings` ([`NodeMemory::mail`]).
    pub(crate) fn bytes(processes: usize, ranks: usize, rings: bool) -> usize {
        NodeMemory::rings_at(processes, ranks) + if rings { mail::bytes(ranks) } else { 0 }
    }

    /// Where the persistent short allreduces' share starts: after the rounds' lines and
    /// slots, on a page of its own.
    fn folds_at(processes: usize) -> usize {
        (LINE * (1 + processes) + 2 * processes * SLOT_BYTES).next_multiple_of(4096)
    }

    /// Where the rings start: after that share (a multiple of the page).
    fn rings_at(processes: usize, ranks: usize) -> usize {
        NodeMemory::folds_at(processes) + folds::NodeFolds::bytes(processes, ranks)
    }

    /// This process's side of the node's point-to-point rings among its ranks, the first of
    /// which is the world's `base`, of which it holds `mine` (the first, and its number of
    /// threads); the segment must have been made with rings ([`NodeMemory::bytes`]).
    pub(crate) fn mail(&self, base: usize, mine: (usize, usize)) -> mail::NodeMail {
        let at = NodeMemory::rings_at(self.processes, self.ranks);
        mail::NodeMail::new(self.segment.clone(), at, (base, self.ranks), mine)
    }

    /// The node's share of the persistent short allreduces.
    pub(crate) fn folds(&self) -> folds::NodeFolds {
        let at = NodeMemory::folds_at(self.processes);
        folds::NodeFolds::new(
            self.segment.clone(),
            at,
            (self.processes, self.ranks),
            self.me,
        )
    }

    /// The share of process `me` of `processes` (of `ranks` ranks in all) in `segment` (made
    /// or opened with [`NodeMemory::bytes`] bytes, zeroed when made): records this process's
    /// id in it.
    pub(crate) fn new(segment: Segment, processes: usize, ranks: usize, me: usize) -> NodeMemory {
        assert!(segment.len() >= NodeMemory::bytes(processes, ranks, false) && me < processes);
        let share = NodeMemory {
            segment: std::sync::Arc::new(segment),
            processes,
            ranks,
            me,
        };
        share.rounds().join(std::process::id());
        share.folds().join(std::process::id());
        share
    }

    /// This process's rounds, going on from the last one it left.
    pub(crate) fn rounds(&self) -> Rounds<'_> {
        let base = self.segment.base();
        // SAFETY: the mapping is page-aligned and at least `bytes(processes)` long (`new`);
        // zeroed memory is a valid `AtomicU64` and `Control` (plain atomics of `u64`), and the
        // lines are only ever used through atomics. The slots follow the lines, 2 per process
        // of `SLOT_BYTES` (a multiple of 128), only this process's `Rounds` is alive while it
        // runs a round (the leader's, under the leaders' communicator's lock).
        unsafe {
            let poison = &*base.cast::<AtomicU64>();
            let controls = std::slice::from_raw_parts(
                base.add(LINE).cast::<CachePadded<Control>>(),
                self.processes,
            );
            let slots = base.add(LINE * (1 + self.processes));
            Rounds::new(poison, controls, slots, SLOT_BYTES, self.me)
        }
    }
}
