//! Persistent short allreduces between the processes of one node, folded on slots in the
//! node's segment (`process::node::folds`) as the threads of one process fold on theirs
//! (`algorithms::allreduce::folded`): a start copies the rank's vector into its own slot and
//! stores its sequence number; completing it waits until every rank of the node has stored
//! it and combines their vectors. No MPI, no call check at a start (the set-up agreed the
//! call), no task.
//!
//! **Same bits as the blocking call.** The blocking allreduce of a hybrid team reduces each
//! process's threads to its first thread, combines the processes' results in process order
//! (the node stage's grouping, ((P₀ ⊙ P₁) ⊙ P₂) ⊙ …, or any algorithm's, with two processes),
//! and broadcasts. The fold computes exactly that: each process's vectors left to right, then
//! the processes' results left to right. So it runs only where that is the blocking call's
//! grouping: one node holds every process, no process has more than two threads (whose
//! reduce is t₀ ⊙ t₁ whatever the algorithm), and the algorithm between processes is the
//! node's (`Auto`, `Direct`, or a hierarchical one) or there are only two processes.
//!
//! **Failures.** A wait for another process's rank polls (nothing wakes a thread across
//! processes), and gives up as every wait between processes does (`Bridge::poll_until`: the
//! run failed here, another process's failure notice, the team's timeout), and also on what
//! the segment shows of the process it waits for: it ended its run without the start
//! (`Error::PeerExited`), ended it failed, or no longer exists (`Error::ProcessFailed`). A
//! `test` returns the same errors (but the timeout), so that a loop of them ends too.

use crate::algorithms::allreduce::folded;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::process::bridge::Bridge;
use crate::process::node::folds::{self, NodeFolds, REGIONS};
use crate::process::node::process_exists;
use crate::process::node::region::Region;
use crate::select::Algorithm;
use crate::shm::Slots;
use crate::sync::park::Started;
use std::mem::{size_of_val, MaybeUninit};
use std::sync::Arc;

/// This rank's part of a persistent short allreduce folded through the node (module docs).
pub(crate) struct NodeFold {
    folds: Arc<NodeFolds>,
    slots: Slots,
    region: usize,
    generation: u64,
    /// This rank's place among the node's ranks (its slots').
    me: usize,
    /// The number of this rank's last start (0: none yet).
    k: u64,
    /// Whether that start has not completed yet.
    in_flight: bool,
}

impl NodeFold {
    /// Whether a start has not completed yet.
    pub(crate) fn in_flight(&self) -> bool {
        self.in_flight
    }

    /// Its region, as `process::node::region` runs it.
    fn region(&self) -> Region<'_> {
        let since = folds::first_generation(self.folds.run());
        Region::new(self.folds.lines(self.region), &self.slots, since)
    }

    /// The first rank that has not stored the start in flight's number, if one has not.
    fn pending(&self) -> Option<usize> {
        self.region().pending(self.generation, self.k)
    }
}

impl Drop for NodeFold {
    fn drop(&mut self) {
        // Done with the region's slots: a later set-up may take them. (A start in flight is
        // abandoned: this rank reads nothing more, and its own vector stays for the others
        // until they are done with the generation too.)
        self.region().done(self.me, self.generation);
    }
}

impl Bridge {
    /// Whether a persistent allreduce of `len` elements of `T` with `algorithm` folds through
    /// the node (module docs). The same on every rank: it depends on what the ranks agreed and
    /// on the layout.
    pub(crate) fn node_folds<T>(
        &self,
        len: usize,
        algorithm: Algorithm,
        commutative: bool,
    ) -> bool {
        if self.folds.is_none() {
            return false;
        }
        let between_node = matches!(
            crate::process::collectives::allreduce::between_allreduce(algorithm),
            Algorithm::Auto | Algorithm::Direct
        );
        let grouping = match algorithm {
            Algorithm::Ring { .. } if !commutative => false,
            _ => between_node || self.layout.processes() <= 2,
        };
        folded::fits::<T>(len)
            && self.layout.most_threads() <= 2
            && grouping
            && self
                .folds
                .as_ref()
                .is_some_and(|f| folds::fits(self.made_in(f.run())))
    }

    /// How many persistent allreduces this link has set up through the node's share in run
    /// `run` (runs are numbered from 1).
    fn made_in(&self, run: u64) -> u64 {
        match self.folds_made.get() {
            (r, n) if r == run => n,
            _ => 0,
        }
    }

    /// Sets up a persistent allreduce that [`Bridge::node_folds`]: takes the run's next region
    /// of the node's share, once no rank uses another generation of it (`process::node::folds`).
    pub(crate) fn node_folded(&self) -> Result<NodeFold> {
        const OP: &str = "allreduce_init";
        let folds = self.folds.clone().expect("a node that folds");
        // One node holds every process: the node's ranks are the world's.
        let me = self.rank();
        let run = folds.run();
        let n = self.made_in(run);
        self.folds_made.set((run, n + 1));
        let region = (n % REGIONS as u64) as usize;
        let generation = folds::generation(run, n);
        let slots = folds.slots(region);
        let since = folds::first_generation(folds.run());
        let r = Region::new(folds.lines(region), &slots, since);
        if r.held_apart(me, generation) {
            return Err(self.fail(Error::InvalidArgument {
                rank: me,
                op: OP,
                what: format!(
                    "more than {REGIONS} persistent allreduces of at most {} bytes alive (or \
                     forgotten with mem::forget) at once on this rank in this run",
                    crate::shm::SLOT_BYTES
                ),
            }));
        }
        self.poll_until(OP, r.busy(generation).unwrap_or(me), || {
            Ok(r.busy(generation).is_none())
        })?;
        r.take(me, generation);
        Ok(NodeFold {
            folds,
            slots,
            region,
            generation,
            me,
            k: 0,
            in_flight: false,
        })
    }

