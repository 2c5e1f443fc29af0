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
//! **Blocks.** Cut as in [`super::chain`]: all full blocks of B elements, then one block of the
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

use super::{block_range, pipeline_blocks};
use crate::algorithms::tree;
use crate::error::Result;
use crate::op::Op;
use crate::transport::{Elem, Tag, Transport};

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
    let mut up = |acc: &mut [T], inc: &[T]| op.fold_left(inc, acc);
    reduce(t, buf, block, parent, first, second, tag, &mut up)?;
    // The broadcast serves the right child (if any) first, then the left one, whose send
    // overlaps the receive from the parent.
    broadcast(t, buf, block, parent, [right, left], tag)
}

/// The pipelined reduce: each block is combined with `first`'s and then `second`'s partial
/// result (by `combine`) and sent to `parent`, the send of block k − 1 overlapping the
/// receive of block k from `first`.
#[allow(clippy::too_many_arguments)]
fn reduce<Tr: Transport, T: Elem>(
    t: &Tr,
    buf: &mut [T],
    block: usize,
    parent: Option<usize>,
    first: Option<usize>,
    second: Option<usize>,
    tag: Tag,
    combine: &mut dyn FnMut(&mut [T], &[T]),
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
            (Some((q, send)), Some(c)) => t.sendrecv_reduce(q, send, c, acc, tag, combine)?,
            (Some((q, send)), None) => t.send(q, tag, send)?,
            (None, Some(c)) => t.recv_reduce(c, tag, acc, combine)?,
            (None, None) => {}
        }
        if let Some(c) = second {
            t.recv_reduce(c, tag, acc, combine)?;
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
fn broadcast<Tr: Transport, T: Elem>(
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::op::{non_commutative, Sum};
    use crate::select::{Algorithm, Block};

    const PS: [usize; 18] = [
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 33,
    ];

    /// Element counts for blocks of `block`: empty, one, just under, at and over one block,
    /// and several blocks with a remainder.
    fn counts(block: usize) -> Vec<usize> {
        let mut c = vec![0, 1, block - 1, block, block + 1, 5 * block + 2];
        c.sort_unstable();
        c.dedup();
        c
    }

    /// Rank r contributes the span (r, r + 1) at every element; spans only combine when
    /// adjacent (the op panics otherwise), so the result is (0, p) exactly when every
    /// combination was in rank order.
    #[test]
    fn non_commutative_spans_in_rank_order_for_every_block_size() {
        let span = non_commutative(|a: &(u32, u32), b: &(u32, u32)| {
            assert_eq!(a.1, b.0, "operands out of rank order");
            (a.0, b.1)
        });
        for p in PS {
            for block in [1usize, 4, 64] {
                for n in counts(block) {
                    let out = crate::run(p, |comm| {
                        let r = comm.rank() as u32;
                        let mut v = vec![(r, r + 1); n];
                        pipelined_tree(&comm.coll("test"), &mut v, &span, block, Tag::P2P)
                            .map(|()| v)
                    })
                    .unwrap();
                    for v in out {
                        let want = vec![(0, p as u32); n];
                        assert_eq!(v.unwrap(), want, "p={p} block={block} n={n}");
                    }
                }
            }
        }
    }

    /// Float sums are bit-identical on every rank (and integer sums exact), with small blocks
    /// and through the public API with automatic and explicit blocks.
    #[test]
    fn f64_sums_bit_identical_on_every_rank() {
        let x = |r: usize, i: usize| ((r * 7919 + i * 104_729) % 1000) as f64 / 7.0 - 50.0;
        for p in PS {
            for n in [0usize, 1, 2, p + 1, 9, 1001, 8192 * 2 + 7] {
                let want_u: Vec<u64> = (0..n)
                    .map(|i| (0..p).map(|r| (r * 1000 + i) as u64).sum())
                    .collect();
                let out = crate::run(p, |comm| {
                    let r = comm.rank();
                    let mut u: Vec<u64> = (0..n).map(|i| (r * 1000 + i) as u64).collect();
                    let auto = Algorithm::PipelinedTree { block: Block::Auto };
                    comm.allreduce_with(&mut u, Sum, auto)?;
                    let mut f: Vec<f64> = (0..n).map(|i| x(r, i)).collect();
                    comm.allreduce_with(&mut f, Sum, auto)?;
                    let mut g: Vec<f64> = (0..n).map(|i| x(r, i)).collect();
                    let three = Algorithm::PipelinedTree {
                        block: Block::Elements(3),
                    };
                    comm.allreduce_with(&mut g, Sum, three)?;
                    let mut h: Vec<f64> = (0..n).map(|i| x(r, i)).collect();
                    pipelined_tree(&comm.coll("test"), &mut h, &Sum, 7, Tag::P2P)?;
                    crate::Result::Ok((u, f, g, h))
                })
                .unwrap();
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let mut first: Option<(Vec<u64>, Vec<u64>, Vec<u64>)> = None;
                for res in out {
                    let (u, f, g, h) = res.unwrap();
                    assert_eq!(u, want_u, "p={p} n={n}");
                    // The tree's order is the same for every block size.
                    assert_eq!(bits(&f), bits(&g), "p={p} n={n}");
                    assert_eq!(bits(&f), bits(&h), "p={p} n={n}");
                    let mine = (bits(&f), bits(&g), bits(&h));
                    match &first {
                        None => first = Some(mine),
                        Some(f0) => assert_eq!(&mine, f0, "p={p} n={n}: ranks differ"),
                    }
                }
            }
        }
    }

    /// A rank with another length gets an error (it, or a peer, sees a mismatch), never a
    /// hang — including lengths that differ by whole blocks.
    #[test]
    fn length_mismatch_is_an_error_not_a_hang() {
        for (p, odd) in [
            (2usize, 0usize),
            (2, 1),
            (3, 0),
            (3, 1),
            (4, 3),
            (5, 2),
            (7, 4),
        ] {
            for (n, m) in [(0usize, 1usize), (8, 16), (16, 8), (8, 0), (7, 8), (24, 26)] {
                let out = crate::run(p, |comm| {
                    let len = if comm.rank() == odd { m } else { n };
                    let mut v = vec![1u64; len];
                    pipelined_tree(&comm.coll("test"), &mut v, &Sum, 8, Tag::P2P)
                })
                .unwrap();
                assert!(out.iter().all(|r| r.is_err()), "p={p} n={n} m={m}: {out:?}");
                let mismatch = |r: &Result<()>| matches!(r, Err(crate::Error::Mismatch { .. }));
                assert!(out.iter().any(mismatch), "p={p} n={n} m={m}: {out:?}");
            }
        }
    }
}
