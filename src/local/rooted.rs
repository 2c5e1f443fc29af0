//! The rooted collectives `Comm::broadcast` and `Comm::reduce`: validation and dispatch; the
//! schedules are in `algorithms::broadcast` and `algorithms::reduce`.

use super::Local;
use crate::algorithms;
use crate::algorithms::check::{self, Call};
use crate::algorithms::pair;
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{op_word, Elem, Kind};
use crate::op::Op;
use crate::select::{self, Broadcast, Decision, Flat, Reduce};

impl Local {
    /// `Comm::broadcast` with a chosen algorithm (every rank must choose the same).
    pub(crate) fn broadcast_with<T>(
        &self,
        buf: &mut [T],
        root: usize,
        algorithm: Broadcast,
    ) -> Result<()>
    where
        T: Elem,
    {
        self.enter_call("broadcast")?;
        let tag = self.next_tag(Kind::Coll(Collective::Broadcast));
        let levels = !self.hierarchy_plan(false).levels.is_empty();
        let hierarchy = match algorithm {
            // Across L3 groups or packages, with a core per rank, the single-copy hierarchy
            // for long vectors, as the allreduce's `Auto` (`select::prefer_hierarchy`).
            Broadcast::Auto | Broadcast::Native
                if levels
                    && select::prefer_hierarchy(
                        std::mem::size_of_val(buf),
                        self.run().ranks.policy.oversubscribed,
                    ) =>
            {
                self.chose(Broadcast::HierarchicalDirect);
                Some(Broadcast::HierarchicalDirect)
            }
            // (A hierarchy with one group runs `Auto`'s flat choice, decided here from the
            // plan, no messages and the same on every rank, before the call check, as the
            // allreduce does: one check, not two.)
            Broadcast::Hierarchical | Broadcast::HierarchicalDirect if levels => Some(algorithm),
            _ => None,
        };
        if let Some(alg) = hierarchy {
            let call = Call::of::<T, _>("broadcast", alg, buf.len()).at(root);
            // The dissemination form: the root needs nothing from the others, so every rank
            // must know that every rank agreed before any stage starts.
            check::agree(&self.coll("broadcast"), tag, &call, true)?;
            if alg == Broadcast::Hierarchical {
                return self.hierarchy(false)?.broadcast(self, buf, root);
            }
            let plan = self.hierarchy_plan(false);
            let tag = tag.with_variant(alg.id());
            return crate::hierarchy::direct::broadcast(self.member(), buf, root, plan, tag);
        }
        // `Native` (MPI's own collective) is `Auto` between threads.
        let (alg, flat) = match algorithm.flat() {
            Some(flat) => (algorithm, flat),
            None => {
                let bytes = std::mem::size_of_val(buf);
                let flat = self.tuned(Collective::Broadcast, bytes, true, || {
                    select::choose_broadcast(self.size(), bytes)
                });
                (flat.alg(), flat)
            }
        };
        let costs = self.costs();
        let block = alg.block_elements(self.size(), buf.len(), std::mem::size_of::<T>(), costs);
        let t = self.coll("broadcast");
        let call = Call::of::<T, _>("broadcast", alg, buf.len())
            .at(root)
            .in_blocks(block);
        if self.size() == 2 && alg == Broadcast::Binomial {
            let data = tag.with_variant(alg.id());
            return pair::broadcast_pair(&t, (tag, data), &call, buf, root);
        }
        check::agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(alg.id());
        match flat {
            Flat::Direct => algorithms::broadcast::direct(self.member(), buf, root, tag),
            Flat::Schedule(s) => algorithms::broadcast::run(&t, buf, root, s, block, tag),
        }
    }

