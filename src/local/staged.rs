//! The stages of the hierarchical collectives: the flat reduce, broadcast and allreduce of
//! `Auto`'s choice on a sub-communicator of the hierarchy, without a call check of their own.
//!
//! A hierarchical collective checks its call once, on the whole communicator, before any stage
//! runs (`check::agree`): every rank then runs the same stages, with the same lengths, element
//! type, roots and algorithms, in the same order on every sub-communicator, because they all
//! follow from the checked call and from the plan that every rank derives alike. A second
//! check per stage would only add a synchronisation round to each stage (with segments, to
//! each segment of each stage). Failures inside a stage (a panicking op, a timeout, a peer
//! that exits) still fail the run, which every waiting rank sees: the sub-communicators share
//! the run's state.
//!
//! The algorithms are the flat `Auto` choices (never a hierarchical one: a stage runs within
//! one level).

use super::Local;
use crate::algorithms;
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{Elem, Kind};
use crate::op::Op;
use crate::select::{self, Decision, Flat};

impl Local {
    /// A reduce of `buf` to `root` with `Auto`'s flat algorithm, without a call check (see
    /// the module documentation: the caller's whole-communicator check covers it).
    pub(crate) fn stage_reduce<T: Elem, O: Op<T>>(
        &self,
        buf: &mut [T],
        op: &O,
        root: usize,
    ) -> Result<()> {
        self.enter_call("reduce")?;
        let tag = self.next_tag(Kind::Coll(Collective::Reduce));
        if self.size() == 1 {
            return Ok(());
        }
        let bytes = std::mem::size_of_val(buf);
        let flat = self.tuned(Collective::Reduce, bytes, op.is_commutative(), || {
            select::choose_reduce(self.size(), bytes, self.run().ranks.policy.oversubscribed)
        });
        let alg = flat.alg();
        let block = alg.block_elements(
            self.size(),
            buf.len(),
            std::mem::size_of::<T>(),
            self.costs(),
        );
        let tag = tag.with_variant(alg.id());
        match flat {
            Flat::Direct => algorithms::reduce::direct(self.member(), buf, op, root, tag),
            Flat::Schedule(s) => {
                algorithms::reduce::run(&self.coll("reduce"), buf, op, root, s, block, tag)
            }
        }
    }

    /// A broadcast of `buf` from `root` with `Auto`'s flat algorithm, without a call check.
    pub(crate) fn stage_broadcast<T: Elem>(&self, buf: &mut [T], root: usize) -> Result<()> {
        self.enter_call("broadcast")?;
        let tag = self.next_tag(Kind::Coll(Collective::Broadcast));
        if self.size() == 1 {
            return Ok(());
        }
        let bytes = std::mem::size_of_val(buf);
        let flat = self.tuned(Collective::Broadcast, bytes, true, || {
            select::choose_broadcast(self.size(), bytes)
        });
        let alg = flat.alg();
        let block = alg.block_elements(
            self.size(),
            buf.len(),
            std::mem::size_of::<T>(),
            self.costs(),
        );
        let tag = tag.with_variant(alg.id());
        match flat {
            Flat::Direct => algorithms::broadcast::direct(self.member(), buf, root, tag),
            Flat::Schedule(s) => {
                algorithms::broadcast::run(&self.coll("broadcast"), buf, root, s, block, tag)
            }
        }
    }

    /// An allreduce of `buf` with `Auto`'s flat algorithm, without a call check.
    pub(crate) fn stage_allreduce<T: Elem, O: Op<T>>(&self, buf: &mut [T], op: &O) -> Result<()> {
        self.enter_call("allreduce")?;
        let tag = self.next_tag(Kind::Coll(Collective::Allreduce));
        if self.size() == 1 {
            return Ok(());
        }
        let (bytes, commutative) = (std::mem::size_of_val(buf), op.is_commutative());
        let flat = self.tuned(Collective::Allreduce, bytes, commutative, || {
            select::choose_allreduce(self.size(), bytes, commutative)
        });
        let alg = flat.alg();
        let block = if alg.has_block() {
            alg.block_elements(
                self.size(),
                buf.len(),
                std::mem::size_of::<T>(),
                self.costs(),
            )
        } else {
            0
        };
        let tag = tag.with_variant(alg.id());
        match flat {
            Flat::Direct => {
                algorithms::allreduce::direct::direct(self.member(), None, buf, op, tag)
            }
            Flat::Schedule(s) => {
                algorithms::allreduce::run(&self.coll("allreduce"), buf, op, s, block, tag)
            }
        }
    }
}
