//! [`Transport`] over the mailboxes of a communicator: threads of one process.
//!
//! Every operation — send, receive, exchange, and the reducing receives — is one engine,
//! [`ShmTransport::exchange`]: post the outgoing message (eager copy or rendezvous lend) as
//! soon as a cell is free, read the incoming one as soon as it has arrived, wait for the
//! rendezvous acknowledgement, and between steps wait (spin → yield → park) for whichever of
//! these the call still needs. Posting before waiting is what makes `sendrecv` deadlock-free.
//!
//! Every wait also watches for the run's failure, for the peers it depends on having returned
//! from the run, and for the team's timeout; any of these ends the call with an `Err` and (if
//! it is the first failure) fails the run, which wakes every other rank's waits.

use super::{fingerprint_size, type_fingerprint, Elem, Tag, Transport};
use crate::comm::world::Context;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::mailbox::{Header, Mailbox, EAGER_MAX};
use crate::sync::park::wait_until;
use std::mem::size_of_val;
use std::time::Instant;

/// The transport of one rank of one communicator, in one context (user point-to-point or
/// collectives), for one named operation (used in error messages).
pub(crate) struct ShmTransport<'a> {
    comm: &'a Comm,
    ctx: Context,
    op: &'static str,
}

/// A message to post.
struct Outgoing {
    dest: usize,
    header: Header,
    data: *const u8,
}

/// A message to receive: who from, what it must look like, and what to do with its bytes.
struct Incoming<F> {
    src: usize,
    expect: Header,
    read: F,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SendState {
    /// No cell was free yet.
    Pending,
    /// Rendezvous message `n` posted; its slice is lent until the consumer releases it.
    Lent(u64),
    /// Nothing (more) to do.
    Done,
}

impl<'a> ShmTransport<'a> {
    /// The transport of `comm` in `ctx` for operation `op`.
    pub(crate) fn new(comm: &'a Comm, ctx: Context, op: &'static str) -> Self {
        ShmTransport { comm, ctx, op }
    }

    fn mailbox(&self, src: usize, dst: usize) -> &'a Mailbox {
        self.comm.shared().mailbox(self.ctx, src, dst)
    }

    fn unpark(&self, peer: usize) {
        let team_rank = self.comm.shared().members[peer];
        self.comm.run().ranks.parkers[team_rank].unpark();
    }

    /// Fails the run with `e` (if it is the first failure) and returns it.
    fn fail(&self, e: Error) -> Error {
        self.comm.run().abort(e.clone());
        e
    }

    fn check_rank(&self, peer: usize) -> Result<()> {
        let size = self.comm.size();
        if peer >= size {
            return Err(self.fail(Error::RankOutOfRange {
                rank: self.comm.rank(),
                op: self.op,
                peer,
                size,
            }));
        }
        Ok(())
    }

    fn aborted(&self) -> Error {
        Error::Aborted {
            rank: self.comm.rank(),
            op: self.op,
            cause: Box::new(self.comm.run().cause()),
        }
    }

    /// Waits until `ready()`, the run fails, one of `peers` returns from the run, or the
    /// timeout passes; `Ok` only in the first case.
    fn wait(&self, peers: &[usize], mut ready: impl FnMut() -> bool) -> Result<()> {
        let run = self.comm.run();
        let members = &self.comm.shared().members;
        let me = members[self.comm.rank()];
        let started = run.ranks.timeout.map(|t| (Instant::now(), t));
        let deadline = started.map(|(s, t)| s + t);
        let peer_gone = || peers.iter().any(|&p| run.is_done(members[p]));
        wait_until(&run.ranks.parkers[me], &run.ranks.policy, deadline, || {
            ready() || run.is_aborted() || peer_gone()
        });
        if ready() {
            return Ok(());
        }
        if run.is_aborted() {
            return Err(self.aborted());
        }
        let rank = self.comm.rank();
        if let Some(&peer) = peers.iter().find(|&&p| run.is_done(members[p])) {
            return Err(self.fail(Error::PeerExited {
                rank,
                peer,
                op: self.op,
            }));
        }
        let waited = started.map(|(s, _)| s.elapsed()).unwrap_or_default();
        Err(self.fail(Error::Timeout {
            rank,
            peer: peers.first().copied().unwrap_or(rank),
            op: self.op,
            waited,
        }))
    }

