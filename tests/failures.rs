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

#[path = "failures/mismatches.rs"]
mod mismatches;
#[path = "failures/runs.rs"]
mod runs;
