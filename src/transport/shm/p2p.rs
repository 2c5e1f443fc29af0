//! User point-to-point with MPI's matching: a receive takes the first message that comes from
//! its source and carries its tag, either of which may be "any"; messages of one sender and
//! tag are received in the order they were sent.
//!
//! Each directed edge's mailbox is a FIFO, so a receive that wants another tag than the one at
//! the front of its source's mailbox moves the front message aside first: it copies it into the
//! receiver's list of unexpected messages (the [`Matcher`], one per rank and communicator) and
//! releases the cell, which also completes a rendezvous send waiting for it (MPI lets a send
//! complete once its message is buffered). A receive looks at that list before the mailboxes,
//! which keeps the order per sender and tag. The usual case — nothing aside, a named source and
//! tag, the expected message at the front — reads the message straight from the mailbox or the
//! sender's lent slice, as the collectives do.
//!
//! A receive accepts a message of at most its buffer's length (MPI's rule: a longer one is a
//! truncation error) of its own element type; what it got is in the returned [`Found`].

use super::engine::Receive;
use super::outbox::Outbox;
use super::posted::{Offered, Posted};
use super::ShmTransport;
use crate::error::{Error, Result};
use crate::mailbox::{fingerprint_size, names, type_fingerprint, Elem, Header, Mailbox, Tag};
use crate::transport::wire::{copy_in, header_of, outgoing};
use crate::transport::Transport;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::mem::{size_of, size_of_val};

/// What a receive or a probe accepts: the sender and the tag, each `None` for any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Want {
    /// The sender, or `None` for any rank.
    pub src: Option<usize>,
    /// The tag, or `None` for any tag.
    pub tag: Option<u32>,
}

impl Want {
    pub(super) fn accepts(&self, src: usize, h: &Header) -> bool {
        self.src.is_none_or(|s| s == src) && self.tag.is_none_or(|t| t == Tag::user_tag(h.tag))
    }
}

/// What a receive or a probe found: the sender, the tag and the number of elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    /// The sender.
    pub src: usize,
    /// The message's tag.
    pub tag: u32,
    /// Its length in elements.
    pub count: usize,
}

/// A message moved aside by a receive that wanted another: its sender, header and bytes.
struct Aside {
    src: usize,
    header: Header,
    bytes: Box<[u8]>,
}

/// One rank's matching state on one communicator's point-to-point stream: its unexpected
/// messages in the order they were moved aside, its posted receives (non-blocking ones that
/// wait for their message, `posted`), its sends that wait for their turn to be posted, and
/// where the next receive from any rank starts looking (so that no sender is always looked
/// at last).
#[derive(Default)]
pub(crate) struct Matcher {
    aside: RefCell<VecDeque<Aside>>,
    pub(super) posted: Posted,
    pub(crate) outbox: Outbox,
    next: Cell<usize>,
}

impl std::fmt::Debug for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Matcher")
            .field("aside", &self.aside.borrow().len())
            .finish()
    }
}

impl Matcher {
    /// Whether nothing stands between a receive and the mailboxes: no message moved aside and
    /// no receive posted earlier (the receive fast path's condition).
    /// The ranks a receive of `want` looks at, in order, among `p`.
    pub(super) fn sources(&self, want: &Want, p: usize) -> impl Iterator<Item = usize> {
        let (first, n) = match want.src {
            Some(s) => (s, 1),
            None => (self.next.get() % p.max(1), p),
        };
        (0..n).map(move |k| (first + k) % p.max(1))
    }

    fn is_clear(&self) -> bool {
        self.aside.borrow().is_empty() && self.posted.is_empty()
    }

    /// Moves the message at the front of `mb` (from `src`, header `h`) aside, which releases
    /// its cell (and completes a rendezvous send waiting for it).
    pub(super) fn set_aside(
        &self,
        t: &ShmTransport<'_>,
        mb: &Mailbox,
        src: usize,
        h: &Header,
    ) -> Result<()> {
        let bytes = t.take_from(mb, src, |p| {
            // SAFETY: `take` hands `h.len` readable bytes.
            unsafe { std::slice::from_raw_parts(p, h.len) }.into()
        })?;
        self.aside.borrow_mut().push_back(Aside {
            src,
            header: *h,
            bytes,
        });
        Ok(())
    }
}

/// The count in the wire bytes at `p` of a message with header `h` of elements of `T` (whose
/// type the caller has checked): a zero-sized type's count travels as the payload.
///
/// # Safety
/// `p` must point to the message's `h.len` readable bytes.
unsafe fn count_at<T>(p: *const u8, h: &Header) -> usize {
    if size_of::<T>() == 0 {
        // SAFETY: a zero-sized element type's payload is its count, one u64 (`wire_len`).
        unsafe { p.cast::<u64>().read_unaligned() as usize }
    } else {
        h.len / size_of::<T>()
    }
}

/// A receive (into `buf`) or a probe (`buf` is `None`) driven by the engine.
pub(super) struct Matching<'m, 'b, T> {
    matcher: &'m Matcher,
    want: Want,
    buf: Option<&'b mut [T]>,
    elem: PhantomData<fn() -> T>,
}

