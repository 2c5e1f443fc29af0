//! [`Transport`] over the mailboxes of a communicator: threads of one process.
//!
//! Every operation — send, receive, exchange, and the reducing receives — is one engine,
//! [`ShmTransport::exchange`]: post the outgoing message (eager copy or rendezvous lend) as
//! soon as a cell is free, read the incoming one as soon as it has arrived, wait for the
//! rendezvous acknowledgement, and between steps wait (spin → yield → park) for whichever of
//! these the call still needs. Posting before waiting is what makes `sendrecv` deadlock-free.
//!
//! The common cases do not need the engine and skip it: an eager send that finds a free cell
//! (copy, publish, wake), and a receive whose message has arrived or only has to be waited for
//! (read, release, wake). They fall back to the engine for everything else, which also reports
//! every error. The wire form of typed data (lengths, zero-sized elements, reading into or
//! combining with a buffer) is in [`super::wire`].
//!
//! Every wait also watches for the run's failure, for the peers it depends on having returned
//! from the run, and for the team's timeout; any of these ends the call with an `Err` and (if
//! it is the first failure) fails the run, which wakes every other rank's waits.
//!
//! The protocol in prose, with the argument for each step: `src/transport/README.md`; the
//! loom models that check it are the `loom` module beside this file.

use super::wire::{copy_in, header_of, outgoing, reduce_in};
use super::Transport;
use crate::error::{Error, Result};
use crate::mailbox::{describe_op_bits, fingerprint_size, names, type_fingerprint, Elem, Tag};
use crate::mailbox::{Header, Mailbox};
use crate::op::Builtin;
use crate::shm::{Context, Member};
use crate::sync::park::{wait_until, Parker, WaitPolicy};
use engine::Receive;
pub(crate) use outbox::PostedSend;
pub(crate) use p2p::{Found, Matcher, Want};
pub(crate) use posted::PostedRecv;
#[cfg(any(all(test, not(loom)), feature = "mpi"))]
pub(crate) use queue::Gate;
#[cfg(feature = "mpi")]
pub(crate) use queue::{PostedQueue, Posting};

mod engine;
mod fast;
#[cfg(all(test, loom))]
mod loom;
mod many;
mod outbox;
mod p2p;
mod posted;
mod queue;
#[cfg(all(test, not(loom)))]
mod tests;

/// The transport of one rank of one communicator, in one context (user point-to-point or
/// collectives), for one named operation (used in error messages).
pub(crate) struct ShmTransport<'a> {
    member: &'a Member,
    ctx: Context,
    op: &'static str,
}

/// A message to post.
pub(super) struct Outgoing {
    pub(super) dest: usize,
    pub(super) header: Header,
    pub(super) data: *const u8,
}

/// A message to receive: who from, what it must look like, and what to do with its bytes.
/// Anything else at the front of the mailbox from `src` is a mismatch.
struct Incoming<T, F> {
    src: usize,
    expect: Header,
    /// Taken when the message is read.
    read: Option<F>,
    /// The element type the caller expects, for the mismatch's message.
    elem: std::marker::PhantomData<fn() -> T>,
}

impl<T: Elem, R, F: FnOnce(*const u8) -> R> Receive for Incoming<T, F> {
    type Out = R;

    fn source(&self) -> Option<usize> {
        Some(self.src)
    }

    fn poll(&mut self, t: &ShmTransport<'_>) -> Result<Option<R>> {
        let mb = t.mailbox(self.src, t.member.rank());
        match mb.front() {
            None => Ok(None),
            Some(found) if found != self.expect => {
                Err(t.mismatch::<T>(self.src, &self.expect, &found))
            }
            Some(_) => {
                let read = self.read.take().expect("a receive is read once");
                t.take_from(mb, self.src, read).map(Some)
            }
        }
    }

    fn arrived(&self, t: &ShmTransport<'_>) -> bool {
        t.mailbox(self.src, t.member.rank()).front().is_some()
    }
}

/// A rendezvous send in flight: the caller's slice is lent to the receiver. Dropping it —
/// on return, on error, or while unwinding from a panicking reader in the same call — settles
/// the loan first: the message is withdrawn if the receiver has not claimed it, otherwise
/// the drop waits for the receiver to finish reading (it is copying, not waiting, and
/// releases the cell even if it unwinds). So the slice is never freed or written while a
/// peer may read it.
struct Lent<'a> {
    mb: &'a Mailbox,
    n: u64,
    /// Set once the receiver has released the message: nothing left to settle.
    released: bool,
    parker: &'a Parker,
    policy: &'a WaitPolicy,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if !self.released && !self.mb.withdraw(self.n) {
            let (mb, n) = (self.mb, self.n);
            wait_until(self.parker, self.policy, None, || mb.is_consumed(n));
        }
        #[cfg(loom)]
        self.mb.reclaim_lent(self.n);
    }
}

/// Wakes a rank when dropped: after taking a message its sender may be waiting to reuse the
/// cell or for the acknowledgement, and it must be woken even if the reader unwinds.
struct WakeOnDrop<'t, 'a>(&'t ShmTransport<'a>, usize);

