//! The pipelined binary-tree reduce: blocks of the vector go up post-order numbered binary
//! trees ([`crate::algorithms::tree`]) straight to the root, which is the top of the whole
//! schedule whatever its rank, and keeps rank order for any associative op.
//!
//! This is the reduce half of the baseline of Träff 2021, "A doubly-pipelined, dual-root
//! reduction-to-all algorithm and implementation" (`/work/shared/papers/000_0c86cefcaf7b0d0a.txt`),
//! the pipelined reduce on one binary tree of height h in b blocks, every block costing two
//! steps once the pipeline is full, at every root.
//!
//! **Shape.** The root r has (at most) two children, the tops of post-order trees over two
//! contiguous ranges of ranks that together hold every rank but r (`parts`):
//!
//! * r = p − 1: [0, ⌊p/2⌋ − 1] and [⌊p/2⌋, p − 2], both below r. This is exactly Träff's tree
//!   over all p ranks, whose top is p − 1.
//! * r = 0: the mirror image, [1, ⌊(p − 1)/2⌋] (empty for p = 2) and [⌊(p − 1)/2⌋ + 1, p − 1],
//!   both above r.
//! * 0 < r < p − 1: [0, r − 1] below r and [r + 1, p − 1] above it.
//!
//! In a part [lo, hi] a rank's parent and children are those of the tree over [lo, hi], and its
//! top hi has the root as parent. The whole tree is one level deeper than Träff's over all p
//! ranks when the root's larger part alone needs as many levels as that tree (roots near either
//! end); the steps per block do not change.
//!
//! **Order.** In a post-order tree the subtree of rank x is a contiguous range ending at x, its
//! left child's subtree below its right child's. A rank other than the root folds block k of
//! its right child's partial result in on the left of its own (`Op::fold_left`), then its left
//! child's: its subtree's operands in rank order. The root folds a part below it on its left
//! and a part above it on its right (`Op::fold_right`): for 0 < r < p − 1 that is
//! (x₀ ⊙ … ⊙ x_{r−1}) ⊙ x_r ⊙ (x_{r+1} ⊙ … ⊙ x_{p−1}) in either order of arrival (by
//! associativity); for r = p − 1 the upper part comes first and the lower one goes on its
//! left; for r = 0 the lower part comes first and the upper one goes on its right. So the root
//! ends with x₀ ⊙ … ⊙ x_{p−1} for any associative op. Incoming blocks are combined straight
//! from the child's published memory (`recv_reduce` / `sendrecv_reduce`: one copy for
//! rendezvous-sized blocks).
//!
//! **Schedule.** Rank x with parent q and children c₁ (received first) and c₂ runs, for
//! k = 0 … b − 1, step k: send block k − 1 to q while receiving block k from c₁ (one
//! `sendrecv_reduce`; no send in step 0), then receive block k from c₂; after the last step it
//! sends block b − 1 to q. Below the root c₁ is the right child (its subtree is never the
//! taller, so its block is ready first); the root takes the smaller part first for the same
//! reason. So a block costs two steps at every rank with two children, the root included, and
//! the root never sends (the previous schedule made the root a tree node like any other and
//! had the top p − 1 forward each finished block to it, so the root waited a whole trip up the
//! tree for every block; cutting at the root instead gives it two receives per block). This
//! is the loop the chain and the binary-tree allreduces run
//! (`algorithms::allreduce::pipeline::reduce`), told which child a block comes from so that
//! the root can fold a part above it on its right.
//!
//! **Buffers.** The root works in `buf`: it is its output. A non-root rank with children works
//! in a scratch copy of `buf`, which is left unchanged; a leaf only sends from `buf`.
//!
//! **Acknowledgement.** Once the root has its result it sends an empty message back along every
//! edge it received on, and every rank, once acknowledged by its parent, does the same, so that
//! no rank returns `Ok` from a call that failed elsewhere (see `super::acknowledge`). Each rank
//! acknowledges the child with the taller subtree first (the left one; at the root the part
//! received second), which keeps this pass as short as the tree allows.
//!
//! **Blocks.** All full blocks of B elements, then one block of the remaining n mod B (possibly
//! empty, and the only one of an empty vector), so every edge carries at least one message and
//! ranks of different lengths meet a mismatch.
//!
//! **No deadlock.** Every edge goes from a child to its parent (the root has none), carries
//! m(c, 0), …, m(c, b − 1) in this order (m(c, k): block k from c), and both ends agree on
//! the order of the operations on it. Order the messages by block index k, then deeper sender
//! first, then, for the two children of one rank, c₁ before c₂. Every operation a rank performs
//! before posting one of its ends of m(c, k) concerns a smaller message:
//!
//! * the sender c posts m(c, k) in its step k + 1 (or after its loop), after its steps 0 … k,
//!   which move m(c, j) for j < k (smaller block) and m(c′, j) from its children for j ≤ k
//!   (deeper senders, same or smaller block);
//! * the parent q posts the receive of m(c, k) in its step k, after its steps 0 … k − 1 (blocks
//!   smaller than k, sent or received) and, within step k, after or together with the send of
//!   m(q, k − 1) (smaller block) and, when c = c₂, the receive of m(c₁, k) (its sibling, before
//!   it in the order).
//!
//! This holds whether `sendrecv_reduce` runs its two halves at once or one after the other, and
//! whether a send completes eagerly or only when the receiver takes it. So the smallest message
//! not delivered would have both ends posted, and be delivered: all are. The acknowledgements
//! then go down the same edges: a rank waits only for its parent's, which waits only for its own
//! parent's, up to the root, which sends its own after its last receive.
//!
//! **Steps** (bidirectional ports, a step being one transfer each way per rank; checked by
//! `tests/sim.rs`): for p ≥ 3, U + D + 2(b − 1), where U, the steps until the root has block 0,
//! and D, the acknowledgement pass, follow the tree: the top of a post-order tree of n ranks
//! has block 0 after u(1) = 0, u(n) = max(u(n_R) + 1, u(n_L)) + 1 steps (n_L = ⌊n/2⌋ and
//! n_R = n − 1 − n_L ranks in its children's subtrees, the term of an absent child left out),
//! and the root after max(u(n₁) + 1, u(n₂)) + 1 for its parts of n₁ ≤ n₂ ranks; likewise
//! d(1) = 0, d(n) = max(d(n_L) + 1, d(n_R) + 2) and D = max(d(n₂) + 1, d(n₁) + 2). On p = 2^(h+1) − 1 ranks at the roots 0,
//! (p − 1)/2 and p − 1 (perfect trees) that is 4h + 2(b − 1); at any other root it is within
//! 2 of the count at p − 1 (checked for p ≤ 200). On two ranks it is 2 + (b − 1).

