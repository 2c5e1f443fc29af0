//! Scan and exclusive-scan schedules (`MPI_Scan`, `MPI_Exscan`, in place), one file per
//! family.
//!
//! Every schedule leaves x₀ ⊙ … ⊙ x_r (inclusive) or x₀ ⊙ … ⊙ x_{r−1} (exclusive; rank 0's
//! `buf` unchanged) in `buf` on rank r. Each keeps the lower ranks' operand on the left
//! (`Op::fold_left` / `fold_right`), so any associative op is computed exactly, and each sends
//! its messages even for an empty vector, so that a rank whose length differs meets a
//! mismatch rather than a missing message (the call check in `comm::scan` catches that
//! first, on every rank).
//!
//! * [`recursive_doubling`]: Hillis–Steele, ⌈log₂ p⌉ rounds of the whole vector; for short
//!   vectors.
//! * [`pipelined_tree`]: the binary-tree prefix on Träff's post-order tree, its up and down
//!   phases pipelined in blocks; for long vectors.

mod pipelined_tree;
mod recursive_doubling;

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// The scan schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// Hillis and Steele's doubling ([`recursive_doubling`]).
    RecursiveDoubling,
    /// The pipelined binary tree ([`pipelined_tree`]).
    PipelinedTree,
}

/// Runs scan `schedule` of `buf` under `op`, exclusive if `exclusive`, in pipeline blocks of
/// `block` elements where the schedule has them.
pub(crate) fn run<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    schedule: Schedule,
    block: usize,
    exclusive: bool,
    tag: Tag,
) -> Result<()> {
    match schedule {
        Schedule::PipelinedTree => {
            pipelined_tree::pipelined_tree(t, buf, op, block, exclusive, tag)
        }
        Schedule::RecursiveDoubling => {
            recursive_doubling::recursive_doubling(t, buf, op, exclusive, tag)
        }
    }
}
