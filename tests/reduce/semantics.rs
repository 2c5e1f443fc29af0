//! Bad input and disagreements between ranks, calls in a row, the pipelined tree's blocks at
//! every root, determinism and failing ops.

use super::*;

#[test]
fn root_out_of_range_fails_everywhere() {
    for p in [1, 2, 5] {
        let team = team(p);
        for alg in ALGORITHMS {
            // On every rank.
            let out = team
                .run(|comm| {
                    let mut v = vec![comm.rank() as u64; 10];
                    comm.reduce_with(&mut v, op::Sum, p, alg)
                })
                .unwrap();
            all_failed(out, &format!("{alg:?}, p = {p}, root p"), |e| {
                matches!(e, Error::RankOutOfRange { .. })
            });
            // On one rank only.
            let out = team
                .run(|comm| {
                    let root = if comm.rank() == p - 1 { p + 3 } else { 0 };
                    let mut v = vec![comm.rank() as u64; 10];
                    comm.reduce_with(&mut v, op::Sum, root, alg)
                })
                .unwrap();
            all_failed(out, &format!("{alg:?}, p = {p}, one bad root"), |e| {
                matches!(e, Error::RankOutOfRange { .. })
            });
        }
    }
}

#[test]
fn different_roots_fail_everywhere() {
    for p in [2, 3, 5] {
        let team = team(p);
        for alg in ALGORITHMS {
            for (a, b) in [(0, 1), (p - 1, 0), (1, p - 1)] {
                if a == b {
                    continue;
                }
                let out = team
                    .run(|comm| {
                        let root = if comm.rank() == 1 { b } else { a };
                        let mut v = vec![comm.rank() as u64; 100];
                        comm.reduce_with(&mut v, op::Sum, root, alg)
                    })
                    .unwrap();
                all_failed(out, &format!("{alg:?}, p = {p}, roots {a}/{b}"), mismatch);
            }
        }
    }
}

#[test]
fn different_lengths_fail_everywhere() {
    for p in [2, 3, 5, 17] {
        let team = team(p);
        for alg in ALGORITHMS {
            for (n, m) in [(0, 1), (1, 0), (7, 8), (300, 299), (20_000, 0)] {
                for odd in [0, p - 1, p / 2] {
                    let out = team
                        .run(|comm| {
                            let len = if comm.rank() == odd { m } else { n };
                            let mut v = vec![comm.rank() as u64; len];
                            let root = (odd + 1) % p;
                            comm.reduce_with(&mut v, op::Sum, root, alg)
                        })
                        .unwrap();
                    let what = format!("{alg:?}, p = {p}, rank {odd} has {m} not {n}");
                    all_failed(out, &what, mismatch);
                }
            }
        }
    }
}

#[test]
fn different_algorithms_fail_everywhere() {
    for p in [2, 5] {
        let team = team(p);
        for a in ALGORITHMS {
            for b in ALGORITHMS {
                if a == b {
                    continue;
                }
                let out = team
                    .run(|comm| {
                        let alg = if comm.rank() == 1 { b } else { a };
                        let mut v = vec![comm.rank() as u64; 5000];
                        comm.reduce_with(&mut v, op::Sum, 0, alg)
                    })
                    .unwrap();
                let what = format!("{a:?} against {b:?}, p = {p}");
                // Auto may choose the other algorithm itself: then the call is fine.
                if out.iter().all(|r| r.is_ok()) {
                    assert!(a == Reduce::Auto || b == Reduce::Auto, "{what}");
                    continue;
                }
                all_failed(out, &what, mismatch);
            }
        }
    }
}

#[test]
fn different_element_types_fail_everywhere() {
    for p in [2, 3] {
        let team = team(p);
        for alg in ALGORITHMS {
            let out = team
                .run(|comm| {
                    if comm.rank() == 1 {
                        let mut v = vec![1.0f32; 64];
                        comm.reduce_with(&mut v, op::Sum, 0, alg)
                    } else {
                        let mut v = vec![1u32; 64];
                        comm.reduce_with(&mut v, op::Sum, 0, alg)
                    }
                })
                .unwrap();
            all_failed(out, &format!("{alg:?}, p = {p}"), mismatch);
        }
    }
}

