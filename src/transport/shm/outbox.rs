//! The order of a rank's sends to one destination, and the non-blocking sends that wait for
//! their turn or for room.
//!
//! MPI delivers the messages of one sender in the order they were sent. A non-blocking send
//! whose message cannot be posted at once (its destination is several messages behind, or an
//! earlier send to it is still waiting) takes a ticket in the rank's [`Outbox`]: every later
//! send to the same destination, blocking or not, waits until the earlier ones have completed,
//! so that messages to one destination enter its mailbox in the order they were sent.
//!
//! On a team of threads such a send is held by its scope as a [`PostedSend`], not run by a
//! task: each advance of the scope posts it once its turn has come and a cell is free
//! (eagerly, or lent for the receiver to copy from the sender's buffer), and, lent, finds it
//! complete once the receiver has read it.

use super::p2p::Matcher;
use super::{Lent, ShmTransport};
use crate::error::Result;
use crate::mailbox::{Elem, Header, Tag};
use crate::shm::Member;
use crate::transport::wire::header_of;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::marker::PhantomData;

/// A rank's sends on one communicator that wait for their turn to be posted, by destination,
/// in call order (module docs).
#[derive(Default)]
pub(crate) struct Outbox {
    queue: RefCell<VecDeque<(usize, u64)>>,
    tickets: Cell<u64>,
}

impl Outbox {
    /// Whether no send to `dest` is waiting.
    pub(super) fn is_clear_for(&self, dest: usize) -> bool {
        !self.queue.borrow().iter().any(|&(d, _)| d == dest)
    }

    fn enqueue(&self, dest: usize) -> u64 {
        let ticket = self.tickets.get();
        self.tickets.set(ticket + 1);
        self.queue.borrow_mut().push_back((dest, ticket));
        ticket
    }

    /// Whether `ticket` is the first waiting send to `dest`.
    fn is_first(&self, dest: usize, ticket: u64) -> bool {
        self.queue
            .borrow()
            .iter()
            .find(|&&(d, _)| d == dest)
            .map(|&(_, t)| t)
            == Some(ticket)
    }
}

/// Takes a send's ticket out of the outbox when dropped.
struct Dequeue<'a>(&'a Outbox, u64);

impl Drop for Dequeue<'_> {
    fn drop(&mut self) {
        self.0.queue.borrow_mut().retain(|&(_, t)| t != self.1);
    }
}

/// A non-blocking send held by its owner (module docs): its ticket, then its message posted,
/// then, lent, the receiver's read. Dropped before it completed (the run failed), it withdraws
/// a lent message or waits for the receiver's copy to end, as a blocking send does, and gives
/// its ticket back.
pub(crate) struct PostedSend<'m> {
    member: &'m Member,
    dest: usize,
    header: Header,
    /// The caller's `header.len` bytes, readable while this lives (`post_send`'s contract).
    data: *const u8,
    /// Its message in the destination's mailbox once posted as a loan, until released.
    lent: Option<Lent<'m>>,
    /// Whether its message is in the destination's mailbox.
    posted: bool,
    /// Declared after `lent`, so that the ticket goes once the loan is settled.
    ticket: Dequeue<'m>,
    /// The send holds a borrow of bytes, as a slice would (the raw pointer keeps it on the
    /// rank's thread).
    _data: PhantomData<&'m [u8]>,
}

impl<'a> ShmTransport<'a> {
    /// Runs `f`, a send (or a send and receive) to `dest`, in its turn: at once if no earlier
    /// send to `dest` waits and `queue` is false, else after the earlier ones have completed
    /// (a non-blocking send always queues: it may have to wait before it is posted).
    pub(crate) fn in_turn<R>(
        &self,
        m: &Matcher,
        dest: usize,
        queue: bool,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let outbox = &m.outbox;
        if !queue && outbox.is_clear_for(dest) {
            return f();
        }
        let ticket = outbox.enqueue(dest);
        let _dequeue = Dequeue(outbox, ticket);
        if !outbox.is_first(dest, ticket) {
            self.check_rank(dest)?;
            self.wait(&[dest], false, || outbox.is_first(dest, ticket))?;
        }
        f()
    }

