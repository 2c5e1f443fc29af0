//! Failures and how they spread: panicking ranks (at the start, while others wait on them in a
//! receive or a barrier, on rank 0, on several ranks), timeouts, ranks that return early
//! (`PeerExited`), mismatched lengths, element types and collective kinds, skipped barriers,
//! out-of-range ranks, messages to oneself that cannot complete, zero ranks, bad pinning,
//! nested and overlapping runs of one team. Each test checks the error variant and its fields,
//! the words of its message, that every other rank's calls fail too (naming the first
//! failure), that nothing hangs, and that the team runs a clean run afterwards.

use corecoll::{Comm, Error, Pinning, Team};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

type Log = Mutex<Vec<(usize, Error)>>;

/// Records `res`'s error (if any) under `rank`, and hands `res` back.
fn note<T>(log: &Log, rank: usize, res: Result<T, Error>) -> Result<T, Error> {
    if let Err(e) = &res {
        log.lock().unwrap().push((rank, e.clone()));
    }
    res
}

fn logged(log: Log) -> Vec<(usize, Error)> {
    let mut v = log.into_inner().unwrap();
    v.sort_by_key(|(r, _)| *r);
    v
}

#[track_caller]
fn assert_mentions(e: &Error, words: &[&str]) {
    let text = e.to_string();
    for w in words {
        assert!(text.contains(w), "{text:?} does not mention {w:?}");
    }
}

/// Spins (yielding) until `counter` reaches `n`.
fn await_count(counter: &AtomicUsize, n: usize) {
    while counter.load(Ordering::SeqCst) < n {
        std::thread::yield_now();
    }
}

/// A run that must succeed on `team`: a ring exchange and a barrier on every rank.
fn clean_run(team: &Team) {
    let out = team
        .run(|comm| -> Result<u64, Error> {
            let (r, p) = (comm.rank(), comm.size());
            let mut got = [0u64; 600];
            let mine = [r as u64; 600];
            comm.sendrecv((r + 1) % p, &mine, (r + p - 1) % p, &mut got)?;
            comm.barrier()?;
            Ok(got[599])
        })
        .expect("a clean run after a failed one");
    let p = team.size();
    let got: Vec<u64> = out.into_iter().map(Result::unwrap).collect();
    let want: Vec<u64> = (0..p).map(|r| ((r + p - 1) % p) as u64).collect();
    assert_eq!(got, want);
}

#[track_caller]
fn assert_panicked(res: Result<impl std::fmt::Debug, Error>, rank: usize, message: &str) {
    let err = res.expect_err("the run had a panicking rank");
    assert_eq!(
        err,
        Error::Panicked {
            rank,
            message: message.to_string()
        }
    );
    assert_mentions(&err, &[&format!("rank {rank}"), "panicked", message]);
}

/// Every entry of `log` is an `Aborted` of the rank it is logged under, caused by `cause`.
#[track_caller]
fn assert_all_aborted_by(log: &[(usize, Error)], cause: &Error) {
    for (r, e) in log {
        match e {
            Error::Aborted { rank, .. } => assert_eq!(rank, r, "{e}"),
            other => panic!("rank {r}: expected Aborted, got {other}"),
        }
        assert_eq!(e.root_cause(), cause, "rank {r}: {e}");
        assert_mentions(e, &[&format!("rank {r}"), "abandoned", &cause.to_string()]);
    }
}

#[test]
fn panic_at_the_start() {
    let team = Team::new(4).unwrap();
    let log = Log::default();
    let res = team.run(|comm| {
        let r = comm.rank();
        if r == 2 {
            panic!("boom at start");
        }
        let _ = note(&log, r, comm.barrier());
        let _ = note(&log, r, comm.send((r + 1) % 4, &[1u8]));
    });
    assert_panicked(res, 2, "boom at start");
    let log = logged(log);
    let ranks: Vec<usize> = log.iter().map(|(r, _)| *r).collect();
    assert_eq!(ranks, vec![0, 0, 1, 1, 3, 3], "{log:?}");
    let cause = Error::Panicked {
        rank: 2,
        message: "boom at start".into(),
    };
    assert_all_aborted_by(&log, &cause);
    clean_run(&team);
}