/// `Comm::reduce` (the `Auto` entry point) in a row with other collectives on one
/// communicator: small and large, every root.
#[test]
fn reduce_in_a_row_with_allreduce() {
    let p = 4;
    let out = team(p)
        .run(|comm| -> corecoll::Result<()> {
            let r = comm.rank();
            for n in [3usize, 50_000] {
                for root in 0..p {
                    let mut v = vec![r as u64 + 1; n];
                    comm.reduce(&mut v, op::Sum, root)?;
                    let want = if r == root { 10 } else { r as u64 + 1 };
                    assert!(v.iter().all(|&x| x == want), "n = {n}, root {root}");
                    comm.allreduce(&mut v, op::Max)?;
                    assert!(v.iter().all(|&x| x == 10));
                }
            }
            Ok(())
        })
        .unwrap();
    for res in out {
        res.unwrap();
    }
}

/// Many rendezvous-sized blocks (200 `u64`, above `EAGER_MAX`) and many inline ones (64 `u64`)
/// at every root: the two tops' sends to the root, each overlapping the top's own receives,
/// must not deadlock when every block is a single-copy handshake.
#[test]
fn pipelined_tree_many_large_blocks_every_root() {
    const N: usize = 20_000;
    for p in [2, 3, 4, 5, 8] {
        let want: Vec<u64> = (0..N)
            .map(|i| (0..p).fold(0u64, |s, r| s.wrapping_add(int(r, i))))
            .collect();
        let out = team(p)
            .run(|comm| -> Result<(), String> {
                for b in [64, 200] {
                    let alg = Reduce::PipelinedTree {
                        block: Block::Elements(b),
                    };
                    for root in 0..p {
                        check_one(comm, alg, root, "u64 sum", int, &want, op::Sum)?;
                    }
                }
                Ok(())
            })
            .unwrap();
        for res in out {
            res.unwrap();
        }
    }
}

