//! The one door to atomics, cells, locks and spinning.
//!
//! Every atomic, `UnsafeCell`, lock and spin hint in the crate is imported from here. Under
//! `--cfg loom` the same names resolve to loom's model-checked versions, so the mailbox and the
//! parker are verified exactly as they run (the pattern of tokio's `src/loom` shim).
//!
//! [`park`] holds the spin → yield → park waiting loop and the parker it ends in; `idle`, the
//! work a thread may give its waits to do between polls (a relaying leader's, a scope's
//! requests); `task`, code on a stack of its own whose waits suspend it instead of blocking
//! (the non-blocking collectives). The parking
//! protocol, the argument that no wake-up is lost, and how the crate's loom models are laid
//! out and run: `README.md` in this folder.

pub(crate) mod idle;
pub(crate) mod park;
pub(crate) mod task;

#[cfg(all(test, loom))]
pub(crate) mod loom_support;

pub(crate) use crossbeam_utils::CachePadded;

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{
        fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };
    /// One iteration of a busy-wait.
    #[inline(always)]
    pub(crate) fn spin_hint() {
        std::hint::spin_loop()
    }

    /// Gives the core to another runnable thread.
    #[inline]
    pub(crate) fn yield_now() {
        std::thread::yield_now()
    }

    /// `std::cell::UnsafeCell` with loom's closure-based access API.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(value))
        }
        /// Shared access through a raw pointer; the caller upholds the aliasing rules.
        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        /// Exclusive access through a raw pointer; the caller upholds the aliasing rules.
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }

    /// A mutex for the control plane and the parker (parking_lot's).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);
    /// The guard of [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(parking_lot::Mutex::new(value))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock()
        }
        pub(crate) fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }

    /// A condition variable paired with [`Mutex`].
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(parking_lot::Condvar::new())
        }
        /// Waits for a notification or the deadline; true if the deadline passed.
        pub(crate) fn wait<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            deadline: Option<std::time::Instant>,
        ) -> bool {
            match deadline {
                None => {
                    self.0.wait(guard);
                    false
                }
                Some(d) => self.0.wait_until(guard, d).timed_out(),
            }
        }
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::{
        fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };

    /// Under loom a spin is a yield, so that the model checker can schedule the writer.
    pub(crate) fn spin_hint() {
        loom::thread::yield_now()
    }

    /// Gives the modelled core to another modelled thread.
    pub(crate) fn yield_now() {
        loom::thread::yield_now()
    }

    /// loom's mutex behind the same API as the std build's.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);
    impl<T: Default> Default for Mutex<T> {
        fn default() -> Self {
            Mutex::new(T::default())
        }
    }
    /// The guard of [`Mutex`]; an `Option` so that [`Condvar::wait`] can move it through loom.
    pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> std::ops::Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard present")
        }
    }
    impl<T> std::ops::DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard present")
        }
    }

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().expect("loom mutex poisoned")))
        }
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok().map(|g| MutexGuard(Some(g)))
        }
        pub(crate) fn into_inner(self) -> T {
            self.0.into_inner().expect("loom mutex poisoned")
        }
    }

    /// loom's condition variable; loom has no time, so deadlines are ignored.
    #[derive(Debug)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }
        pub(crate) fn wait<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            _deadline: Option<std::time::Instant>,
        ) -> bool {
            let g = guard.0.take().expect("guard present");
            guard.0 = Some(self.0.wait(g).expect("loom mutex poisoned"));
            false
        }
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

pub(crate) use imp::*;

/// A flag of one thread's state set for a stretch of code: [`Raised::new`] sets it, and it is
/// cleared when the value drops (the stretch returned or unwound).
pub(crate) struct Raised<'a>(&'a std::cell::Cell<bool>);

impl<'a> Raised<'a> {
    /// Sets `flag` until the result drops.
    pub(crate) fn new(flag: &'a std::cell::Cell<bool>) -> Self {
        flag.set(true);
        Raised(flag)
    }
}

impl Drop for Raised<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}
