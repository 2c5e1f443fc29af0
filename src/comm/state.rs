//! A request's life, as one state machine: what a scope (`scope.rs`) holds for each of its
//! requests, and the named steps between states, each of which asserts the state it leaves.
//!
//! ```text
//!            resumed                  finished(result)             seen()
//!  Queued ─────────────▶ Running ─────────────────────▶ Finished ─────────▶ Seen ─┐
//!         (its turn on   │   ▲                                               ▲  │ seen()
//!          its shadow)   └───┘ resumed (its wait may go on)                  └──┘
//! ```
//!
//! A request in flight is run by a task (`sync::task`: a collective, a request between
//! processes, a send to oneself that must wait), Queued until its first resume; or, needing no
//! task, Running from its start: on a communicator of threads, a posted receive
//! (`transport::shm::PostedRecv`), a send waiting for its turn or for room
//! (`transport::shm::PostedSend`), or an allreduce that is one exchange, its message sent
//! (`local::Exchanging`) — a look advances each, and a wait for it is the blocking call's wait
//! (`scope.rs`). A request that completed as it started has no life here:
//! its handle keeps its status (`request.rs`).
//!
//! A request is *in flight* while Queued or Running: the scope must run it to the end before
//! its buffers' borrow ends. Its outcome is kept until its owner has seen it; a failure nobody
//! saw (its handle dropped) is the scope's own error when the scope ends.

use super::Status;
use crate::error::{Error, Result};
use crate::local::Exchanging;
use crate::sync::task::{Blocked, Task};
use crate::transport::shm::{PostedRecv, PostedSend};

/// A request's task: the call it runs, with its result.
pub(super) type RequestTask<'scope> = Task<'scope, Result<Status>>;

/// Where a request is in its life (module docs). The task of a request in flight is kept
/// beside the state (`Life`), so that a step between states moves no task.
#[derive(Debug)]
pub(super) enum State {
    /// Started, its task not yet resumed: a collective waits for the earlier starts on its
    /// shadow to finish.
    Queued,
    /// Its task has run and stopped where the call waits (or unwound out of its last resume).
    Running,
    /// Finished; its owner has not seen the outcome.
    Finished(Result<Status>),
    /// Finished, and its owner has seen the outcome (and may ask for it again).
    Seen(Result<Status>),
}