/// Ranks 0, 1 and 3 wait in receives from rank 2, which sends rank 0 one message and then
/// panics once the others have announced their receives.
#[test]
fn panic_while_others_wait_in_a_receive() {
    let team = Team::new(4).unwrap();
    let log = Log::default();
    let waiting = AtomicUsize::new(0);
    let res = team.run(|comm| {
        let r = comm.rank();
        if r == 2 {
            comm.send(0, &[7u64; 10]).unwrap();
            await_count(&waiting, 3);
            panic!("rank two gives up");
        }
        if r == 0 {
            let mut first = [0u64; 10];
            comm.recv(2, &mut first).unwrap();
            assert_eq!(first, [7; 10]);
        }
        waiting.fetch_add(1, Ordering::SeqCst);
        let mut buf = vec![0u64; 1000];
        let _ = note(&log, r, comm.recv(2, &mut buf));
    });
    assert_panicked(res, 2, "rank two gives up");
    let log = logged(log);
    assert_eq!(log.iter().map(|(r, _)| *r).collect::<Vec<_>>(), [0, 1, 3]);
    let cause = Error::Panicked {
        rank: 2,
        message: "rank two gives up".into(),
    };
    assert_all_aborted_by(&log, &cause);
    for (_, e) in &log {
        assert!(matches!(e, Error::Aborted { op: "recv", .. }), "{e}");
    }
    clean_run(&team);
}

#[test]
fn panic_while_others_wait_in_a_barrier() {
    let team = Team::new(5).unwrap();
    let log = Log::default();
    let in_barrier = AtomicUsize::new(0);
    let res = team.run(|comm| {
        let r = comm.rank();
        if r == 4 {
            await_count(&in_barrier, 4);
            panic!("late panic on {r}");
        }
        in_barrier.fetch_add(1, Ordering::SeqCst);
        let _ = note(&log, r, comm.barrier());
        let _ = note(&log, r, comm.split(Some(0), 0).map(drop));
    });
    assert_panicked(res, 4, "late panic on 4");
    let log = logged(log);
    assert_eq!(log.len(), 8, "{log:?}");
    let cause = Error::Panicked {
        rank: 4,
        message: "late panic on 4".into(),
    };
    assert_all_aborted_by(&log, &cause);
    clean_run(&team);
}

#[test]
fn panic_on_rank_zero_and_panics_on_several_ranks() {
    let team = Team::new(3).unwrap();
    let log = Log::default();
    let res = team.run(|comm| {
        if comm.rank() == 0 {
            panic!("caller's rank fails");
        }
        let _ = note(&log, comm.rank(), comm.barrier());
    });
    assert_panicked(res, 0, "caller's rank fails");
    assert_eq!(logged(log).len(), 2);
    clean_run(&team);

    let res = team.run(|comm| {
        if comm.rank() > 0 {
            panic!("rank {} fails", comm.rank());
        }
        comm.barrier()
    });
    match res {
        Err(Error::Panicked { rank, message }) => {
            assert!(rank == 1 || rank == 2, "{rank}");
            assert_eq!(message, format!("rank {rank} fails"));
        }
        other => panic!("expected Panicked, got {other:?}"),
    }
    clean_run(&team);

    let res = team.run(|comm| {
        if comm.rank() == 1 {
            std::panic::panic_any(42u32);
        }
    });
    match res {
        Err(Error::Panicked { rank: 1, message }) => assert!(message.contains("not a string")),
        other => panic!("expected Panicked on rank 1, got {other:?}"),
    }
    clean_run(&team);
}

