//! Point-to-point on a communicator whose ranks are the threads of several MPI processes.
//!
//! A message between two threads of one process goes through that process's mailboxes, as on
//! any team, and never touches MPI. A message to a thread of another process goes over MPI,
//! sent and received by the calling threads themselves on the team's [`Channels`] (one
//! duplicate communicator per receiving thread index, `transport::mpi::p2p`), which needs MPI
//! initialised with `Threading::Multiple`; under `Funneled` such a call is
//! [`Error::Unsupported`], naming what to use instead.
//!
//! MPI's matching rules hold across both paths: a receive takes the first message from its
//! source with its tag (either may be "any"), and messages of one sender and tag arrive in
//! order. A receive that names its sender looks only where that sender's messages come
//! (mailboxes or MPI); a receive from any rank polls both. A message from another process
//! that a receive examined but does not want (another sender thread or tag) is moved aside
//! with its payload, as the mailboxes' unexpected messages are, and looked at first by the
//! next receive. The element type and the count travel in each message's header, so a
//! receiver checks them as it does between threads: a longer message or another element type
//! is [`Error::Mismatch`] on the receiver, which still takes the message so that its sender's
//! call completes.
//!
//! Every wait for another process polls (MPI wakes nobody), spinning and then yielding the
//! core, and gives up when this process's run fails, another process's run fails (its notice,
//! `Channels::notice`; a failing process sends one to every other), or the team's timeout
//! passes; an operation given up is cancelled and waited for, so MPI never touches a caller's
//! buffer after its call returns. Deadlock detection does not reach across processes: only
//! the team's timeout ends a cycle of waits between processes.

use super::world::Bridge;
use crate::error::{Error, Result};
use crate::mailbox::{names, type_fingerprint, Elem};
use crate::sync::{spin_hint, yield_now};
use crate::transport::mpi::{Arrived, Channels};
use crate::transport::shm::{Found, Want};
use std::collections::VecDeque;
use std::mem::{size_of, size_of_val};

/// A message from another process moved aside by a receive that wanted another.
pub(crate) struct Aside {
    src: usize,
    tag: u32,
    typ: u64,
    count: usize,
    bytes: Vec<u8>,
}

/// This rank's messages from other processes moved aside, oldest first.
pub(crate) type AsideQueue = std::cell::RefCell<VecDeque<Aside>>;

/// Where a rank of the world runs, seen from this rank.
enum Place {
    /// In this process: its thread (local rank).
    Here(usize),
    /// In another process: the process and its thread there.
    There(usize, usize),
}

impl Want {
    fn takes(&self, src: usize, tag: u32) -> bool {
        self.src.is_none_or(|s| s == src) && self.tag.is_none_or(|t| t == tag)
    }
}

impl Bridge {
    fn place(&self, rank: usize) -> Place {
        let (q, i) = self.layout.locate(rank);
        if q == self.layout.process() {
            Place::Here(i)
        } else {
            Place::There(q, i)
        }
    }

    /// The world rank of this process's thread `i`.
    fn world(&self, i: usize) -> usize {
        self.layout.offset(self.layout.process()) + i
    }

    /// The channels to other processes, or why there are none.
    fn channels(&self, op: &'static str) -> Result<&Channels> {
        self.channels.as_deref().ok_or_else(|| {
            self.local.fail(Error::Unsupported {
                rank: self.rank(),
                op,
                what: "point-to-point between the processes of a hybrid team needs MPI \
                       initialised with Threading::Multiple (every thread calls MPI itself); \
                       under Funneled only each process's rank 0 may, so exchange across \
                       processes with a collective"
                    .into(),
            })
        })
    }