/// What runs a request in flight.
pub(super) enum Body<'scope> {
    /// A task: the blocking call on a stack of its own, suspended where it waits.
    Task(RequestTask<'scope>),
    /// A receive posted on a communicator of threads, which needs no stack: a look finds its
    /// message, and a wait for it is a blocking receive's wait (`scope.rs`).
    Recv(PostedRecv<'static>),
    /// An allreduce that is one exchange, its message sent: the receive of the peer's, which
    /// needs no stack either (`local::Exchanging`).
    Exchange(Exchanging<'static>),
    /// A send on a communicator of threads that could not be posted as it started: posted in
    /// its turn, and if lent, complete once read (`transport::shm::PostedSend`).
    Send(PostedSend<'static>),
}

/// A request's state and, while it is in flight, what runs it.
pub(super) struct Life<'scope> {
    state: State,
    body: Option<Body<'scope>>,
}

impl<'scope> Life<'scope> {
    /// A request whose call runs as `task`, not yet resumed.
    pub(super) fn queued(task: RequestTask<'scope>) -> Self {
        Life {
            state: State::Queued,
            body: Some(Body::Task(task)),
        }
    }

    /// A request that runs without a task, `body` (not a task): Running from its start.
    pub(super) fn running(body: Body<'scope>) -> Self {
        debug_assert!(!matches!(body, Body::Task(_)), "a task starts Queued");
        Life {
            state: State::Running,
            body: Some(body),
        }
    }

    /// A request that finished as it started, with `status` (the scope holds none such: their
    /// handles keep their status, `request.rs`).
    #[cfg(all(test, not(loom), not(miri)))]
    pub(super) fn completed(status: Status) -> Self {
        Life {
            state: State::Finished(Ok(status)),
            body: None,
        }
    }

    /// Where it is.
    #[cfg(all(test, not(loom), not(miri)))]
    pub(super) fn state(&self) -> &State {
        &self.state
    }

    /// Whether it is in flight (Queued or Running).
    pub(super) fn in_flight(&self) -> bool {
        matches!(self.state, State::Queued | State::Running)
    }

    /// Whether it has finished (Finished or Seen).
    pub(super) fn finished(&self) -> bool {
        !self.in_flight()
    }

    /// Whether it still has work to do that waits for peers: a task not returned (a task that
    /// panicked has returned, without a value), or a posted receive without its message.
    pub(super) fn unfinished(&self) -> bool {
        match &self.body {
            Some(Body::Task(t)) => !t.done(),
            Some(Body::Recv(_) | Body::Exchange(_) | Body::Send(_)) => true,
            None => self.in_flight(),
        }
    }

    /// Whether resuming its task would let it go on: Queued and `its_turn()` (the first of its
    /// shadow), or Running and ended (a panic) or its wait's condition holds. False for a
    /// request that runs without a task (`Entry::ready` asks those).
    pub(super) fn ready(&mut self, its_turn: impl FnOnce() -> bool) -> bool {
        match (&self.state, &mut self.body) {
            (State::Queued, _) => its_turn(),
            (State::Running, Some(Body::Task(t))) => t.done() || t.may_go_on(),
            _ => false,
        }
    }

    /// What runs it, if it runs without a task, while it is in flight and not taken out to be
    /// waited for.
    pub(super) fn taskless(&mut self) -> Option<&mut Body<'scope>> {
        match &mut self.body {
            Some(Body::Task(_)) | None => None,
            Some(b) => Some(b),
        }
    }

    /// What its task waits for, while Running and suspended.
    pub(super) fn blocked(&self) -> Option<&Blocked> {
        match (&self.state, &self.body) {
            (State::Running, Some(Body::Task(t))) => t.blocked(),
            _ => None,
        }
    }

    /// What runs it, while it is in flight and not taken out to be waited for.
    pub(super) fn body(&self) -> Option<&Body<'scope>> {
        self.body.as_ref()
    }

    /// Takes out what runs it if it waits on its waiter's stack — a posted receive, an
    /// exchange or a send — for a wait there ([`Life::put_back`] or [`Life::finish`] after it);
    /// meanwhile nothing else looks for its message.
    pub(super) fn take_waiting(&mut self) -> Option<Body<'scope>> {
        match self.body.take() {
            Some(b @ (Body::Recv(_) | Body::Exchange(_) | Body::Send(_))) => Some(b),
            other => {
                self.body = other;
                None
            }
        }
    }

    /// Puts back what [`Life::take_waiting`] took out, whose wait ended first.
    pub(super) fn put_back(&mut self, body: Body<'scope>) {
        assert!(
            self.body.is_none() && matches!(self.state, State::Running),
            "a request's body put back when {:?}",
            self.state
        );
        self.body = Some(body);
    }

    /// Queued or Running → Running: its task, to resume.
    pub(super) fn resumed(&mut self) -> &mut RequestTask<'scope> {
        assert!(self.in_flight(), "a request resumed when {:?}", self.state);
        self.state = State::Running;
        match &mut self.body {
            Some(Body::Task(t)) => t,
            _ => panic!("a request without a task resumed"),
        }
    }

    /// Running → Finished, with `result` (what ran it, which has returned, is dropped: a
    /// posted receive is withdrawn).
    pub(super) fn finish(&mut self, result: Result<Status>) {
        assert!(
            matches!(self.state, State::Running),
            "a request finished when {:?}",
            self.state
        );
        self.state = State::Finished(result);
        self.body = None;
    }

    /// Finished or Seen → Seen: the outcome, for its owner; `None` while in flight.
    pub(super) fn seen(&mut self) -> Option<Result<Status>> {
        match &mut self.state {
            State::Finished(r) => {
                let r = std::mem::replace(r, Ok(Status::NONE));
                self.state = State::Seen(r.clone());
                Some(r)
            }
            State::Seen(r) => Some(r.clone()),
            State::Queued | State::Running => None,
        }
    }

    /// Finished or Seen → gone: the outcome, for its owner, who gives up its handle (the
    /// scope forgets the request).
    pub(super) fn take_outcome(&mut self) -> Result<Status> {
        match std::mem::replace(&mut self.state, State::Seen(Ok(Status::NONE))) {
            State::Finished(r) | State::Seen(r) => r,
            other => panic!("the outcome of a request taken when {other:?}"),
        }
    }

    /// Finished with an error → Seen: the error nobody saw (the scope's, as it ends).
    pub(super) fn unseen_error(&mut self) -> Option<Error> {
        match self.state {
            State::Finished(Err(_)) => self.seen().and_then(Result::err),
            _ => None,
        }
    }

    /// Whether the scope may forget it once its handle is gone: it has finished, and not with
    /// an error its owner never saw.
    pub(super) fn may_be_forgotten(&self) -> bool {
        matches!(self.state, State::Finished(Ok(_)) | State::Seen(_))
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
        let mut s = Life::queued(task(Ok(Status::NONE)));
        assert!(s.in_flight() && s.unfinished());
        assert!(!s.ready(|| false), "not its turn");
        assert!(s.ready(|| true));
        assert_eq!(s.seen().map(|_| ()), None, "no outcome in flight");
        let t = s.resumed();
        let r = t
            .resume()
            .expect("a task that never waits ends at its first resume");
        s.finish(r);
        assert!(matches!(s.state(), State::Finished(Ok(_))));
        assert!(s.may_be_forgotten(), "a success nobody saw needs no report");
        assert!(s.seen().is_some_and(|r| r.is_ok()));
        assert!(matches!(s.state(), State::Seen(Ok(_))));
        assert!(s.seen().is_some(), "the outcome can be asked for again");
        assert!(s.may_be_forgotten());
    }

    #[test]
    fn a_failure_nobody_saw_is_kept_until_taken() {
        let mut s = Life::queued(task(Err(Error::TeamBusy)));
        let r = s.resumed().resume().expect("its value");
        s.finish(r);
        assert!(!s.may_be_forgotten(), "the scope must report it");
        assert!(s.unseen_error().is_some());
        assert!(s.may_be_forgotten() && s.unseen_error().is_none());
    }

    #[test]
    #[should_panic(expected = "a request finished when Queued")]
    fn finishing_a_request_that_never_ran_is_a_bug() {
        let mut s = Life::queued(task(Ok(Status::NONE)));
        s.finish(Ok(Status::NONE));
    }

    #[test]
    #[should_panic(expected = "a request resumed when Finished")]
    fn resuming_a_finished_request_is_a_bug() {
        let mut s = Life::completed(Status::NONE);
        s.resumed();
    }
}
