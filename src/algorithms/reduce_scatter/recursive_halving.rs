//! The recursive-halving reduce-scatter, for any number of ranks and any associative op.
//!
//! Source: the reduce-scatter half of Rabenseifner's allreduce as Thakur, Rabenseifner and
//! Gropp describe it ("Optimization of collective communication operations in MPICH", IJHPCA
//! 19(1), 2005), which is `algorithms::allreduce::rabenseifner`'s first phase, with the
//! bit-reversed ("mirror") placement of the blocks of Träff, "An improved algorithm for
//! (non-commutative) reduce-scatter with an application" (EuroPVM/MPI 2005), extended here to
//! any p by the allreduce's fold.
//!
//! **Fold.** With p' the largest power of two ≤ p and rem = p − p', each even rank 2j < 2·rem
//! hands its whole input to rank 2j + 1, which combines it on the left, and sits out; the p'
//! ranks left get new ids 0 … p' − 1 in rank order (`Fold` of
//! `algorithms::allreduce::recursive_doubling`). New id j stands for a contiguous group of
//! ranks, {2j, 2j + 1} or {j + rem}, and so for the group G(j) of their blocks; the groups,
//! in id order, tile the p blocks in order.
//!
//! **Halving.** In step k = 0, 1, …, log₂ p' − 1 a rank and its partner (new id differing in
//! bit k) hold the same aligned range of slots; the one with bit k clear keeps the lower half,
//! sends the upper half and combines the partner's copy of the lower half into its own, the
//! partner the other way round (`algorithms::allreduce::rabenseifner`'s `halving_step`, whose
//! bookkeeping is shared). The distance grows (1, 2, 4, …), so after step k a rank's partials
//! cover an aligned range of 2^(k+1) new ids, a contiguous range of ranks, and the partner
//! with the lower id always goes on the left: rank order, for any associative op. Each rank
//! sends and receives (p' − 1)/p' of the vector over log₂ p' rounds and combines as much,
//! after a whole-vector fold when p is not a power of two.
//!
//! **Placement.** Because the halving splits by the low bit of the id first, new id j ends
//! with slot rev(j), j's bits reversed. So the input is laid out in a scratch buffer with
//! slot s holding group G(rev(s)) (Träff's permutation): id j ends holding G(j), its own
//! ranks' blocks, fully reduced. Rank j + rem (or 2j + 1) keeps its block, and the odd rank of
//! a folded pair sends the other block to its partner (the fold-out) — the only block the
//! halving leaves away from its owner. Slots differ in size (a group has one or two blocks),
//! so the slots' element offsets are tabulated once per call.
//!
//! The association is the butterfly's: the pairs of the fold first, then adjacent new ids
//! pairwise, level by level, as for the allreduce's recursive doubling and Rabenseifner.
//! The schedule ends with the closing barrier (`super::close`).

use crate::algorithms::allreduce::halving_step;
use crate::algorithms::blocks::split_pair;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;
use std::ops::Range;

/// Recursive-halving reduce-scatter of every rank's `send` (p blocks of `recv.len()`
/// elements) under `op`: block `t.rank()` of the rank-order reduction lands in `recv`.
pub(crate) fn recursive_halving<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    op: &O,
    tag: Tag,
) -> Result<()> {
    let (p, r, n) = (t.size(), t.rank(), recv.len());
    debug_assert_eq!(send.len(), p * n);
    if p == 1 {
        crate::copy::copy_slice(&mut *recv, send);
        return Ok(());
    }
    let layout = Layout::new(p, n);
    let mut work = layout.permute(send);
    let folded = r < 2 * layout.rem;
    if folded && r % 2 == 0 {
        // Sit out: hand the input over, get the own block back at the end.
        t.send(r + 1, tag, &work)?;
        t.recv(r + 1, tag, recv)?;
        return super::close(t, tag);
    }
    if folded {
        t.recv_reduce(r - 1, tag, &mut work, &mut |acc, inc| {
            op.fold_left(inc, acc)
        })?;
    }
    let id = layout.id_of(r);
    for k in 0..layout.p2.trailing_zeros() {
        let step = halving_step(id, layout.p2, k);
        let peer_id = id ^ (1 << k);
        let (give, keep) = (layout.elements(step.give), layout.elements(step.keep));
        let (theirs, mine) = split_pair(&mut work, give, keep);
        let peer_lower = peer_id < id;
        t.sendrecv_reduce(
            layout.rank_of(peer_id),
            theirs,
            layout.rank_of(peer_id),
            mine,
            tag,
            &mut |acc, inc| {
                if peer_lower {
                    op.fold_left(inc, acc);
                } else {
                    op.fold_right(acc, inc);
                }
            },
        )?;
    }
    // This id's slot holds its group's blocks, fully reduced.
    let group = layout.elements(rev(id, layout.p2)..rev(id, layout.p2) + 1);
    if folded {
        // The group is {r − 1, r}: the first block goes back to rank r − 1.
        let (first, second) = work[group].split_at(n);
        crate::copy::copy_slice(&mut *recv, second);
        t.send(r - 1, tag, first)?;
    } else {
        crate::copy::copy_slice(&mut *recv, &work[group]);
    }
    super::close(t, tag)
}

