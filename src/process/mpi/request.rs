//! Immediate operations of the MPI transport and their requests: the send it posts
//! (`MPI_Isend`), and the wait for requests, blocking in MPI or polling politely for processes
//! whose threads outnumber the cores ([`poll_politely`]); and the byte-level requests of
//! point-to-point between threads of different processes (`p2p`): posting, testing, and
//! giving up (cancel, then wait).

use super::transport::ok;
use super::MpiTransport;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::wire::payload;
use ::mpi::ffi;
use ::mpi::traits::AsRaw;
use std::mem::MaybeUninit;
use std::os::raw::c_int;

/// Polls `done` until it returns true: crossbeam's `Backoff::snooze` between polls, a few
/// growing spins and then one `yield_now` per poll. For processes whose threads outnumber the
/// cores: MPI's blocking calls poll the network without giving the core up, and on a shared
/// core the peer they wait for (another process, or a thread of this one) then runs only when
/// the scheduler preempts them, a time slice of milliseconds per message. Figures in
/// docs/hybrid.md ("Polite MPI waits"), with their command.
///
/// Inside a task (a request of a scope, `sync::task`) the task suspends between polls instead,
/// and whoever resumes it polls `done` (`task::poll_until`).
pub(crate) fn poll_politely(mut done: impl FnMut() -> bool) {
    if crate::sync::task::inside() {
        // `done` may consume what it found (a probed message): once true, it stays true.
        let mut finished = false;
        crate::sync::task::poll_until(&mut || {
            finished = finished || done();
            finished
        });
        return;
    }
    // No parking: nothing wakes a thread when an MPI message arrives.
    let backoff = crossbeam_utils::Backoff::new();
    while !done() {
        backoff.snooze();
    }
}

/// Waits for every request of `reqs` (completed ones are null requests): `MPI_Waitall`, or if
/// `polite`, `MPI_Testall` until done ([`poll_politely`]).
pub(crate) fn wait_all(reqs: &mut [ffi::MPI_Request], polite: bool) {
    if reqs.is_empty() {
        return;
    }
    let n = reqs.len() as c_int;
    if polite {
        poll_politely(|| {
            let mut done: c_int = 0;
            // SAFETY: `reqs` holds requests returned by MPI (or null requests), writable in
            // place; the statuses are ignored (RSMPI_STATUSES_IGNORE is MPI's sentinel).
            let rc = unsafe {
                ffi::MPI_Testall(n, reqs.as_mut_ptr(), &mut done, ffi::RSMPI_STATUSES_IGNORE)
            };
            ok(rc, "MPI_Testall");
            done != 0
        });
        return;
    }
    // SAFETY: as for MPI_Testall above.
    let rc = unsafe { ffi::MPI_Waitall(n, reqs.as_mut_ptr(), ffi::RSMPI_STATUSES_IGNORE) };
    ok(rc, "MPI_Waitall");
}

impl MpiTransport<'_> {
    /// Posts the send of `data` to `dest` with `tag` (`MPI_Isend`; for a zero-sized `T`, of
    /// `count`, which must hold `data.len()`) and returns its request.
    ///
    /// # Safety
    /// `data` and `count` must stay alive and unchanged until the request is completed.
    pub(super) unsafe fn isend<T: Elem>(
        &self,
        dest: usize,
        tag: Tag,
        data: &[T],
        count: &u64,
    ) -> Result<ffi::MPI_Request> {
        let (ptr, bytes) = payload(data, count);
        let n = self.count(bytes)?;
        let mut req = MaybeUninit::<ffi::MPI_Request>::uninit();
        // SAFETY: `ptr` is readable for `bytes` bytes (the slice, or `count`), kept alive and
        // unchanged per the contract; `req` is a live out-parameter; the datatype is a
        // predefined one, the communicator valid, `dest` checked by the callers.
        let rc = unsafe {
            ffi::MPI_Isend(
                ptr.cast(),
                n,
                ffi::RSMPI_UINT8_T,
                dest as c_int,
                self.codec.encode(tag),
                self.comm.as_raw(),
                req.as_mut_ptr(),
            )
        };
        ok(rc, "MPI_Isend");
        // SAFETY: MPI_Isend succeeded and so wrote the request.
        Ok(unsafe { req.assume_init() })
    }

    /// Waits for every request of `reqs` (`MPI_Waitall`, or `MPI_Testall` polled politely;
    /// completed ones are null requests).
    pub(super) fn wait_all(&self, reqs: &mut [ffi::MPI_Request]) {
        wait_all(reqs, self.polite);
    }
}

