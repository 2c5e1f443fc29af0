//! The one queue of posted receives, for messages among the threads of a process
//! (`posted.rs`) and for messages from other processes (`process::p2p::posted`).
//!
//! MPI gives an incoming message to the earliest posted receive that accepts it. A queue holds
//! a rank's posted receives in the order they were posted, each with a number; whoever
//! brings a message in *claims* the oldest receive that accepts it (taking it out of the
//! queue, and closing its gate if it has one), fills it, and *records* its outcome, which
//! the receive's owner later takes by number. A receive from any rank of a team that spans
//! processes is posted in two queues, one per kind of message, with one [`Gate`]: the first
//! queue to give it a message closes it, and the other then offers it nothing.
//!
//! What a posting is (its buffer, the check of its element type) is the caller's: a queue
//! asks it only for its number and its gate ([`Posting`]).

use crate::error::Result;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use super::Found;

/// The gate of a receive posted in two queues (module docs): open until one of them gives it
/// a message. Both postings hold it.
#[derive(Clone)]
pub(crate) struct Gate(Rc<Cell<bool>>);

impl Gate {
    /// A gate, open.
    #[cfg(any(all(test, not(loom)), feature = "mpi"))]
    pub(crate) fn open() -> Gate {
        Gate(Rc::new(Cell::new(true)))
    }

    /// Whether no queue has given the receive a message yet.
    pub(crate) fn is_open(&self) -> bool {
        self.0.get()
    }

    /// A queue gives the receive a message: the other must not.
    pub(super) fn close(&self) {
        self.0.set(false);
    }
}

/// What a queue needs of a posted receive.
pub(crate) trait Posting {
    /// Its gate, if it is posted in two queues.
    fn gate(&self) -> Option<&Gate>;
}

/// A rank's posted receives of one kind, oldest first, each with its number, and the outcomes
/// of those that have been matched until their owners take them (module docs).
pub(crate) struct PostedQueue<P> {
    waiting: RefCell<VecDeque<(u64, P)>>,
    matched: RefCell<Vec<(u64, Result<Found>)>>,
    ids: Cell<u64>,
}

impl<P> Default for PostedQueue<P> {
    fn default() -> Self {
        PostedQueue {
            waiting: RefCell::new(VecDeque::new()),
            matched: RefCell::new(Vec::new()),
            ids: Cell::new(0),
        }
    }
}

impl<P: Posting> PostedQueue<P> {
    /// Whether no receive is posted.
    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.borrow().is_empty()
    }

    /// How many receives are posted.
    #[cfg(feature = "mpi")]
    pub(crate) fn len(&self) -> usize {
        self.waiting.borrow().len()
    }

    /// Whether an open posted receive satisfies `takes`.
    pub(crate) fn any(&self, takes: impl Fn(&P) -> bool) -> bool {
        let open = |p: &P| p.gate().is_none_or(Gate::is_open);
        self.waiting
            .borrow()
            .iter()
            .any(|(_, p)| open(p) && takes(p))
    }

    /// Posts receive `p`: its number.
    pub(crate) fn post(&self, p: P) -> u64 {
        let id = self.ids.get();
        self.ids.set(id + 1);
        self.waiting.borrow_mut().push_back((id, p));
        id
    }

    /// The oldest posted receive that `takes` accepts and whose gate is open, with its number,
    /// no longer posted, its gate closed.
    pub(crate) fn claim(&self, takes: impl Fn(&P) -> bool) -> Option<(u64, P)> {
        let mut waiting = self.waiting.borrow_mut();
        let open = |p: &P| p.gate().is_none_or(Gate::is_open);
        let i = waiting.iter().position(|(_, p)| open(p) && takes(p))?;
        // Mostly the oldest, which leaves without moving the others.
        let claimed = if i == 0 {
            waiting.pop_front()
        } else {
            waiting.remove(i)
        }?;
        if let Some(g) = claimed.1.gate() {
            g.close();
        }
        Some(claimed)
    }

    /// Records the outcome of claimed receive `id`, for its owner.
    pub(crate) fn record(&self, id: u64, got: Result<Found>) {
        self.matched.borrow_mut().push((id, got));
    }

    /// The outcome of receive `id`, once, if it has been matched.
    pub(crate) fn take_matched(&self, id: u64) -> Option<Result<Found>> {
        let mut matched = self.matched.borrow_mut();
        let i = matched.iter().position(|(i, _)| *i == id)?;
        Some(matched.swap_remove(i).1)
    }

    /// Whether receive `id` has been matched (its outcome waits for its owner).
    pub(crate) fn is_matched(&self, id: u64) -> bool {
        self.matched.borrow().iter().any(|(i, _)| *i == id)
    }

    /// Withdraws receive `id`, matched or not, with its outcome.
    pub(crate) fn withdraw(&self, id: u64) {
        let mut waiting = self.waiting.borrow_mut();
        if let Some(i) = waiting.iter().position(|(i, _)| *i == id) {
            waiting.remove(i);
        }
        let mut matched = self.matched.borrow_mut();
        if let Some(i) = matched.iter().position(|(i, _)| *i == id) {
            drop(matched.swap_remove(i));
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct P(u32, Option<Gate>);

    impl Posting for P {
        fn gate(&self) -> Option<&Gate> {
            self.1.as_ref()
        }
    }

    #[test]
    fn the_oldest_open_receive_that_takes_a_message_is_claimed() {
        let q = PostedQueue::default();
        let gate = Gate::open();
        let a = q.post(P(1, Some(gate.clone())));
        let b = q.post(P(1, None));
        let c = q.post(P(2, None));
        assert_eq!(q.claim(|p| p.0 == 2).map(|p| p.0), Some(c));
        assert_eq!(q.claim(|p| p.0 == 1).map(|p| p.0), Some(a));
        assert!(!gate.is_open(), "claiming closes the gate");
        q.record(
            a,
            Ok(Found {
                src: 0,
                tag: 1,
                count: 3,
            }),
        );
        assert!(q.is_matched(a));
        assert_eq!(q.take_matched(a).map(|r| r.map(|f| f.count)), Some(Ok(3)));
        assert!(q.take_matched(a).is_none(), "an outcome is taken once");
        q.withdraw(b);
        assert!(q.is_empty());
    }

    #[test]
    fn a_receive_whose_gate_closed_elsewhere_is_passed_over() {
        let q = PostedQueue::default();
        let gate = Gate::open();
        let a = q.post(P(1, Some(gate.clone())));
        gate.close();
        assert!(q.claim(|_| true).is_none());
        q.withdraw(a);
        assert!(q.is_empty());
    }
}
