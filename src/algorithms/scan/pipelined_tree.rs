//! The pipelined binary-tree prefix: an up phase that reduces every subtree and a down phase
//! that hands every subtree the prefix of the ranks before it, both pipelined in blocks.
//!
//! This is the tree scan of the classic collective table (`/work/shared/papers/
//! 001_ce9166afca5d064a.txt`) and of Sanders, Speck and Träff 2009 ("Two-tree algorithms for
//! full bandwidth broadcast, reduction and scan", §scan), here on one tree: Träff's post-order
//! numbered binary tree over all ranks ([`crate::algorithms::tree`], root p − 1), whose every
//! subtree is a contiguous rank range [a, r] ending at its root r, the left child's subtree
//! [a, a + L − 1] below the right child's [a + L, r − 1].
//!
//! **Up phase.** Rank r receives its left subtree's total L and its right subtree's total R
//! (in separate vectors `l` and `lr`), combines `lr` ← L ⊙ R and `buf` ← L ⊙ R ⊙ x_r, and
//! sends `buf` (its subtree's total) to its parent; a leaf sends its input.
//!
//! **Down phase.** Rank r receives from its parent the prefix P = x₀ ⊙ … ⊙ x_{a−1} of the
//! ranks before its subtree — unless a = 0 (the left spine), whose prefix is empty and which
//! therefore gets no message. It sends P to its left child (whose subtree also starts at a,
//! so only when a > 0) and P ⊙ L (just L when a = 0) to its right child, and ends with
//! P ⊙ L ⊙ R ⊙ x_r = P ⊙ `buf` (inclusive) or P ⊙ L ⊙ R = P ⊙ `lr` (exclusive; a leaf's is P,
//! and rank 0, the leaf with a = 0, keeps its input). Every combination puts the operand of
//! lower ranks on the left, so the order is that of the ranks for any associative op.
//!
//! **Pipelining.** Both phases move blocks of `block` elements ([`pipeline_blocks`]: the
//! full blocks, then one of n mod B, possibly empty, so that every edge carries at least one
//! message). The up phase is the loop of `algorithms::reduce::pipelined_tree`: step k
//! receives block k from the children (the first while sending block k − 1 to the parent)
//! and combines it. The down phase is the pipelined broadcast's loop: step k receives block k
//! from the parent while sending block k − 1 to the first child, then to the second, and then
//! computes block k's messages and result. The phases run one after the other on each rank
//! (not overlapped, as Sanders–Speck–Träff's doubly pipelined form would): about
//! 2h + 2(b − 1) steps each on a tree of height h in b blocks, which is what
//! `Scan::block_elements` gives the pipelining lemma.
//!
//! **No deadlock.** Each phase alone is the reduce's or the broadcast's pipeline, whose
//! arguments carry over (every edge carries its blocks in order, and a message of block k
//! waits only for messages of smaller blocks or of block k lower in the tree, for the up
//! phase, or higher in it, for the down phase). A rank starts its down phase only after its
//! last up message was taken, so a rank in the down phase never holds up one in the up phase:
//! the up phase completes everywhere, and then the down phase does.
//!
//! **Memory.** A rank with children keeps `l` and `lr` (two vectors of n); a rank below the
//! left spine keeps the prefix `pre` (one more); `buf` holds the subtree total, then the
//! result.

