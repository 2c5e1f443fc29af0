//! Teams, joined threads and their communicators as C handles.
//!
//! A joined thread's rank runs as the Rust API runs it — `Team::join` with a scope for its
//! requests (`Comm::scope`) around the rank's calls — but its calls come one C function at a
//! time. So the join and the scope run on a stack of their own (a corosensei coroutine, as the
//! crate's tasks): `corecoll_join` starts it, and it stops inside the scope, handing control
//! back to C and telling where its context is (`Ctx`: the rank's communicator, its scope, its
//! requests). Each C call then works on that context from the caller's own stack — the frame
//! that holds it stays where it is while the coroutine is stopped, and nothing else uses it —
//! and `corecoll_leave` resumes the coroutine, which returns from the scope (completing
//! requests never waited for) and from the join (waiting for the run's other ranks).
//! Everything the Rust API guarantees inside a join and a scope holds as it is, at the price of
//! one stack per joined thread (kept for its next join).
//!
//! Handles are never given back to the allocator: a freed handle keeps its memory, marked
//! dead, so that a call with it is `CORECOLL_ERR_HANDLE` rather than a read of freed memory
//! (a pointer that never was a handle cannot be told from one, as in MPI).

use crate::error::{CError, CResult};
use corecoll_rs::{Comm, Scope, Team};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use crossbeam_utils::CachePadded;
use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What a live handle's first word holds.
const LIVE: u64 = 0x636f_7265_636f_6c6c;
/// What a freed handle's first word holds.
const DEAD: u64 = 0xdead_dead_dead_dead;

/// The bytes of a joined thread's stack (mapped as used).
const STACK_BYTES: usize = 1 << 20;

/// A team of the C API (`corecoll_team_create`).
pub struct corecoll_team_t {
    magic: AtomicU64,
    /// The team (from `Arc::into_raw`) while the handle is live, else NULL.
    team: AtomicPtr<Team>,
    /// How many threads hold the team (`Held`), per rank for the joined threads and in the
    /// last slot for everything else; each on a cache line of its own, so that threads
    /// joining at once write nothing in common. Sized when the handle is made, never
    /// changed.
    held: Box<[CachePadded<AtomicUsize>]>,
}

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

/// The calls a C call makes inside the seat: on the seat's context, a result.
pub(crate) type Call<'c> = dyn for<'s, 'e, 'r> FnMut(&'r Ctx<'s, 'e>) -> CResult<()> + 'c;

/// What the seat's coroutine is resumed with: a call to make inside the join (its lifetime
/// erased: it lives on the stack of the C call that resumes; `call_in` uses it only to raise a
/// panic there), or `None` to leave.
type Cmd = Option<*mut Call<'static>>;

/// A joined thread's rank: the coroutine in which it is joined, and its communicators.
pub(crate) struct Seat {
    co: Coroutine<Cmd, CResult<()>, CResult<()>, DefaultStack>,
    /// Whether a call is being made (a C call from inside a user op is refused).
    busy: Cell<bool>,
    /// The context in the suspended coroutine's frame (NULL before it is seated and once the
    /// rank's run has ended).
    ctx: *const Ctx<'static, 'static>,
    /// The handles of its communicators (the joined one first), freed when it leaves.
    comms: Vec<&'static corecoll_comm_t>,
    /// The handles of its requests, freed when it leaves.
    pub(crate) requests: Vec<&'static crate::requests::corecoll_request_t>,
    /// Its team, held until the coroutine (above: dropped first) has ended.
    _held: Held,
}

/// Where a seat's calls run: the rank's joined communicator, the scope of its requests, the
/// communicators split or duplicated from it, and its requests.
pub(crate) struct Ctx<'s, 'e> {
    pub(crate) world: &'e Comm,
    pub(crate) scope: &'s Scope<'s, 'e>,
    /// Split and duplicated communicators, by index − 1 (`None` once freed).
    pub(crate) subs: RefCell<Vec<Option<Comm>>>,
    /// The requests of the scope (`crate::requests`).
    pub(crate) requests: RefCell<Vec<Option<crate::requests::Req<'s>>>>,
    /// Buffers of the library's own that requests use, dropped after the scope has ended.
    pub(crate) kept: &'s Kept,
}

/// Buffers kept until a seat's scope has ended.
pub(crate) type Kept = RefCell<Vec<Box<dyn std::any::Any>>>;

impl Ctx<'_, '_> {
    /// Runs `f` on communicator `index` (0: the joined one).
    #[inline]
    pub(crate) fn with_comm<R>(&self, index: usize, f: impl FnOnce(&Comm) -> R) -> CResult<R> {
        if index == 0 {
            return Ok(f(self.world));
        }
        let subs = self.subs.borrow();
        let comm = subs
            .get(index - 1)
            .and_then(Option::as_ref)
            .ok_or(CError::Handle("communicator"))?;
        Ok(f(comm))
    }
}

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

/// Freed team handles, for reuse.
static FREE_TEAMS: Mutex<Vec<&'static corecoll_team_t>> = Mutex::new(Vec::new());

/// What a team handle's `magic` holds while it is being freed.
const FREEING: u64 = 0xfeee_feee_feee_feee;

/// A live team handle for `team`.
pub(crate) fn new_team(team: Team) -> *mut corecoll_team_t {
    let slots = team.size() + 1;
    let reused = {
        let mut free = FREE_TEAMS.lock().unwrap_or_else(|p| p.into_inner());
        let fits = free.iter().position(|h| h.held.len() >= slots);
        fits.map(|i| free.swap_remove(i))
    };
    let handle: &'static corecoll_team_t = reused.unwrap_or_else(|| {
        Box::leak(Box::new(corecoll_team_t {
            magic: AtomicU64::new(DEAD),
            team: AtomicPtr::new(std::ptr::null_mut()),
            held: (0..slots)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }))
    });
    let team = Arc::into_raw(Arc::new(team)).cast_mut();
    handle.team.store(team, Ordering::SeqCst);
    handle.magic.store(LIVE, Ordering::SeqCst);
    handle as *const corecoll_team_t as *mut corecoll_team_t
}

