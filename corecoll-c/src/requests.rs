//! Non-blocking and persistent calls: `corecoll_iallreduce` and the other `i` forms return a
//! request, `corecoll_allreduce_init` and the other `_init` forms a persistent one; `wait`,
//! `test`, `waitall`, `start`, `request_free`. They run in their communicator's scope (`seat`),
//! so a request never waited for completes when its thread leaves.
//!
//! A one-shot request works on the caller's buffers, which MPI's rules keep untouched until it
//! completes; a persistent one on buffers of its own (`persistent`).

use crate::error::{guard, CError, CResult};
use crate::p2p::{corecoll_status_t, write_status, CORECOLL_ANY_TAG, CORECOLL_PROC_NULL};
use crate::seat::{call_in, comm_of, corecoll_comm_t, count, Ctx, Seat};
use corecoll_rs::{Request, Status};
use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A request of the C API: NULL is `CORECOLL_REQUEST_NULL`.
pub struct corecoll_request_t {
    magic: AtomicU64,
    owner: AtomicUsize,
    seat: Cell<*mut Seat>,
    /// Its communicator's index in its seat (0: the joined one).
    comm: Cell<usize>,
    /// Its place among its communicator's requests.
    index: Cell<usize>,
    /// The bytes of an element of its type (for its status).
    elem: Cell<usize>,
    persistent: Cell<bool>,
}

// SAFETY: its cells are used by its owner thread only (checked first by every call).
unsafe impl Sync for corecoll_request_t {}
// SAFETY: as above.
unsafe impl Send for corecoll_request_t {}

const LIVE: u64 = 0x7265_7175_6573_7473;
const DEAD: u64 = 0xdead_dead_dead_dead;

thread_local! {
    /// Request handles this thread freed, for its next ones.
    static FREE: RefCell<Vec<&'static corecoll_request_t>> = const { RefCell::new(Vec::new()) };
}

/// A request in its seat: a one-shot one, or a persistent one with its copies.
pub(crate) enum Req<'s> {
    Once(Request<'s>),
    Persistent(Box<dyn Restart + 's>),
}

pub(crate) use crate::persistent::Restart;

/// Makes a request on communicator `comm` with `make` and returns its handle in `out`.
///
/// # Safety
/// `comm` is NULL or a communicator handle of this library's; `out` NULL or writable.
pub(crate) unsafe fn make(
    comm: *const corecoll_comm_t,
    out: *mut *mut corecoll_request_t,
    elem: usize,
    mut make: impl for<'s, 'e, 'r> FnMut(&'r Ctx<'s, 'e>) -> CResult<Req<'s>>,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promises.
        let out = unsafe { out.as_mut() }.ok_or(CError::Buffer("request"))?;
        // SAFETY: as above.
        let (seat, on) = unsafe { comm_of(comm) }?;
        let mut slot = None;
        let mut persistent = false;
        let mut call = |ctx: &Ctx<'_, '_>| -> CResult<()> {
            let req = make(ctx)?;
            persistent = matches!(req, Req::Persistent(_));
            let mut reqs = ctx.requests.borrow_mut();
            let i = reqs.iter().position(Option::is_none).unwrap_or(reqs.len());
            if i == reqs.len() {
                reqs.push(None);
            }
            reqs[i] = Some(req);
            slot = Some(i);
            Ok(())
        };
        // SAFETY: `seat` is live and this thread's.
        unsafe { call_in(seat, on, &mut call) }?;
        let index = slot.ok_or_else(|| CError::Internal("a request without a place".into()))?;
        *out = new_handle(seat, on, index, elem, persistent);
        Ok(())
    })
}

fn new_handle(
    seat: *mut Seat,
    comm: usize,
    index: usize,
    elem: usize,
    persistent: bool,
) -> *mut corecoll_request_t {
    let reused = FREE.with(|f| f.borrow_mut().pop());
    let h: &'static corecoll_request_t = reused.unwrap_or_else(|| {
        Box::leak(Box::new(corecoll_request_t {
            magic: AtomicU64::new(DEAD),
            owner: AtomicUsize::new(0),
            seat: Cell::new(std::ptr::null_mut()),
            comm: Cell::new(0),
            index: Cell::new(0),
            elem: Cell::new(0),
            persistent: Cell::new(false),
        }))
    });
    h.owner.store(crate::seat::thread_mark(), Ordering::Relaxed);
    h.seat.set(seat);
    h.comm.set(comm);
    h.index.set(index);
    h.elem.set(elem);
    h.persistent.set(persistent);
    h.magic.store(LIVE, Ordering::Release);
    // SAFETY: `seat` is live; its list of requests is touched on this thread only.
    unsafe { (*seat).requests.push(h) };
    h as *const corecoll_request_t as *mut corecoll_request_t
}

