//! Receives posted before their message has arrived (non-blocking receives).
//!
//! MPI matches an incoming message with the *earliest posted* receive that accepts it, and
//! delivers the messages of one sender in the order they were sent. A non-blocking receive
//! that finds nothing when it starts therefore stays *posted* ([`Posted`]): whichever
//! receive of the rank looks at a mailbox next — a blocking one, a probe, or another posted
//! receive waiting — first offers each message at the front to the posted receives, oldest
//! first, and copies it into the first that accepts it. A posted receive never accepts a
//! message that was moved aside (it looked at those when it was posted, and a message is
//! moved aside only when no posted receive accepts it), so the messages aside and the posted
//! receives never need to be matched against each other again.
//!

use super::p2p::{Found, Matcher, Want};
use super::queue::{Gate, PostedQueue, Posting};
use super::ShmTransport;
use crate::error::Result;
use crate::mailbox::{Elem, Header, Mailbox, Tag};
use crate::transport::wire::{header_of, payload};

/// How a posted receive's reading function reaches a message's wire bytes: it hands this the
/// function that reads them, which gets their address and returns the count read.
type Fetch<'f> = &'f mut dyn FnMut(&mut dyn FnMut(*const u8) -> Result<usize>) -> Result<usize>;

/// A posted receive's reading function (`take_as` of its element type).
type Take =
    unsafe fn(&ShmTransport<'_>, &Matcher, &Entry, usize, &Header, Fetch<'_>) -> Result<usize>;

/// One posted receive: what it accepts and where its buffer is (erased to bytes, with the
/// function of its element type that checks a message and reads it in, `take_as`), and for a
/// receive posted elsewhere too ([`PostedRecv`]) its gate.
pub(crate) struct Entry {
    want: Want,
    buf: *mut u8,
    len: usize,
    take: Take,
    gate: Option<Gate>,
}

impl Posting for Entry {
    fn gate(&self) -> Option<&Gate> {
        self.gate.as_ref()
    }
}

/// For the posted receive `e` of `T`s and a message from `src` with header `h`: checks the
/// header (type, length) against the receive, then reads the message's wire bytes, which
/// `fetch` hands over, into the buffer, and returns the count received.
///
/// # Safety
/// `e.buf` and `e.len` must be the posted receive's live buffer of `T`s (it is while `e` is
/// posted: [`ShmTransport::recv_posted`]), and `fetch` must hand the message's wire bytes.
unsafe fn take_as<T: Elem>(
    t: &ShmTransport<'_>,
    m: &Matcher,
    e: &Entry,
    src: usize,
    h: &Header,
    fetch: Fetch<'_>,
) -> Result<usize> {
    // SAFETY: per the contract; nothing else uses the buffer while the receive is posted.
    let buf = unsafe { std::slice::from_raw_parts_mut(e.buf.cast::<T>(), e.len) };
    let mut r = t.matching(m, e.want, Some(buf));
    r.check(t, src, h)?;
    // SAFETY: per the contract; the header passed `check`.
    fetch(&mut |p| unsafe { r.read(t, src, h, p) })
}

/// A rank's posted receives on one communicator, oldest first, and the outcomes of those that
/// have been matched until their owners collect them (`queue.rs`).
#[derive(Default)]
pub(crate) struct Posted(PostedQueue<Entry>);

// SAFETY: an entry (with its raw pointer to a buffer, and its gate) exists only during a call
// of `ShmTransport::recv_posted`, or while a `PostedRecv` lives (it borrows the matcher; a
// hybrid team's non-blocking receive makes and drops one within one call, a scope within its
// own life), always on the rank's thread, which borrows the rank's communicator meanwhile; so
// a communicator can move to another thread only while it has no entries, and the pointers
// are never used from another thread.
unsafe impl Send for Posted {}

/// The queue's own steps (withdraw, take and look at outcomes) are used as they are.
impl std::ops::Deref for Posted {
    type Target = PostedQueue<Entry>;

    fn deref(&self) -> &PostedQueue<Entry> {
        &self.0
    }
}

