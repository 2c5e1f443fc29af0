//! Requests: the handles of a scope's non-blocking calls, and how their owners test and wait
//! for them (the scope, `scope.rs`, runs them).

use super::scope::Core;
use super::Status;
use crate::error::Result;
use std::marker::PhantomData;

/// A non-blocking call in flight, started in a [`Scope`](super::Scope). It completes by [`Request::wait`]
/// or a [`Request::test`] that returns `true`; one that is dropped or forgotten completes when
/// its scope ends (which then returns its error, if it failed). Used on the rank's own thread
/// (not `Send`).
#[must_use = "a request completes at `wait`, or at the end of its scope"]
pub struct Request<'scope> {
    core: &'scope Core<'scope>,
    held: Held,
    _not_send: PhantomData<*const ()>,
}

/// Where a request's state is: its entry in the scope, or, for a request that completed as it
/// started (an eager send with a free cell, a message already in), here, since the scope has
/// nothing to run for it.
#[derive(Debug, Clone, Copy)]
enum Held {
    Entry(usize),
    Done(Status),
}

impl<'scope> Request<'scope> {
    /// The handle of request `id` of the scope whose state is `core`.
    pub(super) fn new(core: &'scope Core<'scope>, id: usize) -> Self {
        Request {
            core,
            held: Held::Entry(id),
            _not_send: PhantomData,
        }
    }

    /// The handle of a request of the scope whose state is `core` that completed as it
    /// started, with `status`.
    pub(super) fn done(core: &'scope Core<'scope>, status: Status) -> Self {
        Request {
            core,
            held: Held::Done(status),
            _not_send: PhantomData,
        }
    }
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request").field("held", &self.held).finish()
    }
}

impl Request<'_> {
    /// Advances the scope's requests without blocking: `true` once this one has completed
    /// (its buffers then hold the result), `false` while it is in flight; its error, once, if it
    /// failed.
    pub fn test(&mut self) -> Result<bool> {
        Ok(self.test_status()?.is_some())
    }

    /// [`Request::test`] that also says what a completed receive got (for another request, a
    /// status with no source, as MPI's empty status): `None` while the request is in flight.
    pub fn test_status(&mut self) -> Result<Option<Status>> {
        let id = match self.held {
            Held::Done(status) => return Ok(Some(status)),
            Held::Entry(id) => id,
        };
        if !self.finished() {
            self.core.progress();
        }
        self.core.outcome(id).transpose()
    }

    /// Blocks until this request has completed (advancing the scope's other requests
    /// meanwhile): its result, as the blocking call's.
    pub fn wait(self) -> Result<()> {
        self.wait_status().map(drop)
    }

    /// [`Request::wait`] that also says what a receive got — sender, tag and length, as the
    /// blocking receive's [`Status`] (for another request, a status with no source).
    pub fn wait_status(self) -> Result<Status> {
        let id = match self.held {
            Held::Done(status) => return Ok(status),
            Held::Entry(id) => id,
        };
        self.core.drive(Some(id));
        let out = self.core.take_outcome(id);
        // The entry is gone: nothing for the handle's drop to release.
        std::mem::forget(self);
        out
    }
}

impl Request<'_> {
    /// Whether the request has finished (its result waits to be seen).
    fn finished(&self) -> bool {
        match self.held {
            Held::Done(_) => true,
            Held::Entry(id) => self.core.finished(id),
        }
    }

    /// The outcome of the request, which has finished, marked as seen.
    fn outcome(&self) -> Result<Status> {
        match self.held {
            Held::Done(status) => Ok(status),
            Held::Entry(id) => self
                .core
                .outcome(id)
                .expect("a finished request has its result"),
        }
    }

    /// The request's start number on its communicator (the same on every rank).
    pub(crate) fn start_number(&self) -> u64 {
        let start = match self.held {
            Held::Entry(id) => self.core.start_of(id),
            Held::Done(_) => None,
        };
        start.expect("a collective request")
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if let Held::Entry(id) = self.held {
            self.core.release(id);
        }
    }
}

impl Request<'_> {
    /// Waits for every request of `requests` (in any order) and returns the first error among
    /// them, if one failed.
    pub fn wait_all(requests: impl IntoIterator<Item = Self>) -> Result<()> {
        let mut first = Ok(());
        for r in requests {
            let out = r.wait();
            if first.is_ok() {
                first = out;
            }
        }
        first
    }

    /// Waits until one request of `requests` (requests of one scope) has completed, removes it
    /// and returns its index in `requests` and its result; `None` if `requests` is empty.
    pub fn wait_any(requests: &mut Vec<Self>) -> Option<(usize, Result<()>)> {
        let core = requests.first()?.core;
        loop {
            core.progress();
            if let Some(i) = requests.iter().position(Request::finished) {
                let r = requests.remove(i);
                return Some((i, r.outcome().map(drop)));
            }
            core.wait_for_any(None);
        }
    }
}
