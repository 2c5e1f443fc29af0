//! The hierarchical barrier on shared flags (`Barrier::HierarchicalDirect`).
//!
//! Scaffold: a dissemination barrier over the ranks in group order so far; the flags are to
//! come.

use crate::error::Result;
use crate::hierarchy::Plan;
use crate::transport::{Permuted, Tag};
use crate::Comm;

/// The hierarchical direct barrier on `comm` over `plan` (with levels), after the call check;
/// `tag` carries the algorithm's variant.
pub(crate) fn barrier(comm: &Comm, plan: &Plan, tag: Tag) -> Result<()> {
    let t = comm.coll("barrier");
    let (order, place) = plan.order();
    let perm = Permuted::new(&t, order, place);
    crate::algorithms::barrier::dissemination(&perm, tag)
}
