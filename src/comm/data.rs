//! The collectives of [`Comm`] that move data without combining it: broadcast, gather,
//! scatter, allgather and all-to-all, with their `v` forms. Each checks its own arguments,
//! then hands the call to the team's kind: the threads of one process (`local`), or
//! processes × threads (`process`).

use super::{Comm, Span};
use crate::error::Result;
use crate::mailbox::Elem;
use crate::select::{Allgather, Alltoall, Broadcast, Gather, Scatter};

impl Comm {
    /// Copies `buf` of rank `root` into `buf` on every other rank (`MPI_Bcast`). Every rank
    /// must pass the same root, length and element type; anything else is an error on every
    /// rank.
    pub fn broadcast<T>(&self, buf: &mut [T], root: usize) -> Result<()>
    where
        T: Elem,
    {
        self.broadcast_with(buf, root, Broadcast::Auto)
    }

    /// [`Comm::broadcast`] of one value: every rank gets `root`'s `x` (the others' `x` is
    /// only the type and the place, as a receive buffer is).
    pub fn broadcast_value<T>(&self, x: T, root: usize) -> Result<T>
    where
        T: Elem,
    {
        let mut one = [x];
        self.broadcast(&mut one, root)?;
        Ok(one[0])
    }

    /// [`Comm::broadcast`] with a chosen algorithm (every rank must choose the same).
    pub fn broadcast_with<T>(&self, buf: &mut [T], root: usize, algorithm: Broadcast) -> Result<()>
    where
        T: Elem,
    {
        self.local().enter_call("broadcast")?;
        self.check_root("broadcast", root)?;
        match &self.span {
            Span::Threads(l) => l.broadcast_with(buf, root, algorithm),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.broadcast(buf, root, algorithm),
        }
    }

    /// Collects every rank's `send` into `recv` on rank `root`, block i from rank i
    /// (`MPI_Gather`). On the root, `recv.len()` must be `size() · send.len()`; elsewhere
    /// `recv` is not used. Every rank must pass the same root, block length and element type;
    /// anything else is an error on every rank.
    pub fn gather<T>(&self, send: &[T], recv: &mut [T], root: usize) -> Result<()>
    where
        T: Elem,
    {
        self.gather_with(send, recv, root, Gather::Auto)
    }

