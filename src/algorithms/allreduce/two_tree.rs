//! The two-tree allreduce: Sanders, Speck and Träff, "Two-tree algorithms for full bandwidth
//! broadcast, reduction and scan", Parallel Computing 35(12), 2009, as a reduction followed
//! by a broadcast over the same pair of trees.
//!
//! **Trees** ([`crate::algorithms::inorder`]): two binary trees T1 and T2 over all p ranks in
//! which every rank is interior in at most one (T1's interior nodes are the odd ranks, T2's
//! rank 0 and the even ranks ≥ 2). The vector is cut into two halves: half 1, elements
//! [0, n − ⌊n/2⌋), travels through T1, half 2, the rest, through T2. Each half is cut into
//! pipeline blocks ([`super::pipeline_blocks`]): b₁ and b₂ blocks of B elements, the last
//! one short and possibly empty, so every edge carries at least one message per direction.
//!
//! **Schedule.** The edges of both trees are 2-coloured so that a rank's two in-edges differ
//! and a node's two child edges differ, and each edge e gets a broadcast delay dₑ of its
//! colour's parity that grows by 1 or 2 from parent edge to child edge (see `inorder`). Let D
//! be the largest delay and b = max(b₁, b₂). Each phase has S = D + 2(b − 1) + 1 steps:
//!
//! * the reduce: block k of a tree goes up edge e (child to parent) at step D − dₑ + 2k;
//! * then the broadcast: block k goes down edge e at step dₑ + 2k.
//!
//! The reduce is the broadcast run backwards in time with the block numbers reversed, so that
//! along every edge both phases carry block 0 first and the short block last (see **No
//! deadlock** for why that matters when lengths differ). A block index outside 0..bₜ is
//! virtual: no message, and both ends agree on that. At a
//! step only edges of one colour are busy, so a rank sends at most one block and receives at
//! most one: one `sendrecv_reduce` (send to the parent, combine from a child), `send` or
//! `recv_reduce` per reduce step; one `sendrecv` (send to a child, receive from the parent),
//! `send` or `recv` per broadcast step.
//!
//! **Cost.** In all 2S = 2D + 4b − 2 steps, where D = 2⌊log₂(p − 1)⌋ for every p tested (at
//! most one more in general, see `inorder`). A step moves at most one block of about m/(2b)
//! into and one out of every rank (m the vector's size), so the time is about
//! (2D + 4b)(α + βm/(2b)) = 2βm + 4bα + 2Dα + Dβm/b: with b ≈ √(Dβm/(4α)) blocks per half,
//! 2βm + 2Dα + 4√(Dαβm), that is 2βm + O(α log p) plus the pipelining term. The pipelined
//! single tree (`PipelinedTree`) moves the whole vector up and down one tree, 4βm.
//!
//! **Send and receive blocks are disjoint** within a step: if they are in different trees they
//! lie in different halves. In the same tree, the rank sends block k up its in-edge (delay d)
//! in the reduce while receiving from a child edge of delay d + 2 (the same colour), which
//! carries block k + 1 at that step; in the broadcast it receives block k from the parent
//! while sending block k − 1 to such a child.
//!
//! **Causality.** In the reduce, block k comes up a child edge of delay d′ > d at step
//! D − d′ + 2k, before it leaves up the in-edge at D − d + 2k; the root has every final block
//! by the end of the reduce; in the broadcast, block k comes down the in-edge at d + 2k before
//! it leaves down a child edge at d′ + 2k.
//!
//! **No deadlock.** Every rank performs its operations in the one global order of (phase,
//! step), and both ends of every message place it at the same step. Suppose every operation
//! of the steps before s has completed everywhere. At step s every rank posts its send (a
//! `sendrecv` posts the send before waiting for its receive) and waits for at most one
//! receive, whose matching send is posted by its peer in the same step; so all receives of
//! step s complete, and then all sends (taken by those receives). By induction the run is a
//! synchronous round execution and completes. Ranks with different vector lengths disagree
//! only in which block indices exist and how long they are, never in the step of a given
//! block on a given edge within the reduce; both halves of every length have a block 0, and
//! along an edge the sequence of block lengths (B, …, B, then one shorter) of two different
//! half lengths first differs at an index both ends have. So the first disagreement is a
//! message of the reduce that both ends post at the same step with different lengths, the
//! steps before it run as above, and its receiver reports a mismatch (which stops the run)
//! instead of anyone waiting for a message that never comes. (Two different lengths differ in
//! at least one half, and for p ≥ 2 every rank has an edge in both trees.) Had the reduce
//! carried the short block first, lengths 8 and 24 in blocks of 8 (halves 4 + 4 and 12 + 12:
//! short blocks of 4 elements in both) would agree on the first message up every edge and
//! then wait on each other; the tests cover that case.
//!
//! **Order.** In both trees a subtree is a contiguous range of ranks, the lower child's below
//! the node and the higher child's above: a block from the lower child is combined as
//! child ⊙ acc (`Op::fold_left`) and one from the higher child as acc ⊙ child
//! (`Op::fold_right`), in whichever order they arrive, which by associativity leaves the
//! subtree's operands in rank order. Every final block is computed once, at its tree's root,
//! and copied down, so all ranks get the same bits; the fixed schedule makes the result the
//! same from run to run.

