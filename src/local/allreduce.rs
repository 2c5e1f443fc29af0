//! `Comm::allreduce` and its variants: validation and dispatch; the schedules are in
//! `algorithms::allreduce`.

use super::Local;
use crate::algorithms;
use crate::algorithms::allreduce::folded::blocking;
use crate::algorithms::allreduce::Schedule;
use crate::algorithms::check::{self, Call};
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::EAGER_MAX;
use crate::mailbox::{op_word, Elem, Kind};
use crate::op::Op;
use crate::select::{self, Algorithm, Decision, Flat};
use crate::transport::Permuted;

impl Local {
    /// `Comm::allreduce` with a chosen algorithm (every rank must choose the same). An
    /// algorithm that cannot keep a non-commutative op's rank order (`Ring`) returns
    /// [`Error::Unsupported`] instead of a wrong answer.
    pub(crate) fn allreduce_with<T, O>(
        &self,
        buf: &mut [T],
        op: O,
        algorithm: Algorithm,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.allreduce_impl(None, buf, op, algorithm)
    }

    /// `Auto`'s flat allreduce for `bytes` per rank: the team's tables, else the fixed rules.
    fn allreduce_auto(
        &self,
        bytes: usize,
        commutative: bool,
    ) -> Flat<algorithms::allreduce::Schedule> {
        self.tuned(Collective::Allreduce, bytes, commutative, || {
            select::choose_allreduce(self.size(), bytes, commutative)
        })
    }

    /// The algorithm an allreduce of `bytes` per rank with `algorithm` runs, and how it runs if
    /// it is flat (`None`: a hierarchy): decided from what every rank knows alike, before the
    /// call check and without messages.
    pub(super) fn allreduce_choice(
        &self,
        bytes: usize,
        commutative: bool,
        algorithm: Algorithm,
    ) -> (Algorithm, Option<Flat<algorithms::allreduce::Schedule>>) {
        let auto = || self.allreduce_auto(bytes, commutative);
        let levels = !self.hierarchy_plan(!commutative).levels.is_empty();
        match algorithm {
            // Across L3 groups or packages, with a core per rank, the hierarchy for long
            // vectors (`select::prefer_hierarchy`); decided from the plan, before the check.
            // `Native` (MPI's own collective) is `Auto` between threads.
            Algorithm::Auto | Algorithm::Native
                if levels
                    && select::prefer_hierarchy(bytes, self.run().ranks.policy.oversubscribed) =>
            {
                self.chose(Algorithm::HierarchicalDirect);
                (Algorithm::HierarchicalDirect, None)
            }
            // A hierarchy with something to combine. (One with nothing, one group or for a
            // non-commutative op groups interleaved rank by rank, runs `Auto`'s flat choice
            // below. The plan needs no messages and is the same on every rank, so this is
            // decided here, before the call check, as `Auto` itself is: one check, not two.)
            Algorithm::Hierarchical { .. } | Algorithm::HierarchicalDirect if levels => {
                (algorithm, None)
            }
            chosen => match chosen.flat() {
                Some(flat) => (chosen, Some(flat)),
                None => {
                    let flat = auto();
                    (flat.alg(), Some(flat))
                }
            },
        }
    }

    /// Whether a persistent allreduce of `len` elements of `T` with `algorithm` runs folded on
    /// slots (`algorithms::allreduce::folded`) and still gives the blocking call's bits: it
    /// fits the slots, and the algorithm is `Linear` (whose order the fold keeps), or `Auto`
    /// choosing `Linear`, or any at p ≤ 2 (where every algorithm computes x₀ ⊙ x₁).
    pub(crate) fn folds<T>(&self, len: usize, algorithm: Algorithm, commutative: bool) -> bool {
        if !algorithms::allreduce::folded::fits::<T>(len) {
            return false;
        }
        let bytes = len * std::mem::size_of::<T>();
        match algorithm {
            Algorithm::Ring { .. } if !commutative => false,
            _ if self.size() <= 2 => true,
            Algorithm::Linear => true,
            Algorithm::Auto => {
                self.allreduce_choice(bytes, commutative, algorithm).0 == Algorithm::Linear
            }
            _ => false,
        }
    }

