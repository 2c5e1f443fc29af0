//! `op::ReproducibleSum` on `f64` and `f32` buffers: every element of every result is the
//! correctly rounded exact sum of the ranks' elements (the reference of tests/repro.rs), for
//! every algorithm of every reduction, rank counts 1..=17, three deals of the contributions
//! among the ranks, described machines with hierarchies, the persistent and non-blocking forms,
//! and special values; bad calls fail on every rank.

use super::{exact32, exact64, numbers64, rounded32, rounded64};
use crate::common::{mix, placed_team, team};
use corecoll::algorithm::{Reduce, ReduceScatter, Scan};
use corecoll::op::{Op, ReproducibleSum};
use corecoll::repro::Accumulator;
use corecoll::{Algorithm, Block, Pinning, Topology};
use proptest::prelude::*;

/// Contribution `k` (of `p`) to element `i`: ill-conditioned — magnitudes 600 binary orders
/// apart, every third negated, and a pair that cancels exactly at every 7th element.
pub fn term(i: usize, k: usize, p: usize, salt: u64) -> f64 {
    let h = mix(i, k, salt);
    let x = ((h >> 11) as f64 / (1u64 << 53) as f64 + 0.5) * 2f64.powi((h % 601) as i32 - 300);
    match k {
        _ if i % 7 == 3 && p >= 2 && k == 0 => 2f64.powi(200),
        _ if i % 7 == 3 && p >= 2 && k == p - 1 => -(2f64.powi(200)),
        _ if k % 3 == 2 => -x,
        _ => x,
    }
}

/// Which contribution rank r holds for element i under `deal`: its own, the reverse, or a
/// shuffle that changes with the element.
pub fn held(deal: usize, i: usize, r: usize, p: usize) -> usize {
    match deal {
        0 => r,
        1 => p - 1 - r,
        _ => {
            let mut order: Vec<usize> = (0..p).collect();
            order.sort_by_key(|&k| mix(i, k, 11));
            order[r]
        }
    }
}

/// Rank r's vector of `n` elements under `deal`.
pub fn vector(n: usize, r: usize, p: usize, deal: usize, salt: u64) -> Vec<f64> {
    (0..n)
        .map(|i| term(i, held(deal, i, r, p), p, salt))
        .collect()
}

/// The bits of the correctly rounded sum of the contributions ranks `ranks` hold for element i
/// under `deal`.
pub fn want(i: usize, ranks: std::ops::Range<usize>, p: usize, deal: usize, salt: u64) -> u64 {
    let xs: Vec<f64> = ranks
        .map(|q| term(i, held(deal, i, q, p), p, salt))
        .collect();
    rounded64(&exact64(&xs)).to_bits()
}

/// Every allreduce algorithm, with the pipelined trees also in one-element blocks.
pub fn allreduces() -> Vec<Algorithm> {
    let one = Block::Elements(1);
    Algorithm::ALL
        .into_iter()
        .chain([
            Algorithm::PipelinedTree { block: one },
            Algorithm::DualRoot { block: one },
        ])
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// `fold_all` of up to 40 operands, vectors across the 64-element lanes, against the exact
    /// reference.
    #[test]
    fn fold_all_is_the_correctly_rounded_exact_sum(
        columns in prop::collection::vec(numbers64(), 1..4),
        n in 1usize..40,
    ) {
        let len = 70;
        // Operand k, element i: number (k + i) mod n of column i mod (columns), 0.0 past its end.
        let at = |k: usize, i: usize| {
            let c = &columns[i % columns.len()];
            c.get((k + i) % n).copied().unwrap_or(0.0)
        };
        let operands: Vec<Vec<f64>> = (0..n).map(|k| (0..len).map(|i| at(k, i)).collect()).collect();
        let mut out = vec![0.0; len];
        ReproducibleSum.fold_all(n, &|k| &operands[k][..], &mut out);
        for (i, o) in out.iter().enumerate() {
            let xs: Vec<f64> = (0..n).map(|k| operands[k][i]).collect();
            prop_assert_eq!(o.to_bits(), rounded64(&exact64(&xs)).to_bits(), "{:?}", xs);
        }
    }

    #[test]
    fn f32_fold_all_is_the_correctly_rounded_exact_sum(
        bits in prop::collection::vec(any::<u32>(), 1..40),
    ) {
        let xs: Vec<f32> = bits
            .iter()
            .map(|&b| f32::from_bits(b))
            .map(|x| if x.is_finite() { x } else { f32::from_bits(x.to_bits() & !(1 << 30)) })
            .collect();
        let mut out = [0.0f32];
        ReproducibleSum.fold_all(xs.len(), &|k| std::slice::from_ref(&xs[k]), &mut out);
        prop_assert_eq!(out[0].to_bits(), rounded32(&exact32(&xs)).to_bits(), "{:?}", xs);
    }
}

