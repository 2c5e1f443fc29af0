//! Work a thread does while it waits: idle hooks that the waiting loop runs between its polls.
//!
//! A rank that must keep something moving while it waits for its peers — the leader of a
//! process that relays its threads' messages to other processes, when only it may call MPI; a
//! scope whose requests advance in the rank's other waits — installs a hook, a value of a type
//! that implements [`Idle`], for a stretch of code (`with_idle`). Every wait of that thread in
//! that stretch then runs the hook between its polls once spinning is over; it keeps yielding
//! (rather than sleeping) while the hook finds work, and once the hook has found none for the
//! wait policy's yield time, sleeps at most [`IDLE_PARK`] at a time and runs the hook again,
//! instead of sleeping until woken, since what the hook serves (messages from other processes)
//! wakes nobody. A hook whose work arrives with a wake-up of the thread's parker (a scope's
//! requests: their peers unpark this rank as they would for a blocking call) says whether it
//! has work now ([`Idle::ready`]); while only such hooks are installed, a wait parks until
//! woken, on its own condition or the hooks', and the deadlock detection counts the thread
//! blocked only when neither can become true. Threads without a hook wait as any wait does; the check
//! costs one thread-local read per poll once a wait has spun.
//!
//! Hooks nest: each `with_idle` adds one for its stretch, and the waits inside run all of
//! them, innermost (latest) first. The hooks do not run inside themselves (a wait in a hook
//! would find them already running). A hook may also be installed for a stretch that is not one
//! call (`lasting`): a thread that joins a team's run and leaves it in two calls
//! (`team::join`'s seat, from C) keeps it until the `Lasting` it was handed is dropped; such
//! a hook is owned, not borrowed.
//!
//! **Why this is sound without a strict stack.** A thread's hooks are a list of entries, each
//! with a number of its own, and each is removed by number when its stretch ends — by a guard
//! in the frame that installed it, which holds the hook, so that the entry never outlives what
//! it points to. Stretches need not end in the reverse order of their start: a task
//! (`sync::task`) that installs a hook and stops where it would wait leaves its entry listed
//! while its resumer's code installs and removes others, and the C layer's request scopes are
//! opened in a coroutine of their own. Running the hooks looks each one up by number just
//! before calling it, so a hook removed by an earlier one's work is never called.

use std::cell::{Cell, RefCell};
#[cfg(any(all(test, not(loom)), feature = "mpi"))]
use std::rc::Rc;
use std::time::Duration;

/// The longest a thread with an idle hook sleeps before it runs the hook again.
pub(crate) const IDLE_PARK: Duration = Duration::from_micros(50);

/// Work a thread does while it waits (module docs).
pub(crate) trait Idle {
    /// One pass of the hook's work: whether it found any (which keeps the wait awake a while
    /// longer).
    fn run(&self) -> bool;

    /// The part of the work that must happen before the thread stops serving its hooks for a
    /// while (a relaying leader's sends, before it waits in a stage between processes,
    /// without its look for what has come in). By default the whole of [`Idle::run`].
    #[cfg(any(all(test, not(loom)), feature = "mpi"))]
    fn flush(&self) -> bool {
        self.run()
    }

    /// For a hook whose work is announced by a wake-up of the thread's parker: whether it has
    /// work now. `None` (the default) for one that cannot tell, whose work wakes nobody; while
    /// such a hook is installed the thread's waits poll.
    fn ready(&self) -> Option<bool> {
        None
    }
}

/// A closure as a hook: its value is whether it found work.
#[cfg(all(not(loom), any(test, feature = "mpi")))]
pub(crate) struct FnIdle<F>(pub(crate) F);

#[cfg(all(not(loom), any(test, feature = "mpi")))]
impl<F: Fn() -> bool> Idle for FnIdle<F> {
    fn run(&self) -> bool {
        (self.0)()
    }
}

/// An installed hook, its lifetime erased: borrowed from the frame that installed it
/// (`with_idle`, [`Place::install`]) or from the `Lasting` that owns it, which remove it
/// before the borrow ends.
type Hook = &'static dyn Idle;

/// How many hooks a thread lists without allocating; those installed beyond wait in `MORE`.
const SLOTS: usize = 8;

