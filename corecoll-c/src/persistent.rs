//! Persistent collectives from C: `corecoll_allreduce_init` and the other `_init` forms,
//! started by `corecoll_start` and completed by `corecoll_wait` or `corecoll_test`
//! (`requests`). Each works on buffers of its own: a start copies the caller's input in, and
//! the completion copies the result out, so that the caller may write its buffers between
//! starts as MPI allows without the library holding them meanwhile.

use crate::buf::{in_place, slice, slice_mut};
use crate::coll::root;
use crate::requests::{corecoll_request_t, make, Req};
use crate::seat::{corecoll_comm_t, count, Ctx};
use crate::types::{corecoll_datatype_t, corecoll_op_t, with_type};
use corecoll_rs::{Persistent, Result};
use std::ffi::{c_int, c_void};

/// A persistent request of any element type.
pub(crate) trait Restart {
    /// Copies the caller's input in and starts.
    fn start(&mut self) -> Result<()>;
    /// Whether the start in flight is done (its result then copied out); true if none is.
    fn test(&mut self) -> Result<bool>;
    /// Waits for the start in flight (its result then copied out).
    fn wait(&mut self) -> Result<()>;
}

/// A persistent collective on buffers of its own, with where the caller's input comes from
/// (into the in-place buffer, or the send buffer) and where its result goes.
struct Copies<'s, T> {
    p: Persistent<'s, T>,
    /// The caller's input and whether it goes to the send buffer (else the in-place one).
    input: Option<(*const T, usize, bool)>,
    /// The caller's result buffer.
    output: Option<(*mut T, usize)>,
    /// Whether a start is in flight.
    active: bool,
}

impl<T: Copy + Send + Sync + 'static> Copies<'_, T> {
    fn copy_out(&mut self) -> Result<()> {
        self.active = false;
        if let Some((ptr, n)) = self.output {
            let from = self.p.recv_buffer()?;
            // SAFETY: the caller's buffer of `n` elements, valid while the request lives (its
            // promise at the request's making); `from` is the library's own, of `n` too.
            unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), ptr, n) };
        }
        Ok(())
    }
}

impl<T: Copy + Send + Sync + 'static> Restart for Copies<'_, T> {
    fn start(&mut self) -> Result<()> {
        if let Some((ptr, n, to_send)) = self.input {
            let to = if to_send {
                self.p.send_buffer()?
            } else {
                self.p.buffer()?
            };
            // SAFETY: as in `copy_out`, the other way.
            unsafe { std::ptr::copy_nonoverlapping(ptr, to.as_mut_ptr(), n) };
        }
        self.p.start()?;
        self.active = true;
        Ok(())
    }

    fn test(&mut self) -> Result<bool> {
        if !self.active {
            return Ok(true);
        }
        let done = self.p.test()?;
        if done {
            self.copy_out()?;
        }
        Ok(done)
    }

    fn wait(&mut self) -> Result<()> {
        if !self.active {
            return Ok(());
        }
        self.p.wait()?;
        self.copy_out()
    }
}

/// A buffer of `n` elements kept until the seat's scope has ended, as `'s`.
pub(crate) fn kept<'s, T: Copy + 'static>(ctx: &Ctx<'s, '_>, from: &[T], n: usize) -> &'s mut [T] {
    let mut v: Vec<T> = Vec::with_capacity(n);
    v.extend(from.iter().copied().cycle().take(n));
    if v.len() < n {
        // An empty `from` and a non-zero `n`: zero bits are a value of every C element type.
        // SAFETY: as said; the capacity is `n`.
        unsafe {
            std::ptr::write_bytes(v.as_mut_ptr(), 0, n);
            v.set_len(n);
        }
    }
    let mut boxed = v.into_boxed_slice();
    let ptr = boxed.as_mut_ptr();
    ctx.kept.borrow_mut().push(Box::new(boxed));
    // SAFETY: the box's heap buffer does not move, and `kept` drops it only after the scope
    // (and every request of it) has ended; nothing else refers to it.
    unsafe { std::slice::from_raw_parts_mut(ptr, n) }
}

/// Persistent allreduce (`MPI_Allreduce_init`): each `corecoll_start` reduces `sendbuf`'s
/// contents then (or `recvbuf`'s, for `CORECOLL_IN_PLACE`) into `recvbuf`.
///
/// # Safety
/// As `corecoll_iallreduce`, the buffers valid until the request is freed.
#[no_mangle]
pub unsafe extern "C" fn corecoll_allreduce_init(
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
                let recv = slice_mut::<T>(recvbuf, n, "recvbuf")?.as_mut_ptr();
                let input = if in_place(sendbuf) {
                    recv as *const T
                } else {
                    slice::<T>(sendbuf, n, "sendbuf")?.as_ptr()
                };
                let own = kept::<T>(ctx, &[], n);
                let p = ctx.scope.allreduce_init(own, op)?;
                Ok(Req::Persistent(Box::new(Copies {
                    p,
                    input: Some((input, n, false)),
                    output: Some((recv, n)),
                    active: false,
                })))
            })
        })
    }
}

