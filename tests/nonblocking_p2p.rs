//! Non-blocking point-to-point (`Scope::isend`, `Scope::irecv` and their tagged forms):
//! MPI's matching order — a posted receive takes its message before any receive made later,
//! messages from one sender with one tag arrive in the order sent, blocking or not — sends
//! that cannot be posted at once, messages to oneself, and the errors, each against what a
//! sequential model says every receive gets.

use corecoll::unstable::EAGER_MAX;
use corecoll::{Error, Peer, Request, Result, Status, ANY_TAG};

/// A message's payload: `len` words naming its sender, tag and number.
fn payload(src: usize, tag: u32, k: usize, len: usize) -> Vec<u64> {
    (0..len)
        .map(|i| ((src as u64) << 48) ^ (u64::from(tag) << 32) ^ ((k as u64) << 16) ^ i as u64)
        .collect()
}

/// Lengths that cross every path: empty, one word, eager, just past eager (rendezvous),
/// large.
const LENS: [usize; 5] = [0, 1, 7, EAGER_MAX / 8 + 1, 100_000];

fn team(p: usize) -> corecoll::Team {
    corecoll::Team::builder().ranks(p).build().unwrap()
}

fn all_ok<T: std::fmt::Debug>(out: &[Result<T>]) {
    assert!(out.iter().all(Result::is_ok), "{out:?}");
}

/// A ring of every length: each rank posts its receive from the left first, then sends to the
/// right, then waits for both, in either order.
#[test]
fn a_ring_with_requests_at_every_size() {
    for p in [1usize, 2, 3, 4, 5, 8, 17, 33] {
        let out = team(p).run(|comm| -> Result<()> {
            let (r, p) = (comm.rank(), comm.size());
            let (left, right) = ((r + p - 1) % p, (r + 1) % p);
            for (k, &n) in LENS.iter().enumerate() {
                let send = payload(r, 3, k, n);
                let mut got = vec![0u64; n];
                let st = comm.scope(|s| {
                    let recv = s.irecv_tagged(left, 3, &mut got)?;
                    let sent = s.isend_tagged(right, 3, &send)?;
                    if k % 2 == 0 {
                        sent.wait()?;
                        recv.wait_status()
                    } else {
                        let st = recv.wait_status()?;
                        sent.wait()?;
                        Ok(st)
                    }
                })?;
                assert_eq!(
                    st,
                    Status {
                        source: Some(left),
                        tag: 3,
                        len: n
                    }
                );
                assert_eq!(got, payload(left, 3, k, n), "p = {p}, rank {r}, n = {n}");
            }
            Ok(())
        });
        all_ok(&out.unwrap());
    }
}

/// A receive posted first takes the first message even when a blocking receive that accepts
/// it too runs before the posted one is waited for.
#[test]
fn a_posted_receive_wins_over_a_later_blocking_one() {
    for n in LENS {
        let out = team(2).run(|comm| -> Result<()> {
            if comm.rank() == 0 {
                // Wait until rank 1 has posted its receive, so that the messages find it.
                comm.barrier()?;
                for k in 0..2 {
                    comm.send_tagged(1, k, &payload(0, k, k as usize, n))?;
                }
                return Ok(());
            }
            let mut first = vec![0u64; n];
            let mut second = vec![0u64; n];
            comm.scope(|s| {
                let posted = s.irecv_tagged(Peer::Any, ANY_TAG, &mut first)?;
                comm.barrier()?;
                let st = comm.recv_tagged(Peer::Any, ANY_TAG, &mut second)?;
                assert_eq!(st.tag, 1, "the blocking receive gets the second message");
                let st = posted.wait_status()?;
                assert_eq!(st.tag, 0, "the posted receive gets the first message");
                Ok(())
            })?;
            assert_eq!(first, payload(0, 0, 0, n));
            assert_eq!(second, payload(0, 1, 1, n));
            Ok(())
        });
        all_ok(&out.unwrap());
    }
}

