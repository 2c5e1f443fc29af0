//! The single-copy hierarchical reduce (`Reduce::HierarchicalDirect`).
//!
//! Scaffold: only the short-vector path (a binomial tree over the ranks in group order) so
//! far; the single-copy path for long vectors is to come.

use crate::error::Result;
use crate::hierarchy::Plan;
use crate::op::Op;
use crate::select::Reduce;
use crate::transport::{Elem, Permuted, Tag};
use crate::Comm;

/// The hierarchical direct reduce of `buf` with `op` to `root` over `plan` (with levels; the
/// ordered plan for a non-commutative op, whose group order is rank order), after the call
/// check; `tag` carries the algorithm's variant.
pub(crate) fn reduce<T: Elem, O: Op<T>>(
    comm: &Comm,
    buf: &mut [T],
    op: &O,
    root: usize,
    plan: &Plan,
    tag: Tag,
) -> Result<()> {
    let t = comm.coll("reduce");
    let (order, place) = plan.order();
    let perm = Permuted::new(&t, order, place);
    crate::algorithms::reduce::run(&perm, buf, op, place[root], Reduce::Binomial, 0, tag)
}