#[test]
fn fold_all_special_values_zeros_and_ties() {
    let (inf, nan, max) = (f64::INFINITY, f64::NAN, f64::MAX);
    let eps = f64::EPSILON;
    let tiny = f64::from_bits(1);
    let cases: Vec<Vec<f64>> = vec![
        vec![1.0, nan, 2.0],
        vec![-nan, 1.0, 2.0],
        vec![inf, -inf, 0.0],
        vec![inf, 1.0, -max],
        vec![-inf, -max, -max],
        vec![max, max, -max],
        vec![max, max * eps / 4.0, 0.0],
        vec![-0.0, -0.0, -0.0],
        vec![-0.0, 0.0, -0.0],
        vec![1.5, -1.5, -0.0],
        vec![1.0, eps / 2.0, 0.0],
        vec![1.0, eps / 2.0, tiny],
        vec![1.0, eps / 2.0, -tiny],
        vec![3.0, eps, -(eps / 2.0) * 3.0, 1e-300],
        vec![tiny, tiny, f64::from_bits(3)],
        vec![f64::MIN_POSITIVE, -tiny, 0.0],
    ];
    for xs in cases {
        let mut acc = Accumulator::<f64>::new();
        acc.add_slice(&xs);
        let mut out = [0.0];
        ReproducibleSum.fold_all(xs.len(), &|k| std::slice::from_ref(&xs[k]), &mut out);
        assert_eq!(out[0].to_bits(), acc.value().to_bits(), "{xs:?}");
        // Two operands: the pairwise combining agrees.
        let mut pair = [xs[0]];
        ReproducibleSum.fold_right(&mut pair, &xs[1..2]);
        let mut two = Accumulator::<f64>::new();
        two.add_slice(&xs[..2]);
        assert_eq!(pair[0].to_bits(), two.value().to_bits(), "{:?}", &xs[..2]);
    }
}

#[test]
fn allreduce_is_the_same_bits_for_every_algorithm_p_and_deal() {
    let counts = [0, 1, 5, 300];
    for p in 1..=17 {
        let team = team(p);
        for deal in 0..3 {
            let expected: Vec<Vec<u64>> = counts
                .iter()
                .map(|&n| (0..n).map(|i| want(i, 0..p, p, deal, n as u64)).collect())
                .collect();
            for alg in allreduces() {
                let out = team
                    .run(|comm| -> corecoll::Result<Vec<Vec<f64>>> {
                        let r = comm.rank();
                        counts
                            .iter()
                            .map(|&n| {
                                let mut v = vector(n, r, p, deal, n as u64);
                                comm.allreduce_with(&mut v, ReproducibleSum, alg)?;
                                Ok(v)
                            })
                            .collect()
                    })
                    .unwrap();
                for (r, res) in out.into_iter().enumerate() {
                    for (v, want) in res.unwrap().iter().zip(&expected) {
                        let bits: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
                        assert_eq!(&bits, want, "{alg:?}, p = {p}, deal {deal}, rank {r}");
                    }
                }
            }
        }
    }
}

