//! A scope's requests (`scope.rs`), each an entry with its start number and its life
//! (`state.rs`), kept by number; the storage a thread's scopes hand on to the next.

use super::state::Life;
use super::Comm;
use std::cell::Cell;

/// One request of a scope.
pub(super) struct Entry<'scope> {
    /// A collective's start number on the communicator (`None` for point-to-point, which
    /// runs on the communicator itself, at once).
    pub(super) start: Option<u64>,
    /// Where it is in its life (`state.rs`).
    pub(super) state: Life<'scope>,
}

impl Entry<'_> {
    /// Whether advancing the request would let it go on: a look for a posted receive's
    /// message could find it, or resuming a task would (`Life::ready`; a collective's turn
    /// comes when it is the first unfinished start of its shadow: `may_run` of its number).
    pub(super) fn ready(&mut self, comm: &Comm, may_run: impl Fn(u64) -> bool) -> bool {
        if let Some(r) = self.state.recv() {
            return comm.local().posted_arrived(r);
        }
        let start = self.start;
        self.state.ready(|| start.is_none_or(may_run))
    }
}

/// A scope's requests by number; a number is reused once its request is gone, so that a
/// scope that runs many requests (a persistent collective started thousands of times) keeps
/// only those in flight. A thread's scopes hand their storage on, so that a scope opened per
/// exchange allocates nothing in steady state.
#[derive(Default)]
pub(super) struct Entries<'scope> {
    slots: Vec<Option<Entry<'scope>>>,
    free: Vec<usize>,
}

/// Blocked tasks a wait of a scope lists without allocating.
pub(super) const INLINE: usize = 4;

/// The storage of [`Entries`], empty, with the lifetime of its elements erased.
type Spare = (Vec<Option<Entry<'static>>>, Vec<usize>);

thread_local! {
    /// The storage of the last scope this thread closed, for its next.
    static SPARE: Cell<Option<Spare>> = const { Cell::new(None) };
}

impl<'scope> Entries<'scope> {
    /// A scope's requests, in the storage the thread's last scope left, if any.
    pub(super) fn new() -> Self {
        let (slots, free) = SPARE.with(Cell::take).unwrap_or_default();
        debug_assert!(slots.is_empty() && free.is_empty());
        // SAFETY: only the lifetime inside the element type changes (so the layout does
        // not), of a vector that holds no element.
        let slots = unsafe {
            std::mem::transmute::<Vec<Option<Entry<'static>>>, Vec<Option<Entry<'scope>>>>(slots)
        };
        Entries { slots, free }
    }

    /// Drops what is left of a scope's requests (all finished) and keeps the storage for the
    /// thread's next scope.
    pub(super) fn recycle(self) {
        let Entries {
            mut slots,
            mut free,
        } = self;
        slots.clear();
        free.clear();
        // SAFETY: as in `new`: the vector is empty.
        let slots = unsafe {
            std::mem::transmute::<Vec<Option<Entry<'scope>>>, Vec<Option<Entry<'static>>>>(slots)
        };
        SPARE.with(|s| s.set(Some((slots, free))));
    }
}

impl<'scope> Entries<'scope> {
    pub(super) fn insert(&mut self, e: Entry<'scope>) -> usize {
        match self.free.pop() {
            Some(id) => {
                self.slots[id] = Some(e);
                id
            }
            None => {
                self.slots.push(Some(e));
                self.slots.len() - 1
            }
        }
    }

    /// Removes request `id` without handing it back.
    pub(super) fn forget(&mut self, id: usize) {
        self.free.push(id);
        self.slots[id] = None;
    }

    pub(super) fn get(&self, id: usize) -> &Entry<'scope> {
        self.slots[id].as_ref().expect("a live request")
    }

    pub(super) fn get_mut(&mut self, id: usize) -> &mut Entry<'scope> {
        self.slots[id].as_mut().expect("a live request")
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Entry<'scope>> {
        self.slots.iter().flatten()
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Entry<'scope>> {
        self.slots.iter_mut().flatten()
    }

    pub(super) fn iter_mut_with_ids(
        &mut self,
    ) -> impl Iterator<Item = (usize, &mut Entry<'scope>)> {
        self.slots
            .iter_mut()
            .enumerate()
            .filter_map(|(id, e)| Some((id, e.as_mut()?)))
    }
}