impl<T: Elem> Matching<'_, '_, T> {
    /// The ranks to look at, in order.
    fn sources(&self, p: usize) -> impl Iterator<Item = usize> {
        self.matcher.sources(&self.want, p)
    }

    /// The error for a message from `src` that this call matched but cannot take: another
    /// element type, or more elements than the buffer holds.
    fn wrong(&self, t: &ShmTransport<'_>, src: usize, h: &Header, count: Option<usize>) -> Error {
        let size = fingerprint_size(h.typ);
        let count = count.or_else(|| (size != 0).then(|| h.len / size));
        t.fail(names::p2p_mismatch::<T>(
            (t.member.rank(), src, t.op),
            Tag::user_tag(h.tag),
            self.buf.as_ref().map(|b| b.len()),
            h.typ,
            count,
        ))
    }

    /// Checks the header of a matched message before reading it: the element type and, for
    /// a sized one, the length.
    pub(super) fn check(&self, t: &ShmTransport<'_>, src: usize, h: &Header) -> Result<()> {
        if h.typ != type_fingerprint::<T>() {
            return Err(self.wrong(t, src, h, None));
        }
        if let Some(b) = &self.buf {
            if size_of::<T>() != 0 && h.len > size_of_val(*b) {
                return Err(self.wrong(t, src, h, None));
            }
        }
        Ok(())
    }

    /// Reads a matched, checked message at `p` into the buffer; the count received.
    ///
    /// # Safety
    /// `p` must point to the `h.len` wire bytes of a message of `T`s whose header passed
    /// [`Matching::check`].
    pub(super) unsafe fn read(
        &mut self,
        t: &ShmTransport<'_>,
        src: usize,
        h: &Header,
        p: *const u8,
    ) -> Result<usize> {
        // SAFETY: per the contract.
        let n = unsafe { count_at::<T>(p, h) };
        let buf = self.buf.as_deref_mut().expect("a receive has a buffer");
        if n > buf.len() {
            return Err(self.wrong(t, src, h, Some(n)));
        }
        // SAFETY: the header matched `T`, and `n` elements fit; for a zero-sized `T` this
        // reads the count again.
        unsafe { copy_in(p, &mut buf[..n]) };
        Ok(n)
    }

    /// Takes (a probe: reports) the first message moved aside that this call accepts.
    fn take_aside(&mut self, t: &ShmTransport<'_>) -> Result<Option<Found>> {
        let mut aside = self.matcher.aside.borrow_mut();
        let Some(i) = aside
            .iter()
            .position(|a| self.want.accepts(a.src, &a.header))
        else {
            return Ok(None);
        };
        let (src, h) = (aside[i].src, aside[i].header);
        self.check(t, src, &h)?;
        let count = if self.buf.is_none() {
            // SAFETY: the bytes are the message's whole wire form.
            unsafe { count_at::<T>(aside[i].bytes.as_ptr(), &h) }
        } else {
            let a = aside.remove(i).expect("found above");
            drop(aside);
            // SAFETY: as above; the header passed `check`.
            unsafe { self.read(t, src, &h, a.bytes.as_ptr())? }
        };
        Ok(Some(self.found(src, &h, count)))
    }

    fn found(&self, src: usize, h: &Header, count: usize) -> Found {
        self.matcher.next.set(src + 1);
        Found {
            src,
            tag: Tag::user_tag(h.tag),
            count,
        }
    }
}

impl<T: Elem> Receive for Matching<'_, '_, T> {
    type Out = Found;

    fn source(&self) -> Option<usize> {
        self.want.src
    }

    fn poll(&mut self, t: &ShmTransport<'_>) -> Result<Option<Found>> {
        // Messages moved aside came before anything still in the mailboxes.
        if let Some(found) = self.take_aside(t)? {
            return Ok(Some(found));
        }
        let me = t.member.rank();
        for src in self.sources(t.member.size()) {
            let Some(mb) = t.mailbox_if_made(src, me) else {
                continue;
            };
            while let Some(h) = mb.front() {
                // A receive posted earlier takes the message first.
                let offered = self
                    .matcher
                    .posted
                    .offer(t, self.matcher, (mb, src, &h), None)?;
                if let Offered::Taken = offered {
                    continue;
                }
                if self.want.accepts(src, &h) {
                    self.check(t, src, &h)?;
                    if self.buf.is_some() {
                        // SAFETY: `take` hands the message's wire bytes; the header passed
                        // `check`.
                        let n = t.take_from(mb, src, |p| unsafe { self.read(t, src, &h, p) })??;
                        return Ok(Some(self.found(src, &h, n)));
                    }
                    if size_of::<T>() != 0 {
                        return Ok(Some(self.found(src, &h, h.len / size_of::<T>())));
                    }
                    // A probe of zero-sized elements needs the count in the payload: move
                    // the message aside and report it from there.
                }
                self.matcher.set_aside(t, mb, src, &h)?;
                if self.buf.is_none() && self.want.accepts(src, &h) {
                    let aside = self.matcher.aside.borrow();
                    let a = aside.back().expect("just moved aside");
                    // SAFETY: the whole wire form.
                    let count = unsafe { count_at::<T>(a.bytes.as_ptr(), &h) };
                    return Ok(Some(self.found(src, &h, count)));
                }
            }
        }
        Ok(None)
    }

