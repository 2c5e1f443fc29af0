//! Loom models of the exchange engine of the shared-memory transport ([`ShmTransport`]) over
//! real mailboxes and parkers: `sendrecv` both ways and with oneself, and the way a failure, a
//! rank's exit or an unwinding reader or operator ends every wait and settles every loan
//! (`src/transport/README.md`).
//!
//! Each rank's `Member` (`shm::loom_world`) is moved into a loom thread of its own (rank 0 runs
//! on the model's main thread). loom reports a deadlock if some rank could wait forever, and a
//! data race if a mailbox cell, an arena chunk, a lent slice or the models' own buffers could
//! be accessed by two ranks without a happens-before edge between them.

use super::ShmTransport;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Tag, EAGER_MAX};
use crate::shm::loom_world::{fail_as_panic, spmd, spmd_detecting, world};
use crate::shm::Member;
use crate::sync::loom_support::{quiet_panics, Tracked, QUIET};
use crate::transport::Transport;
use ::loom::thread;

/// `send` on `comm`'s point-to-point stream.
fn send<T: Elem>(comm: &Member, dest: usize, data: &[T]) -> Result<()> {
    ShmTransport::p2p(comm, "send").send(dest, Tag::P2P, data)
}

/// `recv` on `comm`'s point-to-point stream.
fn recv<T: Elem>(comm: &Member, src: usize, buf: &mut [T]) -> Result<()> {
    ShmTransport::p2p(comm, "recv").recv(src, Tag::P2P, buf)
}

/// `sendrecv` on `comm`'s point-to-point stream.
fn sendrecv<T: Elem>(
    comm: &Member,
    dest: usize,
    data: &[T],
    src: usize,
    buf: &mut [T],
) -> Result<()> {
    ShmTransport::p2p(comm, "sendrecv").sendrecv(dest, data, src, buf, Tag::P2P)
}

