//! Teams whose ranks are the program's threads (`TeamBuilder::external`, `Team::join`).
//!
//! **Same bits as an owned team**: at p = 1 … 17, threads of `std::thread::scope` each bound to
//! the core an owned team's rank gets (so that the hierarchy and `Auto` see the same places),
//! and unbound threads of a rayon pool against an owned team without pinning, run every
//! algorithm of every collective (float sums, whose bits show the order of the additions; a
//! non-commutative matrix product with `Auto`), a request, a persistent allreduce, a split, a
//! dup and point-to-point: every rank's results equal the owned team's bit for bit.
//!
//! **The door**: a panicking rank (every rank's join fails with the panic, the team is reused),
//! an early return (the others' calls fail, the joins succeed), a rank that never joins (a
//! timeout everywhere, then a full run), a second join of a rank (an error for that thread,
//! the run goes on), a rank out of range, `join` on an owned team and `run` on an external
//! one, pinning for the length of a join, many runs in a row; a clean run's communicators
//! handed to the next run (a message sent in one is received in the next) and a failed run's
//! not; a seat taken and left in two calls, and one dropped by a panic; a leave that does not
//! wait for the other ranks, and a rank that joins again before its run has ended, which waits
//! for that end and joins the next run (loops of seat, allreduce, leave with nothing between).

mod common;

use common::{available_cores, float, matrix, matrix_op};
use corecoll::algorithm::Any;
use corecoll::{op, Algorithm, Comm, Error, Pinning, Result, Team};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// Every collective with every algorithm, and the rest of the API, on `comm`: the bits of
/// every result, in call order.
fn every(comm: &Comm) -> Result<Vec<Vec<u64>>> {
    let (p, r) = (comm.size(), comm.rank());
    let mut out = Vec::new();
    for n in [0, 1, p + 1, 300] {
        let f: Vec<f64> = (0..n).map(|i| float(r, i, n as u64)).collect();
        let fp: Vec<f64> = (0..n * p).map(|i| float(r, i, 5)).collect();
        let root = (n + p - 1) % p;
        for alg in Any::all() {
            let mut x = f.clone();
            let mut y = vec![0.0; n * p];
            let mut z = vec![0.0; n];
            match alg {
                Any::Allreduce(a) => comm.allreduce_with(&mut x, op::Sum, a)?,
                Any::Broadcast(a) => comm.broadcast_with(&mut x, root, a)?,
                Any::Reduce(a) => comm.reduce_with(&mut x, op::Sum, root, a)?,
                Any::Scan(a) => comm.scan_with(&mut x, op::Sum, a)?,
                Any::Gather(a) => comm.gather_with(&f, &mut y, root, a)?,
                Any::Scatter(a) => comm.scatter_with(&fp, &mut z, root, a)?,
                Any::Allgather(a) => comm.allgather_with(&f, &mut y, a)?,
                Any::Alltoall(a) => comm.alltoall_with(&fp, &mut y, a)?,
                Any::ReduceScatter(a) => comm.reduce_scatter_block_with(&fp, &mut z, op::Sum, a)?,
                Any::Barrier(a) => comm.barrier_with(a)?,
                other => panic!("{other}: a collective this test does not call"),
            }
            out.extend([bits(&x), bits(&y), bits(&z)]);
        }
        let mut m: Vec<[u32; 4]> = (0..n).map(|i| matrix(r, i)).collect();
        comm.allreduce_with(&mut m, matrix_op(), Algorithm::Auto)?;
        out.push(m.iter().flatten().map(|&w| u64::from(w)).collect());
        let mut m: Vec<[u32; 4]> = (0..n).map(|i| matrix(r, i)).collect();
        comm.exscan(&mut m, matrix_op())?;
        out.push(m.iter().flatten().map(|&w| u64::from(w)).collect());
        // A request and a persistent allreduce.
        let mut x = f.clone();
        comm.scope(|s| s.iallreduce(&mut x, op::Sum)?.wait())?;
        out.push(bits(&x));
        let mut x = f.clone();
        comm.scope(|s| -> Result<()> {
            let mut ar = s.allreduce_init(&mut x, op::Sum)?;
            for _ in 0..3 {
                ar.start()?;
                ar.wait()?;
            }
            Ok(())
        })?;
        out.push(bits(&x));
    }
    // A split by parity, reversed within each half, and a dup.
    let half = comm.split(Some(r % 2), p - r)?.expect("a color");
    let mut x = vec![float(r, 0, 9); 5];
    half.allreduce(&mut x, op::Sum)?;
    half.broadcast(&mut x, half.size() - 1)?;
    out.push(bits(&x));
    let dup = comm.dup()?;
    let mut x = [r as f64];
    dup.allreduce(&mut x, op::Max)?;
    out.push(bits(&x));
    // Point-to-point round a ring.
    let mut got = [0.0f64; 3];
    let send = [float(r, 1, 1); 3];
    comm.sendrecv((r + 1) % p, &send, (r + p - 1) % p, &mut got)?;
    out.push(bits(&got));
    Ok(out)
}

