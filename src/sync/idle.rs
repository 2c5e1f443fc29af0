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
//! The hook does not run inside itself (a wait in the hook would find it already running).

use std::cell::Cell;
use std::time::Duration;

/// The longest a thread with an idle hook sleeps before it runs the hook again.
pub(crate) const IDLE_PARK: Duration = Duration::from_micros(50);

thread_local! {
    /// The calling thread's hook while [`with_idle`] runs, and whether it is running.
    static HOOK: Cell<Option<*const (dyn Fn() -> bool + 'static)>> = const { Cell::new(None) };
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with `hook` as this thread's idle hook (module doc), restoring the hook before it
/// (if any) when `f` returns or unwinds.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn with_idle<R>(hook: &dyn Fn() -> bool, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<*const (dyn Fn() -> bool + 'static)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            HOOK.with(|h| h.set(self.0));
        }
    }
    // SAFETY: only the lifetime is erased. The pointer is stored for the duration of `f`
    // alone: `Restore` puts the previous hook back when `f` returns or unwinds, and it is a
    // local of this function that nothing else can forget, so `run` never calls the hook
    // after `hook`'s borrow has ended.
    let erased: *const (dyn Fn() -> bool + 'static) = unsafe {
        std::mem::transmute::<*const (dyn Fn() -> bool + '_), *const (dyn Fn() -> bool + 'static)>(
            hook,
        )
    };
    let _restore = Restore(HOOK.with(|h| h.replace(Some(erased))));
    f()
}

/// Whether this thread has an idle hook.
pub(crate) fn installed() -> bool {
    HOOK.with(|h| h.get().is_some())
}

/// Runs this thread's idle hook, if it has one and is not already running it: whether the
/// hook found work (which keeps the thread's wait awake a while longer).
pub(crate) fn run() -> bool {
    let Some(hook) = HOOK.with(|h| h.get()) else {
        return false;
    };
    if RUNNING.with(|r| r.replace(true)) {
        return false;
    }
    struct Done;
    impl Drop for Done {
        fn drop(&mut self) {
            RUNNING.with(|r| r.set(false));
        }
    }
    let _done = Done;
    // SAFETY: the hook is installed only while `with_idle`'s borrow of it lasts (see there).
    unsafe { (*hook)() }
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
}