/// Receives posted for tags in one order match messages sent in the reverse order, and a
/// probe never reports a message that a posted receive has taken.
#[test]
fn posted_receives_match_by_tag_and_probes_see_past_them() {
    let out = team(2).run(|comm| -> Result<()> {
        let tags = [5u32, 9, 2, 7];
        if comm.rank() == 0 {
            comm.barrier()?;
            for &t in tags.iter().rev() {
                comm.send_tagged(1, t, &payload(0, t, 0, t as usize))?;
            }
            comm.send_tagged(1, 100, &[42u64])?;
            return Ok(());
        }
        let mut bufs: Vec<Vec<u64>> = tags.iter().map(|&t| vec![0; t as usize]).collect();
        comm.scope(|s| {
            let mut reqs = Vec::new();
            for (b, &t) in bufs.iter_mut().zip(&tags) {
                reqs.push(s.irecv_tagged(0, t, b)?);
            }
            comm.barrier()?;
            // Tags 5, 9, 2, 7 go to the posted receives; the probe reports tag 100.
            let st = comm.probe::<u64>(0, ANY_TAG)?;
            assert_eq!((st.tag, st.len), (100, 1));
            let mut last = [0u64];
            comm.recv_tagged(0, 100, &mut last)?;
            assert_eq!(last, [42]);
            Request::wait_all(reqs)
        })?;
        for (b, &t) in bufs.iter().zip(&tags) {
            assert_eq!(*b, payload(0, t, 0, t as usize));
        }
        Ok(())
    });
    all_ok(&out.unwrap());
}

/// Every rank sends many messages to every other before receiving any — more than a mailbox
/// holds, eager and rendezvous — which would deadlock with blocking sends; then receives them
/// from any rank, and finds each sender's messages in order.
#[test]
fn more_sends_than_a_mailbox_holds_in_both_directions() {
    for (p, count) in [(2usize, 200usize), (3, 100), (5, 40)] {
        for n in [1usize, EAGER_MAX / 8 + 3] {
            let out = team(p).run(|comm| -> Result<()> {
                let (r, p) = (comm.rank(), comm.size());
                let msgs: Vec<Vec<u64>> = (0..count).map(|k| payload(r, 1, k, n)).collect();
                comm.scope(|s| {
                    let mut sends = Vec::new();
                    for q in (0..p).filter(|&q| q != r) {
                        for m in &msgs {
                            sends.push(s.isend_tagged(q, 1, m)?);
                        }
                    }
                    let mut next = vec![0usize; p];
                    let mut buf = vec![0u64; n];
                    for _ in 0..count * (p - 1) {
                        let st = comm.recv_tagged(Peer::Any, 1, &mut buf)?;
                        let q = st.source.expect("a sender");
                        assert_eq!(buf, payload(q, 1, next[q], n), "from {q}");
                        next[q] += 1;
                    }
                    Request::wait_all(sends)
                })
            });
            all_ok(&out.unwrap());
        }
    }
}

/// Non-blocking sends queued behind a full mailbox and a blocking send after them: the
/// blocking one waits its turn, and the receiver gets them in the order made.
#[test]
fn a_blocking_send_waits_behind_queued_requests() {
    let out = team(2).run(|comm| -> Result<()> {
        let count = 100;
        if comm.rank() == 0 {
            let msgs: Vec<Vec<u64>> = (0..count).map(|k| payload(0, 0, k, 3)).collect();
            return comm.scope(|s| {
                let mut sends = Vec::new();
                for m in &msgs {
                    sends.push(s.isend(1, m)?);
                }
                comm.send(1, &payload(0, 0, count, 3))?;
                Request::wait_all(sends)
            });
        }
        // Let rank 0 run ahead and fill the mailbox (any timing is correct; this makes the
        // interesting one likely).
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut buf = [0u64; 3];
        for k in 0..=count {
            comm.recv(0, &mut buf)?;
            assert_eq!(buf.to_vec(), payload(0, 0, k, 3), "message {k}");
        }
        Ok(())
    });
    all_ok(&out.unwrap());
}

/// Messages to oneself: a receive posted before a blocking send of any size (the send
/// completes against it), and a non-blocking send of any size before a blocking receive.
#[test]
fn messages_to_oneself() {
    for p in [1usize, 2, 3] {
        let out = team(p).run(|comm| -> Result<()> {
            let me = comm.rank();
            for (k, &n) in LENS.iter().enumerate() {
                let mut got = vec![0u64; n];
                comm.scope(|s| {
                    let recv = s.irecv(me, &mut got)?;
                    comm.send(me, &payload(me, 0, k, n))?;
                    recv.wait()
                })?;
                assert_eq!(got, payload(me, 0, k, n));
                let data = payload(me, 4, k, n);
                let mut back = vec![0u64; n];
                comm.scope(|s| {
                    let sent = s.isend_tagged(me, 4, &data)?;
                    comm.recv_tagged(me, 4, &mut back)?;
                    sent.wait()
                })?;
                assert_eq!(back, data);
            }
            Ok(())
        });
        all_ok(&out.unwrap());
    }
}