/// A rank's panic inside a sub-communicator names its team rank, and fails calls on other
/// sub-communicators and on the world.
#[test]
fn panic_in_a_sub_communicator_fails_the_whole_run() {
    let team = Team::new(6).unwrap();
    let log = Log::default();
    let sub_log = Log::default();
    let split_done = AtomicUsize::new(0);
    let res = team.run(|comm| {
        let r = comm.rank();
        let sub = comm.split(Some(r % 2), 10 - r).unwrap().unwrap();
        split_done.fetch_add(1, Ordering::SeqCst);
        if r == 3 {
            await_count(&split_done, 6);
            panic!("sub-communicator rank {} of team rank 3", sub.rank());
        }
        let _ = note(&sub_log, sub.rank() + 10 * (r % 2), sub.barrier());
        let _ = note(&log, r, comm.barrier());
    });
    // Odd team ranks 5, 3, 1 (reversed keys): team rank 3 is rank 1 of its sub-communicator.
    assert_panicked(res, 3, "sub-communicator rank 1 of team rank 3");
    let cause = Error::Panicked {
        rank: 3,
        message: "sub-communicator rank 1 of team rank 3".into(),
    };
    let log = logged(log);
    assert_eq!(
        log.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
        [0, 1, 2, 4, 5]
    );
    assert_all_aborted_by(&log, &cause);
    // Errors on the odd half's communicator (logged as 10 + its rank) name its ranks: team
    // ranks 5 and 1 are its ranks 0 and 2. The even half's barrier may finish before the panic.
    let sub_log = logged(sub_log);
    assert!(
        sub_log.iter().all(|(r, _)| *r < 3 || *r == 10 || *r == 12),
        "{sub_log:?}"
    );
    assert!(sub_log.iter().any(|(r, _)| *r == 10) && sub_log.iter().any(|(r, _)| *r == 12));
    let sub_log: Vec<(usize, Error)> = sub_log.into_iter().map(|(r, e)| (r % 10, e)).collect();
    assert_all_aborted_by(&sub_log, &cause);
    clean_run(&team);
}

/// A team whose deadlocks only the timeout finds (deadlock detection is off: these tests are
/// of the timeout; tests/deadlock.rs has the detection's).
fn timeout_team(p: usize) -> Team {
    Team::builder()
        .ranks(p)
        .timeout(Duration::from_millis(200))
        .deadlock_detection(false)
        .build()
        .unwrap()
}

/// Rank 1 waits outside corecoll while rank 0 waits to receive from it: rank 0 times out,
/// and rank 1's later send fails with the timeout as its cause.
#[test]
fn timeout_when_a_rank_never_sends() {
    let team = timeout_team(2);
    let gate = std::sync::Barrier::new(2);
    let out = team
        .run(|comm| -> Result<(), Error> {
            if comm.rank() == 0 {
                let mut buf = [0u32; 4];
                let res = comm.recv(1, &mut buf);
                gate.wait();
                res.map(drop)
            } else {
                gate.wait();
                comm.send(0, &[1u32; 4])
            }
        })
        .unwrap();
    let e0 = out[0].clone().unwrap_err();
    match &e0 {
        Error::Timeout {
            rank: 0,
            peer: 1,
            op: "recv",
            waited,
        } => assert!(*waited >= Duration::from_millis(200), "{waited:?}"),
        other => panic!("expected a Timeout of rank 0's recv from 1, got {other}"),
    }
    assert_mentions(&e0, &["rank 0", "recv", "rank 1", "timed out"]);
    let e1 = out[1].clone().unwrap_err();
    assert!(
        matches!(
            e1,
            Error::Aborted {
                rank: 1,
                op: "send",
                ..
            }
        ),
        "{e1}"
    );
    assert_eq!(e1.root_cause(), &e0);
    clean_run(&team);
}

/// Runs a two-rank deadlock on a team with a timeout and checks that both ranks fail because
/// of a timeout (both may time out), and that every timeout names the other rank and the
/// rank's own operation.
fn deadlock_times_out<F>(team: &Team, ops: [&str; 2], f: F)
where
    F: Fn(&Comm) -> Result<(), Error> + Sync,
{
    let out = team.run(f).unwrap();
    let errs: Vec<Error> = out.into_iter().map(Result::unwrap_err).collect();
    for (r, e) in errs.iter().enumerate() {
        let root = e.root_cause();
        assert!(matches!(root, Error::Timeout { .. }), "rank {r}: {e}");
        match e {
            Error::Timeout { rank, peer, op, .. } => {
                assert_eq!((*rank, *peer, *op), (r, 1 - r, ops[r]), "{e}");
                assert_mentions(e, &[&format!("rank {r}"), ops[r], "timed out"]);
            }
            Error::Aborted { rank, op, .. } => assert_eq!((*rank, *op), (r, ops[r]), "{e}"),
            other => panic!("rank {r}: {other}"),
        }
    }
    clean_run(team);
}

