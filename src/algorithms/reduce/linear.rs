//! The linear (star) reduce to any root, in rank order: every other rank sends its whole vector
//! to the root, which combines them; p − 1 messages, one round of sends, then the
//! acknowledgement.
//!
//! Half of the linear allreduce (`algorithms::allreduce::linear`), whose broadcast back is here
//! the acknowledgement's empty messages. It is the reduce of choice where the tree's rounds
//! cost more than the root's serial combining: short vectors on a team with more ranks than
//! cores, where each round of a tree waits for descheduled ranks. Measured there (8 ranks on
//! 2 cores), the binomial and direct reduces were slower than the linear allreduce, which
//! broke the guideline reduce(m) ≤ allreduce(m) of Träff, Gropp and Thakur (docs/tuning.md;
//! figures in `docs/results/2026-11-29-figures-behind-the-code.md`).
//!
//! **Order.** The root starts from its own vector x_root, folds the lower ranks in on the left
//! from root − 1 down to 0 (`Op::fold_left`), then the higher ones on the right from root + 1
//! up (`Op::fold_right`): x₀ ⊙ (… ⊙ (x_{root−1} ⊙ x_root)) ⊙ x_{root+1} ⊙ … ⊙ x_{p−1}, the rank
//! order any associative op needs. The grouping is fixed by p and root, so results are
//! bit-identical run after run.
//!
//! **Buffers.** Every non-root rank sends `buf` itself (left unchanged); the root combines
//! straight from each sender's published memory into its `buf` (`recv_reduce`).
//!
//! **Acknowledgement.** The root then sends an empty message to every rank it received from,
//! so that no rank returns `Ok` from a call that failed elsewhere (`super::acknowledge`).

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Linear reduce of `buf` under `op` to `root` (any associative op: combination is in rank
/// order).
pub(super) fn linear<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    root: usize,
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    if p <= 1 {
        return Ok(());
    }
    if r != root {
        t.send(root, tag, buf)?;
        return super::acknowledge(t, Some(root), std::iter::empty(), tag);
    }
    combine_at_root(t, buf, op, root, tag)?;
    // The acknowledgements go out in reverse of `sources`; any order serves.
    super::acknowledge(t, None, (0..p).filter(|&s| s != root), tag)
}

/// The root's half of the star (`root` is this rank): receives every other rank's vector and
/// folds it into `buf` (x_root) in rank order, the lower ranks on the left from root − 1 down
/// to 0, the higher on the right from root + 1 up. Also the first half of the linear
/// allreduce (`algorithms::allreduce::linear`, root 0).
pub(crate) fn combine_at_root<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    root: usize,
    tag: Tag,
) -> Result<()> {
    for src in (0..root).rev() {
        t.recv_reduce(src, tag, buf, &mut |acc, inc| op.fold_left(inc, acc))?;
    }
    for src in root + 1..t.size() {
        t.recv_reduce(src, tag, buf, &mut |acc, inc| op.fold_right(acc, inc))?;
    }
    Ok(())
}