/// A team of `p` ranks whose waits time out after `secs` seconds.
fn builder(p: usize, secs: u64) -> corecoll::TeamBuilder {
    Team::builder().ranks(p).timeout(Duration::from_secs(secs))
}

/// Runs `f` on every rank of `team`, each joined from a thread of its own (bound to `bind(r)`
/// if that names a core), and returns the joins' results by rank.
fn join_all<R: Send>(
    team: &Team,
    bind: impl Fn(usize) -> Option<usize> + Sync,
    f: impl Fn(&Comm) -> R + Sync,
) -> Vec<Result<R>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..team.size())
            .map(|rank| {
                let (f, bind) = (&f, &bind);
                s.spawn(move || {
                    if let Some(core) = bind(rank) {
                        core_affinity::set_for_current(core_affinity::CoreId { id: core });
                    }
                    team.join(rank, f)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn joined_threads_give_the_owned_teams_bits() {
    let cores = available_cores();
    for p in 1..=17 {
        let owned = builder(p, 60).build().unwrap();
        let want = owned.run(every).unwrap();
        let team = builder(p, 60).external().build().unwrap();
        // Each thread bound where the owned team pins its rank (`Pinning::Compact` on the
        // cores this process may use).
        let got = join_all(&team, |r| cores.get(r % cores.len().max(1)).copied(), every);
        for (r, (w, g)) in want.into_iter().zip(got).enumerate() {
            let w = w.unwrap_or_else(|e| panic!("owned team, p = {p}, rank {r}: {e}"));
            let g = g
                .unwrap()
                .unwrap_or_else(|e| panic!("joined team, p = {p}, rank {r}: {e}"));
            assert!(
                w == g,
                "p = {p}, rank {r}: the joined team's results differ"
            );
        }
    }
}

#[test]
fn a_rayon_pool_joins() {
    for p in [1, 2, 3, 5, 8] {
        let owned = builder(p, 60).pinning(Pinning::None).build().unwrap();
        let want = owned.run(every).unwrap();
        let team = builder(p, 60).external().build().unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(p)
            .build()
            .unwrap();
        for _ in 0..2 {
            let got = pool.broadcast(|ctx| team.join(ctx.index(), every));
            for (r, (w, g)) in want.iter().zip(got).enumerate() {
                let g = g.unwrap().unwrap();
                assert!(w.as_ref().unwrap() == &g, "p = {p}, rank {r}");
            }
        }
    }
}

#[test]
fn many_runs_in_a_row() {
    let team = builder(3, 30).external().build().unwrap();
    for run in 0..200 {
        let out = join_all(
            &team,
            |_| None,
            |comm| {
                let mut x = [comm.rank() as u64 + run];
                comm.allreduce(&mut x, op::Sum).map(|()| x[0])
            },
        );
        for o in out {
            assert_eq!(o.unwrap().unwrap(), 3 + 3 * run);
        }
    }
}

#[test]
fn a_panicking_rank_fails_every_join_and_the_team_is_reused() {
    let team = builder(4, 30).external().build().unwrap();
    let out = join_all(
        &team,
        |_| None,
        |comm| {
            if comm.rank() == 2 {
                panic!("intentional panic of rank 2");
            }
            let mut x = [1.0];
            comm.allreduce(&mut x, op::Sum)
        },
    );
    for (r, o) in out.into_iter().enumerate() {
        match o {
            Err(Error::Panicked { rank: 2, message }) => assert!(message.contains("intentional")),
            other => panic!("rank {r}: {other:?}"),
        }
    }
    let out = join_all(&team, |_| None, |comm| comm.size());
    assert!(out.into_iter().all(|o| o.unwrap() == 4));
}

#[test]
fn an_early_return_fails_the_others_calls_not_the_joins() {
    let team = builder(3, 30).external().build().unwrap();
    let out = join_all(
        &team,
        |_| None,
        |comm| {
            if comm.rank() == 1 {
                return Ok(());
            }
            comm.barrier()
        },
    );
    assert!(out[1].as_ref().unwrap().is_ok());
    for r in [0, 2] {
        assert!(out[r].as_ref().unwrap().is_err(), "rank {r}: {:?}", out[r]);
    }
}

#[test]
fn a_rank_that_never_joins_is_a_timeout() {
    let team = builder(3, 0)
        .timeout(Duration::from_millis(300))
        .external()
        .build()
        .unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|rank| {
                let team = &team;
                s.spawn(move || {
                    team.join(rank, |comm| {
                        let mut x = [1u64];
                        comm.allreduce(&mut x, op::Sum)
                    })
                })
            })
            .collect();
        for h in handles {
            match h.join().unwrap() {
                Err(Error::Timeout { peer: 2, .. }) => {}
                other => panic!("{other:?}"),
            }
        }
    });
    // All three now: a fresh run.
    let out = join_all(
        &team,
        |_| None,
        |comm| {
            let mut x = [1u64];
            comm.allreduce(&mut x, op::Sum).map(|()| x[0])
        },
    );
    assert!(out.into_iter().all(|o| o.unwrap().unwrap() == 3));
}

#[test]
fn a_second_join_of_a_rank_is_an_error_and_the_run_goes_on() {
    let team = builder(2, 30).external().build().unwrap();
    let entered = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            team.join(0, |comm| {
                entered.fetch_add(1, Ordering::SeqCst);
                let mut x = [1u64];
                comm.allreduce(&mut x, op::Sum).map(|()| x[0])
            })
        });
        while entered.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let second = s.spawn(|| team.join(0, |_| unreachable!("a second rank 0 runs")));
        match second.join().unwrap() {
            Err(Error::Join { rank: 0, what }) => assert!(what.contains("already joined")),
            other => panic!("{:?}", other.map(|_: ()| ())),
        }
        let last = s.spawn(|| {
            team.join(1, |comm| {
                let mut x = [2u64];
                comm.allreduce(&mut x, op::Sum).map(|()| x[0])
            })
        });
        assert_eq!(last.join().unwrap().unwrap().unwrap(), 3);
        assert_eq!(first.join().unwrap().unwrap().unwrap(), 3);
    });
}

