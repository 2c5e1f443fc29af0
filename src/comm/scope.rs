//! Scopes and requests: non-blocking collectives (`docs/nonblocking.md`).
//!
//! A request is the blocking collective run as a task (`sync::task`) on one of the
//! communicator's *shadows*: communicators over the same ranks with mailboxes and a board of
//! their own (`CommShared::shadow`), so that its messages never meet those of the blocking
//! calls or of other requests made meanwhile. Ranks start their non-blocking collectives on a
//! communicator in the same order (MPI's rule), so the n-th start of every rank runs on the
//! same shadow, n mod `SHADOWS`; on each rank a shadow runs its requests one after the other
//! in start order ([`Shadows`]), so at most `SHADOWS` of a communicator's requests run at once
//! and later ones start as earlier ones finish.
//!
//! A point-to-point request runs on the communicator itself: it completes as it starts if it
//! can (an eager send with a free cell, a message already in), and on a team of threads is
//! otherwise held by the scope without a task — a receive posted, a send in its turn in the
//! rank's outbox; the rest are tasks. So is an allreduce that is one exchange
//! (`taskless.rs`).
//!
//! A request makes progress when its rank advances the scope — resumes its task, or looks for
//! a posted receive's message: at `test`, at `wait`, and in every wait of the rank's other
//! calls inside the scope (the scope's idle hook, `sync::idle`). A task never blocks: where
//! the blocking call would wait, it stops, and `wait` waits for whichever of the scope's
//! requests can go on, on the rank's parker, as the blocking call would have (for a posted
//! receive, with the blocking receive's own wait, `wait_posted`).
//!
//! **Soundness.** A request borrows its buffers for the scope's lifetime `'scope`, and
//! [`Comm::scope`] returns only once every request started in it has finished — a task
//! returned, a posted receive matched or withdrawn — after a panic too, having failed the run
//! first so that every wait ends; so forgetting a request (`mem::forget`) leaves it to finish
//! at the end of the scope, and no peer can touch a buffer after its borrow ends.

use super::entries::{Entries, Entry, INLINE};
use super::request::Request;
use super::shadows::Shadows;
use super::state::Life;
use super::{Comm, Status};
use crate::error::{Error, Result};
use crate::sync::idle::Place;
use crate::sync::task::{self, Task};
use smallvec::SmallVec;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

impl Comm {
    /// Runs `f` with a [`Scope`] in which it can start non-blocking collectives on this
    /// communicator, and returns once every request started in it has completed, as
    /// `std::thread::scope` returns once every thread spawned in it has finished. Returns `f`'s
    /// value, or the error of a request that failed and was never waited for (or tested to
    /// completion). While `f` runs, every wait of this rank's other calls also advances the
    /// scope's requests.
    ///
    /// ```
    /// use corecoll::op;
    /// let sums = corecoll::run(3, |comm| {
    ///     let mut grad = vec![comm.rank() as f64; 4];
    ///     comm.scope(|s| {
    ///         let req = s.iallreduce(&mut grad, op::Sum)?;
    ///         // ... work that does not touch `grad` ...
    ///         req.wait()
    ///     })?;
    ///     Ok::<_, corecoll::Error>(grad[0])
    /// })
    /// .unwrap();
    /// assert!(sums.iter().all(|s| *s.as_ref().unwrap() == 3.0));
    /// ```
    pub fn scope<'env, R>(
        &'env self,
        f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> Result<R>,
    ) -> Result<R> {
        let scope = Scope {
            core: Core {
                comm: self,
                entries: RefCell::new(Entries::default()),
                driving: Cell::new(false),
                hook: Place::default(),
            },
            _env: PhantomData,
        };
        let out = {
            let _finish = Finish(&scope.core);
            f(&scope)
        };
        let unseen = scope.core.unseen();
        match (out, unseen) {
            (Err(e), _) => Err(e),
            (Ok(_), Some(e)) => Err(e),
            (Ok(r), None) => Ok(r),
        }
    }
}