/// `x`'s bits reversed within log₂ `p2` bits (`p2` a power of two).
fn rev(x: usize, p2: usize) -> usize {
    let bits = p2.trailing_zeros();
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (usize::BITS - bits)
    }
}

/// The fold of p ranks onto p' new ids and the bit-reversed layout of their block groups.
struct Layout {
    /// Blocks' length in elements.
    n: usize,
    /// The largest power of two ≤ p: how many ids run the halving.
    p2: usize,
    /// p − p2: how many even ranks sit out.
    rem: usize,
    /// `offsets[s]`: where slot s begins in the layout, in elements (p2 + 1 entries).
    offsets: Vec<usize>,
}

impl Layout {
    fn new(p: usize, n: usize) -> Layout {
        let p2 = 1usize << p.ilog2();
        let rem = p - p2;
        let mut layout = Layout {
            n,
            p2,
            rem,
            offsets: Vec::with_capacity(p2 + 1),
        };
        let mut at = 0;
        for s in 0..p2 {
            layout.offsets.push(at);
            at += layout.group(rev(s, p2)).len() * n;
        }
        layout.offsets.push(at);
        debug_assert_eq!(at, p * n);
        layout
    }

    /// The blocks of the ranks new id `j` stands for: {2j, 2j + 1} or {j + rem}.
    fn group(&self, j: usize) -> Range<usize> {
        let first = |j: usize| if j < self.rem { 2 * j } else { j + self.rem };
        first(j)..first(j + 1)
    }

    /// The new id of rank `r` (which must not be a sitting-out even rank < 2·rem).
    fn id_of(&self, r: usize) -> usize {
        if r < 2 * self.rem {
            debug_assert!(r % 2 == 1);
            r / 2
        } else {
            r - self.rem
        }
    }

    /// The rank that has new id `id`.
    fn rank_of(&self, id: usize) -> usize {
        if id < self.rem {
            2 * id + 1
        } else {
            id + self.rem
        }
    }

    /// The elements of slots `slots` in the layout.
    fn elements(&self, slots: Range<usize>) -> Range<usize> {
        self.offsets[slots.start]..self.offsets[slots.end]
    }

    /// `send` (p blocks of n elements, in rank order) laid out by slot: slot s holds the
    /// blocks of group G(rev(s)).
    fn permute<T: Copy>(&self, send: &[T]) -> Vec<T> {
        let mut work = Vec::with_capacity(send.len());
        for s in 0..self.p2 {
            let g = self.group(rev(s, self.p2));
            crate::copy::extend(&mut work, &send[g.start * self.n..g.end * self.n]);
        }
        work
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Slots tile the layout; the groups tile the blocks in id order; after the halving id j
    /// holds slot rev(j), which is its own group; ids and ranks are inverse.
    #[test]
    fn layout_puts_each_group_where_the_halving_leaves_it() {
        for p in 1..80 {
            for n in [0, 1, 3] {
                let l = Layout::new(p, n);
                let send: Vec<usize> = (0..p * n).collect();
                let work = l.permute(&send);
                assert_eq!(work.len(), p * n);
                let mut next = 0;
                for j in 0..l.p2 {
                    let g = l.group(j);
                    assert_eq!(g.start, next, "p={p}");
                    assert!((1..=2).contains(&g.len()));
                    next = g.end;
                    assert_eq!(l.id_of(l.rank_of(j)), j);
                    assert!(g.contains(&l.rank_of(j)));
                    // Where the halving leaves id j (the allreduce's bookkeeping).
                    let mut held = 0..l.p2;
                    for k in 0..l.p2.trailing_zeros() {
                        held = halving_step(j, l.p2, k).keep;
                    }
                    assert_eq!(held, rev(j, l.p2)..rev(j, l.p2) + 1);
                    assert_eq!(&work[l.elements(held)], &send[g.start * n..g.end * n]);
                }
                assert_eq!(next, p);
            }
        }
    }
}
