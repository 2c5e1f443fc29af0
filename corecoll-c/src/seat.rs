//! Teams, joined threads and their communicators as C handles.
//!
//! A joined thread's rank is a `Team::seat` of the Rust API, taken by `corecoll_join` and left
//! by `corecoll_leave`, and its blocking calls are the Rust API's calls on the seat's
//! communicator (`call_on`). Its requests need more: the Rust API keeps them in a scope
//! (`Comm::scope`) that a closure holds open, while C's calls come one function at a time. So
//! a rank's first request opens the scope on a stack of its own (a corosensei coroutine, as
//! the crate's tasks), which stops inside it, telling where its context is (`Ctx`: the
//! communicator, its scope, its requests). Each request call then works on that context from
//! the caller's own stack (`call_in`) — the frame that holds it stays where it is while the
//! coroutine is stopped, and nothing else uses it — and `corecoll_leave` resumes the
//! coroutine, which returns from the scope (completing requests never waited for), before the
//! seat is left. Everything the Rust API guarantees inside a seat and a scope holds as it is;
//! a rank that makes no request pays for no stack (one is kept per thread for its next).
//!
//! The first request on a split or duplicated communicator opens that communicator's scope
//! in the same coroutine, inside the scopes already open there, so that scopes nest as they
//! would in Rust and end together, innermost first, when the rank leaves. A communicator freed
//! while its scope is open is therefore kept until then: as in MPI, its requests still
//! complete normally.
//!
//! Handles are never given back to the allocator: a freed handle keeps its memory, marked
//! dead, so that a call with it is `CORECOLL_ERR_HANDLE` rather than a read of freed memory
//! (a pointer that never was a handle cannot be told from one, as in MPI).

use crate::error::{CError, CResult};
use crate::team::Held;
use corecoll_rs::{Comm, Scope, Team};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// What a live handle's first word holds.
pub(crate) const LIVE: u64 = 0x636f_7265_636f_6c6c;
/// What a freed handle's first word holds.
pub(crate) const DEAD: u64 = 0xdead_dead_dead_dead;

/// The bytes of a joined thread's stack (mapped as used).
const STACK_BYTES: usize = 1 << 20;

/// A communicator of a joined thread (`corecoll_join`, `corecoll_comm_split`,
/// `corecoll_comm_dup`): used by that thread only.
pub struct corecoll_comm_t {
    magic: AtomicU64,
    /// The thread that may use it (`thread_mark`).
    owner: AtomicUsize,
    /// Its seat, while it is live.
    seat: Cell<*mut Seat>,
    /// 0 for the joined communicator, k for the seat's k-th split or dup.
    index: Cell<usize>,
}

// SAFETY: a communicator handle's cells are used only by its owner thread (every call checks
// `owner` first, and a handle's fields are written only while it is not live).
unsafe impl Sync for corecoll_comm_t {}
// SAFETY: as above.
unsafe impl Send for corecoll_comm_t {}

