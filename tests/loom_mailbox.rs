//! Loom models of the mailbox protocol (`src/mailbox/mod.rs`, described in `docs/protocol.md`).
//!
//! Each model is one producer and one consumer on one mailbox, each with its own parker, the
//! way two ranks use an edge: the producer posts and unparks the consumer; the consumer takes
//! and unparks the producer; whoever cannot go on waits with the crate's own `wait_until`
//! (which under loom checks its condition once, then parks). loom explores every interleaving
//! up to `LOOM_MAX_PREEMPTIONS` preemptions and reports a deadlock (a lost wake-up), a failed
//! assertion, or a data race on any loom `UnsafeCell`: the cells' bodies, the arena's chunks,
//! the per-cell `lent` stand-in for a lent slice, and the lent buffers of these models.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_mailbox`
#![cfg(loom)]

use corecoll::loom_api::{wait_until, Mailbox, Parker, EAGER_MAX};
use loom::cell::UnsafeCell;
use loom::thread;
use std::sync::Arc;

/// One directed edge: the mailbox and the parkers of its two ends.
#[derive(Default)]
struct Edge {
    mb: Option<Mailbox>,
    /// Where the producer sleeps (waiting for room or for an acknowledgement).
    producer: Parker,
    /// Where the consumer sleeps (waiting for a message).
    consumer: Parker,
}

impl Edge {
    fn new(mb: Mailbox) -> Arc<Edge> {
        Arc::new(Edge {
            mb: Some(mb),
            ..Edge::default()
        })
    }
    fn mb(&self) -> &Mailbox {
        self.mb.as_ref().expect("mailbox present")
    }
}

/// Recognisable bytes for message `i` of `len` bytes.
fn payload(i: u64, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i as usize * 31 + j * 7) as u8).collect()
}

/// A producer's buffer for a rendezvous message, tracked by loom: the consumer reads it inside
/// `with` while copying, the producer frees it inside `with_mut` once its send is over, so loom
/// reports any execution in which the free is not ordered after the read.
struct LentBuf(UnsafeCell<Option<Box<[u8]>>>);

// SAFETY: the models access the cell only through loom's `with`/`with_mut`, which check that
// every write is ordered with every other access; that is the property under test.
unsafe impl Sync for LentBuf {}

impl LentBuf {
    fn new(bytes: Vec<u8>) -> Arc<LentBuf> {
        Arc::new(LentBuf(UnsafeCell::new(Some(bytes.into_boxed_slice()))))
    }
    /// The buffer's address and length, to lend.
    fn addr(&self) -> (*const u8, usize) {
        // SAFETY: read access checked by loom; the buffer is present until `free`.
        self.0.with(|b| {
            let b = unsafe { (*b).as_ref() }.expect("buffer present");
            (b.as_ptr(), b.len())
        })
    }
    /// The consumer's read of a lent slice: checks that the mailbox handed it exactly this
    /// buffer, and copies it, all inside one loom read access.
    fn read_lent(&self, lent: &[u8]) -> Vec<u8> {
        // SAFETY: read access checked by loom.
        self.0.with(|b| {
            let b = unsafe { (*b).as_ref() }.expect("a lent buffer is not freed while read");
            assert_eq!(
                lent.as_ptr(),
                b.as_ptr(),
                "the consumer reads the producer's slice"
            );
            assert_eq!(lent.len(), b.len());
            lent.to_vec()
        })
    }
    /// The producer takes its buffer back and frees it.
    fn free(&self) {
        // SAFETY: write access checked by loom.
        self.0.with_mut(|b| unsafe { *b = None });
    }
}

/// Producer: posts eager message `i` of `data`, waiting (parked) for room while the ring or
/// the arena is full, then wakes the consumer.
fn send_eager(e: &Edge, i: u64, data: &[u8]) {
    loop {
        if let Some(n) = e.mb().try_send_eager(i, data) {
            assert_eq!(n, i, "messages are numbered in order");
            break;
        }
        wait_until(&e.producer, || e.mb().has_room(data.len()));
    }
    e.consumer.unpark();
}

/// Consumer: waits (parked) for the next message; returns its (tag, len).
fn await_message(e: &Edge) -> (u64, usize) {
    wait_until(&e.consumer, || e.mb().front().is_some());
    e.mb()
        .front()
        .expect("a message that arrived stays at the front")
}