#[test]
fn wrong_doors_are_errors() {
    let team = builder(2, 30).external().build().unwrap();
    assert!(matches!(
        team.join(2, |_| ()),
        Err(Error::Join { rank: 2, .. })
    ));
    assert!(matches!(team.run(|_| ()), Err(Error::Join { .. })));
    let owned = builder(2, 30).build().unwrap();
    assert!(matches!(owned.join(0, |_| ()), Err(Error::Join { .. })));
}

#[test]
fn pinning_lasts_for_the_join_and_a_bound_thread_has_its_location() {
    let cores = available_cores();
    let n = cores.len();
    let team = builder(2, 30)
        .external()
        .pinning(Pinning::Compact)
        .build()
        .unwrap();
    let out = join_all(
        &team,
        |_| None,
        |comm| {
            let inside = available_cores();
            (comm.location(comm.rank()).map(|l| l.os_index), inside)
        },
    );
    for (r, o) in out.into_iter().enumerate() {
        let (loc, inside) = o.unwrap();
        assert_eq!(loc, Some(team.cores()[r].unwrap()), "rank {r}");
        assert_eq!(inside.len(), 1, "rank {r} is pinned inside the join");
    }
    // Joined again from the test's own thread, which gets its mask back.
    let before = available_cores();
    let unpinned = builder(1, 30)
        .external()
        .pinning(Pinning::Compact)
        .build()
        .unwrap();
    unpinned.join(0, |_| ()).unwrap();
    assert_eq!(available_cores(), before);
    // Unpinned by the team, a thread the program bound to one core has that core's location;
    // an unbound one has none.
    let team = builder(2, 30).external().build().unwrap();
    let out = join_all(
        &team,
        |r| (r == 1).then(|| cores[n - 1]),
        |comm| {
            (0..2)
                .map(|q| comm.location(q).map(|l| l.os_index))
                .collect::<Vec<_>>()
        },
    );
    for o in out {
        assert_eq!(o.unwrap(), vec![None, Some(cores[n - 1])]);
    }
}