/// The calls a request call makes inside the seat's scope: on the scope's context, a result.
pub(crate) type Call<'c> = dyn for<'s, 'e, 'r> FnMut(&'r Ctx<'s, 'e>) -> CResult<()> + 'c;

/// What the scopes' coroutine is resumed with.
enum Cmd {
    /// Open a scope on this communicator (the seat's, boxed, alive until the coroutine ends)
    /// inside the ones open, and tell where its context is.
    Open(*const Comm),
    /// Make this call inside the innermost scope (its lifetime erased: it lives on the stack
    /// of the C call that resumes; `fail` uses it only to raise a panic there).
    Raise(*mut Call<'static>),
    /// End every scope, innermost first.
    End,
}

/// What the scopes' coroutine tells when it stops: where the context of the scope it opened
/// is (NULL after a `Raise`), or an error.
type Told = CResult<*const Ctx<'static, 'static>>;

/// The coroutine that holds a seat's request scopes open.
type ScopeCo = Coroutine<Cmd, Told, CResult<()>, DefaultStack>;

/// A joined thread's rank: its seat in the team's run, its communicators, and — once it has
/// made a request — the coroutine in which its request scope is open.
pub(crate) struct Seat {
    /// The request scopes' coroutine (first, so that it is dropped first: its frames borrow
    /// the rank's communicators).
    co: Option<ScopeCo>,
    /// The contexts in the suspended coroutine's frames, by communicator index (NULL where no
    /// scope is open).
    ctxs: Vec<*const Ctx<'static, 'static>>,
    /// Whether a call is being made (a C call from inside a user op is refused).
    busy: Cell<bool>,
    /// Split and duplicated communicators, by index − 1 (`None` once freed), boxed so that a
    /// scope open on one stays where it is as more are made.
    subs: RefCell<Vec<Option<Box<Comm>>>>,
    /// The rank's seat in the team's run (its lifetime erased: the team is held by `_held`,
    /// below); `None` once the run has failed here (a panic inside the library).
    seat: Option<corecoll_rs::Seat<'static>>,
    /// The handles of its communicators (the joined one first), freed when it leaves.
    comms: Vec<&'static corecoll_comm_t>,
    /// The handles of its requests, freed when it leaves.
    pub(crate) requests: Vec<&'static crate::requests::corecoll_request_t>,
    /// Its team, held until the seat has been left.
    _held: Held,
}

/// Where the request calls on one of a seat's communicators run: the communicator, the scope
/// of its requests, and its requests.
pub(crate) struct Ctx<'s, 'e> {
    pub(crate) comm: &'e Comm,
    pub(crate) scope: &'s Scope<'s, 'e>,
    /// The requests of the scope (`crate::requests`).
    pub(crate) requests: RefCell<Vec<Option<crate::requests::Req<'s>>>>,
    /// Buffers of the library's own that requests use, dropped after the scope has ended.
    pub(crate) kept: &'s Kept,
}

/// Buffers kept until a seat's scope has ended.
pub(crate) type Kept = RefCell<Vec<Box<dyn std::any::Any>>>;

thread_local! {
    /// An address of the calling thread's own (`thread_mark`).
    static MARK: u8 = const { 0 };
    /// The calling thread's seats, innermost last: they are left in reverse order of joining.
    static SEATS: RefCell<Vec<*mut Seat>> = const { RefCell::new(Vec::new()) };
    /// A stack kept from the thread's last seat, for its next.
    static STACK: RefCell<Option<DefaultStack>> = const { RefCell::new(None) };
    /// Communicator handles this thread freed, for its next ones (a thread's handles are its
    /// own, so no lock is shared with other threads).
    static FREE_COMMS: RefCell<Vec<&'static corecoll_comm_t>> = const { RefCell::new(Vec::new()) };
}

/// A number of the calling thread's own while it lives.
pub(crate) fn thread_mark() -> usize {
    MARK.with(|m| m as *const u8 as usize)
}

/// A live communicator handle of `seat`'s, number `index`, owned by the calling thread.
pub(crate) fn new_comm(seat: *mut Seat, index: usize) -> &'static corecoll_comm_t {
    let reused = FREE_COMMS.with(|f| f.borrow_mut().pop());
    let handle: &'static corecoll_comm_t = reused.unwrap_or_else(|| {
        Box::leak(Box::new(corecoll_comm_t {
            magic: AtomicU64::new(DEAD),
            owner: AtomicUsize::new(0),
            seat: Cell::new(std::ptr::null_mut()),
            index: Cell::new(0),
        }))
    });
    handle.owner.store(thread_mark(), Ordering::Relaxed);
    handle.seat.set(seat);
    handle.index.set(index);
    handle.magic.store(LIVE, Ordering::Release);
    handle
}

/// Marks a communicator handle dead and keeps it for reuse.
fn free_comm(handle: &'static corecoll_comm_t) {
    handle.magic.store(DEAD, Ordering::Release);
    handle.seat.set(std::ptr::null_mut());
    FREE_COMMS.with(|f| f.borrow_mut().push(handle));
}

