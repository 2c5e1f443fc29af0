//! The binomial tree over ranks 0 … p − 1 (rooted at 0), as pure functions, and the
//! relabelling that roots it anywhere: every binomial schedule (allreduce, reduce, broadcast,
//! gather, scatter, the broadcast's scatter) walks this one tree.
//!
//! * the parent of v > 0 is v with its lowest set bit cleared ([`parent`]);
//! * the children of v are v + 2ᵏ for every 2ᵏ below v's lowest set bit (all k for the root)
//!   with v + 2ᵏ < p, smallest subtree first ([`children`]; reversed, largest first);
//! * the subtree of v is the contiguous range v .. min(v + lowbit(v), p) ([`subtree_end`]),
//!   so a reduction that puts each child's partial result on the right combines in rank order.
//!
//! A tree rooted at `root` uses relative ranks (r − root) mod p ([`relative`], [`absolute`]).

/// The lowest set bit of `r` (`r > 0`).
pub(crate) fn lowbit(r: usize) -> usize {
    r & r.wrapping_neg()
}

/// The parent of rank `r` in the binomial tree: `r` with its lowest set bit cleared; `None` for
/// the root, rank 0.
pub(crate) fn parent(r: usize) -> Option<usize> {
    (r != 0).then(|| r & (r - 1))
}

/// One past the last rank of the subtree of rank `r` (`r < p`): the subtree is `r..end`.
pub(crate) fn subtree_end(r: usize, p: usize) -> usize {
    if r == 0 {
        p
    } else {
        r.saturating_add(lowbit(r)).min(p)
    }
}

/// The children of rank `r` (`r < p`) among `p` ranks, in the order the reduce receives from
/// them: r + 1, r + 2, r + 4, … while the step is below r's lowest set bit and the child
/// exists. Reversed, the broadcast order.
pub(crate) fn children(
    r: usize,
    p: usize,
) -> impl DoubleEndedIterator<Item = usize> + ExactSizeIterator + Clone {
    // Steps 2ᵏ < limit, where limit = subtree_end − r bounds both conditions.
    let limit = subtree_end(r, p) - r;
    let count = (usize::BITS - (limit.saturating_sub(1)).leading_zeros()) as usize;
    (0..count).map(move |k| r + (1 << k))
}

/// Rank `r`'s place counted from `root` among `p` ranks: (r − root) mod p.
pub(crate) fn relative(r: usize, root: usize, p: usize) -> usize {
    (r + p - root) % p
}

/// The rank `v` places after `root` among `p` ranks: the inverse of [`relative`].
pub(crate) fn absolute(v: usize, root: usize, p: usize) -> usize {
    (v + root) % p
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Checks the tree shape for `p` ranks: it spans all ranks, every non-root has exactly one
    /// parent (the one `parent` names), every subtree is the contiguous range starting at its
    /// root that `subtree_end` names, and the children come in the order that makes the
    /// reduce's right-folds combine in rank order.
    fn check_tree(p: usize) -> std::result::Result<(), TestCaseError> {
        let mut parents = vec![0usize; p];
        for r in 0..p {
            // In reduce order, each child's range starts where the partial result ends.
            let mut end = r + 1;
            for c in children(r, p) {
                prop_assert!(c < p, "p={} r={} child {} out of range", p, r, c);
                prop_assert_eq!(parent(c), Some(r), "p={} child {} of {}", p, c, r);
                prop_assert_eq!(
                    c,
                    end,
                    "p={} r={}: child {} not next in rank order",
                    p,
                    r,
                    c
                );
                end = subtree_end(c, p);
                parents[c] += 1;
            }
            prop_assert_eq!(end, subtree_end(r, p), "p={} r={}", p, r);
            prop_assert_eq!(children(r, p).len(), children(r, p).count());
            match parent(r) {
                None => prop_assert_eq!(r, 0),
                Some(q) => prop_assert!(q < r && children(q, p).any(|c| c == r)),
            }
        }
        prop_assert_eq!(parents[0], 0, "p={}: the root has a parent", p);
        prop_assert!(
            parents[1..].iter().all(|&n| n == 1),
            "p={}: {:?}",
            p,
            parents
        );
        // The subtree of each rank, collected by walking down the tree, is its range.
        for r in 0..p {
            let mut seen = Vec::new();
            let mut stack = vec![r];
            while let Some(q) = stack.pop() {
                seen.push(q);
                stack.extend(children(q, p));
            }
            seen.sort_unstable();
            let want: Vec<usize> = (r..subtree_end(r, p)).collect();
            prop_assert_eq!(seen, want, "p={} r={}", p, r);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn tree_shape(p in 1usize..=200) {
            check_tree(p)?;
        }
    }

    #[test]
    fn tree_shape_every_p_up_to_200() {
        for p in 1..=200 {
            check_tree(p).unwrap();
        }
    }

    #[test]
    fn small_trees() {
        assert_eq!(children(0, 1).count(), 0);
        assert_eq!(children(0, 6).collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!(children(4, 6).collect::<Vec<_>>(), [5]);
        assert_eq!(children(2, 6).rev().collect::<Vec<_>>(), [3]);
        assert_eq!(children(0, 8).rev().collect::<Vec<_>>(), [4, 2, 1]);
        assert_eq!(parent(6), Some(4));
        assert_eq!(subtree_end(4, 6), 6);
    }

    /// Reversed (largest subtree first, the order of the broadcasts and scatters), each
    /// child's subtree ends where the previous one began, and together they tile the
    /// subtree after its root.
    #[test]
    fn reversed_children_tile_from_the_top() {
        for p in 1..=130 {
            let mut seen = vec![0usize; p];
            for v in 0..p {
                let mut end = subtree_end(v, p);
                for c in children(v, p).rev() {
                    assert!(c < p);
                    assert_eq!(parent(c), Some(v), "p={p} v={v} c={c}");
                    assert_eq!(subtree_end(c, p), end, "p={p} v={v} c={c}");
                    end = c;
                    seen[c] += 1;
                }
                assert_eq!(end, v + 1, "p={p} v={v}: children do not tile the subtree");
            }
            assert_eq!(seen[0], 0);
            assert!(seen[1..].iter().all(|&k| k == 1), "p={p}: {seen:?}");
        }
    }

    /// `relative` and `absolute` are inverse.
    #[test]
    fn relabelling_round_trips() {
        for p in 1..40 {
            for root in 0..p {
                assert_eq!(relative(root, root, p), 0);
                for r in 0..p {
                    assert_eq!(absolute(relative(r, root, p), root, p), r);
                }
            }
        }
    }
}
