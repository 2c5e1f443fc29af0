//! The non-blocking collectives of a [`Scope`]: each starts the blocking call of the same name
//! with the same arguments as a request (`scope`), so it validates, chooses and computes
//! exactly as that call: the same errors, the same algorithm for `Auto`, the same bits.

use super::p2p::Route;
use super::request::Request;
use super::scope::Scope;
use super::{Comm, Peer, Status};
use crate::error::Result;
use crate::mailbox::{names, Elem};
use crate::op::Op;
use crate::select::{
    Algorithm, Allgather, Alltoall, Barrier, Broadcast, Reduce, ReduceScatter, Scan,
};
use crate::transport::shm::Want;

impl<'scope> Scope<'scope, '_> {
    fn start(
        &'scope self,
        f: impl FnOnce(&Comm) -> Result<()> + 'scope,
    ) -> Result<Request<'scope>> {
        self.core().start(f)
    }

    /// [`Comm::allreduce`] as a request: `buf` holds every rank's combined vector once the
    /// request completes, and must not be touched before.
    pub fn iallreduce<T, O>(&'scope self, buf: &'scope mut [T], op: O) -> Result<Request<'scope>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.iallreduce_with(buf, op, Algorithm::Auto)
    }

    /// [`Comm::allreduce_with`] as a request.
    pub fn iallreduce_with<T, O>(
        &'scope self,
        buf: &'scope mut [T],
        op: O,
        algorithm: Algorithm,
    ) -> Result<Request<'scope>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        let (buf, op) = match self.core().start_exchange(buf, op, algorithm)? {
            Ok(request) => return Ok(request),
            Err(back) => back,
        };
        self.start(move |c| c.allreduce_with(buf, op, algorithm))
    }

    /// [`Comm::broadcast`] as a request.
    pub fn ibroadcast<T>(&'scope self, buf: &'scope mut [T], root: usize) -> Result<Request<'scope>>
    where
        T: Elem,
    {
        self.ibroadcast_with(buf, root, Broadcast::Auto)
    }

    /// [`Comm::broadcast_with`] as a request.
    pub fn ibroadcast_with<T>(
        &'scope self,
        buf: &'scope mut [T],
        root: usize,
        algorithm: Broadcast,
    ) -> Result<Request<'scope>>
    where
        T: Elem,
    {
        self.start(move |c| c.broadcast_with(buf, root, algorithm))
    }

    /// [`Comm::reduce`] as a request.
    pub fn ireduce<T, O>(
        &'scope self,
        buf: &'scope mut [T],
        op: O,
        root: usize,
    ) -> Result<Request<'scope>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.ireduce_with(buf, op, root, Reduce::Auto)
    }

    /// [`Comm::reduce_with`] as a request.
    pub fn ireduce_with<T, O>(
        &'scope self,
        buf: &'scope mut [T],
        op: O,
        root: usize,
        algorithm: Reduce,
    ) -> Result<Request<'scope>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.start(move |c| c.reduce_with(buf, op, root, algorithm))
    }

    /// [`Comm::scan`] as a request.
    pub fn iscan<T, O>(&'scope self, buf: &'scope mut [T], op: O) -> Result<Request<'scope>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.iscan_with(buf, op, Scan::Auto)
    }

    /// [`Comm::scan_with`] as a request.
    pub fn iscan_with<T, O>(
        &'scope self,
        buf: &'scope mut [T],
        op: O,
        algorithm: Scan,
    ) -> Result<Request<'scope>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.start(move |c| c.scan_with(buf, op, algorithm))
    }

    /// [`Comm::exscan`] as a request.
    pub fn iexscan<T, O>(&'scope self, buf: &'scope mut [T], op: O) -> Result<Request<'scope>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.iexscan_with(buf, op, Scan::Auto)
    }

    /// [`Comm::exscan_with`] as a request.
    pub fn iexscan_with<T, O>(
        &'scope self,
        buf: &'scope mut [T],
        op: O,
        algorithm: Scan,
    ) -> Result<Request<'scope>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.start(move |c| c.exscan_with(buf, op, algorithm))
    }

    /// [`Comm::allgather`] as a request.
    pub fn iallgather<T>(
        &'scope self,
        send: &'scope [T],
        recv: &'scope mut [T],
    ) -> Result<Request<'scope>>
    where
        T: Elem,
    {
        self.iallgather_with(send, recv, Allgather::Auto)
    }

    /// [`Comm::allgather_with`] as a request.
    pub fn iallgather_with<T>(
        &'scope self,
        send: &'scope [T],
        recv: &'scope mut [T],
        algorithm: Allgather,
    ) -> Result<Request<'scope>>
    where
        T: Elem,
    {
        self.start(move |c| c.allgather_with(send, recv, algorithm))
    }

    /// [`Comm::alltoall`] as a request.
    pub fn ialltoall<T>(
        &'scope self,
        send: &'scope [T],
        recv: &'scope mut [T],
    ) -> Result<Request<'scope>>
    where
        T: Elem,
    {
        self.ialltoall_with(send, recv, Alltoall::Auto)
    }

    /// [`Comm::alltoall_with`] as a request.
    pub fn ialltoall_with<T>(
        &'scope self,
        send: &'scope [T],
        recv: &'scope mut [T],
        algorithm: Alltoall,
    ) -> Result<Request<'scope>>
    where
        T: Elem,
    {
        self.start(move |c| c.alltoall_with(send, recv, algorithm))
    }

    /// [`Comm::reduce_scatter_block`] as a request.
    pub fn ireduce_scatter_block<T, O>(
        &'scope self,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: O,
    ) -> Result<Request<'scope>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.ireduce_scatter_block_with(send, recv, op, ReduceScatter::Auto)
    }

    /// [`Comm::reduce_scatter_block_with`] as a request.
    pub fn ireduce_scatter_block_with<T, O>(
        &'scope self,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: O,
        algorithm: ReduceScatter,
    ) -> Result<Request<'scope>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.start(move |c| c.reduce_scatter_block_with(send, recv, op, algorithm))
    }

    /// [`Comm::barrier`] as a request: it completes once every rank has started it.
    pub fn ibarrier(&'scope self) -> Result<Request<'scope>> {
        self.ibarrier_with(Barrier::Auto)
    }

    /// [`Comm::barrier_with`] as a request.
    pub fn ibarrier_with(&'scope self, algorithm: Barrier) -> Result<Request<'scope>> {
        self.start(move |c| c.barrier_with(algorithm))
    }

    /// [`Comm::send`] as a request: `data` must not change until the request completes,
    /// which it does once the message is on its way (copied, or read by the receiver).
    ///
    /// Sends from one rank to one destination arrive in the order they were made, blocking or
    /// not; a send that cannot be posted at once (the receiver is several messages behind)
    /// waits in its scope, and later sends to the same destination wait behind it. Between the
    /// threads of different MPI processes the send is posted to MPI at once (or handed to the
    /// process's relaying leader) and completes when MPI's does.
    pub fn isend<T: Elem>(
        &'scope self,
        dest: impl Into<Peer>,
        data: &'scope [T],
    ) -> Result<Request<'scope>> {
        self.isend_tagged(dest, 0, data)
    }

    /// [`Comm::send_tagged`] as a request ([`Scope::isend`]).
    pub fn isend_tagged<T: Elem>(
        &'scope self,
        dest: impl Into<Peer>,
        tag: u32,
        data: &'scope [T],
    ) -> Result<Request<'scope>> {
        let comm = self.comm();
        let tag = comm.check_tag("isend", tag, false)?.unwrap_or_default();
        let dest = comm.route("isend", dest.into(), false)?;
        names::note::<T>();
        if let (Route::Rank(Some(dest)), true) = (dest, comm.is_threads()) {
            if comm.local().isend_now(dest, tag, data)? {
                return Ok(self.core().completed(Status::NONE));
            }
            // SAFETY: the scope holds the send until it has completed or the run failed, and
            // runs every request to its end before `'scope` ends (`Comm::scope`), so it is
            // dropped within `data`'s borrow.
            if let Some(s) = unsafe { comm.local().post_send(dest, tag, data) } {
                return Ok(self.core().sending(s));
            }
        }
        self.core().start_p2p(move |c| {
            if let Route::Rank(dest) = dest {
                c.isend_on(dest.expect("a send has a destination"), tag, data)?;
            }
            Ok(Status::NONE)
        })
    }

    /// [`Comm::recv`] as a request: `buf` holds the message once the request completes
    /// ([`Request::wait_status`] says from whom, with which tag and how long).
    ///
    /// A non-blocking receive is matched as MPI matches it: a message goes to the receive
    /// the rank made first among those that accept it, so a receive that is still waiting
    /// takes its message before any receive the rank makes later, whether the message comes
    /// from a thread of the same process or over MPI from another.
    pub fn irecv<T: Elem>(
        &'scope self,
        src: impl Into<Peer>,
        buf: &'scope mut [T],
    ) -> Result<Request<'scope>> {
        self.irecv_tagged(src, 0, buf)
    }

    /// [`Comm::recv_tagged`] as a request ([`Scope::irecv`]): any source and any tag too.
    pub fn irecv_tagged<T: Elem>(
        &'scope self,
        src: impl Into<Peer>,
        tag: u32,
        buf: &'scope mut [T],
    ) -> Result<Request<'scope>> {
        let comm = self.comm();
        let tag = comm.check_tag("irecv", tag, true)?;
        let src = comm.route("irecv", src.into(), true)?;
        names::note::<T>();
        if let (Route::Rank(src), true) = (src, comm.is_threads()) {
            let want = Want { src, tag };
            if let Some(found) = comm.local().try_recv_aside(want, &mut *buf)? {
                return Ok(self.core().completed(Status::of(found)));
            }
            // SAFETY: the scope holds the posted receive until it has its message or fails,
            // and runs every request to its end before `'scope` ends (`Comm::scope`), so it
            // is dropped, and withdrawn, within `buf`'s borrow; the rank touches `buf` only
            // through it until then.
            let recv = unsafe { comm.local().post_recv(want, buf) };
            return Ok(self.core().posted(recv));
        }
        self.core().start_p2p(move |c| match src {
            Route::Nowhere => Ok(Status::NONE),
            Route::Rank(src) => c.irecv_on(Want { src, tag }, buf).map(Status::of),
        })
    }
}