#[test]
fn timeout_when_the_receiver_does_something_else() {
    let team = timeout_team(2);
    // A rendezvous send while the receiver waits in a barrier.
    deadlock_times_out(&team, ["send", "barrier"], |comm| {
        if comm.rank() == 0 {
            comm.send(1, &vec![3u64; 5000])
        } else {
            comm.barrier()
        }
    });
    // An eager send completes at once; its sender then waits for an answer while the
    // receiver, having received, waits in a barrier.
    deadlock_times_out(&team, ["recv", "barrier"], |comm| {
        if comm.rank() == 0 {
            comm.send(1, &[1u8])?;
            comm.recv(1, &mut [0u8]).map(drop)
        } else {
            comm.recv(0, &mut [0u8])?;
            comm.barrier()
        }
    });
    // Two large sends at each other (the exchange `sendrecv` exists for).
    deadlock_times_out(&team, ["send", "send"], |comm| {
        let other = 1 - comm.rank();
        comm.send(other, &vec![comm.rank() as u8; 100_000])?;
        comm.recv(other, &mut vec![0u8; 100_000]).map(drop)
    });
    // Barriers on two different communicators over the same ranks.
    deadlock_times_out(&team, ["barrier", "barrier"], |comm| {
        let copy = comm.split(Some(0), comm.rank())?.unwrap();
        if comm.rank() == 0 {
            comm.barrier()
        } else {
            copy.barrier()
        }
    });
}

/// A team with a timeout runs correct programs to completion: the limit applies to each
/// wait, not to the run.
#[test]
fn timeout_does_not_fire_on_progressing_runs() {
    let team = timeout_team(3);
    for _ in 0..5 {
        clean_run(&team);
    }
}

#[test]
fn peer_that_returns_without_sending() {
    let team = Team::new(2).unwrap();
    let out = team
        .run(|comm| -> Result<(), Error> {
            if comm.rank() == 1 {
                return Ok(());
            }
            comm.recv(1, &mut [0u16; 3]).map(drop)
        })
        .unwrap();
    assert_eq!(out[1], Ok(()));
    let e = out[0].clone().unwrap_err();
    assert_eq!(
        e,
        Error::PeerExited {
            rank: 0,
            peer: 1,
            op: "recv"
        }
    );
    assert_mentions(&e, &["rank 0", "recv", "rank 1", "returned"]);

    // Messages sent before returning are still delivered; the one after them is not.
    let out = team
        .run(|comm| -> Result<Vec<u16>, Error> {
            if comm.rank() == 1 {
                comm.send(0, &[5u16, 6])?;
                comm.send(0, &[7u16])?;
                return Ok(vec![]);
            }
            let mut a = [0u16; 2];
            let mut b = [0u16; 1];
            comm.recv(1, &mut a)?;
            comm.recv(1, &mut b)?;
            let got = vec![a[0], a[1], b[0]];
            match comm.recv(1, &mut b) {
                Err(Error::PeerExited { peer: 1, .. }) => Ok(got),
                other => panic!("expected PeerExited, got {other:?}"),
            }
        })
        .unwrap();
    assert_eq!(out[0], Ok(vec![5, 6, 7]));

    // A rendezvous send to a rank that returns without receiving.
    let out = team
        .run(|comm| -> Result<(), Error> {
            if comm.rank() == 1 {
                return Ok(());
            }
            comm.send(1, &vec![1u64; 10_000])
        })
        .unwrap();
    assert_eq!(
        out[0],
        Err(Error::PeerExited {
            rank: 0,
            peer: 1,
            op: "send"
        })
    );
    clean_run(&team);
}

/// `PeerExited` names ranks of the communicator the call was made on.
#[test]
fn peer_exited_in_a_sub_communicator_names_sub_ranks() {
    let out = corecoll::run(4, |comm| -> Result<(), Error> {
        let sub = comm.split(Some(0), 3 - comm.rank())?.unwrap();
        if comm.rank() == 3 {
            return Ok(());
        }
        if comm.rank() == 0 {
            return sub.sendrecv(2, &[1u8], 0, &mut [0u8]).map(drop);
        }
        sub.barrier()
    })
    .unwrap();
    // Team rank 3 is sub rank 0, team rank 0 is sub rank 3.
    let e = out[0].clone().unwrap_err();
    let cause = e.root_cause();
    assert!(
        matches!(cause, Error::PeerExited { peer: 0, .. }),
        "{e} (root cause {cause})"
    );
    if let Error::PeerExited { rank, op, .. } = &e {
        assert_eq!((*rank, *op), (3, "sendrecv"));
    }
    assert_eq!(out[3], Ok(()));
}

