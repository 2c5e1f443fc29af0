//! Rabenseifner's allreduce: a reduce-scatter by recursive halving, then an allgather by
//! recursive doubling, for any number of ranks.
//!
//! Source: R. Rabenseifner, "Optimization of collective reduction operations" (ICCS 2004), as
//! described with its non-power-of-two handling in Thakur, Rabenseifner and Gropp, "Optimization
//! of collective communication operations in MPICH" (IJHPCA 19(1), 2005); it is also the
//! "halving" variant of the butterfly in the course report
//! (`/work/shared/papers/004_051d64547ad248ed.txt`, end of §2.4): exchange half the data per
//! round instead of all of it, so that each rank combines only its share.
//!
//! The vector is cut into p' nearly equal blocks ([`block_start`](super::block_start); p' the largest power of two
//! ≤ p). In halving step k (k = 0, 1, …) a rank and its partner (new id differing in bit k) hold
//! the same range of blocks; the one with bit k clear keeps the lower half, the other the upper
//! half; each sends the half it gives up and combines the partner's copy of the half it keeps
//! ([`halving_step`]). After log₂ p' steps each rank holds one block of the full result (block
//! bit-reverse(id)); the allgather runs the steps backwards, exchanging finished halves. Each
//! rank sends and receives 2·(p'−1)/p' of the vector in 2·log₂ p' rounds and combines
//! (p'−1)/p' of it, against log₂ p' whole vectors for plain recursive doubling.
//!
//! Rank order: the distance grows (1, 2, 4, …) during the halving, so a rank's partial result
//! after step k covers an aligned range of 2^(k+1) new ids, i.e. a contiguous range of original
//! ranks, and the partner with the lower new id goes on the left. Each block of the result is
//! computed on one rank only and copied to the others, so all ranks get the same bits (and the
//! same bits as recursive doubling: the combination tree is the same).
//!
//! p not a power of two: the fold-in / fold-out of [`super::recursive_doubling`] (whole vectors,
//! as in MPICH). Counts that do not divide evenly, counts below p' (empty blocks) and empty
//! vectors all run every round, with empty messages where a block range is empty.

use super::elements;
use super::recursive_doubling::{combine, Fold};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;
use std::ops::Range;

/// Rabenseifner allreduce of `buf` under `op` (any op, any p; rank order kept).
pub(crate) fn rabenseifner<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    tag: Tag,
) -> Result<()> {
    let p = t.size();
    if p == 1 {
        return Ok(());
    }
    let fold = Fold::new(p);
    if let Some(id) = fold.fold_in(t, buf, op, tag)? {
        let (n, p2) = (buf.len(), fold.p2);
        let steps = p2.trailing_zeros();
        // Reduce-scatter: keep one half, send the other, combine the partner's copy of ours.
        for k in 0..steps {
            let step = halving_step(id, p2, k);
            let peer_id = id ^ (1 << k);
            let peer = fold.rank_of(peer_id);
            let keep = elements(n, p2, step.keep);
            let give = elements(n, p2, step.give);
            let (mine, theirs) = split_adjacent(buf, keep, give);
            t.sendrecv_reduce(peer, theirs, peer, mine, tag, &mut |acc, inc| {
                combine(op, peer_id < id, acc, inc)
            })?;
        }
        // Allgather: the same steps backwards, each side sending the finished half it kept.
        for k in (0..steps).rev() {
            let step = halving_step(id, p2, k);
            let peer = fold.rank_of(id ^ (1 << k));
            let keep = elements(n, p2, step.keep);
            let give = elements(n, p2, step.give);
            let (mine, theirs) = split_adjacent(buf, keep, give);
            t.sendrecv(peer, mine, peer, theirs, tag)?;
        }
    }
    fold.fold_out(t, buf, tag)
}

/// One step of the recursive halving, in block indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HalvingStep {
    /// The half this rank keeps (and, in the allgather, sends).
    pub keep: Range<usize>,
    /// The half it gives to its partner (and, in the allgather, receives).
    pub give: Range<usize>,
}

/// Step `k` of the halving for new id `id` among `p2` (a power of two, `k < log₂ p2`): before
/// it the rank holds the aligned range of p2/2^k blocks that bits 0..k of `id` select (bit 0
/// choosing the upper or lower half of everything, bit 1 of that half, …); bit k chooses which
/// half it keeps. Partners (ids differing in bit k only) hold the same range and split it
/// between them.
pub(crate) fn halving_step(id: usize, p2: usize, k: u32) -> HalvingStep {
    debug_assert!(p2.is_power_of_two() && id < p2 && (1usize << k) < p2);
    let (mut lo, mut size) = (0, p2);
    for j in 0..k {
        size /= 2;
        if id >> j & 1 == 1 {
            lo += size;
        }
    }
    let mid = lo + size / 2;
    let (lower, upper) = (lo..mid, mid..lo + size);
    if id >> k & 1 == 0 {
        HalvingStep {
            keep: lower,
            give: upper,
        }
    } else {
        HalvingStep {
            keep: upper,
            give: lower,
        }
    }
}