impl Drop for WakeOnDrop<'_, '_> {
    #[inline]
    fn drop(&mut self) {
        self.0.unpark(self.1);
    }
}

impl<'a> ShmTransport<'a> {
    /// The transport of `member`'s rank in `ctx` for operation `op`.
    pub(crate) fn new(member: &'a Member, ctx: Context, op: &'static str) -> Self {
        ShmTransport { member, ctx, op }
    }

    /// The transport of the collectives' context ([`Context::Coll`]).
    pub(crate) fn coll(member: &'a Member, op: &'static str) -> Self {
        Self::new(member, Context::Coll, op)
    }

    /// The transport of user point-to-point ([`Context::P2p`]).
    pub(crate) fn p2p(member: &'a Member, op: &'static str) -> Self {
        Self::new(member, Context::P2p, op)
    }

    #[inline]
    fn mailbox(&self, src: usize, dst: usize) -> &'a Mailbox {
        self.member.shared().mailbox(self.ctx, src, dst)
    }

    /// The mailbox from `src` to `dst` if a message was ever posted on it (a sender makes it),
    /// without making it: what a receive from any rank looks at.
    #[inline]
    fn mailbox_if_made(&self, src: usize, dst: usize) -> Option<&'a Mailbox> {
        self.member.shared().mailbox_if_made(self.ctx, src, dst)
    }

    #[inline]
    fn unpark(&self, peer: usize) {
        self.member.unpark(peer);
    }

    fn check_rank(&self, peer: usize) -> Result<()> {
        let size = self.member.size();
        if peer >= size {
            return Err(self.fail(Error::RankOutOfRange {
                rank: self.member.rank(),
                op: self.op,
                peer,
                size,
            }));
        }
        Ok(())
    }

    /// The loan of message `n` of `mb`, posted lent by this rank: settled when dropped.
    fn lent(&self, mb: &'a Mailbox, n: u64) -> Lent<'a> {
        let run = self.member.run();
        Lent {
            mb,
            n,
            released: false,
            parker: &run.ranks.parkers[self.member.shared().members[self.member.rank()]],
            policy: &run.ranks.policy,
        }
    }

    /// The error of a call that finds the run failed.
    pub(crate) fn aborted(&self) -> Error {
        Error::Aborted {
            rank: self.member.rank(),
            op: self.op,
            cause: Box::new(self.member.run().cause()),
        }
    }

    /// Waits until `ready()`, the run fails, one of `peers` returns from the run (with `any`,
    /// a receive from any rank in flight: every other rank has returned), or the timeout
    /// passes; `Ok` only in the first case (`Member::wait_for`, naming a peer that returned if
    /// there is one, else the first of `peers`, else a rank that has not returned).
    fn wait(&self, peers: &[usize], any: bool, mut ready: impl FnMut() -> bool) -> Result<()> {
        let run = self.member.run();
        let members = &self.member.shared().members;
        let me = self.member.rank();
        let started = self.member.wait_start();
        self.member.wait_for(self.op, &started, || {
            if ready() {
                return None;
            }
            let done = |p: usize| run.is_done(members[p]);
            if let Some(gone) = peers.iter().copied().find(|&p| done(p)) {
                return Some(gone);
            }
            if any {
                // Some rank that may still send, or (all have returned) the last other one.
                let mut others = (0..members.len()).filter(|&q| q != me);
                let last = others.clone().next_back();
                return Some(others.find(|&q| !done(q)).or(last).unwrap_or(me));
            }
            Some(peers.first().copied().unwrap_or(me))
        })
    }

    /// Takes the front message of `mb` (from `src`, already checked against what is expected)
    /// with `read`, and wakes `src` afterwards — even if `read` unwinds — since it may wait for
    /// the cell or for the acknowledgement. A message its sender withdrew (the run failed)
    /// is the run's failure.
    fn take_from<R>(
        &self,
        mb: &Mailbox,
        src: usize,
        read: impl FnOnce(*const u8) -> R,
    ) -> Result<R> {
        let _wake = WakeOnDrop(self, src);
        mb.take(read).map_err(|_withdrawn| self.aborted())
    }

    /// The error for a message that is not the one expected: `found` against `expect`, for
    /// elements of type `T` on this side.
    fn mismatch<T: Elem>(&self, src: usize, expect: &Header, found: &Header) -> Error {
        let describe = |h: &Header, name: Option<String>| {
            let what = Tag::describe(h.tag);
            match (fingerprint_size(h.typ), name) {
                (0, Some(name)) => format!("{what} with elements of {name}"),
                (0, None) => format!("{what} with elements of a zero-sized type"),
                (size, Some(name)) => {
                    format!("{what} with {}", names::elements(h.len / size, &name))
                }
                (size, None) => {
                    let of = format!("a type of {size} bytes");
                    format!("{what} with {}", names::elements(h.len / size, &of))
                }
            }
        };
        // The high half of a type word carries a reduction's op (`mailbox::op_bits`): with the
        // element type's own bits taken out, what is left names each side's op.
        let own = type_fingerprint::<T>();
        let op_of = |h: &Header| h.typ ^ own;
        let mut expected = describe(expect, Some(std::any::type_name::<T>().to_string()));
        // The sender's type: this one, or one a thread of this process noted (with this
        // call's op, or with none).
        let theirs = if found.typ == expect.typ {
            Some(std::any::type_name::<T>().to_string())
        } else {
            names::name_of(found.typ ^ op_of(expect))
                .or_else(|| names::name_of(found.typ))
                .map(str::to_string)
        };
        let named = theirs.is_some();
        let mut found_s = describe(found, theirs);
        if op_of(expect) != 0 {
            expected += &format!(", op {}", describe_op_bits(op_of(expect)));
        }
        if (found.tag ^ expect.tag) & 0xff != 0 {
            // Another operation altogether: its elements say nothing more.
            found_s = Tag::describe(found.tag);
        } else if found.typ != expect.typ {
            let theirs = op_of(found);
            // A built-in op's number stands out; anything else may be another element type as
            // well as another user op.
            if theirs & 0xffff_ffff == 0
                && (1..=Builtin::ALL.len() as u64).contains(&(theirs >> 32))
            {
                found_s += &format!(", op {}", describe_op_bits(theirs));
            } else if named {
                // The type's name says it.
            } else if theirs & 0xffff_ffff == 0 && theirs >> 63 == 1 {
                // The same element size, and the mark of a user op (`op_bits`).
                found_s.push_str(" (with a user op, or of another element type)");
            } else if op_of(expect) != 0 {
                found_s.push_str(" (another element type or op)");
            } else if !named {
                found_s.push_str(" (another element type)");
            }
        }
        self.fail(Error::Mismatch {
            rank: self.member.rank(),
            peer: src,
            op: self.op,
            expected,
            found: found_s,
        })
    }
}