/// Rank 0 posts a receive from any rank for every other rank, and every other rank sends to
/// it; each sender is received once. Receives from no peer complete at once.
#[test]
fn receives_from_any_rank_and_from_no_peer() {
    for p in [1usize, 2, 3, 8, 17] {
        let out = team(p).run(|comm| -> Result<()> {
            let (r, p) = (comm.rank(), comm.size());
            if r != 0 {
                comm.send_tagged(0, 2, &payload(r, 2, 0, r))?;
                return Ok(());
            }
            let mut bufs = vec![vec![0u64; p]; p - 1];
            let mut untouched = [7u64];
            comm.scope(|s| {
                let none = s.irecv(Peer::None, &mut untouched)?;
                let mut reqs = Vec::new();
                for b in bufs.iter_mut() {
                    reqs.push(s.irecv_tagged(Peer::Any, 2, b)?);
                }
                assert_eq!(none.wait_status()?.source, None);
                while let Some((_, out)) = Request::wait_any(&mut reqs) {
                    out?;
                }
                Ok(())
            })?;
            assert_eq!(untouched, [7]);
            // Each buffer holds one sender's message, each sender once.
            let mut from: Vec<usize> = bufs.iter().map(|b| (b[0] >> 48) as usize).collect();
            for (b, &q) in bufs.iter().zip(&from) {
                assert_eq!(b[..q], payload(q, 2, 0, q)[..], "from {q}");
            }
            from.sort_unstable();
            assert_eq!(from, (1..p).collect::<Vec<_>>());
            Ok(())
        });
        all_ok(&out.unwrap());
    }
}

/// Every pair exchanges messages on several tags; every rank posts its receives and sends in
/// an order of its own (seeded), waits in yet another, and checks each message.
#[test]
fn all_pairs_in_scrambled_orders() {
    for p in [2usize, 3, 5, 8, 13] {
        let out = team(p).run(|comm| -> Result<()> {
            let (r, p) = (comm.rank(), comm.size());
            let tags = [0u32, 3, 11];
            let lens = |q: usize, t: u32| (q * 37 + t as usize * 101) % 700;
            let sends: Vec<(usize, u32, Vec<u64>)> = (0..p)
                .flat_map(|q| tags.map(|t| (q, t, payload(r, t, q, lens(r, t)))))
                .collect();
            let mut recvs: Vec<(usize, u32, Vec<u64>)> = (0..p)
                .flat_map(|q| tags.map(|t| (q, t, vec![0u64; lens(q, t)])))
                .collect();
            let mut order: Vec<usize> = (0..sends.len() + recvs.len()).collect();
            scramble(&mut order, r as u64 + 1);
            comm.scope(|s| {
                let mut sendable: Vec<Option<&(usize, u32, Vec<u64>)>> =
                    sends.iter().map(Some).collect();
                let mut receivable: Vec<Option<&mut (usize, u32, Vec<u64>)>> =
                    recvs.iter_mut().map(Some).collect();
                let mut reqs = Vec::new();
                for &i in &order {
                    if i < sendable.len() {
                        let (q, t, d) = sendable[i].take().expect("once");
                        reqs.push(s.isend_tagged(*q, *t, d)?);
                    } else {
                        let (q, t, b) = receivable[i - sendable.len()].take().expect("once");
                        reqs.push(s.irecv_tagged(*q, *t, b)?);
                    }
                }
                scramble(&mut reqs, r as u64 + 99);
                Request::wait_all(reqs)
            })?;
            for (q, t, b) in &recvs {
                assert_eq!(*b, payload(*q, *t, r, lens(*q, *t)), "from {q} tag {t}");
            }
            Ok(())
        });
        all_ok(&out.unwrap());
    }
}

