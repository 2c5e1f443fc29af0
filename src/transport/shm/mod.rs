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
use crate::mailbox::{describe_op_bits, fingerprint_size, type_fingerprint, Elem, Tag};
use crate::mailbox::{Header, Mailbox, EAGER_MAX};
use crate::op::Builtin;
use crate::shm::{Context, Member};
use crate::sync::park::{wait_until, Parker, WaitPolicy};
use std::mem::{size_of, size_of_val};

#[cfg(all(test, loom))]
mod loom;
mod many;

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
struct Incoming<F> {
    src: usize,
    expect: Header,
    read: F,
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

    fn aborted(&self) -> Error {
        Error::Aborted {
            rank: self.member.rank(),
            op: self.op,
            cause: Box::new(self.member.run().cause()),
        }
    }

    /// Waits until `ready()`, the run fails, one of `peers` returns from the run, or the
    /// timeout passes; `Ok` only in the first case (`Member::wait_for`, naming a peer that
    /// returned if there is one, else the first of `peers`).
    fn wait(&self, peers: &[usize], mut ready: impl FnMut() -> bool) -> Result<()> {
        let run = self.member.run();
        let members = &self.member.shared().members;
        let me = self.member.rank();
        let started = self.member.wait_start();
        self.member.wait_for(self.op, started, || {
            if ready() {
                return None;
            }
            let gone = peers.iter().copied().find(|&p| run.is_done(members[p]));
            Some(gone.or(peers.first().copied()).unwrap_or(me))
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
        let describe = |h: &Header, name: Option<&str>| {
            let what = Tag::describe(h.tag);
            let name = name.map(|n| format!(", {n}")).unwrap_or_default();
            match fingerprint_size(h.typ) {
                0 => format!("{what}: elements of a zero-sized type{name}"),
                size => format!(
                    "{what}: {} bytes ({} elements of {size} bytes{name})",
                    h.len,
                    h.len / size
                ),
            }
        };
        // The high half of a type word carries a reduction's op (`mailbox::op_bits`): with the
        // element type's own bits taken out, what is left names each side's op.
        let own = type_fingerprint::<T>();
        let op_of = |h: &Header| h.typ ^ own;
        let mut expected = describe(expect, Some(std::any::type_name::<T>()));
        let mut found_s = describe(found, None);
        if op_of(expect) != 0 {
            expected += &format!(", op {}", describe_op_bits(op_of(expect)));
        }
        if found.typ != expect.typ {
            let theirs = op_of(found);
            // A built-in op's number stands out; anything else may be another element type as
            // well as another user op.
            if theirs & 0xffff_ffff == 0
                && (1..=Builtin::ALL.len() as u64).contains(&(theirs >> 32))
            {
                found_s += &format!(", op {}", describe_op_bits(theirs));
            } else if op_of(expect) != 0 {
                found_s.push_str(" of another element type or op");
            } else {
                found_s.push_str(" of another element type");
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

    /// The engine: posts `send` (if any), receives `recv` (if any), and returns once both are
    /// complete — for a rendezvous send, once the receiver has released the lent slice.
    fn exchange<R, F: FnOnce(*const u8) -> R>(
        &self,
        send: Option<Outgoing>,
        recv: Option<Incoming<F>>,
        mismatch: fn(&Self, usize, &Header, &Header) -> Error,
    ) -> Result<Option<R>> {
        let run = self.member.run();
        if run.is_aborted() {
            return Err(self.aborted());
        }
        let me = self.member.rank();
        if let Some(o) = &send {
            self.check_rank(o.dest)?;
        }
        if let Some(i) = &recv {
            self.check_rank(i.src)?;
        }
        let out = send.as_ref().map(|o| (o, self.mailbox(me, o.dest)));
        let inb = recv
            .as_ref()
            .map(|i| (i.src, i.expect, self.mailbox(i.src, me)));
        let mut read = recv.map(|i| i.read);
        let parker = &run.ranks.parkers[self.member.shared().members[me]];
        let policy = &run.ranks.policy;
        // Not yet posted (no cell or arena room so far)?
        let mut pending = send.is_some();
        // The loan of a posted rendezvous send, until the receiver releases it.
        let mut lent: Option<Lent<'_>> = None;
        let mut result = None;

        let outcome = loop {
            let mut progressed = false;
            if let (true, Some((o, mb))) = (pending, out) {
                // SAFETY: `o.data` is the caller's slice of `o.header.len` bytes, borrowed for
                // this whole call; if it is lent, `lent` settles the loan before the call ends,
                // however it ends.
                if let Some((n, is_lent)) = unsafe { mb.try_post(o.header, o.data) } {
                    if is_lent {
                        lent = Some(Lent {
                            mb,
                            n,
                            released: false,
                            parker,
                            policy,
                        });
                    }
                    pending = false;
                    progressed = true;
                    self.unpark(o.dest);
                }
            }
            if let (true, Some((src, expect, mb))) = (read.is_some(), inb) {
                if let Some(found) = mb.front() {
                    if found != expect {
                        break Err(mismatch(self, src, &expect, &found));
                    }
                    let f = read.take().expect("reader present");
                    match self.take_from(mb, src, f) {
                        Ok(r) => result = Some(r),
                        Err(e) => break Err(e),
                    }
                    progressed = true;
                }
            }
            if let Some(l) = &mut lent {
                if l.mb.is_consumed(l.n) {
                    l.released = true;
                    lent = None;
                    progressed = true;
                }
            }
            let receiving = read.is_some();
            let sending = pending || lent.is_some();
            if !sending && !receiving {
                break Ok(());
            }
            if progressed {
                continue;
            }
            let mut peers = [0usize; 2];
            let mut np = 0;
            if let (true, Some((o, _))) = (sending, out) {
                peers[np] = o.dest;
                np += 1;
            }
            if let (true, Some((src, _, _))) = (receiving, inb) {
                peers[np] = src;
                np += 1;
            }
            if peers[..np].iter().all(|&p| p == me) {
                let why = if receiving {
                    "nothing was sent to this rank by itself, and it would wait for itself"
                } else {
                    "the message is not received within the same call (only sendrecv with \
                     itself completes a large or buffer-filling self-message)"
                };
                break Err(self.fail(Error::SelfDeadlock {
                    rank: me,
                    op: self.op,
                    why,
                }));
            }
            let waited = self.wait(&peers[..np], || {
                let can_post = pending && out.is_some_and(|(o, mb)| mb.has_room(o.header.len));
                let arrived = receiving && inb.is_some_and(|(_, _, mb)| mb.front().is_some());
                let acked = lent.as_ref().is_some_and(|l| l.mb.is_consumed(l.n));
                can_post || arrived || acked
            });
            if let Err(e) = waited {
                break Err(e);
            }
        };
        // An unsettled loan is settled here (failure) or during unwinding, by `Lent::drop`.
        drop(lent);
        outcome.map(|()| result)
    }
}

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
    fn typed<T: Elem>(
        &self,
        send: Option<(usize, Tag, &[T])>,
        recv: Option<(usize, Tag, usize)>,
        read: impl FnOnce(*const u8) -> usize,
    ) -> Result<()> {
        let count = send.map_or(0, |(_, _, d)| d.len() as u64);
        let out = send.map(|(dest, tag, data)| outgoing(dest, tag, data, &count));
        let inc = recv.map(|(src, tag, n)| Incoming {
            src,
            expect: header_of::<T>(tag, n),
            read,
        });
        let got = self.exchange(out, inc, Self::mismatch::<T>)?;
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
    fn try_send_eager<T: Elem>(&self, dest: usize, tag: Tag, data: &[T]) -> bool {
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

    /// Every receive: waits for the next message from `src`; if it is the expected one (`n`
    /// elements of `T` tagged `tag`), reads it with `read`, releases it and wakes the sender.
    /// Anything else — a mismatch, a message to oneself that is not there, zero-sized
    /// elements — goes to the general path, which reports or handles it.
    #[inline]
    fn recv_with<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        n: usize,
        read: impl FnOnce(*const u8) -> usize,
    ) -> Result<()> {
        let me = self.member.rank();
        if size_of::<T>() != 0 {
            if let Some(mb) = self.fast_mailbox(src, me) {
                let expect = header_of::<T>(tag, n);
                loop {
                    match mb.front() {
                        Some(h) if h == expect => return self.take_from(mb, src, read).map(drop),
                        Some(_) => break,
                        None if src == me => break,
                        None => self.wait(&[src], || mb.front().is_some())?,
                    }
                }
            }
        }
        self.typed::<T>(None, Some((src, tag, n)), read)
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
        // SAFETY (of the closure's call): the header matched, so the bytes are the wire form
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::mailbox::EAGER_MAX;

    /// A non-commutative combination (string-like concatenation of spans) so that operand
    /// order mistakes show: acc := acc ⊙ incoming with (a, b) ⊙ (c, d) = (a, d) when b == c.
    fn concat(acc: &mut [(u32, u32)], inc: &[(u32, u32)]) {
        for (a, b) in acc.iter_mut().zip(inc) {
            assert_eq!(a.1, b.0, "spans must be adjacent");
            a.1 = b.1;
        }
    }

    #[test]
    fn recv_reduce_and_sendrecv_reduce_combine_in_order_for_every_size() {
        for n in [0usize, 1, 2, 3, EAGER_MAX / 8, EAGER_MAX / 8 + 1, 100_000] {
            for p in [1usize, 2, 3, 5] {
                let out = crate::run(p, |comm| {
                    let t = ShmTransport::coll(comm.local().member(), "test");
                    let r = comm.rank() as u32;
                    // Chain: rank r receives the span [0, r) from r − 1, appends its own
                    // [r, r + 1), and passes [0, r + 1) on.
                    let mut acc = vec![(0u32, 0u32); n];
                    if r > 0 {
                        t.recv_reduce(comm.rank() - 1, Tag::P2P, &mut acc, &mut concat)
                            .unwrap();
                    }
                    concat(&mut acc, &vec![(r, r + 1); n]);
                    if comm.rank() + 1 < p {
                        t.send(comm.rank() + 1, Tag::P2P, &acc).unwrap();
                    }
                    // Ring exchange: acc := acc·31 + incoming, which shows a swapped operand
                    // order or a misplaced element.
                    let (left, right) = ((comm.rank() + p - 1) % p, (comm.rank() + 1) % p);
                    let send: Vec<u64> = (0..n as u64).map(|i| r as u64 * 7 + i).collect();
                    let mut got: Vec<u64> = (0..n as u64).map(|i| r as u64 * 1000 + i).collect();
                    let mut f = |a: &mut [u64], b: &[u64]| {
                        for (x, y) in a.iter_mut().zip(b) {
                            *x = x.wrapping_mul(31).wrapping_add(*y);
                        }
                    };
                    t.sendrecv_reduce(right, &send, left, &mut got, Tag::P2P, &mut f)
                        .unwrap();
                    (acc, got)
                })
                .unwrap();
                let last = &out[p - 1].0;
                assert!(last.iter().all(|&s| s == (0, p as u32)), "n={n} p={p}");
                for (r, (_, got)) in out.iter().enumerate() {
                    let l = ((r + p - 1) % p) as u64;
                    for (i, &g) in got.iter().enumerate() {
                        let i = i as u64;
                        assert_eq!(
                            g,
                            (r as u64 * 1000 + i) * 31 + l * 7 + i,
                            "n={n} p={p} r={r}"
                        );
                    }
                }
            }
        }
    }

    /// `exchange_many` with every other rank at once, two messages per edge (in order), of
    /// sizes from empty through eager to rendezvous, a message to itself, and zero-sized
    /// elements; then a length mismatch, which is an `Err` on every rank.
    #[test]
    fn exchange_many_with_several_peers_and_sizes() {
        let size = |s: usize, d: usize, k: usize| {
            [0usize, 1, 3, EAGER_MAX / 8, EAGER_MAX / 8 + 1, 40_000][(s * 7 + d * 3 + k) % 6]
        };
        let val =
            |s: usize, d: usize, k: usize, i: usize| (s * 1_000_003 + d * 1009 + k * 7 + i) as u64;
        for p in [1usize, 2, 3, 5] {
            let out = crate::run(p, |comm| {
                let t = ShmTransport::coll(comm.local().member(), "test");
                let r = comm.rank();
                let data: Vec<Vec<u64>> = (0..2 * p)
                    .map(|j| {
                        (0..size(r, j / 2, j % 2))
                            .map(|i| val(r, j / 2, j % 2, i))
                            .collect()
                    })
                    .collect();
                let sends: Vec<(usize, &[u64])> = data
                    .iter()
                    .enumerate()
                    .map(|(j, d)| (j / 2, &d[..]))
                    .collect();
                let mut bufs: Vec<Vec<u64>> =
                    (0..2 * p).map(|j| vec![0; size(j / 2, r, j % 2)]).collect();
                let mut recvs: Vec<(usize, &mut [u64])> = bufs
                    .iter_mut()
                    .enumerate()
                    .map(|(j, b)| (j / 2, &mut b[..]))
                    .collect();
                t.exchange_many(&sends, &mut recvs, Tag::P2P).unwrap();
                // Sends only and receives only, zero-sized elements, in a ring.
                let (right, left) = ((r + 1) % p, (r + p - 1) % p);
                if p > 1 {
                    t.exchange_many(&[(right, &[(); 5][..])], &mut [], Tag::P2P)
                        .unwrap();
                    t.exchange_many::<()>(&[], &mut [(left, &mut [(); 5][..])], Tag::P2P)
                        .unwrap();
                }
                bufs
            })
            .unwrap();
            for (r, bufs) in out.iter().enumerate() {
                for (j, b) in bufs.iter().enumerate() {
                    let (s, k) = (j / 2, j % 2);
                    let want: Vec<u64> = (0..size(s, r, k)).map(|i| val(s, r, k, i)).collect();
                    assert_eq!(b, &want, "p={p} r={r} from {s} message {k}");
                }
            }
        }
        let out = crate::run(3, |comm| {
            let t = ShmTransport::coll(comm.local().member(), "test");
            let r = comm.rank();
            let big = vec![1u32; 10_000];
            let n = if r == 1 { 9_999 } else { 10_000 };
            let mut a = vec![0u32; n];
            let mut b = vec![0u32; n];
            let (right, left) = ((r + 1) % 3, (r + 2) % 3);
            let res = t.exchange_many(
                &[(right, &big[..]), (left, &big[..])],
                &mut [(left, &mut a[..]), (right, &mut b[..])],
                Tag::P2P,
            );
            res.is_err() || comm.barrier().is_err()
        });
        // Every rank fails: in the exchange, or in the barrier after a failed run.
        if let Ok(v) = out {
            assert!(v.iter().all(|&e| e));
        }
    }
}
