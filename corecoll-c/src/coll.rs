//! The blocking collectives, in MPI's argument order: `corecoll_bcast(buf, count, type, root,
//! comm)` and the rest, `CORECOLL_IN_PLACE` where MPI takes `MPI_IN_PLACE`. The send and
//! receive types of a call must be one type, and (but for the v forms) the send and receive
//! counts one count: corecoll moves typed elements, not bytes.

use crate::buf::{counts, in_place, in_place_or_same, reduced_in, slice, slice_mut};
use crate::error::{fail, CError, CResult, CORECOLL_SUCCESS};
use crate::seat::{call_on, comm_of, corecoll_comm_t, count};
use crate::types::{corecoll_datatype_t, corecoll_op_t, with_type};

use corecoll_rs::Comm;
use std::ffi::{c_int, c_void};

/// Runs blocking call `body` on communicator `comm`: the return code.
///
/// # Safety
/// `comm` is NULL or a communicator handle of this library's.
pub(crate) unsafe fn on_comm(
    comm: *const corecoll_comm_t,
    body: impl FnOnce(&Comm) -> CResult<()>,
) -> c_int {
    // (No `guard` around it: `comm_of` cannot panic, and `call_on` catches a panic of `body`.)
    // SAFETY: the caller's promise.
    let done = unsafe { comm_of(comm) }.and_then(|(seat, index)| {
        // SAFETY: `seat` is live and this thread's (`comm_of`).
        unsafe { call_on(seat, index, body) }
    });
    match done {
        Ok(()) => CORECOLL_SUCCESS,
        Err(e) => fail(e),
    }
}

/// A root as `usize`.
pub(crate) fn root(r: c_int) -> CResult<usize> {
    usize::try_from(r)
        .map_err(|_| CError::Rank(format!("root {r}: a root is a rank of the communicator")))
}

/// The one type and count of a call with a send and a receive side.
fn same(st: c_int, sc: c_int, rt: c_int, rc: c_int) -> CResult<(corecoll_datatype_t, usize)> {
    if st != rt || sc != rc {
        return Err(CError::Unsupported(format!(
            "send type {st} × {sc} and receive type {rt} × {rc} differ: corecoll moves typed \
             elements, so both sides name one type and count"
        )));
    }
    Ok((st, count(sc, "count")?))
}

/// Which buffers of a call with a send and a receive side say its type and count: both (which
/// must then agree), or the one the call uses alone (the other unused, or in place).
#[derive(Clone, Copy)]
enum Sides {
    Both,
    Send,
    Recv,
}

/// The type and count of a call, from the `sides` that say them.
fn typed(
    sides: Sides,
    st: c_int,
    sc: c_int,
    rt: c_int,
    rc: c_int,
) -> CResult<(corecoll_datatype_t, usize)> {
    match sides {
        Sides::Both => same(st, sc, rt, rc),
        Sides::Send => Ok((st, count(sc, "sendcount")?)),
        Sides::Recv => Ok((rt, count(rc, "recvcount")?)),
    }
}

/// Barrier (`MPI_Barrier`).
///
/// # Safety
/// `comm` is NULL or a communicator handle of this library's.
#[no_mangle]
pub unsafe extern "C" fn corecoll_barrier(comm: *const corecoll_comm_t) -> c_int {
    // SAFETY: the caller's promise.
    unsafe { on_comm(comm, |c| Ok(c.barrier()?)) }
}

/// Broadcast of `count` elements of `datatype` from `root` (`MPI_Bcast`).
///
/// # Safety
/// `comm` as in `corecoll_barrier`; `buf` holds `count` elements of `datatype`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_bcast(
    buf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    root_: c_int,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            with_type!(datatype, |T| {
                let b = slice_mut::<T>(buf, count(count_, "count")?, "buf")?;
                Ok(c.broadcast(b, root(root_)?)?)
            })
        })
    }
}

