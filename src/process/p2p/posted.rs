//! Non-blocking receives on a communicator whose ranks span processes: receives *posted* for
//! messages from other processes, matched in MPI's order with the rank's other receives.
//!
//! MPI gives an incoming message to the earliest posted receive that accepts it. Among the
//! threads of one process, `transport::shm`'s posted receives do that; here the same rule is
//! kept for the messages that come over MPI (or through the relaying leader). Every message
//! from another process is *classified* as soon as its header is in this rank's hands, in the
//! order MPI delivers them: it goes to the oldest posted receive that accepts it ([`Remote`];
//! its payload, if it follows in a message of its own, straight into that receive's buffer),
//! else to the receive that brought it in (a blocking one takes it directly), else aside
//! (`process::p2p`'s queue, its payload arriving meanwhile). Whoever brings messages in — a
//! blocking receive, a probe, a posted receive looking for its own — classifies them all, so
//! a posted receive is served by whichever call of the rank runs next.
//!
//! A posted receive never looks at what is aside: it did when it was posted, and a message
//! goes aside only if no posted receive accepts it. A receive from any rank is posted twice,
//! for messages from other processes here and among the process's threads in
//! `transport::shm` ([`crate::transport::shm::PostedRecv`]), with one gate that closes when
//! either side fills it.
//!
//! **One classifier at a time.** A blocking receive under `Threading::Multiple` waits for its
//! header with an MPI receive posted in advance; while that receive is out, another look at
//! MPI (a request's, run from the wait's idle hook) could take a later message of the same
//! sender and classify it first. So while one is posted ([`RemotePosted::listening`]) the
//! requests' looks leave MPI alone, and the blocking receive, which then listens to every
//! process if receives are posted, classifies for them.

use crate::error::Result;
use crate::mailbox::Elem;
use crate::process::bridge::Bridge;
use crate::process::mpi::{new_stage, Arrived, Channels, Stage};
use crate::process::p2p::paths::{take, Aside, Link, Pending, Place};
use crate::transport::shm::{Found, Gate, PostedQueue, Posting, Want};
use ::mpi::ffi;
use std::cell::{Cell, RefCell};

/// Checks a message (sender, tag, type fingerprint, count) against a buffer of some capacity
/// of the receive's element type: `Bridge::check` of that type.
type Check = fn(&Bridge, (usize, u32, u64, usize), Option<usize>, &'static str) -> Result<()>;

/// A posted receive for messages from other processes: what it accepts, its buffer (erased to
/// bytes, with the check of its element type) and its gate.
struct Remote {
    want: Want,
    buf: *mut u8,
    /// Capacity in elements.
    len: usize,
    check: Check,
    gate: Gate,
}

impl Posting for Remote {
    fn gate(&self) -> Option<&Gate> {
        Some(&self.gate)
    }
}

/// A posted receive that took a message whose payload is still coming into its buffer.
struct Filling {
    id: u64,
    req: ffi::MPI_Request,
    found: Found,
}

/// A rank's posted receives for messages from other processes, oldest first, with those whose
/// payload is on its way and the outcomes of those matched.
#[derive(Default)]
pub(crate) struct RemotePosted {
    queue: PostedQueue<Remote>,
    filling: RefCell<Vec<Filling>>,
    /// Whether a blocking receive of the rank has a header receive posted to MPI (module
    /// docs: one classifier at a time).
    listening: Cell<bool>,
}

// SAFETY: postings (with their pointers to a buffer, and their gates) and payload requests exist
// only during a call of `Bridge::irecv`, on the rank's thread, which borrows the rank's
// communicator for the whole call; so the communicator moves to another thread only while
// there are none.
unsafe impl Send for RemotePosted {}

impl RemotePosted {
    /// Whether no receive is posted.
    pub(in crate::process) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether an open posted receive takes a message from `src` with `tag`.
    pub(in crate::process) fn takes(&self, src: usize, tag: u32) -> bool {
        self.queue.any(|p| p.want.takes(src, tag))
    }

    /// Runs `f` as a blocking receive's wait with its header receive posted (module docs).
    pub(in crate::process) fn listening<R>(&self, f: impl FnOnce() -> R) -> R {
        let _listening = crate::sync::Raised::new(&self.listening);
        f()
    }

    /// Posts a receive of `want` into `buf`, open while `gate` is; its number.
    ///
    /// # Safety
    /// The posting keeps a pointer to `buf`: it must be withdrawn ([`Withdraw`]) before
    /// `buf`'s borrow ends, and `buf` left alone until then except by whoever closed the gate.
    unsafe fn post<T: Elem>(&self, want: Want, buf: &mut [T], gate: &Gate) -> u64 {
        self.queue.post(Remote {
            want,
            buf: buf.as_mut_ptr().cast(),
            len: buf.len(),
            check: Bridge::check::<T>,
            gate: gate.clone(),
        })
    }

    /// The oldest open posted receive that takes a message from `src` with `tag`, no longer
    /// posted, its gate closed.
    fn claim(&self, src: usize, tag: u32) -> Option<(u64, Remote)> {
        self.queue.claim(|p| p.want.takes(src, tag))
    }

    /// The outcome of receive `id`, if it is complete (its payload in, where one followed).
    fn outcome(&self, id: u64, ch: Option<&Channels>) -> Option<Result<Found>> {
        if let Some(got) = self.queue.take_matched(id) {
            return Some(got);
        }
        let mut filling = self.filling.borrow_mut();
        let i = filling.iter().position(|f| f.id == id)?;
        let ch = ch.expect("payloads follow only on channels");
        if !ch.test_one(&mut filling[i].req) {
            return None;
        }
        Some(Ok(filling.swap_remove(i).found))
    }
}

/// Withdraws posted receive `id` when dropped (returned, failed or unwound): a payload still
/// coming into its buffer is cancelled and waited for first.
struct Withdraw<'a> {
    bridge: &'a Bridge,
    id: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let posted = &self.bridge.posted;
        posted.queue.withdraw(self.id);
        let filling = {
            let mut filling = posted.filling.borrow_mut();
            let i = filling.iter().position(|f| f.id == self.id);
            i.map(|i| filling.swap_remove(i))
        };
        if let (Some(mut f), Link::Direct(ch)) = (filling, self.bridge.link()) {
            ch.give_up_one(&mut f.req);
        }
    }
}

