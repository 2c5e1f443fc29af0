//! The pipelined binary-tree reduce: blocks of the vector go up Träff's post-order numbered
//! binary tree over all ranks (root p − 1, [`crate::algorithms::tree`]), and the top rank
//! p − 1 forwards each finished block to the root.
//!
//! This is the reduce half of the baseline of Träff 2021, "A doubly-pipelined, dual-root
//! reduction-to-all algorithm and implementation" (`/work/shared/papers/000_0c86cefcaf7b0d0a.txt`),
//! the pipelined reduce on one binary tree of height h in b blocks: 2h + 2(b − 1) steps, each
//! moving m/b elements. The loop is the one of `algorithms::allreduce::pipeline::reduce`
//! (private to the allreduce), written again here with the forwarding added.
//!
//! **Order.** In post-order numbering the subtree of rank r is a contiguous range ending at r,
//! its left child's subtree below its right child's. Rank r folds block k of its right child's
//! partial result in on the left of its own (`Op::fold_left`), then its left child's, which
//! gives its subtree's operands in rank order: p − 1 ends with x₀ ⊙ … ⊙ x_{p−1} for any
//! associative op. Incoming blocks are combined straight from the child's published memory
//! (`recv_reduce` / `sendrecv_reduce`: one copy for rendezvous-sized blocks).
//!
//! **Any root.** The tree's order fixes its top at p − 1, so for root ≠ p − 1 the top treats
//! the root as its parent: step k + 1 of the top sends block k to the root, overlapping the
//! receive of block k + 1 from its first child, exactly as a non-top rank sends up. That adds
//! one hop to the pipeline's depth, not b. (Cutting the ranks into two trees at the root, as
//! the binomial reduce does, would save the hop but give the root three receives per block
//! instead of two, a third more time per block once the pipeline is full.)
//!
//! **Buffers.** The root works in `buf`: it is its output, so partial results may live there;
//! after sending its block k up (step k + 1, a blocking send, so the block may be reused), it
//! receives the finished block k from the top into the same place. A non-root rank with
//! children works in a scratch copy of `buf`, which is left unchanged; a leaf only sends from
//! `buf`.
//!
//! **Acknowledgement.** Once the root has its result it sends an empty message back along every
//! edge it received on, and every rank, once acknowledged by the rank it sent to, does the
//! same, so that no rank returns `Ok` from a call that failed elsewhere (see
//! `super::acknowledge`): h + 1 more hops of inline messages, after the b blocks.
//!
//! **Blocks.** All full blocks of B elements, then one block of the remaining n mod B (possibly
//! empty, and the only one of an empty vector), so every edge carries at least one message and
//! ranks of different lengths meet a mismatch.
//!
//! **No deadlock.** Every edge carries its blocks in order. Within the tree the argument of
//! the allreduce's pipeline holds unchanged: message m(c, k) (block k from c to its parent)
//! waits only for blocks < k and for block k of c's subtree, and of the right sibling's,
//! which is never taller. The forward f(k) from the top to the root is posted in the top's
//! step k + 1, after it received block k from all its children, and taken by the root at the
//! end of its step k + 1, after the root's own work on block k + 1 — which needs only
//! messages of its subtree for blocks ≤ k + 1 and its parent's taking m(root, k), neither of
//! which waits for f(k). The top's blocking on f(k) (its `sendrecv`) in turn delays only its
//! steps after k + 1, whose messages are of larger block index. Ordering messages by (block
//! index, then the tree order of the allreduce's argument, then forwards after tree
//! messages of the same block) every message waits only for smaller ones: all are delivered.

