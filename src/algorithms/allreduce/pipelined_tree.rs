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