#[test]
fn a_seat_is_a_join_in_two_calls() {
    let team = builder(3, 30).external().build().unwrap();
    for run in 0..20u64 {
        let out: Vec<Result<u64>> = std::thread::scope(|s| {
            let seats: Vec<_> = (0..3)
                .map(|rank| {
                    let team = &team;
                    s.spawn(move || {
                        let seat = team.seat(rank)?;
                        let mut x = [rank as u64 + run];
                        seat.allreduce(&mut x, op::Sum)?;
                        // Rank 2 leaves by dropping its seat.
                        if rank != 2 {
                            seat.leave()?;
                        }
                        Ok(x[0])
                    })
                })
                .collect();
            seats.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for o in out {
            assert_eq!(o.unwrap(), 3 + 3 * run);
        }
    }
    // A panic that unwinds through a seat fails every other rank's leave.
    let out: Vec<Result<()>> = std::thread::scope(|s| {
        let seats: Vec<_> = (0..3)
            .map(|rank| {
                let team = &team;
                s.spawn(move || {
                    let seat = team.seat(rank)?;
                    if rank == 1 {
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            let _seat = seat;
                            panic!("intentional panic through a seat");
                        }));
                        return Ok(());
                    }
                    let _ = seat.barrier();
                    seat.leave()
                })
            })
            .collect();
        seats.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(out[1].is_ok());
    for r in [0, 2] {
        assert!(
            matches!(out[r], Err(Error::Panicked { rank: 1, .. })),
            "{:?}",
            out[r]
        );
    }
}

#[test]
fn a_leave_does_not_wait_and_a_rank_that_joins_again_waits_for_the_run_to_end() {
    let team = builder(2, 60).external().build().unwrap();
    // Rank 0 leaves a run that rank 1 has not joined yet.
    team.seat(0).unwrap().leave().unwrap();
    std::thread::scope(|s| {
        let again = s.spawn(|| {
            let seat = team.seat(0)?;
            let mut x = [1u64];
            seat.allreduce(&mut x, op::Sum)?;
            seat.leave()?;
            Ok::<_, Error>(x[0])
        });
        // Rank 0's second seat is in the next run, which cannot begin before rank 1 has
        // joined and left the first.
        std::thread::sleep(Duration::from_millis(50));
        assert!(!again.is_finished());
        team.seat(1).unwrap().leave().unwrap();
        let seat = team.seat(1).unwrap();
        let mut x = [2u64];
        seat.allreduce(&mut x, op::Sum).unwrap();
        seat.leave().unwrap();
        assert_eq!(x[0], 3);
        assert_eq!(again.join().unwrap().unwrap(), 3);
    });
    // Seat, allreduce, leave, again at once (and, every third run, a join, which waits for
    // the run's end), more ranks than cores included: every run's sum is its own.
    for p in [2, 3, 5, 9] {
        let team = builder(p, 60).external().build().unwrap();
        std::thread::scope(|s| {
            for rank in 0..p {
                let team = &team;
                s.spawn(move || {
                    for run in 0..200u64 {
                        let sum = |comm: &Comm| {
                            let mut x = [rank as u64 + run];
                            comm.allreduce(&mut x, op::Sum).map(|()| x[0])
                        };
                        let got = if run % 3 == 2 {
                            team.join(rank, sum).unwrap().unwrap()
                        } else {
                            let seat = team.seat(rank).unwrap();
                            let got = sum(&seat).unwrap();
                            seat.leave().unwrap();
                            got
                        };
                        let p = p as u64;
                        assert_eq!(got, p * (p - 1) / 2 + p * run, "run {run}");
                    }
                });
            }
        });
    }
}

#[test]
fn a_clean_run_hands_its_communicators_on_and_a_failed_one_does_not() {
    let team = builder(2, 30).external().build().unwrap();
    // A message sent and not received in a clean run is there in the next.
    join_all(
        &team,
        |_| None,
        |comm| {
            if comm.rank() == 0 {
                comm.send(1, &[7u32]).unwrap();
            }
        },
    );
    let out = join_all(
        &team,
        |_| None,
        |comm| {
            let mut got = [0u32];
            (comm.rank() == 1).then(|| comm.recv(0, &mut got).map(|_| got[0]))
        },
    );
    assert_eq!(
        out[1].as_ref().unwrap().as_ref().unwrap().as_ref().unwrap(),
        &7
    );
    // After a failed run, the next starts afresh: nothing of the failed run's is left.
    let failed = join_all(
        &team,
        |_| None,
        |comm| {
            if comm.rank() == 0 {
                comm.send(1, &[8u32]).unwrap();
            } else {
                panic!("intentional panic after a send to this rank");
            }
        },
    );
    assert!(failed.iter().all(Result::is_err));
    let out = join_all(
        &team,
        |_| None,
        |comm| {
            comm.barrier()?;
            comm.iprobe::<u32>(0, corecoll::ANY_TAG)
        },
    );
    assert!(out[1].as_ref().unwrap().as_ref().unwrap().is_none());
    // And clean runs carry on from there.
    let out = join_all(
        &team,
        |_| None,
        |comm| comm.allreduce_value(comm.rank() as u64 + 1, op::Sum),
    );
    assert!(out.into_iter().all(|o| o.unwrap().unwrap() == 3));
}
