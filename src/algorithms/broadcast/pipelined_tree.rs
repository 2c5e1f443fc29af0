//! The pipelined binary-tree broadcast: the vector travels down Träff's post-order binary
//! tree in blocks, a rank forwarding block k − 1 to its children while it receives block k.
//!
//! This is the broadcast half of the baseline of Träff 2021, "A doubly-pipelined, dual-root
//! reduction-to-all algorithm and implementation" (§1: pipelined reduce, then pipelined
//! broadcast over one post-order binary tree), with the tree of `algorithms::tree`. For
//! b blocks and tree height h it takes 2h + 2(b − 1) steps of α + βm/b (the per-block cost of
//! a rank with two children is two sends), which `select::Broadcast::block_elements` feeds to
//! the pipelining lemma.
//!
//! **Relabelling.** The tree over `[0, p − 1]` is rooted at its highest rank, so rank r takes
//! the virtual rank v = (r + p − 1 − root) mod p: the root becomes p − 1, and the other ranks
//! follow it cyclically.
//!
//! **Blocks.** All full blocks of B elements, then one block of the remaining n mod B
//! (possibly empty, and the only block when n < B): an empty vector still sends one message
//! per edge, and since only the last block is short, ranks whose lengths differ meet a length
//! mismatch instead of waiting for a block that is never sent.
//!
//! **Schedule and progress.** Step k of a rank: send block k − 1 to its first child; then
//! receive block k from the parent while sending block k − 1 to its second child (one
//! `sendrecv`); after the last step, send the last block to every child. Block k on the edge
//! q → c waits only for smaller blocks on the same edge, for block k on the edges above q, and
//! (for the child served second) block k to q's other child: the messages are ordered by
//! (block, depth, sibling order), so every one is delivered and nothing deadlocks, for every
//! p and block count.

use super::absolute;
use crate::algorithms::tree;
use crate::error::Result;
use crate::transport::{Elem, Tag, Transport};
use std::ops::Range;

/// Pipelined binary-tree broadcast of `buf` from `root` in blocks of `block` elements (at
/// least 1 is used).
pub(super) fn pipelined_tree<Tr: Transport, T: Elem>(
    t: &Tr,
    buf: &mut [T],
    root: usize,
    block: usize,
    tag: Tag,
) -> Result<()> {
    let p = t.size();
    if p <= 1 {
        return Ok(());
    }
    let block = block.max(1);
    // Virtual rank v ↔ real rank (v + root + 1) mod p; the tree's root p − 1 is `root`.
    let v = (t.rank() + p - 1 - root) % p;
    let real = |u: usize| absolute(u + 1, root, p);
    let parent = tree::parent(v, 0, p - 1).map(real);
    let (left, right) = tree::children(v, 0, p - 1);
    // The right child (the smaller subtree) is served first; the send to the left one, whose
    // subtree is deeper, overlaps the receive from the parent.
    let (first, second) = match (left, right) {
        (Some(l), Some(rt)) => (Some(real(rt)), Some(real(l))),
        (l, _) => (None, l.map(real)),
    };
    let n = buf.len();
    let blocks = n / block + 1;
    for k in 0..blocks {
        let cur = block_range(n, block, k);
        let (done, rest) = buf.split_at_mut(cur.start);
        let incoming = &mut rest[..cur.len()];
        let prev = (k > 0).then(|| &done[block_range(n, block, k - 1)]);
        if let (Some(c), Some(out)) = (first, prev) {
            t.send(c, tag, out)?;
        }
        match (parent, second.zip(prev)) {
            (Some(q), Some((c, out))) => t.sendrecv(c, out, q, incoming, tag)?,
            (Some(q), None) => t.recv(q, tag, incoming)?,
            (None, Some((c, out))) => t.send(c, tag, out)?,
            (None, None) => {}
        }
    }
    let last = &buf[block_range(n, block, blocks - 1)];
    for c in [first, second].into_iter().flatten() {
        t.send(c, tag, last)?;
    }
    Ok(())
}

/// The elements of block `k` of `n` cut into blocks of `block`: full blocks, then the rest.
fn block_range(n: usize, block: usize, k: usize) -> Range<usize> {
    let start = k.saturating_mul(block).min(n);
    start..start.saturating_add(block).min(n)
}

#[cfg(test)]
mod tests {
    use super::block_range;

    /// The blocks tile the vector, only the last is short, and it may be empty.
    #[test]
    fn blocks_tile_the_vector() {
        for n in 0..50 {
            for b in 1..12 {
                let blocks = n / b + 1;
                let mut next = 0;
                for k in 0..blocks {
                    let r = block_range(n, b, k);
                    assert_eq!(r.start, next);
                    assert!(r.len() == b || k == blocks - 1);
                    next = r.end;
                }
                assert_eq!(next, n);
            }
        }
    }
}