/// Persistent broadcast (`MPI_Bcast_init`): each start sends the root's `buf` as it is then.
///
/// # Safety
/// As `corecoll_allreduce_init`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_bcast_init(
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
                let n = count(count_, "count")?;
                let root = root(root_)?;
                let b = slice_mut::<T>(buf, n, "buf")?.as_mut_ptr();
                let own = kept::<T>(ctx, &[], n);
                let p = ctx.scope.broadcast_init(own, root)?;
                let input = (ctx.comm.rank() == root).then_some((b as *const T, n, false));
                Ok(Req::Persistent(Box::new(Copies {
                    p,
                    input,
                    output: Some((b, n)),
                    active: false,
                })))
            })
        })
    }
}

/// Persistent barrier (`MPI_Barrier_init`).
///
/// # Safety
/// As `corecoll_allreduce_init`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_barrier_init(
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, 0, |ctx| {
            let p = ctx.scope.barrier_init()?;
            Ok(Req::Persistent(Box::new(Copies::<()> {
                p,
                input: None,
                output: None,
                active: false,
            })))
        })
    }
}

/// Persistent reduce (`MPI_Reduce_init`): each start reduces `sendbuf` (on the root
/// `recvbuf` for `CORECOLL_IN_PLACE`) into the root's `recvbuf`.
///
/// # Safety
/// As `corecoll_allreduce_init`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_reduce_init(
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
                let at_root = ctx.comm.rank() == root;
                let output = if at_root {
                    Some((slice_mut::<T>(recvbuf, n, "recvbuf")?.as_mut_ptr(), n))
                } else {
                    None
                };
                let input = match output {
                    Some((recv, _)) if in_place(sendbuf) => recv as *const T,
                    _ => slice::<T>(sendbuf, n, "sendbuf")?.as_ptr(),
                };
                let own = kept::<T>(ctx, &[], n);
                let p = ctx.scope.reduce_init(own, op, root)?;
                Ok(Req::Persistent(Box::new(Copies {
                    p,
                    input: Some((input, n, false)),
                    output,
                    active: false,
                })))
            })
        })
    }
}

/// A persistent collective with a send and a receive buffer, `count_` elements per rank's
/// block (the buffer with a block per rank holds `size` of them), made by `init` on buffers of
/// the library's own.
///
/// # Safety
/// As `corecoll_allreduce_init`.
unsafe fn init_two_sided(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    op: corecoll_op_t,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
    init: Collective2,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        make(comm, request, 0, |ctx| {
            with_type!(datatype, |T| {
                // `count_` per rank on the side that holds a block per rank, once on the other.
                let (n, p) = (count(count_, "count")?, ctx.comm.size());
                let (ns, nr) = match init {
                    Collective2::Allgather => (n, n * p),
                    Collective2::Alltoall => (n * p, n * p),
                    Collective2::ReduceScatter => (n * p, n),
                };
                let send = slice::<T>(sendbuf, ns, "sendbuf")?.as_ptr();
                let recv = slice_mut::<T>(recvbuf, nr, "recvbuf")?.as_mut_ptr();
                let (own_send, own_recv) = (kept::<T>(ctx, &[], ns), kept::<T>(ctx, &[], nr));
                let s = ctx.scope;
                let p = match init {
                    Collective2::Allgather => s.allgather_init(own_send, own_recv)?,
                    Collective2::Alltoall => s.alltoall_init(own_send, own_recv)?,
                    Collective2::ReduceScatter => {
                        s.reduce_scatter_block_init(own_send, own_recv, COp::<T>::new(op)?)?
                    }
                };
                Ok(Req::Persistent(Box::new(Copies {
                    p,
                    input: Some((send, ns, true)),
                    output: Some((recv, nr)),
                    active: false,
                })))
            })
        })
    }
}

/// The persistent collectives with a send and a receive buffer.
#[derive(Clone, Copy)]
enum Collective2 {
    Allgather,
    Alltoall,
    ReduceScatter,
}

/// Persistent allgather (`MPI_Allgather_init`; one type, `count` per rank).
///
/// # Safety
/// As `corecoll_allreduce_init`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_allgather_init(
    sendbuf: *const c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        init_two_sided(
            sendbuf,
            recvbuf,
            count_,
            datatype,
            crate::types::CORECOLL_OP_NULL,
            comm,
            request,
            Collective2::Allgather,
        )
    }
}

/// Persistent all-to-all (`MPI_Alltoall_init`; one type, `count` per pair of ranks).
///
/// # Safety
/// As `corecoll_allreduce_init`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_alltoall_init(
    sendbuf: *const c_void,
    count_: c_int,
    datatype: corecoll_datatype_t,
    recvbuf: *mut c_void,
    comm: *const corecoll_comm_t,
    request: *mut *mut corecoll_request_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        init_two_sided(
            sendbuf,
            recvbuf,
            count_,
            datatype,
            crate::types::CORECOLL_OP_NULL,
            comm,
            request,
            Collective2::Alltoall,
        )
    }
}

/// Persistent reduce-scatter in blocks (`MPI_Reduce_scatter_block_init`).
///
/// # Safety
/// As `corecoll_allreduce_init`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_reduce_scatter_block_init(
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
        init_two_sided(
            sendbuf,
            recvbuf,
            recvcount,
            datatype,
            op,
            comm,
            request,
            Collective2::ReduceScatter,
        )
    }
}