/// Allreduce (`MPI_Allreduce`); `sendbuf` may be `CORECOLL_IN_PLACE`.
///
/// # Safety
/// `comm` as in `corecoll_barrier`; the buffers hold `count` elements of `datatype`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            with_type!(datatype, |T| {
                let n = count(count_, "count")?;
                let op = COp::<T>::new(op)?;
                let recv = slice_mut::<T>(recvbuf, n, "recvbuf")?;
                if in_place_or_same(sendbuf, recvbuf) {
                    Ok(c.allreduce(recv, op)?)
                } else {
                    Ok(c.allreduce_into(slice::<T>(sendbuf, n, "sendbuf")?, recv, op)?)
                }
            })
        })
    }
}

/// Reduce to `root` (`MPI_Reduce`); `sendbuf` may be `CORECOLL_IN_PLACE` on the root, and
/// `recvbuf` is used on the root only.
///
/// # Safety
/// As `corecoll_allreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    root_: c_int,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            with_type!(datatype, |T| {
                let n = count(count_, "count")?;
                let (op, root) = (COp::<T>::new(op)?, root(root_)?);
                if c.rank() != root {
                    let mut mine = slice::<T>(sendbuf, n, "sendbuf")?.to_vec();
                    return Ok(c.reduce(&mut mine, op, root)?);
                }
                let recv = reduced_in::<T>(sendbuf, recvbuf, n)?;
                Ok(c.reduce(recv, op, root)?)
            })
        })
    }
}

/// Inclusive (`exclusive == 0`) or exclusive prefix reduction into `recvbuf`.
///
/// # Safety
/// As `corecoll_allreduce`.
unsafe fn prefix(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
    exclusive: bool,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            with_type!(datatype, |T| {
                let n = count(count_, "count")?;
                let op = COp::<T>::new(op)?;
                let recv = reduced_in::<T>(sendbuf, recvbuf, n)?;
                if exclusive {
                    Ok(c.exscan(recv, op)?)
                } else {
                    Ok(c.scan(recv, op)?)
                }
            })
        })
    }
}

/// Inclusive prefix reduction (`MPI_Scan`); `sendbuf` may be `CORECOLL_IN_PLACE`.
///
/// # Safety
/// As `corecoll_allreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_scan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe { prefix(sendbuf, recvbuf, count_, datatype, op, comm, false) }
}

/// Exclusive prefix reduction (`MPI_Exscan`; rank 0's `recvbuf` is left as it was).
///
/// # Safety
/// As `corecoll_allreduce`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_exscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe { prefix(sendbuf, recvbuf, count_, datatype, op, comm, true) }
}

/// Gather to `root` (`MPI_Gather`); on the root `sendbuf` may be `CORECOLL_IN_PLACE` (its
/// block already in `recvbuf`).
///
/// # Safety
/// As `corecoll_allreduce`, `recvbuf` holding `size × recvcount` elements on the root.
#[no_mangle]
pub unsafe extern "C" fn corecoll_gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: corecoll_datatype_t,
    root_: c_int,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            let root = root(root_)?;
            let at_root = c.rank() == root;
            let sides = match (at_root, in_place(sendbuf)) {
                (false, _) => Sides::Send,
                (true, true) => Sides::Recv,
                (true, false) => Sides::Both,
            };
            let (dt, n) = typed(sides, sendtype, sendcount, recvtype, recvcount)?;
            with_type!(dt, |T| {
                if !at_root {
                    return Ok(c.gather(slice::<T>(sendbuf, n, "sendbuf")?, &mut [], root)?);
                }
                let p = c.size();
                let recv = slice_mut::<T>(recvbuf, n * p, "recvbuf")?;
                if in_place(sendbuf) {
                    let mine = recv[root * n..(root + 1) * n].to_vec();
                    return Ok(c.gather(&mine, recv, root)?);
                }
                Ok(c.gather(slice::<T>(sendbuf, n, "sendbuf")?, recv, root)?)
            })
        })
    }
}