    /// [`Comm::gather`] with a chosen algorithm (every rank must choose the same).
    pub fn gather_with<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        root: usize,
        algorithm: Gather,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "gather";
        self.local().enter_call(OP)?;
        self.check_root(OP, root)?;
        if self.rank() == root {
            self.check_whole(OP, "recv", recv.len(), send.len())?;
        }
        match &self.span {
            Span::Threads(l) => l.gather_with(send, recv, root, algorithm),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.gather(send, recv, root, algorithm),
        }
    }

    /// Hands block i of `send` on rank `root` to rank i's `recv` (`MPI_Scatter`). On the
    /// root, `send.len()` must be `size() · recv.len()`; elsewhere `send` is not used. Every
    /// rank must pass the same root, block length and element type; anything else is an error
    /// on every rank.
    pub fn scatter<T>(&self, send: &[T], recv: &mut [T], root: usize) -> Result<()>
    where
        T: Elem,
    {
        self.scatter_with(send, recv, root, Scatter::Auto)
    }

    /// [`Comm::scatter`] with a chosen algorithm (every rank must choose the same).
    pub fn scatter_with<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        root: usize,
        algorithm: Scatter,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "scatter";
        self.local().enter_call(OP)?;
        self.check_root(OP, root)?;
        if self.rank() == root {
            self.check_whole(OP, "send", send.len(), recv.len())?;
        }
        match &self.span {
            Span::Threads(l) => l.scatter_with(send, recv, root, algorithm),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.scatter(send, recv, root, algorithm),
        }
    }

    /// Collects every rank's `send` into `recv` on every rank, block i from rank i
    /// (`MPI_Allgather`). `recv.len()` must be `size() · send.len()` everywhere, and every
    /// rank must pass the same block length and element type; anything else is an error on
    /// every rank.
    pub fn allgather<T>(&self, send: &[T], recv: &mut [T]) -> Result<()>
    where
        T: Elem,
    {
        self.allgather_with(send, recv, Allgather::Auto)
    }

    /// [`Comm::allgather`] with a chosen algorithm (every rank must choose the same).
    pub fn allgather_with<T>(&self, send: &[T], recv: &mut [T], algorithm: Allgather) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "allgather";
        self.local().enter_call(OP)?;
        self.check_whole(OP, "recv", recv.len(), send.len())?;
        match &self.span {
            Span::Threads(l) => l.allgather_with(send, recv, algorithm),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.allgather(send, recv, algorithm),
        }
    }

    /// Gathers rank i's `send` into `recv[displs[i] .. displs[i] + counts[i]]` on rank `root`
    /// (`MPI_Gatherv`). On the root, `counts` and `displs` have `size()` entries, every block
    /// lies within `recv`, no two non-empty blocks overlap, and rank i's `send.len()` must be
    /// `counts[i]`; elsewhere `recv`, `counts` and `displs` are not used (pass empty slices).
    /// The algorithm is linear (every block straight to the root). Anything else is an error
    /// on every rank.
    pub fn gatherv<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: usize,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "gatherv";
        self.local().enter_call(OP)?;
        self.check_root(OP, root)?;
        if self.rank() == root {
            self.check_layout(OP, "recv", recv.len(), counts, displs, true)?;
            self.check_own(OP, "send", send.len(), counts[root])?;
        }
        match &self.span {
            Span::Threads(l) => l.gatherv(send, recv, counts, displs, root),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.gatherv(send, recv, counts, displs, root),
        }
    }

    /// Hands `send[displs[i] .. displs[i] + counts[i]]` on rank `root` to rank i's `recv`
    /// (`MPI_Scatterv`). On the root, `counts` and `displs` have `size()` entries and every
    /// block lies within `send` (blocks may overlap); rank i's `recv.len()` must be
    /// `counts[i]`; elsewhere `send`, `counts` and `displs` are not used (pass empty slices).
    /// The algorithm is linear (every block straight from the root). Anything else is an error
    /// on every rank.
    pub fn scatterv<T>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "scatterv";
        self.local().enter_call(OP)?;
        self.check_root(OP, root)?;
        if self.rank() == root {
            self.check_layout(OP, "send", send.len(), counts, displs, false)?;
            self.check_own(OP, "recv", recv.len(), counts[root])?;
        }
        match &self.span {
            Span::Threads(l) => l.scatterv(send, counts, displs, recv, root),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.scatterv(send, counts, displs, recv, root),
        }
    }

    /// Gathers rank i's `send` into `recv[displs[i] .. displs[i] + counts[i]]` on every rank
    /// (`MPI_Allgatherv`). On every rank `counts` and `displs` have `size()` entries, every
    /// block lies within `recv` and no two non-empty blocks overlap; `counts` must be the same
    /// everywhere, and rank i's `send.len()` must be `counts[i]` (the displacements may differ
    /// by rank). The algorithm is the ring. Anything else is an error on every rank.
    pub fn allgatherv<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "allgatherv";
        self.local().enter_call(OP)?;
        self.check_layout(OP, "recv", recv.len(), counts, displs, true)?;
        self.check_own(OP, "send", send.len(), counts[self.rank()])?;
        match &self.span {
            Span::Threads(l) => l.allgatherv(send, recv, counts, displs),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.allgatherv(send, recv, counts, displs),
        }
    }

    /// Sends block j of `send` to rank j, where it lands in block i of `recv` for the sender
    /// rank i (`MPI_Alltoall`). Blocks are `send.len() / size()` elements long: `send.len()`
    /// must be a multiple of `size()` and `recv.len()` must equal `send.len()`. Every rank must
    /// pass the same block length and element type; anything else is an error on every rank.
    pub fn alltoall<T>(&self, send: &[T], recv: &mut [T]) -> Result<()>
    where
        T: Elem,
    {
        self.alltoall_with(send, recv, Alltoall::Auto)
    }

    /// [`Comm::alltoall`] with a chosen algorithm (every rank must choose the same).
    pub fn alltoall_with<T>(&self, send: &[T], recv: &mut [T], algorithm: Alltoall) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "alltoall";
        self.local().enter_call(OP)?;
        self.check_alltoall(OP, send.len(), recv.len())?;
        match &self.span {
            Span::Threads(l) => l.alltoall_with(send, recv, algorithm),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.alltoall(send, recv, algorithm),
        }
    }

    /// Sends `send[send_displs[j] .. send_displs[j] + send_counts[j]]` to rank j, where it
    /// lands in `recv[recv_displs[i] .. recv_displs[i] + recv_counts[i]]` for the sender rank i
    /// (`MPI_Alltoallv`). On every rank the counts and displacements have `size()` entries
    /// each, every block lies within its buffer, and no two non-empty receive blocks overlap
    /// (send blocks may); rank i's `send_counts[j]` must equal rank j's `recv_counts[i]`. The
    /// algorithm is the pairwise exchange. Anything else is an error on every rank.
    pub fn alltoallv<T>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()>
    where
        T: Elem,
    {
        self.alltoallv_with(
            send,
            send_counts,
            send_displs,
            recv,
            recv_counts,
            recv_displs,
            Alltoall::Auto,
        )
    }

    /// [`Comm::alltoallv`] with a chosen algorithm (every rank must choose the same): `Auto`
    /// and `Pairwise` run the pairwise exchange, `RingLeaders` the hierarchical exchange
    /// (the pairwise one on a communicator with one group), and `Bruck` and `Direct` are
    /// `Error::Unsupported` (on every rank: the run fails).
    #[allow(clippy::too_many_arguments)]
    pub fn alltoallv_with<T>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
        algorithm: Alltoall,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "alltoallv";
        self.local().enter_call(OP)?;
        self.check_layout(OP, "send", send.len(), send_counts, send_displs, false)?;
        self.check_layout(OP, "recv", recv.len(), recv_counts, recv_displs, true)?;
        let me = self.rank();
        if send_counts[me] != recv_counts[me] {
            let what = format!(
                "rank {me} sends itself {} elements but expects {} from itself",
                send_counts[me], recv_counts[me]
            );
            return Err(self.invalid(OP, what));
        }
        match &self.span {
            Span::Threads(l) => l.alltoallv_with(
                send,
                send_counts,
                send_displs,
                recv,
                recv_counts,
                recv_displs,
                algorithm,
            ),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.alltoallv(
                send,
                send_counts,
                send_displs,
                recv,
                recv_counts,
                recv_displs,
                algorithm,
            ),
        }
    }
}