use super::{block_range, pipeline_blocks};
use crate::algorithms::blocks::split_pair;
use crate::algorithms::inorder::{children_in, parent_in, TwoTrees};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;
use std::ops::Range;

/// One edge of this rank in one of the trees.
#[derive(Debug, Clone, Copy)]
struct Link {
    /// The rank at the other end.
    peer: usize,
    /// Which tree (0 = T1 with half 1, 1 = T2 with half 2).
    tree: usize,
    /// The edge's broadcast delay.
    delay: usize,
    /// For a child edge: whether the child's subtree lies below this rank.
    lower: bool,
}

/// What one rank does in the two-tree allreduce of a vector of `n` elements.
struct Plan {
    /// In-edges from the parents, one per tree (none at a root).
    up: [Option<Link>; 2],
    /// Child edges, up to two per tree (at most two in all, in one tree).
    down: [Option<Link>; 4],
    /// The largest delay of any edge.
    max_delay: usize,
    /// Where each tree's half starts in the vector.
    offset: [usize; 2],
    /// Each half's length.
    len: [usize; 2],
    /// Each half's number of blocks.
    blocks: [usize; 2],
    /// Elements per block.
    block: usize,
}

impl Plan {
    /// The plan of rank `r` of `p` for `n` elements in blocks of `block`.
    fn new(r: usize, p: usize, n: usize, block: usize) -> Plan {
        let trees = TwoTrees::new(p);
        let half = n - n / 2;
        // The edge to `peer` in `tree`, which is the in-edge of `below` (this rank or `peer`).
        let link = |tree: usize, peer: usize, below: usize| Link {
            peer,
            tree,
            delay: trees.delay(tree, below).expect("a non-root has an in-edge"),
            lower: peer < r,
        };
        let mut up = [None; 2];
        let mut down = [None; 4];
        for tree in 0..2 {
            up[tree] = parent_in(tree, r, p).map(|q| link(tree, q, r));
            for (i, c) in children_in(tree, r, p).into_iter().enumerate() {
                down[2 * tree + i] = c.map(|c| link(tree, c, c));
            }
        }
        Plan {
            up,
            down,
            max_delay: trees.max_delay(),
            offset: [0, half],
            len: [half, n - half],
            blocks: [
                pipeline_blocks(half, block),
                pipeline_blocks(n - half, block),
            ],
            block,
        }
    }

    /// Steps per phase: D + 2(b − 1) + 1 for the larger block count b.
    fn steps(&self) -> usize {
        self.max_delay + 2 * (self.blocks[0].max(self.blocks[1]) - 1) + 1
    }

    /// The block that `link` carries at `step` if its block k goes at `first + 2k`.
    fn block_at(&self, link: &Link, first: usize, step: usize) -> Option<usize> {
        let since = step.checked_sub(first)?;
        let k = since / 2;
        (since % 2 == 0 && k < self.blocks[link.tree]).then_some(k)
    }

    /// The elements of block `k` of `tree`'s half.
    fn range(&self, tree: usize, k: usize) -> Range<usize> {
        let r = block_range(self.len[tree], self.block, k);
        self.offset[tree] + r.start..self.offset[tree] + r.end
    }

