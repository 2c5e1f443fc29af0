//! Tasks: code that runs on a stack of its own, on the thread that resumes it, and stops where
//! it would wait.
//!
//! A non-blocking collective is the blocking one run as a [`Task`]: every wait of the crate goes
//! through [`super::park::wait_until_watched`], and a wait inside a task that finds its
//! condition false does not spin or park but *suspends* the task ([`suspend_until`]), handing
//! its resumer what it waits for ([`Blocked`]). [`Task::resume`] thus runs the task until it
//! would wait or until it is done, and never blocks; whoever drives tasks to completion waits
//! for any of the suspended ones at once ([`wait_any`]), on the parker their waits named, with
//! their policy, deadline and deadlock watch, and resumes them when woken. So the schedule that
//! runs inside a task is the very code of the blocking call, waits included, and gives the same
//! bits; what a task adds is a stack and two context switches per wait.
//!
//! The stacks are those of `corosensei` (Amanieu d'Antras' stackful coroutines: a stack of its
//! own with a guard page, panics carried out to the resumer), reused through a per-thread pool
//! so that a task costs no `mmap` once the pool is warm.
//!
//! Under Miri, which runs neither the stacks' `mmap` nor the switches' assembly, a task runs its
//! closure to the end at its first resume, on the resumer's stack, waiting as blocking code
//! does: a request then completes where it is first driven (at its start). That keeps the rest
//! of the request machinery (borrows handed to tasks, the scopes, persistent collectives) in
//! reach of Miri's checks, for programs whose requests can complete in the order they start.
//!
//! A task borrows what its code borrows. Dropping or forgetting a suspended task would leave
//! those borrows to end while the peers it published to may still read or write through them,
//! so [`Task::new`] is `unsafe`: its caller must run every task to completion before anything
//! it borrows goes away (`comm`'s scopes do, as `std::thread::scope` joins its threads).

use super::park::{wait_until_watched, Parker, WaitPolicy, Watch};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, RefCell};
use std::time::Instant;

/// Bytes of a task's stack (mapped lazily: only the pages a task touches cost memory).
const STACK_BYTES: usize = 1 << 20;
/// Stacks a thread keeps for its next tasks.
const POOLED_STACKS: usize = 16;

