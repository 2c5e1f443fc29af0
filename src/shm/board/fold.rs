//! The direct reductions' inner loops over the inputs the ranks published on the board: the
//! chunk they work in, and the folds of a session ([`Session::fold_inputs`],
//! [`Session::fold_own`]).

use super::Session;

/// Elements of `T` per chunk of the direct reductions' loops: 4 KiB, so that the accumulator
/// and the operand being folded into it stay in L1 while the p operands stream past.
pub(crate) fn fold_chunk<T>() -> usize {
    ((4 << 10) / std::mem::size_of::<T>().max(1)).max(1)
}

impl Session<'_> {
    /// Folds the published inputs of ranks `from .. p`, elements `at .. at + acc.len()` of
    /// each, into `acc` in rank order (`acc ⊙= x_k`, k ascending), `acc` holding the
    /// combination of the ranks below `from` already; with `from == 0` it first takes rank 0's
    /// elements, so `acc` ends with x₀ ⊙ … ⊙ x_{p−1}. The direct reductions' inner loop. An op
    /// that is not pairwise (`Op::pairwise`) beyond two ranks reads every input, rank 0's
    /// included, so `from` may then be 0 or 1 only.
    ///
    /// # Safety
    ///
    /// The session passed phase 1 and is open; every rank from `from` (0 if `from` is 0) on
    /// published an input of at least `at + acc.len()` elements of `T`, which nobody writes
    /// during the call; `acc` overlaps none of those elements.
    pub(crate) unsafe fn fold_inputs<T: Copy, O: crate::op::Op<T>>(
        &self,
        at: usize,
        acc: &mut [T],
        from: usize,
        op: &O,
    ) {
        let len = acc.len();
        // SAFETY: by the caller's promise rank k's input holds `at + acc.len()` elements of
        // `T`, published before its `arrived` store (acquired in phase 1) and not written or
        // freed until this rank's `done`; `acc` is a distinct borrow.
        let input = |k: usize| unsafe {
            std::slice::from_raw_parts(self.call(k).input.cast::<T>().add(at), len)
        };
        let whole = !op.pairwise() && self.comm.size() > 2;
        debug_assert!(from <= 1 || !whole, "a partial result of a non-pairwise op");
        if whole {
            // Every operand of an element at once (`Op::pairwise`; two are combined as they
            // are, one combining being the whole reduction).
            op.fold_all(self.comm.size(), &input, acc);
            return;
        }
        let from = if from == 0 {
            crate::copy::copy_slice(&mut *acc, input(0));
            1
        } else {
            from
        };
        for k in from..self.comm.size() {
            op.fold_right(acc, input(k));
        }
    }

    /// Folds the inputs of `ranks` (in that order; this rank is `ranks[pos]`), elements
    /// `at .. at + len` of each, and returns where the result is: this rank's own output
    /// chunk when accumulating there loses no operand (out of place; in place as the first
    /// of `ranks`, whose chunk holds the first operand, or as the second, folding the first
    /// in from the left), else `scratch`. The direct allreduces' inner loop.
    ///
    /// # Safety
    ///
    /// The session passed phase 1 and is open; every rank of `ranks` published an input,
    /// and this rank an output, of at least `at + len` elements of `T`; until this rank
    /// writes them elsewhere, nobody else reads or writes those elements of this rank's
    /// output or writes those of the inputs. `out_of_place` says whether this rank's input
    /// is not its output.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn fold_own<T: Copy, O: crate::op::Op<T>>(
        &self,
        ranks: &[usize],
        pos: usize,
        out_of_place: bool,
        at: usize,
        len: usize,
        scratch: &mut Vec<T>,
        op: &O,
    ) -> *const T {
        // SAFETY: by the caller's promise each input holds `at + len` elements of `T`,
        // published before its `arrived` store (acquired in phase 1) and not written during
        // the fold; inputs may alias each other (shared) but never another rank's output, and
        // this rank's own input is never read through `x` while `own` is borrowed mutably
        // below (it is skipped as already folded).
        let x = |i: usize| unsafe {
            std::slice::from_raw_parts(self.call(ranks[i]).input.cast::<T>().add(at), len)
        };
        if !op.pairwise() && ranks.len() > 2 {
            // Every operand of an element at once (`Op::pairwise`; two are combined as they
            // are), into the own output only where it holds no operand.
            let dest = if out_of_place {
                // SAFETY: this rank's output holds `at + len` elements nobody else touches
                // now, and is no rank's input (out of place).
                unsafe {
                    std::slice::from_raw_parts_mut(
                        self.call(self.comm.rank()).output.cast::<T>().add(at),
                        len,
                    )
                }
            } else {
                // Only its length matters: `fold_all` writes every element.
                scratch.truncate(len);
                let have = scratch.len();
                crate::copy::extend(scratch, &x(0)[have..]);
                &mut scratch[..]
            };
            op.fold_all(ranks.len(), &x, dest);
            return dest.as_ptr();
        }
        if out_of_place || pos <= 1 {
            // SAFETY: this rank's output holds `at + len` elements nobody else touches now.
            let own = unsafe { self.call(self.comm.rank()).output.cast::<T>().add(at) };
            // SAFETY: as just said; no other reference to these elements exists meanwhile.
            let a = unsafe { std::slice::from_raw_parts_mut(own, len) };
            let first = if out_of_place {
                crate::copy::copy_slice(&mut *a, x(0));
                1
            } else if pos == 1 {
                op.fold_left(x(0), a);
                2
            } else {
                1
            };
            for i in first..ranks.len() {
                op.fold_right(a, x(i));
            }
            own
        } else {
            scratch.clear();
            crate::copy::extend(scratch, x(0));
            for i in 1..ranks.len() {
                op.fold_right(scratch, x(i));
            }
            scratch.as_ptr()
        }
    }
}