/// The seat and index of a live communicator handle of the calling thread's.
///
/// # Safety
/// `comm` is NULL or a pointer this library returned as a communicator handle.
#[inline]
pub(crate) unsafe fn comm_of(comm: *const corecoll_comm_t) -> CResult<(*mut Seat, usize)> {
    // SAFETY: handles are never deallocated.
    let handle = unsafe { comm.as_ref() }.ok_or(CError::Handle("communicator"))?;
    if handle.magic.load(Ordering::Acquire) != LIVE
        || handle.owner.load(Ordering::Relaxed) != thread_mark()
    {
        return Err(CError::Handle("communicator"));
    }
    Ok((handle.seat.get(), handle.index.get()))
}

/// The error of a call made while another is (from inside a user op's function).
fn reentered() -> CError {
    CError::Unsupported(
        "a corecoll call from inside a corecoll call (a user op's function) is not allowed".into(),
    )
}

/// The error of a call on a seat whose run has failed here.
fn ended() -> CError {
    CError::Internal("the joined rank's run has ended".into())
}

/// Runs blocking call `body` on communicator `index` of `seat` (0: the joined one), on the
/// calling thread's stack. A panic in `body` fails the run for every rank as a panicking rank
/// does (`fail`), and ends this rank's part: the seat is then spent.
///
/// # Safety
/// `seat` is a live seat of the calling thread's (from `comm_of`).
#[inline(always)]
pub(crate) unsafe fn call_on<R>(
    seat: *mut Seat,
    index: usize,
    body: impl FnOnce(&Comm) -> CResult<R>,
) -> CResult<R> {
    // SAFETY: the caller's promise; shared, as a call from inside this one (a user op's
    // function) makes another, which `busy` turns away.
    let this = unsafe { &*seat };
    if this.busy.replace(true) {
        return Err(reentered());
    }
    // The error boxed across the unwind's boundary: a result that carries none (as most do)
    // then comes back in registers, not through memory.
    let out = catch_unwind(AssertUnwindSafe(|| -> Result<R, Box<CError>> {
        let world: &Comm = this.seat.as_deref().ok_or_else(|| Box::new(ended()))?;
        if index == 0 {
            return body(world).map_err(Box::new);
        }
        let subs = this.subs.borrow();
        let comm = subs
            .get(index - 1)
            .and_then(Option::as_deref)
            .ok_or_else(|| Box::new(CError::Handle("communicator")))?;
        body(comm).map_err(Box::new)
    }));
    this.busy.set(false);
    match out {
        Ok(done) => done.map_err(|e| *e),
        Err(payload) => {
            let why = crate::error::panic_text(payload.as_ref());
            // SAFETY: the call has returned, so nothing else refers to the seat.
            unsafe { fail(&mut *seat, &why) };
            Err(CError::Internal(why))
        }
    }
}

/// Makes request call `call` in the scope of `seat`'s communicator `index` (0: the joined
/// one), on the calling thread's own stack, opening the scope first if this is the
/// communicator's first request: the coroutine is suspended inside the scope, so the context
/// it holds there stays where it is and is not used by anything else meanwhile. A panic in
/// `call` fails the run as in `call_on`.
///
/// # Safety
/// As `call_on`.
pub(crate) unsafe fn call_in(seat: *mut Seat, index: usize, call: &mut Call<'_>) -> CResult<()> {
    // SAFETY: as in `call_on`.
    let this = unsafe { &*seat };
    if this.busy.replace(true) {
        return Err(reentered());
    }
    let mut ctx = this.ctxs.get(index).copied().unwrap_or(std::ptr::null());
    if ctx.is_null() {
        // SAFETY: `busy` is set, so nothing else refers to the seat meanwhile.
        match unsafe { open_scope(&mut *seat, index) } {
            Ok(opened) => ctx = opened,
            Err(e) => {
                this.busy.set(false);
                return Err(e);
            }
        }
    }
    // SAFETY: `ctx` points into a frame of the suspended coroutine, which lives until the
    // coroutine is resumed to end the scopes (after which `ctxs` is empty); only its lifetimes
    // are erased, and nothing it hands out outlives that frame (requests are kept in it, and
    // their handles die before the leave).
    let ctx: &Ctx<'static, 'static> = unsafe { &*ctx };
    let out = catch_unwind(AssertUnwindSafe(|| call(ctx)));
    this.busy.set(false);
    out.unwrap_or_else(|payload| {
        let why = crate::error::panic_text(payload.as_ref());
        // SAFETY: as in `call_on`.
        unsafe { fail(&mut *seat, &why) };
        Err(CError::Internal(why))
    })
}