impl Posted {
    /// Posts a receive of `want` into `buf`, free while `gate` (if any) is open; its number.
    ///
    /// # Safety
    /// The entry keeps a pointer to `buf`: it must be withdrawn (`Posted::withdraw`) before
    /// `buf`'s borrow ends, and `buf` left alone until then except by whoever closes the gate.
    unsafe fn post<T: Elem>(&self, want: Want, buf: &mut [T], gate: Option<Gate>) -> u64 {
        self.0.post(Entry {
            want,
            buf: buf.as_mut_ptr().cast(),
            len: buf.len(),
            take: take_as::<T>,
            gate,
        })
    }

    /// Whether an open posted receive accepts a message from `src` with header `h`.
    fn accepts(&self, src: usize, h: &Header) -> bool {
        self.0.any(|e| e.want.accepts(src, h))
    }

    /// The oldest open posted receive that takes a message from `src` with header `h`, with
    /// its number, no longer posted (and its gate closed).
    fn claim(&self, src: usize, h: &Header) -> Option<(u64, Entry)> {
        self.0.claim(|e| e.want.accepts(src, h))
    }

    /// Reads a message (from `src`, header `h`) into the claimed receive `(id, e)` through `take`,
    /// which hands the reading function the message's wire bytes, and records the outcome for
    /// the receive's owner — unless the receive is `mine` (the caller's), whose outcome is
    /// returned instead. A message the receive cannot take (another type, too long) is its
    /// error and the run's.
    fn deliver(
        &self,
        t: &ShmTransport<'_>,
        m: &Matcher,
        (id, e): (u64, Entry),
        (src, h): (usize, &Header),
        mine: Option<u64>,
        take: impl FnOnce(&mut dyn FnMut(*const u8) -> Result<usize>) -> Result<usize>,
    ) -> Result<Offered> {
        let mut take = Some(take);
        let mut fetch = |read: &mut dyn FnMut(*const u8) -> Result<usize>| {
            take.take().expect("a message is fetched once")(read)
        };
        // SAFETY: `e` was posted until just now, so its buffer is live and unused (`post`'s
        // contract); `take` hands `read` the message's wire bytes.
        let got = unsafe { (e.take)(t, m, &e, src, h, &mut fetch) }.map(|n| Found {
            src,
            tag: Tag::user_tag(h.tag),
            count: n,
        });
        if mine == Some(id) {
            return got.map(Offered::Mine);
        }
        let failed = got.as_ref().err().cloned();
        self.0.record(id, got);
        failed.map_or(Ok(Offered::Taken), Err)
    }

    /// Offers the message at the front of `mb` (from `src`, header `h`) to the posted
    /// receives: the oldest that accepts it takes it (its outcome returned if it is `mine`).
    pub(super) fn offer(
        &self,
        t: &ShmTransport<'_>,
        m: &Matcher,
        (mb, src, h): (&Mailbox, usize, &Header),
        mine: Option<u64>,
    ) -> Result<Offered> {
        if self.is_empty() {
            return Ok(Offered::Declined);
        }
        let Some(e) = self.claim(src, h) else {
            return Ok(Offered::Declined);
        };
        self.deliver(t, m, e, (src, h), mine, |read| {
            t.take_from(mb, src, read)?
        })
    }
}

/// What became of a message offered to the posted receives.
pub(super) enum Offered {
    /// None accepts it.
    Declined,
    /// A posted receive took it; its outcome waits for its owner.
    Taken,
    /// The caller's own posted receive took it, with this outcome.
    Mine(Found),
}

impl Matcher {
    /// Takes the message at the front of `mb` (from `src`, header `h`) off the mailbox: into
    /// the oldest posted receive that accepts it, else aside for a later receive (`Declined`).
    fn place_front(
        &self,
        t: &ShmTransport<'_>,
        (mb, src, h): (&Mailbox, usize, &Header),
        mine: Option<u64>,
    ) -> Result<Offered> {
        let offered = self.posted.offer(t, self, (mb, src, h), mine)?;
        if let Offered::Declined = offered {
            self.set_aside(t, mb, src, h)?;
        }
        Ok(offered)
    }
}

/// Withdraws a posted receive when dropped: when it returns, fails or unwinds.
struct Withdraw<'a>(&'a Posted, u64);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.0.withdraw(self.1);
    }
}

