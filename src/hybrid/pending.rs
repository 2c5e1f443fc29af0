//! Collectives of a hybrid `Comm` not written yet: each fails on every rank with
//! `Error::Unsupported`.

use super::world::Bridge;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::select::{Allgather, Alltoall, Gather, ReduceScatter, Scan, Scatter};

impl Bridge {
    fn pending<R>(&self, op: &'static str) -> Result<R> {
        Err(self.fail(Error::Unsupported {
            rank: self.rank(),
            op,
            what: "not yet available on a team that spans MPI processes".to_string(),
        }))
    }

    pub(crate) fn gather<T: Copy + Send + Sync + 'static>(
        &self,
        _send: &[T],
        _recv: &mut [T],
        _root: usize,
        _a: Gather,
    ) -> Result<()> {
        self.pending("gather")
    }
    pub(crate) fn scatter<T: Copy + Send + Sync + 'static>(
        &self,
        _send: &[T],
        _recv: &mut [T],
        _root: usize,
        _a: Scatter,
    ) -> Result<()> {
        self.pending("scatter")
    }
    pub(crate) fn allgather<T: Copy + Send + Sync + 'static>(
        &self,
        _send: &[T],
        _recv: &mut [T],
        _a: Allgather,
    ) -> Result<()> {
        self.pending("allgather")
    }
    pub(crate) fn gatherv<T: Copy + Send + Sync + 'static>(
        &self,
        _send: &[T],
        _recv: &mut [T],
        _counts: &[usize],
        _displs: &[usize],
        _root: usize,
    ) -> Result<()> {
        self.pending("gatherv")
    }
    pub(crate) fn scatterv<T: Copy + Send + Sync + 'static>(
        &self,
        _send: &[T],
        _counts: &[usize],
        _displs: &[usize],
        _recv: &mut [T],
        _root: usize,
    ) -> Result<()> {
        self.pending("scatterv")
    }
    pub(crate) fn allgatherv<T: Copy + Send + Sync + 'static>(
        &self,
        _send: &[T],
        _recv: &mut [T],
        _counts: &[usize],
        _displs: &[usize],
    ) -> Result<()> {
        self.pending("allgatherv")
    }
    pub(crate) fn alltoall<T: Copy + Send + Sync + 'static>(
        &self,
        _send: &[T],
        _recv: &mut [T],
        _a: Alltoall,
    ) -> Result<()> {
        self.pending("alltoall")
    }
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alltoallv<T: Copy + Send + Sync + 'static>(
        &self,
        _send: &[T],
        _sc: &[usize],
        _sd: &[usize],
        _recv: &mut [T],
        _rc: &[usize],
        _rd: &[usize],
        _a: Alltoall,
    ) -> Result<()> {
        self.pending("alltoallv")
    }
    pub(crate) fn reduce_scatter_block<T: Copy + Send + Sync + 'static>(
        &self,
        _send: &[T],
        _recv: &mut [T],
        _op: &dyn Op<T>,
        _a: ReduceScatter,
    ) -> Result<()> {
        self.pending("reduce_scatter_block")
    }
    pub(crate) fn scan<T: Copy + Send + Sync + 'static>(
        &self,
        _buf: &mut [T],
        _op: &dyn Op<T>,
        _a: Scan,
    ) -> Result<()> {
        self.pending("scan")
    }
    pub(crate) fn exscan<T: Copy + Send + Sync + 'static>(
        &self,
        _buf: &mut [T],
        _op: &dyn Op<T>,
        _a: Scan,
    ) -> Result<()> {
        self.pending("exscan")
    }
    pub(crate) fn split(&self, _color: Option<usize>, _key: usize) -> Result<Option<Comm>> {
        self.pending("split")
    }
}