/// (a) Four eager messages through two cells: inline (≤ 16 bytes) and arena-borne ones. The
/// third reuses the first's cell, and the two payloads of ¾ `EAGER_MAX` cannot both be in an
/// arena of `EAGER_MAX` bytes, so the producer waits for the ring and for the arena and is
/// woken by the consumer's releases. Messages arrive in order, intact, and no cell or arena
/// chunk is written while it is read.
#[test]
fn eager_fifo_through_two_cells_and_a_full_arena() {
    const SIZES: [usize; 4] = [5, EAGER_MAX * 3 / 4, EAGER_MAX * 3 / 4, 16];
    loom::model(|| {
        let e = Edge::new(Mailbox::with_arena(2, EAGER_MAX));
        let producer = {
            let e = e.clone();
            thread::spawn(move || {
                for (i, &len) in SIZES.iter().enumerate() {
                    send_eager(&e, i as u64, &payload(i as u64, len));
                }
            })
        };
        for (i, &len) in SIZES.iter().enumerate() {
            assert_eq!(await_message(&e), (i as u64, len));
            let got = e.mb().take().expect("eager messages are never withdrawn");
            e.producer.unpark();
            assert_eq!(got, payload(i as u64, len));
        }
        producer.join().unwrap();
        assert!(e.mb().front().is_none());
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
    loom::model(|| {
        let e = Edge::new(Mailbox::with_arena(1, EAGER_MAX));
        let bufs = [LentBuf::new(payload(0, LEN)), LentBuf::new(payload(1, LEN))];
        let producer = {
            let (e, bufs) = (e.clone(), bufs.clone());
            thread::spawn(move || {
                for (i, buf) in bufs.iter().enumerate() {
                    let (ptr, len) = buf.addr();
                    let n = loop {
                        // SAFETY: the buffer stays allocated and unwritten until the consumer
                        // has released the message (`is_consumed`), below.
                        if let Some(n) = unsafe { e.mb().try_post_rendezvous(i as u64, ptr, len) } {
                            break n;
                        }
                        wait_until(&e.producer, || e.mb().has_room(len));
                    };
                    e.consumer.unpark();
                    wait_until(&e.producer, || e.mb().is_consumed(n));
                    e.mb().reclaim_lent(n);
                    buf.free();
                }
            })
        };
        for (i, buf) in bufs.iter().enumerate() {
            assert_eq!(await_message(&e), (i as u64, LEN));
            let got = e
                .mb()
                .take_with(|lent| buf.read_lent(lent))
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
    loom::model(|| {
        let e = Edge::new(Mailbox::with_arena(1, EAGER_MAX));
        let buf = LentBuf::new(payload(7, LEN));
        let producer = {
            let (e, buf) = (e.clone(), buf.clone());
            thread::spawn(move || {
                let (ptr, len) = buf.addr();
                // SAFETY: freed only once withdrawn or released, below.
                let n = unsafe { e.mb().try_post_rendezvous(7, ptr, len) }.expect("room");
                e.consumer.unpark();
                let withdrawn = e.mb().withdraw(n);
                if !withdrawn {
                    wait_until(&e.producer, || e.mb().is_consumed(n));
                }
                e.mb().reclaim_lent(n);
                buf.free();
                withdrawn
            })
        };
        assert_eq!(await_message(&e), (7, LEN));
        let got = e.mb().take_with(|lent| buf.read_lent(lent));
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
        assert!(e.mb().is_consumed(0));
        assert!(e.mb().front().is_none());
        assert!(e.mb().has_room(LEN));
    });
}

/// (e) A reader that unwinds still releases the cell, after its last access to the lent
/// slice: the producer, waiting for the release, is not freed early and not left waiting.
#[test]
fn unwinding_reader_releases_the_lent_slice() {
    const LEN: usize = EAGER_MAX + 1;
    quiet_panics();
    loom::model(|| {
        let e = Edge::new(Mailbox::with_arena(1, EAGER_MAX));
        let buf = LentBuf::new(payload(3, LEN));
        let producer = {
            let (e, buf) = (e.clone(), buf.clone());
            thread::spawn(move || {
                let (ptr, len) = buf.addr();
                // SAFETY: freed only once released, below.
                let n = unsafe { e.mb().try_post_rendezvous(3, ptr, len) }.expect("room");
                e.consumer.unpark();
                wait_until(&e.producer, || e.mb().is_consumed(n));
                e.mb().reclaim_lent(n);
                buf.free();
            })
        };
        assert_eq!(await_message(&e), (3, LEN));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            e.mb().take_with(|lent| {
                let bytes = buf.read_lent(lent);
                panic!(
                    "{QUIET}: a reader that fails after reading {} bytes",
                    bytes.len()
                )
            })
        }));
        assert!(caught.is_err());
        e.producer.unpark();
        producer.join().unwrap();
        assert!(e.mb().front().is_none());
    });
}

/// Marks the panics the models cause on purpose, which the hook below keeps quiet.
const QUIET: &str = "expected by the model";

fn quiet_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .unwrap_or("");
            if !msg.starts_with(QUIET) {
                default(info);
            }
        }));
    });
}