#[test]
fn reduce_scan_exscan_and_reduce_scatter_for_every_algorithm() {
    let n = 37;
    for p in [1, 2, 3, 4, 5, 8, 13, 17] {
        let team = team(p);
        for deal in 0..3 {
            let root = (deal * 5) % p;
            let out = team
                .run(|comm| -> corecoll::Result<Vec<(String, Vec<f64>)>> {
                    let r = comm.rank();
                    let mine = vector(n, r, p, deal, 5);
                    let mut got = Vec::new();
                    for alg in Reduce::ALL {
                        let mut v = mine.clone();
                        comm.reduce_with(&mut v, ReproducibleSum, root, alg)?;
                        got.push((format!("reduce {alg:?}"), v));
                    }
                    for alg in Scan::ALL {
                        let mut v = mine.clone();
                        comm.scan_with(&mut v, ReproducibleSum, alg)?;
                        got.push((format!("scan {alg:?}"), v));
                        let mut v = mine.clone();
                        comm.exscan_with(&mut v, ReproducibleSum, alg)?;
                        got.push((format!("exscan {alg:?}"), v));
                    }
                    // Rank r's send holds its contributions to the global vector of n·p.
                    let send = vector(n * p, r, p, deal, 6);
                    for alg in ReduceScatter::ALL {
                        let mut recv = vec![0.0; n];
                        comm.reduce_scatter_block_with(&send, &mut recv, ReproducibleSum, alg)?;
                        got.push((format!("reduce-scatter {alg:?}"), recv));
                    }
                    Ok(got)
                })
                .unwrap();
            for (r, res) in out.into_iter().enumerate() {
                let mine = vector(n, r, p, deal, 5);
                for (what, v) in res.unwrap() {
                    for (i, x) in v.iter().enumerate() {
                        let expected = match what.split(' ').next().unwrap() {
                            "reduce" if r == root => want(i, 0..p, p, deal, 5),
                            "reduce" => mine[i].to_bits(),
                            "scan" => want(i, 0..r + 1, p, deal, 5),
                            "exscan" if r == 0 => mine[i].to_bits(),
                            "exscan" => want(i, 0..r, p, deal, 5),
                            _ => want(r * n + i, 0..p, p, deal, 6),
                        };
                        assert_eq!(
                            x.to_bits(),
                            expected,
                            "{what}, p = {p}, deal {deal}, rank {r}, element {i}"
                        );
                    }
                }
            }
        }
    }
}

/// Runs `body` on every rank of `team` and checks that every rank's bits are `expected`.
fn same_bits(
    team: &corecoll::Team,
    what: &str,
    expected: &[u64],
    body: impl Fn(&corecoll::Comm) -> corecoll::Result<Vec<f64>> + Sync,
) {
    for (r, res) in team.run(body).unwrap().into_iter().enumerate() {
        let bits: Vec<u64> = res.unwrap().iter().map(|x| x.to_bits()).collect();
        assert_eq!(bits, expected, "{what}, rank {r}");
    }
}

#[test]
fn placements_and_hierarchies_give_the_same_bits() {
    let n = 300;
    let shapes: [(&[usize], usize); 3] = [(&[2, 2, 2], 8), (&[2, 3], 6), (&[3, 5], 11)];
    let algs = [
        Algorithm::Auto,
        Algorithm::Direct,
        Algorithm::HierarchicalDirect,
        Algorithm::Hierarchical {
            segment: Block::Elements(100),
        },
        Algorithm::Ring { block: Block::Auto },
    ];
    for (shape, p) in shapes {
        for pinning in [Pinning::Compact, Pinning::Spread, Pinning::None] {
            let team = placed_team(Topology::synthetic(shape).unwrap(), pinning.clone(), p);
            for deal in 0..3 {
                let expected: Vec<u64> = (0..n).map(|i| want(i, 0..p, p, deal, 1)).collect();
                let root: Vec<u64> = (0..n).map(|i| want(i, 0..p, p, deal, 2)).collect();
                for alg in algs {
                    let what = format!("{shape:?} {pinning:?} {alg:?} deal {deal}");
                    same_bits(&team, &what, &expected, |comm| {
                        let mut v = vector(n, comm.rank(), p, deal, 1);
                        comm.allreduce_with(&mut v, ReproducibleSum, alg)?;
                        Ok(v)
                    });
                }
                for alg in [
                    Reduce::Auto,
                    Reduce::Hierarchical,
                    Reduce::HierarchicalDirect,
                ] {
                    let what = format!("{shape:?} {pinning:?} {alg:?} deal {deal}");
                    same_bits(&team, &what, &root, |comm| {
                        let mut v = vector(n, comm.rank(), p, deal, 2);
                        comm.reduce_with(&mut v, ReproducibleSum, 0, alg)?;
                        comm.broadcast(&mut v, 0)?;
                        Ok(v)
                    });
                }
            }
        }
    }
}

