//! Reduce schedules (being written).

use crate::error::{Error, Result};
use crate::op::Op;
use crate::select::Reduce;
use crate::transport::{Elem, Tag, Transport};
use crate::Comm;

/// Runs reduce `alg` (not `Auto`, not `Direct`): the rank-order reduction of every rank's
/// `buf` under `op` lands in `buf` on `root`; the other ranks' `buf` is left unchanged.
pub(crate) fn run<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    _buf: &mut [T],
    _op: &O,
    _root: usize,
    alg: Reduce,
    _block: usize,
    _tag: Tag,
) -> Result<()> {
    Err(Error::Unsupported {
        rank: t.rank(),
        op: "reduce",
        what: format!("{} is not built yet", alg.name()),
    })
}

/// The shared-memory direct reduce: each rank reduces its slice of all p buffers into the
/// root's `buf`.
pub(crate) fn direct<T: Elem, O: Op<T>>(
    comm: &Comm,
    _buf: &mut [T],
    _op: &O,
    _root: usize,
    _tag: Tag,
) -> Result<()> {
    Err(comm.fail(Error::Unsupported {
        rank: comm.rank(),
        op: "reduce",
        what: "direct is not built yet".into(),
    }))
}