fn free_handle(h: &'static corecoll_request_t) {
    h.magic.store(DEAD, Ordering::Release);
    let seat = h.seat.replace(std::ptr::null_mut());
    if !seat.is_null() {
        // SAFETY: a live seat of this thread's (its requests are freed before it is).
        let list = unsafe { &mut (*seat).requests };
        if let Some(i) = list.iter().position(|r| std::ptr::eq(*r, h)) {
            list.swap_remove(i);
        }
    }
    FREE.with(|f| f.borrow_mut().push(h));
}

/// Frees every request handle of `seat` (it is leaving).
pub(crate) fn free_all(seat: *mut Seat) {
    // SAFETY: the leaving seat, this thread's.
    let list = std::mem::take(unsafe { &mut (*seat).requests });
    for h in list {
        h.seat.set(std::ptr::null_mut());
        free_handle(h);
    }
}

/// A live request handle of this thread's.
///
/// # Safety
/// `req` is NULL or a request handle of this library's.
unsafe fn handle(req: *mut corecoll_request_t) -> CResult<&'static corecoll_request_t> {
    // SAFETY: handles are never deallocated.
    let h: &'static corecoll_request_t = unsafe { req.as_ref() }.ok_or(CError::Request("NULL"))?;
    if h.magic.load(Ordering::Acquire) != LIVE
        || h.owner.load(Ordering::Relaxed) != crate::seat::thread_mark()
    {
        return Err(CError::Request("freed, or another thread's"));
    }
    Ok(h)
}

/// What a wait or test did to a request.
enum Done {
    /// Not complete.
    No,
    /// Complete, with the status of a one-shot request.
    Yes(Option<Status>),
}

/// Waits for (`block`) or tests request `*req`, writing its status; a completed one-shot
/// request's handle is freed and `*req` set to NULL.
///
/// # Safety
/// `req` NULL or writable, holding NULL or a request handle; `status` NULL or writable.
unsafe fn complete(
    req: *mut *mut corecoll_request_t,
    block: bool,
    status: *mut corecoll_status_t,
) -> CResult<bool> {
    // SAFETY: the caller's promise.
    let slot = unsafe { req.as_mut() }.ok_or(CError::Buffer("request"))?;
    if slot.is_null() {
        let empty = Status {
            source: None,
            tag: corecoll_rs::ANY_TAG,
            len: 0,
        };
        // SAFETY: as above.
        unsafe { write_status(status, empty, 1) };
        return Ok(true);
    }
    // SAFETY: as above.
    let h = unsafe { handle(*slot) }?;
    let (index, persistent) = (h.index.get(), h.persistent.get());
    let mut done = Done::No;
    let mut call = |ctx: &Ctx<'_, '_>| -> CResult<()> {
        let mut reqs = ctx.requests.borrow_mut();
        let entry = reqs.get_mut(index).ok_or(CError::Request("unknown"))?;
        done = match entry.as_mut().ok_or(CError::Request("freed"))? {
            Req::Persistent(p) if block => p.wait().map(|()| Done::Yes(None))?,
            Req::Persistent(p) => p
                .test()
                .map(|d| if d { Done::Yes(None) } else { Done::No })?,
            Req::Once(r) if !block => match r.test_status() {
                Ok(Some(s)) => Done::Yes(Some(s)),
                Ok(None) => Done::No,
                Err(e) => {
                    *entry = None;
                    return Err(e.into());
                }
            },
            Req::Once(_) => {
                let Some(Req::Once(r)) = entry.take() else {
                    unreachable!("matched a one-shot request")
                };
                Done::Yes(Some(r.wait_status()?))
            }
        };
        if let (Done::Yes(_), false) = (&done, persistent) {
            *entry = None;
        }
        Ok(())
    };
    // SAFETY: the handle's seat is live and this thread's.
    let out = unsafe { call_in(h.seat.get(), h.comm.get(), &mut call) };
    if out.is_err() && !persistent {
        free_handle(h);
        *slot = std::ptr::null_mut();
    }
    out?;
    match done {
        Done::No => Ok(false),
        Done::Yes(st) => {
            let st = st.unwrap_or(Status {
                source: None,
                tag: corecoll_rs::ANY_TAG,
                len: 0,
            });
            // SAFETY: as above.
            unsafe { write_status(status, st, h.elem.get()) };
            if let (Some(s), false) = (status_mut(status), st.source.is_some()) {
                s.source = CORECOLL_PROC_NULL;
                s.tag = CORECOLL_ANY_TAG;
            }
            if !persistent {
                free_handle(h);
                *slot = std::ptr::null_mut();
            }
            Ok(true)
        }
    }
}