/// A deterministic shuffle (xorshift).
fn scramble<T>(v: &mut [T], seed: u64) {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

/// A forgotten receive still gets its message before its scope returns; a forgotten send is
/// still delivered.
#[test]
fn forgotten_requests_complete_at_the_end_of_their_scope() {
    for n in LENS {
        let out = team(2).run(|comm| -> Result<Vec<u64>> {
            let r = comm.rank();
            let data = payload(r, 0, 0, n);
            let mut got = vec![0u64; n];
            comm.scope(|s| {
                std::mem::forget(s.irecv(1 - r, &mut got)?);
                std::mem::forget(s.isend(1 - r, &data)?);
                Ok(())
            })?;
            Ok(got)
        });
        for (r, o) in out.unwrap().into_iter().enumerate() {
            assert_eq!(o.unwrap(), payload(1 - r, 0, 0, n));
        }
    }
}

/// A message of another type or too long for a posted receive fails the run on every rank;
/// a bad tag or rank is an error at the start.
#[test]
fn mismatches_and_bad_arguments() {
    let out = team(2).run(|comm| -> Result<()> {
        if comm.rank() == 0 {
            comm.send(1, &[1.5f64, 2.5])?;
            return comm.barrier();
        }
        let mut buf = [0u32; 2];
        comm.scope(|s| s.irecv(0, &mut buf)?.wait())
    });
    let out = out.unwrap();
    assert!(
        matches!(
            out[1].as_ref().map_err(Error::root_cause),
            Err(Error::Mismatch { .. })
        ),
        "{out:?}"
    );
    assert!(out[0].is_err(), "{out:?}");

    let out = team(2).run(|comm| -> Result<()> {
        if comm.rank() == 0 {
            comm.send(1, &[1u32, 2, 3])?;
            return comm.barrier();
        }
        let mut buf = [0u32; 2];
        comm.scope(|s| s.irecv(0, &mut buf)?.wait())
    });
    let out = out.unwrap();
    assert!(out.iter().all(Result::is_err), "{out:?}");

    for bad in 0..3 {
        let out = team(2).run(|comm| -> Result<()> {
            let mut buf = [0u8; 1];
            comm.scope(|s| {
                let r = match bad {
                    0 => s.isend(2, &[1u8]),
                    1 => s.isend(Peer::Any, &[1u8]),
                    _ => s.irecv_tagged(0, corecoll::TAG_MAX + 1, &mut buf),
                };
                r.map(drop)
            })
        });
        let out = out.unwrap();
        assert!(out.iter().all(Result::is_err), "case {bad}: {out:?}");
    }
}

/// A receive that no rank will ever match is a deadlock, found and reported on every rank,
/// whether the rank waits for it or only ends its scope.
#[test]
fn an_unmatched_receive_is_a_deadlock() {
    for wait in [true, false] {
        let out = team(2).run(|comm| -> Result<()> {
            let mut buf = [0u8; 1];
            comm.scope(|s| {
                let req = s.irecv(1 - comm.rank(), &mut buf)?;
                if wait {
                    req.wait()?;
                }
                Ok(())
            })
        });
        for (r, o) in out.unwrap().into_iter().enumerate() {
            let e = o.expect_err("a deadlock");
            assert!(
                matches!(e.root_cause(), Error::Deadlock { .. }),
                "rank {r}: {e}"
            );
        }
    }
}

/// A send that waits for its receiver — lent (long), or behind a full mailbox — whose
/// receiver never receives: an error on the sender whether the receiver panics or returns,
/// and the sender's buffer is free again when its scope ends.
#[test]
fn a_send_whose_receiver_never_receives_fails() {
    for (panics, n) in [
        (true, EAGER_MAX / 8 + 1),
        (false, EAGER_MAX / 8 + 1),
        (false, 1),
    ] {
        let out = team(2).run(|comm| -> Result<Vec<u64>> {
            let mut data = vec![7u64; n];
            if comm.rank() == 1 {
                assert!(!panics, "rank 1 gives up");
                return Ok(data);
            }
            comm.scope(|s| {
                // Enough sends that the last ones wait for room, whatever the length.
                let reqs: Vec<Request<'_>> =
                    (0..40).map(|_| s.isend(1, &data)).collect::<Result<_>>()?;
                Request::wait_all(reqs)
            })?;
            data[0] = 8;
            Ok(data)
        });
        // A panicking rank fails the whole run; otherwise the sender's result is the error.
        let e = match out {
            Err(e) => e,
            Ok(mut out) => out.swap_remove(0).expect_err("the sends cannot complete"),
        };
        assert!(
            matches!(
                e.root_cause(),
                Error::Deadlock { .. } | Error::PeerExited { .. } | Error::Panicked { .. }
            ),
            "panics = {panics}, n = {n}: {e}"
        );
    }
}

/// `test` on a posted receive never blocks, and returns true once the message is in.
#[test]
fn test_polls_a_posted_receive() {
    let out = team(2).run(|comm| -> Result<()> {
        if comm.rank() == 0 {
            comm.barrier()?;
            return comm.send(1, &payload(0, 0, 0, 5000));
        }
        let mut buf = vec![0u64; 5000];
        comm.scope(|s| {
            let mut req = s.irecv(0, &mut buf)?;
            assert!(!req.test()?, "nothing sent yet");
            comm.barrier()?;
            while req.test_status()?.is_none() {
                std::hint::spin_loop();
            }
            assert_eq!(req.wait_status()?.len, 5000);
            Ok(())
        })?;
        assert_eq!(buf, payload(0, 0, 0, 5000));
        Ok(())
    });
    all_ok(&out.unwrap());
}

/// Large non-blocking sends to oneself queue behind each other (each waits for its receiver);
/// a blocking receive of the last one first still completes, the scope posting the queued
/// ones as the receive moves the earlier ones aside.
#[test]
fn a_receive_from_oneself_waits_for_queued_sends() {
    for p in [1usize, 2] {
        let out = team(p).run(|comm| -> Result<()> {
            let me = comm.rank();
            let n = EAGER_MAX / 8 + 5;
            let msgs: Vec<Vec<u64>> = (0..4).map(|k| payload(me, k, k as usize, n)).collect();
            comm.scope(|s| {
                let mut sends = Vec::new();
                for (k, m) in msgs.iter().enumerate() {
                    sends.push(s.isend_tagged(me, k as u32, m)?);
                }
                for k in (0..4u32).rev() {
                    let mut got = vec![0u64; n];
                    comm.recv_tagged(me, k, &mut got)?;
                    assert_eq!(got, msgs[k as usize], "tag {k}");
                }
                Request::wait_all(sends)
            })
        });
        all_ok(&out.unwrap());
    }
}

/// A wait for a posted receive (which waits on the rank's own stack, not in a task) still
/// advances the scope's other requests: the message it waits for is sent only after a
/// non-blocking allreduce that the waiting rank started before it, and a large send of its own
/// that must wait for its receiver, have gone through the other ranks.
#[test]
fn a_wait_for_a_posted_receive_advances_the_other_requests() {
    let n = EAGER_MAX / 8 * 4;
    for p in [2usize, 3, 5, 8] {
        let out = team(p).run(|comm| -> Result<()> {
            let (r, p) = (comm.rank(), comm.size());
            let last = p - 1;
            let mut sum = vec![r as f64 + 1.0; 3];
            let want = (p * (p + 1) / 2) as f64;
            if r == 0 {
                let mut got = vec![0u64; 7];
                let big = payload(0, 1, 0, n);
                comm.scope(|s| {
                    let recv = s.irecv_tagged(last, 9, &mut got)?;
                    let ar = s.iallreduce(&mut sum, corecoll::op::Sum)?;
                    let send = s.isend_tagged(last, 1, &big)?;
                    assert_eq!(recv.wait_status()?.len, 7);
                    Request::wait_all([ar, send])
                })?;
                assert_eq!(got, payload(last, 9, 0, 7));
            } else {
                // (A non-blocking collective matches only non-blocking ones.)
                comm.scope(|s| s.iallreduce(&mut sum, corecoll::op::Sum)?.wait())?;
                if r == last {
                    let mut big = vec![0u64; n];
                    comm.recv_tagged(0, 1, &mut big)?;
                    assert_eq!(big, payload(0, 1, 0, n));
                    comm.send_tagged(0, 9, &payload(last, 9, 0, 7))?;
                }
            }
            assert!(sum.iter().all(|&x| x == want), "{sum:?} against {want}");
            Ok(())
        });
        all_ok(&out.unwrap());
    }
}
