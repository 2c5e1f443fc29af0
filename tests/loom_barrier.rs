//! Loom models of whole communication calls: the exchange engine of the shared-memory
//! transport (`src/transport/shm.rs`) over real mailboxes and parkers, the dissemination
//! barrier on top of it, and the way a run's failure or a rank's exit ends every wait.
//!
//! Each rank's `Comm` (from `loom_api::world`) is moved into a loom thread of its own (rank 0
//! runs on the model's main thread). loom reports a deadlock if some rank could wait forever,
//! and a data race if a mailbox cell, an arena chunk, a lent slice or the models' own
//! per-rank slots could be accessed by two ranks without a happens-before edge between them.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_barrier`
#![cfg(loom)]

use corecoll::loom_api::{recv_reduce, sendrecv_reduce, world, world_with_run, EAGER_MAX};
mod loom_common;

use corecoll::{Comm, Error};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use loom::thread;
use loom_common::spmd;
use std::sync::Arc;

/// What the ranks of a barrier model share besides their communicators: per barrier parity
/// and rank a plain (loom-tracked) slot that its rank writes before the barrier and every rank
/// reads after it, and a relaxed counter of arrivals.
struct Board {
    p: usize,
    slots: [Vec<UnsafeCell<usize>>; 2],
    arrived: AtomicUsize,
}

// SAFETY: the slots are accessed only through loom's `with`/`with_mut`, which check that the
// barrier orders every write with every read; that is the property under test.
unsafe impl Sync for Board {}

impl Board {
    fn new(p: usize) -> Arc<Board> {
        let row = || (0..p).map(|_| UnsafeCell::new(0)).collect();
        Arc::new(Board {
            p,
            slots: [row(), row()],
            arrived: AtomicUsize::new(0),
        })
    }

    /// Before barrier `k`: rank `r` writes `k + 1` into its slot of parity `k % 2` (the slot
    /// every rank read after barrier `k − 2`) and counts its arrival, without any ordering.
    fn arrive(&self, r: usize, k: usize) {
        // SAFETY: write access checked by loom.
        self.slots[k % 2][r].with_mut(|v| unsafe { *v = k + 1 });
        self.arrived.fetch_add(1, Relaxed);
    }

    /// After barrier `k`: every rank's write before barrier `k` is visible (and ordered before
    /// this read, or loom reports a race), and so are all `p · (k + 1)` arrivals.
    fn check(&self, k: usize) {
        for s in 0..self.p {
            // SAFETY: read access checked by loom.
            let v = self.slots[k % 2][s].with(|v| unsafe { *v });
            assert_eq!(v, k + 1, "rank {s}'s write before barrier {k}");
        }
        assert!(self.arrived.load(Relaxed) >= self.p * (k + 1));
    }
}

/// Rank `comm.rank()` of a barrier model: `rounds` barriers, with a small ring message (an
/// eager `send` to the right, a `recv` from the left) between consecutive ones.
fn barrier_rank(comm: Comm, board: &Board, rounds: usize) {
    let (r, p) = (comm.rank(), comm.size());
    for k in 0..rounds {
        board.arrive(r, k);
        comm.barrier().expect("barrier");
        board.check(k);
        if k + 1 < rounds {
            comm.send((r + 1) % p, &[(r * 10 + k) as u32])
                .expect("send");
            let mut got = [0u32];
            comm.recv((r + p - 1) % p, &mut got).expect("recv");
            assert_eq!(got[0] as usize, ((r + p - 1) % p) * 10 + k);
        }
    }
}

/// Two ranks, three barriers in a row on the same communicator (the mailboxes are reused and
/// the tags advance), with a message each way between them.
#[test]
fn barrier_reused_two_ranks() {
    loom::model(|| {
        let board = Board::new(2);
        spmd(2, move |comm| barrier_rank(comm, &board, 3));
    });
}

/// Three ranks (two dissemination rounds per barrier, so knowledge of a rank's arrival
/// reaches the others through a third), two barriers with a ring message between them.
///
/// Three threads make many more interleavings: this model explores those with at most one
/// preemption (none if `LOOM_MAX_PREEMPTIONS=0`), about 60 000 executions and half a minute;
/// at two preemptions a single barrier already takes 170 000 executions.
#[test]
fn barrier_reused_three_ranks() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(1, |b| b.min(1)));
    builder.check(|| {
        let board = Board::new(3);
        spmd(3, move |comm| barrier_rank(comm, &board, 2));
    });
}

