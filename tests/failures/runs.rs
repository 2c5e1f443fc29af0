//! Runs of a team: nested and overlapping ones, errors as the ranks' results, and calls
//! after a run has failed.

use super::*;

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
