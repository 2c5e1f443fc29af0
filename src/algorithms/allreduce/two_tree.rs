//! The two-tree allreduce of Sanders, Speck and Träff 2009 (being written).

use crate::error::{Error, Result};
use crate::op::Op;
use crate::transport::{Elem, Tag, Transport};

/// Two-tree allreduce of `buf` under `op` in blocks of `block` elements.
pub(crate) fn two_tree<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    _buf: &mut [T],
    _op: &O,
    _block: usize,
    _tag: Tag,
) -> Result<()> {
    Err(Error::Unsupported {
        rank: t.rank(),
        op: "allreduce",
        what: "two-tree is not built yet".into(),
    })
}
