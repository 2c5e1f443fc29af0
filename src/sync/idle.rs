//! Work a thread does while it waits: a per-thread hook that the waiting loop runs between
//! its polls.
//!
//! A rank that must keep something moving while it waits for its peers — the leader of a
//! process that relays its threads' messages to other processes, when only it may call MPI —
//! installs a hook for a stretch of code ([`with_idle`]). Every wait of that thread in that
//! stretch then runs the hook between its polls once spinning is over; it keeps yielding
//! (rather than sleeping) while the hook finds work, and once the hook has found none for the
//! wait policy's yield time, sleeps at most [`IDLE_PARK`] at a time and runs the hook again,
//! instead of sleeping until woken, since what the hook serves (messages from other
//! processes) wakes nobody. Threads without a
//! hook wait as before; the check costs one thread-local read per poll once a wait has spun.
//! Hooks nest: each [`with_idle`] adds one for its stretch, and the waits inside run all of
//! them, innermost first. A hook whose work arrives with a wake-up of the thread's parker (a
//! scope's requests: their peers unpark this rank as they would for a blocking call) is
//! installed with [`with_idle_ready`], which also tells whether it has work now; while only
//! such hooks are installed, a wait parks until woken, on its own condition or the hooks',
//! and the deadlock detection counts the thread blocked only when neither can become true. The hooks do not run inside themselves (a wait in a hook would find
//! them already running).
//!
//! A hook may also be installed for a stretch that is not one call ([`lasting`]): a thread that
//! joins a team's run and leaves it in two calls (`team::join`'s seat, from C) keeps it until
//! the [`Lasting`] it was handed is dropped. Such a hook is owned by the thread, not borrowed
//! from a stack frame, so it cannot outlive what it points to; it runs after the stack's hooks.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::rc::Rc;
use std::time::Duration;

/// The longest a thread with an idle hook sleeps before it runs the hook again.
pub(crate) const IDLE_PARK: Duration = Duration::from_micros(50);

/// An installed hook and the one installed before it, which runs too.
struct Node {
    hook: *const (dyn Fn() -> bool + 'static),
    /// The part of the hook that [`flush`] runs, if it is not the whole hook
    /// ([`with_idle_flush`]).
    flush: Option<*const (dyn Fn() -> bool + 'static)>,
    /// Whether the hook has work now, for a hook that can tell ([`with_idle_ready`]).
    ready: Option<*const (dyn Fn() -> bool + 'static)>,
    below: Option<*const Node>,
}

thread_local! {
    /// The calling thread's innermost hook while [`with_idle`] runs, and whether the hooks are
    /// running.
    static TOP: Cell<Option<*const Node>> = const { Cell::new(None) };
    static RUNNING: Cell<bool> = const { Cell::new(false) };
    /// The hook installed by [`lasting`] and its flush part, while its [`Lasting`] lives.
    static LASTING: RefCell<Option<LastingHook>> = const { RefCell::new(None) };
}

/// A hook of [`lasting`] and its flush part.
type LastingHook = (Rc<dyn Fn() -> bool>, Rc<dyn Fn() -> bool>);

/// The stretch of a hook installed by [`lasting`]: the hook is removed when this is dropped,
/// on the thread that installed it (it is neither `Send` nor `Sync`).
#[must_use = "the hook is removed when this is dropped"]
pub(crate) struct Lasting(PhantomData<*const ()>);

impl Drop for Lasting {
    fn drop(&mut self) {
        LASTING.with(|l| l.borrow_mut().take());
    }
}

/// Installs `hook` (with `flush`, its part that [`flush`] runs, as [`with_idle_flush`]) as
/// this thread's idle hook until the returned [`Lasting`] is dropped, after the hooks of the
/// stack. One at a time: a second replaces the first.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn lasting(
    hook: impl Fn() -> bool + 'static,
    flush: impl Fn() -> bool + 'static,
) -> Lasting {
    LASTING.with(|l| *l.borrow_mut() = Some((Rc::new(hook), Rc::new(flush))));
    Lasting(PhantomData)
}

/// The hook of [`lasting`], if one is installed, and its flush part.
fn lasting_hook() -> Option<LastingHook> {
    LASTING.with(|l| l.borrow().clone())
}

/// Runs `f` with `hook` as one of this thread's idle hooks (module doc) — the hooks installed
/// around this call run too — and removes it when `f` returns or unwinds.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn with_idle<R>(hook: &dyn Fn() -> bool, f: impl FnOnce() -> R) -> R {
    install(hook, None, None, f)
}

/// [`with_idle`] for a hook of which only a part, `flush`, needs to run where the thread is
/// about to stop serving it for a while ([`flush`]): a relaying leader's sends, before it
/// waits in a stage between processes, without its look for what has come in.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn with_idle_flush<R>(
    hook: &dyn Fn() -> bool,
    flush: &dyn Fn() -> bool,
    f: impl FnOnce() -> R,
) -> R {
    install(hook, None, Some(flush), f)
}

