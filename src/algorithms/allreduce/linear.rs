//! The linear (star) allreduce: every rank sends its vector to rank 0, which combines them in
//! rank order and sends the result back. 2(p−1) messages of the whole vector through rank 0:
//! the baseline of the course report's five algorithms, and the obviously correct one.

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Linear allreduce of `buf` under `op` (any op: rank 0 combines in rank order).
pub(crate) fn linear<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    if r == 0 {
        // acc = x₀ ⊙ x₁ ⊙ … in order: each incoming vector is the right operand, read where
        // its sender published it (the linear reduce's root, at rank 0).
        crate::algorithms::reduce::combine_at_root(t, buf, op, 0, tag)?;
        for dest in 1..p {
            t.send(dest, tag, buf)?;
        }
    } else {
        t.send(0, tag, buf)?;
        t.recv(0, tag, buf)?;
    }
    Ok(())
}
