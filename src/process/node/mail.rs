//! Point-to-point between the processes of one node through its segment: one `ring` per
//! ordered pair of ranks of different processes, and messages framed on it.
//!
//! A message is a frame: a header (the communicator's context, the user's tag, the element
//! type's fingerprint, the count and the payload's bytes) and the payload, written into the
//! sender's ring to the receiver as space allows and read out as it comes. A frame longer
//! than the ring goes through in pieces: the sender waits for the receiver to take the
//! earlier bytes, as a rendezvous send waits for its receive. Messages of one sender to one
//! receiver share one ring, so they arrive in the order they were sent, whatever their
//! communicator or tag (MPI's non-overtaking rule).
//!
//! **Sending.** A rank's sends to one receiver take turns in call order ([`Sending`]'s
//! ticket), so that a non-blocking send suspended halfway through its frame (a task) is never
//! interleaved with a later send's. A send given up before it wrote a byte gives its turn
//! away; one given up halfway marks the ring *broken* (on the sender's line), and every later
//! send or receive on it fails: the frame can never be finished.
//!
//! **Receiving.** The receiving rank alone reads its rings ([`NodeMail::collect`]): a frame's
//! header, then its payload into a buffer of its own, and once whole, the message joins the
//! rank's inbox of its communicator's context, in arrival order; `process`'s point-to-point
//! takes messages from there as it takes those a relaying leader brings in.

use super::ring::{Lines, Raw, Ring};
use super::Segment;
use crate::sync::{AtomicU64, CachePadded, Ordering};
use parking_lot::{Mutex, MutexGuard};
use std::collections::VecDeque;
use std::mem::size_of;
use std::sync::Arc;

/// Bytes of a ring's data.
pub(crate) const RING_BYTES: usize = 32 << 10;

/// Bytes of a frame's header.
const HEADER: usize = 40;

/// A ring's lines and its flag, then its data.
#[derive(Default)]
struct RingHead {
    lines: Lines,
    /// Non-zero once a send gave up halfway through a frame (written by the sender).
    broken: CachePadded<AtomicU64>,
}

/// Bytes from one ring to the next.
const STRIDE: usize = size_of::<RingHead>() + RING_BYTES;

/// Bytes of the rings of a node of `ranks` ranks (one per ordered pair; those within one
/// process are never touched, so their pages are never allocated).
pub(crate) fn bytes(ranks: usize) -> usize {
    ranks * ranks * STRIDE
}

/// What a frame's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// The communicator's context.
    pub(crate) ctx: u64,
    /// The user's tag.
    pub(crate) tag: u32,
    /// The element type's fingerprint.
    pub(crate) typ: u64,
    /// The number of elements.
    pub(crate) count: u64,
    /// The payload's bytes.
    pub(crate) bytes: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        h[0..8].copy_from_slice(&self.ctx.to_ne_bytes());
        h[8..16].copy_from_slice(&u64::from(self.tag).to_ne_bytes());
        h[16..24].copy_from_slice(&self.typ.to_ne_bytes());
        h[24..32].copy_from_slice(&self.count.to_ne_bytes());
        h[32..40].copy_from_slice(&self.bytes.to_ne_bytes());
        h
    }

    fn decode(h: &[u8; HEADER]) -> Header {
        let word = |i: usize| u64::from_ne_bytes(h[i..i + 8].try_into().expect("8 bytes"));
        Header {
            ctx: word(0),
            tag: word(8) as u32,
            typ: word(16),
            count: word(24),
            bytes: word(32),
        }
    }
}

/// A whole message taken off a ring.
#[derive(Debug)]
pub(crate) struct Letter {
    /// The sender.
    pub(crate) src: usize,
    pub(crate) header: Header,
    pub(crate) payload: Vec<u8>,
}

/// A frame being read off one ring.
struct Reading {
    head: [u8; HEADER],
    /// Header bytes read.
    have: usize,
    /// The header, once whole, and the payload so far.
    body: Option<(Header, Vec<u8>)>,
    /// Payload bytes read.
    filled: usize,
    /// Whether a receive is reading the current frame's payload straight into its buffer
    /// ([`NodeMail::direct`]): others leave the ring alone meanwhile.
    direct: bool,
    /// Whether such a receive gave up halfway: the rest of the ring cannot be read.
    lost: bool,
}

impl Reading {
    /// Whether some of a frame is read (into this reading).
    fn begun(&self) -> bool {
        self.have > 0 || self.body.is_some()
    }