/// Both ranks exchange a rendezvous-sized message with `sendrecv`: each posts (lends) its
/// own slice before waiting, reads the other's in place, and returns only once its own has
/// been released — no deadlock although both send first, no slice reused while read.
#[test]
fn sendrecv_rendezvous_both_ways() {
    const N: usize = EAGER_MAX / 4 + 2; // u32s: just over EAGER_MAX bytes
    loom::model(|| {
        spmd(2, |comm| {
            let (r, other) = (comm.rank(), 1 - comm.rank());
            let mine: Vec<u32> = (0..N as u32).map(|i| i * 2 + r as u32).collect();
            let mut got = vec![0u32; N];
            comm.sendrecv(other, &mine, other, &mut got)
                .expect("sendrecv");
            assert!(got
                .iter()
                .enumerate()
                .all(|(i, &v)| v == i as u32 * 2 + other as u32));
        });
    });
}

/// A rank's `sendrecv` with itself, eager and rendezvous: the message is posted before the
/// receive is looked at, so the call completes on its own.
#[test]
fn sendrecv_with_itself() {
    loom::model(|| {
        let comm = world(1).pop().expect("one rank");
        for n in [3usize, EAGER_MAX / 4 + 1] {
            let mine: Vec<u32> = (0..n as u32).collect();
            let mut got = vec![0u32; n];
            comm.sendrecv(0, &mine, 0, &mut got).expect("self sendrecv");
            assert_eq!(got, mine);
        }
    });
}

/// A rank returns from the run without calling the barrier its peer is in: the peer's
/// barrier ends with `PeerExited` instead of waiting forever, whatever the interleaving.
#[test]
fn peer_exit_ends_a_barrier() {
    loom::model(|| {
        let (mut comms, run) = world_with_run(2);
        let quitter = comms.pop().expect("rank 1");
        let comm = comms.pop().expect("rank 0");
        let t = thread::spawn(move || {
            drop(quitter);
            run.mark_done(1);
        });
        match comm.barrier() {
            Err(Error::PeerExited {
                rank: 0, peer: 1, ..
            }) => {}
            other => panic!("expected PeerExited, got {other:?}"),
        }
        t.join().unwrap();
    });
}

/// A receiver that expects another length fails the run (`Mismatch`) while the sender is
/// waiting for the acknowledgement of a lent slice: the failure wakes the sender, which
/// withdraws its unclaimed message and returns `Aborted`, the slice never read.
#[test]
fn mismatch_wakes_a_lent_sender() {
    const N: usize = EAGER_MAX + 1;
    loom::model(|| {
        let out = spmd(2, |comm| {
            if comm.rank() == 0 {
                comm.send(1, &[7u8; N])
            } else {
                let mut short = [0u8; 3];
                comm.recv(0, &mut short)
            }
        });
        assert!(
            matches!(out[0], Err(Error::Aborted { rank: 0, .. })),
            "{:?}",
            out[0]
        );
        assert!(
            matches!(out[1], Err(Error::Mismatch { rank: 1, .. })),
            "{:?}",
            out[1]
        );
    });
}

/// The run fails (a third rank panics) while rank 0 lends a slice to rank 1: whether rank 1
/// claimed the message first (then rank 0 waits for it to finish reading) or rank 0
/// withdrew it first (then rank 1 sees the withdrawal), both calls end, and rank 1 has either
/// the whole message or an error — never a torn or freed read.
#[test]
fn abort_races_with_a_lent_send() {
    const N: usize = EAGER_MAX / 4 + 1;
    loom::model(|| {
        let (mut comms, run) = world_with_run(2);
        let receiver = comms.pop().expect("rank 1");
        let sender = comms.pop().expect("rank 0");
        let t1 = thread::spawn(move || {
            let mut got = vec![0u32; N];
            receiver.recv(0, &mut got).map(|()| got)
        });
        let t0 = thread::spawn(move || {
            let mine: Vec<u32> = (0..N as u32).collect();
            sender.send(1, &mine)
        });
        run.panicked(2);
        let sent = t0.join().unwrap();
        let received = t1.join().unwrap();
        match &received {
            Ok(got) => assert!(got.iter().enumerate().all(|(i, &v)| v == i as u32)),
            Err(e) => assert!(matches!(e, Error::Aborted { rank: 1, .. }), "{e:?}"),
        }
        if sent.is_ok() {
            assert!(received.is_ok(), "an acknowledged send was received");
        } else {
            assert!(
                matches!(sent, Err(Error::Aborted { rank: 0, .. })),
                "{sent:?}"
            );
        }
    });
}

