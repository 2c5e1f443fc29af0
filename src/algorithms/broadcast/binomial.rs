//! The binomial-tree broadcast: ⌈log₂ p⌉ rounds of the whole vector, any p, any root.
//!
//! The classic binomial tree (the broadcast row of the table of collectives,
//! `/work/shared/papers/001_ce9166afca5d064a.txt`; MPICH's binomial broadcast): on relative ranks v = (r − root) mod p, the rank
//! responsible for the range `v .. v + 2ᵏ⁺¹` hands its upper half `v + 2ᵏ .. v + 2ᵏ⁺¹` to
//! rank v + 2ᵏ. So the parent of v > 0 is v with its lowest set bit cleared, and v sends to
//! v + 2ᵏ for every 2ᵏ below its lowest set bit (every k for the root), largest subtree
//! first, so that the deepest subtree starts earliest: after round j the first 2ʲ relative
//! ranks hold the data, and ⌈log₂ p⌉ rounds reach everyone.
//!
//! Every tree edge carries exactly one message, the whole vector, even an empty one, so that
//! a rank whose length differs meets a mismatch on its edge.

use crate::algorithms::binomial_tree::{absolute, children, parent, relative};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;

/// Binomial-tree broadcast of `buf` from `root`.
pub(super) fn binomial<Tr: Transport, T: Elem>(
    t: &Tr,
    buf: &mut [T],
    root: usize,
    tag: Tag,
) -> Result<()> {
    let p = t.size();
    let v = relative(t.rank(), root, p);
    if let Some(q) = parent(v) {
        t.recv(absolute(q, root, p), tag, buf)?;
    }
    for c in children(v, p).rev() {
        t.send(absolute(c, root, p), tag, buf)?;
    }
    Ok(())
}