fn status_mut<'a>(status: *mut corecoll_status_t) -> Option<&'a mut corecoll_status_t> {
    // SAFETY: callers pass NULL or a writable status.
    unsafe { status.as_mut() }
}

/// Waits for request `*req` (`MPI_Wait`): a one-shot request is freed and `*req` set to
/// `CORECOLL_REQUEST_NULL`; a persistent one becomes inactive. A NULL `*req` returns at once.
///
/// # Safety
/// `req` is writable and holds NULL or a request handle; `status` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_wait(
    req: *mut *mut corecoll_request_t,
    status: *mut corecoll_status_t,
) -> c_int {
    // SAFETY: the caller's promises.
    guard(|| unsafe { complete(req, true, status) }.map(drop))
}

/// Whether request `*req` is complete (`*flag`), and if so as `corecoll_wait`
/// (`MPI_Test`).
///
/// # Safety
/// As `corecoll_wait`, `flag` writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_test(
    req: *mut *mut corecoll_request_t,
    flag: *mut c_int,
    status: *mut corecoll_status_t,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promises.
        let flag = unsafe { flag.as_mut() }.ok_or(CError::Buffer("flag"))?;
        // SAFETY: as above.
        let done = unsafe { complete(req, false, status) }?;
        *flag = c_int::from(done);
        Ok(())
    })
}

/// Waits for `count` requests (`MPI_Waitall`); `statuses` NULL or `count` of them. Every
/// request is waited for; the first failure's code is returned.
///
/// # Safety
/// `reqs` holds `count` request slots as `corecoll_wait`'s.
#[no_mangle]
pub unsafe extern "C" fn corecoll_waitall(
    count_: c_int,
    reqs: *mut *mut corecoll_request_t,
    statuses: *mut corecoll_status_t,
) -> c_int {
    let Ok(n) = count(count_, "count") else {
        return crate::error::fail(CError::Count("count", i64::from(count_)));
    };
    if n > 0 && reqs.is_null() {
        return crate::error::fail(CError::Buffer("requests"));
    }
    let mut first = crate::error::CORECOLL_SUCCESS;
    for i in 0..n {
        // SAFETY: the caller's promise: `n` slots, and `n` statuses unless NULL.
        let status = if statuses.is_null() {
            statuses
        } else {
            // SAFETY: within the caller's `n` statuses.
            unsafe { statuses.add(i) }
        };
        // SAFETY: as above.
        let code = unsafe { corecoll_wait(reqs.add(i), status) };
        if first == crate::error::CORECOLL_SUCCESS {
            first = code;
        }
    }
    first
}

/// Starts persistent request `*req` (`MPI_Start`): the caller's input is copied in now.
///
/// # Safety
/// `req` holds a request handle.
#[no_mangle]
pub unsafe extern "C" fn corecoll_start(req: *mut *mut corecoll_request_t) -> c_int {
    guard(|| {
        // SAFETY: the caller's promises.
        let h = unsafe { handle(*req.as_ref().ok_or(CError::Buffer("request"))?) }?;
        if !h.persistent.get() {
            return Err(CError::Request("not persistent"));
        }
        let index = h.index.get();
        let mut call = |ctx: &Ctx<'_, '_>| -> CResult<()> {
            match ctx.requests.borrow_mut().get_mut(index) {
                Some(Some(Req::Persistent(p))) => Ok(p.start()?),
                _ => Err(CError::Request("unknown")),
            }
        };
        // SAFETY: the handle's seat is live and this thread's.
        unsafe { call_in(h.seat.get(), h.comm.get(), &mut call) }
    })
}

/// Frees request `*req` (`MPI_Request_free`) and sets it to NULL: a one-shot request still in
/// flight completes by itself (at the latest when its thread leaves), so its buffers must stay
/// valid until then.
///
/// # Safety
/// As `corecoll_wait`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_request_free(req: *mut *mut corecoll_request_t) -> c_int {
    guard(|| {
        // SAFETY: the caller's promises.
        let slot = unsafe { req.as_mut() }.ok_or(CError::Buffer("request"))?;
        // SAFETY: as above.
        let h = unsafe { handle(*slot) }?;
        let index = h.index.get();
        let mut call = |ctx: &Ctx<'_, '_>| -> CResult<()> {
            if let Some(entry) = ctx.requests.borrow_mut().get_mut(index) {
                *entry = None;
            }
            Ok(())
        };
        // SAFETY: as above.
        let out = unsafe { call_in(h.seat.get(), h.comm.get(), &mut call) };
        free_handle(h);
        *slot = std::ptr::null_mut();
        out
    })
}
