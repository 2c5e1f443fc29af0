//! The post-order numbered balanced binary tree over a contiguous rank range `[lo, hi]`, as
//! pure functions of `(rank, lo, hi)`.
//!
//! This is the tree of Träff 2021, "A doubly-pipelined, dual-root reduction-to-all algorithm
//! and implementation" (`/work/shared/papers/000_0c86cefcaf7b0d0a.txt`, §1): the ranks of a
//! subtree are numbered in post-order, so every subtree is a contiguous range of ranks that
//! ends at its root, and a node's left subtree lies entirely below its right subtree. A
//! reduction that combines left ⊙ right ⊙ own at every node therefore computes its subtree's
//! operands in rank order, which is what a non-commutative op needs.
//!
//! **Shape.** For the range `[lo, hi]` of n = hi − lo + 1 ranks:
//!
//! * the root is `hi`;
//! * the left subtree is the tree over `[lo, lo + L − 1]` and the right subtree the tree over
//!   `[lo + L, hi − 1]`, with L = ⌈(n − 1)/2⌉ = ⌊n/2⌋ (either may be empty; the right one
//!   has ⌊(n − 1)/2⌋ ranks, so it is never larger than the left one, and a node with one child
//!   has a left child only).
//!
//! The height (edges on the longest root-to-leaf path) of a tree of n ranks is
//! h(n) = ⌊log₂ n⌋ = ⌈log₂(n + 1)⌉ − 1: h(1) = 0 and, for n ≥ 2, h(n) = 1 + h(⌊n/2⌋) since
//! the left subtree is the taller one, and ⌊log₂⌊n/2⌋⌋ = ⌊log₂ n⌋ − 1.
//!
//! Every function walks from the root down to the rank in question: O(log n) steps, no
//! allocation.

use std::ops::RangeInclusive;

/// Ranks in the left subtree of a tree of `n ≥ 1` ranks: ⌈(n − 1)/2⌉ = ⌊n/2⌋.
fn left_size(n: usize) -> usize {
    n / 2
}

/// Walks from the root of `[lo, hi]` down to `r`: the first rank of `r`'s subtree, `r`'s
/// parent and `r`'s depth.
fn locate(r: usize, lo: usize, hi: usize) -> (usize, Option<usize>, usize) {
    assert!(
        lo <= r && r <= hi,
        "rank {r} outside the tree over [{lo}, {hi}]"
    );
    let (mut a, mut b, mut parent, mut depth) = (lo, hi, None, 0);
    while b != r {
        // r lies in [a, b − 1]: in the left subtree [a, a + l − 1] or the right [a + l, b − 1].
        let l = left_size(b - a + 1);
        parent = Some(b);
        depth += 1;
        if r < a + l {
            b = a + l - 1;
        } else {
            a += l;
            b -= 1;
        }
    }
    (a, parent, depth)
}

/// The parent of `r` in the tree over `[lo, hi]`; `None` for the root `hi`.
pub(crate) fn parent(r: usize, lo: usize, hi: usize) -> Option<usize> {
    locate(r, lo, hi).1
}

/// The children of `r` in the tree over `[lo, hi]`: (left, right). The left child's subtree
/// holds lower ranks than the right child's; a node with one child has a left child only.
pub(crate) fn children(r: usize, lo: usize, hi: usize) -> (Option<usize>, Option<usize>) {
    let (a, _, _) = locate(r, lo, hi);
    let n = r - a + 1;
    let l = left_size(n);
    let left = (l > 0).then(|| a + l - 1);
    let right = (n - 1 - l > 0).then(|| r - 1);
    (left, right)
}

/// The ranks of `r`'s subtree in the tree over `[lo, hi]`: a contiguous range ending at `r`.
pub(crate) fn subtree(r: usize, lo: usize, hi: usize) -> RangeInclusive<usize> {
    locate(r, lo, hi).0..=r
}

/// The number of edges from the root `hi` to `r` in the tree over `[lo, hi]`.
pub(crate) fn depth(r: usize, lo: usize, hi: usize) -> usize {
    locate(r, lo, hi).2
}