#[test]
fn long_vectors_f32_persistent_and_nonblocking() {
    // Beyond one piece of the accumulators' path (2,048 elements), and across Direct's chunks.
    let n = 4100;
    for p in [3, 5, 8] {
        let team = team(p);
        let expected: Vec<u64> = (0..n).map(|i| want(i, 0..p, p, 2, 3)).collect();
        for alg in [
            Algorithm::Auto,
            Algorithm::Rabenseifner,
            Algorithm::TwoTree { block: Block::Auto },
        ] {
            same_bits(&team, &format!("{alg:?} p = {p}"), &expected, |comm| {
                let mut v = vector(n, comm.rank(), p, 2, 3);
                comm.allreduce_with(&mut v, ReproducibleSum, alg)?;
                Ok(v)
            });
        }
        // Out of place, persistent (folded on slots for short vectors) and non-blocking.
        for n in [3, 40, 300] {
            let expected: Vec<u64> = (0..n).map(|i| want(i, 0..p, p, 1, 4)).collect();
            same_bits(
                &team,
                &format!("forms, p = {p}, n = {n}"),
                &expected,
                |comm| {
                    let mine = vector(n, comm.rank(), p, 1, 4);
                    let mut out = vec![0.0; n];
                    comm.allreduce_into(&mine, &mut out, ReproducibleSum)?;
                    let mut persistent = mine.clone();
                    let mut nonblocking = mine.clone();
                    comm.scope(|s| -> corecoll::Result<()> {
                        let mut req = s.allreduce_init(&mut persistent, ReproducibleSum)?;
                        for _ in 0..3 {
                            req.start()?;
                            req.wait()?;
                            let buf = req.buffer()?;
                            assert_eq!(buf, &out[..]);
                            buf.copy_from_slice(&mine);
                        }
                        s.iallreduce(&mut nonblocking, ReproducibleSum)?.wait()
                    })?;
                    assert_eq!(nonblocking, out);
                    Ok(out)
                },
            );
        }
        // f32: the reference rounds the exact sum to f32.
        let m = 200;
        let f32s = |r: usize| -> Vec<f32> {
            (0..m)
                .map(|i| (term(i, held(1, i, r, p), p, 5) * 1e-280) as f32)
                .collect()
        };
        let want32: Vec<u32> = (0..m)
            .map(|i| {
                let xs: Vec<f32> = (0..p).map(|q| f32s(q)[i]).collect();
                rounded32(&exact32(&xs)).to_bits()
            })
            .collect();
        for alg in [Algorithm::Auto, Algorithm::Direct, Algorithm::Binomial] {
            for (r, res) in team
                .run(|comm| {
                    let mut v = f32s(comm.rank());
                    comm.allreduce_with(&mut v, ReproducibleSum, alg)?;
                    corecoll::Result::Ok(v)
                })
                .unwrap()
                .into_iter()
                .enumerate()
            {
                let bits: Vec<u32> = res.unwrap().iter().map(|x| x.to_bits()).collect();
                assert_eq!(bits, want32, "f32 {alg:?}, p = {p}, rank {r}");
            }
        }
    }
}

