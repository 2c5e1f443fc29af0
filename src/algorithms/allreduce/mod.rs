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
mod pipeline;
mod pipelined_tree;
mod rabenseifner;
mod recursive_doubling;
mod ring;
#[cfg(all(test, not(loom)))]
mod testkit;
mod two_tree;

use crate::error::Result;
use crate::op::Op;
use crate::select::Algorithm;
use crate::transport::{Elem, Tag, Transport};
use std::ops::Range;

/// Where block `j` of `n` elements cut into `parts` nearly equal blocks begins, for
/// `j ∈ 0..=parts` (`block_start(n, parts, parts) == n`). The first `n % parts` blocks have
/// one element more than the others; block `j` is `block_start(j)..block_start(j + 1)`.
pub(super) fn block_start(n: usize, parts: usize, j: usize) -> usize {
    debug_assert!(parts >= 1 && j <= parts);
    // j · ⌊n/parts⌋ ≤ n, so nothing overflows.
    j * (n / parts) + j.min(n % parts)
}

/// The elements that blocks `blocks` (a range of block indices) of `n` over `parts` cover.
pub(super) fn elements(n: usize, parts: usize, blocks: Range<usize>) -> Range<usize> {
    block_start(n, parts, blocks.start)..block_start(n, parts, blocks.end)
}

/// Number of pipeline blocks of a vector of `n` elements cut into blocks of `block`: all the
/// full blocks plus one final block of `n mod block` elements, which is empty when `block`
/// divides `n` (and is the only block of an empty vector). Because only the last block is
/// short, ranks whose lengths differ never agree on a sequence of message lengths, so a
/// length mistake shows as a mismatch rather than a missing message.
pub(super) fn pipeline_blocks(n: usize, block: usize) -> usize {
    n / block + 1
}

/// The elements of pipeline block `k` (see [`pipeline_blocks`]).
pub(super) fn block_range(n: usize, block: usize, k: usize) -> Range<usize> {
    let start = k.saturating_mul(block).min(n);
    start..start.saturating_add(block).min(n)
}

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
        Algorithm::Chain => chain::chain(t, buf, op, block, tag),
        Algorithm::Binomial => binomial::binomial(t, buf, op, tag),
        Algorithm::RecursiveDoubling => recursive_doubling::recursive_doubling(t, buf, op, tag),
        Algorithm::Rabenseifner => rabenseifner::rabenseifner(t, buf, op, tag),
        Algorithm::Ring => ring::ring(t, buf, op, block, tag),
        Algorithm::PipelinedTree { .. } => pipelined_tree::pipelined_tree(t, buf, op, block, tag),
        Algorithm::DualRoot { .. } => dual_root::dual_root(t, buf, op, block, tag),
        Algorithm::TwoTree { .. } => two_tree::two_tree(t, buf, op, block, tag),
        Algorithm::Direct => unreachable!("Direct runs on the communicator, not a transport"),
    }
}