impl Bridge {
    /// A message from another process, in hand (`a`): into the oldest posted receive that
    /// accepts it, else aside.
    pub(in crate::process) fn hand_in(&self, a: Aside) -> Result<()> {
        debug_assert!(a.pending.is_none(), "a message whose payload is in");
        let Some((id, p)) = self.posted.claim(a.src, a.tag) else {
            self.aside.borrow_mut().push_back(a);
            return Ok(());
        };
        let got = (p.check)(self, (a.src, a.tag, a.typ, a.count), Some(p.len), "irecv").map(|()| {
            // SAFETY: the posting's buffer is live and left to whoever closed its gate (here);
            // the check passed: the bytes are at most `len` elements of its type.
            unsafe { std::ptr::copy_nonoverlapping(a.bytes.as_ptr(), p.buf, a.bytes.len()) };
            Found {
                src: a.src,
                tag: a.tag,
                count: a.count,
            }
        });
        self.posted.queue.record(id, got.clone());
        got.map(drop)
    }

    /// A message from another process whose header has just arrived in `stage` (`a`):
    /// into the oldest posted receive that accepts it, its payload received straight into
    /// that receive's buffer; else aside, its payload arriving meanwhile.
    pub(in crate::process) fn classify(
        &self,
        ch: &Channels,
        a: Arrived,
        stage: *const Stage,
        op: &'static str,
    ) -> Result<()> {
        let me = self.local.rank();
        let src = self.sender(&a);
        let Some((id, p)) = self.posted.claim(src, a.tag) else {
            let mut bytes = vec![0u8; a.bytes()];
            // SAFETY: `stage` holds `a`'s header; `bytes` is writable for `a.bytes()` bytes
            // and moves into the aside entry, whose `pending` holds the receive until it is
            // complete (or leaks the buffer, `Aside`'s drop).
            let pending = unsafe { ch.payload(me, &a, stage, bytes.as_mut_ptr()) };
            self.aside.borrow_mut().push_back(Aside {
                src,
                tag: a.tag,
                typ: a.typ,
                count: a.count,
                bytes,
                pending: pending.map(Pending),
            });
            return Ok(());
        };
        let found = Found {
            src,
            tag: a.tag,
            count: a.count,
        };
        if let Err(e) = (p.check)(self, (src, a.tag, a.typ, a.count), Some(p.len), op) {
            self.posted.queue.record(id, Err(e.clone()));
            let mut sink = vec![0u8; a.bytes()];
            self.payload(ch, &a, stage, sink.as_mut_ptr(), op)?;
            return Err(e);
        }
        // SAFETY: `stage` holds `a`'s header; the posting's buffer holds `a.bytes()` bytes
        // (checked above) and is left alone by its owner until the payload is in or given up
        // (`Withdraw`), since the gate is closed.
        match unsafe { ch.payload(me, &a, stage, p.buf) } {
            None => self.posted.queue.record(id, Ok(found)),
            Some(req) => self
                .posted
                .filling
                .borrow_mut()
                .push(Filling { id, req, found }),
        }
        Ok(())
    }