    /// Whether no frame is begun, here or by a straight read.
    fn idle(&self) -> bool {
        !self.begun() && !self.direct && !self.lost
    }
}

impl Default for Reading {
    fn default() -> Self {
        Reading {
            head: [0; HEADER],
            have: 0,
            body: None,
            filled: 0,
            direct: false,
            lost: false,
        }
    }
}

/// What one rank of this process keeps of its mail.
struct Desk {
    /// By sender's rank: the frame being read.
    reading: Vec<Reading>,
    /// By context (a few): whole messages, oldest first.
    inbox: Vec<(u64, VecDeque<Letter>)>,
    /// By receiver's rank: the next ticket, the ticket served, and tickets given up before
    /// their turn.
    turns: Vec<Turns>,
}

impl Desk {
    /// A rank's desk on a node of `ranks` ranks.
    fn new(ranks: usize) -> Desk {
        Desk {
            reading: (0..ranks).map(|_| Reading::default()).collect(),
            inbox: Vec::new(),
            turns: (0..ranks).map(|_| Turns::default()).collect(),
        }
    }

    /// The inbox of context `ctx`.
    fn inbox(&mut self, ctx: u64) -> &mut VecDeque<Letter> {
        let i = match self.inbox.iter().position(|(c, _)| *c == ctx) {
            Some(i) => i,
            None => {
                self.inbox.push((ctx, VecDeque::new()));
                self.inbox.len() - 1
            }
        };
        &mut self.inbox[i].1
    }
}

#[derive(Default)]
struct Turns {
    next: u64,
    serving: u64,
    skipped: Vec<u64>,
}

impl Turns {
    /// The turn after the one served now, past those given up.
    fn pass(&mut self) {
        self.serving += 1;
        while let Some(i) = self.skipped.iter().position(|&t| t == self.serving) {
            self.skipped.swap_remove(i);
            self.serving += 1;
        }
    }
}

/// Why mail between two ranks cannot go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Broken;

/// A send in progress: its turn, its header and how much of the frame is written.
#[derive(Debug)]
pub(crate) struct Sending {
    to: usize,
    ticket: u64,
    head: [u8; HEADER],
    done: usize,
}

impl Sending {
    /// The receiver (its rank on the node).
    pub(crate) fn to(&self) -> usize {
        self.to
    }
}

/// This process's side of its node's mail (module docs).
pub(crate) struct NodeMail {
    /// Keeps the mapping alive.
    _segment: Arc<Segment>,
    /// The first ring.
    rings: *mut u8,
    /// The world's number of the node's first rank.
    base: usize,
    /// Ranks of the node.
    ranks: usize,
    /// This process's first rank (the world's number).
    first: usize,
    /// By thread of this process.
    desks: Vec<Mutex<Desk>>,
}

// SAFETY: the rings are shared memory whose every access follows the ring's protocol (one
// sender and one receiver per ring, each the only one to use its side: a rank's own thread);
// the rest is behind locks.
unsafe impl Send for NodeMail {}
// SAFETY: see `Send`.
unsafe impl Sync for NodeMail {}

impl std::fmt::Debug for NodeMail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeMail")
            .field("ranks", &self.ranks)
            .field("first", &self.first)
            .field("threads", &self.desks.len())
            .finish_non_exhaustive()
    }
}

impl NodeMail {
    /// The mail of the process whose ranks are `first..first + threads` of a node whose ranks
    /// are `base..base + ranks` (the world's numbers, which every call here takes), over the
    /// rings at byte `offset` of `segment` ([`bytes`]`(ranks)` long, zeroed when made; every
    /// process of the node uses the same offset and numbers).
    pub(crate) fn new(
        segment: Arc<Segment>,
        offset: usize,
        (base, ranks): (usize, usize),
        (first, threads): (usize, usize),
    ) -> NodeMail {
        assert!(offset + bytes(ranks) <= segment.len());
        assert!(base <= first && first + threads <= base + ranks);
        assert!(offset.is_multiple_of(128));
        // SAFETY: within the mapping (asserted).
        let rings = unsafe { segment.base().add(offset) };
        NodeMail {
            _segment: segment,
            rings,
            base,
            ranks,
            first,
            desks: (0..threads).map(|_| Mutex::new(Desk::new(ranks))).collect(),
        }
    }

    /// Whether world rank `r` runs on this node.
    pub(crate) fn holds_rank(&self, r: usize) -> bool {
        (self.base..self.base + self.ranks).contains(&r)
    }

