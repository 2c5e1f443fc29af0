//! Persistent collectives among the threads of one process: the call check made once when
//! one is set up (`Comm`'s `*_init`), and the short allreduce that runs folded on slots
//! (`algorithms::allreduce::folded`) instead of as a blocking call per start.

use super::Local;
use crate::algorithms::allreduce::folded;
use crate::algorithms::check::{self, Call};
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::Kind;
use crate::op::Op;
use crate::select::Choice;
use crate::shm::Slots;
use std::rc::Rc;
use std::sync::Arc;

/// A persistent collective as its ranks agree on it: which collective and algorithm, on how
/// many elements of which type, at which root, with which op.
pub(crate) struct Setup<'o, T, A> {
    /// The collective's name, for messages.
    pub op: &'static str,
    /// The collective.
    pub kind: Collective,
    /// The algorithm (its id is compared: blocks are compared by each start's own check).
    pub alg: A,
    /// Elements per rank.
    pub len: usize,
    /// The root of a rooted collective.
    pub root: Option<usize>,
    /// The op of a reducing collective.
    pub combine: Option<Rc<dyn Op<T> + 'o>>,
}

impl Local {
    /// Checks that every rank sets up the same persistent collective `setup`: the check of
    /// every collective, in its dissemination form, so that every rank returns the same
    /// verdict.
    pub(crate) fn agree_setup<T: 'static, A: Choice>(&self, setup: &Setup<'_, T, A>) -> Result<()> {
        self.enter_call(setup.op)?;
        let tag = self.next_tag(Kind::Coll(setup.kind));
        let mut call = Call::of::<T, A>(setup.op, setup.alg, setup.len);
        if let Some(root) = setup.root {
            call = call.at(root);
        }
        if let Some(op) = setup.combine.as_deref() {
            call = call.with_op(&op);
        }
        check::agree(&self.coll(setup.op), tag, &call, true)
    }
}

/// This rank's part of a persistent short allreduce that runs folded on slots
/// (`algorithms::allreduce::folded`): the slots and its last start.
pub(crate) struct Folded {
    slots: Arc<Slots>,
    /// The number of this rank's last start (0: none yet).
    k: u64,
    /// Whether that start has not completed yet.
    in_flight: bool,
}

impl Folded {
    /// Whether a start has not completed yet.
    pub(crate) fn in_flight(&self) -> bool {
        self.in_flight
    }
}

impl Local {
    /// The folded persistent allreduce set up by this communicator's non-blocking start
    /// number `key` (the same on every rank, which all must call this).
    pub(crate) fn folded(&self, key: u64) -> Folded {
        Folded {
            slots: self.member().shared_arc().folded(key),
            k: 0,
            in_flight: false,
        }
    }

    /// Starts `f` with this rank's `buf` (which must fit the slots and have the agreed length).
    #[inline]
    pub(crate) fn fold_start<T: Copy>(&self, f: &mut Folded, buf: &[T]) -> Result<()> {
        self.member().enter("allreduce")?;
        debug_assert!(!f.in_flight && folded::fits::<T>(buf.len()));
        f.k += 1;
        // SAFETY: the slots are this allreduce's, `buf` fits them, and the previous start
        // has completed (`in_flight` is false: `Persistent` starts again only then).
        unsafe { folded::start(self.member(), &f.slots, f.k, buf) };
        f.in_flight = true;
        Ok(())
    }

    /// Whether `f`'s start in flight can complete without waiting; an error if it never can:
    /// the run failed, or a rank it waits for has returned from the run without the start.
    pub(crate) fn fold_ready(&self, f: &Folded) -> Result<bool> {
        let pending = || folded::pending(&f.slots, self.size(), f.k);
        let Some(q) = pending().filter(|_| f.in_flight) else {
            return Ok(true);
        };
        self.member().enter("allreduce")?;
        // Returned, and (looked at after that) still without the start.
        if self.member().returned(q) && pending() == Some(q) {
            let rank = self.rank();
            let op = "allreduce";
            return Err(self.fail(Error::PeerExited { rank, peer: q, op }));
        }
        Ok(false)
    }

    /// Completes `f`'s start in flight, if any, into `buf` (the buffer it started with).
    #[inline]
    pub(crate) fn fold_finish<T: Copy, O: Op<T> + ?Sized>(
        &self,
        f: &mut Folded,
        buf: &mut [T],
        op: &O,
    ) -> Result<()> {
        if !f.in_flight {
            return Ok(());
        }
        f.in_flight = false;
        // SAFETY: this rank started `f.k` with a buffer of `buf`'s length on these slots.
        unsafe { folded::finish(self.member(), &f.slots, f.k, buf, op) }
    }
}
