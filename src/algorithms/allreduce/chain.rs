//! The chain allreduce, segmented and pipelined: the partial result runs up the chain
//! 0 → 1 → … → p−1, each rank combining its own vector on the right of the prefix it
//! receives, and the result runs back down p−1 → … → 0.
//!
//! This is the "Circle-Allreduce" of the course report on five Send/Recv allreduce algorithms
//! (`/work/shared/papers/004_051d64547ad248ed.txt`, §2.2: a summing pass up the chain, then a
//! pass back down), which cuts the data into N slices and charges each of the 2(p−1) hops all
//! N of them one after another. Here the slices form a pipeline instead, the idea the classic
//! table of collectives (`001_ce9166afca5d064a.txt`, Broadcast and Reduce) applies to trees:
//! split the vector into packets and send them one after another, so that a rank works on
//! block k while its successor works on block k−1. With b blocks a phase takes
//! p−1 + b−1 block steps instead of b·(p−1).
//!
//! **Order.** Rank r receives block k of x₀ ⊙ … ⊙ x_{r−1} from r − 1 and folds it in on the
//! left of its own (`Op::fold_left`), so rank p−1 ends with x₀ ⊙ … ⊙ x_{p−1} exactly, for any
//! associative op; every other rank gets a copy of its bits.
//!
//! **Shape.** The chain is the tree in which rank r's only child is r − 1 and its parent is
//! r + 1, so both passes are the pipelined reduce and broadcast of [`super::pipeline`], which
//! the binary-tree allreduce runs over its own tree: a middle rank reduces block k straight
//! from its predecessor while its successor reduces block k − 1 straight from it, blocks are
//! cut so that ranks with different lengths meet a mismatch, and neither pass can deadlock
//! (argued there).

use super::pipeline::{broadcast, reduce};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Chain allreduce of `buf` under `op` (any op: the chain combines in rank order), in
/// pipelined blocks of `block` elements (at least 1 is used).
pub(crate) fn chain<Tr: Transport, T: Elem, O: Op<T>>(
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
    let pred = r.checked_sub(1);
    let succ = (r + 1 < p).then_some(r + 1);
    // Up: the prefix from the predecessor goes on the left of what this rank holds.
    let mut up = |_: usize, acc: &mut [T], inc: &[T]| op.fold_left(inc, acc);
    // The chain is the tree in which rank r's one child is r − 1 and its parent r + 1.
    reduce(t, buf, block, succ, pred, None, tag, &mut up)?;
    // Down: the result, copied, with the same overlap.
    broadcast(t, buf, block, succ, [None, pred], tag)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::op::{non_commutative, Sum};
    use crate::shm::testing::spmd;
    use crate::transport::shm::ShmTransport;

    const PS: [usize; 10] = [1, 2, 3, 4, 5, 7, 8, 13, 17, 33];

    /// Element counts for `p` ranks and blocks of `block`: empty, tiny, p − 1, odd, exact
    /// multiples of the block and several blocks with a remainder.
    fn counts(p: usize, block: usize) -> Vec<usize> {
        vec![0, 1, 2, p - 1, 2 * p + 1, block, 3 * block, 3 * block + 5]
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
            for block in [1usize, 3, 64, 1000] {
                for n in counts(p, block) {
                    let out = spmd(p, |member| {
                        let r = member.rank() as u32;
                        let mut v = vec![(r, r + 1); n];
                        chain(
                            &ShmTransport::coll(member, "test"),
                            &mut v,
                            &span,
                            block,
                            Tag::P2P,
                        )
                        .map(|()| v)
                    });
                    for v in out {
                        assert_eq!(v.unwrap(), vec![(0, p as u32); n], "p={p} block={block}");
                    }
                }
            }
        }
    }

    /// Integer sums exactly, and float sums bit-identical on every rank and equal to the
    /// sequential left-to-right sum (the chain's own order), with blocks of 8192 elements (the
    /// automatic size's order) and of 7; tests/allreduce/blocks.rs passes blocks through the
    /// public API.
    #[test]
    fn sums_match_the_sequential_reference_on_every_rank() {
        let x = |r: usize, i: usize| ((r * 7919 + i * 104_729) % 1000) as f64 / 7.0 - 50.0;
        for p in PS {
            for n in [0usize, 1, 2, p - 1, 9, 8192, 16_384 * 3 + 7] {
                let want_u: Vec<u64> = (0..n)
                    .map(|i| (0..p).map(|r| (r * 1000 + i) as u64).sum())
                    .collect();
                let want_f: Vec<f64> = (0..n)
                    .map(|i| (1..p).fold(x(0, i), |s, r| s + x(r, i)))
                    .collect();
                let out = spmd(p, |member| {
                    let r = member.rank();
                    let mut u: Vec<u64> = (0..n).map(|i| (r * 1000 + i) as u64).collect();
                    let t = ShmTransport::coll(member, "test");
                    chain(&t, &mut u, &Sum, 8192, Tag::P2P)?;
                    let mut f: Vec<f64> = (0..n).map(|i| x(r, i)).collect();
                    chain(&t, &mut f, &Sum, 8192, Tag::P2P)?;
                    let mut g: Vec<f64> = (0..n).map(|i| x(r, i)).collect();
                    chain(
                        &ShmTransport::coll(member, "test"),
                        &mut g,
                        &Sum,
                        7,
                        Tag::P2P,
                    )?;
                    crate::Result::Ok((u, f, g))
                });
                for res in out {
                    let (u, f, g) = res.unwrap();
                    assert_eq!(u, want_u, "p={p} n={n}");
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&f), bits(&want_f), "p={p} n={n}");
                    assert_eq!(bits(&g), bits(&want_f), "p={p} n={n}");
                }
            }
        }
    }

    /// A rank with another length gets an error (it, or a peer, sees a mismatch), never a
    /// hang — including lengths that differ by whole blocks.
    #[test]
    fn length_mismatch_is_an_error_not_a_hang() {
        for (p, odd) in [(2usize, 0usize), (2, 1), (3, 1), (4, 3), (5, 2)] {
            for (n, m) in [(0usize, 1usize), (8, 16), (16, 8), (8, 0), (7, 8), (24, 26)] {
                let out = spmd(p, |member| {
                    let len = if member.rank() == odd { m } else { n };
                    let mut v = vec![1u64; len];
                    chain(
                        &ShmTransport::coll(member, "test"),
                        &mut v,
                        &Sum,
                        8,
                        Tag::P2P,
                    )
                });
                assert!(out.iter().all(|r| r.is_err()), "p={p} n={n} m={m}: {out:?}");
                let mismatch = |r: &Result<()>| matches!(r, Err(crate::Error::Mismatch { .. }));
                assert!(out.iter().any(mismatch), "p={p} n={n} m={m}: {out:?}");
            }
        }
    }
}