use crate::algorithms::blocks::{block_range, pipeline_blocks};
use crate::algorithms::tree;
use crate::error::Result;
use crate::op::Op;
use crate::transport::{Elem, Tag, Transport};

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
    let (p, r) = (t.size(), t.rank());
    if p <= 1 {
        return Ok(());
    }
    let top = p - 1;
    let block = block.max(1);
    // The top forwards to the root as if it were its parent.
    let parent = tree::parent(r, 0, top).or((r == top && root != top).then_some(root));
    let (left, right) = tree::children(r, 0, top);
    // The child whose transfer overlaps the parent's, and the other one (if there are two).
    let (first, second) = match (left, right) {
        (Some(l), Some(rt)) => (Some(rt), Some(l)),
        (l, _) => (l, None),
    };
    let result_from = (r == root && root != top).then_some(top);
    let ranks = Ranks {
        parent,
        first,
        second,
        result_from,
    };
    // A child's partial result covers lower ranks than what this rank holds.
    let mut up = |acc: &mut [T], inc: &[T]| op.fold_left(inc, acc);
    if r == root || first.is_none() {
        // The root's `buf` is its output; a leaf never writes its `buf` (it only sends).
        reduce(t, buf, block, ranks, tag, &mut up)?;
    } else {
        let mut scratch = buf.to_vec();
        reduce(t, &mut scratch, block, ranks, tag, &mut up)?;
    }
    // Acknowledge back along every edge (`super::acknowledge`); the root, which knows the
    // call succeeded, starts, and then takes the acknowledgement of its own tree parent.
    let sources = [left, right, result_from].into_iter().flatten();
    if r == root {
        super::acknowledge(t, None, sources, tag)?;
        super::acknowledge(t, parent, std::iter::empty(), tag)
    } else {
        super::acknowledge(t, parent, sources, tag)
    }
}

/// Whom a rank talks to in the pipelined reduce.
#[derive(Debug, Clone, Copy)]
struct Ranks {
    /// Where this rank's finished blocks go (its tree parent, or the root for the top).
    parent: Option<usize>,
    /// The child whose block k is received while block k − 1 goes to `parent`.
    first: Option<usize>,
    /// The other child, received from after `first`.
    second: Option<usize>,
    /// For the root when it is not the top: the top, which sends the finished blocks.
    result_from: Option<usize>,
}

/// The pipelined reduce in `work`: step k combines block k of `first`'s and `second`'s partial
/// results into `work` (by `combine`) while sending block k − 1 to `parent`, and then, on the
/// root below the top, receives the finished block k − 1 into `work`.
fn reduce<Tr: Transport, T: Elem>(
    t: &Tr,
    work: &mut [T],
    block: usize,
    ranks: Ranks,
    tag: Tag,
    combine: &mut dyn FnMut(&mut [T], &[T]),
) -> Result<()> {
    let Ranks {
        parent,
        first,
        second,
        result_from,
    } = ranks;
    let n = work.len();
    let blocks = pipeline_blocks(n, block);
    for k in 0..blocks {
        let cur = block_range(n, block, k);
        // Block k − 1 (finished, going up) and block k (being combined) are disjoint.
        let (done, rest) = work.split_at_mut(cur.start);
        let acc = &mut rest[..cur.len()];
        let prev = (k > 0).then(|| &done[block_range(n, block, k - 1)]);
        match (parent.zip(prev), first) {
            (Some((q, send)), Some(c)) => t.sendrecv_reduce(q, send, c, acc, tag, combine)?,
            (Some((q, send)), None) => t.send(q, tag, send)?,
            (None, Some(c)) => t.recv_reduce(c, tag, acc, combine)?,
            (None, None) => {}
        }
        if let Some(c) = second {
            t.recv_reduce(c, tag, acc, combine)?;
        }
        if let (Some(s), true) = (result_from, k > 0) {
            // Block k − 1 went up in this step (and the send returned): reuse its place.
            t.recv(s, tag, &mut done[block_range(n, block, k - 1)])?;
        }
    }
    let last = block_range(n, block, blocks - 1);
    if let Some(q) = parent {
        t.send(q, tag, &work[last.clone()])?;
    }
    if let Some(s) = result_from {
        t.recv(s, tag, &mut work[last])?;
    }
    Ok(())
}