    /// The transfers of `step`: (first step of block 0 on an edge of delay d, the edge) gives
    /// at most one busy in-edge and one busy child edge, each with the elements it carries.
    #[allow(clippy::type_complexity)]
    fn busy(
        &self,
        step: usize,
        first: impl Fn(usize) -> usize,
    ) -> (Option<(Link, Range<usize>)>, Option<(Link, Range<usize>)>) {
        let at = |l: &Link| {
            self.block_at(l, first(l.delay), step)
                .map(|k| (*l, self.range(l.tree, k)))
        };
        let mut ups = self.up.iter().flatten().filter_map(at);
        let mut downs = self.down.iter().flatten().filter_map(at);
        let (u, d) = (ups.next(), downs.next());
        debug_assert!(
            ups.next().is_none() && downs.next().is_none(),
            "colouring broken"
        );
        (u, d)
    }
}

/// Two-tree allreduce of `buf` under `op` (any associative op: both trees combine in rank
/// order) in blocks of `block` elements (at least 1 is used).
pub(crate) fn two_tree<Tr: Transport, T: Elem, O: Op<T>>(
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
    let plan = Plan::new(r, p, buf.len(), block.max(1));
    let d = plan.max_delay;
    let mut from_lower = |acc: &mut [T], inc: &[T]| op.fold_left(inc, acc);
    let mut from_higher = |acc: &mut [T], inc: &[T]| op.fold_right(acc, inc);
    // The reduce: block k goes up an edge of delay e at step D − e + 2k.
    for step in 0..plan.steps() {
        let (to_parent, from_child) = plan.busy(step, |e| d - e);
        let combine: &mut dyn FnMut(&mut [T], &[T]) = match &from_child {
            Some((c, _)) if c.lower => &mut from_lower,
            _ => &mut from_higher,
        };
        match (to_parent, from_child) {
            (Some((q, s)), Some((c, a))) => {
                let (send, acc) = split_pair(buf, s, a);
                t.sendrecv_reduce(q.peer, send, c.peer, acc, tag, combine)?;
            }
            (Some((q, s)), None) => t.send(q.peer, tag, &buf[s])?,
            (None, Some((c, a))) => t.recv_reduce(c.peer, tag, &mut buf[a], combine)?,
            (None, None) => {}
        }
    }
    // The broadcast: block k goes down an edge of delay e at step e + 2k.
    for step in 0..plan.steps() {
        let (from_parent, to_child) = plan.busy(step, |e| e);
        match (from_parent, to_child) {
            (Some((q, a)), Some((c, s))) => {
                let (send, recv) = split_pair(buf, s, a);
                t.sendrecv(c.peer, send, q.peer, recv, tag)?;
            }
            (Some((q, a)), None) => t.recv(q.peer, tag, &mut buf[a])?,
            (None, Some((c, s))) => t.send(c.peer, tag, &buf[s])?,
            (None, None) => {}
        }
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testkit::{self, schedule};
    use super::*;
    use crate::op::Sum;
    use crate::shm::testing::spmd;
    use crate::transport::shm::ShmTransport;

    schedule!(TwoTree, super::two_tree);

    #[test]
    fn non_commutative_spans_in_rank_order_for_every_block_size() {
        testkit::spans_in_rank_order(&TwoTree);
    }

    /// The trees fix the order of combination, so every block size gives the same bits.
    #[test]
    fn f64_sums_bit_identical_on_every_rank() {
        testkit::sums_bit_identical(&TwoTree, true);
    }

    #[test]
    fn length_mismatch_is_an_error_not_a_hang() {
        testkit::length_mismatch_fails(&TwoTree);
    }

    /// 33 ranks on a couple of cores with many small blocks finish promptly.
    #[test]
    fn oversubscribed_many_blocks() {
        let p = 33;
        let n = 4000;
        let out = spmd(p, |m| {
            let mut v = vec![m.rank() as u64; n];
            two_tree(&ShmTransport::coll(m, "test"), &mut v, &Sum, 16, Tag::P2P).map(|()| v)
        });
        let want = (0..p as u64).sum::<u64>();
        for v in out {
            assert!(v.unwrap().iter().all(|&x| x == want));
        }
    }

    /// The step count: each phase has D + 2(b − 1) + 1 steps.
    #[test]
    fn steps_per_phase() {
        let plan = Plan::new(0, 2, 10, 4);
        // p = 2: both edges have delay 0; halves of 5 elements in blocks 4 + 1.
        assert_eq!(plan.max_delay, 0);
        assert_eq!(plan.blocks, [2, 2]);
        assert_eq!(plan.steps(), 3);
        let plan = Plan::new(0, 33, 0, 4);
        assert_eq!(plan.steps(), plan.max_delay + 1);
    }
}