/// Rank 0 sends `sent` elements of `S`, rank 1 receives `expected` elements of `R` and fails
/// with a mismatch naming both sides; rank 0's call (if still under way) or its next barrier
/// fails with the mismatch as its cause.
fn mismatch<S, R>(sent: usize, expected: usize, words: &[&str])
where
    S: Copy + Default + Send + Sync + 'static,
    R: Copy + Default + Send + Sync + 'static,
{
    let team = Team::new(2).unwrap();
    let out = team
        .run(|comm| -> Result<(), Error> {
            if comm.rank() == 0 {
                let data = vec![S::default(); sent];
                let sent = comm.send(1, &data);
                sent.and(comm.barrier())
            } else {
                let mut buf = vec![R::default(); expected];
                comm.recv(0, &mut buf).map(drop)
            }
        })
        .unwrap();
    let e1 = out[1].clone().unwrap_err();
    match &e1 {
        Error::Mismatch {
            rank: 1,
            peer: 0,
            op: "recv",
            ..
        } => {}
        other => panic!("expected a Mismatch on rank 1's recv from 0, got {other}"),
    }
    assert_mentions(&e1, &["rank 1", "recv", "rank 0"]);
    assert_mentions(&e1, words);
    let e0 = out[0].clone().unwrap_err();
    assert!(matches!(e0, Error::Aborted { rank: 0, .. }), "{e0}");
    assert_eq!(e0.root_cause(), &e1);
    clean_run(&team);
}

/// A message longer than the receive buffer is an error (a shorter one is received: see
/// tests/p2p_matching.rs).
#[test]
fn messages_longer_than_the_buffer() {
    mismatch::<u32, u32>(
        4,
        3,
        &[
            "expected a message with tag 0 of up to 3 elements of u32",
            "sent 4 elements of u32, more than the buffer holds",
        ],
    );
    mismatch::<u8, u8>(1, 0, &["up to 0 elements of u8", "sent 1 element of u8"]);
    // Rendezvous: the sender is still in its send when the receiver fails.
    mismatch::<u32, u32>(2000, 1999, &["up to 1999 elements", "sent 2000 elements"]);
    mismatch::<u8, u8>(4097, 4096, &["up to 4096 elements", "sent 4097 elements"]);
}

#[test]
fn mismatched_element_types() {
    mismatch::<u32, f32>(4, 4, &["4 elements of f32", "sent 4 elements of u32"]);
    mismatch::<f32, u32>(
        3000,
        3000,
        &["3000 elements of u32", "3000 elements of f32"],
    );
    mismatch::<u32, u64>(2, 1, &["up to 1 element of u64", "2 elements of u32"]);
    mismatch::<u64, u32>(1, 2, &["up to 2 elements of u32", "1 element of u64"]);
    mismatch::<u8, u64>(0, 0, &["elements of u64", "0 elements of u8"]);
}

/// The sender's side of a mismatch in `sendrecv`: both ranks exchange with each other, each
/// expecting a length the other does not send.
#[test]
fn mismatch_in_sendrecv_fails_both_sides() {
    let out = corecoll::run(2, |comm| -> Result<(), Error> {
        let other = 1 - comm.rank();
        let mut buf = vec![0u8; 5000 + comm.rank()];
        comm.sendrecv(other, &vec![1u8; 6000], other, &mut buf)
            .map(drop)
    })
    .unwrap();
    for (r, res) in out.iter().enumerate() {
        let e = res.clone().unwrap_err();
        assert!(matches!(e.root_cause(), Error::Mismatch { .. }), "{e}");
        match &e {
            Error::Mismatch { rank, peer, op, .. } => {
                assert_eq!((*rank, *peer, *op), (r, 1 - r, "sendrecv"))
            }
            Error::Aborted { rank, op, .. } => assert_eq!((*rank, *op), (r, "sendrecv")),
            other => panic!("{other}"),
        }
    }
}

