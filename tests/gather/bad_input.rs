//! Bad input to the gathers: roots out of range, wrong buffer lengths, disagreements
//! between ranks (also of the direct forms), a panicking rank and bad input to the v forms.

use super::*;

#[test]
fn root_out_of_range_fails_on_every_rank() {
    for p in [1, 2, 5] {
        let team = team(p);
        for root in [p, p + 7] {
            for alg in GATHERS {
                check_fails(
                    &team,
                    &format!("gather {alg:?} root {root}"),
                    &|comm| {
                        let mut recv = vec![0u64; 3 * p];
                        comm.gather_with(&[1, 2, 3], &mut recv, root, alg)
                    },
                    out_of_range,
                );
            }
            for alg in SCATTERS {
                check_fails(
                    &team,
                    &format!("scatter {alg:?} root {root}"),
                    &|comm| comm.scatter_with(&vec![1u64; 3 * p], &mut [0; 3], root, alg),
                    out_of_range,
                );
            }
        }
    }
}

#[test]
fn wrong_buffer_lengths_fail_on_every_rank() {
    for p in [1, 2, 3, 6] {
        let team = team(p);
        for n in [0usize, 1, 7] {
            for extra in [-1isize, 1, 5] {
                let Some(bad) = (p * n).checked_add_signed(extra) else {
                    continue;
                };
                for root in [0, p - 1] {
                    for alg in GATHERS {
                        check_fails(
                            &team,
                            &format!("gather {alg:?}, recv of {bad} at root {root}, n = {n}"),
                            &|comm| {
                                let send = vec![1u64; n];
                                let mut recv =
                                    vec![0u64; if comm.rank() == root { bad } else { 0 }];
                                let r = comm.gather_with(&send, &mut recv, root, alg);
                                assert!(recv.iter().all(|&x| x == 0));
                                r
                            },
                            invalid,
                        );
                    }
                    for alg in SCATTERS {
                        check_fails(
                            &team,
                            &format!("scatter {alg:?}, send of {bad} at root {root}, n = {n}"),
                            &|comm| {
                                let send = vec![1u64; if comm.rank() == root { bad } else { 0 }];
                                let mut recv = vec![0u64; n];
                                let r = comm.scatter_with(&send, &mut recv, root, alg);
                                assert!(recv.iter().all(|&x| x == 0));
                                r
                            },
                            invalid,
                        );
                    }
                }
                for alg in ALLGATHERS {
                    for odd in [0, p - 1] {
                        check_fails(
                            &team,
                            &format!("allgather {alg:?}, recv of {bad} on rank {odd}, n = {n}"),
                            &|comm| {
                                let send = vec![1u64; n];
                                let len = if comm.rank() == odd { bad } else { p * n };
                                comm.allgather_with(&send, &mut vec![0u64; len], alg)
                            },
                            invalid,
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn disagreements_fail_on_every_rank() {
    for p in [2, 3, 6] {
        let team = team(p);
        // Roots: the last rank names another root than the others; every rank itself.
        for alg in GATHERS {
            check_fails(
                &team,
                &format!("gather {alg:?}, different roots"),
                &|comm| {
                    let root = usize::from(comm.rank() == p - 1);
                    comm.gather_with(&[1u64; 4], &mut vec![0; 4 * p], root, alg)
                },
                mismatch,
            );
            check_fails(
                &team,
                &format!("gather {alg:?}, every rank its own root"),
                &|comm| comm.gather_with(&[1u64; 4], &mut vec![0; 4 * p], comm.rank(), alg),
                mismatch,
            );
        }
        for alg in SCATTERS {
            check_fails(
                &team,
                &format!("scatter {alg:?}, different roots"),
                &|comm| {
                    let root = usize::from(comm.rank() == p - 1);
                    comm.scatter_with(&vec![1u64; 4 * p], &mut [0; 4], root, alg)
                },
                mismatch,
            );
        }
        // Block lengths: one rank (the root or not) passes another, with buffers to match.
        for (n, m) in [(0usize, 1usize), (1000, 999), (5, 0), (LONG, 8)] {
            for odd in [0, p - 1] {
                let len = |r: usize| if r == odd { m } else { n };
                for alg in GATHERS {
                    check_fails(
                        &team,
                        &format!("gather {alg:?}, block {m} on rank {odd}, {n} elsewhere"),
                        &|comm| {
                            let k = len(comm.rank());
                            comm.gather_with(&vec![1u64; k], &mut vec![0; k * p], 0, alg)
                        },
                        mismatch,
                    );
                }
                for alg in SCATTERS {
                    check_fails(
                        &team,
                        &format!("scatter {alg:?}, block {m} on rank {odd}, {n} elsewhere"),
                        &|comm| {
                            let k = len(comm.rank());
                            comm.scatter_with(&vec![1u64; k * p], &mut vec![0; k], 0, alg)
                        },
                        mismatch,
                    );
                }
                for alg in ALLGATHERS {
                    check_fails(
                        &team,
                        &format!("allgather {alg:?}, block {m} on rank {odd}, {n} elsewhere"),
                        &|comm| {
                            let k = len(comm.rank());
                            comm.allgather_with(&vec![1u64; k], &mut vec![0; k * p], alg)
                        },
                        mismatch,
                    );
                }
            }
        }
        // Algorithms: rank 0 chooses another one.
        check_fails(
            &team,
            "gather, different algorithms",
            &|comm| {
                let alg = [Gather::Binomial, Gather::Linear][usize::from(comm.rank() == 0)];
                comm.gather_with(&[1u64; 4], &mut vec![0; 4 * p], p - 1, alg)
            },
            mismatch,
        );
        check_fails(
            &team,
            "scatter, different algorithms",
            &|comm| {
                let alg = [Scatter::Binomial, Scatter::Linear][usize::from(comm.rank() == 0)];
                comm.scatter_with(&vec![1u64; 4 * p], &mut [0; 4], p - 1, alg)
            },
            mismatch,
        );
        // `Auto` may resolve to Direct (it depends on p, size and the team's tables), so only
        // explicit choices are sure to differ.
        let differs = |a: Allgather| a != Allgather::Direct && a != Allgather::Auto;
        for other in ALLGATHERS.into_iter().filter(|&a| differs(a)) {
            check_fails(
                &team,
                &format!("allgather, {other:?} on rank 0, Direct elsewhere"),
                &|comm| {
                    let alg = if comm.rank() == 0 {
                        other
                    } else {
                        Allgather::Direct
                    };
                    comm.allgather_with(&[1u64; 4], &mut vec![0; 4 * p], alg)
                },
                mismatch,
            );
        }
    }
}

/// `Direct` against the other explicit choices and against another element type on one rank:
/// a mismatch on every rank, and the root's receive buffer (gather) or every receive buffer
/// (scatter) untouched.
#[test]
fn direct_disagreements_fail_on_every_rank() {
    for p in [2, 3, 6] {
        let team = team(p);
        for odd in [0, p - 1] {
            for root in [0, p - 1] {
                for other in [Gather::Linear, Gather::Binomial] {
                    check_fails(
                        &team,
                        &format!("gather to {root}, {other:?} on rank {odd}, Direct elsewhere"),
                        &|comm| {
                            let alg = if comm.rank() == odd {
                                other
                            } else {
                                Gather::Direct
                            };
                            let mut recv = vec![0u64; 4 * p];
                            let r = comm.gather_with(&[1u64; 4], &mut recv, root, alg);
                            assert!(recv.iter().all(|&x| x == 0));
                            r
                        },
                        mismatch,
                    );
                }
                for other in [Scatter::Linear, Scatter::Binomial] {
                    check_fails(
                        &team,
                        &format!("scatter from {root}, {other:?} on rank {odd}, Direct elsewhere"),
                        &|comm| {
                            let alg = if comm.rank() == odd {
                                other
                            } else {
                                Scatter::Direct
                            };
                            let mut recv = [0u64; 4];
                            let r = comm.scatter_with(&vec![1u64; 4 * p], &mut recv, root, alg);
                            assert!(recv.iter().all(|&x| x == 0));
                            r
                        },
                        mismatch,
                    );
                }
                // The same size, another type: the type fingerprint differs.
                check_fails(
                    &team,
                    &format!("gather Direct to {root}, f32 on rank {odd}, u32 elsewhere"),
                    &|comm| {
                        if comm.rank() == odd {
                            comm.gather_with(
                                &[1f32; 4],
                                &mut vec![0f32; 4 * p],
                                root,
                                Gather::Direct,
                            )
                        } else {
                            let mut recv = vec![0u32; 4 * p];
                            let r = comm.gather_with(&[1u32; 4], &mut recv, root, Gather::Direct);
                            assert!(recv.iter().all(|&x| x == 0));
                            r
                        }
                    },
                    mismatch,
                );
                check_fails(
                    &team,
                    &format!("scatter Direct from {root}, f32 on rank {odd}, u32 elsewhere"),
                    &|comm| {
                        if comm.rank() == odd {
                            let send = vec![1f32; 4 * p];
                            comm.scatter_with(&send, &mut [0f32; 4], root, Scatter::Direct)
                        } else {
                            let mut recv = [0u32; 4];
                            let send = vec![1u32; 4 * p];
                            let r = comm.scatter_with(&send, &mut recv, root, Scatter::Direct);
                            assert!(recv.iter().all(|&x| x == 0));
                            r
                        }
                    },
                    mismatch,
                );
            }
        }
    }
}

/// A rank that panics instead of joining a direct gather or scatter: every other rank
/// returns an error caused by the panic, without a hang, and the team's next direct calls
/// succeed.
#[test]
fn a_panicking_rank_fails_the_direct_forms_on_every_rank() {
    for p in [2, 3, 6] {
        let team = team(p);
        for odd in [0, p - 1] {
            for gather in [true, false] {
                let what = format!(
                    "{} Direct, rank {odd} panics, p = {p}",
                    if gather { "gather" } else { "scatter" }
                );
                let log = Mutex::new(Vec::new());
                let res = team.run(|comm| {
                    let me = comm.rank();
                    if me == odd {
                        panic!("rank {me} gives up");
                    }
                    let r = if gather {
                        comm.gather_with(&[1u64; 4], &mut vec![0; 4 * p], 0, Gather::Direct)
                    } else {
                        comm.scatter_with(&vec![1u64; 4 * p], &mut [0; 4], 0, Scatter::Direct)
                    };
                    log.lock().unwrap().push((me, r));
                });
                let panicked =
                    |e: &Error| matches!(e, Error::Panicked { rank, .. } if *rank == odd);
                match res {
                    Err(e) => assert!(panicked(&e), "{what}: {e}"),
                    Ok(_) => panic!("{what}: the run succeeded"),
                }
                let log = log.into_inner().unwrap();
                assert_eq!(log.len(), p - 1, "{what}: {log:?}");
                for (r, res) in log {
                    let e = res.expect_err(&format!("{what}, rank {r}: no error"));
                    assert!(panicked(e.root_cause()), "{what}, rank {r}: {e}");
                }
            }
        }
        // The board is usable again.
        let out = team
            .run(|comm| sweep::<u64>(comm, &[p - 1], &[3]))
            .unwrap_or_else(|e| panic!("p = {p}, after the panics: {e}"));
        for res in out {
            res.unwrap_or_else(|e| panic!("p = {p}, after the panics: {e}"));
        }
    }
}

#[test]
fn bad_v_input_fails_on_every_rank() {
    for p in [1, 2, 3, 6] {
        let team = team(p);
        let good = place((0..p).map(|i| i + 1).collect(), 0..p, 1);
        // Layouts that are wrong wherever they are significant, and what makes them wrong.
        let bad = bad_layouts(&good);
        for (name, l) in &bad {
            // The rank whose block length the layout sets: every rank passes a send (recv) of
            // the good layout's length, which the bad layout's own count may not be; the
            // layout error is reported first either way.
            for root in [0, p - 1] {
                check_fails(
                    &team,
                    &format!("gatherv, {name}, root {root}"),
                    &|comm| {
                        let send = vec![1u64; good.counts[comm.rank()]];
                        let mut recv = vec![0u64; l.len];
                        comm.gatherv(&send, &mut recv, &l.counts, &l.displs, root)
                    },
                    invalid,
                );
                if !name.contains("overlapping") {
                    check_fails(
                        &team,
                        &format!("scatterv, {name}, root {root}"),
                        &|comm| {
                            let mut recv = vec![0u64; good.counts[comm.rank()]];
                            comm.scatterv(&vec![1u64; l.len], &l.counts, &l.displs, &mut recv, root)
                        },
                        invalid,
                    );
                }
            }
            for odd in [0, p - 1] {
                check_fails(
                    &team,
                    &format!("allgatherv, {name} on rank {odd}"),
                    &|comm| {
                        let l = if comm.rank() == odd { l } else { &good };
                        let send = vec![1u64; good.counts[comm.rank()]];
                        comm.allgatherv(&send, &mut vec![0u64; l.len], &l.counts, &l.displs)
                    },
                    invalid,
                );
            }
        }
        // A rank whose own block length is not its count: at the root, a local error; at
        // another rank, a length mismatch found by the root (gatherv, scatterv) or by its
        // neighbour (allgatherv).
        for odd in [0, p - 1] {
            let expect = |root: usize| if odd == root { invalid } else { mismatch };
            for root in [0, p - 1] {
                check_fails(
                    &team,
                    &format!("gatherv, send of rank {odd} one long, root {root}"),
                    &|comm| {
                        let me = comm.rank();
                        let send = vec![1u64; good.counts[me] + usize::from(me == odd)];
                        let mut recv = vec![0u64; good.len];
                        comm.gatherv(&send, &mut recv, &good.counts, &good.displs, root)
                    },
                    expect(root),
                );
                check_fails(
                    &team,
                    &format!("scatterv, recv of rank {odd} one short, root {root}"),
                    &|comm| {
                        let me = comm.rank();
                        let mut recv = vec![0u64; good.counts[me] - usize::from(me == odd)];
                        comm.scatterv(
                            &vec![1u64; good.len],
                            &good.counts,
                            &good.displs,
                            &mut recv,
                            root,
                        )
                    },
                    expect(root),
                );
            }
            check_fails(
                &team,
                &format!("allgatherv, send of rank {odd} one long"),
                &|comm| {
                    let me = comm.rank();
                    let send = vec![1u64; good.counts[me] + usize::from(me == odd)];
                    comm.allgatherv(&send, &mut vec![0u64; good.len], &good.counts, &good.displs)
                },
                invalid,
            );
            if p > 1 {
                // Rank `odd` expects one element more of another rank, in a longer buffer.
                let other = (odd + 1) % p;
                let mut l = good.clone();
                l.counts[other] += 1;
                l.len += 1;
                for i in 0..p {
                    if l.displs[i] > l.displs[other] {
                        l.displs[i] += 1;
                    }
                }
                check_fails(
                    &team,
                    &format!("allgatherv, rank {odd} with another count for rank {other}"),
                    &|comm| {
                        let me = comm.rank();
                        let l = if me == odd { &l } else { &good };
                        let send = vec![1u64; good.counts[me]];
                        comm.allgatherv(&send, &mut vec![0u64; l.len], &l.counts, &l.displs)
                    },
                    mismatch,
                );
            }
        }
        // Roots.
        for root in [p, p + 7] {
            check_fails(
                &team,
                &format!("gatherv at root {root}"),
                &|comm| comm.gatherv(&[1u64], &mut [], &[], &[], root),
                out_of_range,
            );
            check_fails(
                &team,
                &format!("scatterv at root {root}"),
                &|comm| comm.scatterv(&[], &[], &[], &mut [0u64], root),
                out_of_range,
            );
        }
        if p > 1 {
            let ones = place(vec![1; p], 0..p, 0);
            check_fails(
                &team,
                "gatherv, different roots",
                &|comm| {
                    let root = usize::from(comm.rank() == p - 1);
                    comm.gatherv(&[1u64], &mut vec![0; p], &ones.counts, &ones.displs, root)
                },
                mismatch,
            );
            check_fails(
                &team,
                "scatterv, different roots",
                &|comm| {
                    let root = usize::from(comm.rank() == p - 1);
                    comm.scatterv(&vec![1u64; p], &ones.counts, &ones.displs, &mut [0], root)
                },
                mismatch,
            );
            check_fails(
                &team,
                "gather against gatherv",
                &|comm| {
                    let mut recv = vec![0u64; p];
                    if comm.rank() == p - 1 {
                        comm.gatherv(&[1u64], &mut recv, &ones.counts, &ones.displs, 0)
                    } else {
                        comm.gather_with(&[1u64], &mut recv, 0, Gather::Linear)
                    }
                },
                mismatch,
            );
        }
    }
}
