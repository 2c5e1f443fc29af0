//! Loom models of the mailbox protocol (`README.md` in this folder).
//!
//! Each model is one producer and one consumer on one mailbox, each with its own parker, the
//! way two ranks use an edge: the producer posts and unparks the consumer; the consumer takes
//! and unparks the producer; whoever cannot go on waits with the crate's own `wait_until`
//! (which under loom checks its condition once, then parks). loom explores every interleaving
//! up to `LOOM_MAX_PREEMPTIONS` preemptions and reports a deadlock (a lost wake-up), a failed
//! assertion, or a data race on any loom `UnsafeCell`: the cells' bodies, the arena's chunks,
//! the per-cell `lent` stand-in for a lent slice, and the lent buffers of these models.

use super::{Header, Mailbox, EAGER_MAX};
use crate::sync::loom_support::{quiet_panics, Tracked, QUIET};
use crate::sync::park::{wait_until, Parker, WaitPolicy};
use ::loom::thread;
use std::sync::Arc;

/// One directed edge: the mailbox and the parkers of its two ends.
struct Edge {
    mb: Mailbox,
    /// Where the producer sleeps (waiting for room or for an acknowledgement).
    producer: Parker,
    /// Where the consumer sleeps (waiting for a message).
    consumer: Parker,
}

impl Edge {
    /// An edge whose mailbox has `slots` cells and an arena of `EAGER_MAX` bytes.
    fn new(slots: usize) -> Arc<Edge> {
        Arc::new(Edge {
            mb: Mailbox::with_arena(slots, EAGER_MAX),
            producer: Parker::new(),
            consumer: Parker::new(),
        })
    }

    /// Producer: posts message `tag` of `len` bytes at `data` if there is room; its number.
    ///
    /// # Safety
    /// As `Mailbox::try_post`: beyond `EAGER_MAX` bytes the payload is lent.
    unsafe fn try_post(&self, tag: u64, data: *const u8, len: usize) -> Option<u64> {
        let header = Header { tag, typ: 1, len };
        // SAFETY: forwarded contract.
        unsafe { self.mb.try_post(header, data) }.map(|(n, _)| n)
    }

    /// Producer: posts message `tag` of `len` (> `EAGER_MAX`) lent bytes at `data`, waiting
    /// (parked) for room, then wakes the consumer; the message's number.
    ///
    /// # Safety
    /// `data` must stay readable and unwritten until the message is released or withdrawn.
    unsafe fn post_lent(&self, tag: u64, data: *const u8, len: usize) -> u64 {
        assert!(len > EAGER_MAX);
        let n = loop {
            // SAFETY: forwarded contract.
            if let Some(n) = unsafe { self.try_post(tag, data, len) } {
                break n;
            }
            self.wait_producer(|| self.mb.has_room(len));
        };
        self.consumer.unpark();
        n
    }

    /// Producer: posts eager message `i` of `data`, waiting (parked) for room while the ring
    /// or the arena is full, then wakes the consumer.
    fn send_eager(&self, i: u64, data: &[u8]) {
        assert!(data.len() <= EAGER_MAX);
        loop {
            // SAFETY: `data` is readable for its length, and at most EAGER_MAX bytes are
            // copied, not lent.
            if let Some(n) = unsafe { self.try_post(i, data.as_ptr(), data.len()) } {
                assert_eq!(n, i, "messages are numbered in order");
                break;
            }
            self.wait_producer(|| self.mb.has_room(data.len()));
        }
        self.consumer.unpark();
    }

    /// Producer: waits (parked) until `ready()`, as every wait of the crate does.
    fn wait_producer(&self, ready: impl FnMut() -> bool) {
        assert!(wait_until(
            &self.producer,
            &WaitPolicy::DEDICATED,
            None,
            ready
        ));
    }

    /// Producer: waits until message `n` is released, then takes its lent slice back (loom's
    /// race check) and frees `buf`.
    fn settle(&self, n: u64, buf: &Tracked<u8>) {
        self.wait_producer(|| self.mb.is_consumed(n));
        self.mb.reclaim_lent(n);
        buf.free();
    }

    /// Consumer: waits (parked) for the next message; returns its (tag, len).
    fn await_message(&self) -> (u64, usize) {
        let arrived = || self.mb.front().is_some();
        assert!(wait_until(
            &self.consumer,
            &WaitPolicy::DEDICATED,
            None,
            arrived
        ));
        let h = self
            .mb
            .front()
            .expect("a message that arrived stays at the front");
        (h.tag, h.len)
    }

    /// Consumer: calls `read` on the next message's payload (the cell's bytes for an eager
    /// message, the producer's lent slice for a rendezvous one) and releases its cell, also if
    /// `read` unwinds; `None` if the producer withdrew it. Does not wake the producer.
    fn take_with<R>(&self, read: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let len = self.mb.front().expect("a message has arrived").len;
        self.mb
            .take(|p| {
                // SAFETY: the mailbox hands `len` readable bytes that nobody writes until the
                // cell is released, which happens after `read` returns or unwinds.
                read(unsafe { std::slice::from_raw_parts(p, len) })
            })
            .ok()
    }
}

/// Recognisable bytes for message `i` of `len` bytes.
fn payload(i: u64, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i as usize * 31 + j * 7) as u8).collect()
}