    /// The allreduce behind every entry point: `send` is the input when out of place.
    fn allreduce_impl<T, O>(
        &self,
        send: Option<&[T]>,
        buf: &mut [T],
        op: O,
        algorithm: Algorithm,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.enter_call("allreduce")?;
        let (alg, flat) =
            self.allreduce_choice(std::mem::size_of_val(buf), op.is_commutative(), algorithm);
        // `Linear` on a vector that fits the slots: one arrival and one wait per rank, with the
        // call check in the same cache lines (`folded::blocking`).
        if matches!(flat, Some(Flat::Schedule(Schedule::Linear))) && blocking::fits::<T>(buf.len())
        {
            let fold = self.member().next_fold(Kind::Coll(Collective::Allreduce));
            let call = Call::of::<T, _>("allreduce", alg, buf.len()).with_op(&op);
            return blocking::allreduce(self.member(), fold, &call, send, buf, &op);
        }
        let tag = self.next_tag(Kind::Coll(Collective::Allreduce));
        if matches!(alg, Algorithm::Ring { .. }) && !op.is_commutative() {
            return Err(self.fail(Error::Unsupported {
                rank: self.rank(),
                op: "allreduce",
                what: format!(
                    "the {} algorithm reorders operands and cannot honour a non-commutative \
                     op; use linear, chain, binomial, recursive-doubling or rabenseifner",
                    alg.name()
                ),
            }));
        }
        let t = self.coll("allreduce");
        // Only the pipelined algorithms and the ring's pieces have a block; the others pass 0
        // (the agreement compares it too) and skip the lemma's arithmetic.
        let block = if let Algorithm::Hierarchical { segment } = alg {
            // The segment is compared by the check too.
            crate::hierarchy::segment_elements(segment, std::mem::size_of::<T>())
        } else if alg.has_block() {
            let costs = self.costs();
            alg.block_elements(self.size(), buf.len(), std::mem::size_of::<T>(), costs)
        } else {
            0
        };
        // At p = 2, recursive doubling is one exchange of the whole vector, and its message
        // carries what the check compares: the algorithm (tag variant), element type and
        // length, all checked by the receiving mailbox. Every other choice starts with the
        // check's own exchange, whose message has another tag, so either rank's first receive
        // meets the other's first message and a disagreement is an error on both; the check
        // would only double the latency of the shortest allreduce.
        if !(self.size() == 2 && alg == Algorithm::RecursiveDoubling) {
            check::agree(
                &t,
                tag,
                &Call::of::<T, _>("allreduce", alg, buf.len())
                    .in_blocks(block)
                    .with_op(&op),
                false,
            )?;
        }
        let tag = tag.with_variant(alg.id()).with_op(op_word(op.identity()));
        // Out of place, the schedules and the compositions run in place on a copy; the
        // single-copy algorithms read `send` where it is.
        let in_place = |buf: &mut [T]| {
            if let Some(send) = send {
                crate::copy::copy_slice(buf, send);
            }
        };
        match (flat, alg) {
            (Some(Flat::Schedule(s)), _) => {
                in_place(buf);
                algorithms::allreduce::run(&t, buf, &op, s, block, tag)
            }
            (Some(Flat::Direct), _) => {
                algorithms::allreduce::direct::direct(self.member(), send, buf, &op, tag)
            }
            (None, Algorithm::Hierarchical { .. }) => {
                in_place(buf);
                self.hierarchical_allreduce(buf, &op, block)
            }
            // The single-copy hierarchy. Short vectors: recursive doubling over the ranks in
            // group order, whose first rounds pair ranks of one group and whose last cross
            // between groups (the plan for a non-commutative op is the ordered one, whose
            // group order is rank order).
            (None, _) if std::mem::size_of_val(buf) <= EAGER_MAX => {
                in_place(buf);
                let (order, place) = self.hierarchy_plan(!op.is_commutative()).order();
                let perm = Permuted::new(&t, order, place);
                let rd = algorithms::allreduce::Schedule::RecursiveDoubling;
                algorithms::allreduce::run(&perm, buf, &op, rd, 0, tag)
            }
            (None, _) => {
                let groups = self.hierarchy_plan(!op.is_commutative()).covered();
                crate::hierarchy::direct::allreduce(self.member(), send, buf, &op, groups, tag)
            }
        }
    }

    /// `Comm::allreduce` out of place: `send` is left untouched and the result goes to
    /// `recv`, which must have the same length.
    pub(crate) fn allreduce_into<T, O>(&self, send: &[T], recv: &mut [T], op: O) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.allreduce_impl(Some(send), recv, op, Algorithm::Auto)
    }
}

impl Local {
    /// `Algorithm::Hierarchical` after the call check, through the cached hierarchy (whose
    /// plan has levels, and keeps rank order if the op is not commutative: `allreduce_impl`
    /// sent the other cases to `Auto`), in segments of `segment` elements.
    fn hierarchical_allreduce<T, O>(&self, buf: &mut [T], op: &O, segment: usize) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        let h = self.hierarchy(!op.is_commutative())?;
        debug_assert!(op.is_commutative() || h.contiguous());
        h.allreduce(buf, op, segment)
    }
}
