//! The pipelined binary-tree allreduce: a pipelined reduce up the post-order numbered binary
//! tree over all ranks (root p − 1, [`crate::algorithms::tree`]) followed by a pipelined
//! broadcast of the result back down the same tree.
//!
//! This is the baseline that Träff 2021, "A doubly-pipelined, dual-root reduction-to-all
//! algorithm and implementation" (`/work/shared/papers/000_0c86cefcaf7b0d0a.txt`) compares
//! its dual-root algorithm against: reduce to the root and then broadcast, both along one
//! binary tree of height h and both pipelined over b blocks of m/b elements, in time
//! 2(2h + 2(b − 1))(α + βm/b) — per block a rank talks to its two children, so each phase
//! needs two communication steps per level to fill the pipeline and two per further block.
//!
//! **Order.** In post-order numbering the subtree of rank r is a contiguous range ending at r,
//! and its left child's subtree lies below its right child's. Rank r first folds block k of
//! its right child's partial result in on the left of its own (`Op::fold_left`: right ⊙ own),
//! then block k of its left child's on the left of that (left ⊙ right ⊙ own), which is its
//! subtree's operands in rank order. The root ends with x₀ ⊙ … ⊙ x_{p−1} for any associative
//! op; every final block is computed there once and copied down, so all ranks get the same
//! bits. Incoming blocks are combined straight from the child's published memory
//! (`recv_reduce`), so large blocks are not staged.
//!
//! **Overlap.** In the reduce, step k of a rank receives block k from its first child (the
//! right one if it has two) while sending block k − 1 to its parent (`sendrecv_reduce`, on
//! disjoint blocks), then receives block k from its left child if it has two. In the
//! broadcast, step k sends block k − 1 to the second child (the right one), then sends it to
//! the left child while receiving block k from the parent (`sendrecv`).
//!
//! **Blocks** and **no deadlock**: the pipelined reduce and broadcast are shared with the chain
//! and argued in [`super::pipeline`].

use super::pipeline::{broadcast, reduce};
use crate::algorithms::tree;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Pipelined binary-tree allreduce of `buf` under `op` (any associative op: the tree combines
/// in rank order), in blocks of `block` elements (at least 1 is used).
pub(crate) fn pipelined_tree<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    block: usize,
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    if p <= 1 {
        return Ok(());
    }
    let block = block.max(1);
    let parent = tree::parent(r, 0, p - 1);
    let (left, right) = tree::children(r, 0, p - 1);
    // The child whose transfer overlaps the parent's, and the other one (if there are two).
    let (first, second) = match (left, right) {
        (Some(l), Some(rt)) => (Some(rt), Some(l)),
        (l, _) => (l, None),
    };
    // A child's partial result covers lower ranks than what this rank holds.
    let mut up = |_: usize, acc: &mut [T], inc: &[T]| op.fold_left(inc, acc);
    reduce(t, buf, block, parent, first, second, tag, &mut up)?;
    // The broadcast serves the right child (if any) first, then the left one, whose send
    // overlaps the receive from the parent.
    broadcast(t, buf, block, parent, [right, left], tag)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testkit::{self, schedule};

    schedule!(PipelinedTree, super::pipelined_tree);

    #[test]
    fn non_commutative_spans_in_rank_order_for_every_block_size() {
        testkit::spans_in_rank_order(&PipelinedTree);
    }

    #[test]
    fn f64_sums_bit_identical_on_every_rank() {
        testkit::sums_bit_identical(&PipelinedTree, true);
    }

    #[test]
    fn length_mismatch_is_an_error_not_a_hang() {
        testkit::length_mismatch_fails(&PipelinedTree);
    }
}
