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
use crate::select::Algorithm;
use crate::transport::Transport;

pub(super) use crate::algorithms::blocks::{block_range, block_start, elements, pipeline_blocks};
pub(crate) use rabenseifner::halving_step;

/// Runs allreduce `alg` (not `Auto`, not `Direct`) on `buf`, in pipeline blocks (or ring
/// pieces) of `block` elements.
pub(crate) fn run<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    alg: Algorithm,
    block: usize,
    tag: Tag,
) -> Result<()> {
    match alg {
        Algorithm::Auto | Algorithm::Linear => linear::linear(t, buf, op, tag),
        Algorithm::Chain { .. } => chain::chain(t, buf, op, block, tag),
        Algorithm::Binomial => binomial::binomial(t, buf, op, tag),
        Algorithm::RecursiveDoubling => recursive_doubling::recursive_doubling(t, buf, op, tag),
        Algorithm::Rabenseifner => rabenseifner::rabenseifner(t, buf, op, tag),
        Algorithm::Ring { .. } => ring::ring(t, buf, op, block, tag),
        Algorithm::PipelinedTree { .. } => pipelined_tree::pipelined_tree(t, buf, op, block, tag),
        Algorithm::DualRoot { .. } => dual_root::dual_root(t, buf, op, block, tag),
        Algorithm::TwoTree { .. } => two_tree::two_tree(t, buf, op, block, tag),
        Algorithm::Direct
        | Algorithm::Hierarchical { .. }
        | Algorithm::HierarchicalDirect
        | Algorithm::Native => {
            unreachable!("{} runs on the communicator, not a transport", alg.name())
        }
    }
}