    fn mismatch(&self, src: usize, expect: &Header, found: &Header) -> Error {
        let describe = |h: &Header| {
            let elem = fingerprint_size(h.typ);
            let what = Tag::describe(h.tag);
            if elem == 0 {
                format!("{what}: {} bytes", h.len)
            } else {
                format!(
                    "{what}: {} bytes ({} elements of {elem} bytes)",
                    h.len,
                    h.len / elem
                )
            }
        };
        let mut found_s = describe(found);
        if found.typ != expect.typ && fingerprint_size(found.typ) == fingerprint_size(expect.typ) {
            found_s.push_str(" of another element type");
        }
        self.fail(Error::Mismatch {
            rank: self.comm.rank(),
            peer: src,
            op: self.op,
            expected: describe(expect),
            found: found_s,
        })
    }

    /// The engine: posts `send` (if any), receives `recv` (if any), and returns once both are
    /// complete — for a rendezvous send, once the receiver has released the lent slice.
    fn exchange<R, F: FnOnce(*const u8) -> R>(
        &self,
        send: Option<Outgoing>,
        recv: Option<Incoming<F>>,
    ) -> Result<Option<R>> {
        let run = self.comm.run();
        if run.is_aborted() {
            return Err(self.aborted());
        }
        let me = self.comm.rank();
        if let Some(o) = &send {
            self.check_rank(o.dest)?;
        }
        if let Some(i) = &recv {
            self.check_rank(i.src)?;
        }
        let out = send.as_ref().map(|o| (o, self.mailbox(me, o.dest)));
        let inb = recv.as_ref().map(|i| (i.src, i.expect, self.mailbox(i.src, me)));
        let mut read = recv.map(|i| i.read);
        let mut state = if send.is_some() {
            SendState::Pending
        } else {
            SendState::Done
        };
        let mut result = None;

        let outcome = loop {
            let mut progressed = false;
            if let (SendState::Pending, Some((o, mb))) = (state, out) {
                // SAFETY: `o.data` is the caller's slice of `o.header.len` bytes, borrowed for
                // this whole call; a lent slice is not released before `state` leaves `Lent`
                // (below, or in the cleanup after the loop).
                let posted = unsafe {
                    if o.header.len <= EAGER_MAX {
                        mb.try_send_eager(o.header, o.data).map(|_| SendState::Done)
                    } else {
                        mb.try_post_rendezvous(o.header, o.data).map(SendState::Lent)
                    }
                };
                if let Some(s) = posted {
                    state = s;
                    progressed = true;
                    self.unpark(o.dest);
                }
            }
            if let (true, Some((src, expect, mb))) = (read.is_some(), inb) {
                if let Some(found) = mb.front() {
                    if found != expect {
                        break Err(self.mismatch(src, &expect, &found));
                    }
                    let f = read.take().expect("reader present");
                    let taken = mb.take(f);
                    self.unpark(src);
                    match taken {
                        Ok(r) => result = Some(r),
                        Err(_withdrawn) => break Err(self.aborted()),
                    }
                    progressed = true;
                }
            }
            if let (SendState::Lent(n), Some((_, mb))) = (state, out) {
                if mb.is_consumed(n) {
                    #[cfg(loom)]
                    mb.reclaim_lent(n);
                    state = SendState::Done;
                    progressed = true;
                }
            }
            let receiving = read.is_some();
            if state == SendState::Done && !receiving {
                break Ok(());
            }
            if progressed {
                continue;
            }
            let mut peers = [0usize; 2];
            let mut np = 0;
            if let (true, Some((o, _))) = (state != SendState::Done, out) {
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
                let can_post = state == SendState::Pending && out.is_some_and(|(_, mb)| mb.has_room());
                let arrived = receiving && inb.is_some_and(|(_, _, mb)| mb.front().is_some());
                let acked = match (state, out) {
                    (SendState::Lent(n), Some((_, mb))) => mb.is_consumed(n),
                    _ => false,
                };
                can_post || arrived || acked
            });
            if let Err(e) = waited {
                break Err(e);
            }
        };

        if let (SendState::Lent(n), Some((_, mb))) = (state, out) {
            // Failing with a slice still lent: take it back, or — if the receiver has already
            // claimed it — wait for the receiver to finish reading (it is copying, not waiting,
            // and releases the cell even if it unwinds).
            if !mb.withdraw(n) {
                let parker = &run.ranks.parkers[self.comm.shared().members[me]];
                wait_until(parker, &run.ranks.policy, None, || mb.is_consumed(n));
            }
            #[cfg(loom)]
            mb.reclaim_lent(n);
        }
        outcome.map(|()| result)
    }
}