use crate::algorithms::blocks::{block_range, pipeline_blocks};
use crate::algorithms::tree;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Pipelined tree scan of `buf` under `op` (inclusive, or exclusive if `exclusive`), in
/// blocks of `block` elements (at least 1 is used).
pub(super) fn pipelined_tree<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    block: usize,
    exclusive: bool,
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    if p <= 1 {
        return Ok(());
    }
    let top = p - 1;
    let block = block.max(1);
    let n = buf.len();
    let blocks = pipeline_blocks(n, block);
    let parent = tree::parent(r, 0, top);
    let (left, right) = tree::children(r, 0, top);
    // Whether a prefix comes from the parent: the subtree does not start at rank 0.
    let has_prefix = *tree::subtree(r, 0, top).start() > 0;
    // A vector of n elements where `needed` (its initial contents are overwritten).
    let scratch = |needed: bool| {
        if needed {
            crate::copy::to_vec(buf)
        } else {
            Vec::new()
        }
    };
    let mut l: Vec<T> = scratch(left.is_some());
    let mut lr: Vec<T> = scratch(right.is_some());
    let mut pre: Vec<T> = scratch(has_prefix);

    // Up phase: `buf` becomes L ⊙ R ⊙ x and goes to the parent block by block; the right
    // child's transfer (or the left's if alone) overlaps the send to the parent.
    for k in 0..=blocks {
        let prev = k.checked_sub(1).map(|j| block_range(n, block, j));
        let cur = (k < blocks).then(|| block_range(n, block, k));
        let split = cur.as_ref().map_or(n, |c| c.start);
        let (done, rest) = buf.split_at_mut(split);
        let send = prev.clone().zip(parent).map(|(b, q)| (q, &done[b]));
        // Receive block k of the first child while sending block k − 1 up.
        let first = cur.clone().and(right.or(left));
        match (send, first) {
            (Some((q, data)), Some(c)) => {
                let into = if Some(c) == right { &mut lr } else { &mut l };
                let cur = cur.clone().unwrap_or(0..0);
                t.sendrecv(q, data, c, &mut into[cur], tag)?;
            }
            (Some((q, data)), None) => t.send(q, tag, data)?,
            (None, Some(c)) => {
                let into = if Some(c) == right { &mut lr } else { &mut l };
                let cur = cur.clone().unwrap_or(0..0);
                t.recv(c, tag, &mut into[cur])?;
            }
            (None, None) => {}
        }
        let Some(cur) = cur else { break };
        if let (Some(c), Some(_)) = (left, right) {
            t.recv(c, tag, &mut l[cur.clone()])?;
        }
        let x = &mut rest[..cur.len()];
        if right.is_some() {
            op.fold_left(&l[cur.clone()], &mut lr[cur.clone()]);
            op.fold_left(&lr[cur], x);
        } else if left.is_some() {
            op.fold_left(&l[cur], x);
        }
    }

    // Down phase: receive block k of P while passing block k − 1 on, then compute block k.
    // The children in sending order, each with what it gets: the right child P ⊙ L (in `l`),
    // the left child P (in `pre`, only when there is a P).
    let kids: [Option<(usize, bool)>; 2] = [
        right.map(|c| (c, false)),
        left.filter(|_| has_prefix).map(|c| (c, true)),
    ];
    let mut kids = kids.into_iter().flatten();
    let (first, second) = (kids.next(), kids.next());
    for k in 0..=blocks {
        let prev = k.checked_sub(1).map(|j| block_range(n, block, j));
        let cur = (k < blocks).then(|| block_range(n, block, k));
        let split = cur.as_ref().map_or(n, |c| c.start);
        {
            let at = split.min(pre.len());
            let (pre_done, pre_rest) = pre.split_at_mut(at);
            let out = |(c, is_left): (usize, bool)| {
                let b = prev.clone().unwrap_or(0..0);
                (c, if is_left { &pre_done[b] } else { &l[b] })
            };
            let send = first.filter(|_| prev.is_some()).map(out);
            let recv = cur.clone().filter(|_| has_prefix).and(parent);
            match (send, recv) {
                (Some((c, data)), Some(q)) => {
                    let len = cur.as_ref().map_or(0, |c| c.len());
                    t.sendrecv(c, data, q, &mut pre_rest[..len], tag)?;
                }
                (Some((c, data)), None) => t.send(c, tag, data)?,
                (None, Some(q)) => {
                    let len = cur.as_ref().map_or(0, |c| c.len());
                    t.recv(q, tag, &mut pre_rest[..len])?;
                }
                (None, None) => {}
            }
            if let Some((c, data)) = second.filter(|_| prev.is_some()).map(out) {
                t.send(c, tag, data)?;
            }
        }
        let Some(cur) = cur else { break };
        let x = &mut buf[cur.clone()];
        let prefix = has_prefix.then(|| &pre[cur.clone()]);
        if exclusive {
            // P ⊙ L ⊙ R (or P ⊙ L, or P for a leaf, or L ⊙ R on the left spine).
            let mid = if right.is_some() {
                Some(&lr[cur.clone()])
            } else if left.is_some() {
                Some(&l[cur.clone()])
            } else {
                None
            };
            match (prefix, mid) {
                (Some(pv), Some(m)) => {
                    crate::copy::copy_slice(&mut *x, m);
                    op.fold_left(pv, x);
                }
                (Some(pv), None) => x.copy_from_slice(pv),
                (None, Some(m)) => x.copy_from_slice(m),
                (None, None) => {} // rank 0 keeps its input
            }
        } else if let Some(pv) = prefix {
            op.fold_left(pv, x);
        }
        // The right child's message: P ⊙ L (L alone on the left spine).
        if let (Some(pv), Some(_)) = (prefix, right) {
            op.fold_left(pv, &mut l[cur]);
        }
    }
    Ok(())
}
