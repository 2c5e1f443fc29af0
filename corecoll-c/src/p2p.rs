//! Point-to-point in MPI's argument order, with tags, `CORECOLL_ANY_SOURCE`,
//! `CORECOLL_ANY_TAG`, `CORECOLL_PROC_NULL` and a status (`CORECOLL_STATUS_IGNORE`: NULL).

use crate::buf::{slice, slice_mut};
use crate::coll::on_comm;
use crate::error::{CError, CResult, CORECOLL_SUCCESS};
use crate::seat::{corecoll_comm_t, count};
use crate::types::{corecoll_datatype_t, with_type};
use corecoll_rs::{Peer, Status, ANY_TAG};
use std::ffi::{c_int, c_void};

/// A receive or probe from any rank (`MPI_ANY_SOURCE`).
pub const CORECOLL_ANY_SOURCE: c_int = -1;
/// No rank: the call completes at once, sending or receiving nothing (`MPI_PROC_NULL`).
pub const CORECOLL_PROC_NULL: c_int = -2;
/// A receive or probe of any tag (`MPI_ANY_TAG`).
pub const CORECOLL_ANY_TAG: c_int = -1;
/// The largest tag (`MPI_TAG_UB`'s least value, 32767).
pub const CORECOLL_TAG_UB: c_int = 32767;
/// What `corecoll_get_count` gives for a message that is not a whole number of elements.
pub const CORECOLL_UNDEFINED: c_int = -32766;

/// What a receive, probe or completed request reports (`MPI_Status`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct corecoll_status_t {
    /// The sender (`CORECOLL_PROC_NULL` for a receive from it).
    pub source: c_int,
    /// The message's tag (`CORECOLL_ANY_TAG` for a receive from `CORECOLL_PROC_NULL`).
    pub tag: c_int,
    /// The call's return code (`MPI_ERROR`).
    pub error: c_int,
    /// The bytes received (or that the probed message holds).
    pub bytes: usize,
}

/// A C peer as the crate's.
pub(crate) fn peer(rank: c_int) -> CResult<Peer> {
    match rank {
        CORECOLL_ANY_SOURCE => Ok(Peer::Any),
        CORECOLL_PROC_NULL => Ok(Peer::None),
        r => usize::try_from(r)
            .map(Peer::Rank)
            .map_err(|_| CError::Rank(format!("rank {r}: not a rank, ANY_SOURCE or PROC_NULL"))),
    }
}

/// A C tag as the crate's.
pub(crate) fn tag(tag: c_int) -> CResult<u32> {
    match tag {
        CORECOLL_ANY_TAG => Ok(ANY_TAG),
        t => u32::try_from(t)
            .map_err(|_| CError::Unsupported(format!("tag {t}: tags are 0 to {CORECOLL_TAG_UB}"))),
    }
}

/// Writes `status` (of elements of `size` bytes) where `out` points, unless it is NULL.
///
/// # Safety
/// `out` is NULL or points to a writable `corecoll_status_t`.
pub(crate) unsafe fn write_status(out: *mut corecoll_status_t, status: Status, size: usize) {
    // SAFETY: the caller's promise.
    if let Some(out) = unsafe { out.as_mut() } {
        *out = corecoll_status_t {
            source: status.source.map_or(CORECOLL_PROC_NULL, |s| s as c_int),
            tag: if status.tag == ANY_TAG {
                CORECOLL_ANY_TAG
            } else {
                status.tag as c_int
            },
            error: CORECOLL_SUCCESS,
            bytes: status.len * size,
        };
    }
}

/// Sends `count` elements of `datatype` to `dest` with `tag` (`MPI_Send`).
///
/// # Safety
/// `comm` is NULL or a communicator handle of this library's; `buf` holds `count` elements.
#[no_mangle]
pub unsafe extern "C" fn corecoll_send(
    buf: *const c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    dest: c_int,
    tag_: c_int,
    comm: *const corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            with_type!(datatype, |T| {
                let data = slice::<T>(buf, count(count_, "count")?, "buf")?;
                Ok(c.send_tagged(peer(dest)?, tag(tag_)?, data)?)
            })
        })
    }
}

