//! The requests a scope runs without a task (`scope.rs`): a point-to-point request that
//! completed as it started (no entry at all), and, on a communicator of threads, a posted
//! receive, a send waiting for its turn or for room, and an allreduce that is one exchange —
//! how each starts, how the scope looks at it as it advances, and how a wait for it waits on
//! the waiter's own stack, as the blocking call would.

use super::entries::Entry;
use super::request::Request;
use super::scope::Core;
use super::state::{Body, Life};
use super::Status;
use crate::error::Result;
use crate::mailbox::Elem;
use crate::sync::task;
use crate::transport::shm::{PostedRecv, PostedSend};

impl<'scope> Core<'scope> {
    /// Starts an allreduce of `buf` under `op` with `algorithm` as one exchange if it is one on
    /// a communicator of threads and its turn on its shadow has come (`local::Exchanging`):
    /// its request; otherwise hands `buf` and `op` back for [`Core::start`].
    pub(crate) fn start_exchange<T, O>(
        &'scope self,
        buf: &'scope mut [T],
        op: O,
        algorithm: crate::Algorithm,
    ) -> Result<std::result::Result<Request<'scope>, (&'scope mut [T], O)>>
    where
        T: Elem,
        O: crate::op::Op<T> + 'scope,
    {
        let shadows = &self.comm.shadows;
        if !self.comm.is_threads() || !shadows.next_runs_at_once() {
            return Ok(Err((buf, op)));
        }
        let comm = self.comm.shadow_of(shadows.next())?;
        // SAFETY: the entry made below holds the exchange until it has finished or the run
        // failed, and the scope runs every request to its end before `'scope` ends
        // (`Comm::scope`), so it is dropped within `buf`'s borrow, which the rank reaches
        // only through it until then.
        let x = match unsafe { comm.local().iallreduce_exchange(&mut *buf, op, algorithm)? } {
            Ok(x) => x,
            Err(op) => return Ok(Err((buf, op))),
        };
        // SAFETY: only the lifetime is erased, which the drop check would otherwise hold
        // against the scope (its requests borrow it): the exchange borrows the shadow's
        // state, which outlives the scope, and the op, which outlives `'scope`; the scope
        // drops it before it ends.
        let x = unsafe {
            std::mem::transmute::<crate::local::Exchanging<'_>, crate::local::Exchanging<'static>>(
                x,
            )
        };
        Ok(Ok(self.hold(Some(shadows.start()), Body::Exchange(x))))
    }

    /// A point-to-point request that completed as it started, with `status`: no task, and no
    /// entry either.
    pub(crate) fn completed(&'scope self, status: Status) -> Request<'scope> {
        Request::done(self, status)
    }

    /// A receive on a communicator of threads whose message has not arrived, posted as `recv`:
    /// no task (its scope looks for its message as it advances, and a wait for it waits as a
    /// blocking receive does).
    pub(crate) fn posted(&'scope self, recv: PostedRecv<'scope>) -> Request<'scope> {
        // SAFETY: only the lifetime is erased, which the drop check would otherwise hold
        // against the scope (its requests borrow it): the receive borrows the communicator's
        // matcher, which outlives the scope, and the scope drops it before it ends.
        let recv = unsafe { std::mem::transmute::<PostedRecv<'_>, PostedRecv<'static>>(recv) };
        self.hold(None, Body::Recv(recv))
    }

    /// A send on a communicator of threads that could not be posted as it started, held as
    /// `s`: no task (its scope posts it in its turn as it advances, and a wait for it waits as
    /// a blocking send does).
    pub(crate) fn sending(&'scope self, s: PostedSend<'scope>) -> Request<'scope> {
        // SAFETY: only the lifetime is erased, as for a posted receive (`posted`): the send
        // borrows the communicator's state, which outlives the scope, and the scope drops it
        // before it ends.
        let s = unsafe { std::mem::transmute::<PostedSend<'_>, PostedSend<'static>>(s) };
        self.hold(None, Body::Send(s))
    }

    /// Holds `body`, a request in flight that runs without a task, as the entry of start
    /// number `start` (a collective's): its handle.
    fn hold(&'scope self, start: Option<u64>, body: Body<'scope>) -> Request<'scope> {
        self.in_flight();
        let id = self.entries.borrow_mut().insert(Entry {
            start,
            state: Life::running(body),
        });
        Request::new(self, id)
    }

    /// If one of the scope's requests waits on its waiter's stack — a posted receive, a send or
    /// an exchange (`target`, if it is one) — waits on this stack for what it waits for, as the
    /// blocking call waits (with its timeout and deadlock watch), or until another request may
    /// go on (a task of `blocked`, what another waits for): whether there was one.
    pub(super) fn wait_on_stack(&self, blocked: &[task::Blocked], target: Option<usize>) -> bool {
        let taken = {
            let mut entries = self.entries.borrow_mut();
            let take = |id: usize, e: &mut Entry<'scope>| Some((id, e.state.take_waiting()?));
            let target = target.and_then(|id| take(id, entries.get_mut(id)));
            let found =
                target.or_else(|| entries.iter_mut_with_ids().find_map(|(id, e)| take(id, e)));
            found
        };
        let Some((id, body)) = taken else {
            return false;
        };
        let _driving = crate::sync::Raised::new(&self.driving);
        let others = || {
            // SAFETY: every task of `blocked` stays suspended in the wait that made its entry
            // until this wait ends: the scope's hook stands aside while `driving` is set.
            blocked.iter().any(|b| unsafe { b.holds() })
                || self
                    .entries
                    .try_borrow()
                    .is_ok_and(|entries| entries.iter().any(|e| e.message_came(self.comm)))
        };
        let mut entries;
        match body {
            Body::Recv(recv) => {
                let got = self.comm.local().wait_posted(&recv, &others);
                entries = self.entries.borrow_mut();
                let life = &mut entries.get_mut(id).state;
                match got {
                    Ok(None) => life.put_back(Body::Recv(recv)),
                    Ok(Some(found)) => life.finish(Ok(Status::of(found))),
                    Err(e) => life.finish(Err(e)),
                }
            }
            body @ (Body::Exchange(_) | Body::Send(_)) => {
                let got = match &body {
                    Body::Exchange(x) => x.wait(&others),
                    Body::Send(s) => s.wait(&others),
                    _ => unreachable!("matched above"),
                };
                entries = self.entries.borrow_mut();
                let e = entries.get_mut(id);
                e.state.put_back(body);
                if let Err(err) = got {
                    self.settle(e, Err(err));
                }
            }
            Body::Task(_) => unreachable!("a task waits through `blocked`"),
        }
        true
    }

    /// One look at a request that runs without a task: its outcome, once it has finished.
    pub(super) fn look(&self, body: &mut Body<'_>) -> Option<Result<Status>> {
        let done = |d: Result<bool>| d.map(|d| d.then_some(Status::NONE)).transpose();
        match body {
            Body::Recv(r) => (self.comm.local().poll_posted(r))
                .map(|f| f.map(Status::of))
                .transpose(),
            Body::Exchange(x) => done(x.poll()),
            Body::Send(s) => done(s.poll()),
            Body::Task(_) => None,
        }
    }

    /// Finishes request `e`, which runs without a task, with `result`; a collective's turn on
    /// its shadow passes to the next start.
    pub(super) fn settle(&self, e: &mut Entry<'scope>, result: Result<Status>) {
        e.state.finish(result);
        if let Some(n) = e.start {
            self.comm.shadows.finished(n);
        }
    }
}