/// A team held through its handle: `corecoll_team_free` refuses to free it meanwhile.
pub(crate) struct Held {
    team: &'static Team,
    count: &'static AtomicUsize,
}

impl std::ops::Deref for Held {
    type Target = Team;

    fn deref(&self) -> &Team {
        self.team
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The team of a live handle, held as rank `rank` (`None`, or a rank out of range: in the
/// handle's shared slot).
///
/// # Safety
/// `team` is NULL or a pointer this library returned as a team handle.
pub(crate) unsafe fn team_of(team: *const corecoll_team_t, rank: Option<usize>) -> CResult<Held> {
    // SAFETY: handles are never deallocated, so a pointer the library returned stays readable.
    let handle: &'static corecoll_team_t =
        unsafe { team.as_ref() }.ok_or(CError::Handle("team"))?;
    if handle.magic.load(Ordering::SeqCst) != LIVE {
        return Err(CError::Handle("team"));
    }
    let last = handle.held.len() - 1;
    let count = &*handle.held[rank.filter(|&r| r < last).unwrap_or(last)];
    count.fetch_add(1, Ordering::SeqCst);
    // Either `free_team` sees this count (it reads the counts after marking the handle), or
    // this sees its mark (both `SeqCst`): a team is never freed while held.
    if handle.magic.load(Ordering::SeqCst) != LIVE {
        count.fetch_sub(1, Ordering::SeqCst);
        return Err(CError::Handle("team"));
    }
    let team = handle.team.load(Ordering::SeqCst);
    // SAFETY: a live handle's team pointer came from `Arc::into_raw`, and its reference is
    // given back only by `free_team`, which does not while a count is held (above); the
    // handle itself is never deallocated.
    let team: &'static Team = unsafe { &*team };
    Ok(Held { team, count })
}

/// Frees a team handle: an error while threads are joined to it.
///
/// # Safety
/// As `team_of`.
pub(crate) unsafe fn free_team(team: *const corecoll_team_t) -> CResult<()> {
    // SAFETY: as in `team_of`.
    let handle: &'static corecoll_team_t =
        unsafe { team.as_ref() }.ok_or(CError::Handle("team"))?;
    if handle
        .magic
        .compare_exchange(LIVE, FREEING, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return Err(CError::Handle("team"));
    }
    if handle.held.iter().any(|c| c.load(Ordering::SeqCst) > 0) {
        handle.magic.store(LIVE, Ordering::SeqCst);
        return Err(corecoll_rs::Error::TeamBusy.into());
    }
    let team = handle.team.swap(std::ptr::null_mut(), Ordering::SeqCst);
    // SAFETY: the pointer came from `Arc::into_raw` (`new_team`), and no thread holds the
    // team (above); dropped here, on the freeing thread (a hybrid team's MPI part before
    // MPI_Finalize).
    drop(unsafe { Arc::from_raw(team) });
    handle.magic.store(DEAD, Ordering::SeqCst);
    FREE_TEAMS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(handle);
    Ok(())
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

/// Makes `call` on `seat`'s context, on the calling thread's own stack: the coroutine is
/// suspended inside the join and the scope, so the context it holds there stays where it is
/// and is not used by anything else meanwhile. A panic in `call` is carried into the
/// coroutine and raised there, inside `Team::join`, which fails the run for every rank as a
/// panicking rank does (and ends this rank's part: the seat is then spent).
///
/// # Safety
/// `seat` is a live seat of the calling thread's (from `comm_of`).
pub(crate) unsafe fn call_in(seat: *mut Seat, call: &mut Call<'_>) -> CResult<()> {
    // SAFETY: the caller's seat is live and the calling thread's; `busy` keeps a second
    // call (from a user op inside the first) out, so this is the only reference.
    let seat = unsafe { &mut *seat };
    if seat.busy.replace(true) {
        return Err(CError::Unsupported(
            "a corecoll call from inside a corecoll call (a user op's function) is not allowed"
                .into(),
        ));
    }
    if seat.ctx.is_null() {
        seat.busy.set(false);
        return Err(CError::Internal("the joined rank's run has ended".into()));
    }
    // SAFETY: `ctx` points into the suspended coroutine's frame, which lives until the
    // coroutine is resumed to leave (after which `ctx` is NULL); only its lifetimes are
    // erased, and nothing it hands out outlives that frame (requests and communicators are
    // kept in it, and their handles die before the leave).
    let ctx: &Ctx<'static, 'static> = unsafe { &*seat.ctx };
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(ctx)));
    seat.busy.set(false);
    match out {
        Ok(r) => r,
        Err(payload) => {
            let why = crate::error::panic_text(payload.as_ref());
            let again = why.clone();
            let mut raise = move |_: &Ctx<'_, '_>| -> CResult<()> { panic!("{again}") };
            let raise: *mut Call<'_> = &mut raise;
            // SAFETY: only the lifetime is erased; the coroutine calls it before the resume
            // returns.
            let raise: *mut Call<'static> = unsafe { std::mem::transmute(raise) };
            seat.ctx = std::ptr::null();
            let _ = seat.co.resume(Some(raise));
            Err(CError::Internal(why))
        }
    }
}

/// Joins `team` as `rank` on the calling thread: the seat and its joined communicator.
pub(crate) fn join(held: Held, rank: usize) -> CResult<&'static corecoll_comm_t> {
    let team = held.team;
    let stack = STACK
        .with(|s| s.borrow_mut().take())
        .map_or_else(|| DefaultStack::new(STACK_BYTES), Ok)
        .map_err(|e| CError::Internal(format!("a joined thread's stack: {e}")))?;
    // Where the coroutine tells where its context is.
    let seated = Rc::new(Cell::new(std::ptr::null::<Ctx<'static, 'static>>()));
    let tell = seated.clone();
    let co = Coroutine::with_stack(stack, move |y: &Yielder<Cmd, CResult<()>>, _: Cmd| {
        // A panic raised here (`call_in`) unwinds through the seat, which fails the run for
        // every rank as a panicking rank does.
        let out = catch_unwind(AssertUnwindSafe(|| {
            let seat = team.seat(rank)?;
            let comm: &Comm = &seat;
            let kept = Kept::default();
            comm.scope(|scope| {
                let ctx = Ctx {
                    world: comm,
                    scope,
                    subs: RefCell::new(Vec::new()),
                    requests: RefCell::new(Vec::new()),
                    kept: &kept,
                };
                let here: *const Ctx<'_, '_> = &ctx;
                // SAFETY: only the lifetimes are erased (see `call_in`).
                tell.set(unsafe {
                    std::mem::transmute::<*const Ctx<'_, '_>, *const Ctx<'static, 'static>>(here)
                });
                let mut cmd = y.suspend(Ok(()));
                while let Some(call) = cmd {
                    // SAFETY: the resuming C call holds `call` alive until this resume ends.
                    let out = unsafe { (*call)(&ctx) };
                    cmd = y.suspend(out);
                }
                // Requests never waited for complete as the scope ends.
                drop(ctx);
                Ok(())
            })?;
            seat.leave()
        }));
        match out {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.into()),
            Err(payload) => Err(CError::Internal(crate::error::panic_text(payload.as_ref()))),
        }
    });
    let seat = Box::into_raw(Box::new(Seat {
        co,
        busy: Cell::new(false),
        ctx: std::ptr::null(),
        comms: Vec::new(),
        requests: Vec::new(),
        _held: held,
    }));
    // SAFETY: `seat` was just made and is this thread's alone.
    match unsafe { (*seat).co.resume(None) } {
        CoroutineResult::Yield(Ok(())) => {
            // SAFETY: as above.
            unsafe { (*seat).ctx = seated.get() };
            let world = new_comm(seat, 0);
            // SAFETY: as above.
            unsafe { (*seat).comms.push(world) };
            SEATS.with(|s| s.borrow_mut().push(seat));
            Ok(world)
        }
        CoroutineResult::Yield(Err(e)) | CoroutineResult::Return(Err(e)) => {
            // SAFETY: as above; the coroutine has finished (or is dropped suspended, which
            // unwinds it).
            drop(unsafe { Box::from_raw(seat) });
            Err(e)
        }
        CoroutineResult::Return(Ok(())) => {
            // SAFETY: as above.
            drop(unsafe { Box::from_raw(seat) });
            Err(CError::Internal(
                "the join returned before the rank was seated".into(),
            ))
        }
    }
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
    // SAFETY: a live seat of this thread's, which nothing else references while this runs.
    let mut boxed = unsafe { Box::from_raw(seat) };
    if boxed.busy.get() {
        // SAFETY: not ours to free after all.
        let _ = Box::into_raw(boxed);
        return Err(CError::Unsupported(
            "corecoll_leave from inside a corecoll call".into(),
        ));
    }
    SEATS.with(|s| s.borrow_mut().pop());
    for handle in boxed.comms.drain(..) {
        free_comm(handle);
    }
    crate::requests::free_all(seat);
    boxed.ctx = std::ptr::null();
    let out = match boxed.co.resume(None) {
        CoroutineResult::Return(r) => r,
        CoroutineResult::Yield(_) => Err(CError::Internal(
            "the joined rank did not leave when asked".into(),
        )),
    };
    if boxed.co.done() {
        let stack = boxed.co.into_stack();
        STACK.with(|s| *s.borrow_mut() = Some(stack));
    }
    out
}

/// Adds a split or duplicated communicator (index `index`) to `seat`: its handle.
///
/// # Safety
/// `seat` is a live seat of the calling thread's.
pub(crate) unsafe fn add_comm(seat: *mut Seat, index: usize) -> &'static corecoll_comm_t {
    let handle = new_comm(seat, index);
    // SAFETY: the caller's promise; not inside a call (it is made after the call returned).
    unsafe { (*seat).comms.push(handle) };
    handle
}

/// Frees split or duplicated communicator handle `comm` of `seat`.
///
/// # Safety
/// As `add_comm`, with `comm` one of its handles.
pub(crate) unsafe fn drop_comm(seat: *mut Seat, comm: *const corecoll_comm_t) {
    // SAFETY: the caller's promise.
    let comms = unsafe { &mut (*seat).comms };
    if let Some(i) = comms.iter().position(|h| std::ptr::eq(*h, comm)) {
        free_comm(comms.swap_remove(i));
    }
}

/// A count as `usize`: an error if negative.
#[inline]
pub(crate) fn count(n: c_int, what: &'static str) -> CResult<usize> {
    usize::try_from(n).map_err(|_| CError::Count(what, i64::from(n)))
}