/// [`with_idle`] for a hook whose work is announced by a wake-up of the thread's parker, with
/// `ready` telling whether it has work now: while only such hooks are installed, a wait parks
/// until woken, on its own condition or `ready` ([`precise`], [`ready`]), instead of sleeping
/// in short stretches, and the deadlock detection sees it blocked only when neither holds.
pub(crate) fn with_idle_ready<R>(
    hook: &dyn Fn() -> bool,
    ready: &dyn Fn() -> bool,
    f: impl FnOnce() -> R,
) -> R {
    install(hook, Some(ready), None, f)
}

fn install<R>(
    hook: &dyn Fn() -> bool,
    ready: Option<&dyn Fn() -> bool>,
    flush: Option<&dyn Fn() -> bool>,
    f: impl FnOnce() -> R,
) -> R {
    struct Restore(Option<*const Node>);
    impl Drop for Restore {
        fn drop(&mut self) {
            TOP.with(|h| h.set(self.0));
        }
    }
    // SAFETY: only the lifetime is erased. The node, which points to `hook`, is reachable for
    // the duration of `f` alone: `Restore` puts the previous top back when `f` returns or
    // unwinds, and it is a local of this function that nothing else can forget, so `run`
    // never calls the hook after `hook`'s borrow has ended or reads the node after it is gone.
    let erased: *const (dyn Fn() -> bool + 'static) = unsafe {
        std::mem::transmute::<*const (dyn Fn() -> bool + '_), *const (dyn Fn() -> bool + 'static)>(
            hook,
        )
    };
    // SAFETY: as for the hook.
    let ready = ready.map(|r| unsafe {
        std::mem::transmute::<*const (dyn Fn() -> bool + '_), *const (dyn Fn() -> bool + 'static)>(
            r,
        )
    });
    // SAFETY: as for the hook.
    let flush = flush.map(|r| unsafe {
        std::mem::transmute::<*const (dyn Fn() -> bool + '_), *const (dyn Fn() -> bool + 'static)>(
            r,
        )
    });
    let below = TOP.with(|h| h.get());
    let node = Node {
        hook: erased,
        flush,
        ready,
        below,
    };
    let _restore = Restore(below);
    TOP.with(|h| h.set(Some(&node)));
    f()
}

/// Whether this thread has an idle hook.
pub(crate) fn installed() -> bool {
    TOP.with(|h| h.get().is_some()) || LASTING.with(|l| l.borrow().is_some())
}

/// An installed hook as [`hooks`] yields it: the hook, and its `ready` and `flush` parts if
/// it has them.
type Hook = (
    &'static dyn Fn() -> bool,
    Option<&'static dyn Fn() -> bool>,
    Option<&'static dyn Fn() -> bool>,
);

/// This thread's installed hooks, innermost first.
fn hooks() -> impl Iterator<Item = Hook> {
    let mut node = TOP.with(|h| h.get());
    std::iter::from_fn(move || {
        let n = node?;
        // SAFETY: a node and the closures it points to are reachable only while the
        // `with_idle` call that made them runs (see there), and every caller of this uses the
        // iterator and what it yields inside that call, at once, on this thread.
        unsafe {
            node = (*n).below;
            Some((
                &*(*n).hook,
                (*n).ready.map(|r| &*r),
                (*n).flush.map(|r| &*r),
            ))
        }
    })
}

/// Whether every idle hook of this thread can tell when it has work ([`with_idle_ready`]),
/// and no task of this thread polls ([`super::task::poll_until`]).
pub(crate) fn precise() -> bool {
    // A task suspended in a poll (an MPI request) waits for what wakes nobody.
    hooks().all(|(_, ready, _)| ready.is_some())
        && !super::task::polling()
        && LASTING.with(|l| l.borrow().is_none())
}

/// Whether one of this thread's idle hooks that can tell has work now (false while the hooks
/// run).
pub(crate) fn ready() -> bool {
    !RUNNING.with(|r| r.get()) && hooks().any(|(_, ready, _)| ready.is_some_and(|r| r()))
}

