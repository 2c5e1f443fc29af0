//! The reduce_scatter_block reference suite: every algorithm against sequential folds computed
//! here.
//!
//! **The matrix** (`matrix_*`, split by rank count so that the harness runs them in
//! parallel): every algorithm (`Auto`, `Ring`, `RecursiveHalving`, `Direct`) × p ∈ 1..=17 ∪
//! {31, 32, 33} × block length n ∈ {0, 1, 3, 7}, all calls of one p in a row on one team, for
//! five ops:
//! * wrapping `Sum` on `u64`;
//! * `Sum` on `f64` of small integers (every sum exact), bit-identical to the rank-order left
//!   fold for every algorithm;
//! * `Sum` on `f64` of values of varied sign and magnitude, bit-identical to the association
//!   each algorithm documents: the left fold for `Direct`, the fold rotated to start after
//!   the block's owner for the (commutative) ring, the butterfly's pairwise tree after the
//!   fold for recursive halving, and one of those two for `Auto`;
//! * the product of 2×2 integer matrices (non-commutative), against the left fold;
//! * adjacent spans (non-commutative; the op panics on operands out of rank order).
//!
//! **Long blocks** (`long_blocks`): n = 4099 at p ∈ {2, 3, 8, 17}, every algorithm, the same
//! ops but the exact floats (messages well past the eager size, so that the single-copy
//! rendezvous path runs).
//!
//! **Bad input**, each an `Err` on every rank with the expected root cause, no hang (teams
//! time out after 30 s): a send length that is not p·n (on one rank, or on all); a different
//! n on one rank; a different algorithm on one rank; a different element type on one rank;
//! an op that panics on one rank at its first or at its last combination (commutative and
//! not), where every other rank may already have everything it needs.
//!
//! Budget: a few seconds for the whole file in a debug build on a busy 2-core machine.

mod common;

use common::{check_fails, invalid, matmul, matrix, matrix_op, mismatch, mix, span_op, team};
use corecoll::algorithm::ReduceScatter;
use corecoll::op::{self, Op};
use corecoll::{Comm, Error, Team};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Every algorithm.
const ALGS: [ReduceScatter; 4] = [
    ReduceScatter::Auto,
    ReduceScatter::Ring,
    ReduceScatter::RecursiveHalving,
    ReduceScatter::Direct,
];

/// Block lengths of the matrix.
const COUNTS: [usize; 4] = [0, 1, 3, 7];

/// The long block length (odd, past the eager size for every element type here).
const LONG: usize = 4099;

/// Rank `r`'s `u64` element `j`.
fn word(r: usize, j: usize) -> u64 {
    mix(r, j, 1)
}

/// Rank `r`'s small-integer `f64` element `j` (sums of up to 33 of them are exact).
fn small(r: usize, j: usize) -> f64 {
    (mix(r, j, 2) % 2001) as f64 - 1000.0
}

/// Rank `r`'s `f64` element `j`, of varied sign and magnitude, so that the association of the
/// additions shows in the bits.
fn float(r: usize, j: usize) -> f64 {
    let h = mix(r, j, 4);
    let m = (h >> 11) as f64 / (1u64 << 53) as f64;
    let sign = if h & 1 == 0 { 1.0 } else { -1.0 };
    sign * m * 10f64.powi((h >> 1) as i32 % 9 - 4)
}

/// Rank `r`'s span element `j` at `p` ranks: adjacent spans, element by element.
fn span(p: usize, r: usize, j: usize) -> (u32, u32) {
    let base = (j * (p + 1) + r) as u32;
    (base, base + 1)
}

/// The `f64` sum of `x(0, j) … x(p − 1, j)` in the order `ranks`, as a left fold.
fn fold_in_order(ranks: impl Iterator<Item = usize>, j: usize, x: fn(usize, usize) -> f64) -> f64 {
    let mut acc: Option<f64> = None;
    for r in ranks {
        acc = Some(match acc {
            None => x(r, j),
            Some(a) => a + x(r, j),
        });
    }
    acc.unwrap()
}

/// The recursive halving's association for element `j` of `p` ranks: the first 2·rem ranks
/// pair up (even + odd), then adjacent groups combine pairwise, level by level.
fn butterfly(p: usize, j: usize) -> f64 {
    let p2 = 1usize << p.ilog2();
    let rem = p - p2;
    let mut level: Vec<f64> = (0..p2)
        .map(|id| {
            if id < rem {
                float(2 * id, j) + float(2 * id + 1, j)
            } else {
                float(id + rem, j)
            }
        })
        .collect();
    while level.len() > 1 {
        level = level.chunks(2).map(|w| w[0] + w[1]).collect();
    }
    level[0]
}

