//! Point-to-point on a communicator whose ranks are the threads of several MPI processes.
//!
//! A message between two threads of one process goes through that process's mailboxes, as on
//! any team, and never touches MPI. A message to a thread of another process of the same node
//! goes through the node's shared memory (`process::p2p::node`; such messages are taken as the
//! relay's are, below; a receive from any rank looks there too). To another node it goes over
//! MPI:
//! under `Threading::Multiple` sent and received by the calling threads themselves on the
//! team's [`Channels`] (one duplicate communicator per receiving thread index,
//! `process::mpi::p2p`); under `Funneled` or `Serialized` through the process's leader,
//! which relays it ([`Relay`]: the sender's send completes once the leader has it, the
//! receiver takes it from its inbox).
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
//! core (and running the leader's relay, if it is the leader of a relaying process), and gives
//! up when this process's run fails, another process's run fails (its notice,
//! `Notices::notice`; a failing process sends one to every other, and a relaying leader that
//! receives one fails its process's run), or the team's timeout passes; an operation given up
//! is cancelled and waited for, so MPI never touches a caller's buffer after its call returns.
//! Deadlock detection does not reach across processes: only the team's timeout ends a cycle of
//! waits between processes.

use crate::error::{Error, Result};
use crate::mailbox::{names, type_fingerprint, Elem};
use crate::process::bridge::Bridge;
use crate::process::mpi::{new_stage, Arrived, Channels, Receiving, Stage};
use crate::process::p2p::node::Direct;
use crate::process::p2p::relay::Relay;
use crate::transport::shm::{Found, Want};
use ::mpi::ffi;
use std::cell::{RefCell, RefMut};
use std::collections::VecDeque;
use std::mem::{size_of, size_of_val};

/// A message from another process held for a later receive: moved aside by a receive that
/// wanted another, or put in a thread's inbox by its relaying leader.
pub(crate) struct Aside {
    /// The sender's world rank.
    pub(crate) src: usize,
    /// The user's tag.
    pub(crate) tag: u32,
    /// The element type's fingerprint.
    pub(crate) typ: u64,
    /// The number of elements.
    pub(crate) count: usize,
    /// The payload.
    pub(crate) bytes: Vec<u8>,
    /// The payload's receive, while it is not complete: in an inbox, the leader's (the
    /// message cannot be taken until the leader has completed it); aside, the rank's own (the
    /// receive that takes the message completes it, `Bridge::receive_aside`).
    pub(crate) pending: Option<Pending>,
}

/// A payload's receive posted into a held message's buffer and not yet complete.
pub(crate) struct Pending(pub(in crate::process) ffi::MPI_Request);

// SAFETY: the request is a handle that one thread uses: in an inbox the leader's (which tests
// and completes it, in `Relay::progress`; other threads only see whether an entry still has
// one), aside the rank's own.
unsafe impl Send for Pending {}

/// This rank's messages from other processes moved aside, oldest first.
pub(crate) type AsideQueue = RefCell<VecDeque<Aside>>;

/// A rank's staging buffers for messages to and from other processes, made on first use and
/// reused, so that a short message costs no allocation.
#[derive(Default)]
pub(crate) struct Stages {
    /// The header (and short payload) of the send in flight.
    send: RefCell<Vec<u8>>,
    /// Where the next header message is received.
    recv: RefCell<Option<Box<Stage>>>,
}

impl Stages {
    pub(in crate::process) fn recv(&self) -> RefMut<'_, Box<Stage>> {
        RefMut::map(self.recv.borrow_mut(), |stage| {
            stage.get_or_insert_with(new_stage)
        })
    }
}

