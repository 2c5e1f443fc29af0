//! The non-blocking calls (`MPI_I…`): each starts a request in its communicator's scope and
//! hands back its handle (`requests`), working on the caller's buffers, which MPI's
//! rules keep untouched until the request completes.

use crate::buf::{in_place, reduced_in, slice, slice_mut};
use crate::coll::root;
use crate::p2p::{peer, tag};
use crate::persistent::kept;
use crate::requests::{corecoll_request_t, make, Req};
use crate::seat::{corecoll_comm_t, count};
use crate::types::{corecoll_datatype_t, corecoll_op_t, with_type};
use std::ffi::{c_int, c_void};

/// Non-blocking allreduce (`MPI_Iallreduce`).
///
/// # Safety
/// As `corecoll_allreduce`, the buffers untouched until the request completes; `request`
/// writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_iallreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, 0, |ctx| {
            with_type!(datatype, |T| {
                let n = count(count_, "count")?;
                let op = COp::<T>::new(op)?;
                let recv = reduced_in::<T>(sendbuf, recvbuf, n)?;
                Ok(Req::Once(ctx.scope.iallreduce(recv, op)?))
            })
        })
    }
}

/// Non-blocking broadcast (`MPI_Ibcast`).
///
/// # Safety
/// As `corecoll_iallreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_ibcast(
    buf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    root_: c_int,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, 0, |ctx| {
            with_type!(datatype, |T| {
                let b = slice_mut::<T>(buf, count(count_, "count")?, "buf")?;
                Ok(Req::Once(ctx.scope.ibroadcast(b, root(root_)?)?))
            })
        })
    }
}

/// Non-blocking reduce (`MPI_Ireduce`).
///
/// # Safety
/// As `corecoll_iallreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_ireduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    root_: c_int,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, 0, |ctx| {
            with_type!(datatype, |T| {
                let n = count(count_, "count")?;
                let (op, root) = (COp::<T>::new(op)?, root(root_)?);
                let buf = if ctx.comm.rank() != root {
                    kept(ctx, slice::<T>(sendbuf, n, "sendbuf")?, n)
                } else {
                    let recv = reduced_in::<T>(sendbuf, recvbuf, n)?;
                    recv
                };
                Ok(Req::Once(ctx.scope.ireduce(buf, op, root)?))
            })
        })
    }
}

/// Non-blocking barrier (`MPI_Ibarrier`).
///
/// # Safety
/// As `corecoll_iallreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_ibarrier(
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe { make(comm, request, 0, |ctx| Ok(Req::Once(ctx.scope.ibarrier()?))) }
}

/// Non-blocking allgather (`MPI_Iallgather`; one type and count for both sides).
///
/// # Safety
/// As `corecoll_iallreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_iallgather(
    sendbuf: *const c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, 0, |ctx| {
            with_type!(datatype, |T| {
                let n = count(count_, "count")?;
                let (p, r) = (ctx.comm.size(), ctx.comm.rank());
                let recv = slice_mut::<T>(recvbuf, n * p, "recvbuf")?;
                let send: &[T] = if in_place(sendbuf) {
                    kept(ctx, &recv[r * n..(r + 1) * n], n)
                } else {
                    slice::<T>(sendbuf, n, "sendbuf")?
                };
                Ok(Req::Once(ctx.scope.iallgather(send, recv)?))
            })
        })
    }
}

/// Non-blocking send (`MPI_Isend`).
///
/// # Safety
/// As `corecoll_iallreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_isend(
    buf: *const c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    dest: c_int,
    tag_: c_int,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, 0, |ctx| {
            with_type!(datatype, |T| {
                let data = slice::<T>(buf, count(count_, "count")?, "buf")?;
                Ok(Req::Once(ctx.scope.isend_tagged(
                    peer(dest)?,
                    tag(tag_)?,
                    data,
                )?))
            })
        })
    }
}

/// Non-blocking receive (`MPI_Irecv`); its status is the wait's.
///
/// # Safety
/// As `corecoll_iallreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_irecv(
    buf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    source: c_int,
    tag_: c_int,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    let elem = with_type!(datatype, |T| Ok(size_of::<T>())).unwrap_or(1);
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, elem, |ctx| {
            with_type!(datatype, |T| {
                let b = slice_mut::<T>(buf, count(count_, "count")?, "buf")?;
                Ok(Req::Once(ctx.scope.irecv_tagged(
                    peer(source)?,
                    tag(tag_)?,
                    b,
                )?))
            })
        })
    }
}

/// Non-blocking inclusive (`exclusive` false) or exclusive prefix reduction into `recvbuf`.
///
/// # Safety
/// As `corecoll_iallreduce`.
unsafe fn iprefix(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
    exclusive: bool,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, 0, |ctx| {
            with_type!(datatype, |T| {
                let n = count(count_, "count")?;
                let op = COp::<T>::new(op)?;
                let recv = reduced_in::<T>(sendbuf, recvbuf, n)?;
                Ok(Req::Once(if exclusive {
                    ctx.scope.iexscan(recv, op)?
                } else {
                    ctx.scope.iscan(recv, op)?
                }))
            })
        })
    }
}

/// Non-blocking inclusive prefix reduction (`MPI_Iscan`).
///
/// # Safety
/// As `corecoll_iallreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_iscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe { iprefix(sendbuf, recvbuf, count_, datatype, op, comm, request, false) }
}

/// Non-blocking exclusive prefix reduction (`MPI_Iexscan`).
///
/// # Safety
/// As `corecoll_iallreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_iexscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe { iprefix(sendbuf, recvbuf, count_, datatype, op, comm, request, true) }
}

/// Non-blocking all-to-all (`MPI_Ialltoall`; one type and count for both sides).
///
/// # Safety
/// As `corecoll_iallreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_ialltoall(
    sendbuf: *const c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, 0, |ctx| {
            with_type!(datatype, |T| {
                let n = count(count_, "count")? * ctx.comm.size();
                let recv = slice_mut::<T>(recvbuf, n, "recvbuf")?;
                let send: &[T] = if in_place(sendbuf) {
                    kept(ctx, recv, n)
                } else {
                    slice::<T>(sendbuf, n, "sendbuf")?
                };
                Ok(Req::Once(ctx.scope.ialltoall(send, recv)?))
            })
        })
    }
}

/// Non-blocking reduce-scatter in blocks (`MPI_Ireduce_scatter_block`).
///
/// # Safety
/// As `corecoll_iallreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_ireduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, 0, |ctx| {
            with_type!(datatype, |T| {
                let n = count(recvcount, "recvcount")?;
                let op = COp::<T>::new(op)?;
                let send = slice::<T>(sendbuf, n * ctx.comm.size(), "sendbuf")?;
                let recv = slice_mut::<T>(recvbuf, n, "recvbuf")?;
                Ok(Req::Once(ctx.scope.ireduce_scatter_block(send, recv, op)?))
            })
        })
    }
}