/// The whole reductions (p·n elements; rank i's result is block i) for one p and n.
struct Reference {
    n: usize,
    sums: Vec<u64>,
    small: Vec<f64>,
    /// The rank-order left fold of [`float`].
    left: Vec<f64>,
    /// The commutative ring's rotated fold of [`float`].
    ring: Vec<f64>,
    /// The butterfly's association of [`float`].
    halving: Vec<f64>,
    matrices: Vec<[u32; 4]>,
}

fn reference(p: usize, n: usize) -> Reference {
    let len = p * n;
    let all = |_j: usize| 0..p;
    Reference {
        n,
        sums: (0..len)
            .map(|j| all(j).fold(0u64, |a, r| a.wrapping_add(word(r, j))))
            .collect(),
        small: (0..len).map(|j| fold_in_order(all(j), j, small)).collect(),
        left: (0..len).map(|j| fold_in_order(all(j), j, float)).collect(),
        ring: (0..len)
            .map(|j| {
                let b = j / n;
                fold_in_order((1..=p).map(|k| (b + k) % p), j, float)
            })
            .collect(),
        halving: (0..len).map(|j| butterfly(p, j)).collect(),
        matrices: (0..len)
            .map(|j| (1..p).fold(matrix(0, j), |a, r| matmul(a, matrix(r, j))))
            .collect(),
    }
}

/// Compares `got` with `want` (by `key`, e.g. the bits of a float), naming the first
/// difference.
fn same<T: std::fmt::Debug, K: PartialEq>(
    what: &str,
    got: &[T],
    want: &[T],
    key: impl Fn(&T) -> K,
) -> Result<(), String> {
    assert_eq!(got.len(), want.len());
    match (0..got.len()).find(|&i| key(&got[i]) != key(&want[i])) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: first difference at {i}: got {:?}, want {:?}",
            got[i], want[i]
        )),
    }
}

/// One call of `alg` on rank `comm.rank()`'s input `x(r, j)`, into a recv buffer of `fill`.
fn call<T: Copy + Send + Sync + 'static>(
    comm: &Comm,
    n: usize,
    x: impl Fn(usize, usize) -> T,
    fill: T,
    op: impl Op<T>,
    alg: ReduceScatter,
) -> corecoll::Result<Vec<T>> {
    let (p, me) = (comm.size(), comm.rank());
    let send: Vec<T> = (0..p * n).map(|j| x(me, j)).collect();
    let mut recv = vec![fill; n];
    if alg == ReduceScatter::Auto && n % 2 == 1 {
        // The entry point without an algorithm, now and then.
        comm.reduce_scatter_block(&send, &mut recv, op)?;
    } else {
        comm.reduce_scatter_block_with(&send, &mut recv, op, alg)?;
    }
    Ok(recv)
}

/// Runs every algorithm and op over the references `refs` on `comm`, checking this rank's
/// block; `with_small` adds the exact-float sums.
fn sweep(comm: &Comm, refs: &[Reference], with_small: bool) -> Result<(), String> {
    let (p, me) = (comm.size(), comm.rank());
    for e in refs {
        let n = e.n;
        let mine = me * n..(me + 1) * n;
        for alg in ALGS {
            let what = |op: &str| format!("{alg:?}, {op}, p = {p}, n = {n}, rank {me}");
            let err = |op: &str| {
                let w = what(op);
                move |err: Error| format!("{w}: {err}")
            };

            let got = call(comm, n, word, 7, op::Sum, alg).map_err(err("u64 sum"))?;
            same(&what("u64 sum"), &got, &e.sums[mine.clone()], |x| *x)?;

            if with_small {
                let got = call(comm, n, small, f64::NAN, op::Sum, alg).map_err(err("small"))?;
                same(&what("exact f64 sum"), &got, &e.small[mine.clone()], |x| {
                    x.to_bits()
                })?;
            }

            let got = call(comm, n, float, f64::NAN, op::Sum, alg).map_err(err("f64 sum"))?;
            let bits = |x: &f64| x.to_bits();
            let w = what("f64 sum");
            match alg {
                ReduceScatter::Direct => same(&w, &got, &e.left[mine.clone()], bits)?,
                ReduceScatter::Ring => same(&w, &got, &e.ring[mine.clone()], bits)?,
                ReduceScatter::RecursiveHalving => same(&w, &got, &e.halving[mine.clone()], bits)?,
                _ => same(&w, &got, &e.halving[mine.clone()], bits)
                    .or_else(|_| same(&w, &got, &e.left[mine.clone()], bits))?,
            }

            let got = call(comm, n, matrix, [9; 4], matrix_op(), alg).map_err(err("matrix"))?;
            same(
                &what("matrix product"),
                &got,
                &e.matrices[mine.clone()],
                |x| *x,
            )?;

            let got = call(comm, n, |r, j| span(p, r, j), (0, 0), span_op(), alg)
                .map_err(err("spans"))?;
            let want: Vec<(u32, u32)> = mine
                .clone()
                .map(|j| (span(p, 0, j).0, span(p, p - 1, j).1))
                .collect();
            same(&what("spans"), &got, &want, |x| *x)?;
        }
    }
    Ok(())
}