/// The two adjacent, disjoint element ranges `a` and `b` of `buf` (either may come first), as
/// two slices in that order.
fn split_adjacent<T>(buf: &mut [T], a: Range<usize>, b: Range<usize>) -> (&mut [T], &mut [T]) {
    if a.end == b.start {
        let (x, y) = buf[a.start..b.end].split_at_mut(a.len());
        (x, y)
    } else {
        debug_assert_eq!(b.end, a.start, "ranges not adjacent");
        let (y, x) = buf[b.start..a.end].split_at_mut(b.len());
        (x, y)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::block_start;
    use super::super::recursive_doubling::tests::{
        check_algorithm, check_length_mismatch, Schedule,
    };
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn blocks_partition_in_order(n in prop_oneof![0usize..5_000, any::<usize>()], parts in 1usize..300) {
            prop_assert_eq!(block_start(n, parts, 0), 0);
            prop_assert_eq!(block_start(n, parts, parts), n);
            let (small, big) = (n / parts, n / parts + 1);
            for j in 0..parts {
                let b = elements(n, parts, j..j + 1);
                prop_assert!(b.start <= b.end);
                // Nearly equal: the first n % parts blocks one larger.
                prop_assert_eq!(b.len(), if j < n % parts { big } else { small });
                prop_assert_eq!(b.end, block_start(n, parts, j + 1));
            }
        }

        #[test]
        fn block_ranges_concatenate(n in 0usize..100_000, log in 0u32..10, a in 0usize..1024, b in 0usize..1024) {
            let parts = 1usize << log;
            let (a, b) = (a % (parts + 1), b % (parts + 1));
            let (a, b) = (a.min(b), a.max(b));
            let whole = elements(n, parts, a..b);
            let mid = (a + b) / 2;
            prop_assert_eq!(elements(n, parts, a..mid).start, whole.start);
            prop_assert_eq!(elements(n, parts, a..mid).end, elements(n, parts, mid..b).start);
            prop_assert_eq!(elements(n, parts, mid..b).end, whole.end);
        }
    }

    #[test]
    fn halving_bookkeeping() {
        for log in 0..=8u32 {
            let p2 = 1usize << log;
            let mut owned = vec![false; p2];
            for id in 0..p2 {
                let mut held = 0..p2;
                for k in 0..log {
                    let s = halving_step(id, p2, k);
                    let partner = halving_step(id ^ (1 << k), p2, k);
                    // The two halves split what the rank held, half each, adjacent.
                    assert_eq!(s.keep.len(), held.len() / 2);
                    assert_eq!(s.give.len(), held.len() / 2);
                    assert_eq!(s.keep.start.min(s.give.start), held.start);
                    assert_eq!(s.keep.end.max(s.give.end), held.end);
                    assert!(s.keep.end == s.give.start || s.give.end == s.keep.start);
                    // The partner holds the same range and keeps what this rank gives.
                    assert_eq!(partner.keep, s.give);
                    assert_eq!(partner.give, s.keep);
                    // The lower id keeps the lower half: the combination stays in rank order.
                    assert_eq!(id & (1 << k) == 0, s.keep.start < s.give.start);
                    held = s.keep;
                }
                assert_eq!(held.len(), 1);
                assert!(!owned[held.start], "block {} owned twice", held.start);
                owned[held.start] = true;
                let reversed = if log == 0 {
                    0
                } else {
                    id.reverse_bits() >> (usize::BITS - log)
                };
                assert_eq!(held.start, reversed, "p2={p2} id={id}");
            }
        }
    }

    #[test]
    fn split_adjacent_either_order() {
        let mut v = [0, 1, 2, 3, 4, 5];
        let (a, b) = split_adjacent(&mut v, 1..3, 3..6);
        assert_eq!((&*a, &*b), (&[1, 2][..], &[3, 4, 5][..]));
        let (a, b) = split_adjacent(&mut v, 4..6, 0..4);
        assert_eq!((&*a, &*b), (&[4, 5][..], &[0, 1, 2, 3][..]));
        let (a, b) = split_adjacent(&mut v, 2..2, 2..2);
        assert!(a.is_empty() && b.is_empty());
    }

    #[test]
    fn length_mismatch_is_an_error() {
        check_length_mismatch(Schedule::Rabenseifner);
    }

    #[test]
    fn against_references() {
        check_algorithm(Schedule::Rabenseifner);
    }
}
