//! Allreduce schedules, one file per family, each written against `Transport` only.
//!
//! Every schedule leaves x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1} (rank order) in `buf` on every rank, with
//! bit-identical results on all ranks. Schedules that combine on several ranks keep the
//! lower ranks' operand on the left (`Op::fold_left` / `fold_right`); those that cannot keep
//! the order for a non-commutative op are refused before they start (`comm::allreduce`).
//! Every schedule runs all its rounds even for an empty vector, so that a rank whose length
//! differs from the others' meets a mismatch rather than a missing message.

mod binomial;
mod chain;
pub(crate) mod direct;
mod dual_root;
pub(crate) mod folded;
mod linear;
pub(crate) mod pipeline;
mod pipelined_tree;
mod rabenseifner;
mod recursive_doubling;
mod ring;
#[cfg(all(test, not(loom)))]
mod testkit;
mod two_tree;

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

pub(super) use crate::algorithms::blocks::{block_range, block_start, elements, pipeline_blocks};
#[cfg(feature = "mpi")]
pub(crate) use linear::grouped as grouped_linear;
pub(crate) use rabenseifner::halving_step;
pub(crate) use recursive_doubling::combine;
#[cfg(all(test, not(loom)))]
pub(crate) use ring::{chunk, pieces};

/// The allreduce schedules, one per family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// Star through rank 0 ([`linear`]).
    Linear,
    /// Pipelined chain ([`chain`]).
    Chain,
    /// Binomial reduce then broadcast ([`binomial`]).
    Binomial,
    /// Butterfly ([`recursive_doubling`]).
    RecursiveDoubling,
    /// Recursive halving then doubling ([`rabenseifner`]).
    Rabenseifner,
    /// Ring reduce-scatter and allgather ([`ring`]).
    Ring,
    /// Pipelined reduce then broadcast on one tree ([`pipelined_tree`]).
    PipelinedTree,
    /// Träff's doubly-pipelined dual root ([`dual_root`]).
    DualRoot,
    /// Sanders, Speck and Träff's two trees ([`two_tree`]).
    TwoTree,
}

/// Runs allreduce `schedule` on `buf`, in pipeline blocks (or ring pieces) of `block`
/// elements.
pub(crate) fn run<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    schedule: Schedule,
    block: usize,
    tag: Tag,
) -> Result<()> {
    match schedule {
        Schedule::Linear => linear::linear(t, buf, op, tag),
        Schedule::Chain => chain::chain(t, buf, op, block, tag),
        Schedule::Binomial => binomial::binomial(t, buf, op, tag),
        Schedule::RecursiveDoubling => recursive_doubling::recursive_doubling(t, buf, op, tag),
        Schedule::Rabenseifner => rabenseifner::rabenseifner(t, buf, op, tag),
        Schedule::Ring => ring::ring(t, buf, op, block, tag),
        Schedule::PipelinedTree => pipelined_tree::pipelined_tree(t, buf, op, block, tag),
        Schedule::DualRoot => dual_root::dual_root(t, buf, op, block, tag),
        Schedule::TwoTree => two_tree::two_tree(t, buf, op, block, tag),
    }
}
