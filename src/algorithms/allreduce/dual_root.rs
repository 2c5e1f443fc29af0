//! Träff's doubly-pipelined dual-root allreduce: Algorithm 1 of "A doubly-pipelined,
//! dual-root reduction-to-all algorithm and implementation" (Träff 2021,
//! `/work/shared/papers/000_0c86cefcaf7b0d0a.txt`).
//!
//! **Trees.** The ranks form two post-order numbered balanced binary trees
//! ([`crate::algorithms::tree`]): the lower tree over ranks `0..⌈p/2⌉` and the upper tree over
//! the rest. Their roots, ⌈p/2⌉ − 1 and p − 1, are each other's *dual*. A rank at depth d of
//! its tree works through rounds j = 0, 1, …, b + d for b pipeline blocks Y[0..b]:
//!
//! 1. with each child (first the right one, then the left one): send the finished result
//!    block `Y[j − d − 1]` down while receiving the child's partial block j, which is combined
//!    into `Y[j]` on the left (`Op::fold_left`: child ⊙ own, right child first, then left child,
//!    so that `Y[j]` holds the subtree's operands in rank order);
//! 2. a non-root sends its partial `Y[j]` to its parent while receiving the finished block
//!    `Y[j − d]`; a root exchanges `Y[j]` with its dual and combines: the lower root computes
//!    own ⊙ dual's and the upper root dual's ⊙ own, so both compute lower ⊙ upper — the same
//!    operands in the same order, hence the same bits — and `Y[j]` is finished.
//!
//! Blocks with an index outside 0..b are *virtual* and empty: their messages are not sent, and
//! since both ends of an edge compute the same indices, nobody waits for them. Every edge thus
//! carries partial results up and finished blocks down at the same time (the "doubly"
//! pipelined part), and each round is at most three bidirectional exchanges.
//!
//! **Why it is correct** (the paper's induction on depth): before round j a rank at depth d
//! holds the finished blocks up to Y[j − d − 1], which it passes down in round j, and it
//! receives Y[j − d] from its parent (depth d − 1), which by the same claim one level up held
//! the finished blocks up to Y[j − (d − 1) − 1] = Y[j − d] before its round j. The roots
//! (d = 0) finish `Y[j]` in round j itself, by the exchange with the dual.
//!
//! **Rounds.** For p = 2^h − 2 (two complete trees of height h − 2) the first block reaches
//! the last leaf after 4h − 3 exchanges and each further block takes 3, so the time is
//! (4h − 3 + 3(b − 1))(α + βm/b) against 2(2h + 2(b − 1))(α + βm/b) of the pipelined
//! reduce-then-broadcast on one tree ([`super::pipelined_tree`]): about 3βm instead of 4βm for
//! long vectors.
//!
//! **No deadlock.** Order the exchanges by (round j, deeper edges first, within a parent the
//! right child before the left, the dual exchange after both roots' child exchanges). An
//! exchange on the edge between q and its child c in round j waits only for exchanges of
//! earlier rounds, for c's exchanges with its own children in round j (deeper), and for q's
//! exchange with its other child if that one comes first — all smaller in that order; the dual
//! exchange waits only for the two roots' child exchanges of the round. The order is
//! well-founded, so every exchange completes (`sendrecv` posts its send before it waits for
//! its receive, and a skipped virtual message only removes a wait).
//!
//! **Blocks** ([`super::pipeline_blocks`]): the full blocks and one final short block,
//! possibly empty, so that an empty vector still exchanges one empty block and ranks whose
//! lengths differ meet a length mismatch rather than a missing message.
//!
//! **Copies.** Children's blocks are combined straight from the child's published memory
//! (`sendrecv_reduce`). The roots' exchange cannot do that — both would write the block the
//! other is reading — so a root receives its dual's block into a block-sized buffer first.

use super::{block_range, pipeline_blocks};
use crate::algorithms::tree;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;
use std::ops::Range;

/// Where this rank sits in the two trees.
struct Place {
    /// The tree's rank range `[lo, hi]` (its root is `hi`).
    lo: usize,
    /// The root of this rank's tree.
    hi: usize,
    /// This rank's depth in its tree.
    depth: usize,
    /// Parent, or `None` at a root.
    parent: Option<usize>,
    /// Children in the order of the exchanges: the right one (which the paper calls the
    /// first child, rank − 1) before the left one.
    children: [Option<usize>; 2],
}

impl Place {
    /// The place of rank `r` of `p ≥ 2`.
    fn of(r: usize, p: usize) -> Place {
        let split = p.div_ceil(2);
        let (lo, hi) = if r < split {
            (0, split - 1)
        } else {
            (split, p - 1)
        };
        let (left, right) = tree::children(r, lo, hi);
        let children = match (left, right) {
            (Some(l), Some(rt)) => [Some(rt), Some(l)],
            (l, _) => [l, None],
        };
        Place {
            lo,
            hi,
            depth: tree::depth(r, lo, hi),
            parent: tree::parent(r, lo, hi),
            children,
        }
    }
}

