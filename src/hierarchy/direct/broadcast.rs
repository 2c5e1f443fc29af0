//! The single-copy hierarchical broadcast (`Broadcast::HierarchicalDirect`).
//!
//! Scaffold: only the short-vector path (a binomial tree over the ranks in group order) so
//! far; the single-copy path for long vectors is to come.

use crate::error::Result;
use crate::hierarchy::Plan;
use crate::select::Broadcast;
use crate::transport::{Elem, Permuted, Tag};
use crate::Comm;

/// The hierarchical direct broadcast of `buf` from `root` over `plan` (with levels), after
/// the call check; `tag` carries the algorithm's variant.
pub(crate) fn broadcast<T: Elem>(
    comm: &Comm,
    buf: &mut [T],
    root: usize,
    plan: &Plan,
    tag: Tag,
) -> Result<()> {
    let t = comm.coll("broadcast");
    let (order, place) = plan.order();
    let perm = Permuted::new(&t, order, place);
    crate::algorithms::broadcast::run(&perm, buf, place[root], Broadcast::Binomial, 0, tag)
}
