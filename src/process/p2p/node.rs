//! Point-to-point between processes of one node through its segment's rings
//! (`process::node::mail`): the path `process::p2p` takes to the other processes of a rank's node,
//! instead of MPI ([`Bridge::ring_to`]; when one node holds every process, the only path
//! between processes, `Link::Node`).
//!
//! A send frames its message (the communicator's context, tag, element type, count) onto the
//! ring from its rank to the receiver and is complete once the whole frame is written: at once
//! for a message that fits the ring's free space, in pieces as the receiver reads for a longer
//! one. Its waits read what comes for its own rank meanwhile, so two ranks sending long
//! messages to each other both complete. A receive reads its rings into its inbox, then takes
//! messages from there in order as it takes those a relaying leader brings in (`pump`: into
//! the oldest posted receive that accepts one, else aside), so MPI's matching rules hold as on
//! the other paths. A receive from one rank whose message is next on that rank's ring reads
//! it straight into its buffer instead (`recv_direct`), one copy less. The waits poll as every
//! wait for another process does (`poll_until`): nothing wakes a thread across processes.

use crate::error::{Error, Result};
use crate::mailbox::{type_fingerprint, Elem};
use crate::process::bridge::Bridge;
use crate::process::node::mail::{Header, Look, NodeMail, Sending};
use crate::process::p2p::paths::{take, Aside, Place};
use crate::transport::shm::{Found, Want};
use std::cell::RefCell;
use std::mem::size_of_val;

/// What [`Bridge::recv_direct`] did.
pub(in crate::process) enum Direct {
    /// Read the message into the buffer.
    Read(Found),
    /// Nothing from the sender has come.
    Nothing,
    /// Nothing: what has come goes the usual way.
    Other,
}

impl Bridge {
    /// Sends `data` with `tag` to world rank `dest` (of another process) through the node's
    /// rings (module docs).
    pub(in crate::process) fn send_node<T: Elem>(
        &self,
        op: &'static str,
        mail: &NodeMail,
        dest: usize,
        tag: u32,
        data: &[T],
    ) -> Result<()> {
        if self.local.run().is_aborted() {
            return Err(self.local.member().aborted(op));
        }
        let (mut s, bytes) = self.begin_node(mail, dest, tag, data);
        self.finish_node(op, mail, &mut s, bytes)
    }

