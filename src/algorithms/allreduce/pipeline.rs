//! The pipelined reduce and broadcast that the chain and the pipelined binary-tree allreduce
//! share: the same two passes over different tree shapes (a path for the chain, Träff's
//! post-order binary tree for the other).
//!
//! Both passes run over a rooted tree in which each child's subtree is a contiguous range of
//! ranks; a rank combines each child's blocks on the side of its own where that child's ranks
//! lie (the caller's `combine`, told which child; for the allreduces every child has lower
//! ranks, for the rooted reduce (`algorithms::reduce`) the root's children may lie on either
//! side), so the root ends with its subtree's operands in rank order, and every final block
//! is computed there once and copied down.
//!
//! **Blocks** ([`super::pipeline_blocks`]): all full blocks of B elements, then one block of the
//! remaining n mod B elements — possibly empty, and the only block when n < B, so an empty
//! vector still sends one empty message per edge and direction. Only the last block is
//! short, so ranks whose lengths differ meet a length mismatch rather than one waiting for a
//! block the other never sends.
//!
//! **No deadlock.** Every directed edge carries its blocks in order, and a posted send can be
//! taken by its receiver while the sender waits on the receive of the same `sendrecv`.
//! Write m(c, k) for block k on the edge from c to its parent q in the reduce. Its send is
//! posted once c has finished its steps up to k, which needs only blocks < k anywhere and
//! block k from c's own children; its receive is posted once q has finished its steps
//! before k and, if c is q's left child of two, received block k from the right child.
//! So m(c, k) waits only for messages of smaller (k, height of sender, left-after-right)
//! — a right sibling's subtree is never taller than the left one's — and the order is
//! well-founded: every message is delivered. In the broadcast, block k on the edge q → c
//! waits only for blocks < k, for block k on the edges above q, and (for the left child) for
//! block k on q's edge to its right child: smaller (k, depth of receiver,
//! left-after-right). A rank starts the broadcast only after its reduce, and reduce messages
//! never wait for broadcast ones (they use the other direction of each edge), so the two
//! phases cannot wait on each other in a cycle either. This holds for every p (a rank with
//! one child has a left child only and skips the second receive and send) and every number
//! of blocks.

use crate::algorithms::blocks::{block_range, pipeline_blocks};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;

/// Folds a child's block into the accumulator: `(child's rank, accumulator, child's block)`.
pub(crate) type ChildFold<'a, T> = dyn FnMut(usize, &mut [T], &[T]) + 'a;

/// The pipelined reduce: each block is combined with `first`'s and then `second`'s partial
/// result (by `combine`, given the child's rank, the accumulator and the child's block) and
/// sent to `parent`, the send of block k − 1 overlapping the receive of block k from `first`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce<Tr: Transport, T: Elem>(
    t: &Tr,
    buf: &mut [T],
    block: usize,
    parent: Option<usize>,
    first: Option<usize>,
    second: Option<usize>,
    tag: Tag,
    combine: &mut ChildFold<'_, T>,
) -> Result<()> {
    let n = buf.len();
    // The full blocks and then the short one (possibly empty): see the module docs.
    let blocks = pipeline_blocks(n, block);
    for k in 0..blocks {
        let cur = block_range(n, block, k);
        // Block k − 1 (finished, going up) and block k (being combined) are disjoint.
        let (done, rest) = buf.split_at_mut(cur.start);
        let acc = &mut rest[..cur.len()];
        let prev = (k > 0).then(|| &done[block_range(n, block, k - 1)]);
        match (parent.zip(prev), first) {
            (Some((q, send)), Some(c)) => {
                t.sendrecv_reduce(q, send, c, acc, tag, &mut |a, i| combine(c, a, i))?
            }
            (Some((q, send)), None) => t.send(q, tag, send)?,
            (None, Some(c)) => t.recv_reduce(c, tag, acc, &mut |a, i| combine(c, a, i))?,
            (None, None) => {}
        }
        if let Some(c) = second {
            t.recv_reduce(c, tag, acc, &mut |a, i| combine(c, a, i))?;
        }
    }
    match parent {
        Some(q) => t.send(q, tag, &buf[block_range(n, block, blocks - 1)]),
        None => Ok(()),
    }
}

/// The pipelined broadcast: each block is received from `parent` (the root has none) and sent
/// on to `children` in order, the send of block k − 1 to the last child overlapping the
/// receive of block k.
pub(crate) fn broadcast<Tr: Transport, T: Elem>(
    t: &Tr,
    buf: &mut [T],
    block: usize,
    parent: Option<usize>,
    children: [Option<usize>; 2],
    tag: Tag,
) -> Result<()> {
    let n = buf.len();
    let blocks = pipeline_blocks(n, block);
    let [early, last] = children;
    for k in 0..blocks {
        let cur = block_range(n, block, k);
        let (done, rest) = buf.split_at_mut(cur.start);
        let recv = &mut rest[..cur.len()];
        let prev = (k > 0).then(|| &done[block_range(n, block, k - 1)]);
        if let (Some(c), Some(send)) = (early, prev) {
            t.send(c, tag, send)?;
        }
        match (parent, last.zip(prev)) {
            (Some(q), Some((c, send))) => t.sendrecv(c, send, q, recv, tag)?,
            (Some(q), None) => t.recv(q, tag, recv)?,
            (None, Some((c, send))) => t.send(c, tag, send)?,
            (None, None) => {}
        }
    }
    let end = &buf[block_range(n, block, blocks - 1)];
    for c in children.into_iter().flatten() {
        t.send(c, tag, end)?;
    }
    Ok(())
}