/// Scatter from `root` (`MPI_Scatter`); on the root `recvbuf` may be `CORECOLL_IN_PLACE`.
///
/// # Safety
/// As `corecoll_gather`, `sendbuf` holding `size × sendcount` elements on the root.
#[no_mangle]
pub unsafe extern "C" fn corecoll_scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: corecoll_datatype_t,
    root_: c_int,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            let root = root(root_)?;
            let at_root = c.rank() == root;
            let sides = match (at_root, in_place(recvbuf)) {
                (false, _) => Sides::Recv,
                (true, true) => Sides::Send,
                (true, false) => Sides::Both,
            };
            let (dt, n) = typed(sides, sendtype, sendcount, recvtype, recvcount)?;
            with_type!(dt, |T| {
                if !at_root {
                    let recv = slice_mut::<T>(recvbuf, n, "recvbuf")?;
                    return Ok(c.scatter(&[], recv, root)?);
                }
                let send = slice::<T>(sendbuf, n * c.size(), "sendbuf")?;
                if in_place(recvbuf) {
                    let mut mine = send[root * n..(root + 1) * n].to_vec();
                    return Ok(c.scatter(send, &mut mine, root)?);
                }
                Ok(c.scatter(send, slice_mut::<T>(recvbuf, n, "recvbuf")?, root)?)
            })
        })
    }
}

/// Allgather (`MPI_Allgather`); `sendbuf` may be `CORECOLL_IN_PLACE` (each rank's block
/// already in `recvbuf`).
///
/// # Safety
/// As `corecoll_allreduce`, `recvbuf` holding `size × recvcount` elements.
#[no_mangle]
pub unsafe extern "C" fn corecoll_allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: corecoll_datatype_t,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            let sides = if in_place(sendbuf) {
                Sides::Recv
            } else {
                Sides::Both
            };
            let (dt, n) = typed(sides, sendtype, sendcount, recvtype, recvcount)?;
            with_type!(dt, |T| {
                let (p, r) = (c.size(), c.rank());
                let recv = slice_mut::<T>(recvbuf, n * p, "recvbuf")?;
                if in_place(sendbuf) {
                    let mine = recv[r * n..(r + 1) * n].to_vec();
                    return Ok(c.allgather(&mine, recv)?);
                }
                Ok(c.allgather(slice::<T>(sendbuf, n, "sendbuf")?, recv)?)
            })
        })
    }
}

/// All-to-all (`MPI_Alltoall`); `sendbuf` may be `CORECOLL_IN_PLACE`.
///
/// # Safety
/// As `corecoll_allreduce`, both buffers holding `size × count` elements.
#[no_mangle]
pub unsafe extern "C" fn corecoll_alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: corecoll_datatype_t,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            let sides = if in_place(sendbuf) {
                Sides::Recv
            } else {
                Sides::Both
            };
            let (dt, n) = typed(sides, sendtype, sendcount, recvtype, recvcount)?;
            with_type!(dt, |T| {
                let p = c.size();
                let recv = slice_mut::<T>(recvbuf, n * p, "recvbuf")?;
                if in_place(sendbuf) {
                    let send = recv.to_vec();
                    return Ok(c.alltoall(&send, recv)?);
                }
                Ok(c.alltoall(slice::<T>(sendbuf, n * p, "sendbuf")?, recv)?)
            })
        })
    }
}

/// Reduce-scatter in blocks of `recvcount` (`MPI_Reduce_scatter_block`).
///
/// # Safety
/// As `corecoll_allreduce`, `sendbuf` holding `size × recvcount` elements.
#[no_mangle]
pub unsafe extern "C" fn corecoll_reduce_scatter_block(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            with_type!(datatype, |T| {
                let n = count(recvcount, "recvcount")?;
                let op = COp::<T>::new(op)?;
                let send = slice::<T>(sendbuf, n * c.size(), "sendbuf")?;
                let recv = slice_mut::<T>(recvbuf, n, "recvbuf")?;
                Ok(c.reduce_scatter_block(send, recv, op)?)
            })
        })
    }
}

/// The extent (in elements) that `counts` and `displs` cover.
fn extent(counts: &[usize], displs: &[usize]) -> usize {
    counts
        .iter()
        .zip(displs)
        .map(|(c, d)| c.saturating_add(*d))
        .max()
        .unwrap_or(0)
}