fn header_of<T: Elem>(tag: Tag, data: &[T]) -> Header {
    Header {
        tag: tag.encode(),
        typ: type_fingerprint::<T>(),
        len: size_of_val(data),
    }
}

fn outgoing<T: Elem>(dest: usize, tag: Tag, data: &[T]) -> Outgoing {
    Outgoing {
        dest,
        header: header_of(tag, data),
        data: data.as_ptr().cast(),
    }
}

/// Reads `buf.len()` elements of `T` from `p` into `buf`.
///
/// # Safety
/// `p` must point to `size_of_val(buf)` readable bytes that are a copy of valid `T`s.
unsafe fn copy_in<T: Elem>(p: *const u8, buf: &mut [T]) {
    // SAFETY: per the contract; `buf` is exclusively borrowed and disjoint from `p`'s memory
    // (a mailbox cell or another call's lent slice).
    unsafe { std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr().cast::<u8>(), size_of_val(buf)) }
}

/// Combines `acc.len()` incoming elements at `p` into `acc`, in place where `p` is aligned for
/// `T` (a lent slice always is), through a temporary otherwise (an eager cell).
///
/// # Safety
/// As [`copy_in`].
#[allow(dead_code)] // the allreduce schedules' primitive (issue 3)
unsafe fn reduce_in<T: Elem>(
    p: *const u8,
    acc: &mut [T],
    combine: &mut dyn FnMut(&mut [T], &[T]),
) {
    let n = acc.len();
    if (p as usize) % std::mem::align_of::<T>() == 0 {
        // SAFETY: aligned, readable for n elements that are valid `T`s (contract), and not
        // written by anyone while the mailbox holds the message (eager) or the claim (lent).
        let incoming = unsafe { std::slice::from_raw_parts(p.cast::<T>(), n) };
        combine(acc, incoming);
    } else {
        let mut tmp: Vec<T> = Vec::with_capacity(n);
        // SAFETY: `tmp` has capacity for n elements; the bytes are n valid `T`s (contract).
        unsafe {
            std::ptr::copy_nonoverlapping(p, tmp.as_mut_ptr().cast::<u8>(), n * size_of::<T>());
            tmp.set_len(n);
        }
        combine(acc, &tmp);
    }
}

impl Transport for ShmTransport<'_> {
    fn rank(&self) -> usize {
        self.comm.rank()
    }

    fn size(&self) -> usize {
        self.comm.size()
    }

    fn send<T: Elem>(&self, dest: usize, tag: Tag, data: &[T]) -> Result<()> {
        self.exchange::<(), fn(*const u8)>(Some(outgoing(dest, tag, data)), None)
            .map(drop)
    }

    fn recv<T: Elem>(&self, src: usize, tag: Tag, buf: &mut [T]) -> Result<()> {
        let expect = header_of(tag, buf);
        // SAFETY (of the closure's call): the mailbox checked the header, so the bytes are
        // `buf.len()` `T`s published by the sender.
        let read = |p: *const u8| unsafe { copy_in(p, buf) };
        self.exchange(None::<Outgoing>, Some(Incoming { src, expect, read }))
            .map(drop)
    }

    fn sendrecv<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        recv: &mut [T],
        tag: Tag,
    ) -> Result<()> {
        let expect = header_of(tag, recv);
        // SAFETY: as in `recv`.
        let read = |p: *const u8| unsafe { copy_in(p, recv) };
        self.exchange(
            Some(outgoing(dest, tag, send)),
            Some(Incoming { src, expect, read }),
        )
        .map(drop)
    }

    fn recv_reduce<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        acc: &mut [T],
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        let expect = header_of(tag, acc);
        // SAFETY: as in `recv`.
        let read = |p: *const u8| unsafe { reduce_in(p, acc, combine) };
        self.exchange(None::<Outgoing>, Some(Incoming { src, expect, read }))
            .map(drop)
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
        let expect = header_of(tag, acc);
        // SAFETY: as in `recv`.
        let read = |p: *const u8| unsafe { reduce_in(p, acc, combine) };
        self.exchange(
            Some(outgoing(dest, tag, send)),
            Some(Incoming { src, expect, read }),
        )
        .map(drop)
    }
}