/// A posted receive waiting for its message, as the engine drives it: it looks at the
/// mailboxes of the ranks it accepts and hands each message there to the oldest posted
/// receive that accepts it (moving aside those none accepts), until its own is matched.
struct Waiting<'m> {
    m: &'m Matcher,
    id: u64,
    want: Want,
}

impl super::engine::Receive for Waiting<'_> {
    type Out = Found;

    fn source(&self) -> Option<usize> {
        self.want.src
    }

    fn poll(&mut self, t: &ShmTransport<'_>) -> Result<Option<Found>> {
        let posted = &self.m.posted;
        if let Some(got) = posted.take_matched(self.id) {
            return got.map(Some);
        }
        let me = t.member.rank();
        for src in self.m.sources(&self.want, t.member.size()) {
            let Some(mb) = t.mailbox_if_made(src, me) else {
                continue;
            };
            while let Some(h) = mb.front() {
                match self.m.place_front(t, (mb, src, &h), Some(self.id))? {
                    Offered::Mine(found) => return Ok(Some(found)),
                    Offered::Taken | Offered::Declined => {}
                }
            }
        }
        Ok(None)
    }

    fn arrived(&self, t: &ShmTransport<'_>) -> bool {
        let me = t.member.rank();
        self.m.posted.is_matched(self.id)
            || self.m.sources(&self.want, t.member.size()).any(|src| {
                t.mailbox_if_made(src, me)
                    .is_some_and(|mb| mb.front().is_some())
            })
    }
}

/// A receive posted here and held by its owner rather than by a waiting call: a scope's
/// non-blocking receive, which waits where its scope is advanced
/// ([`ShmTransport::post_recv`]), or a receive that waits elsewhere too — from any rank of a
/// team whose ranks span processes, which other processes' messages may also match. The latter
/// is matched by the first of the two places to offer it a message; its gate (shared with the
/// other place's posting) closes when either does, after which the other offers it nothing.
/// Withdrawn when dropped.
pub(crate) struct PostedRecv<'m> {
    m: &'m Matcher,
    id: u64,
    want: Want,
}

impl PostedRecv<'_> {
    /// The receive as the engine drives it.
    fn waiting(&self) -> Waiting<'_> {
        Waiting {
            m: self.m,
            id: self.id,
            want: self.want,
        }
    }
}

/// A posted receive's wait that also ends when `also()` holds ([`ShmTransport::wait_posted`]).
struct Until<'m, 'a> {
    waiting: Waiting<'m>,
    also: &'a dyn Fn() -> bool,
}

impl super::engine::Receive for Until<'_, '_> {
    type Out = Option<Found>;

    fn source(&self) -> Option<usize> {
        self.waiting.source()
    }

    fn poll(&mut self, t: &ShmTransport<'_>) -> Result<Option<Option<Found>>> {
        if let Some(found) = self.waiting.poll(t)? {
            return Ok(Some(Some(found)));
        }
        Ok((self.also)().then_some(None))
    }

    fn arrived(&self, t: &ShmTransport<'_>) -> bool {
        self.waiting.arrived(t) || (self.also)()
    }
}

impl Drop for PostedRecv<'_> {
    fn drop(&mut self) {
        self.m.posted.withdraw(self.id);
    }
}