/// What a suspended task waits for: the arguments of the wait it stopped in. The pointers are
/// into that wait's frame on the task's own stack, valid while the task stays suspended there
/// (that is, until it is resumed).
#[derive(Clone, Copy)]
pub(crate) struct Blocked {
    /// The parker that a wake-up of the awaited condition unparks, and the wait's policy;
    /// `None` for a poll (`poll_until`), whose condition changes with nobody told.
    wake: Option<(*const Parker, *const WaitPolicy)>,
    deadline: Option<Instant>,
    ready: *mut (dyn FnMut() -> bool + 'static),
    watch: Option<*const (dyn Watch + 'static)>,
}

impl Blocked {
    /// Whether the wait may go on: its condition holds or its deadline has passed.
    ///
    /// # Safety
    /// The task whose wait made this is still suspended in it (nothing has resumed it since).
    pub(crate) unsafe fn holds(&self) -> bool {
        // SAFETY: per the contract, the condition is alive in the wait's frame, and only this
        // thread calls it.
        self.deadline.is_some_and(|d| Instant::now() >= d) || unsafe { (*self.ready)() }
    }
}

thread_local! {
    /// The yielder of the task running on this thread, if one is.
    static CURRENT: Cell<Option<*const Yielder<(), Blocked>>> = const { Cell::new(None) };
    /// Tasks of this thread suspended in a poll (`poll_until`).
    static POLLING: Cell<usize> = const { Cell::new(0) };
    /// Stacks of finished tasks, for the next ones.
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

/// Whether the calling code runs inside a task.
#[inline]
pub(crate) fn inside() -> bool {
    CURRENT.with(|c| c.get().is_some())
}

/// The rest of a wait inside a task (called by `wait_until_watched` once `ready()` has been
/// false): suspends the task until a resume finds `ready()` true or `deadline` passed, and
/// returns whether `ready()` held, as the wait would.
pub(crate) fn suspend_until(
    parker: &Parker,
    policy: &WaitPolicy,
    deadline: Option<Instant>,
    ready: &mut dyn FnMut() -> bool,
    watch: Option<&dyn Watch>,
) -> bool {
    // SAFETY: only lifetimes are erased. The resumer reads these pointers only while the task
    // is suspended in this very call (`Blocked`'s contract, kept by `Task::blocked` and
    // `wait_any`), during which everything they point to is alive in this frame.
    let watch = watch.map(|w| unsafe {
        std::mem::transmute::<*const (dyn Watch + '_), *const (dyn Watch + 'static)>(w)
    });
    let wake = Some((parker as *const Parker, policy as *const WaitPolicy));
    suspend(wake, deadline, ready, watch)
}

/// A wait inside a task for a condition that changes with nobody told — an MPI request's
/// completion — which its resumer must therefore poll: suspends the task until a resume finds
/// `ready()` true. While such a task is suspended, this thread's waits poll (idle hooks that
/// advance tasks are not [`super::idle::precise`]) instead of parking until woken.
#[cfg(feature = "mpi")]
pub(crate) fn poll_until(ready: &mut dyn FnMut() -> bool) {
    struct Polling;
    impl Drop for Polling {
        fn drop(&mut self) {
            POLLING.with(|p| p.set(p.get() - 1));
        }
    }
    POLLING.with(|p| p.set(p.get() + 1));
    let _polling = Polling;
    suspend(None, None, ready, None);
}

/// Whether a task of this thread is suspended in a poll (`poll_until`).
pub(crate) fn polling() -> bool {
    POLLING.with(|p| p.get() > 0)
}

/// Suspends the running task, handing its resumer what it waits for, until a resume finds
/// `ready()` true (or `deadline` passed): whether `ready()` held.
fn suspend(
    wake: Option<(*const Parker, *const WaitPolicy)>,
    deadline: Option<Instant>,
    ready: &mut dyn FnMut() -> bool,
    watch: Option<*const (dyn Watch + 'static)>,
) -> bool {
    let yielder = CURRENT
        .with(|c| c.get())
        .expect("a task suspends inside a task");
    // SAFETY: only the lifetime is erased; as in `suspend_until`, the resumer calls `ready`
    // only while the task is suspended in this call, with `ready` alive in the caller's frame.
    let erased = unsafe {
        std::mem::transmute::<*mut (dyn FnMut() -> bool + '_), *mut (dyn FnMut() -> bool + 'static)>(
            ready,
        )
    };
    let blocked = Blocked {
        wake,
        deadline,
        ready: erased,
        watch,
    };
    loop {
        CURRENT.with(|c| c.set(None));
        // SAFETY: `yielder` is the running task's, set by its body for as long as it runs
        // (and it is running: this code is on its stack).
        unsafe { (*yielder).suspend(blocked) };
        CURRENT.with(|c| c.set(Some(yielder)));
        if ready() {
            return true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return ready();
        }
    }
}

/// A task: a closure that runs on its own stack when resumed (module docs). Not `Send`: it runs
/// on the thread that made it.
pub(crate) struct Task<'a, R> {
    co: Option<Coroutine<(), Blocked, R, DefaultStack>>,
    /// Under Miri, the closure until its first resume runs it (module docs). Its borrows'
    /// lifetime is erased, as the coroutine's are: [`Task::new`]'s contract keeps them alive.
    #[cfg(miri)]
    eager: Option<Box<dyn FnOnce() -> R>>,
    /// Where the task is suspended, if it is.
    blocked: Option<Blocked>,
    _borrows: std::marker::PhantomData<&'a mut R>,
}

impl<'a, R: 'a> Task<'a, R> {
    /// A task that will run `f` when first resumed.
    ///
    /// # Safety
    /// The task must be resumed until it is done ([`Task::done`]) before anything `f` borrows
    /// is freed or used elsewhere: dropping it suspended runs its destructors from the wait it
    /// stopped in (which aborts the process if one of them waits), and forgetting it leaves its
    /// peers free to touch what it published.
    pub(crate) unsafe fn new(f: impl FnOnce() -> R + 'a) -> Self {
        #[cfg(miri)]
        return Task {
            co: None,
            // SAFETY: only the lifetime is erased; the closure runs (or is dropped) before
            // what it borrows goes away, by this function's contract.
            eager: Some(unsafe {
                std::mem::transmute::<Box<dyn FnOnce() -> R + 'a>, Box<dyn FnOnce() -> R>>(
                    Box::new(f),
                )
            }),
            blocked: None,
            _borrows: std::marker::PhantomData,
        };
        #[cfg_attr(miri, allow(unreachable_code))]
        let stack = STACKS
            .with(|s| s.borrow_mut().pop())
            .unwrap_or_else(|| DefaultStack::new(STACK_BYTES).expect("a task's stack maps"));
        let body = move |yielder: &Yielder<(), Blocked>, ()| -> R {
            struct Leave;
            impl Drop for Leave {
                fn drop(&mut self) {
                    CURRENT.with(|c| c.set(None));
                }
            }
            CURRENT.with(|c| c.set(Some(yielder)));
            let _leave = Leave;
            f()
        };
        // SAFETY: what `body` borrows outlives the task's run by this function's contract.
        let co = unsafe { Coroutine::with_stack_unchecked(stack, body) };
        Task {
            co: Some(co),
            #[cfg(miri)]
            eager: None,
            blocked: None,
            _borrows: std::marker::PhantomData,
        }
    }

    /// Runs the task until it would wait (`None`) or returns (its closure's value). A panic in
    /// the task carries on out of this call (the task is then done, without a value). Must not
    /// be called from inside a task, nor once the task is done.
    pub(crate) fn resume(&mut self) -> Option<R> {
        debug_assert!(!inside(), "tasks are resumed from outside any task");
        #[cfg(miri)]
        if let Some(f) = self.eager.take() {
            return Some(f());
        }
        let co = self.co.as_mut().expect("a task resumed after it returned");
        self.blocked = None;
        match co.resume(()) {
            CoroutineResult::Yield(b) => {
                self.blocked = Some(b);
                None
            }
            CoroutineResult::Return(value) => {
                if let Some(co) = self.co.take() {
                    let stack = co.into_stack();
                    STACKS.with(|s| {
                        let mut s = s.borrow_mut();
                        if s.len() < POOLED_STACKS {
                            s.push(stack);
                        }
                    });
                }
                Some(value)
            }
        }
    }

    /// Whether the task has returned (or panicked).
    pub(crate) fn done(&self) -> bool {
        #[cfg(miri)]
        if self.eager.is_some() {
            return false;
        }
        self.co.as_ref().is_none_or(|co| co.done())
    }

    /// What the task waits for, while it is suspended.
    pub(crate) fn blocked(&self) -> Option<&Blocked> {
        self.blocked.as_ref()
    }

    /// Whether resuming the task would let it go on: it has not started, or the condition of
    /// the wait it is suspended in holds, or that wait's deadline has passed.
    pub(crate) fn may_go_on(&mut self) -> bool {
        let Some(b) = &self.blocked else {
            return !self.done();
        };
        // SAFETY: the task is suspended in the wait that made `b` (it is reset at every
        // resume), so the condition is alive, and only this thread calls it.
        b.deadline.is_some_and(|d| Instant::now() >= d) || unsafe { (*b.ready)() }
    }
}

/// Waits until one of the waits `blocked` may go on — its condition holds or its deadline has
/// passed — spinning, yielding and parking as that wait would have (the first one's parker,
/// policy and watch: the tasks of one thread wait on its parker); if one of them is a poll
/// (`poll_until`), polling all of them, yielding between rounds and running this thread's
/// idle hooks, since nothing would wake a parked thread. Must not be called from inside a
/// task.
///
/// # Safety
/// Each task whose wait made an element of `blocked` must stay suspended in that wait until
/// this returns (nothing may resume it meanwhile, not even an idle hook of this thread).
pub(crate) unsafe fn wait_any(blocked: &[Blocked]) {
    if blocked.is_empty() {
        return;
    }
    debug_assert!(!inside());
    let deadline = blocked.iter().filter_map(|b| b.deadline).min();
    let mut any = || {
        blocked.iter().any(|b| {
            // SAFETY: each task is suspended in the wait that made `b` (this function's
            // contract), so its `ready` is alive, and nothing else calls it meanwhile.
            unsafe { (*b.ready)() }
        })
    };
    let woken = blocked.iter().all(|b| b.wake.is_some());
    let first = &blocked[0];
    let (true, Some(wake)) = (woken, first.wake) else {
        // Spins a few rounds, then yields between rounds (as `process::mpi`'s polite polls).
        let backoff = crossbeam_utils::Backoff::new();
        while !any() {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return;
            }
            super::idle::run();
            backoff.snooze();
        }
        return;
    };
    let ((parker, policy), watch) = (wake, first.watch);
    // SAFETY: as above, the parker, policy and watch are alive in the suspended waits' frames
    // (and the parker, a rank's, for the whole run).
    unsafe {
        let watch = watch.map(|w| &*w);
        wait_until_watched(&*parker, &*policy, || deadline, &mut any, watch);
    }
}
