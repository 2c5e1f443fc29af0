//! Gather, scatter and allgather schedules: every rank's block of `n` elements collected at
//! one rank (gather), handed out from one rank (scatter), or collected at every rank
//! (allgather), blocks in rank order.
//!
//! * [`rooted`]: gather and scatter, `Linear` (the star) and `Binomial` (the binomial tree on
//!   relative ranks, whose subtrees are contiguous ranges of relative ranks, so that a
//!   subtree's blocks travel as one message);
//! * [`allgather`]: the ring, recursive doubling (with a fold for any p) and Bruck's
//!   concatenation;
//! * [`direct`] (shared memory only): every rank copies every block straight from its owner;
//! * [`direct_rooted`] (shared memory only): the direct scatter, where every rank reads its
//!   block straight from the root's send buffer, and the direct gather, where every rank
//!   writes its block straight into the root's receive buffer (writing, so that the p copies
//!   run at once instead of one after another on the root);
//! * [`vector`]: the `v` forms, gatherv and scatterv linear and allgatherv on the ring, each
//!   ending with a barrier so that a length error on one rank is an error on every rank.
//!
//! All but the `Direct` ones are written against `Transport`. Every message of a schedule is sent even
//! when it is empty (a block count of 0), so that a rank whose block length differs from the
//! others' meets a length mismatch on some edge instead of waiting for a message that never
//! comes; `Comm`'s call check normally reports such a disagreement before the schedule runs.

mod allgather;
mod direct;
mod direct_rooted;
mod rooted;
mod vector;

pub(crate) use allgather::{bruck, recursive_doubling, ring};
pub(crate) use direct::allgather as direct_allgather;
pub(crate) use direct::blocks as direct_blocks;
pub(crate) use direct_rooted::{gather as direct_gather, scatter as direct_scatter};
pub(crate) use rooted::{gather_binomial, gather_linear, scatter_binomial, scatter_linear};
pub(crate) use vector::{allgatherv, gatherv, scatterv};

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;
use std::ops::Range;

/// The gather schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gathering {
    /// Every block straight to the root ([`gather_linear`]).
    Linear,
    /// Up a binomial tree ([`gather_binomial`]).
    Binomial,
}

/// The scatter schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scattering {
    /// Every block straight from the root ([`scatter_linear`]).
    Linear,
    /// Down a binomial tree ([`scatter_binomial`]).
    Binomial,
}

/// The allgather schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allgathering {
    /// Around the ring ([`ring`]).
    Ring,
    /// Recursive doubling ([`recursive_doubling`]).
    RecursiveDoubling,
    /// Bruck's ([`bruck`]).
    Bruck,
}

/// Runs gather `schedule` of every rank's `send` into `recv` on `root`.
pub(crate) fn run_gather<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    root: usize,
    schedule: Gathering,
    tag: Tag,
) -> Result<()> {
    match schedule {
        Gathering::Linear => gather_linear(t, send, recv, root, tag),
        Gathering::Binomial => gather_binomial(t, send, recv, root, tag),
    }
}

/// Runs scatter `schedule` of `root`'s `send` into every rank's `recv`.
pub(crate) fn run_scatter<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    root: usize,
    schedule: Scattering,
    tag: Tag,
) -> Result<()> {
    match schedule {
        Scattering::Linear => scatter_linear(t, send, recv, root, tag),
        Scattering::Binomial => scatter_binomial(t, send, recv, root, tag),
    }
}

/// Runs allgather `schedule` of every rank's `send` into every rank's `recv`.
pub(crate) fn run_allgather<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    schedule: Allgathering,
    tag: Tag,
) -> Result<()> {
    match schedule {
        Allgathering::Ring => ring(t, send, recv, tag),
        Allgathering::RecursiveDoubling => recursive_doubling(t, send, recv, tag),
        Allgathering::Bruck => bruck(t, send, recv, tag),
    }
}

/// Elements of blocks `blocks` of `n` elements each.
fn span(blocks: Range<usize>, n: usize) -> Range<usize> {
    blocks.start * n..blocks.end * n
}
