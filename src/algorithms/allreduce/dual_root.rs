//! The dual-root allreduce of Sanders, Speck and Träff 2009 (being written).

use crate::error::{Error, Result};
use crate::op::Op;
use crate::transport::{Elem, Tag, Transport};

/// Dual-root allreduce of `buf` under `op` in blocks of `block` elements.
pub(crate) fn dual_root<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    _buf: &mut [T],
    _op: &O,
    _block: usize,
    _tag: Tag,
) -> Result<()> {
    Err(Error::Unsupported {
        rank: t.rank(),
        op: "allreduce",
        what: "dual-root is not built yet".into(),
    })
}
