//! The rooted collectives `Comm::broadcast` and `Comm::reduce`: validation and dispatch; the
//! schedules are in `algorithms::broadcast` and `algorithms::reduce`.

use super::agree::Call;
use super::Comm;
use crate::algorithms;
use crate::error::Result;
use crate::op::Op;
use crate::select::{self, Broadcast, Reduce};
use crate::transport::Kind;
use crate::tuning::Collective;

impl Comm {
    /// Copies `buf` of rank `root` into `buf` on every other rank (`MPI_Bcast`). Every rank
    /// must pass the same root, length and element type; anything else is an error on every
    /// rank.
    pub fn broadcast<T>(&self, buf: &mut [T], root: usize) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        self.broadcast_with(buf, root, Broadcast::Auto)
    }

    /// [`Comm::broadcast`] with a chosen algorithm (every rank must choose the same).
    pub fn broadcast_with<T>(&self, buf: &mut [T], root: usize, algorithm: Broadcast) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        crate::comm::across_processes!(self, |b| b.broadcast(buf, root, algorithm));
        self.enter_call("broadcast")?;
        let tag = self.next_tag(Kind::Broadcast);
        self.check_root("broadcast", root)?;
        let auto = || {
            let bytes = std::mem::size_of_val(buf);
            self.tuned(Collective::Broadcast, bytes, true, || {
                select::choose_broadcast(self.size(), bytes)
            })
        };
        let alg = match algorithm {
            // Across L3 groups or packages, with a core per rank, the single-copy hierarchy
            // for long vectors, as the allreduce's `Auto` (`select::prefer_hierarchy`).
            // `Native` (MPI's own collective) is `Auto` between threads.
            Broadcast::Auto | Broadcast::Native
                if select::prefer_hierarchy(
                    std::mem::size_of_val(buf),
                    self.run().ranks.policy.oversubscribed,
                ) && !self.hierarchy_plan(false).levels.is_empty() =>
            {
                self.chose(Broadcast::HierarchicalDirect);
                Broadcast::HierarchicalDirect
            }
            Broadcast::Auto | Broadcast::Native => auto(),
            // A hierarchy with one group runs `Auto`'s flat choice, decided here from the plan
            // (no messages, the same on every rank) before the call check, as the allreduce
            // does: one check, not two.
            Broadcast::Hierarchical if self.hierarchy_plan(false).levels.is_empty() => auto(),
            Broadcast::Hierarchical => {
                let call =
                    Call::of::<T, _>("broadcast", Broadcast::Hierarchical, buf.len()).at(root);
                // The dissemination form: the root needs nothing from the others, so every
                // rank must know that every rank agreed before any stage starts.
                self.agree(&self.coll("broadcast"), tag, &call, true)?;
                return self.hierarchy(false)?.broadcast(self, buf, root);
            }
            Broadcast::HierarchicalDirect if self.hierarchy_plan(false).levels.is_empty() => auto(),
            chosen => chosen,
        };
        if alg == Broadcast::HierarchicalDirect {
            let call = Call::of::<T, _>("broadcast", alg, buf.len()).at(root);
            // The dissemination form, as every broadcast's: the root needs nothing from the
            // others.
            self.agree(&self.coll("broadcast"), tag, &call, true)?;
            let plan = self.hierarchy_plan(false);
            let tag = tag.with_variant(alg.id());
            return crate::hierarchy::direct::broadcast(self, buf, root, plan, tag);
        }
        let costs = self.costs();
        let block = alg.block_elements(self.size(), buf.len(), std::mem::size_of::<T>(), costs);
        let t = self.coll("broadcast");
        let call = Call::of::<T, _>("broadcast", alg, buf.len())
            .at(root)
            .in_blocks(block);
        if self.size() == 2 && alg == Broadcast::Binomial {
            let data = tag.with_variant(alg.id());
            return self.broadcast_pair(&t, (tag, data), &call, buf, root);
        }
        self.agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(alg.id());
        match alg {
            Broadcast::Direct => algorithms::broadcast::direct(self, buf, root, tag),
            _ => algorithms::broadcast::run(&t, buf, root, alg, block, tag),
        }
    }

    /// Combines every rank's `buf` element-wise with `op` in rank order
    /// (x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}, whatever the root) and leaves the result in `buf` on rank
    /// `root` (`MPI_Reduce` with `MPI_IN_PLACE` at the root); the other ranks' `buf` is left
    /// unchanged. Every rank must pass the same root, length, element type and op.
    pub fn reduce<T, O>(&self, buf: &mut [T], op: O, root: usize) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
        O: Op<T>,
    {
        self.reduce_with(buf, op, root, Reduce::Auto)
    }

    /// [`Comm::reduce`] with a chosen algorithm (every rank must choose the same).
    pub fn reduce_with<T, O>(
        &self,
        buf: &mut [T],
        op: O,
        root: usize,
        algorithm: Reduce,
    ) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
        O: Op<T>,
    {
        crate::comm::across_processes!(self, |b| b.reduce(buf, &op, root, algorithm));
        // A hierarchy with nothing to combine (one group, or for a non-commutative op groups
        // interleaved rank by rank) runs `Auto`'s flat choice, decided here from the plan (no
        // messages, the same on every rank) before the call check, as the allreduce does.
        let ordered = !op.is_commutative();
        let hierarchical = matches!(algorithm, Reduce::Hierarchical | Reduce::HierarchicalDirect);
        if !hierarchical || self.hierarchy_plan(ordered).levels.is_empty() {
            return self.reduce_flat(buf, &op, root, algorithm);
        }
        self.enter_call("reduce")?;
        let tag = self.next_tag(Kind::Reduce);
        self.check_root("reduce", root)?;
        let alg = algorithm;
        let t = self.coll("reduce");
        if alg == Reduce::HierarchicalDirect {
            // The one-hop form, as the flat reduces': the call ends on the board (or with the
            // binomial tree's acknowledgements) only once every rank took part.
            let call = Call::of::<T, _>("reduce", alg, buf.len()).at(root);
            self.agree(&t, tag, &call, false)?;
            let plan = self.hierarchy_plan(ordered);
            let tag = tag.with_variant(alg.id());
            return crate::hierarchy::direct::reduce(self, buf, &op, root, plan, tag);
        }
        // The dissemination form: a rank whose part ends early (a group's non-leader, once its
        // group's reduce is acknowledged) must know that every rank agreed.
        self.agree(
            &t,
            tag,
            &Call::of::<T, _>("reduce", alg, buf.len()).at(root),
            true,
        )?;
        let h = self.hierarchy(ordered)?;
        debug_assert!(!ordered || h.contiguous());
        h.reduce(self, &t, buf, &op, root, tag.with_variant(alg.id()))
    }

    /// The flat reduce behind [`Comm::reduce_with`] (the hierarchical ones are `Auto` here).
    pub(crate) fn reduce_flat<T, O>(
        &self,
        buf: &mut [T],
        op: &O,
        root: usize,
        algorithm: Reduce,
    ) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
        O: Op<T>,
    {
        self.enter_call("reduce")?;
        let tag = self.next_tag(Kind::Reduce);
        self.check_root("reduce", root)?;
        let alg = match algorithm {
            // `Native` (MPI's own collective) is `Auto` between threads.
            Reduce::Auto | Reduce::Hierarchical | Reduce::HierarchicalDirect | Reduce::Native => {
                let bytes = std::mem::size_of_val(buf);
                self.tuned(Collective::Reduce, bytes, op.is_commutative(), || {
                    select::choose_reduce(
                        self.size(),
                        bytes,
                        self.run().ranks.policy.oversubscribed,
                    )
                })
            }
            chosen => chosen,
        };
        let costs = self.costs();
        let block = alg.block_elements(self.size(), buf.len(), std::mem::size_of::<T>(), costs);
        let t = self.coll("reduce");
        let call = Call::of::<T, _>("reduce", alg, buf.len())
            .at(root)
            .in_blocks(block);
        // The one-hop check is enough here: the schedules end with an acknowledgement from the
        // root back along every edge, which comes only if every rank passed its check and
        // the root combined everyone's data (`algorithms::reduce`); a failure during the
        // schedule (a panicking op) then fails every rank too.
        if self.size() == 2 && alg == Reduce::Binomial {
            let data = tag.with_variant(alg.id());
            return self.reduce_pair(&t, (tag, data), &call, buf, op, root);
        }
        self.agree(&t, tag, &call, false)?;
        let tag = tag.with_variant(alg.id());
        match alg {
            Reduce::Direct => algorithms::reduce::direct(self, buf, op, root, tag),
            _ => algorithms::reduce::run(&t, buf, op, root, alg, block, tag),
        }
    }
}
