//! The fast paths of the shared-memory transport: an eager send that finds a free cell, and a
//! receive whose message is the expected one; and [`ShmTransport::typed`], the way into the
//! engine for everything else.

use super::{header_of, outgoing, reduce_in, Incoming, ShmTransport};
use crate::error::Result;
use crate::mailbox::{Elem, Header, Mailbox, Tag, EAGER_MAX};
use std::mem::{size_of, size_of_val};

impl ShmTransport<'_> {
    /// The mailbox from `src` to `dst` if the fast paths may use it: the run has not failed
    /// and both ranks exist (otherwise the general path reports why).
    #[inline]
    fn fast_mailbox(&self, src: usize, dst: usize) -> Option<&Mailbox> {
        let size = self.member.size();
        (src < size && dst < size && !self.member.run().is_aborted())
            .then(|| self.mailbox(src, dst))
    }

    /// Sends `send` (if any) and receives `n` elements through `read` (if any); checks the
    /// received count, which differs from `n` only for zero-sized elements.
    pub(super) fn typed<T: Elem>(
        &self,
        send: Option<(usize, Tag, &[T])>,
        recv: Option<(usize, Tag, usize)>,
        read: impl FnOnce(*const u8) -> usize,
    ) -> Result<()> {
        let count = send.map_or(0, |(_, _, d)| d.len() as u64);
        let out = send.map(|(dest, tag, data)| outgoing(dest, tag, data, &count));
        let inc = recv.map(|(src, tag, n)| Incoming::<T, _> {
            src,
            expect: header_of::<T>(tag, n),
            read: Some(read),
            elem: std::marker::PhantomData,
        });
        let got = self.exchange(out, inc)?;
        if let (Some(got), Some((src, tag, n))) = (got, recv) {
            if got != n {
                return Err(self.zero_sized_mismatch::<T>(src, tag, n, got));
            }
        }
        Ok(())
    }

    /// Fast path of every send: posts `data` if it is eager and a cell is free — copy,
    /// publish, wake — and returns whether it did (if not, the general path takes over).
    #[inline]
    pub(crate) fn try_send_eager<T: Elem>(&self, dest: usize, tag: Tag, data: &[T]) -> bool {
        if size_of::<T>() == 0 || size_of_val(data) > EAGER_MAX {
            return false;
        }
        let Some(mb) = self.fast_mailbox(self.member.rank(), dest) else {
            return false;
        };
        let header = header_of::<T>(tag, data.len());
        // SAFETY: `data` is readable for `header.len` bytes, and an eager payload is copied
        // before `try_post` returns (it is never lent).
        let posted = unsafe { mb.try_post(header, data.as_ptr().cast()) }.is_some();
        if posted {
            self.unpark(dest);
        }
        posted
    }

    /// Whether an eager message of `bytes` bytes to `dest` would be posted at once: it is
    /// eager and a cell is free (only this rank posts to `dest`, so the room stays until it
    /// does), and the run has not failed.
    pub(crate) fn eager_room(&self, dest: usize, bytes: usize) -> bool {
        bytes <= EAGER_MAX
            && self
                .fast_mailbox(self.member.rank(), dest)
                .is_some_and(|mb| mb.has_room(bytes))
    }

    /// The receive of [`Transport::recv_reduce`](crate::transport::Transport::recv_reduce)
    /// without waiting: combines the next message from `src` into `acc` if it has come
    /// (`true`); `false` if nothing has. A message that is not the one expected goes to the
    /// general path, which reports it.
    pub(crate) fn try_recv_reduce<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        acc: &mut [T],
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<bool> {
        if !self.message_from(src) {
            return Ok(false);
        }
        // SAFETY: as in `recv`.
        self.recv_with::<T>(src, tag, acc.len(), |p| unsafe {
            reduce_in(p, acc, combine)
        })?;
        Ok(true)
    }

    /// Whether a message from `src` waits for this rank (the run has failed: whether a look
    /// would end, with the failure).
    pub(crate) fn message_from(&self, src: usize) -> bool {
        match self.fast_mailbox(src, self.member.rank()) {
            Some(mb) => mb.front().is_some(),
            None => true,
        }
    }

    /// Waits as a receive from `src` waits (spin, then park; the run's failure, the team's
    /// timeout and the deadlock watch end it with an error) until a message from `src` is
    /// there or `also()` holds.
    pub(crate) fn wait_from(&self, src: usize, also: &dyn Fn() -> bool) -> Result<()> {
        if self.member.run().is_aborted() {
            return Err(self.aborted());
        }
        self.check_rank(src)?;
        let mb = self.mailbox(src, self.member.rank());
        self.wait(&[src], false, || mb.front().is_some() || also())
    }

    /// Every receive: waits for the next message from `src`; if it is the expected one (`n`
    /// elements of `T` tagged `tag`), reads it with `read`, releases it and wakes the sender.
    /// Anything else — a mismatch, a message to oneself that is not there, zero-sized
    /// elements — goes to the general path, which reports or handles it.
    #[inline]
    pub(super) fn recv_with<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        n: usize,
        read: impl FnOnce(*const u8) -> usize,
    ) -> Result<()> {
        match self.recv_fast::<T, _, _>(src, header_of::<T>(tag, n), read)? {
            Ok(_) => Ok(()),
            Err(read) => self.typed::<T>(None, Some((src, tag, n)), read),
        }
    }

    /// The fast path of a receive from `src`: waits for the next message from `src` and, if
    /// its header is `expect`, reads it with `read` (`Ok(Ok)`). Anything else — another
    /// message, a message to oneself that is not there, zero-sized elements, a failed run —
    /// hands `read` back (`Ok(Err)`) for the general path, which handles or reports it.
    #[inline]
    pub(super) fn recv_fast<T: Elem, R, F: FnOnce(*const u8) -> R>(
        &self,
        src: usize,
        expect: Header,
        read: F,
    ) -> Result<std::result::Result<R, F>> {
        let me = self.member.rank();
        if size_of::<T>() != 0 {
            if let Some(mb) = self.fast_mailbox(src, me) {
                loop {
                    match mb.front() {
                        Some(h) if h == expect => return self.take_from(mb, src, read).map(Ok),
                        Some(_) => break,
                        None if src == me => break,
                        None => self.wait(&[src], false, || mb.front().is_some())?,
                    }
                }
            }
        }
        Ok(Err(read))
    }
}