    /// Brings in and classifies every message from another process that `want` could take
    /// and that has come: through the node's rings (`pump_node`); from MPI (its sender's
    /// process, or any), unless a blocking receive of the rank is listening there; or out of
    /// the relaying leader's inbox, in order, up to one whose payload the leader has not
    /// received yet.
    pub(in crate::process) fn pump(
        &self,
        want: Want,
        stage: *mut Stage,
        op: &'static str,
    ) -> Result<()> {
        self.pump_node(op)?;
        match self.link() {
            Link::Direct(ch) => {
                if self.posted.listening.get() {
                    return Ok(());
                }
                for a in self.aside.borrow_mut().iter_mut() {
                    if a.pending.as_mut().is_some_and(|p| ch.test_one(&mut p.0)) {
                        a.pending = None;
                    }
                }
                let source = self.mpi_source(want);
                // SAFETY: `stage` is the caller's, writable and otherwise unused during the
                // call, and holds each header until `classify` has taken it in.
                while let Some(a) = unsafe { ch.poll(self.local.rank(), source, stage) } {
                    self.classify(ch, a, stage, op)?;
                }
                Ok(())
            }
            Link::Node => Ok(()),
            Link::Relay(relay) => loop {
                let next = {
                    let mut inbox = relay.inbox(self.local.rank());
                    match inbox.front() {
                        Some(a) if a.pending.is_none() => inbox.pop_front(),
                        _ => None,
                    }
                };
                match next {
                    Some(a) => self.hand_in(a)?,
                    None => return Ok(()),
                }
            },
        }
    }

    /// The first message aside that `want` accepts, brought in first (`pump`).
    pub(in crate::process) fn next_aside(
        &self,
        want: Want,
        stage: *mut Stage,
        op: &'static str,
    ) -> Result<Option<Aside>> {
        self.pump(want, stage, op)?;
        Ok(take(&mut self.aside.borrow_mut(), want))
    }

    /// Receives held message `a` into `buf`: waits for its payload if it is still coming,
    /// then checks it and copies it in.
    pub(in crate::process) fn receive_aside<T: Elem>(
        &self,
        mut a: Aside,
        buf: &mut [T],
        op: &'static str,
    ) -> Result<Found> {
        if let (Some(p), Link::Direct(ch)) = (&mut a.pending, self.link()) {
            self.poll_until(op, a.src, || Ok(ch.test_one(&mut p.0)))
                .inspect_err(|_| ch.give_up_one(&mut p.0))?;
            a.pending = None;
        }
        self.unpack(a, buf, op)
    }

    /// Point-to-point receive as a non-blocking receive runs it (in a task of a scope): takes
    /// the first message `want` accepts if it has come, else posts the receive (for both
    /// other processes' messages and, for a receive from any rank, this process's) and waits
    /// until one of the rank's calls gives it its message.
    pub(crate) fn irecv<T: Elem>(&self, want: Want, buf: &mut [T]) -> Result<Found> {
        const OP: &str = "irecv";
        let world = |f: Found| Found {
            src: self.world(f.src),
            ..f
        };
        if let Some(Place::Here(i)) = want.src.map(|s| self.place(s)) {
            let local = Want {
                src: Some(i),
                ..want
            };
            return self.local.irecv(local, buf).map(world);
        }
        if want.src.is_none() && self.layout.processes() == 1 {
            return self.local.irecv(want, buf);
        }
        let here = Want { src: None, ..want };
        if want.src.is_none() {
            if let Some(f) = self.local.try_recv(here, &mut *buf)? {
                return Ok(world(f));
            }
        }
        let mut stage = new_stage();
        let stage: *mut Stage = &mut *stage;
        if let Some(a) = self.next_aside(want, stage, OP)? {
            return self.receive_aside(a, buf, OP);
        }
        let gate = Gate::open();
        // SAFETY: `_withdraw` withdraws the posting when this function returns or unwinds,
        // before `buf`'s borrow ends, and `buf` is not touched here until then.
        let id = unsafe { self.posted.post(want, buf, &gate) };
        let _withdraw = Withdraw { bridge: self, id };
        // SAFETY: as above: `_shared` is dropped before `buf`; the other matcher
        // (the posting above) writes `buf` only after closing the gate.
        let _shared = want
            .src
            .is_none()
            .then(|| unsafe { self.local.post_shared(here, buf, &gate) });
        let ch = match self.link() {
            Link::Direct(ch) => Some(ch),
            Link::Relay(_) | Link::Node => None,
        };
        let mut got = None;
        self.poll_until(OP, want.src.unwrap_or(self.rank()), || {
            got = self.posted.outcome(id, ch);
            if got.is_none() {
                if let Some(shared) = &_shared {
                    got = self.local.poll_posted(shared)?.map(|f| Ok(world(f)));
                }
            }
            if got.is_none() && gate.is_open() {
                self.pump(want, stage, OP)?;
                got = self.posted.outcome(id, ch);
            }
            Ok(got.is_some())
        })?;
        got.expect("polled until it came")
    }
}

impl Drop for Aside {
    /// Leaks the buffer of a payload MPI has not finished receiving into (only on a failed
    /// run or at the end of the team): MPI may still write to it.
    fn drop(&mut self) {
        if self.pending.is_some() {
            std::mem::forget(std::mem::take(&mut self.bytes));
        }
    }
}

impl std::fmt::Debug for RemotePosted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemotePosted")
            .field("waiting", &self.queue.len())
            .finish_non_exhaustive()
    }
}