use crate::algorithms::allreduce::pipeline::reduce;
use crate::algorithms::tree;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Pipelined binary-tree reduce of `buf` under `op` to `root` (any associative op), in
/// blocks of `block` elements (at least 1 is used).
pub(super) fn pipelined_tree<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    root: usize,
    block: usize,
    tag: Tag,
) -> Result<()> {
    let (p, me) = (t.size(), t.rank());
    if p <= 1 {
        return Ok(());
    }
    let ranks = ranks(me, p, root);
    // A child's ranks lie below this rank's (folded in on the left) or, for the root's
    // children, possibly above (on the right).
    let mut fold = |c: usize, acc: &mut [T], inc: &[T]| {
        if c < me {
            op.fold_left(inc, acc)
        } else {
            op.fold_right(acc, inc)
        }
    };
    let (parent, first, second) = (ranks.parent, ranks.first, ranks.second);
    let block = block.max(1);
    if parent.is_none() || first.is_none() {
        // The root's `buf` is its output; a leaf never writes its `buf` (it only sends).
        reduce(t, buf, block, parent, first, second, tag, &mut fold)?;
    } else {
        let mut scratch = crate::copy::to_vec(buf);
        reduce(
            t,
            &mut scratch,
            block,
            parent,
            first,
            second,
            tag,
            &mut fold,
        )?;
    }
    // Acknowledge back along every edge (`super::acknowledge`, which goes through the sources
    // backwards): the child received from second, whose subtree is the taller, first.
    super::acknowledge(t, parent, [first, second].into_iter().flatten(), tag)
}