/// Opens the request scope of `seat`'s communicator `index` inside the scopes open in its
/// coroutine (started here if none is): where the scope's context is.
fn open_scope(seat: &mut Seat, index: usize) -> CResult<*const Ctx<'static, 'static>> {
    let comm: *const Comm = if index == 0 {
        seat.seat.as_deref().ok_or_else(ended)?
    } else {
        let subs = seat.subs.borrow();
        let comm: &Comm = subs
            .get(index - 1)
            .and_then(Option::as_deref)
            .ok_or(CError::Handle("communicator"))?;
        comm
    };
    if seat.co.is_none() {
        let stack = STACK
            .with(|s| s.borrow_mut().take())
            .map_or_else(|| DefaultStack::new(STACK_BYTES), Ok)
            .map_err(|e| CError::Internal(format!("a joined thread's stack: {e}")))?;
        seat.co = Some(Coroutine::with_stack(stack, |y, first: Cmd| match first {
            // SAFETY: `Cmd::Open`'s promise: the communicator lives until the coroutine ends.
            Cmd::Open(comm) => serve(y, unsafe { &*comm }),
            Cmd::Raise(_) | Cmd::End => Ok(()),
        }));
    }
    let co = seat.co.as_mut().expect("made above");
    // The communicator is the seat's (the joined one boxed inside the Rust seat, a split or
    // dup boxed in `subs`, which keeps it while a scope is open on it: `drop_comm`), and the
    // coroutine that borrows it ends before the seat is left (`end_scope`, from `leave` and
    // `fail`).
    match co.resume(Cmd::Open(comm)) {
        CoroutineResult::Yield(Ok(ctx)) if !ctx.is_null() => {
            if seat.ctxs.len() <= index {
                seat.ctxs.resize(index + 1, std::ptr::null());
            }
            seat.ctxs[index] = ctx;
            Ok(ctx)
        }
        CoroutineResult::Yield(Err(e)) | CoroutineResult::Return(Err(e)) => Err(e),
        CoroutineResult::Yield(Ok(_)) | CoroutineResult::Return(Ok(())) => Err(CError::Internal(
            "a request scope did not open when asked".into(),
        )),
    }
}

/// The body of the scopes' coroutine from a `Cmd::Open` of `comm`: enters `Comm::scope` on
/// it, tells where its context is and serves the next commands there, a `Cmd::Open` by
/// nesting another scope inside, until told to end (or a raised panic unwinds it).
fn serve(y: &Yielder<Cmd, Told>, comm: &Comm) -> CResult<()> {
    let kept = Kept::default();
    let mut inner = Ok(());
    let out = comm.scope(|scope| {
        let ctx = Ctx {
            comm,
            scope,
            requests: RefCell::new(Vec::new()),
            kept: &kept,
        };
        let here: *const Ctx<'_, '_> = &ctx;
        // SAFETY: only the lifetimes are erased (see `call_in`).
        let here = unsafe {
            std::mem::transmute::<*const Ctx<'_, '_>, *const Ctx<'static, 'static>>(here)
        };
        let mut cmd = y.suspend(Ok(here));
        loop {
            match cmd {
                Cmd::Open(next) => {
                    // SAFETY: `Cmd::Open`'s promise.
                    inner = serve(y, unsafe { &*next });
                    break;
                }
                Cmd::Raise(call) => {
                    // SAFETY: the resuming C call holds `call` alive until this resume ends.
                    let out = unsafe { (*call)(&ctx) };
                    cmd = y.suspend(out.map(|()| std::ptr::null()));
                }
                Cmd::End => break,
            }
        }
        // Requests never waited for complete as the scope ends.
        drop(ctx);
        Ok(())
    });
    inner.and(out.map_err(CError::from))
}

