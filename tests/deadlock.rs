//! Deadlocks of the program's own making are found without a timeout: when every rank that has
//! not returned is blocked waiting for another, every one of them gets `Error::Deadlock`
//! naming the waits. And never otherwise: the rest of the suite runs with detection on, and
//! the cases here where a rank is merely slow must complete.

use corecoll::{op, Comm, Error, Peer, Result, Team, ANY_TAG};
use std::time::Duration;

/// Every rank's error, which must be a deadlock in `op`; returns the waits each names.
fn deadlocks(out: &[Result<()>], ranks: &[usize], want_op: &str) -> Vec<String> {
    ranks
        .iter()
        .map(|&r| match &out[r] {
            Err(Error::Deadlock { rank, op, waits }) => {
                assert_eq!(*rank, r);
                assert_eq!(*op, want_op, "rank {r}");
                let text = out[r].clone().unwrap_err().to_string();
                assert!(text.contains("can never complete"), "{text}");
                waits.clone()
            }
            other => panic!("rank {r}: expected a deadlock in {want_op}, got {other:?}"),
        })
        .collect()
}

#[test]
fn two_ranks_that_both_receive_first() {
    let out = corecoll::run(2, |comm| -> Result<()> {
        let other = 1 - comm.rank();
        let mut buf = [0u64; 4];
        comm.recv(other, &mut buf)?;
        comm.send(other, &buf)
    })
    .unwrap();
    for waits in deadlocks(&out, &[0, 1], "recv") {
        assert!(waits.contains("a cycle of waits"), "{waits}");
        assert!(
            waits.contains("team rank 0 waits in recv for team rank 1"),
            "{waits}"
        );
        assert!(
            waits.contains("team rank 1 waits in recv for team rank 0"),
            "{waits}"
        );
    }
}

/// Receives around a ring, every rank receiving first, and more ranks than cores.
#[test]
fn a_ring_of_receives() {
    for p in [3usize, 5, 8, 17] {
        let out = corecoll::run(p, |comm| -> Result<()> {
            let (r, p) = (comm.rank(), comm.size());
            let mut buf = [0u8; 1];
            comm.recv((r + p - 1) % p, &mut buf)?;
            comm.send((r + 1) % p, &buf)
        })
        .unwrap();
        let ranks: Vec<usize> = (0..p).collect();
        for waits in deadlocks(&out, &ranks, "recv") {
            // The whole ring is the cycle.
            assert_eq!(waits.matches("waits in recv").count(), p, "{waits}");
        }
    }
}

/// Two ranks both in a rendezvous send to the other: each waits for the other to read.
#[test]
fn two_large_sends_to_each_other() {
    let out = corecoll::run(2, |comm| -> Result<()> {
        let other = 1 - comm.rank();
        let big = vec![1u64; 100_000];
        comm.send(other, &big)?;
        comm.recv(other, &mut vec![0u64; 100_000]).map(drop)
    })
    .unwrap();
    deadlocks(&out, &[0, 1], "send");
}

/// A rank that returns without sending leaves the others stuck on each other: found once it
/// has returned (whether it returns before or after they block).
#[test]
fn a_rank_that_returned_early() {
    for delay in [0u64, 30] {
        let out = corecoll::run(3, |comm| -> Result<()> {
            if comm.rank() == 2 {
                std::thread::sleep(Duration::from_millis(delay));
                return Ok(());
            }
            let other = 1 - comm.rank();
            comm.recv(other, &mut [0u8]).map(drop)
        })
        .unwrap();
        assert_eq!(out[2], Ok(()));
        for waits in deadlocks(&out, &[0, 1], "recv") {
            assert!(!waits.contains("team rank 2 waits"), "{waits}");
        }
    }
}