/// Where a rank starts non-blocking collectives on a communicator ([`Comm::scope`]); every
/// request started here completes before the scope ends. `'scope` is the scope's lifetime,
/// which the buffers of its requests must outlive; `'env` the communicator's borrow.
///
/// The borrows are the compiler's to check, as `std::thread::scope`'s are. A buffer lent to a
/// request stays lent for the rest of the scope, so it cannot be touched while a peer may
/// write it:
///
/// ```compile_fail,E0499
/// corecoll::run(2, |comm| {
///     let mut v = vec![1.0f64; 4];
///     comm.scope(|s| {
///         let req = s.iallreduce(&mut v, corecoll::op::Sum)?;
///         v[0] = 2.0; // `v` is lent to the request
///         req.wait()
///     })
/// });
/// ```
///
/// A request cannot leave its scope:
///
/// ```compile_fail,E0521
/// corecoll::run(2, |comm| {
///     let mut kept = None;
///     comm.scope(|s| {
///         kept = Some(s.ibarrier()?); // the request would outlive the scope
///         Ok(())
///     })
/// });
/// ```
///
/// And a persistent collective's buffer, reached between starts, cannot be held across one:
///
/// ```compile_fail,E0499
/// corecoll::run(2, |comm| {
///     let mut v = vec![1.0f64; 4];
///     comm.scope(|s| {
///         let mut p = s.allreduce_init(&mut v, corecoll::op::Sum)?;
///         let b = p.buffer()?;
///         p.start()?;
///         b[0] = 2.0; // the start may be writing it
///         p.wait()
///     })
/// });
/// ```
pub struct Scope<'scope, 'env: 'scope> {
    core: Core<'scope>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope> Scope<'scope, '_> {
    /// The scope's state, which its requests point to.
    pub(crate) fn core(&'scope self) -> &'scope Core<'scope> {
        &self.core
    }

    /// The communicator of the scope.
    pub(crate) fn comm(&self) -> &'scope Comm {
        self.core.comm
    }
}

impl std::fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("rank", &self.core.comm.rank())
            .field("requests", &self.core.entries.borrow().iter().count())
            .finish()
    }
}

/// The state of a scope, which its requests point to.
pub(crate) struct Core<'scope> {
    pub(super) comm: &'scope Comm,
    /// The scope's requests that are in flight, or whose owner still holds them or has not
    /// seen their failure.
    pub(super) entries: RefCell<Entries<'scope>>,
    /// Whether a `wait` of this scope is waiting on its tasks' conditions (their wait frames
    /// must not move meanwhile, so the scope's idle hook leaves them alone).
    pub(super) driving: Cell<bool>,
    /// The scope's place among the thread's idle hooks, taken once a request of it is in
    /// flight (`in_flight`), so that a scope whose requests complete as they start lists none.
    hook: Place,
}

/// Runs a scope's requests to completion when its closure returns or unwinds, so that no peer
/// touches their buffers after; when unwinding, fails the run first, so that every wait of
/// theirs ends.
struct Finish<'a, 'scope>(&'a Core<'scope>);

impl Drop for Finish<'_, '_> {
    fn drop(&mut self) {
        let core = self.0;
        if std::thread::panicking() && core.entries.borrow().iter().any(|e| e.state.unfinished()) {
            let _ = core.comm.fail(Error::Panicked {
                rank: core.comm.team_rank(core.comm.rank()).unwrap_or(0),
                message: "a panic left a scope with non-blocking collectives in flight".into(),
            });
        }
        core.finish();
    }
}