    /// Starts `f` with this rank's `buf` (of the agreed length).
    pub(crate) fn node_fold_start<T: Copy>(&self, f: &mut NodeFold, buf: &[T]) -> Result<()> {
        self.local.member().enter("allreduce")?;
        debug_assert!(!f.in_flight && folded::fits::<T>(buf.len()));
        f.k += 1;
        // SAFETY: rank `me` publishes into its own slots only; `buf` fits them; its previous
        // start has completed (or it has none), so every rank has read the start before it
        // (`Slots::publish`), and no rank reads an earlier generation of the region any more
        // (none used one when `node_folded` returned).
        unsafe {
            f.slots
                .publish(f.me, f.k, &[(buf.as_ptr().cast(), size_of_val(buf))])
        };
        f.in_flight = true;
        Ok(())
    }

    /// Whether `f`'s start in flight can complete without waiting; the error that would end
    /// its wait, if one would (the process waited for ended or failed its run, this run failed,
    /// another process's failure notice).
    pub(crate) fn node_fold_ready(&self, f: &NodeFold) -> Result<bool> {
        let Some(i) = f.pending().filter(|_| f.in_flight) else {
            return Ok(true);
        };
        let stalled = self.stalled(f, i, f.folds.run(), true);
        match stalled.or_else(|| self.given_up("allreduce", i, &Started::new(None))) {
            Some(e) => Err(e),
            None => Ok(false),
        }
    }

    /// Why a wait of `f` for rank `i`'s start in run `run` cannot end, if it cannot: `i`'s
    /// process ended the run without it, or failed its run, or (if `look`: a system call) no
    /// longer exists.
    fn stalled(&self, f: &NodeFold, i: usize, run: u64, look: bool) -> Option<Error> {
        const OP: &str = "allreduce";
        let q = self.layout.locate(i).0;
        // Its process ended the run, and (looked at after that) has not stored it.
        if let Some(failed) = f.folds.ended(q, run).filter(|_| f.pending() == Some(i)) {
            if !failed {
                return Some(self.fail(Error::PeerExited {
                    rank: self.rank(),
                    peer: i,
                    op: OP,
                }));
            }
            // Its run failed: as if its failure notice had come.
            let relayed = self.relay.as_ref().map(|r| r.channels());
            if let Some(ch) = self.channels.as_ref().or(relayed) {
                ch.notices().record(q);
            }
            return Some(self.fail(Error::ProcessFailed {
                rank: self.rank(),
                op: OP,
                process: q,
            }));
        }
        let pid = f.folds.pid(q);
        (look && pid != 0 && !process_exists(pid)).then(|| {
            self.fail(Error::ProcessFailed {
                rank: self.rank(),
                op: OP,
                process: q,
            })
        })
    }

    /// Completes `f`'s start in flight, if any, into `buf` (the buffer it started with).
    pub(crate) fn node_fold_finish<T: Copy, O: Op<T> + ?Sized>(
        &self,
        f: &mut NodeFold,
        buf: &mut [T],
        op: &O,
    ) -> Result<()> {
        const OP: &str = "allreduce";
        if !f.in_flight {
            return Ok(());
        }
        f.in_flight = false;
        let run = f.folds.run();
        let mut polls = 0u32;
        if let Some(peer) = f.pending() {
            self.poll_until(OP, peer, || {
                let Some(i) = f.pending() else {
                    return Ok(true);
                };
                polls = polls.wrapping_add(1);
                match self.stalled(f, i, run, polls.is_multiple_of(1024)) {
                    Some(e) => Err(e),
                    None => Ok(false),
                }
            })?;
        }
        // Each process's vectors left to right, then the processes' results left to right.
        let len = buf.len();
        // Room for one process's result: `SLOT_BYTES` ≥ `len` `T`s, aligned to 8.
        let mut room = [MaybeUninit::<u64>::uninit(); crate::shm::SLOT_BYTES / 8];
        // SAFETY: `room` is large and aligned enough (above), and `combine` writes each of its
        // `T`s (copies of a rank's valid ones) before anything reads it.
        let partial = unsafe { std::slice::from_raw_parts_mut(room.as_mut_ptr().cast::<T>(), len) };
        for q in 0..self.layout.processes() {
            let ranks = self.layout.offset(q)..self.layout.offset(q) + self.layout.threads(q);
            // SAFETY: every rank took this generation and stored start `f.k`, and this rank
            // publishes its next start only after this returns; every vector is `len` `T`s
            // (the agreed length), which fit the slots (`node_folds`).
            unsafe {
                if q == 0 {
                    folded::combine(&f.slots, ranks, f.k, buf, op);
                } else {
                    folded::combine(&f.slots, ranks, f.k, partial, op);
                    op.fold_right(buf, partial);
                }
            }
        }
        Ok(())
    }
}
