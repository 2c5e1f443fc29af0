//! A communicator's shadows (`docs/nonblocking.md`): communicators over the same ranks with
//! mailboxes and a board of their own (`CommShared::shadow`), on which its non-blocking
//! collectives run, so that their messages never meet those of the blocking calls or of
//! other requests. The n-th start of every rank runs on shadow n mod `SHADOWS` (MPI's rule:
//! every rank starts its non-blocking collectives in the same order), and on each rank a
//! shadow runs its requests one after the other, in start order ([`Shadows`]).

use super::{Comm, Span};
use crate::error::Result;
use crate::shm::SHADOWS;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::VecDeque;

/// A communicator's shadows and the order in which this rank runs its requests on them.
#[derive(Default)]
pub(crate) struct Shadows {
    /// Non-blocking collectives started on the communicator by this rank.
    starts: Cell<u64>,
    /// Per shadow, the start numbers of this rank's requests on it not yet finished, in start
    /// order: the first runs, the others wait for it.
    queues: RefCell<[VecDeque<u64>; SHADOWS]>,
    /// This rank's communicator of each shadow, made on first use.
    comms: OnceCell<Box<[OnceCell<Comm>]>>,
}

impl Shadows {
    /// The number the next start will have.
    pub(super) fn next(&self) -> u64 {
        self.starts.get()
    }

    /// Whether the next start would run at once: no earlier start on its shadow is unfinished.
    pub(super) fn next_runs_at_once(&self) -> bool {
        self.queues.borrow()[shadow_of(self.starts.get())].is_empty()
    }

    /// A new start: its number, queued on its shadow.
    pub(super) fn start(&self) -> u64 {
        let n = self.starts.get();
        self.starts.set(n + 1);
        self.queues.borrow_mut()[shadow_of(n)].push_back(n);
        n
    }

    /// Whether start `n` is the first unfinished one of its shadow.
    pub(super) fn may_run(&self, n: u64) -> bool {
        self.queues.borrow()[shadow_of(n)].front() == Some(&n)
    }

    /// Start `n` has finished: the next of its shadow may run.
    pub(super) fn finished(&self, n: u64) {
        let mut queues = self.queues.borrow_mut();
        let queue = &mut queues[shadow_of(n)];
        debug_assert_eq!(queue.front(), Some(&n));
        queue.pop_front();
    }
}

fn shadow_of(n: u64) -> usize {
    (n % SHADOWS as u64) as usize
}

impl Comm {
    /// Agrees the setup of a persistent collective between the ranks (on the shadow this
    /// communicator is, in its place among the scope's requests).
    pub(super) fn agree_setup<T: 'static, A: crate::select::Choice>(
        &self,
        setup: &crate::local::persistent::Setup<'_, T, A>,
    ) -> Result<()> {
        match &self.span {
            Span::Threads(l) => l.agree_setup(setup),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.agree_setup(setup),
        }
    }

    /// This rank's communicator of the shadow of start `n`.
    pub(super) fn shadow_of(&self, n: u64) -> Result<&Comm> {
        self.shadow(shadow_of(n))
    }

    /// This rank's communicator of shadow `k`: of its process's threads, and on a communicator
    /// that spans processes, of the leaders' shadow `k` between them (`process::shadows`).
    fn shadow(&self, k: usize) -> Result<&Comm> {
        let comms = self
            .shadows
            .comms
            .get_or_init(|| (0..SHADOWS).map(|_| OnceCell::new()).collect());
        if let Some(c) = comms[k].get() {
            return Ok(c);
        }
        let shadow = match &self.span {
            Span::Threads(l) => Comm::threads(l.shadow(k)),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => Comm::processes(b.shadow(k).map_err(|e| self.fail(e))?),
        };
        Ok(comms[k].get_or_init(|| shadow))
    }
}