/// Ends `seat`'s request scopes, if any is open: resumed with `cmd` (`Cmd::End`: to end them;
/// a `Cmd::Raise` of a call that panics: to unwind them), the coroutine returns from each
/// scope, innermost first, whose requests never waited for complete. The scopes' outcome; the
/// stack is kept for the thread's next.
fn end_scope(seat: &mut Seat, cmd: Cmd) -> CResult<()> {
    seat.ctxs.clear();
    let Some(mut co) = seat.co.take() else {
        return Ok(());
    };
    let out = match catch_unwind(AssertUnwindSafe(|| co.resume(cmd))) {
        Ok(CoroutineResult::Return(r)) => r,
        Ok(CoroutineResult::Yield(_)) => Err(CError::Internal(
            "the joined rank's request scope did not end when asked".into(),
        )),
        Err(payload) => Err(CError::Internal(crate::error::panic_text(payload.as_ref()))),
    };
    if co.done() {
        let stack = co.into_stack();
        STACK.with(|s| *s.borrow_mut() = Some(stack));
    }
    out
}

/// A panic inside the library, `why`, during a call of `seat`'s: unwinds the request scope
/// (which fails the communicator if requests were in flight) and then the rank's seat, which
/// fails the run for every rank as a panicking rank does. The seat is spent: later calls are
/// errors, and its leave reports the failure.
fn fail(seat: &mut Seat, why: &str) {
    let again = why.to_string();
    let mut raise = move |_: &Ctx<'_, '_>| -> CResult<()> { panic!("{again}") };
    let raise: *mut Call<'_> = &mut raise;
    // SAFETY: only the lifetime is erased; the coroutine calls it before the resume returns.
    let raise: *mut Call<'static> = unsafe { std::mem::transmute(raise) };
    let _ = end_scope(seat, Cmd::Raise(raise));
    seat.subs.borrow_mut().clear();
    if let Some(rank) = seat.seat.take() {
        // Dropped while a panic unwinds: `Seat`'s drop fails the run with `Error::Panicked`.
        let _ = catch_unwind(AssertUnwindSafe(move || {
            let _rank = rank;
            std::panic::resume_unwind(Box::new(why.to_string()))
        }));
    }
}

/// Joins `team` as `rank` on the calling thread: the seat and its joined communicator.
pub(crate) fn join(held: Held, rank: usize) -> CResult<&'static corecoll_comm_t> {
    // SAFETY: only the lifetime is erased: the team is held (`_held`) until the seat, which
    // borrows it, has been left (`leave` takes the seat out before the box is dropped).
    let team: &'static Team = unsafe { &*(&*held as *const Team) };
    let rank_seat = team.seat(rank)?;
    let seat = Box::into_raw(Box::new(Seat {
        co: None,
        ctxs: Vec::new(),
        busy: Cell::new(false),
        subs: RefCell::new(Vec::new()),
        seat: Some(rank_seat),
        comms: Vec::new(),
        requests: Vec::new(),
        _held: held,
    }));
    let world = new_comm(seat, 0);
    // SAFETY: `seat` was just made and is this thread's alone.
    unsafe { (*seat).comms.push(world) };
    SEATS.with(|s| s.borrow_mut().push(seat));
    Ok(world)
}

