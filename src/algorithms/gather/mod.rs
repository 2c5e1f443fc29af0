//! Gather, scatter and allgather schedules: every rank's block of `n` elements collected at
//! one rank (gather), handed out from one rank (scatter), or collected at every rank
//! (allgather), blocks in rank order.
//!
//! * [`rooted`]: gather and scatter, `Linear` (the star) and `Binomial` (the binomial tree on
//!   relative ranks, whose subtrees are contiguous ranges of relative ranks, so that a
//!   subtree's blocks travel as one message);
//! * [`allgather`]: the ring, recursive doubling (with a fold for any p) and Bruck's
//!   concatenation;
//! * [`direct`] (shared memory only): every rank copies every block straight from its owner;
//! * [`vector`]: the `v` forms, gatherv and scatterv linear and allgatherv on the ring, each
//!   ending with a barrier so that a length error on one rank is an error on every rank.
//!
//! All but `Direct` are written against `Transport`. Every message of a schedule is sent even
//! when it is empty (a block count of 0), so that a rank whose block length differs from the
//! others' meets a length mismatch on some edge instead of waiting for a message that never
//! comes; `Comm`'s call check normally reports such a disagreement before the schedule runs.

mod allgather;
mod direct;
mod rooted;
mod vector;

pub(crate) use allgather::{bruck, recursive_doubling, ring};
pub(crate) use direct::allgather as direct_allgather;
pub(crate) use rooted::{gather_binomial, gather_linear, scatter_binomial, scatter_linear};
pub(crate) use vector::{allgatherv, gatherv, scatterv};

use std::ops::Range;

/// Rank `r`'s place counted from `root` among `p` ranks: (r − root) mod p.
fn relative(r: usize, root: usize, p: usize) -> usize {
    (r + p - root) % p
}

/// The rank `v` places after `root` among `p` ranks (the inverse of [`relative`]).
fn absolute(v: usize, root: usize, p: usize) -> usize {
    (v + root) % p
}

/// Elements of blocks `blocks` of `n` elements each.
fn span(blocks: Range<usize>, n: usize) -> Range<usize> {
    blocks.start * n..blocks.end * n
}

/// Splits `buf` into a shared view of `src` and a mutable view of `dst`, two disjoint ranges
/// of it (panics if they overlap: a schedule bug, never an input error).
fn split_pair<T>(buf: &mut [T], src: Range<usize>, dst: Range<usize>) -> (&[T], &mut [T]) {
    assert!(
        src.end <= dst.start || dst.end <= src.start || src.is_empty() || dst.is_empty(),
        "overlapping ranges {src:?} and {dst:?}"
    );
    if src.is_empty() {
        return (&[], &mut buf[dst]);
    }
    if dst.is_empty() {
        return (&buf[src], &mut []);
    }
    if src.end <= dst.start {
        let (lo, hi) = buf.split_at_mut(dst.start);
        (&lo[src], &mut hi[..dst.end - dst.start])
    } else {
        let (lo, hi) = buf.split_at_mut(src.start);
        (&hi[..src.end - src.start], &mut lo[dst])
    }
}

/// The binomial tree on relative ranks (the broadcast's, `algorithms::broadcast::binomial`):
/// the parent of v > 0 is v with its lowest set bit cleared, and v's subtree is the range
/// `v .. v + lowbit(v)` cut at p (everything for the root, 0).
mod binomial {
    /// One past the last relative rank of `v`'s subtree among `p`.
    pub(super) fn subtree_end(v: usize, p: usize) -> usize {
        if v == 0 {
            p
        } else {
            v.saturating_add(v & v.wrapping_neg()).min(p)
        }
    }

    /// The parent of `v`, `None` for the root.
    pub(super) fn parent(v: usize) -> Option<usize> {
        (v != 0).then(|| v & (v - 1))
    }

    /// The children of `v` among `p`, v + 2ᵏ for every 2ᵏ below the size of `v`'s subtree,
    /// largest first; child c's subtree is `c .. subtree_end(c, p)`.
    pub(super) fn children(v: usize, p: usize) -> impl Iterator<Item = usize> {
        let size = subtree_end(v, p) - v;
        let rounds = (usize::BITS - size.saturating_sub(1).leading_zeros()) as usize;
        (0..rounds).rev().map(move |k| v + (1 << k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Children's subtrees tile their parent's subtree after the parent itself.
    #[test]
    fn subtrees_tile() {
        for p in 1..100 {
            for v in 0..p {
                let mut end = binomial::subtree_end(v, p);
                for c in binomial::children(v, p) {
                    assert_eq!(binomial::parent(c), Some(v));
                    assert_eq!(binomial::subtree_end(c, p), end);
                    end = c;
                }
                assert_eq!(end, v + 1);
            }
        }
    }

    /// `split_pair` hands out the two ranges asked for, in either order.
    #[test]
    fn split_pair_either_order() {
        let mut b: Vec<u32> = (0..10).collect();
        let (s, d) = split_pair(&mut b, 6..8, 1..3);
        assert_eq!(s, &[6, 7]);
        assert_eq!(d, &mut [1, 2]);
        let (s, d) = split_pair(&mut b, 0..2, 2..5);
        assert_eq!(s, &[0, 1]);
        assert_eq!(d, &mut [2, 3, 4]);
    }
}
