//! The shared-memory direct allreduce (being written).

use crate::error::{Error, Result};
use crate::op::Op;
use crate::transport::{Elem, Tag};
use crate::Comm;

/// Direct allreduce: the result of every rank's input (`send` if given, else `buf`) lands in
/// `buf` on every rank.
pub(crate) fn direct<T: Elem, O: Op<T>>(
    comm: &Comm,
    _send: Option<&[T]>,
    _buf: &mut [T],
    _op: &O,
    _tag: Tag,
) -> Result<()> {
    Err(comm.fail(Error::Unsupported {
        rank: comm.rank(),
        op: "allreduce",
        what: "direct is not built yet".into(),
    }))
}