#[test]
fn mismatched_collective_kinds() {
    for p in [2, 3, 6] {
        let out = corecoll::run(p, |comm| -> Result<(), Error> {
            if comm.rank() == 1 {
                comm.split(Some(0), 0).map(drop)
            } else {
                comm.barrier()
            }
        })
        .unwrap();
        let errs: Vec<Error> = out.into_iter().map(Result::unwrap_err).collect();
        // Several ranks may detect the mismatch themselves; the others are aborted by one.
        for (r, e) in errs.iter().enumerate() {
            let root = e.root_cause();
            assert!(
                matches!(root, Error::Mismatch { .. }),
                "p = {p}, rank {r}: {e}"
            );
            assert_mentions(
                root,
                &[
                    "barrier (collective call 1 on this communicator)",
                    "split (collective call 1 on this communicator)",
                ],
            );
            let op = if r == 1 { "split" } else { "barrier" };
            match e {
                Error::Mismatch { rank, op: o, .. } | Error::Aborted { rank, op: o, .. } => {
                    assert_eq!((*rank, *o), (r, op), "{e}")
                }
                other => panic!("{other}"),
            }
        }
        let causes: Vec<&Error> = errs
            .iter()
            .filter(|e| matches!(e, Error::Aborted { .. }))
            .map(Error::root_cause)
            .collect();
        assert!(causes.windows(2).all(|w| w[0] == w[1]), "{causes:?}");
    }
}

/// A rank that skips the last of several barriers; and one that calls a split where the others
/// call a barrier first (so the call numbers disagree too).
#[test]
fn skipped_barriers() {
    let p = 4;
    let out = corecoll::run(p, |comm| -> Result<usize, Error> {
        let n = if comm.rank() == 3 { 5 } else { 6 };
        for i in 0..n {
            comm.barrier().map_err(|e| {
                assert_eq!(i, 5, "barrier {i} failed: {e}");
                e
            })?;
        }
        Ok(n)
    })
    .unwrap();
    assert_eq!(out[3], Ok(5));
    for (r, res) in out.iter().enumerate().take(3) {
        let e = res.clone().unwrap_err();
        match e.root_cause() {
            Error::PeerExited {
                peer: 3,
                op: "barrier",
                ..
            } => {}
            other => panic!("rank {r}: expected PeerExited of 3, got {other}"),
        }
    }

    let out = corecoll::run(3, |comm| -> Result<(), Error> {
        if comm.rank() != 2 {
            comm.barrier()?;
        }
        comm.split(Some(0), 0).map(drop)
    })
    .unwrap();
    let root = out[2].clone().unwrap_err().root_cause().clone();
    assert!(matches!(root, Error::Mismatch { .. }), "{root}");
    assert_mentions(
        &root,
        &[
            "barrier (collective call 1 on this communicator)",
            "split (collective call 1 on this communicator)",
        ],
    );
}

#[test]
fn ranks_out_of_range() {
    let log = Log::default();
    let out = corecoll::run(3, |comm| -> Result<(), Error> {
        let r = comm.rank();
        if r == 1 {
            return comm.send(3, &[0u8]);
        }
        let _ = note(&log, r, comm.barrier());
        Ok(())
    })
    .unwrap();
    let e = out[1].clone().unwrap_err();
    assert_eq!(
        e,
        Error::RankOutOfRange {
            rank: 1,
            op: "send",
            peer: 3,
            size: 3
        }
    );
    assert_mentions(&e, &["rank 1", "send", "rank 3", "only 3 ranks"]);
    let log = logged(log);
    assert_eq!(log.len(), 2);
    assert_all_aborted_by(&log, &e);

    let out = corecoll::run(2, |comm| -> Result<(), Error> {
        match comm.rank() {
            0 => comm.recv(usize::MAX, &mut [0u8]).map(drop),
            _ => comm.sendrecv(0, &[1u8], 2, &mut [0u8]).map(drop),
        }
    })
    .unwrap();
    let errs: Vec<Error> = out.into_iter().map(Result::unwrap_err).collect();
    assert!(errs.iter().any(|e| matches!(
        e,
        Error::RankOutOfRange {
            rank: 0,
            op: "recv",
            peer: usize::MAX,
            size: 2
        } | Error::RankOutOfRange {
            rank: 1,
            op: "sendrecv",
            peer: 2,
            size: 2
        }
    )));
    for e in &errs {
        assert!(
            matches!(e.root_cause(), Error::RankOutOfRange { .. }),
            "{e}"
        );
    }

    // On a sub-communicator the size is the sub-communicator's.
    let out = corecoll::run(4, |comm| -> Result<(), Error> {
        let sub = comm.split(Some(comm.rank() / 2), 0)?.unwrap();
        sub.send(2, &[0u8])
    })
    .unwrap();
    for res in out {
        match res.unwrap_err().root_cause() {
            Error::RankOutOfRange {
                peer: 2, size: 2, ..
            } => {}
            other => panic!("{other}"),
        }
    }
}