    /// Polls `done` until it holds — as the team's waits do, spinning first (the team's spin
    /// budget, `WaitPolicy`) and then yielding the core between polls, but never parking,
    /// since nothing wakes a thread when an MPI message arrives; an error (failing this
    /// process's run) if the run fails or the team's timeout passes first.
    fn poll_until(
        &self,
        op: &'static str,
        peer: usize,
        mut done: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        let started = self.local.member().wait_start();
        let spins = self.local.run().ranks.policy.spins;
        let mut polls: u32 = 0;
        loop {
            if done()? {
                return Ok(());
            }
            polls = polls.wrapping_add(1);
            if polls < spins {
                spin_hint();
                if !polls.is_multiple_of(64) {
                    continue;
                }
            } else {
                yield_now();
            }
            let run = self.local.run();
            if run.is_aborted() {
                if let Some(ch) = &self.channels {
                    // Threads of other processes may be waiting for this one.
                    ch.notify(self.layout.processes(), self.layout.process());
                }
                return Err(Error::Aborted {
                    rank: self.rank(),
                    op,
                    cause: Box::new(run.cause()),
                });
            }
            if let Some(process) = self.channels.as_ref().and_then(|ch| ch.notice()) {
                return Err(self.local.fail(Error::ProcessFailed {
                    rank: self.rank(),
                    op,
                    process,
                }));
            }
            if let Some((start, limit)) = started {
                if start.elapsed() >= limit {
                    return Err(self.local.fail(Error::Timeout {
                        rank: self.rank(),
                        peer,
                        op,
                        waited: start.elapsed(),
                    }));
                }
            }
        }
    }

    /// Point-to-point send of `data` with `tag` to world rank `dest`.
    pub(crate) fn send<T: Elem>(&self, dest: usize, tag: u32, data: &[T]) -> Result<()> {
        match self.place(dest) {
            Place::Here(i) => self.local.send(i, tag, data),
            Place::There(q, i) => {
                let ch = self.channels("send")?;
                // SAFETY: `data` is borrowed for this whole call, and the send completes or is
                // given up (cancelled and waited for) before it returns.
                let mut s = unsafe { ch.post((q, i), self.local.rank(), tag, data) };
                self.poll_until("send", dest, || Ok(ch.test(&mut s)))
                    .inspect_err(|_| ch.give_up(&mut s))
            }
        }
    }

    /// Point-to-point receive into `buf` of the first message `want` (in world ranks) accepts.
    pub(crate) fn recv<T: Elem>(&self, want: Want, buf: &mut [T]) -> Result<Found> {
        const OP: &str = "recv";
        if let Some(Place::Here(i)) = want.src.map(|s| self.place(s)) {
            let local = Want {
                src: Some(i),
                ..want
            };
            return self.local.recv(local, buf).map(|f| Found {
                src: self.world(f.src),
                ..f
            });
        }
        if want.src.is_none() && self.layout.processes() == 1 {
            return self.local.recv(want, buf);
        }
        let ch = self.channels(OP)?;
        let peer = want.src.unwrap_or(self.rank());
        let mut got = None;
        self.poll_until(OP, peer, || {
            got = self.recv_once(ch, want, &mut *buf, OP)?;
            Ok(got.is_some())
        })?;
        Ok(got.expect("polled until a message came"))
    }

    /// One look for a message `want` accepts: the messages moved aside, this process's
    /// mailboxes (for a receive from any rank), and MPI; takes the first found into `buf`.
    fn recv_once<T: Elem>(
        &self,
        ch: &Channels,
        want: Want,
        buf: &mut [T],
        op: &'static str,
    ) -> Result<Option<Found>> {
        if let Some(found) = self.take_aside(want, buf, op)? {
            return Ok(Some(found));
        }
        if want.src.is_none() {
            let local = Want { src: None, ..want };
            if let Some(f) = self.local.try_recv(local, buf)? {
                return Ok(Some(Found {
                    src: self.world(f.src),
                    ..f
                }));
            }
        }
        // MPI's filter: the process only. Any tag, so that messages sent before the one
        // wanted, with other tags or from other threads of that process, are seen and moved
        // aside — which completes their senders' calls, as between threads.
        let process = match want.src.map(|s| self.place(s)) {
            Some(Place::There(q, _)) => Some(q),
            _ => None,
        };
        let me = self.local.rank();
        while let Some(a) = ch.poll(me, process) {
            let src = self.layout.offset(a.process) + a.thread;
            if want.takes(src, a.tag) {
                return self.deliver(ch, a, buf, op).map(Some);
            }
            self.set_aside(ch, a, src, op)?;
        }
        Ok(None)
    }

