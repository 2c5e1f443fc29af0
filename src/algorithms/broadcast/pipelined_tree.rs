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
//! **Schedule, blocks and progress** are the broadcast pass shared with the allreduce
//! (`algorithms::allreduce::pipeline::broadcast`, where the no-deadlock argument is): block k
//! is received from the parent while block k − 1 goes to the second child, the right child
//! (the smaller subtree) is served first, and the last block may be empty, so an empty vector
//! still sends one message per edge and ranks whose lengths differ meet a mismatch.

use crate::algorithms::allreduce::pipeline;
use crate::algorithms::binomial_tree::absolute;
use crate::algorithms::tree;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;

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
    let children = [right.map(real), left.map(real)];
    pipeline::broadcast(t, buf, block, parent, children, tag)
}