/// MPI's null request (`MPI_REQUEST_NULL`).
pub(super) fn null_request() -> ffi::MPI_Request {
    // SAFETY: reading rsmpi's extern static, a constant the MPI library defines.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

/// MPI's wildcards for a source and a tag (`MPI_ANY_SOURCE`, `MPI_ANY_TAG`).
pub(super) fn wildcards() -> (c_int, c_int) {
    // SAFETY: reading rsmpi's extern statics, constants the MPI library defines.
    unsafe { (ffi::RSMPI_ANY_SOURCE, ffi::RSMPI_ANY_TAG) }
}

/// Lets MPI progress the requests this process has posted, without waiting for anything (an
/// `MPI_Iprobe` on `comm` for any message, which every MPI library progresses in): for a wait
/// outside MPI (a node's shared memory) while this process's immediate collectives, which
/// others may be waiting for, are in flight.
pub(crate) fn nudge<C: AsRaw<Raw = ffi::MPI_Comm>>(comm: &C) {
    let (source, tag) = wildcards();
    let mut found: c_int = 0;
    // SAFETY: the communicator is valid; `found` is a live out-parameter and the status is
    // MPI's "ignore" sentinel.
    let rc = unsafe {
        ffi::MPI_Iprobe(
            source,
            tag,
            comm.as_raw(),
            &mut found,
            ffi::RSMPI_STATUS_IGNORE,
        )
    };
    ok(rc, "MPI_Iprobe");
}

/// Posts `MPI_Isend` of `bytes` bytes at `ptr` into `req`.
///
/// # Safety
/// `ptr` must be readable for `bytes` bytes until the request completes or is given up.
pub(super) unsafe fn isend(
    ptr: *const u8,
    bytes: usize,
    process: usize,
    tag: c_int,
    comm: ffi::MPI_Comm,
    req: &mut ffi::MPI_Request,
) {
    // SAFETY: per the contract; the datatype is predefined, the communicator valid, `process`
    // one of its ranks (the layout's), `req` a live out-parameter.
    let rc = unsafe {
        ffi::MPI_Isend(
            ptr.cast(),
            bytes as c_int,
            ffi::RSMPI_UINT8_T,
            process as c_int,
            tag,
            comm,
            req,
        )
    };
    ok(rc, "MPI_Isend");
}

/// `MPI_Testall` on `reqs` (completed ones are null requests).
pub(super) fn test_all(reqs: &mut [ffi::MPI_Request]) -> bool {
    let mut done: c_int = 0;
    // SAFETY: `reqs` holds requests MPI returned (or null requests), writable in place; the
    // statuses are ignored (MPI's sentinel).
    let rc = unsafe {
        ffi::MPI_Testall(
            reqs.len() as c_int,
            reqs.as_mut_ptr(),
            &mut done,
            ffi::RSMPI_STATUSES_IGNORE,
        )
    };
    ok(rc, "MPI_Testall");
    done != 0
}

/// Cancels every request of `reqs` that is not complete, then waits for all of them.
pub(super) fn cancel_all(reqs: &mut [ffi::MPI_Request]) {
    for req in reqs.iter_mut() {
        if *req != null_request() {
            // SAFETY: `req` is a live request MPI returned; cancelling a completed one is a
            // no-op.
            ok(unsafe { ffi::MPI_Cancel(req) }, "MPI_Cancel");
        }
    }
    // SAFETY: as in `test_all`; a cancelled request's wait returns whatever the peers do.
    let rc = unsafe {
        ffi::MPI_Waitall(
            reqs.len() as c_int,
            reqs.as_mut_ptr(),
            ffi::RSMPI_STATUSES_IGNORE,
        )
    };
    ok(rc, "MPI_Waitall");
}