/// (a) Four eager messages through two cells: inline (≤ 16 bytes) and arena-borne ones. The
/// third reuses the first's cell, and the two payloads of ¾ `EAGER_MAX` cannot both be in an
/// arena of `EAGER_MAX` bytes, so the producer waits for the ring and for the arena and is
/// woken by the consumer's releases. Messages arrive in order, intact, and no cell or arena
/// chunk is written while it is read.
#[test]
fn eager_fifo_through_two_cells_and_a_full_arena() {
    const SIZES: [usize; 4] = [5, EAGER_MAX * 3 / 4, EAGER_MAX * 3 / 4, 16];
    ::loom::model(|| {
        let e = Edge::new(2);
        let producer = {
            let e = e.clone();
            thread::spawn(move || {
                for (i, &len) in SIZES.iter().enumerate() {
                    e.send_eager(i as u64, &payload(i as u64, len));
                }
            })
        };
        for (i, &len) in SIZES.iter().enumerate() {
            assert_eq!(e.await_message(), (i as u64, len));
            let got = e
                .take_with(<[u8]>::to_vec)
                .expect("eager messages are never withdrawn");
            e.producer.unpark();
            assert_eq!(got, payload(i as u64, len));
        }
        producer.join().unwrap();
        assert!(e.mb.front().is_none());
    });
}

/// (b, c) Two rendezvous messages through a single cell. The producer lends its own buffer,
/// waits (parked) until the consumer has released the cell, reclaims the slice and frees the
/// buffer; the second message reuses the cell, so its claim word goes TAKEN → POSTED again.
/// The consumer reads each buffer in place and gets its bytes; loom checks that no free
/// overlaps a read (both on the buffer and on the mailbox's own `lent` stand-in).
#[test]
fn rendezvous_slice_stays_lent_until_released() {
    const LEN: usize = EAGER_MAX + 8;
    ::loom::model(|| {
        let e = Edge::new(1);
        let bufs = [Tracked::new(payload(0, LEN)), Tracked::new(payload(1, LEN))];
        let producer = {
            let (e, bufs) = (e.clone(), bufs.clone());
            thread::spawn(move || {
                for (i, buf) in bufs.iter().enumerate() {
                    let (ptr, len) = buf.addr();
                    // SAFETY: the buffer stays allocated and unwritten until the consumer has
                    // released the message (`settle`).
                    let n = unsafe { e.post_lent(i as u64, ptr, len) };
                    e.settle(n, buf);
                }
            })
        };
        for (i, buf) in bufs.iter().enumerate() {
            assert_eq!(e.await_message(), (i as u64, LEN));
            let got = e
                .take_with(|lent| buf.read(lent))
                .expect("never withdrawn here");
            e.producer.unpark();
            assert_eq!(got, payload(i as u64, LEN));
        }
        producer.join().unwrap();
    });
}

/// (d) The withdraw race: the producer posts a rendezvous message and at once tries to
/// withdraw it (as a failing send does) while the consumer tries to take it. Exactly one side
/// wins the claim word: either the consumer read the bytes and the withdrawal failed — then
/// the producer waits for the release before it frees the buffer — or the withdrawal
/// succeeded and the consumer gets nothing (and still releases the cell). Never both, never
/// a read of a freed buffer.
#[test]
fn withdraw_races_with_take() {
    const LEN: usize = EAGER_MAX + 1;
    ::loom::model(|| {
        let e = Edge::new(1);
        let buf = Tracked::new(payload(7, LEN));
        let producer = {
            let (e, buf) = (e.clone(), buf.clone());
            thread::spawn(move || {
                let (ptr, len) = buf.addr();
                // SAFETY: freed only once withdrawn or released, below.
                let n = unsafe { e.try_post(7, ptr, len) }.expect("room");
                e.consumer.unpark();
                let withdrawn = e.mb.withdraw(n);
                if !withdrawn {
                    e.wait_producer(|| e.mb.is_consumed(n));
                }
                e.mb.reclaim_lent(n);
                buf.free();
                withdrawn
            })
        };
        assert_eq!(e.await_message(), (7, LEN));
        let got = e.take_with(|lent| buf.read(lent));
        e.producer.unpark();
        let withdrawn = producer.join().unwrap();
        match got {
            Some(bytes) => {
                assert!(
                    !withdrawn,
                    "a message that was read cannot have been withdrawn"
                );
                assert_eq!(bytes, payload(7, LEN));
            }
            None => assert!(
                withdrawn,
                "the consumer got nothing only if it was withdrawn"
            ),
        }
        // Either way the cell was released: the edge is usable again.
        assert!(e.mb.is_consumed(0));
        assert!(e.mb.front().is_none());
        assert!(e.mb.has_room(LEN));
    });
}

/// (e) A reader that unwinds still releases the cell, after its last access to the lent
/// slice: the producer, waiting for the release, is not freed early and not left waiting.
#[test]
fn unwinding_reader_releases_the_lent_slice() {
    const LEN: usize = EAGER_MAX + 1;
    quiet_panics();
    ::loom::model(|| {
        let e = Edge::new(1);
        let buf = Tracked::new(payload(3, LEN));
        let producer = {
            let (e, buf) = (e.clone(), buf.clone());
            thread::spawn(move || {
                let (ptr, len) = buf.addr();
                // SAFETY: freed only once released (`settle`).
                let n = unsafe { e.try_post(3, ptr, len) }.expect("room");
                e.consumer.unpark();
                e.settle(n, &buf);
            })
        };
        assert_eq!(e.await_message(), (3, LEN));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            e.take_with(|lent| {
                let bytes = buf.read(lent);
                panic!(
                    "{QUIET}: a reader that fails after reading {} bytes",
                    bytes.len()
                )
            })
        }));
        assert!(caught.is_err());
        e.producer.unpark();
        producer.join().unwrap();
        assert!(e.mb.front().is_none());
    });
}