    /// `Comm::reduce` with a chosen algorithm (every rank must choose the same).
    pub(crate) fn reduce_with<T, O>(
        &self,
        buf: &mut [T],
        op: O,
        root: usize,
        algorithm: Reduce,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        // A hierarchy with nothing to combine (one group, or for a non-commutative op groups
        // interleaved rank by rank) runs `Auto`'s flat choice, decided here from the plan (no
        // messages, the same on every rank) before the call check, as the allreduce does.
        let ordered = !op.is_commutative();
        let hierarchical = matches!(algorithm, Reduce::Hierarchical | Reduce::HierarchicalDirect);
        if !hierarchical || self.hierarchy_plan(ordered).levels.is_empty() {
            return self.reduce_flat(buf, &op, root, algorithm);
        }
        self.enter_call("reduce")?;
        let tag = self.next_tag(Kind::Coll(Collective::Reduce));
        let alg = algorithm;
        let t = self.coll("reduce");
        if alg == Reduce::HierarchicalDirect {
            // The one-hop form, as the flat reduces': the call ends on the board (or with the
            // binomial tree's acknowledgements) only once every rank took part.
            let call = Call::of::<T, _>("reduce", alg, buf.len())
                .at(root)
                .with_op(&op);
            check::agree(&t, tag, &call, false)?;
            let plan = self.hierarchy_plan(ordered);
            let tag = tag.with_variant(alg.id()).with_op(op_word(op.identity()));
            return crate::hierarchy::direct::reduce(self.member(), buf, &op, root, plan, tag);
        }
        // The dissemination form: a rank whose part ends early (a group's non-leader, once its
        // group's reduce is acknowledged) must know that every rank agreed.
        check::agree(
            &t,
            tag,
            &Call::of::<T, _>("reduce", alg, buf.len())
                .at(root)
                .with_op(&op),
            true,
        )?;
        let h = self.hierarchy(ordered)?;
        debug_assert!(!ordered || h.contiguous());
        h.reduce(
            self,
            &t,
            buf,
            &op,
            root,
            tag.with_variant(alg.id()).with_op(op_word(op.identity())),
        )
    }

    /// The flat reduce behind `Comm::reduce_with` (the hierarchical ones are `Auto` here).
    pub(crate) fn reduce_flat<T, O>(
        &self,
        buf: &mut [T],
        op: &O,
        root: usize,
        algorithm: Reduce,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.enter_call("reduce")?;
        let tag = self.next_tag(Kind::Coll(Collective::Reduce));
        // `Native` (MPI's own collective) is `Auto` between threads, and so are the
        // hierarchical ones here (`reduce_with` runs those with something to combine).
        let (alg, flat) = match algorithm.flat() {
            Some(flat) => (algorithm, flat),
            None => {
                let bytes = std::mem::size_of_val(buf);
                let flat = self.tuned(Collective::Reduce, bytes, op.is_commutative(), || {
                    let oversubscribed = self.run().ranks.policy.oversubscribed;
                    select::choose_reduce(self.size(), bytes, oversubscribed)
                });
                (flat.alg(), flat)
            }
        };
        let costs = self.costs();
        let block = alg.block_elements(self.size(), buf.len(), std::mem::size_of::<T>(), costs);
        let t = self.coll("reduce");
        let call = Call::of::<T, _>("reduce", alg, buf.len())
            .at(root)
            .in_blocks(block)
            .with_op(op);
        // The one-hop check is enough here: the schedules end with an acknowledgement from the
        // root back along every edge, which comes only if every rank passed its check and
        // the root combined everyone's data (`algorithms::reduce`); a failure during the
        // schedule (a panicking op) then fails every rank too.
        if self.size() == 2 && alg == Reduce::Binomial {
            let data = tag.with_variant(alg.id()).with_op(op_word(op.identity()));
            return pair::reduce_pair(&t, (tag, data), &call, buf, op, root);
        }
        check::agree(&t, tag, &call, false)?;
        let tag = tag.with_variant(alg.id()).with_op(op_word(op.identity()));
        match flat {
            Flat::Direct => algorithms::reduce::direct(self.member(), buf, op, root, tag),
            Flat::Schedule(s) => algorithms::reduce::run(&t, buf, op, root, s, block, tag),
        }
    }
}