/// Runs this thread's idle hooks, innermost first, unless they are already running: whether
/// one found work (which keeps the thread's wait awake a while longer).
pub(crate) fn run() -> bool {
    run_each(|(hook, _, _)| hook, |(hook, _)| hook)
}

/// [`run`], but of a hook installed with a `flush` part ([`with_idle_flush`]) only that part:
/// what must happen before the thread stops serving its hooks for a while (a leader's wait in a
/// stage between processes).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn flush() -> bool {
    run_each(|(hook, _, flush)| flush.unwrap_or(hook), |(_, flush)| flush)
}

/// Runs `pick` of each of this thread's hooks, innermost first, then `last` of its lasting
/// hook, unless they are already running: whether one found work.
fn run_each(
    pick: impl Fn(Hook) -> &'static dyn Fn() -> bool,
    last: impl Fn(LastingHook) -> Rc<dyn Fn() -> bool>,
) -> bool {
    if !installed() || RUNNING.with(|r| r.replace(true)) {
        return false;
    }
    struct Done;
    impl Drop for Done {
        fn drop(&mut self) {
            RUNNING.with(|r| r.set(false));
        }
    }
    let _done = Done;
    // Every hook runs, whatever the others found. (The lasting one is taken out of its cell
    // first: it is called with the cell free.)
    let worked = hooks().fold(false, |worked, h| pick(h)() | worked);
    match lasting_hook() {
        Some(h) => last(h)() | worked,
        None => worked,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_hook_runs_inside_its_stretch_only_and_not_inside_itself() {
        let count = Cell::new(0);
        let hook = || {
            count.set(count.get() + 1);
            !run()
        };
        assert!(!run());
        with_idle(&hook, || {
            assert!(installed());
            assert!(run());
            assert!(run());
        });
        assert!(!installed());
        assert!(!run());
        assert_eq!(count.get(), 2);
    }

    #[test]
    fn the_previous_hook_comes_back_after_a_panic() {
        let outer_runs = Cell::new(0);
        let outer = || {
            outer_runs.set(outer_runs.get() + 1);
            true
        };
        with_idle(&outer, || {
            let inner = || -> bool { panic!("inner hook") };
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                with_idle(&inner, || panic!("stretch"))
            }));
            assert!(caught.is_err());
            assert!(run());
        });
        assert_eq!(outer_runs.get(), 1);
    }

    #[test]
    fn every_installed_hook_runs() {
        let (outer_runs, inner_runs) = (Cell::new(0), Cell::new(0));
        let outer = || {
            outer_runs.set(outer_runs.get() + 1);
            false
        };
        let inner = || {
            inner_runs.set(inner_runs.get() + 1);
            true
        };
        with_idle(&outer, || {
            assert!(!run());
            with_idle(&inner, || assert!(run()));
            assert!(!run());
        });
        assert_eq!((outer_runs.get(), inner_runs.get()), (3, 1));
    }

    #[test]
    fn flush_runs_a_hooks_flush_part_and_the_other_hooks_whole() {
        let (whole, part, plain) = (Cell::new(0), Cell::new(0), Cell::new(0));
        let hook = || {
            whole.set(whole.get() + 1);
            false
        };
        let flush_part = || {
            part.set(part.get() + 1);
            true
        };
        let other = || {
            plain.set(plain.get() + 1);
            false
        };
        assert!(!flush());
        with_idle_flush(&hook, &flush_part, || {
            with_idle(&other, || {
                assert!(flush());
                assert!(!run());
            });
            assert!(flush());
        });
        // flush: the part twice, the plain hook once; run: both hooks whole once.
        assert_eq!((whole.get(), part.get(), plain.get()), (1, 2, 2));
    }

    #[test]
    fn a_lasting_hook_runs_until_dropped_after_the_stacks() {
        let order = Rc::new(RefCell::new(Vec::new()));
        let o = order.clone();
        let lasting = lasting(
            move || {
                o.borrow_mut().push("lasting");
                true
            },
            || false,
        );
        assert!(installed() && !precise());
        let stacked = || {
            order.borrow_mut().push("stack");
            false
        };
        with_idle(&stacked, || assert!(run()));
        assert!(!flush(), "the flush part runs");
        drop(lasting);
        assert!(!installed() && !run());
        assert_eq!(*order.borrow(), ["stack", "lasting"]);
    }
}