    /// A non-blocking send that completes as it starts: an eager message posted at once
    /// because no earlier send to `dest` waits and a cell is free, or a message to the rank
    /// itself that a posted receive takes. Whether it was sent (if not, it runs as a request).
    pub(crate) fn try_send_now<T: Elem>(
        &self,
        m: &Matcher,
        dest: usize,
        tag: u32,
        data: &[T],
    ) -> Result<bool> {
        if !m.outbox.is_clear_for(dest) {
            return Ok(false);
        }
        if dest == self.member.rank() && self.send_to_posted(m, tag, data)? {
            return Ok(true);
        }
        Ok(self.try_send_eager(dest, Tag::p2p(tag), data))
    }

    /// Takes a ticket for a non-blocking send of `data` to `dest` with user tag `tag`, held by
    /// the caller ([`PostedSend`]): [`PostedSend::poll`] posts it in its turn. `None` for a
    /// send to the rank itself or of zero-sized elements, which run as tasks.
    ///
    /// # Safety
    /// The result must be dropped before `data`'s borrow ends (it cannot be forgotten: the
    /// caller keeps it where it is dropped, however the caller ends).
    pub(crate) unsafe fn post_send<T: Elem>(
        &self,
        m: &'a Matcher,
        dest: usize,
        tag: u32,
        data: &[T],
    ) -> Option<PostedSend<'a>> {
        if dest == self.member.rank() || size_of::<T>() == 0 || dest >= self.member.size() {
            return None;
        }
        let ticket = Dequeue(&m.outbox, m.outbox.enqueue(dest));
        Some(PostedSend {
            member: self.member,
            dest,
            header: header_of::<T>(Tag::p2p(tag), data.len()),
            data: data.as_ptr().cast(),
            lent: None,
            posted: false,
            ticket,
            _data: PhantomData,
        })
    }
}

impl<'m> PostedSend<'m> {
    fn transport(&self) -> ShmTransport<'m> {
        ShmTransport::p2p(self.member, "isend")
    }

    /// One look: posts the message if its turn has come and there is room, and whether the
    /// send has completed (posted, and if lent, read by the receiver).
    pub(crate) fn poll(&mut self) -> Result<bool> {
        let t = self.transport();
        if self.member.run().is_aborted() {
            return Err(t.aborted());
        }
        let mb = t.mailbox(self.member.rank(), self.dest);
        if !self.posted {
            if !self.ticket.0.is_first(self.dest, self.ticket.1) {
                return Ok(false);
            }
            // SAFETY: `data` holds `header.len` readable bytes for as long as this lives
            // (`post_send`'s contract), and a loan is settled by its drop (`Lent`).
            let Some((n, is_lent)) = (unsafe { mb.try_post(self.header, self.data) }) else {
                return Ok(false);
            };
            self.posted = true;
            if is_lent {
                self.lent = Some(t.lent(mb, n));
            }
            t.unpark(self.dest);
        }
        if let Some(l) = &mut self.lent {
            if !mb.is_consumed(l.n) {
                return Ok(false);
            }
            l.released = true;
            self.lent = None;
        }
        Ok(true)
    }

    /// Whether [`PostedSend::poll`] could make progress now (or would meet the run's
    /// failure). Only reads.
    pub(crate) fn may_go_on(&self) -> bool {
        let t = self.transport();
        let mb = t.mailbox(self.member.rank(), self.dest);
        let turn = || self.ticket.0.is_first(self.dest, self.ticket.1);
        self.member.run().is_aborted()
            || match &self.lent {
                Some(l) => mb.is_consumed(l.n),
                None => !self.posted && turn() && mb.has_room(self.header.len),
            }
    }

    /// Waits, as a blocking send does, until [`PostedSend::poll`] could make progress or
    /// `also()` holds.
    pub(crate) fn wait(&self, also: &dyn Fn() -> bool) -> Result<()> {
        self.transport()
            .wait(&[self.dest], false, || self.may_go_on() || also())
    }
}