/// Both ranks exchange a rendezvous-sized message with `sendrecv`: each posts (lends) its
/// own slice before waiting, reads the other's in place, and returns only once its own has
/// been released — no deadlock although both send first, no slice reused while read.
#[test]
fn sendrecv_rendezvous_both_ways() {
    const N: usize = EAGER_MAX / 4 + 2; // u32s: just over EAGER_MAX bytes
    ::loom::model(|| {
        spmd(2, |comm| {
            let (r, other) = (comm.rank(), 1 - comm.rank());
            let mine: Vec<u32> = (0..N as u32).map(|i| i * 2 + r as u32).collect();
            let mut got = vec![0u32; N];
            sendrecv(&comm, other, &mine, other, &mut got).expect("sendrecv");
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
    ::loom::model(|| {
        let comm = world(1).0.pop().expect("one rank");
        for n in [3usize, EAGER_MAX / 4 + 1] {
            let mine: Vec<u32> = (0..n as u32).collect();
            let mut got = vec![0u32; n];
            sendrecv(&comm, 0, &mine, 0, &mut got).expect("self sendrecv");
            assert_eq!(got, mine);
        }
    });
}

/// A receiver that expects another length fails the run (`Mismatch`) while the sender is
/// waiting for the acknowledgement of a lent slice: the failure wakes the sender, which
/// withdraws its unclaimed message and returns `Aborted`, the slice never read.
#[test]
fn mismatch_wakes_a_lent_sender() {
    const N: usize = EAGER_MAX + 1;
    ::loom::model(|| {
        let out = spmd(2, |comm| {
            if comm.rank() == 0 {
                send(&comm, 1, &[7u8; N])
            } else {
                let mut short = [0u8; 3];
                recv(&comm, 0, &mut short)
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
    ::loom::model(|| {
        let (mut comms, run) = world(2);
        let receiver = comms.pop().expect("rank 1");
        let sender = comms.pop().expect("rank 0");
        let t1 = thread::spawn(move || {
            let mut got = vec![0u32; N];
            recv(&receiver, 0, &mut got).map(|()| got)
        });
        let t0 = thread::spawn(move || {
            let mine: Vec<u32> = (0..N as u32).collect();
            send(&sender, 1, &mine)
        });
        fail_as_panic(&run, 2);
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
/// mailbox releases the cell on unwind, so the sender's send is acknowledged; the transport
/// must also wake the sender then (its wake-up is a drop guard), or a sender already parked
/// on the acknowledgement is never woken and both ranks wait for each other for ever.
#[test]
fn caught_panic_in_a_reader_still_wakes_the_sender() {
    const N: usize = EAGER_MAX / 4 + 1;
    quiet_panics();
    ::loom::model(|| {
        spmd(2, |comm| {
            if comm.rank() == 0 {
                let big: Vec<u32> = (0..N as u32).collect();
                send(&comm, 1, &big).expect("acknowledged, if by an unwinding reader");
                send(&comm, 1, &[1u32]).expect("second message");
            } else {
                let mut acc = vec![0u32; N];
                let t = ShmTransport::p2p(&comm, "recv_reduce");
                let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    t.recv_reduce(0, Tag::P2P, &mut acc, &mut |_, _| {
                        panic!("{QUIET}: operator")
                    })
                }));
                assert!(caught.is_err());
                let mut next = [0u32];
                recv(&comm, 0, &mut next).expect("second message");
                assert_eq!(next, [1]);
            }
        });
    });
}

/// A rank's own reduction operator panics while its `sendrecv_reduce` has a rendezvous send
/// lent to the peer, and the rank catches the panic and frees its send buffer. The loan must
/// be settled (withdrawn, or its release waited for) while the call unwinds, not only when
/// the exchange loop breaks, or the peer may claim and read freed memory (loom: a read of the
/// buffer not ordered before its free). With the allreduce schedules' user operators that
/// would be a use-after-free in safe code.
#[test]
fn unwinding_exchange_does_not_leave_its_send_lent() {
    const N: usize = EAGER_MAX / 4 + 1;
    quiet_panics();
    ::loom::model(|| {
        let buf = Tracked::new((0..N as u32).collect());
        let mut comms = world(2).0;
        let (c1, c0) = (comms.pop().expect("rank 1"), comms.pop().expect("rank 0"));
        let peer = {
            let buf = buf.clone();
            thread::spawn(move || {
                let mut acc = vec![0u32; N];
                let t = ShmTransport::p2p(&c1, "sendrecv_reduce");
                let out = t.sendrecv_reduce(0, &[5u32], 0, &mut acc, Tag::P2P, &mut |acc, inc| {
                    acc.copy_from_slice(&buf.read(inc));
                });
                match out {
                    Ok(()) => assert!(acc.iter().enumerate().all(|(i, &v)| v == i as u32)),
                    Err(e) => assert!(matches!(e, Error::Aborted { rank: 1, .. }), "{e:?}"),
                }
            })
        };
        let (ptr, len) = buf.addr();
        // SAFETY: the boxed slice stays where it is until `free` below, and `send` is not
        // used after it.
        let send = unsafe { std::slice::from_raw_parts(ptr, len) };
        let mut one = [0u32];
        let t = ShmTransport::p2p(&c0, "sendrecv_reduce");
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            t.sendrecv_reduce(1, send, 1, &mut one, Tag::P2P, &mut |_, _| {
                panic!("{QUIET}: operator")
            })
        }));
        assert!(caught.is_err());
        buf.free();
        peer.join().unwrap();
    });
}

/// Two ranks that both receive first, nothing in flight: whatever the interleaving, the last
/// to park finds every rank blocked, and both calls end in `Deadlock` (a missed detection
/// would leave both asleep, which loom reports).
#[test]
fn receives_from_each_other_are_found_as_a_deadlock() {
    ::loom::model(|| {
        let out = spmd_detecting(2, |comm, _| recv(&comm, 1 - comm.rank(), &mut [0u8]));
        for (r, res) in out.iter().enumerate() {
            assert!(
                matches!(res, Err(Error::Deadlock { rank, op: "recv", .. }) if *rank == r),
                "rank {r}: {res:?}"
            );
        }
    });
}

/// A message sent while its receiver is marking itself blocked: the sender's wake-up clears
/// the mark (or the receiver's last look sees the message), so no interleaving reports a
/// deadlock — rank 0 receives, then sends; rank 1 sends, then receives.
#[test]
fn a_message_in_flight_is_never_a_deadlock() {
    ::loom::model(|| {
        let out = spmd_detecting(2, |comm, _| -> Result<u8> {
            let mut got = [0u8];
            if comm.rank() == 0 {
                recv(&comm, 1, &mut got)?;
                send(&comm, 1, &[got[0] + 1])?;
            } else {
                send(&comm, 0, &[5u8])?;
                recv(&comm, 0, &mut got)?;
            }
            Ok(got[0])
        });
        assert_eq!(out, vec![Ok(5), Ok(6)]);
    });
}

/// A third rank returns: before or after the other two block on each other, its return
/// (whose wake-ups may still be under way) is never missed nor mistaken: they end in
/// `Deadlock`, each naming the other.
#[test]
fn a_rank_returning_completes_a_deadlock() {
    ::loom::model(|| {
        let out = spmd_detecting(3, |comm, run| {
            if comm.rank() == 2 {
                run.mark_done(2);
                return Ok(());
            }
            recv(&comm, 1 - comm.rank(), &mut [0u8])
        });
        assert!(
            out[..2]
                .iter()
                .all(|r| matches!(r, Err(Error::Deadlock { .. }))),
            "{out:?}"
        );
    });
}

/// A rank that sends and then returns, its message waking a rank that then sends on: no
/// interleaving reports a deadlock.
#[test]
fn a_rank_returning_after_its_send_is_not_a_deadlock() {
    ::loom::model(|| {
        let out = spmd_detecting(3, |comm, run| -> Result<u8> {
            let mut got = [0u8];
            match comm.rank() {
                2 => {
                    send(&comm, 0, &[4u8])?;
                    run.mark_done(2);
                    return Ok(0);
                }
                0 => {
                    recv(&comm, 2, &mut got)?;
                    send(&comm, 1, &got)?;
                }
                _ => recv(&comm, 0, &mut got)?,
            }
            Ok(got[0])
        });
        assert_eq!(out, vec![Ok(4), Ok(4), Ok(0)]);
    });
}