    /// Begins a send of `data` with `tag` to world rank `dest` through the node's rings: the
    /// send and its payload's bytes.
    fn begin_node<'d, T: Elem>(
        &self,
        mail: &NodeMail,
        dest: usize,
        tag: u32,
        data: &'d [T],
    ) -> (Sending, &'d [u8]) {
        // SAFETY: `data` is readable as `size_of_val(data)` initialised bytes (`Elem` types are
        // plain data); a zero-sized or empty slice gives an empty one.
        let bytes =
            unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), size_of_val(data)) };
        let header = Header {
            ctx: self.context(),
            tag,
            typ: type_fingerprint::<T>(),
            count: data.len() as u64,
            bytes: bytes.len() as u64,
        };
        (mail.begin(self.rank(), dest, header), bytes)
    }

    /// Writes send `s` (of `bytes`) to its end, reading what comes for this rank meanwhile; a
    /// send that fails is given up.
    fn finish_node(
        &self,
        op: &'static str,
        mail: &NodeMail,
        s: &mut Sending,
        bytes: &[u8],
    ) -> Result<()> {
        self.poll_until(op, s.to(), || self.advance_node(op, mail, s, bytes))
            .inspect_err(|_| mail.give_up(self.rank(), s))
    }

    /// Writes what fits of send `s` (of `bytes`) and, unless it is all written, reads what
    /// has come for this rank: whether the send is all written.
    fn advance_node(
        &self,
        op: &'static str,
        mail: &NodeMail,
        s: &mut Sending,
        bytes: &[u8],
    ) -> Result<bool> {
        match mail.step(self.rank(), s, bytes) {
            Ok(true) => Ok(true),
            Ok(false) => self.collect_node(mail, op).map(|()| false),
            Err(_) => Err(self.broken(op, s.to())),
        }
    }

    /// `sendrecv` with the send through the node's rings: begun first, written on in every
    /// wait of the receive (an idle hook, so that waits within the process move it too, and
    /// read what comes for this rank), and finished after it, so that matching calls never
    /// wait for each other's sends.
    pub(in crate::process) fn sendrecv_node<T: Elem>(
        &self,
        mail: &NodeMail,
        (dest, tag, data): (usize, u32, &[T]),
        want: Want,
        buf: &mut [T],
    ) -> Result<Found> {
        const OP: &str = "sendrecv";
        if self.local.run().is_aborted() {
            return Err(self.local.member().aborted(OP));
        }
        let me = self.rank();
        let (s, bytes) = self.begin_node(mail, dest, tag, data);
        let s = RefCell::new(s);
        // Whether the send is written (or failed: its error comes again when it is finished).
        let written = std::cell::Cell::new(false);
        // Reads what comes for this rank too: the receiver of this rank's send may be
        // blocked the same way, waiting in its receive for a rank that waits for this one.
        let hook = || {
            if written.get() {
                // (A broken ring fails the receive that reads it.)
                let _ = mail.collect(me, mail.others());
                return false;
            }
            let Ok(mut s) = s.try_borrow_mut() else {
                return false;
            };
            let done = !matches!(self.advance_node(OP, mail, &mut s, bytes), Ok(false));
            written.set(done);
            true
        };
        hook();
        let got = crate::sync::idle::with_idle(&crate::sync::idle::FnIdle(&hook), || {
            self.recv(want, buf)
        });
        let mut s = s.into_inner();
        match got {
            Ok(found) => self.finish_node(OP, mail, &mut s, bytes).map(|()| found),
            Err(e) => {
                mail.give_up(me, &s);
                Err(e)
            }
        }
    }

    /// A receive of `want` from a rank of another process that reads the message straight
    /// into `buf` when the next frame on that rank's ring to this one is it (this
    /// communicator's, a tag `want` takes, the type and a length that fit) and nothing comes
    /// before it: no posted receive that could claim it, nothing of its sender's in the inbox
    /// (the caller has looked aside). Otherwise whether nothing has come from the sender yet,
    /// or something that goes the way of every other message (`pump`).
    pub(in crate::process) fn recv_direct<T: Elem>(
        &self,
        mail: &NodeMail,
        want: Want,
        buf: &mut [T],
        op: &'static str,
    ) -> Result<Direct> {
        let Some(src) = want.src else {
            return Ok(Direct::Other);
        };
        if !self.posted.is_empty() {
            return Ok(Direct::Other);
        }
        let (me, ctx) = (self.rank(), self.context());
        let h = match mail.look(me, ctx, src) {
            Look::Frame(h) => h,
            Look::Nothing => return Ok(Direct::Nothing),
            Look::Busy => return Ok(Direct::Other),
        };
        let fits = h.typ == type_fingerprint::<T>() && h.count as usize <= buf.len();
        if h.ctx != ctx || !want.takes(src, h.tag) || !fits {
            return Ok(Direct::Other);
        }
        debug_assert!(h.bytes as usize <= size_of_val(buf));
        // SAFETY: `buf` holds at least `count` elements of the message's type, `h.bytes`
        // bytes (the same type: the sender's `count · size`); any bytes are valid `Elem`s.
        let dst = unsafe {
            std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), h.bytes as usize)
        };
        let mut d = mail.direct(me, src);
        let mut filled = 0;
        self.poll_until(op, src, || {
            filled += d
                .pull(&mut dst[filled..])
                .map_err(|_| self.broken(op, src))?;
            Ok(d.left() == 0)
        })?;
        Ok(Direct::Read(Found {
            src,
            tag: h.tag,
            count: h.count as usize,
        }))
    }

    /// The node's rings, if world rank `r` runs in another process of this rank's node.
    pub(in crate::process) fn ring_to(&self, r: usize) -> Option<&NodeMail> {
        let mail = self.mail.as_deref()?;
        (mail.holds_rank(r) && matches!(self.place(r), Place::There(..))).then_some(mail)
    }

    /// Brings in every message that has come through the node's rings for this communicator
    /// and hands each, in order, to the oldest posted receive that accepts it, else aside.
    pub(in crate::process) fn pump_node(&self, op: &'static str) -> Result<()> {
        let Some(mail) = self.mail.as_deref() else {
            return Ok(());
        };
        self.collect_node(mail, op)?;
        while let Some(a) = self.next_node(mail) {
            self.hand_in(a)?;
        }
        Ok(())
    }

    /// The first message `want` accepts from the node's other processes, taken into `buf`:
    /// aside already, or brought in now (`pump_node`).
    pub(in crate::process) fn take_node<T: Elem>(
        &self,
        want: Want,
        buf: &mut [T],
        op: &'static str,
    ) -> Result<Option<Found>> {
        self.pump_node(op)?;
        let a = take(&mut self.aside.borrow_mut(), want);
        a.map(|a| self.unpack(a, buf, op)).transpose()
    }

    /// Reads what has come for this rank from the other processes' ranks into its inbox.
    pub(in crate::process) fn collect_node(&self, mail: &NodeMail, op: &'static str) -> Result<()> {
        mail.collect(self.rank(), mail.others())
            .map_err(|(_, from)| self.broken(op, from))
    }

    /// The oldest message in this rank's inbox of this communicator, as one held for a
    /// receive.
    pub(in crate::process) fn next_node(&self, mail: &NodeMail) -> Option<Aside> {
        let l = mail.next(self.rank(), self.context())?;
        Some(Aside {
            src: l.src,
            tag: l.header.tag,
            typ: l.header.typ,
            count: l.header.count as usize,
            bytes: l.payload,
            pending: None,
        })
    }

    /// The error of a ring to or from world rank `peer` on which a send gave up halfway (its
    /// process's run failed): this run fails too.
    fn broken(&self, op: &'static str, peer: usize) -> Error {
        let (process, _) = self.layout.locate(peer);
        self.local.fail(Error::ProcessFailed {
            rank: self.rank(),
            op,
            process,
        })
    }
}
