//! A scope's requests (`scope.rs`), each an entry with its start number and its life
//! (`state.rs`), kept by number.

use super::state::{Body, Life};
use super::Comm;
use smallvec::SmallVec;

/// One request of a scope.
pub(super) struct Entry<'scope> {
    /// A collective's start number on the communicator (`None` for point-to-point, which
    /// runs on the communicator itself, at once).
    pub(super) start: Option<u64>,
    /// Where it is in its life (`state.rs`).
    pub(super) state: Life<'scope>,
}

impl Entry<'_> {
    /// Whether advancing the request would let it go on: what a request that runs without a
    /// task waits for has come ([`Entry::message_came`]), or resuming its task would
    /// (`Life::ready`; a collective's turn comes when it is the first unfinished start of its
    /// shadow: `may_run` of its number).
    pub(super) fn ready(&mut self, comm: &Comm, may_run: impl Fn(u64) -> bool) -> bool {
        if self.state.taskless().is_some() {
            return self.message_came(comm);
        }
        let start = self.start;
        self.state.ready(|| start.is_none_or(may_run))
    }

    /// Whether what a request that runs without a task waits for (on its waiter's stack) has
    /// come: a posted receive's or an exchange's message, a send's turn and room or its
    /// receiver's read.
    pub(super) fn message_came(&self, comm: &Comm) -> bool {
        match self.state.body() {
            Some(Body::Recv(r)) => comm.local().posted_arrived(r),
            Some(Body::Exchange(x)) => x.arrived(),
            Some(Body::Send(s)) => s.may_go_on(),
            Some(Body::Task(_)) | None => false,
        }
    }
}

/// A scope's requests by number; a number is reused once its request is gone, so that a
/// scope that runs many requests (a persistent collective started thousands of times) keeps
/// only those in flight. The first [`INLINE`] live in the scope's frame, so that a scope
/// opened per exchange allocates nothing (in an array rather than a small vector, whose drop
/// the compiler would take to use the buffers the requests borrow).
#[derive(Default)]
pub(super) struct Entries<'scope> {
    inline: [Option<Entry<'scope>>; INLINE],
    more: Vec<Option<Entry<'scope>>>,
    /// How many numbers have been given out (the free ones among them are in `free`).
    used: usize,
    free: SmallVec<[usize; INLINE]>,
}

/// Requests a scope keeps in its frame; also the blocked tasks a wait of a scope lists
/// without allocating.
pub(super) const INLINE: usize = 4;

impl<'scope> Entries<'scope> {
    fn slot(&mut self, id: usize) -> &mut Option<Entry<'scope>> {
        match id.checked_sub(INLINE) {
            None => &mut self.inline[id],
            Some(i) => &mut self.more[i],
        }
    }

    pub(super) fn insert(&mut self, e: Entry<'scope>) -> usize {
        let id = self.free.pop().unwrap_or_else(|| {
            self.used += 1;
            if self.used > INLINE {
                self.more.push(None);
            }
            self.used - 1
        });
        *self.slot(id) = Some(e);
        id
    }

    /// Removes request `id` without handing it back.
    pub(super) fn forget(&mut self, id: usize) {
        self.free.push(id);
        drop(self.slot(id).take());
    }

    pub(super) fn get(&self, id: usize) -> &Entry<'scope> {
        let slot = match id.checked_sub(INLINE) {
            None => &self.inline[id],
            Some(i) => &self.more[i],
        };
        slot.as_ref().expect("a live request")
    }

    pub(super) fn get_mut(&mut self, id: usize) -> &mut Entry<'scope> {
        self.slot(id).as_mut().expect("a live request")
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Entry<'scope>> {
        let used = self.used.min(INLINE);
        self.inline[..used].iter().chain(&self.more).flatten()
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Entry<'scope>> {
        let used = self.used.min(INLINE);
        self.inline[..used]
            .iter_mut()
            .chain(&mut self.more)
            .flatten()
    }

    pub(super) fn iter_mut_with_ids(
        &mut self,
    ) -> impl Iterator<Item = (usize, &mut Entry<'scope>)> {
        let used = self.used.min(INLINE);
        self.inline[..used]
            .iter_mut()
            .chain(&mut self.more)
            .enumerate()
            .filter_map(|(id, e)| Some((id, e.as_mut()?)))
    }
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::*;
    use crate::comm::Status;
    use crate::sync::idle::installed;

    fn done(len: usize) -> Entry<'static> {
        let status = Status {
            len,
            ..Status::NONE
        };
        Entry {
            start: None,
            state: Life::completed(status),
        }
    }

    fn len(entries: &mut Entries<'_>, id: usize) -> usize {
        let outcome = entries.get_mut(id).state.seen();
        outcome.expect("finished").expect("a success").len
    }

    #[test]
    fn entries_beyond_the_frame_keep_their_numbers_and_numbers_are_reused() {
        let mut entries = Entries::default();
        let ids: Vec<usize> = (0..INLINE + 3).map(|i| entries.insert(done(i))).collect();
        assert_eq!(ids, (0..INLINE + 3).collect::<Vec<_>>());
        entries.forget(1);
        entries.forget(INLINE + 1);
        assert_eq!(entries.iter().count(), INLINE + 1);
        assert_eq!(
            entries.insert(done(100)),
            INLINE + 1,
            "the last freed number first"
        );
        assert_eq!(entries.insert(done(101)), 1);
        assert_eq!(len(&mut entries, INLINE + 1), 100);
        assert_eq!(len(&mut entries, 1), 101);
        assert_eq!(len(&mut entries, INLINE + 2), INLINE + 2);
        let ids: Vec<usize> = entries.iter_mut_with_ids().map(|(id, _)| id).collect();
        assert_eq!(ids, (0..INLINE + 3).collect::<Vec<_>>());
    }

    #[test]
    fn a_scope_lists_its_idle_hook_only_once_a_request_is_in_flight() {
        crate::run(2, |comm| {
            let peer = 1 - comm.rank();
            let mut got = [0u8; 1];
            comm.scope(|s| {
                // A send into a free cell completes as it starts: nothing to advance.
                s.isend(peer, &[1u8])?.wait()?;
                assert!(!installed());
                let r = s.irecv(peer, &mut got)?;
                assert!(installed(), "a posted receive is advanced in other waits");
                r.wait()
            })?;
            assert!(!installed(), "the hook goes with its scope");
            Ok::<_, crate::Error>(got[0])
        })
        .expect("the run")
        .into_iter()
        .for_each(|r| assert_eq!(r.expect("the rank"), 1));
    }
}