#[test]
fn bad_calls_fail_on_every_rank() {
    let team = team(4);
    // Lengths that differ across the accumulators' pieces, on the direct path and folded.
    for (alg, short, long) in [
        (Algorithm::Ring { block: Block::Auto }, 2048, 3000),
        (Algorithm::Ring { block: Block::Auto }, 2500, 3000),
        (Algorithm::Direct, 10, 11),
        (Algorithm::Auto, 100, 200),
    ] {
        let out = team
            .run(|comm| {
                let n = if comm.rank() == 2 { short } else { long };
                let mut v = vec![1.0f64; n];
                comm.allreduce_with(&mut v, ReproducibleSum, alg)
            })
            .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            assert!(
                res.is_err(),
                "{alg:?} {short} against {long}: rank {r} succeeded"
            );
        }
    }
    // One rank's reproducible sum against the others' plain sum, on the floats (Auto runs
    // Direct here) and on accumulators (Ring): an error on every rank.
    for alg in [Algorithm::Auto, Algorithm::Ring { block: Block::Auto }] {
        let out = team
            .run(|comm| {
                let mut v = vec![1.0f64; 300];
                if comm.rank() == 1 {
                    comm.allreduce_with(&mut v, corecoll::op::Sum, alg)
                } else {
                    comm.allreduce_with(&mut v, ReproducibleSum, alg)
                }
            })
            .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            assert!(
                res.is_err(),
                "{alg:?}: rank {r} succeeded against another op"
            );
        }
    }
    // An op that is not pairwise on a type that is not a float.
    struct Exactish;
    impl Op<u64> for Exactish {
        fn fold_right(&self, acc: &mut [u64], rhs: &[u64]) {
            acc.iter_mut().zip(rhs).for_each(|(a, b)| *a += b);
        }
        fn fold_left(&self, lhs: &[u64], acc: &mut [u64]) {
            self.fold_right(acc, lhs);
        }
        fn is_commutative(&self) -> bool {
            true
        }
        fn pairwise(&self) -> bool {
            false
        }
    }
    for res in team
        .run(|comm| comm.allreduce(&mut [1u64, 2], Exactish))
        .unwrap()
    {
        // Every rank fails: the rank that failed first with `Unsupported`, the others with it
        // as the cause.
        let e = res.unwrap_err();
        assert!(format!("{e}").contains("not pairwise"), "{e}");
    }
}

#[test]
fn special_values_through_every_path() {
    let payload = f64::from_bits(0x7ff8_dead_beef_0001);
    // Element j of rank r: the cases below, one per element.
    let value = |j: usize, r: usize| -> f64 {
        match (j, r) {
            (0, 0) => payload,
            (1, _) => -0.0,
            (2, 0) => -0.0,
            (3, 0) => f64::INFINITY,
            (4, 0) => f64::INFINITY,
            (4, 1) => f64::NEG_INFINITY,
            (5, _) => f64::MAX,
            (6, 1) => -payload,
            _ => 1.5,
        }
    };
    for p in [1, 2, 3, 5] {
        let want: Vec<u64> = (0..8)
            .map(|j| {
                let mut acc = Accumulator::<f64>::new();
                (0..p).for_each(|r| acc.add(value(j, r)));
                acc.value().to_bits()
            })
            .collect();
        assert_eq!(want[0], f64::NAN.to_bits());
        let team = team(p);
        for alg in [
            Algorithm::Auto,
            Algorithm::Direct,
            Algorithm::Ring { block: Block::Auto },
            Algorithm::Binomial,
        ] {
            same_bits(&team, &format!("{alg:?}, p = {p}"), &want, |comm| {
                let mut v: Vec<f64> = (0..8).map(|j| value(j, comm.rank())).collect();
                comm.allreduce_with(&mut v, ReproducibleSum, alg)?;
                Ok(v)
            });
        }
    }
}
