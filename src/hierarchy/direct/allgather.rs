//! The single-copy hierarchical allgather (`Allgather::HierarchicalDirect`).
//!
//! Scaffold: only the short-vector path (Bruck's allgather over the ranks in group order,
//! the blocks put back in rank order) so far; the single-copy path is to come.

use crate::error::Result;
use crate::hierarchy::Plan;
use crate::transport::{Elem, Permuted, Tag};
use crate::Comm;

/// The hierarchical direct allgather of every rank's `send` into `recv` (block i from rank
/// i) over `plan` (with levels), after the call check; `tag` carries the algorithm's variant.
pub(crate) fn allgather<T: Elem>(
    comm: &Comm,
    send: &[T],
    recv: &mut [T],
    plan: &Plan,
    tag: Tag,
) -> Result<()> {
    let t = comm.coll("allgather");
    let (order, place) = plan.order();
    let perm = Permuted::new(&t, order, place);
    let n = send.len();
    let mut tmp = recv.to_vec();
    crate::algorithms::gather::bruck(&perm, send, &mut tmp, tag)?;
    for (v, block) in tmp.chunks_exact(n.max(1)).enumerate().take(order.len()) {
        recv[order[v] * n..(order[v] + 1) * n].copy_from_slice(block);
    }
    Ok(())
}