#[test]
fn messages_to_self_that_cannot_complete() {
    let out = corecoll::run(1, |comm| comm.recv(0, &mut [0u8; 4])).unwrap();
    let e = out[0].clone().unwrap_err();
    assert!(
        matches!(
            e,
            Error::SelfDeadlock {
                rank: 0,
                op: "recv",
                ..
            }
        ),
        "{e}"
    );
    assert_mentions(&e, &["rank 0", "recv", "itself"]);

    let out = corecoll::run(1, |comm| comm.send(0, &vec![0u8; 4097])).unwrap();
    let e = out[0].clone().unwrap_err();
    assert!(
        matches!(
            e,
            Error::SelfDeadlock {
                rank: 0,
                op: "send",
                ..
            }
        ),
        "{e}"
    );
    assert_mentions(&e, &["rank 0", "send", "itself"]);

    // Small messages to itself that nobody receives fill the mailbox: an error, not a hang.
    let out = corecoll::run(1, |comm| -> (usize, Result<(), Error>) {
        for k in 0..100 {
            if let Err(e) = comm.send(0, &[k as u8]) {
                return (k, Err(e));
            }
        }
        (100, Ok(()))
    })
    .unwrap();
    let (k, res) = out[0].clone();
    assert!(k > 0 && k < 100, "{k}");
    assert!(
        matches!(res, Err(Error::SelfDeadlock { op: "send", .. })),
        "{res:?}"
    );

    // Others waiting on a rank that deadlocks with itself fail too.
    let out = corecoll::run(3, |comm| -> Result<(), Error> {
        if comm.rank() == 2 {
            comm.recv(2, &mut [0u64; 2])?;
        }
        comm.barrier()
    })
    .unwrap();
    let cause = out[2].clone().unwrap_err();
    assert!(
        matches!(cause, Error::SelfDeadlock { rank: 2, .. }),
        "{cause}"
    );
    for res in &out[..2] {
        assert_eq!(res.clone().unwrap_err().root_cause(), &cause);
    }
}

#[test]
fn zero_ranks() {
    assert_eq!(Team::new(0).unwrap_err(), Error::ZeroRanks);
    assert_eq!(
        Team::builder().ranks(0).build().unwrap_err(),
        Error::ZeroRanks
    );
    let called = AtomicBool::new(false);
    let res = corecoll::run(0, |_| called.store(true, Ordering::SeqCst));
    assert_eq!(res.unwrap_err(), Error::ZeroRanks);
    assert!(!called.load(Ordering::SeqCst));
    assert_mentions(&Error::ZeroRanks, &["at least one rank"]);
}

#[test]
fn bad_pinning() {
    let e = Team::builder()
        .ranks(2)
        .pinning(Pinning::Cores(vec![]))
        .build()
        .unwrap_err();
    assert!(
        matches!(&e, Error::Pinning(m) if m.contains("empty")),
        "{e}"
    );
    for list in [vec![100_000], vec![0, 100_000]] {
        let e = Team::builder()
            .ranks(2)
            .pinning(Pinning::Cores(list))
            .build()
            .unwrap_err();
        assert!(
            matches!(&e, Error::Pinning(m) if m.contains("100000")),
            "{e}"
        );
        assert_mentions(&e, &["pinning", "core 100000"]);
    }
}

#[test]
fn nested_run_is_team_busy() {
    let team = Team::new(3).unwrap();
    let out = team
        .run(|comm| {
            let inner = team.run(|_| 1);
            comm.barrier().unwrap();
            inner.map(drop)
        })
        .unwrap();
    assert_eq!(out, vec![Err(Error::TeamBusy); 3]);
    assert_mentions(&Error::TeamBusy, &["already running"]);
    clean_run(&team);
}