/// The elements of block `j` (which may be negative or ≥ `blocks`), or `None` for a virtual
/// block.
fn real(n: usize, block: usize, blocks: usize, j: isize) -> Option<Range<usize>> {
    let j = usize::try_from(j).ok().filter(|&j| j < blocks)?;
    Some(block_range(n, block, j))
}

/// Dual-root allreduce of `buf` under `op` (any associative op: both trees combine in rank
/// order and the roots put the lower tree's partial result on the left), in blocks of `block`
/// elements (at least 1 is used).
pub(crate) fn dual_root<Tr: Transport, T: Elem, O: Op<T>>(
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
    let n = buf.len();
    let blocks = pipeline_blocks(n, block);
    let me = Place::of(r, p);
    let d = me.depth as isize;
    // The roots' receive buffer for the dual's block (the block the dual reads from us while we
    // receive must not change until the exchange is over).
    // Sized once, as a copy of the first block (later blocks are never longer).
    let mut dual_block: Vec<T> = match me.parent {
        None => crate::copy::to_vec(&buf[block_range(n, block, 0)]),
        Some(_) => Vec::new(),
    };
    let dual = if me.hi == p - 1 { me.lo - 1 } else { p - 1 };
    let lower_root = me.lo == 0;
    let mut up = |acc: &mut [T], inc: &[T]| op.fold_left(inc, acc);
    for j in 0..=(blocks as isize + d) {
        let cur = real(n, block, blocks, j);
        for c in me.children.into_iter().flatten() {
            let down = real(n, block, blocks, j - d - 1);
            match (down, cur.clone()) {
                (Some(s), Some(a)) => {
                    // s ends at or before a starts (s is an earlier block).
                    let (done, rest) = buf.split_at_mut(a.start);
                    let acc = &mut rest[..a.len()];
                    t.sendrecv_reduce(c, &done[s], c, acc, tag, &mut up)?;
                }
                (Some(s), None) => t.send(c, tag, &buf[s])?,
                (None, Some(a)) => t.recv_reduce(c, tag, &mut buf[a], &mut up)?,
                (None, None) => {}
            }
        }
        match me.parent {
            Some(q) => match (cur, real(n, block, blocks, j - d)) {
                (Some(s), Some(g)) => {
                    // d ≥ 1 below a root, so the finished block g lies before s.
                    let (done, rest) = buf.split_at_mut(s.start);
                    let send = &rest[..s.len()];
                    t.sendrecv(q, send, q, &mut done[g], tag)?;
                }
                (Some(s), None) => t.send(q, tag, &buf[s])?,
                (None, Some(g)) => t.recv(q, tag, &mut buf[g])?,
                (None, None) => {}
            },
            None => {
                if let Some(s) = cur {
                    // Receive into the side buffer: the dual reads `buf[s]` meanwhile.
                    let theirs = &mut dual_block[..s.len()];
                    let mine = &mut buf[s];
                    t.sendrecv(dual, &*mine, dual, theirs, tag)?;
                    if lower_root {
                        op.fold_right(mine, theirs);
                    } else {
                        op.fold_left(theirs, mine);
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testkit::{self, schedule};
    use super::*;

    schedule!(DualRoot, super::dual_root);

    #[test]
    fn non_commutative_spans_in_rank_order_for_every_block_size() {
        testkit::spans_in_rank_order(&DualRoot);
    }

    #[test]
    fn f64_sums_bit_identical_on_every_rank() {
        testkit::sums_bit_identical(&DualRoot, true);
    }

    #[test]
    fn length_mismatch_is_an_error_not_a_hang() {
        testkit::length_mismatch_fails(&DualRoot);
    }

    /// The two trees split the ranks as the module docs say, and the roots are duals.
    #[test]
    fn trees_and_duals() {
        for p in 2..=40 {
            let roots: Vec<usize> = (0..p)
                .filter(|&r| Place::of(r, p).parent.is_none())
                .collect();
            assert_eq!(roots, vec![p.div_ceil(2) - 1, p - 1], "p={p}");
            for r in 0..p {
                let me = Place::of(r, p);
                assert!(me.lo <= r && r <= me.hi);
                for c in me.children.into_iter().flatten() {
                    assert_eq!(Place::of(c, p).parent, Some(r), "p={p} r={r} c={c}");
                    assert_eq!(Place::of(c, p).depth, me.depth + 1);
                }
            }
        }
    }
}