/// Leaves the seat of joined communicator `comm`: the run's result.
///
/// # Safety
/// As `comm_of`.
pub(crate) unsafe fn leave(comm: *const corecoll_comm_t) -> CResult<()> {
    // SAFETY: the caller's promise.
    let (seat, index) = unsafe { comm_of(comm) }?;
    if index != 0 {
        return Err(CError::Unsupported(
            "corecoll_leave takes the communicator of corecoll_join (free a split or dup with \
             corecoll_comm_free)"
                .into(),
        ));
    }
    let innermost = SEATS.with(|s| s.borrow().last().copied());
    if innermost != Some(seat) {
        return Err(CError::Unsupported(
            "a thread joined to several teams leaves them in reverse order of joining".into(),
        ));
    }
    // SAFETY: a live seat of this thread's; `busy` tells whether a call still refers to it.
    if unsafe { (*seat).busy.get() } {
        return Err(CError::Unsupported(
            "corecoll_leave from inside a corecoll call".into(),
        ));
    }
    SEATS.with(|s| s.borrow_mut().pop());
    // SAFETY: as above, and no call refers to it: the box is ours.
    let mut boxed = unsafe { Box::from_raw(seat) };
    for handle in boxed.comms.drain(..) {
        free_comm(handle);
    }
    crate::requests::free_all(seat);
    let scope = end_scope(&mut boxed, Cmd::End);
    boxed.subs.borrow_mut().clear();
    let left = match boxed.seat.take() {
        Some(rank) => rank.leave().map_err(CError::from),
        None => Err(CError::Internal(
            "a panic inside the library failed the joined rank's run".into(),
        )),
    };
    left.and(scope)
}

/// Runs `make` on communicator `index` of `seat` and adds what it makes (a split or a dup) to
/// the seat: the new communicator's handle, or NULL if `make` made none.
///
/// # Safety
/// As `call_on`.
pub(crate) unsafe fn derive(
    seat: *mut Seat,
    index: usize,
    make: impl Fn(&Comm) -> CResult<Option<Comm>>,
) -> CResult<*mut corecoll_comm_t> {
    // SAFETY: the caller's promise.
    let made = unsafe { call_on(seat, index, make) }?;
    let Some(new) = made else {
        return Ok(std::ptr::null_mut());
    };
    // SAFETY: a live seat of this thread's, not inside a call (it has returned).
    let index = unsafe {
        let mut subs = (*seat).subs.borrow_mut();
        subs.push(Some(Box::new(new)));
        subs.len()
    };
    let handle = new_comm(seat, index);
    // SAFETY: as above.
    unsafe { (*seat).comms.push(handle) };
    Ok(handle as *const corecoll_comm_t as *mut corecoll_comm_t)
}

/// Frees split or duplicated communicator `comm`, number `index` of `seat`: its handle and
/// the communicator.
///
/// # Safety
/// As `call_on`, with `comm` one of the seat's handles.
pub(crate) unsafe fn drop_comm(
    seat: *mut Seat,
    comm: *const corecoll_comm_t,
    index: usize,
) -> CResult<()> {
    // SAFETY: the caller's promise; shared, to look at `busy` first.
    let this = unsafe { &*seat };
    if this.busy.get() {
        return Err(reentered());
    }
    // A communicator with a scope open keeps it, and so its requests, until the leave.
    let scoped = this.ctxs.get(index).is_some_and(|c| !c.is_null());
    if let (Some(sub), false) = (this.subs.borrow_mut().get_mut(index - 1), scoped) {
        *sub = None;
    }
    // SAFETY: the caller's promise; no call refers to the seat (`busy`).
    let comms = unsafe { &mut (*seat).comms };
    if let Some(i) = comms.iter().position(|h| std::ptr::eq(*h, comm)) {
        free_comm(comms.swap_remove(i));
    }
    Ok(())
}

/// A count as `usize`: an error if negative.
#[inline]
pub(crate) fn count(n: c_int, what: &'static str) -> CResult<usize> {
    usize::try_from(n).map_err(|_| CError::Count(what, i64::from(n)))
}