/// A thread's hooks with their numbers, in the order installed (numbers rise): the first
/// [`SLOTS`] in `slots`, the rest in `MORE`. Nothing here needs dropping, so reaching it is a
/// plain thread-local access, as cheap as the scope opened per exchange needs.
struct Hooks {
    slots: [Cell<Option<(u64, Hook)>>; SLOTS],
    /// How many of `slots` are used (from the first).
    len: Cell<usize>,
    /// How many hooks wait in `MORE`.
    more: Cell<usize>,
    /// The number of the next hook installed on this thread.
    next: Cell<u64>,
    /// Whether the hooks are running.
    running: Cell<bool>,
}

thread_local! {
    static HOOKS: Hooks = const {
        Hooks {
            slots: [const { Cell::new(None) }; SLOTS],
            len: Cell::new(0),
            more: Cell::new(0),
            next: Cell::new(0),
            running: Cell::new(false),
        }
    };
    /// The hooks installed beyond the thread's first [`SLOTS`], in order.
    static MORE: RefCell<Vec<(u64, Hook)>> = const { RefCell::new(Vec::new()) };
}

/// Lists `hook` and returns its number.
fn add(hook: Hook) -> u64 {
    HOOKS.with(|h| {
        let id = h.next.replace(h.next.get() + 1);
        let len = h.len.get();
        if len < SLOTS && h.more.get() == 0 {
            h.slots[len].set(Some((id, hook)));
            h.len.set(len + 1);
        } else {
            MORE.with(|m| m.borrow_mut().push((id, hook)));
            h.more.set(h.more.get() + 1);
        }
        id
    })
}

/// Removes hook `id` from the list (wherever it is in it), keeping the others in order.
fn remove(id: u64) {
    HOOKS.with(|h| {
        let len = h.len.get();
        let Some(at) = (0..len).find(|&i| h.slots[i].get().is_some_and(|(n, _)| n == id)) else {
            MORE.with(|m| m.borrow_mut().retain(|(n, _)| *n != id));
            h.more.set(h.more.get() - 1);
            return;
        };
        for i in at..len - 1 {
            h.slots[i].set(h.slots[i + 1].get());
        }
        if h.more.get() > 0 {
            let first = MORE.with(|m| m.borrow_mut().remove(0));
            h.slots[len - 1].set(Some(first));
            h.more.set(h.more.get() - 1);
        } else {
            h.slots[len - 1].set(None);
            h.len.set(len - 1);
        }
    });
}

/// Removes a hook when dropped.
#[cfg(any(all(test, not(loom)), feature = "mpi"))]
struct Listed(u64);

#[cfg(any(all(test, not(loom)), feature = "mpi"))]
impl Drop for Listed {
    fn drop(&mut self) {
        remove(self.0);
    }
}

/// The stretch of a hook installed by [`lasting`]: the hook is removed when this is dropped,
/// on the thread that installed it (it is neither `Send` nor `Sync`).
#[must_use = "the hook is removed when this is dropped"]
#[cfg(any(all(test, not(loom)), feature = "mpi"))]
pub(crate) struct Lasting {
    // Fields drop in order: the entry goes before the hook it points to.
    _listed: Listed,
    _hook: Rc<dyn Idle>,
}

/// Installs `hook` as one of this thread's idle hooks until the returned [`Lasting`] is
/// dropped.
#[cfg(any(all(test, not(loom)), feature = "mpi"))]
pub(crate) fn lasting(hook: impl Idle + 'static) -> Lasting {
    let hook: Rc<dyn Idle> = Rc::new(hook);
    // SAFETY: only the lifetime is erased, of a borrow of what the `Rc` holds, which does not
    // move while the `Lasting` moves and lives until after the entry is removed (field order).
    let listed: Hook = unsafe { std::mem::transmute::<&dyn Idle, Hook>(&*hook) };
    Lasting {
        _listed: Listed(add(listed)),
        _hook: hook,
    }
}

/// Runs `f` with `hook` as one of this thread's idle hooks (module docs) — the hooks installed
/// around this call run too — and removes it when `f` returns or unwinds.
#[cfg(any(all(test, not(loom)), feature = "mpi"))]
pub(crate) fn with_idle<R>(hook: &dyn Idle, f: impl FnOnce() -> R) -> R {
    // SAFETY: only the lifetime is erased. The entry is removed by `_listed` when this
    // function returns or unwinds — a local of this frame, which nothing can forget but the
    // forgetting of a whole stack, which the crate never does (a task's or a coroutine's stack
    // is run to its end or unwound) — and `hook` is borrowed for longer than this frame, so
    // the entry is never used after the borrow ends.
    let hook: Hook = unsafe { std::mem::transmute::<&dyn Idle, Hook>(hook) };
    let _listed = Listed(add(hook));
    f()
}

