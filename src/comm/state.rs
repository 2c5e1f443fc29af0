//! A request's life, as one state machine: what a scope (`scope.rs`) holds for each of its
//! requests, and the named steps between states, each of which asserts the state it leaves.
//!
//! ```text
//!            resumed                  finished(result)             seen()
//!  Queued ─────────────▶ Running ─────────────────────▶ Finished ─────────▶ Seen ─┐
//!    │    (its turn on   │   ▲                            ▲                  ▲  │ seen()
//!    │     its shadow)   └───┘ resumed (its wait          │                  └──┘
//!    │                         may go on)                 │
//!    └────────────── completed(status): a request that finished as it started
//! ```
//!
//! A request is *in flight* while Queued or Running: the scope must run it to the end before
//! its buffers' borrow ends. Its outcome is kept until its owner has seen it; a failure nobody
//! saw (its handle dropped) is the scope's own error when the scope ends.

use super::Status;
use crate::error::{Error, Result};
use crate::sync::task::{Blocked, Task};

/// A request's task: the call it runs, with its result.
pub(super) type RequestTask<'scope> = Task<'scope, Result<Status>>;

/// Where a request is in its life (module docs).
pub(super) enum State<'scope> {
    /// Started, its task not yet resumed: a collective waits for the earlier starts on its
    /// shadow to finish.
    Queued(RequestTask<'scope>),
    /// Its task has run and stopped where the call waits (or unwound out of its last resume).
    Running(RequestTask<'scope>),
    /// Finished; its owner has not seen the outcome.
    Finished(Result<Status>),
    /// Finished, and its owner has seen the outcome (and may ask for it again).
    Seen(Result<Status>),
}

impl std::fmt::Debug for State<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            State::Queued(_) => "Queued",
            State::Running(_) => "Running",
            State::Finished(_) => "Finished",
            State::Seen(_) => "Seen",
        })
    }
}

impl<'scope> State<'scope> {
    /// A request whose call runs as `task`, not yet resumed.
    pub(super) fn queued(task: RequestTask<'scope>) -> Self {
        State::Queued(task)
    }

    /// A request that finished as it started, with `status`.
    pub(super) fn completed(status: Status) -> Self {
        State::Finished(Ok(status))
    }

    /// Whether it is in flight (Queued or Running).
    pub(super) fn in_flight(&self) -> bool {
        matches!(self, State::Queued(_) | State::Running(_))
    }

    /// Whether it has finished (Finished or Seen).
    pub(super) fn finished(&self) -> bool {
        !self.in_flight()
    }

    /// Whether its task still has code to run: in flight and not returned (a task that
    /// panicked has returned, without a value).
    pub(super) fn unfinished_task(&self) -> bool {
        match self {
            State::Queued(t) | State::Running(t) => !t.done(),
            State::Finished(_) | State::Seen(_) => false,
        }
    }

    /// Whether resuming it would let it go on: Queued and `its_turn()` (the first of its
    /// shadow), or Running and ended (a panic) or its wait's condition holds.
    pub(super) fn ready(&mut self, its_turn: impl FnOnce() -> bool) -> bool {
        match self {
            State::Queued(_) => its_turn(),
            State::Running(t) => t.done() || t.may_go_on(),
            State::Finished(_) | State::Seen(_) => false,
        }
    }

    /// What its task waits for, while Running and suspended.
    pub(super) fn blocked(&self) -> Option<&Blocked> {
        match self {
            State::Running(t) => t.blocked(),
            _ => None,
        }
    }

    /// Queued or Running → Running: its task, to resume.
    pub(super) fn resumed(&mut self) -> &mut RequestTask<'scope> {
        if matches!(self, State::Queued(_)) {
            let State::Queued(task) = std::mem::replace(self, State::Seen(Ok(Status::NONE))) else {
                unreachable!("matched Queued")
            };
            *self = State::Running(task);
        }
        match self {
            State::Running(task) => task,
            other => panic!("a request resumed when {other:?}"),
        }
    }

    /// Running → Finished, with `result` (its task is dropped: it has returned).
    pub(super) fn finish(&mut self, result: Result<Status>) {
        assert!(
            matches!(self, State::Running(_)),
            "a request finished when {self:?}"
        );
        *self = State::Finished(result);
    }

    /// Finished or Seen → Seen: the outcome, for its owner; `None` while in flight.
    pub(super) fn seen(&mut self) -> Option<Result<Status>> {
        match self {
            State::Finished(r) => {
                let r = r.clone();
                *self = State::Seen(r.clone());
                Some(r)
            }
            State::Seen(r) => Some(r.clone()),
            State::Queued(_) | State::Running(_) => None,
        }
    }

    /// Finished with an error → Seen: the error nobody saw (the scope's, as it ends).
    pub(super) fn unseen_error(&mut self) -> Option<Error> {
        match self {
            State::Finished(Err(_)) => self.seen().and_then(Result::err),
            _ => None,
        }
    }

    /// Whether the scope may forget it once its handle is gone: it has finished, and not with
    /// an error its owner never saw.
    pub(super) fn may_be_forgotten(&self) -> bool {
        matches!(self, State::Finished(Ok(_)) | State::Seen(_))
    }
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::*;

    fn task(r: Result<Status>) -> RequestTask<'static> {
        // SAFETY: the closure borrows nothing (a task dropped before it runs publishes
        // nothing either).
        unsafe { Task::new(move || r) }
    }

    #[test]
    fn a_request_goes_from_queued_to_seen_through_named_steps() {
        let mut s = State::queued(task(Ok(Status::NONE)));
        assert!(s.in_flight() && s.unfinished_task());
        assert!(!s.ready(|| false), "not its turn");
        assert!(s.ready(|| true));
        assert_eq!(s.seen().map(|_| ()), None, "no outcome in flight");
        let t = s.resumed();
        assert!(
            t.resume(),
            "a task that never waits ends at its first resume"
        );
        let r = t.take().expect("its value");
        s.finish(r);
        assert!(matches!(s, State::Finished(Ok(_))));
        assert!(s.may_be_forgotten(), "a success nobody saw needs no report");
        assert!(s.seen().is_some_and(|r| r.is_ok()));
        assert!(matches!(s, State::Seen(Ok(_))));
        assert!(s.seen().is_some(), "the outcome can be asked for again");
        assert!(s.may_be_forgotten());
    }

    #[test]
    fn a_failure_nobody_saw_is_kept_until_taken() {
        let mut s = State::queued(task(Err(Error::TeamBusy)));
        let t = s.resumed();
        assert!(t.resume());
        let r = t.take().expect("its value");
        s.finish(r);
        assert!(!s.may_be_forgotten(), "the scope must report it");
        assert!(s.unseen_error().is_some());
        assert!(s.may_be_forgotten() && s.unseen_error().is_none());
    }

    #[test]
    #[should_panic(expected = "a request finished when Queued")]
    fn finishing_a_request_that_never_ran_is_a_bug() {
        let mut s = State::queued(task(Ok(Status::NONE)));
        s.finish(Ok(Status::NONE));
    }

    #[test]
    #[should_panic(expected = "a request resumed when Finished")]
    fn resuming_a_finished_request_is_a_bug() {
        let mut s = State::completed(Status::NONE);
        s.resumed();
    }
}