/// How this rank reaches the threads of other processes.
pub(in crate::process) enum Link<'a> {
    /// Over MPI itself (`Threading::Multiple`).
    Direct(&'a Channels),
    /// Through its process's leader.
    Relay(&'a Relay),
    /// Through the rings of the node's segment only: one node holds every process.
    Node,
}

/// Where a rank of the world runs, seen from this rank.
pub(in crate::process) enum Place {
    /// In this process: its thread (local rank).
    Here(usize),
    /// In another process: the process and its thread there.
    There(usize, usize),
}

impl Want {
    pub(in crate::process) fn takes(&self, src: usize, tag: u32) -> bool {
        self.src.is_none_or(|s| s == src) && self.tag.is_none_or(|t| t == tag)
    }
}

impl Bridge {
    pub(in crate::process) fn place(&self, rank: usize) -> Place {
        let (q, i) = self.layout.locate(rank);
        if q == self.layout.process() {
            Place::Here(i)
        } else {
            Place::There(q, i)
        }
    }

    /// The world rank of this process's thread `i`.
    pub(in crate::process) fn world(&self, i: usize) -> usize {
        self.layout.offset(self.layout.process()) + i
    }

    /// How this rank reaches other processes.
    pub(in crate::process) fn link(&self) -> Link<'_> {
        match (&self.mail, &self.channels, &self.relay) {
            (Some(_), _, _) if self.layout.one_node() => Link::Node,
            (_, Some(ch), _) => Link::Direct(ch),
            (_, None, Some(relay)) => Link::Relay(relay),
            (_, None, None) => unreachable!("a hybrid team has channels or a relay"),
        }
    }

    /// Point-to-point send of `data` with `tag` to world rank `dest`.
    pub(crate) fn send<T: Elem>(&self, dest: usize, tag: u32, data: &[T]) -> Result<()> {
        if let Place::Here(i) = self.place(dest) {
            return self.local.send(i, tag, data);
        }
        self.send_away("send", dest, tag, data, &mut self.stages.send.borrow_mut())
    }

    /// [`Bridge::send`] as a non-blocking send runs it (in a task of a scope): within the
    /// process in its turn among the rank's sends (`Local::isend`); to another process posted
    /// at once (in call order, which MPI keeps) from a staging buffer of its own, and polled.
    pub(crate) fn isend<T: Elem>(&self, dest: usize, tag: u32, data: &[T]) -> Result<()> {
        if let Place::Here(i) = self.place(dest) {
            return self.local.isend(i, tag, data);
        }
        self.send_away("isend", dest, tag, data, &mut Vec::new())
    }

    /// Sends `data` with `tag` to world rank `dest` of another process, through `staged` (the
    /// header and a short payload).
    fn send_away<T: Elem>(
        &self,
        op: &'static str,
        dest: usize,
        tag: u32,
        data: &[T],
        staged: &mut Vec<u8>,
    ) -> Result<()> {
        let Place::There(q, i) = self.place(dest) else {
            unreachable!("a rank of another process")
        };
        if let Some(mail) = self.ring_to(dest) {
            return self.send_node(op, mail, dest, tag, data);
        }
        let from = self.local.rank();
        match self.link() {
            Link::Direct(ch) => {
                // SAFETY: `data` and `staged` are borrowed for this whole call, and the send
                // completes or is given up (cancelled and waited for) before it returns.
                let mut s = unsafe { ch.post((q, i), from, tag, data, staged) };
                self.poll_until(op, dest, || Ok(ch.test(&mut s)))
                    .inspect_err(|_| ch.give_up(&mut s))
            }
            Link::Relay(relay) => {
                if self.local.run().is_aborted() {
                    return Err(self.local.member().aborted(op));
                }
                let bytes = if size_of::<T>() == 0 {
                    Vec::new()
                } else {
                    // SAFETY: `data` is readable as `size_of_val(data)` initialised bytes
                    // (`Elem` types are plain data).
                    unsafe {
                        std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), size_of_val(data))
                    }
                    .to_vec()
                };
                relay.send(
                    (q, i),
                    (from, tag),
                    (type_fingerprint::<T>(), data.len()),
                    bytes,
                );
                // On the leader: out at once.
                crate::sync::idle::run();
                Ok(())
            }
            Link::Node => unreachable!("on one node every other process's rank has a ring"),
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
        if want.src.is_some_and(|s| self.ring_to(s).is_some()) {
            return self.recv_relayed(want, buf, OP);
        }
        let ch = match self.link() {
            Link::Direct(ch) => ch,
            Link::Relay(_) | Link::Node => return self.recv_relayed(want, buf, OP),
        };
        if let Some(a) = take(&mut self.aside.borrow_mut(), want) {
            return self.receive_aside(a, buf, OP);
        }
        let mut stage = self.stages.recv();
        let stage: *mut Stage = &mut **stage;
        loop {
            // With receives posted, listen to every process and classify for them too.
            let source = if self.posted.is_empty() {
                self.mpi_source(want)
            } else {
                None
            };
            // SAFETY: the staging buffer is this rank's, borrowed (the `RefMut` above) for
            // this whole call and touched only through `stage`; the receive is complete or
            // given up before the next one is posted and before this call returns.
            let mut r = unsafe { ch.post_recv(self.local.rank(), source, stage) };
            let (a, local) = self
                .posted
                .listening(|| self.wait_recv(ch, want, &mut r, buf, OP))?;
            if let Some(found) = local {
                if let Some(a) = a {
                    // It came anyway: to a posted receive or aside, for a later receive.
                    self.classify(ch, a, stage, OP)?;
                }
                return Ok(found);
            }
            let a = a.expect("a message came");
            let (src, tag) = (self.sender(&a), a.tag);
            if want.takes(src, tag) && !self.posted.takes(src, tag) {
                return self.deliver(ch, a, stage, buf, OP);
            }
            self.classify(ch, a, stage, OP)?;
        }
    }

    /// Waits for posted receive `r` to complete or, for a receive from any rank, a message
    /// within this process or from another of its node that `want` accepts (taken into
    /// `buf`): what came over MPI, and what came otherwise. On an error `r` is given up.
    fn wait_recv<T: Elem>(
        &self,
        ch: &Channels,
        want: Want,
        r: &mut Receiving,
        buf: &mut [T],
        op: &'static str,
    ) -> Result<(Option<Arrived>, Option<Found>)> {
        let mut arrived = None;
        let mut local = None;
        let waited = self.poll_until(op, want.src.unwrap_or(self.rank()), || {
            if want.src.is_none() {
                let here = Want { src: None, ..want };
                local = self.local.try_recv(here, &mut *buf)?.map(|f| Found {
                    src: self.world(f.src),
                    ..f
                });
                if local.is_none() && self.mail.is_some() {
                    // From the node's other processes.
                    local = self.take_node(want, &mut *buf, op)?;
                }
                if local.is_some() {
                    return Ok(true);
                }
            }
            arrived = ch.test_recv(r);
            Ok(arrived.is_some())
        });
        if waited.is_err() || local.is_some() && arrived.is_none() {
            arrived = ch.cancel_recv(r);
        }
        waited.map(|()| (arrived, local))
    }

    /// The process MPI's receives look at for `want`: its sender's, or any.
    pub(in crate::process) fn mpi_source(&self, want: Want) -> Option<usize> {
        match want.src.map(|s| self.place(s)) {
            Some(Place::There(q, _)) => Some(q),
            _ => None,
        }
    }

    /// The world rank that sent `a`.
    pub(in crate::process) fn sender(&self, a: &Arrived) -> usize {
        self.layout.offset(a.process) + a.thread
    }

    /// A receive through the relay or the node's rings: polls this rank's inbox (and for a
    /// receive from any rank, this process's mailboxes) until a message `want` accepts is
    /// there.
    fn recv_relayed<T: Elem>(&self, want: Want, buf: &mut [T], op: &'static str) -> Result<Found> {
        let mut got = None;
        self.poll_until(op, want.src.unwrap_or(self.rank()), || {
            // The leader relays on every poll: what it waits for comes only that way.
            crate::sync::idle::run();
            if want.src.is_none() {
                let here = Want { src: None, ..want };
                if let Some(f) = self.local.try_recv(here, &mut *buf)? {
                    got = Some(Found {
                        src: self.world(f.src),
                        ..f
                    });
                    return Ok(true);
                }
            }
            let ring = want.src.and_then(|s| self.ring_to(s));
            if let Some(mail) = ring {
                if let Some(a) = take(&mut self.aside.borrow_mut(), want) {
                    got = Some(self.unpack(a, &mut *buf, op)?);
                    return Ok(true);
                }
                match self.recv_direct(mail, want, &mut *buf, op)? {
                    Direct::Read(f) => {
                        got = Some(f);
                        return Ok(true);
                    }
                    Direct::Nothing => return Ok(false),
                    Direct::Other => {}
                }
            }
            got = if ring.is_some() {
                // Its sender's messages come through the rings only.
                self.take_node(want, &mut *buf, op)?
            } else {
                // (The relay's messages need no staging buffer.)
                let taken = self.next_aside(want, std::ptr::null_mut(), op)?;
                taken.map(|a| self.unpack(a, &mut *buf, op)).transpose()?
            };
            Ok(got.is_some())
        })?;
        Ok(got.expect("polled until a message came"))
    }

    /// Checks held message `a` against `buf` and copies it there.
    pub(in crate::process) fn unpack<T: Elem>(
        &self,
        a: Aside,
        buf: &mut [T],
        op: &'static str,
    ) -> Result<Found> {
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
        Ok(Found {
            src: a.src,
            tag: a.tag,
            count: a.count,
        })
    }

    /// Fails (the run) unless a message of `count` elements of the type of fingerprint `typ`
    /// from `src` with `tag` fits `capacity` elements of `T` (`None`: a probe, type only).
    pub(in crate::process) fn check<T: Elem>(
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

    /// Takes arrived message `a` (its header in `stage`) into `buf` after checking it (a
    /// message that does not fit is still taken, into a throw-away buffer, so that its sender
    /// completes).
    fn deliver<T: Elem>(
        &self,
        ch: &Channels,
        a: Arrived,
        stage: *const Stage,
        buf: &mut [T],
        op: &'static str,
    ) -> Result<Found> {
        let src = self.sender(&a);
        if let Err(e) = self.check::<T>((src, a.tag, a.typ, a.count), Some(buf.len()), op) {
            let mut sink = vec![0u8; a.bytes()];
            self.payload(ch, &a, stage, sink.as_mut_ptr(), op)?;
            return Err(e);
        }
        let dst = if size_of::<T>() == 0 {
            std::ptr::NonNull::<u8>::dangling().as_ptr()
        } else {
            buf.as_mut_ptr().cast::<u8>()
        };
        debug_assert!(a.bytes() <= size_of_val(buf));
        self.payload(ch, &a, stage, dst, op)?;
        Ok(Found {
            src,
            tag: a.tag,
            count: a.count,
        })
    }

    /// Receives `a`'s payload into `dst` (writable for `a.bytes()` bytes): from `stage`, where
    /// its header came, or waiting for a payload message that follows.
    pub(in crate::process) fn payload(
        &self,
        ch: &Channels,
        a: &Arrived,
        stage: *const Stage,
        dst: *mut u8,
        op: &'static str,
    ) -> Result<()> {
        let me = self.local.rank();
        // SAFETY: `stage` holds `a`'s header (every caller passes the buffer it was just
        // received into); `dst` is writable for `a.bytes()` bytes (every caller's buffer holds
        // them) and outlives this call, which completes the receive or gives it up before it
        // returns.
        let Some(mut req) = (unsafe { ch.payload(me, a, stage, dst) }) else {
            return Ok(());
        };
        self.poll_until(op, self.sender(a), || Ok(ch.test_one(&mut req)))
            .inspect_err(|_| ch.give_up_one(&mut req))
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
            (Place::There(..), _) if self.ring_to(dest).is_some() => {
                let mail = self.ring_to(dest).expect("matched above");
                self.sendrecv_node(mail, (dest, tag, data), want, buf)
            }
            (Place::There(..), _) if matches!(self.link(), Link::Relay(_)) => {
                // The relay's send completes at once.
                self.send(dest, tag, data)?;
                self.recv(want, buf)
            }
            (Place::There(q, i), _) => {
                let Link::Direct(ch) = self.link() else {
                    unreachable!("the relay's case is above")
                };
                let mut staged = self.stages.send.borrow_mut();
                // SAFETY: as in `send`: completed or given up before this call returns.
                let mut s = unsafe { ch.post((q, i), self.local.rank(), tag, data, &mut staged) };
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
}

/// Takes out of `queue` (the rank's messages aside) the first message `want` accepts.
pub(in crate::process) fn take(queue: &mut VecDeque<Aside>, want: Want) -> Option<Aside> {
    let i = queue.iter().position(|a| want.takes(a.src, a.tag))?;
    queue.remove(i)
}