impl Transport for ShmTransport<'_> {
    fn rank(&self) -> usize {
        self.member.rank()
    }

    fn size(&self) -> usize {
        self.member.size()
    }

    fn fail(&self, e: Error) -> Error {
        self.member.fail(e)
    }

    fn send<T: Elem>(&self, dest: usize, tag: Tag, data: &[T]) -> Result<()> {
        if self.try_send_eager(dest, tag, data) {
            return Ok(());
        }
        self.typed::<T>(Some((dest, tag, data)), None, |_| 0)
    }

    fn recv<T: Elem>(&self, src: usize, tag: Tag, buf: &mut [T]) -> Result<()> {
        // SAFETY: in the closure, the header matched, so the bytes are the wire form
        // of `buf.len()` `T`s published by the sender.
        self.recv_with::<T>(src, tag, buf.len(), |p| unsafe { copy_in(p, buf) })
    }

    fn sendrecv<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        recv: &mut [T],
        tag: Tag,
    ) -> Result<()> {
        let n = recv.len();
        // Posted first, then received: the order that makes `sendrecv` deadlock-free.
        if self.try_send_eager(dest, tag, send) {
            // SAFETY: as in `recv`.
            return self.recv_with::<T>(src, tag, n, |p| unsafe { copy_in(p, recv) });
        }
        // SAFETY: as in `recv`.
        self.typed::<T>(Some((dest, tag, send)), Some((src, tag, n)), |p| unsafe {
            copy_in(p, recv)
        })
    }

    fn recv_reduce<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        acc: &mut [T],
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        // SAFETY: as in `recv`.
        self.recv_with::<T>(src, tag, acc.len(), |p| unsafe {
            reduce_in(p, acc, combine)
        })
    }

    fn exchange_reduce<T: Elem>(
        &self,
        peer: usize,
        buf: &mut [T],
        scratch: &mut Vec<T>,
        tag: Tag,
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        // An eager message is copied into the mailbox when it is posted, so `buf` is free to
        // change at once and needs no scratch copy.
        if self.try_send_eager(peer, tag, buf) {
            let n = buf.len();
            // SAFETY: as in `recv`.
            return self.recv_with::<T>(peer, tag, n, |p| unsafe { reduce_in(p, buf, combine) });
        }
        scratch.clear();
        crate::copy::extend(scratch, buf);
        self.sendrecv_reduce(peer, scratch, peer, buf, tag, combine)
    }

    fn exchange_many<T: Elem>(
        &self,
        sends: &[(usize, &[T])],
        recvs: &mut [(usize, &mut [T])],
        tag: Tag,
    ) -> Result<()> {
        ShmTransport::exchange_many(self, sends, recvs, tag)
    }

    fn sendrecv_reduce<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        acc: &mut [T],
        tag: Tag,
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        let n = acc.len();
        if self.try_send_eager(dest, tag, send) {
            // SAFETY: as in `recv`.
            return self.recv_with::<T>(src, tag, n, |p| unsafe { reduce_in(p, acc, combine) });
        }
        // SAFETY: as in `recv`.
        self.typed::<T>(Some((dest, tag, send)), Some((src, tag, n)), |p| unsafe {
            reduce_in(p, acc, combine)
        })
    }
}