/// Receives at most `count` elements of `datatype` from `source` with `tag` (`MPI_Recv`).
///
/// # Safety
/// As `corecoll_send`, `status` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_recv(
    buf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    source: c_int,
    tag_: c_int,
    comm: *const corecoll_comm_t,
    status: *mut corecoll_status_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            with_type!(datatype, |T| {
                let b = slice_mut::<T>(buf, count(count_, "count")?, "buf")?;
                let st = c.recv_tagged(peer(source)?, tag(tag_)?, b)?;
                write_status(status, st, size_of::<T>());
                Ok(())
            })
        })
    }
}

/// A send and a receive that cannot deadlock against each other (`MPI_Sendrecv`; one type for
/// both sides).
///
/// # Safety
/// As `corecoll_recv`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: corecoll_datatype_t,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: corecoll_datatype_t,
    source: c_int,
    recvtag: c_int,
    comm: *const corecoll_comm_t,
    status: *mut corecoll_status_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            if sendtype != recvtype {
                return Err(CError::Unsupported(
                    "sendrecv: send and receive types differ".into(),
                ));
            }
            with_type!(sendtype, |T| {
                let send = slice::<T>(sendbuf, count(sendcount, "sendcount")?, "sendbuf")?;
                let recv = slice_mut::<T>(recvbuf, count(recvcount, "recvcount")?, "recvbuf")?;
                let st = c.sendrecv_tagged(
                    peer(dest)?,
                    tag(sendtag)?,
                    send,
                    peer(source)?,
                    tag(recvtag)?,
                    recv,
                )?;
                write_status(status, st, size_of::<T>());
                Ok(())
            })
        })
    }
}

/// Waits for a message from `source` with `tag` and reports it without receiving it
/// (`MPI_Probe`), its size in elements of `datatype`.
///
/// # Safety
/// As `corecoll_recv`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_probe(
    source: c_int,
    tag_: c_int,
    datatype: corecoll_datatype_t,
    comm: *const corecoll_comm_t,
    status: *mut corecoll_status_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            with_type!(datatype, |T| {
                let st = c.probe::<T>(peer(source)?, tag(tag_)?)?;
                write_status(status, st, size_of::<T>());
                Ok(())
            })
        })
    }
}

/// Whether a message from `source` with `tag` has arrived (`*flag`), reported as
/// `corecoll_probe` does if so (`MPI_Iprobe`).
///
/// # Safety
/// As `corecoll_recv`, `flag` writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_iprobe(
    source: c_int,
    tag_: c_int,
    datatype: corecoll_datatype_t,
    comm: *const corecoll_comm_t,
    flag: *mut c_int,
    status: *mut corecoll_status_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        on_comm(comm, |c| {
            let flag = flag.as_mut().ok_or(CError::Buffer("flag"))?;
            with_type!(datatype, |T| {
                let found = c.iprobe::<T>(peer(source)?, tag(tag_)?)?;
                *flag = c_int::from(found.is_some());
                if let Some(st) = found {
                    write_status(status, st, size_of::<T>());
                }
                Ok(())
            })
        })
    }
}

/// The number of elements of `datatype` that `status` reports (`MPI_Get_count`):
/// `CORECOLL_UNDEFINED` if its bytes are not a whole number of them.
///
/// # Safety
/// `status` and `count` are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn corecoll_get_count(
    status: *const corecoll_status_t,
    datatype: corecoll_datatype_t,
    count_: *mut c_int,
) -> c_int {
    crate::error::guard(|| {
        // SAFETY: the caller's promise.
        let (status, out) = unsafe { (status.as_ref(), count_.as_mut()) };
        let (status, out) = status.zip(out).ok_or(CError::Buffer("status or count"))?;
        let size = with_type!(datatype, |T| Ok(size_of::<T>()))?;
        *out = if status.bytes % size == 0 {
            c_int::try_from(status.bytes / size).unwrap_or(CORECOLL_UNDEFINED)
        } else {
            CORECOLL_UNDEFINED
        };
        Ok(())
    })
}