/// A reader that unwinds (a reduction operator that panics while combining a lent slice),
/// caught by its rank, which then goes on and waits for the sender's next message. The
/// mailbox releases the cell on unwind, so the sender's send is acknowledged — but the
/// transport wakes the sender only after `take` returns normally, so a sender already parked
/// on the acknowledgement is never woken, and both ranks wait for each other for ever.
#[test]
fn caught_panic_in_a_reader_still_wakes_the_sender() {
    const N: usize = EAGER_MAX / 4 + 1;
    quiet_panics();
    loom::model(|| {
        spmd(2, |comm| {
            if comm.rank() == 0 {
                let big: Vec<u32> = (0..N as u32).collect();
                comm.send(1, &big)
                    .expect("acknowledged, if by an unwinding reader");
                comm.send(1, &[1u32]).expect("second message");
            } else {
                let mut acc = vec![0u32; N];
                let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    recv_reduce(&comm, 0, &mut acc, &mut |_, _| panic!("{QUIET}: operator"))
                }));
                assert!(caught.is_err());
                let mut next = [0u32];
                comm.recv(0, &mut next).expect("second message");
                assert_eq!(next, [1]);
            }
        });
    });
}

/// A rank's lent buffer, tracked by loom: the receiver's reduction reads it inside `with`, the
/// owner frees it inside `with_mut` once its call is over, so loom reports any execution in
/// which the free is not ordered after the read.
struct Tracked(UnsafeCell<Option<Box<[u32]>>>);

// SAFETY: accessed only through loom's `with`/`with_mut`, which check every access's order.
unsafe impl Sync for Tracked {}

impl Tracked {
    fn new(v: Vec<u32>) -> Arc<Tracked> {
        Arc::new(Tracked(UnsafeCell::new(Some(v.into_boxed_slice()))))
    }
    /// The buffer as a slice to send from.
    ///
    /// # Safety
    /// The slice must not be used after [`Tracked::free`].
    unsafe fn slice<'a>(&self) -> &'a [u32] {
        // SAFETY: per the contract; the boxed slice does not move until freed.
        self.0.with(|b| unsafe {
            let b = (*b).as_ref().expect("buffer present");
            std::slice::from_raw_parts(b.as_ptr(), b.len())
        })
    }
    /// The receiver reads `incoming`, which must be this very buffer.
    fn read(&self, incoming: &[u32]) {
        // SAFETY: read access checked by loom.
        self.0.with(|b| {
            let b = unsafe { (*b).as_ref() }.expect("a lent buffer is not freed while read");
            assert_eq!(incoming.as_ptr(), b.as_ptr(), "read in place");
        });
    }
    /// The owner frees the buffer.
    fn free(&self) {
        // SAFETY: write access checked by loom.
        self.0.with_mut(|b| unsafe { *b = None });
    }
}

/// A rank's own reduction operator panics while its `sendrecv_reduce` has a rendezvous send
/// lent to the peer, and the rank catches the panic and frees its send buffer. The cleanup
/// that withdraws a lent send or waits for its release runs only when the exchange loop
/// breaks, not when it unwinds, so the call unwinds with the slice still lent and the peer
/// may claim and read freed memory (loom: a read of the buffer not ordered before its free).
/// With the allreduce schedules' user operators this is a use-after-free in safe code.
#[test]
fn unwinding_exchange_does_not_leave_its_send_lent() {
    const N: usize = EAGER_MAX / 4 + 1;
    quiet_panics();
    loom::model(|| {
        let buf = Tracked::new((0..N as u32).collect());
        let mut comms = world(2);
        let (c1, c0) = (comms.pop().expect("rank 1"), comms.pop().expect("rank 0"));
        let peer = {
            let buf = buf.clone();
            thread::spawn(move || {
                let mut acc = vec![0u32; N];
                let out = sendrecv_reduce(&c1, 0, &[5u32], 0, &mut acc, &mut |acc, inc| {
                    buf.read(inc);
                    acc.copy_from_slice(inc);
                });
                match out {
                    Ok(()) => assert!(acc.iter().enumerate().all(|(i, &v)| v == i as u32)),
                    Err(e) => assert!(matches!(e, Error::Aborted { rank: 1, .. }), "{e:?}"),
                }
            })
        };
        // SAFETY: `send` is not used after the buffer is freed below.
        let send = unsafe { buf.slice() };
        let mut one = [0u32];
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            sendrecv_reduce(&c0, 1, send, 1, &mut one, &mut |_, _| {
                panic!("{QUIET}: operator")
            })
        }));
        assert!(caught.is_err());
        buf.free();
        peer.join().unwrap();
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