    fn self_message_pending(&self, t: &ShmTransport<'_>) -> bool {
        !self.matcher.outbox.is_clear_for(t.member.rank())
    }

    fn arrived(&self, t: &ShmTransport<'_>) -> bool {
        let me = t.member.rank();
        self.sources(t.member.size()).any(|src| {
            t.mailbox_if_made(src, me)
                .is_some_and(|mb| mb.front().is_some())
        })
    }
}

impl ShmTransport<'_> {
    pub(super) fn matching<'m, 'b, T>(
        &self,
        m: &'m Matcher,
        want: Want,
        buf: Option<&'b mut [T]>,
    ) -> Matching<'m, 'b, T> {
        Matching {
            matcher: m,
            want,
            buf,
            elem: PhantomData,
        }
    }

    /// Receives into `buf` the first message that `want` accepts (blocking), through this
    /// rank's unexpected messages `m`. The fast path is the collectives' (`recv_fast`): nothing
    /// aside, a named sender and tag, and the message at the front of its mailbox filling the
    /// buffer.
    #[inline]
    pub(crate) fn recv_matching<T: Elem>(
        &self,
        m: &Matcher,
        want: Want,
        buf: &mut [T],
    ) -> Result<Found> {
        if let (Some(src), Some(tag), true) = (want.src, want.tag, m.is_clear()) {
            let n = buf.len();
            let expect = header_of::<T>(Tag::p2p(tag), n);
            // SAFETY: the header matched: the bytes are `n` `T`s' wire form.
            let fast = self.recv_fast::<T, _, _>(src, expect, |p| unsafe { copy_in(p, buf) })?;
            if fast.is_ok() {
                return Ok(Found { src, tag, count: n });
            }
        }
        self.recv_matching_slow(m, want, buf)
    }

    /// [`ShmTransport::recv_matching`] through the engine.
    #[inline(never)]
    fn recv_matching_slow<T: Elem>(&self, m: &Matcher, want: Want, buf: &mut [T]) -> Result<Found> {
        let got = self.exchange(None, Some(self.matching(m, want, Some(buf))))?;
        Ok(got.expect("a completed receive"))
    }

    /// Sends `data` to `dest` with tag `tag` and receives into `buf` the first message `want`
    /// accepts, in one call that cannot deadlock against a matching one.
    pub(crate) fn sendrecv_matching<T: Elem>(
        &self,
        m: &Matcher,
        (dest, tag, data): (usize, u32, &[T]),
        want: Want,
        buf: &mut [T],
    ) -> Result<Found> {
        let tag = Tag::p2p(tag);
        if self.try_send_eager(dest, tag, data) {
            return self.recv_matching(m, want, buf);
        }
        let count = data.len() as u64;
        let out = outgoing(dest, tag, data, &count);
        let got = self.exchange(Some(out), Some(self.matching(m, want, Some(buf))))?;
        Ok(got.expect("a completed receive"))
    }

    /// Reports the first message `want` accepts without receiving it: waits for one if
    /// `block`, else looks once (`None`: nothing yet).
    pub(crate) fn probe<T: Elem>(
        &self,
        m: &Matcher,
        want: Want,
        block: bool,
    ) -> Result<Option<Found>> {
        let probe = self.matching::<T>(m, want, None);
        if block {
            return self.exchange(None, Some(probe));
        }
        self.poll_once(probe)
    }

    /// Receives into `buf` the first message `want` accepts if one has arrived, without
    /// waiting (`None`: nothing yet).
    #[cfg(feature = "mpi")]
    pub(crate) fn try_recv_matching<T: Elem>(
        &self,
        m: &Matcher,
        want: Want,
        buf: &mut [T],
    ) -> Result<Option<Found>> {
        self.poll_once(self.matching(m, want, Some(buf)))
    }

    /// Receives into `buf` the first message `want` accepts among those moved aside, without
    /// looking at the mailboxes (`None`: none there). A non-blocking receive's start: a
    /// message still in a mailbox is left to the posted receive's first look, so that the
    /// start reads no cache line a peer may be writing, which would delay the rank's next send
    /// by a transfer of that line.
    pub(crate) fn try_recv_aside<T: Elem>(
        &self,
        m: &Matcher,
        want: Want,
        buf: &mut [T],
    ) -> Result<Option<Found>> {
        self.matching(m, want, Some(buf)).take_aside(self)
    }

    /// One look for what `r` wants, as the engine's first round would take it.
    pub(super) fn poll_once<T: Elem>(&self, mut r: Matching<'_, '_, T>) -> Result<Option<Found>> {
        if self.member.run().is_aborted() {
            return Err(self.aborted());
        }
        if let Some(src) = r.want.src {
            self.check_rank(src)?;
        }
        r.poll(self)
    }
}