/// The height of the tree over `[lo, hi]`: the largest depth of any of its ranks,
/// ⌊log₂ n⌋ for n = hi − lo + 1 ranks.
#[allow(dead_code)] // part of the tree's interface; the schedules need only parent and children
pub(crate) fn height(lo: usize, hi: usize) -> usize {
    assert!(lo <= hi, "empty tree [{lo}, {hi}]");
    (hi - lo + 1).ilog2() as usize
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Checks the tree over `[lo, hi]`: one root (`hi`), every other rank has exactly one
    /// parent, and it names the rank as a child; every subtree is a contiguous range ending
    /// at its root; the children's subtrees partition the subtree minus its root, left below
    /// right, with the left one at least as large; the height is ⌊log₂ n⌋ and equals the
    /// largest depth; depths grow by one from parent to child.
    fn check_tree(lo: usize, n: usize) -> std::result::Result<(), TestCaseError> {
        let hi = lo + n - 1;
        let mut parents = vec![0usize; n];
        let mut max_depth = 0;
        for r in lo..=hi {
            let sub = subtree(r, lo, hi);
            prop_assert_eq!(*sub.end(), r, "subtree of {} must end at it", r);
            prop_assert!(*sub.start() >= lo);
            let d = depth(r, lo, hi);
            max_depth = max_depth.max(d);
            match parent(r, lo, hi) {
                None => prop_assert_eq!(r, hi, "only the root has no parent"),
                Some(q) => {
                    prop_assert!(q > r && q <= hi);
                    let (a, b) = children(q, lo, hi);
                    prop_assert!(a == Some(r) || b == Some(r), "{} not a child of {}", r, q);
                    prop_assert_eq!(depth(q, lo, hi) + 1, d);
                    prop_assert!(subtree(q, lo, hi).contains(sub.start()));
                }
            }
            // The children's subtrees tile [start, r − 1], left then right.
            let mut next = *sub.start();
            let (left, right) = children(r, lo, hi);
            prop_assert!(
                left.is_some() || right.is_none(),
                "right child without left"
            );
            let mut sizes = Vec::new();
            for c in [left, right].into_iter().flatten() {
                prop_assert_eq!(parent(c, lo, hi), Some(r));
                let cs = subtree(c, lo, hi);
                prop_assert_eq!(*cs.start(), next, "child {} of {} not contiguous", c, r);
                next = c + 1;
                sizes.push(cs.end() - cs.start() + 1);
                parents[c - lo] += 1;
            }
            prop_assert_eq!(next, r, "children of {} do not cover its subtree", r);
            if let [l, rt] = sizes[..] {
                prop_assert!(
                    l >= rt && l - rt <= 1,
                    "unbalanced at {}: {} vs {}",
                    r,
                    l,
                    rt
                );
            }
        }
        for r in lo..hi {
            prop_assert_eq!(
                parents[r - lo],
                1,
                "rank {} has {} parents",
                r,
                parents[r - lo]
            );
        }
        prop_assert_eq!(parents[n - 1], 0);
        let h = height(lo, hi);
        prop_assert_eq!(h, max_depth);
        // ⌊log₂ n⌋ = ⌈log₂(n + 1)⌉ − 1: 2ʰ ≤ n < 2ʰ⁺¹.
        prop_assert!(1usize << h <= n && n < 1usize << (h + 1));
        prop_assert_eq!(subtree(hi, lo, hi), lo..=hi);
        Ok(())
    }

    proptest! {
        #[test]
        fn tree_shape(lo in 0usize..1000, n in 1usize..=300) {
            check_tree(lo, n)?;
        }
    }

    #[test]
    fn tree_shape_every_n_up_to_300() {
        for n in 1..=300 {
            check_tree(0, n).unwrap();
            check_tree(7, n).unwrap();
        }
    }

    #[test]
    fn small_trees() {
        assert_eq!(children(0, 0, 0), (None, None));
        assert_eq!(children(1, 0, 1), (Some(0), None));
        assert_eq!(children(2, 0, 2), (Some(0), Some(1)));
        // 7 ranks: a perfect tree, 6 ← (2 ← (0, 1), 5 ← (3, 4)).
        assert_eq!(children(6, 0, 6), (Some(2), Some(5)));
        assert_eq!(children(5, 0, 6), (Some(3), Some(4)));
        assert_eq!(parent(1, 0, 6), Some(2));
        assert_eq!(subtree(5, 0, 6), 3..=5);
        assert_eq!(depth(4, 0, 6), 2);
        assert_eq!(height(0, 6), 2);
        // Shifted: the same shape over [10, 16].
        assert_eq!(children(16, 10, 16), (Some(12), Some(15)));
        assert_eq!(height(10, 17), 3);
    }
}