/// A float of varied sign and magnitude, so that the order of additions shows in the last bits.
fn float(r: usize, i: usize) -> f64 {
    let h = mix(r, i, 5);
    let unit = (h >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    unit * 10f64.powi((h % 7) as i32 - 3)
}

/// `Sum` on arbitrary `f64`: every algorithm gives the root the same bits run after run (the
/// order of combination depends on the algorithm, p and root only); `Direct` gives the
/// sequential left fold exactly.
#[test]
fn f64_sums_are_deterministic_and_direct_is_the_left_fold() {
    let n = 3001;
    for p in [3, 8] {
        let left_fold: Vec<u64> = (0..n)
            .map(|i| (1..p).fold(float(0, i), |s, r| s + float(r, i)).to_bits())
            .collect();
        let team = team(p);
        for alg in ALGORITHMS {
            for root in [0, p - 1] {
                let mut first: Option<Vec<u64>> = None;
                for _ in 0..2 {
                    let out = team
                        .run(|comm| {
                            let mut v: Vec<f64> = (0..n).map(|i| float(comm.rank(), i)).collect();
                            comm.reduce_with(&mut v, op::Sum, root, alg)
                                .map(|()| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>())
                        })
                        .unwrap();
                    let bits = out.into_iter().nth(root).unwrap().unwrap();
                    if alg == Reduce::Direct {
                        assert!(bits == left_fold, "{alg:?}, p = {p}, root {root}");
                    }
                    if let Some(f) = &first {
                        assert!(*f == bits, "{alg:?}, p = {p}, root {root}: not repeatable");
                    }
                    first = Some(bits);
                }
            }
        }
    }
}

/// An op that panics on every rank but the root: the ranks that combine (there is one in every
/// schedule at p = 5 but the linear one) fail the run, and every rank that does not panic —
/// the root, the leaves — returns `Err`, promptly (the team's timeout is 30 s), for every
/// algorithm and a root at either end or inside. In the linear reduce only the root combines,
/// so there the op panics on the root alone, and every other rank must return `Err` (for
/// `Auto` too where the team's tables pick the linear reduce).
#[test]
fn a_panicking_op_fails_the_call_everywhere() {
    let p = 5;
    let team = team(p);
    let bytes = 3000 * std::mem::size_of::<u64>();
    let auto_is_linear = team
        .decide(corecoll::Collective::Reduce, p, bytes, false)
        .is_some_and(|d| d.algorithm == Reduce::Linear.name());
    for alg in ALGORITHMS {
        let only_root_combines = alg == Reduce::Linear || (alg == Reduce::Auto && auto_is_linear);
        for root in [0, 3, 4] {
            let errs = std::sync::Mutex::new(Vec::new());
            let res = team.run(|comm| {
                let r = comm.rank();
                let bomb = op::non_commutative(move |a: &u64, b: &u64| {
                    assert!((r == root) != only_root_combines, "planned panic");
                    a.wrapping_add(*b)
                });
                let mut v = vec![r as u64; 3000];
                let e = comm.reduce_with(&mut v, bomb, root, alg);
                errs.lock().unwrap().push((r, e.is_err()));
            });
            let errs = errs.into_inner().unwrap();
            assert!(res.is_err(), "{alg:?}, root {root}: nobody panicked");
            assert!(errs.len() < p, "{alg:?}, root {root}: {errs:?}");
            let root_returned = errs.iter().any(|&(r, _)| r == root);
            assert!(root_returned != only_root_combines, "{alg:?}, root {root}");
            assert!(
                errs.iter().all(|&(_, e)| e),
                "{alg:?}, root {root}: {errs:?}"
            );
        }
    }
}

/// Two ranks, an op that panics whenever it combines: whether the vector is short (both ranks
/// fold the two operands, `Comm::reduce_pair`) or long (the root acknowledges after its fold),
/// no rank returns `Ok`, for either root and every algorithm.
#[test]
fn a_failing_op_on_two_ranks_fails_every_rank() {
    let team = team(2);
    for alg in ALGORITHMS {
        for root in [0, 1] {
            for n in [1usize, 100, 3000] {
                let oks = std::sync::Mutex::new(Vec::new());
                let res = team.run(|comm| {
                    let bomb =
                        op::non_commutative(|_: &u64, _: &u64| -> u64 { panic!("planned panic") });
                    let mut v = vec![comm.rank() as u64; n];
                    let e = comm.reduce_with(&mut v, bomb, root, alg);
                    oks.lock().unwrap().push((comm.rank(), e.is_ok()));
                });
                let oks = oks.into_inner().unwrap();
                assert!(res.is_err(), "{alg:?}, root {root}, n {n}: nobody panicked");
                assert!(
                    oks.iter().all(|&(_, ok)| !ok),
                    "{alg:?}, root {root}, n {n}: {oks:?}"
                );
            }
        }
    }
}

/// The pipelined tree with small blocks (1 and 3 elements), whose root is the top of its
/// schedule at every root: at the roots 0, p/2 and p − 1 of p ∈ {1, 2, 3, 5, 8, 13, 33},
/// for counts 0, 1, odd and long (about a thousand blocks), the non-commutative ops of the
/// suite (the combined one, whose span part panics on operands out of rank order, and the
/// matrix product alone) give the root the sequential left fold and leave the others' buffers
/// unchanged.
#[test]
fn pipelined_tree_small_blocks_keep_rank_order_at_every_kind_of_root() {
    for p in [1usize, 2, 3, 5, 8, 13, 33] {
        let started = std::time::Instant::now();
        let cases: Vec<(usize, Expected, Vec<Mixed>)> = [(1, 1001), (3, 3001)]
            .into_iter()
            .flat_map(|(block, long)| {
                let mut ns = vec![0, 1, 7, 2 * p + 1, long];
                ns.dedup();
                ns.into_iter().map(move |n| (block, n))
            })
            .map(|(block, n)| {
                let e = Expected::new(p, n);
                let m = (0..n)
                    .map(|i| (e.sums[i], e.floats[i], e.products[i], (0, p as u32)))
                    .collect();
                (block, e, m)
            })
            .collect();
        let mut roots = vec![0, p / 2, p - 1];
        roots.dedup();
        let out = team(p)
            .run(|comm| -> Result<(), String> {
                for (block, e, mixed_want) in &cases {
                    let alg = Reduce::PipelinedTree {
                        block: Block::Elements(*block),
                    };
                    for &root in &roots {
                        check_one(comm, alg, root, "all ops", mixed, mixed_want, mixed_op())?;
                        check_one(
                            comm,
                            alg,
                            root,
                            "matrices",
                            matrix,
                            &e.products,
                            matrix_op(),
                        )?;
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("p = {p}: the run failed: {e}"));
        for res in out {
            res.unwrap();
        }
        eprintln!(
            "small blocks, p = {p}: {:.3} s",
            started.elapsed().as_secs_f64()
        );
    }
}