/// One thread's run is held open until another thread's run of the same team has been
/// refused; then both race freely. Every run either succeeds or is refused with `TeamBusy`.
#[test]
fn overlapping_runs_from_two_threads() {
    let team = Team::new(3).unwrap();
    let started = AtomicBool::new(false);
    let refused = AtomicBool::new(false);
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            team.run(|comm| {
                if comm.rank() == 0 {
                    started.store(true, Ordering::SeqCst);
                    while !refused.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                }
                comm.barrier()
            })
        });
        while !started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let second = team.run(|comm| comm.barrier());
        refused.store(true, Ordering::SeqCst);
        assert_eq!(second.unwrap_err(), Error::TeamBusy);
        let first = first.join().unwrap().unwrap();
        assert!(first.iter().all(Result::is_ok));
    });

    let ok = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..20 {
                    match team.run(|comm| comm.barrier()) {
                        Ok(v) => {
                            assert!(v.iter().all(Result::is_ok));
                            ok.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => assert_eq!(e, Error::TeamBusy),
                    }
                }
            });
        }
    });
    assert!(ok.load(Ordering::SeqCst) >= 1);
    clean_run(&team);
}

/// A failure that is not a panic: `run` returns `Ok` with each rank's own result, and the
/// team is reusable.
#[test]
fn errors_are_results_of_the_ranks_not_of_the_run() {
    let team = Team::new(3).unwrap();
    let out = team
        .run(|comm| -> Result<usize, Error> {
            if comm.rank() == 0 {
                comm.send(7, &[0u8])?;
            }
            comm.barrier()?;
            Ok(comm.rank())
        })
        .unwrap();
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(Result::is_err));
    clean_run(&team);
}

/// After the run has failed, later calls fail on every rank — also collectives on a
/// communicator of one rank, which need no messages.
#[test]
fn later_collectives_on_a_one_rank_comm_fail_after_abort() {
    let failed = AtomicBool::new(false);
    let out = corecoll::run(2, |comm| -> (Result<(), Error>, Result<bool, Error>) {
        let alone = comm.split(Some(comm.rank()), 0).unwrap().unwrap();
        if comm.rank() == 1 {
            let e = comm.send(5, &[0u8]);
            failed.store(true, Ordering::SeqCst);
            return (e, Ok(true));
        }
        while !failed.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        (
            alone.barrier(),
            alone.split(Some(0), 0).map(|c| c.is_some()),
        )
    })
    .unwrap();
    assert!(matches!(out[1].0, Err(Error::RankOutOfRange { .. })));
    let (barrier, split) = out[0].clone();
    assert!(
        matches!(barrier, Err(Error::Aborted { .. })),
        "barrier on a one-rank comm after the run failed: {barrier:?}"
    );
    assert!(
        matches!(split, Err(Error::Aborted { .. })),
        "split of a one-rank comm after the run failed: {split:?}"
    );
}

/// Element types of 64 KiB or more: a mismatch message still names them.
#[test]
fn mismatch_message_states_the_size_of_large_elements() {
    let out = corecoll::run(2, |comm| -> Result<(), Error> {
        if comm.rank() == 0 {
            comm.send(1, &vec![[1u8; 70_000]; 1])?;
            comm.barrier()
        } else {
            comm.recv(0, &mut vec![[0u16; 35_000]; 1]).map(drop)
        }
    })
    .unwrap();
    let e = out[1].clone().unwrap_err();
    assert!(matches!(e, Error::Mismatch { .. }), "{e}");
    assert_mentions(
        &e,
        &[
            "1 element of [u8; 70000]",
            "up to 1 element of [u16; 35000]",
        ],
    );
}

/// The length check counts elements, also of zero-sized types.
#[test]
fn zero_sized_element_counts_are_checked() {
    let out = corecoll::run(2, |comm| -> Result<(), Error> {
        if comm.rank() == 0 {
            comm.send(1, &[(); 5])?;
            comm.barrier()
        } else {
            comm.recv(0, &mut [(); 3]).map(drop)
        }
    })
    .unwrap();
    let e = out[1].clone().unwrap_err();
    assert!(
        matches!(
            e,
            Error::Mismatch {
                rank: 1,
                peer: 0,
                ..
            }
        ),
        "{e}"
    );
}

/// A timeout too large to add to the clock means no limit, not a panic in every wait.
#[test]
fn timeout_of_duration_max_means_no_limit() {
    let team = Team::builder()
        .ranks(2)
        .timeout(Duration::MAX)
        .build()
        .unwrap();
    let out = team
        .run(|comm| -> Result<(), Error> {
            if comm.rank() == 1 {
                return Ok(());
            }
            comm.recv(1, &mut [0u8]).map(drop)
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out[0],
        Err(Error::PeerExited {
            rank: 0,
            peer: 1,
            op: "recv"
        })
    );
}
