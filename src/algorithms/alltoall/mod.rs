//! All-to-all schedules: rank i's block j (of `n` elements) ends up as block i of rank j, for
//! every i and j (`MPI_Alltoall`), and the `v` form with per-peer counts and displacements
//! (`MPI_Alltoallv`).
//!
//! * [`pairwise`](mod@pairwise): the linear shift exchange, p − 1 steps, each block moved once;
//! * [`bruck`](mod@bruck): Bruck's index algorithm, ⌈log₂ p⌉ rounds each moving about half the blocks,
//!   for small blocks;
//! * [`direct`](mod@direct) (shared memory only): every rank copies its block straight out of every
//!   peer's send buffer;
//! * [`vector`]: alltoallv on the pairwise exchange, ending with a barrier so that a length
//!   error on one rank is an error on every rank.
//!
//! All but `Direct` are written against `Transport`. Every message of a schedule is sent even
//! when it is empty (a block count of 0), so that a rank whose lengths differ from its peers'
//! meets a length mismatch on some edge instead of waiting for a message that never comes;
//! `Comm`'s call check normally reports such a disagreement before the schedule runs.

mod bruck;
mod direct;
mod pairwise;
mod vector;

pub(crate) use bruck::bruck;
pub(crate) use direct::alltoall as direct;
pub(crate) use pairwise::pairwise;
pub(crate) use vector::alltoallv;

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;
use std::ops::Range;

/// The all-to-all schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// The pairwise exchange ([`pairwise`](mod@pairwise)).
    Pairwise,
    /// Bruck's ([`bruck`](mod@bruck)).
    Bruck,
}

/// Runs all-to-all `schedule`.
pub(crate) fn run<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    schedule: Schedule,
    tag: Tag,
) -> Result<()> {
    match schedule {
        Schedule::Pairwise => pairwise(t, send, recv, tag),
        Schedule::Bruck => bruck(t, send, recv, tag),
    }
}

/// Elements of block `i` of `n` elements each.
fn span(i: usize, n: usize) -> Range<usize> {
    i * n..(i + 1) * n
}