/// The two ranges of ranks `(lo, hi)` (inclusive; empty when lo > hi) that hang under `root`
/// of `p ≥ 2` ranks, each reduced by a post-order tree whose top hi is a child of the root, in
/// the order the root receives them (the smaller first).
fn parts(p: usize, root: usize) -> [(usize, usize); 2] {
    debug_assert!(p >= 2 && root < p);
    if root == p - 1 {
        // The children of p − 1 in the tree over [0, p − 1]: right [⌊p/2⌋, p − 2], then left.
        let l = p / 2;
        [(l, p - 2), (0, l - 1)]
    } else if root == 0 {
        // The mirror image: the smaller range [1, ⌊(p − 1)/2⌋] first (possibly empty).
        let m = (p - 1) / 2;
        [(1, m), (m + 1, p - 1)]
    } else {
        let (below, above) = ((0, root - 1), (root + 1, p - 1));
        if root <= p - 1 - root {
            [below, above]
        } else {
            [above, below]
        }
    }
}

/// Whom rank `r` of `p ≥ 2` talks to in the reduce to `root`.
fn ranks(r: usize, p: usize, root: usize) -> Ranks {
    if r == root {
        let [first, second] = parts(p, root).map(|(lo, hi)| (lo <= hi).then_some(hi));
        let (first, second) = match (first, second) {
            (None, s) => (s, None),
            f => f,
        };
        return Ranks {
            parent: None,
            first,
            second,
        };
    }
    let (lo, hi) = parts(p, root)
        .into_iter()
        .find(|&(lo, hi)| lo <= r && r <= hi)
        .expect("every rank but the root lies in one part");
    let (left, right) = tree::children(r, lo, hi);
    // The right child (never the taller) overlaps the send up; a single child is a left one.
    let (first, second) = match (left, right) {
        (Some(l), Some(rt)) => (Some(rt), Some(l)),
        (l, _) => (l, None),
    };
    Ranks {
        parent: Some(tree::parent(r, lo, hi).unwrap_or(root)),
        first,
        second,
    }
}

/// Whom a rank talks to in the pipelined reduce.
#[derive(Debug, Clone, Copy)]
struct Ranks {
    /// Where this rank's finished blocks go (`None` for the root).
    parent: Option<usize>,
    /// The child whose block k is received while block k − 1 goes to `parent`.
    first: Option<usize>,
    /// The other child, received from after `first`.
    second: Option<usize>,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Folds the partial results of the schedule's tree symbolically, as (first, last) rank
    /// spans that must be adjacent when combined: every rank but the root has one parent,
    /// which names it as a child; every rank is reached; the root ends with the span of all p
    /// ranks, which only the rank order can give.
    #[test]
    fn the_tree_folds_every_rank_in_order() {
        fn span(x: usize, p: usize, root: usize, seen: &mut [bool]) -> (usize, usize) {
            assert!(!seen[x], "rank {x} reached twice (p = {p}, root {root})");
            seen[x] = true;
            let me = ranks(x, p, root);
            let mut acc = (x, x);
            for c in [me.first, me.second].into_iter().flatten() {
                assert_eq!(ranks(c, p, root).parent, Some(x), "p = {p}, root {root}");
                let (lo, hi) = span(c, p, root, seen);
                // Folded on the side where the child's ranks lie, as `pipelined_tree` does.
                acc = match c < x {
                    true => {
                        assert_eq!(hi + 1, acc.0, "p = {p}, root {root}, at {x}");
                        (lo, acc.1)
                    }
                    false => {
                        assert_eq!(acc.1 + 1, lo, "p = {p}, root {root}, at {x}");
                        (acc.0, hi)
                    }
                };
            }
            acc
        }
        for p in 2..=70 {
            for root in 0..p {
                assert_eq!(ranks(root, p, root).parent, None);
                let mut seen = vec![false; p];
                assert_eq!(
                    span(root, p, root, &mut seen),
                    (0, p - 1),
                    "p = {p}, root {root}"
                );
                assert!(
                    seen.iter().all(|&s| s),
                    "p = {p}, root {root}: a rank is left out"
                );
            }
        }
    }

    /// At root p − 1 the tree is Träff's over all p ranks, children served right first.
    #[test]
    fn root_p_minus_1_is_the_tree_over_all_ranks() {
        for p in 2..=70 {
            for x in 0..p {
                let me = ranks(x, p, p - 1);
                assert_eq!(me.parent, tree::parent(x, 0, p - 1), "p = {p}, rank {x}");
                let (left, right) = tree::children(x, 0, p - 1);
                let want = if right.is_some() {
                    [right, left]
                } else {
                    [left, None]
                };
                assert_eq!([me.first, me.second], want);
            }
        }
    }
}
