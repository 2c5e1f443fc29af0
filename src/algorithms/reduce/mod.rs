//! Reduce schedules (`MPI_Reduce` with `MPI_IN_PLACE` at the root), one file per family.
//!
//! Every schedule leaves x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1} (rank order, whatever the root) in `buf` on
//! `root` and leaves every other rank's `buf` unchanged: a non-root rank that combines
//! partial results does so in a scratch copy of its input. Every schedule keeps the lower
//! ranks' operand on the left (`Op::fold_left` / `fold_right`), so any associative op is
//! computed exactly, and every message-passing schedule sends its messages even for an empty
//! vector, so that a rank whose length differs meets a mismatch rather than a missing message
//! (the call check made before any schedule, `check::agree`, usually catches it first).
//!
//! * [`binomial`]: two binomial trees over the contiguous ranges below and from the root, the
//!   lower one's result sent to the root last (p − 1 messages in all).
//! * [`linear`]: every rank sends to the root, which combines in rank order (p − 1 messages,
//!   one round).
//! * [`pipelined_tree`]: Träff's post-order binary trees, pipelined in blocks, over the ranks
//!   on either side of the root, whose tops send straight to the root.
//! * [`direct`](mod@direct) (shm only): every rank reduces its slice of all inputs into the root's buffer.

mod binomial;
mod direct;
mod linear;
mod pipelined_tree;

pub(crate) use linear::combine_at_root;

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::shm::Member;
use crate::transport::Transport;

/// The reduce schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// The binomial tree ([`binomial`]).
    Binomial,
    /// Everyone to the root ([`linear`]).
    Linear,
    /// Träff's post-order binary tree, pipelined ([`pipelined_tree`]).
    PipelinedTree,
}

/// Runs reduce `schedule`: the rank-order reduction of every rank's `buf` under `op` lands in
/// `buf` on `root`; the other ranks' `buf` is left unchanged.
pub(crate) fn run<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    root: usize,
    schedule: Schedule,
    block: usize,
    tag: Tag,
) -> Result<()> {
    match schedule {
        Schedule::Binomial => binomial::binomial(t, buf, op, root, tag),
        Schedule::Linear => linear::linear(t, buf, op, root, tag),
        Schedule::PipelinedTree => pipelined_tree::pipelined_tree(t, buf, op, root, block, tag),
    }
}

/// The shared-memory direct reduce: each rank reduces its slice of all p buffers into the
/// root's `buf`.
pub(crate) fn direct<T: Elem, O: Op<T>>(
    comm: &Member,
    buf: &mut [T],
    op: &O,
    root: usize,
    tag: Tag,
) -> Result<()> {
    direct::direct_reduce(comm, buf, op, root, tag)
}

/// The acknowledgement that ends a message-passing reduce: this rank waits for an empty
/// message from `dest` (the rank it sent its partial result to; `None` for the root), then
/// sends one to each of `sources` (the ranks it received from), in reverse order.
///
/// Without it a rank that only sends (a leaf) could return `Ok` from a call that failed on
/// another rank: the call agreement (`check::agree`) compares each rank with its left
/// neighbour only, so when ranks disagree (different roots, lengths, algorithms) only the
/// ranks next to the difference fail, and the others run the schedule. A rank's message
/// reaches the root only once that rank passed its agreement, so the root, having combined
/// everyone's, knows that all agreed; the acknowledgements, flowing back along the same
/// edges, tell every other rank, and if the root fails they never come and the rank returns
/// the run's failure. Cost: one more pass down the tree of empty (inline) messages; the
/// direct reduce needs none, its board's phase 2 does the same.
fn acknowledge<Tr: Transport>(
    t: &Tr,
    dest: Option<usize>,
    sources: impl DoubleEndedIterator<Item = usize>,
    tag: Tag,
) -> Result<()> {
    const NOTHING: [u8; 0] = [];
    if let Some(d) = dest {
        t.recv(d, tag, &mut [] as &mut [u8])?;
    }
    for s in sources.rev() {
        t.send(s, tag, &NOTHING)?;
    }
    Ok(())
}
