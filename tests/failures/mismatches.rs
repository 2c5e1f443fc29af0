//! Mismatches between ranks (lengths, element types, collective kinds, skipped barriers),
//! out-of-range ranks, messages to oneself that cannot complete, zero ranks and bad pinning.

use super::*;

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

/// Rank 1 makes another collective call where the others fold a short allreduce on slots
/// (`Linear`): the folding ranks see its call while they wait for its vector, and every rank
/// fails with a mismatch that names both calls, instead of waiting for ever.
#[test]
fn another_call_against_a_folded_allreduce() {
    type Other = fn(&Comm) -> Result<(), Error>;
    let others: [(&str, Other); 4] = [
        ("barrier (collective call 1", |c| c.barrier()),
        ("broadcast (collective call 1", |c| {
            c.broadcast(&mut [0u64; 4], 0)
        }),
        ("split (collective call 1", |c| {
            c.split(Some(0), 0).map(drop)
        }),
        ("allreduce (collective call 1", |c| {
            c.allreduce_with(
                &mut [0u64; 4],
                corecoll::op::Sum,
                corecoll::Algorithm::RecursiveDoubling,
            )
        }),
    ];
    for p in [2, 3, 6] {
        for (found, other) in others {
            let out = corecoll::run(p, |comm| -> Result<(), Error> {
                if comm.rank() == 1 {
                    other(comm)
                } else {
                    let mut v = [comm.rank() as u64; 4];
                    comm.allreduce_with(&mut v, corecoll::op::Sum, corecoll::Algorithm::Linear)
                }
            })
            .unwrap();
            for (r, res) in out.into_iter().enumerate() {
                let e = res.expect_err("the calls differ");
                let root = e.root_cause();
                assert!(
                    matches!(root, Error::Mismatch { .. }),
                    "p = {p}, rank {r}: {e}"
                );
                assert!(
                    root.to_string().contains(found),
                    "p = {p}, rank {r}: {root}"
                );
            }
        }
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