    /// The first message moved aside that `want` accepts, taken into `buf`.
    fn take_aside<T: Elem>(
        &self,
        want: Want,
        buf: &mut [T],
        op: &'static str,
    ) -> Result<Option<Found>> {
        let mut aside = self.aside.borrow_mut();
        let Some(i) = aside.iter().position(|a| want.takes(a.src, a.tag)) else {
            return Ok(None);
        };
        let a = aside.remove(i).expect("found above");
        drop(aside);
        self.check::<T>((a.src, a.tag, a.typ, a.count), Some(buf.len()), op)?;
        if size_of::<T>() != 0 {
            // SAFETY: the type matched and `count` elements fit: the bytes are `count` `T`s'.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    a.bytes.as_ptr(),
                    buf.as_mut_ptr().cast::<u8>(),
                    a.bytes.len(),
                )
            };
        }
        Ok(Some(Found {
            src: a.src,
            tag: a.tag,
            count: a.count,
        }))
    }

    /// Fails (the run) unless a message of `count` elements of the type of fingerprint `typ`
    /// from `src` with `tag` fits `capacity` elements of `T` (`None`: a probe, type only).
    fn check<T: Elem>(
        &self,
        (src, tag, typ, count): (usize, u32, u64, usize),
        capacity: Option<usize>,
        op: &'static str,
    ) -> Result<()> {
        if typ == type_fingerprint::<T>() && capacity.is_none_or(|c| count <= c) {
            return Ok(());
        }
        let e = names::p2p_mismatch::<T>((self.rank(), src, op), tag, capacity, typ, Some(count));
        Err(self.local.fail(e))
    }

    /// Takes arrived message `a` into `buf` after checking it (a message that does not fit is
    /// still taken, into a throw-away buffer, so that its sender completes).
    fn deliver<T: Elem>(
        &self,
        ch: &Channels,
        a: Arrived,
        buf: &mut [T],
        op: &'static str,
    ) -> Result<Found> {
        let src = self.layout.offset(a.process) + a.thread;
        if let Err(e) = self.check::<T>((src, a.tag, a.typ, a.count), Some(buf.len()), op) {
            let mut sink = vec![0u8; a.bytes()];
            self.payload(ch, &a, sink.as_mut_ptr(), op, src)?;
            return Err(e);
        }
        let dst = if size_of::<T>() == 0 {
            std::ptr::NonNull::<u8>::dangling().as_ptr()
        } else {
            buf.as_mut_ptr().cast::<u8>()
        };
        debug_assert!(a.bytes() <= size_of_val(buf));
        self.payload(ch, &a, dst, op, src)?;
        Ok(Found {
            src,
            tag: a.tag,
            count: a.count,
        })
    }

    /// Receives `a`'s payload into `dst` (writable for `a.bytes()` bytes), waiting for a
    /// payload message that follows.
    fn payload(
        &self,
        ch: &Channels,
        a: &Arrived,
        dst: *mut u8,
        op: &'static str,
        src: usize,
    ) -> Result<()> {
        let me = self.local.rank();
        // SAFETY: `dst` is writable for `a.bytes()` bytes (every caller's buffer holds them)
        // and outlives this call, which completes the receive or gives it up before it
        // returns.
        let Some(mut req) = (unsafe { ch.payload(me, a, dst) }) else {
            return Ok(());
        };
        self.poll_until(op, src, || Ok(ch.test_one(&mut req)))
            .inspect_err(|_| ch.give_up_one(&mut req))
    }

    /// Moves arrived message `a` (from world rank `src`) aside with its payload.
    fn set_aside(&self, ch: &Channels, a: Arrived, src: usize, op: &'static str) -> Result<()> {
        let mut bytes = vec![0u8; a.bytes()];
        self.payload(ch, &a, bytes.as_mut_ptr(), op, src)?;
        self.aside.borrow_mut().push_back(Aside {
            src,
            tag: a.tag,
            typ: a.typ,
            count: a.count,
            bytes,
        });
        Ok(())
    }

    /// Sends `send` (world destination, tag, data) and receives into `buf` the first message
    /// `want` accepts, in one call that cannot deadlock against a matching one: a send to
    /// another process is posted before the receive and completed after it.
    pub(crate) fn sendrecv<T: Elem>(
        &self,
        (dest, tag, data): (usize, u32, &[T]),
        want: Want,
        buf: &mut [T],
    ) -> Result<Found> {
        const OP: &str = "sendrecv";
        let src_here = want.src.map(|s| self.place(s));
        match (self.place(dest), src_here) {
            (Place::Here(d), Some(Place::Here(s))) => {
                let local = Want {
                    src: Some(s),
                    ..want
                };
                let f = self.local.sendrecv((d, tag, data), local, buf)?;
                Ok(Found {
                    src: self.world(f.src),
                    ..f
                })
            }
            (Place::Here(d), _) => {
                // A send within the process completes once its receiver, which makes a
                // matching call, takes it.
                self.local.send(d, tag, data)?;
                self.recv(want, buf)
            }
            (Place::There(q, i), _) => {
                let ch = self.channels(OP)?;
                // SAFETY: as in `send`: completed or given up before this call returns.
                let mut s = unsafe { ch.post((q, i), self.local.rank(), tag, data) };
                let got = self.recv(want, buf);
                let sent = match &got {
                    Ok(_) => self.poll_until(OP, dest, || Ok(ch.test(&mut s))),
                    Err(_) => Err(Error::Aborted {
                        rank: self.rank(),
                        op: OP,
                        cause: Box::new(self.local.run().cause()),
                    }),
                };
                if sent.is_err() {
                    ch.give_up(&mut s);
                }
                let found = got?;
                sent.map(|()| found)
            }
        }
    }

    /// Reports the first message `want` accepts without receiving it, waiting for one if
    /// `block`: from this process, as its threads' probe does; from another (or any), by
    /// moving MPI's next matching message aside and reporting it from there.
    pub(crate) fn probe<T: Elem>(
        &self,
        op: &'static str,
        want: Want,
        block: bool,
    ) -> Result<Option<Found>> {
        if let Some(Place::Here(i)) = want.src.map(|s| self.place(s)) {
            let local = Want {
                src: Some(i),
                ..want
            };
            let f = self.local.probe::<T>(op, local, block)?;
            return Ok(f.map(|f| Found {
                src: self.world(f.src),
                ..f
            }));
        }
        if want.src.is_none() && self.layout.processes() == 1 {
            return self.local.probe::<T>(op, want, block);
        }
        let ch = self.channels(op)?;
        let mut found = None;
        let mut look = || -> Result<bool> {
            found = self.probe_once::<T>(ch, want, op)?;
            Ok(found.is_some() || !block)
        };
        if block {
            self.poll_until(op, want.src.unwrap_or(self.rank()), look)?;
        } else {
            look()?;
        }
        Ok(found)
    }

    /// One look for [`Bridge::probe`].
    fn probe_once<T: Elem>(
        &self,
        ch: &Channels,
        want: Want,
        op: &'static str,
    ) -> Result<Option<Found>> {
        if want.src.is_none() {
            let local = Want { src: None, ..want };
            if let Some(f) = self.local.probe::<T>(op, local, false)? {
                return Ok(Some(Found {
                    src: self.world(f.src),
                    ..f
                }));
            }
        }
        loop {
            let seen = {
                let aside = self.aside.borrow();
                aside
                    .iter()
                    .find(|a| want.takes(a.src, a.tag))
                    .map(|a| (a.src, a.tag, a.typ, a.count))
            };
            if let Some((src, tag, typ, count)) = seen {
                self.check::<T>((src, tag, typ, count), None, op)?;
                return Ok(Some(Found { src, tag, count }));
            }
            let process = match want.src.map(|s| self.place(s)) {
                Some(Place::There(q, _)) => Some(q),
                _ => None,
            };
            let Some(a) = ch.poll(self.local.rank(), process) else {
                return Ok(None);
            };
            let src = self.layout.offset(a.process) + a.thread;
            self.set_aside(ch, a, src, op)?;
        }
    }
}
