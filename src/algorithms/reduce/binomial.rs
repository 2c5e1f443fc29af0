//! The binomial-tree reduce to any root, in rank order: ⌈log₂ p⌉ + 1 rounds at most, p − 1
//! messages of the whole vector.
//!
//! The binomial tree is the classic one of the table of collectives
//! (`/work/shared/papers/001_ce9166afca5d064a.txt`: a rank responsible for a range hands half
//! of it to another rank) with the rounds taken from the lowest bit up, as in MPICH's binomial
//! reduce and in `algorithms::allreduce::binomial`: over m ranks numbered i = 0 … m − 1, in
//! round k a rank with bit k set sends its partial result to i − 2ᵏ and is done, and a rank
//! whose bits up to k are clear receives from i + 2ᵏ if that exists. The subtree of i is then
//! the contiguous range i … min(i + lowbit(i), m) − 1, and a child's range comes right after
//! what its parent has combined so far: folding the child's operand in on the right
//! (`Op::fold_right`) gives the subtree's operands in rank order.
//!
//! **Any root, without the extra message.** A tree rooted at rank 0 would need one more message
//! (rank 0 → root) of the whole result after ⌈log₂ p⌉ rounds; and a tree rotated to start at the
//! root would combine x_{p−1} ⊙ x₀, out of order. Instead the ranks are cut at the root into
//! two contiguous ranges, each reduced by its own binomial tree:
//!
//! * the *upper* range root … p − 1, numbered from the root (i = r − root), rooted at the
//!   root, which ends with x_root ⊙ … ⊙ x_{p−1};
//! * the *lower* range 0 … root − 1 (empty when root = 0), rooted at rank 0, which ends with
//!   x₀ ⊙ … ⊙ x_{root−1} and sends it to the root as its last message; the root folds it in on
//!   the left (`Op::fold_left`).
//!
//! Both trees run at once, so the root has its result after
//! max(⌈log₂ root⌉, ⌈log₂(p − root)⌉) + 1 ≤ ⌈log₂ p⌉ + 1 rounds (exactly ⌈log₂ p⌉ for root 0),
//! and every rank but the root sends exactly one message: p − 1 in all, none of them a
//! forward of a finished result.
//!
//! **Acknowledgement.** The root then sends an empty message back along every edge it received
//! on, and every rank, once acknowledged by the rank it sent to, does the same, so that no
//! rank returns `Ok` from a call that failed elsewhere (see `super::acknowledge`). This doubles
//! the rounds for small vectors — the price of the error contract with a neighbour-only call
//! agreement.
//!
//! **Buffers.** The root combines in `buf` (its output). A non-root rank with children
//! combines in a scratch copy of its input, so its `buf` is left unchanged; a leaf sends
//! `buf` itself. Incoming vectors are combined straight from the sender's published memory
//! (`recv_reduce`). Every edge carries its message even for an empty vector.

use crate::algorithms::binomial_tree::{children, parent};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Binomial-tree reduce of `buf` under `op` to `root` (any associative op: combination is in
/// rank order).
pub(super) fn binomial<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    root: usize,
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    if p <= 1 {
        return Ok(());
    }
    // This rank's range: [0, root) or [root, p).
    let (lo, hi) = if r < root { (0, root) } else { (root, p) };
    let (i, m) = (r - lo, hi - lo);
    let kids = children(i, m).map(|c| c + lo);
    let mut right = |acc: &mut [T], inc: &[T]| op.fold_right(acc, inc);
    if r == root {
        for c in kids.clone() {
            t.recv_reduce(c, tag, buf, &mut right)?;
        }
        if root != 0 {
            // x₀ ⊙ … ⊙ x_{root−1} from the lower tree, on the left.
            t.recv_reduce(0, tag, buf, &mut |acc, inc| op.fold_left(inc, acc))?;
        }
        let lower = (root != 0).then_some(0);
        return super::acknowledge(t, None, kids.chain(lower), tag);
    }
    // Rank 0 of the lower range sends to the root; everyone else to its tree parent.
    let dest = parent(i).map_or(root, |q| q + lo);
    if kids.len() == 0 {
        t.send(dest, tag, buf)?;
    } else {
        let mut acc = crate::copy::to_vec(buf);
        for c in kids.clone() {
            t.recv_reduce(c, tag, &mut acc, &mut right)?;
        }
        t.send(dest, tag, &acc)?;
    }
    super::acknowledge(t, Some(dest), kids, tag)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Walks the tree over `m` ranks as the reduce does and checks that every rank combines
    /// exactly its contiguous subtree, each child's range right after what it holds.
    fn fold(i: usize, m: usize) -> std::ops::Range<usize> {
        let mut range = i..i + 1;
        for c in children(i, m) {
            assert_eq!(parent(c), Some(i));
            let sub = fold(c, m);
            assert_eq!(sub.start, range.end, "m={m}: child {c} of {i} out of order");
            range.end = sub.end;
        }
        range
    }

    #[test]
    fn every_tree_up_to_300_reduces_its_range_in_order() {
        for m in 1..=300 {
            assert_eq!(fold(0, m), 0..m);
            for i in 1..m {
                let q = parent(i).unwrap();
                assert!(children(q, m).any(|c| c == i), "m={m} i={i}");
            }
        }
    }

    #[test]
    fn small_trees() {
        assert_eq!(children(0, 1).len(), 0);
        assert_eq!(children(0, 6).collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!(children(4, 6).collect::<Vec<_>>(), [5]);
        assert_eq!(children(4, 5).len(), 0);
        assert_eq!(parent(6), Some(4));
    }
}