impl ShmTransport<'_> {
    /// Receives into `buf` the first message `want` accepts, as a non-blocking receive: takes
    /// it if it has arrived, else posts the receive, so that it is matched before any receive
    /// the rank makes later, and waits for its message.
    pub(crate) fn recv_posted<T: Elem>(
        &self,
        m: &Matcher,
        want: Want,
        buf: &mut [T],
    ) -> Result<Found> {
        if let Some(found) = self.poll_once(self.matching(m, want, Some(&mut *buf)))? {
            return Ok(found);
        }
        // SAFETY: `Withdraw` withdraws the receive when this function returns or unwinds,
        // before `buf`'s borrow ends; it is a local nothing can forget, and the rank touches
        // `buf` only through the entry until then.
        let id = unsafe { m.posted.post(want, buf, None) };
        let _withdraw = Withdraw(&m.posted, id);
        let got = self.exchange(None, Some(Waiting { m, id, want }))?;
        Ok(got.expect("a completed receive"))
    }

    /// Posts a receive of `want` into `buf`, held by the caller ([`PostedRecv`]), as the
    /// oldest receive of the rank from now on: [`ShmTransport::poll_posted`] looks for its
    /// message, [`ShmTransport::wait_posted`] waits for it.
    ///
    /// # Safety
    /// The returned value must be dropped before `buf`'s borrow ends (it cannot be forgotten:
    /// the caller keeps it where it is dropped, however the caller ends), and `buf` left alone
    /// until then.
    pub(crate) unsafe fn post_recv<'m, T: Elem>(
        &self,
        m: &'m Matcher,
        want: Want,
        buf: &mut [T],
    ) -> PostedRecv<'m> {
        // SAFETY: per the contract.
        let id = unsafe { m.posted.post(want, buf, None) };
        PostedRecv { m, id, want }
    }

    /// Posts a receive of `want` into `buf` that another matcher may fill instead
    /// ([`PostedRecv`]), as the oldest receive of the rank from now on.
    ///
    /// # Safety
    /// The returned value must be dropped before `buf`'s borrow ends (it cannot be forgotten:
    /// the caller keeps it in its frame), and `buf` left alone until then except by the other
    /// matcher after it has closed `gate`.
    #[cfg(any(all(test, not(loom)), feature = "mpi"))]
    pub(crate) unsafe fn post_shared<'m, T: Elem>(
        &self,
        m: &'m Matcher,
        want: Want,
        buf: &mut [T],
        gate: &Gate,
    ) -> PostedRecv<'m> {
        // SAFETY: per the contract.
        let id = unsafe { m.posted.post(want, buf, Some(gate.clone())) };
        PostedRecv { m, id, want }
    }

    /// One look for a message for posted receive `r` (handing the messages at the fronts of
    /// its sources' mailboxes to the oldest posted receives that accept them): its outcome,
    /// if it has been matched here.
    pub(crate) fn poll_posted(&self, r: &PostedRecv<'_>) -> Result<Option<Found>> {
        if self.member.run().is_aborted() {
            return Err(self.aborted());
        }
        super::engine::Receive::poll(&mut r.waiting(), self)
    }

    /// Whether a look for posted receive `r`'s message ([`ShmTransport::poll_posted`]) could
    /// find it: it has been matched, or a message waits at the front of one of its sources'
    /// mailboxes. Only reads.
    pub(crate) fn posted_arrived(&self, r: &PostedRecv<'_>) -> bool {
        super::engine::Receive::arrived(&r.waiting(), self)
    }

    /// Waits, as a blocking receive does (spin, then park; the run's failure, the team's
    /// timeout and the deadlock watch end it with an error), until posted receive `r` has its
    /// message (`Some`) or `also()` holds (`None`): a condition that the rank's parker
    /// announces, as its other requests' are.
    pub(crate) fn wait_posted(
        &self,
        r: &PostedRecv<'_>,
        also: &dyn Fn() -> bool,
    ) -> Result<Option<Found>> {
        let until = Until {
            waiting: r.waiting(),
            also,
        };
        Ok(self.exchange(None, Some(until))?.flatten())
    }

    /// Sends `data` to this rank itself: straight into the oldest posted receive that accepts
    /// it, once the messages this rank sent itself earlier have been matched or moved aside
    /// (so that a blocking or rendezvous send to oneself completes against a posted receive);
    /// `false` if no posted receive accepts it.
    pub(crate) fn send_to_posted<T: Elem>(
        &self,
        m: &Matcher,
        tag: u32,
        data: &[T],
    ) -> Result<bool> {
        let me = self.member.rank();
        let h = header_of::<T>(Tag::p2p(tag), data.len());
        if m.posted.is_empty() || !m.posted.accepts(me, &h) || self.member.run().is_aborted() {
            return Ok(false);
        }
        if let Some(mb) = self.mailbox_if_made(me, me) {
            while let Some(h) = mb.front() {
                m.place_front(self, (mb, me, &h), None)?;
            }
        }
        let Some(e) = m.posted.claim(me, &h) else {
            return Ok(false);
        };
        let count = data.len() as u64;
        let (p, _) = payload(data, &count);
        m.posted
            .deliver(self, m, e, (me, &h), None, |read| read(p))?;
        Ok(true)
    }
}