    /// The ring from rank `from` to rank `to`: its head and its bytes.
    fn ring(&self, from: usize, to: usize) -> (&RingHead, Raw) {
        debug_assert!(self.holds_rank(from) && self.holds_rank(to));
        let (from, to) = (from - self.base, to - self.base);
        // SAFETY: ring (from, to) lies within the rings' area (`new`), page-aligned plus a
        // multiple of `STRIDE` (a multiple of 128), so its head is aligned; zeroed memory is a
        // valid `RingHead` (atomics of `u64`), only ever used through atomics.
        unsafe {
            let at = self.rings.add((from * self.ranks + to) * STRIDE);
            let head = &*at.cast::<RingHead>();
            let raw = Raw {
                base: at.add(size_of::<RingHead>()),
                capacity: RING_BYTES,
            };
            (head, raw)
        }
    }

    fn desk(&self, me: usize) -> MutexGuard<'_, Desk> {
        self.desks[me - self.first].lock()
    }

    /// Begins a send of `header`'s message from `me` to `to` (ranks of the node; `me` of this
    /// process, `to` of another): its turn, after `me`'s earlier sends to `to`.
    pub(crate) fn begin(&self, me: usize, to: usize, header: Header) -> Sending {
        let mut desk = self.desk(me);
        let turns = &mut desk.turns[to - self.base];
        let ticket = turns.next;
        turns.next += 1;
        Sending {
            to,
            ticket,
            head: header.encode(),
            done: 0,
        }
    }

    /// Writes what fits of `s`'s frame (its header, then `payload`, the bytes the header
    /// announced) once it is `s`'s turn: whether the frame is all written (now or before).
    pub(crate) fn step(&self, me: usize, s: &mut Sending, payload: &[u8]) -> Result<bool, Broken> {
        let total = HEADER + payload.len();
        if s.done == total {
            return Ok(true);
        }
        let (head, raw) = self.ring(me, s.to);
        if head.broken.load(Ordering::Acquire) != 0 {
            return Err(Broken);
        }
        let mut desk = self.desk(me);
        let turns = &mut desk.turns[s.to - self.base];
        if turns.serving != s.ticket {
            return Ok(false);
        }
        let ring = Ring::new(&head.lines, raw);
        while s.done < total {
            let n = if s.done < HEADER {
                ring.push_two(&s.head[s.done..], payload)
            } else {
                ring.push(&payload[s.done - HEADER..])
            };
            if n == 0 {
                return Ok(false);
            }
            s.done += n;
        }
        turns.pass();
        Ok(true)
    }

    /// Ends send `s` that will not be finished (an error ended its wait): gives its turn
    /// away if it wrote nothing, else marks its ring broken (module docs).
    pub(crate) fn give_up(&self, me: usize, s: &Sending) {
        if s.done > 0 {
            let (head, _) = self.ring(me, s.to);
            head.broken.store(1, Ordering::Release);
        }
        let mut desk = self.desk(me);
        let turns = &mut desk.turns[s.to - self.base];
        if s.done > 0 {
            return;
        }
        if turns.serving == s.ticket {
            turns.pass();
        } else if turns.serving < s.ticket {
            turns.skipped.push(s.ticket);
        }
    }

    /// Reads what has come for `me` from every rank of the other processes (`senders`, node
    /// ranks): each whole message joins `me`'s inbox of its context. An error names a sender
    /// whose ring is broken with nothing whole left on it.
    pub(crate) fn collect(
        &self,
        me: usize,
        senders: impl Iterator<Item = usize>,
    ) -> Result<(), (Broken, usize)> {
        let mut desk = self.desk(me);
        let desk = &mut *desk;
        for from in senders {
            let (head, raw) = self.ring(from, me);
            let ring = Ring::new(&head.lines, raw);
            let reading = &desk.reading[from - self.base];
            if reading.lost {
                return Err((Broken, from));
            }
            if reading.direct {
                continue;
            }
            while let Some(letter) = read(&ring, &mut desk.reading[from - self.base], from) {
                desk.inbox(letter.header.ctx).push_back(letter);
            }
            // The broken frame is the last the sender wrote, and every whole one before it is
            // read above: what is left is the broken one's start.
            if desk.reading[from - self.base].begun() && head.broken.load(Ordering::Acquire) != 0 {
                return Err((Broken, from));
            }
        }
        Ok(())
    }

    /// What a receive of context `ctx` from `from` finds next from it at `me` (one look, one
    /// lock): a frame not begun whose header has come whole (a receive may then read it
    /// [`NodeMail::direct`]), nothing yet, or something for the usual way — a frame begun, or a
    /// message from `from` of that context already in the inbox.
    pub(crate) fn look(&self, me: usize, ctx: u64, from: usize) -> Look {
        let mut desk = self.desk(me);
        if !desk.reading[from - self.base].idle() || desk.inbox(ctx).iter().any(|l| l.src == from) {
            return Look::Busy;
        }
        let (head, raw) = self.ring(from, me);
        let mut h = [0u8; HEADER];
        if Ring::new(&head.lines, raw).peek(&mut h) < HEADER {
            return if head.broken.load(Ordering::Acquire) != 0 {
                Look::Busy
            } else {
                Look::Nothing
            };
        }
        Look::Frame(Header::decode(&h))
    }

    /// Takes the frame [`NodeMail::look`] saw from `from` to `me`: its header is read, and its
    /// payload is for the caller to read with [`StraightRead::pull`].
    pub(crate) fn direct(&self, me: usize, from: usize) -> StraightRead<'_> {
        let mut desk = self.desk(me);
        let reading = &mut desk.reading[from - self.base];
        debug_assert!(reading.idle());
        let (head, raw) = self.ring(from, me);
        let mut h = [0u8; HEADER];
        let n = Ring::new(&head.lines, raw).pull(&mut h);
        debug_assert_eq!(n, HEADER, "peeked whole");
        reading.direct = true;
        StraightRead {
            mail: self,
            me,
            from,
            left: Header::decode(&h).bytes as usize,
        }
    }

    /// Takes the oldest message of `me`'s inbox of context `ctx`.
    pub(crate) fn next(&self, me: usize, ctx: u64) -> Option<Letter> {
        self.desk(me).inbox(ctx).pop_front()
    }

    /// The node's ranks outside this process.
    pub(crate) fn others(&self) -> impl Iterator<Item = usize> + '_ {
        let mine = self.first..self.first + self.desks.len();
        (self.base..self.base + self.ranks).filter(move |r| !mine.contains(r))
    }
}