/// Gather of varying blocks to `root` (`MPI_Gatherv`).
///
/// # Safety
/// As `corecoll_gather`, with `recvcounts` and `displs` of `size` entries on the root.
#[no_mangle]
pub unsafe extern "C" fn corecoll_gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: corecoll_datatype_t,
    root_: c_int,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            let root = root(root_)?;
            let n = count(sendcount, "sendcount")?;
            if c.rank() != root {
                return with_type!(sendtype, |T| {
                    Ok(c.gatherv(slice::<T>(sendbuf, n, "sendbuf")?, &mut [], &[], &[], root)?)
                });
            }
            if sendtype != recvtype {
                return Err(CError::Unsupported(
                    "gatherv: send and receive types differ".into(),
                ));
            }
            let p = c.size();
            let (cs, ds) = (
                counts(recvcounts, p, "recvcounts")?,
                counts(displs, p, "displs")?,
            );
            with_type!(recvtype, |T| {
                let recv = slice_mut::<T>(recvbuf, extent(&cs, &ds), "recvbuf")?;
                let send = slice::<T>(sendbuf, n, "sendbuf")?;
                Ok(c.gatherv(send, recv, &cs, &ds, root)?)
            })
        })
    }
}

/// Scatter of varying blocks from `root` (`MPI_Scatterv`).
///
/// # Safety
/// As `corecoll_scatter`, with `sendcounts` and `displs` of `size` entries on the root.
#[no_mangle]
pub unsafe extern "C" fn corecoll_scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: corecoll_datatype_t,
    root_: c_int,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            let root = root(root_)?;
            let n = count(recvcount, "recvcount")?;
            if c.rank() != root {
                return with_type!(recvtype, |T| {
                    let recv = slice_mut::<T>(recvbuf, n, "recvbuf")?;
                    Ok(c.scatterv(&[], &[], &[], recv, root)?)
                });
            }
            if sendtype != recvtype {
                return Err(CError::Unsupported(
                    "scatterv: send and receive types differ".into(),
                ));
            }
            let p = c.size();
            let (cs, ds) = (
                counts(sendcounts, p, "sendcounts")?,
                counts(displs, p, "displs")?,
            );
            with_type!(sendtype, |T| {
                let send = slice::<T>(sendbuf, extent(&cs, &ds), "sendbuf")?;
                let recv = slice_mut::<T>(recvbuf, n, "recvbuf")?;
                Ok(c.scatterv(send, &cs, &ds, recv, root)?)
            })
        })
    }
}

/// Allgather of varying blocks (`MPI_Allgatherv`).
///
/// # Safety
/// As `corecoll_allgather`, with `recvcounts` and `displs` of `size` entries.
#[no_mangle]
pub unsafe extern "C" fn corecoll_allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: corecoll_datatype_t,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            if sendtype != recvtype {
                return Err(CError::Unsupported(
                    "allgatherv: send and receive types differ".into(),
                ));
            }
            let p = c.size();
            let (cs, ds) = (
                counts(recvcounts, p, "recvcounts")?,
                counts(displs, p, "displs")?,
            );
            let n = count(sendcount, "sendcount")?;
            with_type!(recvtype, |T| {
                let send = slice::<T>(sendbuf, n, "sendbuf")?;
                let recv = slice_mut::<T>(recvbuf, extent(&cs, &ds), "recvbuf")?;
                Ok(c.allgatherv(send, recv, &cs, &ds)?)
            })
        })
    }
}

/// All-to-all of varying blocks (`MPI_Alltoallv`).
///
/// # Safety
/// As `corecoll_alltoall`, with the four arrays of `size` entries.
#[no_mangle]
pub unsafe extern "C" fn corecoll_alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: corecoll_datatype_t,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            if sendtype != recvtype {
                return Err(CError::Unsupported(
                    "alltoallv: send and receive types differ".into(),
                ));
            }
            let p = c.size();
            let (sc, sd) = (
                counts(sendcounts, p, "sendcounts")?,
                counts(sdispls, p, "sdispls")?,
            );
            let (rc, rd) = (
                counts(recvcounts, p, "recvcounts")?,
                counts(rdispls, p, "rdispls")?,
            );
            with_type!(sendtype, |T| {
                let send = slice::<T>(sendbuf, extent(&sc, &sd), "sendbuf")?;
                let recv = slice_mut::<T>(recvbuf, extent(&rc, &rd), "recvbuf")?;
                Ok(c.alltoallv(send, &sc, &sd, recv, &rc, &rd)?)
            })
        })
    }
}
