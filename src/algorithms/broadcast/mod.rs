//! Broadcast schedules (being written).

use crate::error::{Error, Result};
use crate::select::Broadcast;
use crate::transport::{Elem, Tag, Transport};
use crate::Comm;

/// Runs broadcast `alg` (not `Auto`, not `Direct`) of `buf` from `root`, in pipeline blocks of
/// `block` elements where the algorithm has them.
pub(crate) fn run<Tr: Transport, T: Elem>(
    t: &Tr,
    _buf: &mut [T],
    _root: usize,
    alg: Broadcast,
    _block: usize,
    _tag: Tag,
) -> Result<()> {
    Err(Error::Unsupported {
        rank: t.rank(),
        op: "broadcast",
        what: format!("{} is not built yet", alg.name()),
    })
}

/// The shared-memory direct broadcast of `buf` from `root`.
pub(crate) fn direct<T: Elem>(comm: &Comm, _buf: &mut [T], _root: usize, _tag: Tag) -> Result<()> {
    Err(comm.fail(Error::Unsupported {
        rank: comm.rank(),
        op: "broadcast",
        what: "direct is not built yet".into(),
    }))
}