/// What [`NodeMail::look`] finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Look {
    /// A whole header of a frame not begun.
    Frame(Header),
    /// Nothing whole yet.
    Nothing,
    /// Something to take the usual way ([`NodeMail::collect`]).
    Busy,
}

/// A frame's payload being read straight into a receive's buffer ([`NodeMail::direct`]).
pub(crate) struct StraightRead<'m> {
    mail: &'m NodeMail,
    me: usize,
    from: usize,
    /// Payload bytes still to read.
    left: usize,
}

impl StraightRead<'_> {
    /// Reads what has come of the payload into `dst` (its next bytes, at most all that is
    /// left): the number read. `Err` if the sender gave up the frame.
    pub(crate) fn pull(&mut self, dst: &mut [u8]) -> Result<usize, Broken> {
        let (head, raw) = self.mail.ring(self.from, self.me);
        let n = dst.len().min(self.left);
        let got = Ring::new(&head.lines, raw).pull(&mut dst[..n]);
        self.left -= got;
        if got == 0 && head.broken.load(Ordering::Acquire) != 0 {
            return Err(Broken);
        }
        Ok(got)
    }

    /// Bytes of the payload still to read.
    pub(crate) fn left(&self) -> usize {
        self.left
    }
}

impl Drop for StraightRead<'_> {
    /// Hands the ring back to the others' reads, or, if the payload is not all read (the
    /// receive gave up), marks it unreadable.
    fn drop(&mut self) {
        let mut desk = self.mail.desk(self.me);
        let reading = &mut desk.reading[self.from - self.mail.base];
        reading.direct = false;
        reading.lost = self.left > 0;
    }
}

/// Reads on from `ring` into `r` (the frame in progress from `from`): the message, once whole.
fn read<S: super::ring::Store>(ring: &Ring<'_, S>, r: &mut Reading, from: usize) -> Option<Letter> {
    if r.body.is_none() {
        r.have += ring.pull(&mut r.head[r.have..]);
        if r.have < HEADER {
            return None;
        }
        let header = Header::decode(&r.head);
        r.body = Some((header, vec![0u8; header.bytes as usize]));
        r.filled = 0;
    }
    let (_, payload) = r.body.as_mut().expect("set above");
    r.filled += ring.pull(&mut payload[r.filled..]);
    if r.filled < payload.len() {
        return None;
    }
    let (header, payload) = r.body.take().expect("set above");
    r.have = 0;
    Some(Letter {
        src: from,
        header,
        payload,
    })
}

#[cfg(test)]
mod tests;
