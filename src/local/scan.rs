//! `Comm::scan` and `Comm::exscan` (`MPI_Scan`, `MPI_Exscan`, both in place): validation and
//! dispatch; the schedules are in `algorithms::scan`.
//!
//! **Scan or exscan in the call check.** Both run under `Kind::Coll(Collective::Scan)` and share algorithm ids,
//! so the call check must tell them apart itself: the algorithm word an exclusive scan agrees
//! on (and carries in its tags' variant) is the algorithm's id with [`EXCLUSIVE`] set. A rank
//! calling `scan` and one calling `exscan` therefore differ in the compared words and both
//! fail, naming the other's call ("… with the recursive-doubling (exclusive scan)
//! algorithm").

use super::Local;
use crate::algorithms;
use crate::algorithms::check::{self, Call};
use crate::algorithms::pair;
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{op_word, Elem, Kind};
use crate::op::Op;
use crate::select::{self, Decision, Scan};

/// The bit set in the algorithm word of an exclusive scan (the ids of [`Scan`] are small).
const EXCLUSIVE: u8 = 0x80;

/// The name of the algorithm word `word` of a scan call (an id, with [`EXCLUSIVE`] for an
/// exclusive scan), for error messages.
fn name_of(word: u8) -> Option<&'static str> {
    let alg = Scan::from_id(word & !EXCLUSIVE)?;
    Some(match (alg, word & EXCLUSIVE != 0) {
        (Scan::RecursiveDoubling, false) => "recursive-doubling (inclusive scan)",
        (Scan::RecursiveDoubling, true) => "recursive-doubling (exclusive scan)",
        (Scan::PipelinedTree { .. }, false) => "pipelined-tree (inclusive scan)",
        (Scan::PipelinedTree { .. }, true) => "pipelined-tree (exclusive scan)",
        (_, false) => "auto (inclusive scan)",
        (_, true) => "auto (exclusive scan)",
    })
}

impl Local {
    /// `Comm::scan` with a chosen algorithm (every rank must choose the same).
    pub(crate) fn scan_with<T, O>(&self, buf: &mut [T], op: O, algorithm: Scan) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.prefix("scan", buf, &op, algorithm, false)
    }

    /// `Comm::exscan` with a chosen algorithm (every rank must choose the same).
    pub(crate) fn exscan_with<T, O>(&self, buf: &mut [T], op: O, algorithm: Scan) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.prefix("exscan", buf, &op, algorithm, true)
    }

    /// The common body of the four entry points: choose, agree (dissemination form: rank 0
    /// of a scan needs nothing from the others, so a difference must reach every rank), run.
    fn prefix<T, O>(
        &self,
        name: &'static str,
        buf: &mut [T],
        op: &O,
        algorithm: Scan,
        exclusive: bool,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.enter_call(name)?;
        let tag = self.next_tag(Kind::Coll(Collective::Scan));
        let (alg, schedule) = match algorithm.schedule() {
            Some(schedule) => (algorithm, schedule),
            None => {
                let bytes = std::mem::size_of_val(buf);
                let schedule = self.tuned(Collective::Scan, bytes, op.is_commutative(), || {
                    select::choose_scan(self.size(), bytes)
                });
                (schedule.alg(), schedule)
            }
        };
        let costs = self.costs();
        let block = alg.block_elements(self.size(), buf.len(), std::mem::size_of::<T>(), costs);
        let word = alg.id() | if exclusive { EXCLUSIVE } else { 0 };
        let t = self.coll(name);
        let call = Call {
            alg: word,
            name_of,
            ..Call::of::<T, _>(name, alg, buf.len())
                .in_blocks(block)
                .with_op(op)
        };
        if self.size() == 2 && alg == Scan::RecursiveDoubling {
            let data = tag.with_variant(word).with_op(op_word(op.identity()));
            return pair::scan_pair(&t, (tag, data), &call, buf, op, exclusive);
        }
        check::agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(word).with_op(op_word(op.identity()));
        algorithms::scan::run(&t, buf, op, schedule, block, exclusive, tag)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Every algorithm word has a name, and inclusive and exclusive names differ.
    #[test]
    fn words_are_named_and_distinct() {
        for alg in Scan::ALL {
            let (i, e) = (name_of(alg.id()), name_of(alg.id() | EXCLUSIVE));
            assert!(i.is_some() && e.is_some() && i != e, "{alg:?}");
        }
        assert_eq!(name_of(0x7f), None);
    }
}