impl<'scope> Core<'scope> {
    /// The communicator of the scope.
    pub(crate) fn comm(&self) -> &'scope Comm {
        self.comm
    }

    /// Starts a request on the communicator: `f` runs the blocking collective on the shadow
    /// given to it. An error of its first steps (its arguments) is returned here.
    pub(crate) fn start(
        &'scope self,
        f: impl FnOnce(&Comm) -> Result<()> + 'scope,
    ) -> Result<Request<'scope>> {
        let shadows = &self.comm.shadows;
        let n = shadows.start();
        let comm = match self.comm.shadow_of(n) {
            Ok(c) => c,
            Err(e) => {
                shadows.finished(n);
                return Err(e);
            }
        };
        self.launch(Some(n), move || f(comm).map(|()| Status::NONE))
    }

    /// Starts a point-to-point request on the communicator itself: `f` runs the call, at once,
    /// until it would wait. An error of its first steps is returned here.
    pub(crate) fn start_p2p(
        &'scope self,
        f: impl FnOnce(&Comm) -> Result<Status> + 'scope,
    ) -> Result<Request<'scope>> {
        let comm = self.comm;
        self.launch(None, move || f(comm))
    }

    /// A request of the scope is in flight: the scope advances it in the rank's other waits
    /// from now on (its idle hook).
    pub(super) fn in_flight(&self) {
        // SAFETY: the place is a field of the scope's state, which the hook is, so it drops
        // with it, on this thread; and the state is a local of `Comm::scope`'s frame, which
        // nothing forgets.
        unsafe { self.hook.install(self) };
    }

    /// Makes a request of `f` as the task of an entry with start number `start`, and runs it
    /// as far as it can go.
    fn launch(
        &'scope self,
        start: Option<u64>,
        f: impl FnOnce() -> Result<Status> + 'scope,
    ) -> Result<Request<'scope>> {
        // SAFETY: the task borrows for `'scope` at most (`f`, with the communicator, which
        // lives as long as `self.comm`), and the scope runs every task to completion before
        // `'scope` ends (`Finish`, when the scope's closure returns and when it unwinds).
        let task = unsafe { Task::new(f) };
        self.in_flight();
        let id = self.entries.borrow_mut().insert(Entry {
            start,
            state: Life::queued(task),
        });
        self.progress();
        let mut entries = self.entries.borrow_mut();
        if let Some(e) = entries.get_mut(id).state.unseen_error() {
            entries.forget(id);
            return Err(e);
        }
        Ok(Request::new(self, id))
    }

    /// Resumes every request that can go on (the first of its shadow, whose wait's condition
    /// holds): whether one did.
    pub(super) fn progress(&self) -> bool {
        let mut worked = false;
        let shadows = &self.comm.shadows;
        let mut entries = self.entries.borrow_mut();
        for e in entries.iter_mut() {
            if let Some(body) = e.state.taskless() {
                if let Some(result) = self.look(body) {
                    self.settle(e, result);
                    worked = true;
                }
                continue;
            }
            if !e.ready(self.comm, |n| shadows.may_run(n)) {
                continue;
            }
            let start = e.start;
            let task = e.state.resumed();
            let result = if task.done() {
                // It panicked, and the panic went on out of the resume that ran it (its shadow
                // was released as it unwound).
                Err(Error::Panicked {
                    rank: self.comm.team_rank(self.comm.rank()).unwrap_or(0),
                    message: "a non-blocking call panicked".into(),
                })
            } else {
                worked = true;
                let finished = start.map(|n| Resumed(shadows, n));
                let Some(result) = task.resume() else {
                    std::mem::forget(finished);
                    continue;
                };
                drop(finished);
                result
            };
            e.state.finish(result);
        }
        worked
    }

    /// Whether one of the scope's requests could go on now (the scope's idle hook would
    /// resume it): false while a `wait` of the scope looks at them itself.
    fn has_work(&self) -> bool {
        if self.stands_aside() {
            return false;
        }
        let shadows = &self.comm.shadows;
        let mut entries = self.entries.borrow_mut();
        let any = entries
            .iter_mut()
            .any(|e| e.ready(self.comm, |n| shadows.may_run(n)));
        any
    }

    /// Whether the scope's hooks leave its requests alone: a `wait` of the scope is looking at
    /// them, or the wait is a task's own, or the requests are being advanced already.
    fn stands_aside(&self) -> bool {
        self.driving.get() || task::inside() || self.entries.try_borrow_mut().is_err()
    }

    /// Runs the scope until request `id` (or, for `None`, every request) has finished.
    pub(super) fn drive(&self, id: Option<usize>) {
        let done = || {
            let entries = self.entries.borrow();
            let finished = |e: &Entry<'_>| e.state.finished();
            match id {
                Some(i) => finished(entries.get(i)),
                None => entries.iter().all(finished),
            }
        };
        while !done() {
            if self.progress() && done() {
                return;
            }
            self.wait_for_any(id);
        }
    }

    /// Waits until one of the scope's suspended requests may go on: a posted receive's
    /// message has come, or a task's wait's condition holds. `target`: the request the caller
    /// waits for, if one (a wait on the stack is that receive's, if it is one, so that the
    /// deadlock watch sees what the rank waits for).
    pub(super) fn wait_for_any(&self, target: Option<usize>) {
        let blocked: SmallVec<[task::Blocked; INLINE]> = self
            .entries
            .borrow()
            .iter()
            .filter_map(|e| e.state.blocked().copied())
            .collect();
        if self.wait_on_stack(&blocked, target) {
            return;
        }
        if blocked.is_empty() {
            // Every unfinished request waits for one of an enclosing scope on its shadow,
            // which that scope's hook advances.
            crate::sync::idle::run();
            crate::sync::yield_now();
            return;
        }
        let _driving = crate::sync::Raised::new(&self.driving);
        // SAFETY: every task of `blocked` is suspended in the wait that made its entry, and
        // none is resumed until `wait_any` returns: the scope's hook stands aside while
        // `driving` is set, and nothing else resumes this scope's tasks.
        unsafe { task::wait_any(&blocked) };
    }

    /// Whether request `id` has finished (its result waits to be seen).
    pub(super) fn finished(&self, id: usize) -> bool {
        self.entries.borrow().get(id).state.finished()
    }

    /// Request `id`'s start number on the communicator (`None`: point-to-point).
    pub(super) fn start_of(&self, id: usize) -> Option<u64> {
        self.entries.borrow().get(id).start
    }

    /// Runs every request to completion.
    fn finish(&self) {
        self.drive(None);
    }

    /// The first error of a request whose owner never saw its outcome.
    fn unseen(&self) -> Option<Error> {
        let mut entries = self.entries.borrow_mut();
        let first = entries.iter_mut().find_map(|e| e.state.unseen_error());
        first
    }

    /// The outcome of request `id`, if it has finished, marked as seen.
    pub(super) fn outcome(&self, id: usize) -> Option<Result<Status>> {
        self.entries.borrow_mut().get_mut(id).state.seen()
    }

    /// The outcome of request `id`, which has finished, for its owner, who gives up its
    /// handle: the entry goes.
    pub(super) fn take_outcome(&self, id: usize) -> Result<Status> {
        let mut entries = self.entries.borrow_mut();
        let out = entries.get_mut(id).state.take_outcome();
        entries.forget(id);
        out
    }

    /// Request `id`'s handle is gone: its entry goes too, unless it is in flight (the scope
    /// still runs it) or failed unseen (the scope reports it).
    pub(super) fn release(&self, id: usize) {
        let mut entries = self.entries.borrow_mut();
        if entries.get(id).state.may_be_forgotten() {
            entries.forget(id);
        }
    }
}

/// The scope as its rank's idle hook: it advances its requests during the rank's other
/// waits, whose peers wake the rank as they would for the blocking calls.
impl crate::sync::idle::Idle for Core<'_> {
    /// Advances the requests, unless a `wait` of the scope is looking at them or the wait is
    /// a task's own.
    fn run(&self) -> bool {
        !self.stands_aside() && self.progress()
    }

    fn ready(&self) -> Option<bool> {
        Some(self.has_work())
    }
}

/// Marks a start finished on its shadow when dropped: after its task returned, or when its
/// resume unwinds (a panic inside the collective, which has then finished too).
struct Resumed<'a>(&'a Shadows, u64);

impl Drop for Resumed<'_> {
    fn drop(&mut self) {
        self.0.finished(self.1);
    }
}