/// One rank in a collective, the others in point-to-point that only it would satisfy.
#[test]
fn mixed_with_collectives() {
    // A barrier against receives.
    let out = corecoll::run(3, |comm| -> Result<()> {
        if comm.rank() == 0 {
            return comm.barrier();
        }
        comm.recv(0, &mut [0u8]).map(drop)
    })
    .unwrap();
    assert!(
        matches!(
            out[0],
            Err(Error::Deadlock {
                rank: 0,
                op: "barrier",
                ..
            })
        ),
        "{out:?}"
    );
    deadlocks(&out, &[1, 2], "recv");

    // A large allreduce (the single-copy one waits on the shared board) against receives.
    let out = corecoll::run(2, |comm| -> Result<()> {
        if comm.rank() == 0 {
            let mut v = vec![1.0f64; 1 << 16];
            return comm.allreduce(&mut v, op::Sum);
        }
        comm.recv(0, &mut [0u8]).map(drop)
    })
    .unwrap();
    assert!(
        matches!(out[0], Err(Error::Deadlock { rank: 0, .. })),
        "{out:?}"
    );
    deadlocks(&out, &[1], "recv");
}

/// Every rank receiving from any rank, nobody sending.
#[test]
fn everyone_receiving_from_any_rank() {
    let out = corecoll::run(4, |comm| -> Result<()> {
        comm.recv_tagged(Peer::Any, ANY_TAG, &mut [0u8]).map(drop)
    })
    .unwrap();
    deadlocks(&out, &[0, 1, 2, 3], "recv");
}

/// A sub-communicator's deadlock while the rest of the team has returned.
#[test]
fn on_a_sub_communicator() {
    let out = corecoll::run(4, |comm: &Comm| -> Result<()> {
        let sub = comm.split(Some(comm.rank() % 2), 0)?.expect("a color");
        if comm.rank() % 2 == 1 {
            return Ok(());
        }
        let other = 1 - sub.rank();
        sub.recv(other, &mut [0u8]).map(drop)
    })
    .unwrap();
    // Ranks in the error are the sub-communicator's; the waits name team ranks.
    for (team_rank, sub_rank) in [(0usize, 0usize), (2, 1)] {
        match &out[team_rank] {
            Err(Error::Deadlock { rank, waits, .. }) => {
                assert_eq!(*rank, sub_rank);
                assert!(
                    waits.contains("team rank 0 waits in recv for team rank 2"),
                    "{waits}"
                );
                assert!(
                    waits.contains("team rank 2 waits in recv for team rank 0"),
                    "{waits}"
                );
            }
            other => panic!("team rank {team_rank}: {other:?}"),
        }
    }
}

/// Slow ranks are not deadlocks: a receiver waits for a sender that computes first, rings
/// where one rank starts late, a barrier with a late rank.
#[test]
fn slow_ranks_are_not_deadlocks() {
    for p in [2usize, 3, 9] {
        let out = corecoll::run(p, |comm| -> Result<()> {
            let (r, p) = (comm.rank(), comm.size());
            if r == p - 1 {
                std::thread::sleep(Duration::from_millis(20));
            }
            let mut token = [0u64];
            if r == 0 {
                comm.send(1 % p, &[7u64])?;
                comm.recv(p - 1, &mut token)?;
            } else {
                comm.recv(r - 1, &mut token)?;
                comm.send((r + 1) % p, &token)?;
            }
            assert_eq!(token[0], 7);
            comm.barrier()
        })
        .unwrap();
        assert!(out.iter().all(Result::is_ok), "p = {p}: {out:?}");
    }
}

/// After a deadlock the team runs again normally.
#[test]
fn the_team_is_usable_after_a_deadlock() {
    let team = Team::new(2).unwrap();
    let out = team
        .run(|comm| comm.recv(1 - comm.rank(), &mut [0u8]).map(drop))
        .unwrap();
    assert!(
        out.iter().all(|r| matches!(r, Err(Error::Deadlock { .. }))),
        "{out:?}"
    );
    let out = team
        .run(|comm| comm.allreduce_value(comm.rank() as u64 + 1, op::Sum))
        .unwrap();
    assert_eq!(out, vec![Ok(3), Ok(3)]);
}