/// A hook's place in the thread's list, taken on demand ([`Place::install`]), for a hook that
/// is needed only once there is work for it (a scope's, once a request of it is in flight),
/// and given up when the place is dropped.
#[derive(Default)]
pub(crate) struct Place(Cell<Option<u64>>);

impl Place {
    /// Lists `hook` in this place, unless it is listed already.
    ///
    /// # Safety
    /// `hook` must outlive the place, and the place must be dropped (never forgotten) on the
    /// thread that installed it: it is a field of a value in a frame of the crate's, as
    /// `with_idle`'s guard is a local.
    pub(crate) unsafe fn install(&self, hook: &dyn Idle) {
        if self.0.get().is_none() {
            // SAFETY: only the lifetime is erased; the entry is removed when the place is
            // dropped, within the hook's borrow (the contract).
            let hook: Hook = unsafe { std::mem::transmute::<&dyn Idle, Hook>(hook) };
            self.0.set(Some(add(hook)));
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(id) = self.0.get() {
            remove(id);
        }
    }
}

/// Whether this thread has an idle hook.
pub(crate) fn installed() -> bool {
    HOOKS.with(|h| h.len.get() > 0)
}

/// This thread's hook numbered below `bound` with the highest number, if one is listed.
fn next_below(bound: u64) -> Option<(u64, Hook)> {
    let below = |&(id, _): &(u64, Hook)| id < bound;
    HOOKS.with(|h| {
        let more = (h.more.get() > 0)
            .then(|| MORE.with(|m| m.borrow().iter().rev().copied().find(below)))
            .flatten();
        more.or_else(|| {
            let used = &h.slots[..h.len.get()];
            used.iter().rev().filter_map(Cell::get).find(below)
        })
    })
}

/// Calls `each` on this thread's hooks, innermost first, each looked up just before, until it
/// returns `Some`: that value.
fn find_map<T>(mut each: impl FnMut(&dyn Idle) -> Option<T>) -> Option<T> {
    let mut bound = u64::MAX;
    while let Some((id, hook)) = next_below(bound) {
        bound = id;
        if let Some(found) = each(hook) {
            return Some(found);
        }
    }
    None
}

/// Whether every idle hook of this thread can tell when it has work ([`Idle::ready`]), and no
/// task of this thread polls (`super::task::poll_until`).
pub(crate) fn precise() -> bool {
    // A task suspended in a poll (an MPI request) waits for what wakes nobody.
    !super::task::polling() && find_map(|h| h.ready().is_none().then_some(())).is_none()
}

/// Whether one of this thread's idle hooks that can tell has work now (false while the hooks
/// run).
pub(crate) fn ready() -> bool {
    !HOOKS.with(|h| h.running.get()) && find_map(|h| h.ready().filter(|r| *r)).is_some()
}

/// Runs this thread's idle hooks, innermost first, unless they are already running: whether
/// one found work (which keeps the thread's wait awake a while longer).
pub(crate) fn run() -> bool {
    run_each(|h| h.run())
}

/// [`run`], but of each hook only its [`Idle::flush`] part: what must happen before the thread
/// stops serving its hooks for a while (a leader's wait in a stage between processes).
#[cfg(any(all(test, not(loom)), feature = "mpi"))]
pub(crate) fn flush() -> bool {
    run_each(|h| h.flush())
}

/// Runs `pass` on each of this thread's hooks, innermost first, unless they are already
/// running: whether one found work. Every hook runs, whatever the others found.
fn run_each(pass: impl Fn(&dyn Idle) -> bool) -> bool {
    if !installed() || HOOKS.with(|h| h.running.replace(true)) {
        return false;
    }
    struct Done;
    impl Drop for Done {
        fn drop(&mut self) {
            HOOKS.with(|h| h.running.set(false));
        }
    }
    let _done = Done;
    let mut worked = false;
    find_map(|h| {
        worked |= pass(h);
        None::<()>
    });
    worked
}

#[cfg(all(test, not(loom)))]
mod tests;