/// The matrix at each of `ps`, one team per p.
fn run_matrix(ps: &[usize]) {
    for &p in ps {
        let refs: Vec<Reference> = COUNTS.iter().map(|&n| reference(p, n)).collect();
        let out = team(p)
            .run(|comm| sweep(comm, &refs, true))
            .unwrap_or_else(|e| panic!("p = {p}: {e}"));
        for res in out {
            res.unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn matrix_p_1_to_9() {
    run_matrix(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
}

#[test]
fn matrix_p_10_to_14() {
    run_matrix(&[10, 11, 12, 13, 14]);
}

#[test]
fn matrix_p_15_to_17() {
    run_matrix(&[15, 16, 17]);
}

#[test]
fn matrix_p_31_to_33() {
    run_matrix(&[31, 32, 33]);
}

#[test]
fn long_blocks() {
    for p in [2, 3, 8, 17] {
        let refs = [reference(p, LONG)];
        let out = team(p)
            .run(|comm| sweep(comm, &refs, false))
            .unwrap_or_else(|e| panic!("p = {p}: {e}"));
        for res in out {
            res.unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn wrong_send_lengths_fail_on_every_rank() {
    for p in [1, 2, 3, 6] {
        let team = team(p);
        for n in [0usize, 1, 5] {
            for extra in [-1isize, 1, 5] {
                let Some(bad) = (p * n).checked_add_signed(extra) else {
                    continue;
                };
                for alg in ALGS {
                    for odd in [Some(0), Some(p - 1), None] {
                        check_fails(
                            &team,
                            &format!("{alg:?}, send of {bad} on {odd:?} (None: all), n = {n}"),
                            &|comm| {
                                let me = comm.rank();
                                let len = if odd.is_none_or(|o| o == me) {
                                    bad
                                } else {
                                    p * n
                                };
                                let mut recv = vec![0u64; n];
                                let r = comm.reduce_scatter_block_with(
                                    &vec![1u64; len],
                                    &mut recv,
                                    op::Sum,
                                    alg,
                                );
                                // A rank with good arguments may have started (at p = 2
                                // there is no separate check): MPI leaves its buffer
                                // undefined on error. The rank that found its own argument
                                // wrong touches nothing.
                                if len != p * n {
                                    assert!(recv.iter().all(|&x| x == 0), "recv touched");
                                }
                                r
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
        // Block lengths: one rank passes another n, with a send to match.
        for (n, m) in [(0usize, 1usize), (1, 0), (5, 4), (1000, 999), (LONG, 8)] {
            for odd in [0, p - 1] {
                for alg in ALGS {
                    check_fails(
                        &team,
                        &format!("{alg:?}, n = {m} on rank {odd}, {n} elsewhere"),
                        &|comm| {
                            let k = if comm.rank() == odd { m } else { n };
                            let mut recv = vec![0u64; k];
                            comm.reduce_scatter_block_with(
                                &vec![1u64; k * p],
                                &mut recv,
                                op::Sum,
                                alg,
                            )
                        },
                        mismatch,
                    );
                }
            }
        }
        // Algorithms: rank `odd` chooses another one.
        for a in ALGS {
            // `Auto` resolves to any of the others depending on p, size and the team's
            // oversubscription, so only explicit choices are sure to differ.
            let differs =
                |b: ReduceScatter| b != a && a != ReduceScatter::Auto && b != ReduceScatter::Auto;
            for b in ALGS.into_iter().filter(|&b| differs(b)) {
                for odd in [0, p - 1] {
                    check_fails(
                        &team,
                        &format!("{a:?} on rank {odd}, {b:?} elsewhere"),
                        &|comm| {
                            let alg = if comm.rank() == odd { a } else { b };
                            let mut recv = vec![0u64; 4];
                            comm.reduce_scatter_block_with(
                                &vec![1u64; 4 * p],
                                &mut recv,
                                op::Sum,
                                alg,
                            )
                        },
                        mismatch,
                    );
                }
            }
        }
        // Element types: rank 0 reduces u32s, the others u64s, blocks of the same length.
        for alg in ALGS {
            check_fails(
                &team,
                &format!("{alg:?}, u32 on rank 0, u64 elsewhere"),
                &|comm| {
                    if comm.rank() == 0 {
                        let mut recv = vec![0u32; 4];
                        comm.reduce_scatter_block_with(&vec![1u32; 4 * p], &mut recv, op::Sum, alg)
                    } else {
                        let mut recv = vec![0u64; 4];
                        comm.reduce_scatter_block_with(&vec![1u64; 4 * p], &mut recv, op::Sum, alg)
                    }
                },
                mismatch,
            );
        }
    }
}

/// Element combinations an op makes on each rank in one call of `alg` (run once to count).
fn combinations(team: &Team, alg: ReduceScatter, n: usize, commutative: bool) -> Vec<usize> {
    team.run(|comm| {
        let calls = AtomicUsize::new(0);
        let f = |a: &u64, b: &u64| {
            calls.fetch_add(1, Ordering::Relaxed);
            a.wrapping_add(*b)
        };
        let send = vec![1u64; comm.size() * n];
        let mut recv = vec![0u64; n];
        let res = if commutative {
            comm.reduce_scatter_block_with(&send, &mut recv, op::commutative(f), alg)
        } else {
            comm.reduce_scatter_block_with(&send, &mut recv, op::non_commutative(f), alg)
        };
        res.unwrap();
        calls.load(Ordering::Relaxed)
    })
    .unwrap()
}

/// An op that panics on one rank, at its first or at its very last combination (after which
/// that rank would only wait in the closing synchronisation): every other rank returns
/// `Err`, none by timing out, for every algorithm, commutative or not.
#[test]
fn a_panicking_op_fails_the_call_everywhere() {
    let n = 5;
    for p in [2, 3, 5, 8] {
        let team = team(p);
        for alg in ALGS {
            for commutative in [false, true] {
                let counts = combinations(&team, alg, n, commutative);
                for bomb in [1, p - 1] {
                    assert!(
                        counts[bomb] > 0,
                        "{alg:?}, p = {p}: rank {bomb} never combines"
                    );
                    for at in [1, counts[bomb]] {
                        let what = format!(
                            "{alg:?}, p = {p}, commutative {commutative}, rank {bomb} \
                             panics at combination {at} of {}",
                            counts[bomb]
                        );
                        let errs = Mutex::new(Vec::new());
                        let res = team.run(|comm| {
                            let me = comm.rank();
                            let calls = AtomicUsize::new(0);
                            let f = |a: &u64, b: &u64| {
                                let k = calls.fetch_add(1, Ordering::Relaxed) + 1;
                                assert!(!(me == bomb && k == at), "planned panic");
                                a.wrapping_add(*b)
                            };
                            let send = vec![me as u64; p * n];
                            let mut recv = vec![0u64; n];
                            let res = if commutative {
                                comm.reduce_scatter_block_with(
                                    &send,
                                    &mut recv,
                                    op::commutative(f),
                                    alg,
                                )
                            } else {
                                comm.reduce_scatter_block_with(
                                    &send,
                                    &mut recv,
                                    op::non_commutative(f),
                                    alg,
                                )
                            };
                            errs.lock().unwrap().push((me, res));
                        });
                        assert!(res.is_err(), "{what}: nobody panicked");
                        let errs = errs.into_inner().unwrap();
                        assert_eq!(errs.len(), p - 1, "{what}");
                        for (r, res) in errs {
                            match res {
                                Err(e) if !matches!(e.root_cause(), Error::Timeout { .. }) => {}
                                other => panic!("{what}: rank {r}: {other:?}"),
                            }
                        }
                    }
                }
            }
        }
    }
}
