//! Every op on the algorithms: long vectors, sums, products, minima and maxima, bitwise
//! and logical ops, and the order of non-commutative ones.

use super::*;

/// Long vectors: 100 003 elements (several 64 KiB blocks per chunk), and counts whose chunks
/// straddle a block boundary so that the outgoing and incoming chunks of one ring step take
/// different numbers of pieces, or are exact multiples of a block. The boundaries are those of
/// the automatic 64 KiB block, so algorithms given an explicit block size are left out (the
/// full matrix runs them on 65 537 elements).
#[test]
fn sum_u64_long_vectors() {
    let input = |r: usize, i: usize| mix(r, i, 2);
    let f = |a: u64, b: u64| a.wrapping_add(b);
    let auto_blocks: Vec<Algorithm> = algorithms()
        .into_iter()
        .filter(|&a| matches!(block_of(a), None | Some(Block::Auto)))
        .collect();
    for team in teams(&[2, 3, 5, 8]) {
        let p = team.size();
        let c = [
            100_003,
            p * BLOCK_U64 + 1,
            2 * p * BLOCK_U64,
            p * BLOCK_U64 - 1,
        ];
        check(
            &team,
            &auto_blocks,
            &c,
            &input,
            &op::Sum,
            &f,
            "long sum u64",
        );
    }
    let team = team(33);
    let algs = [
        Algorithm::Auto,
        Algorithm::Chain { block: Block::Auto },
        Algorithm::Ring { block: Block::Auto },
    ];
    check(
        &team,
        &algs,
        &[100_003],
        &input,
        &op::Sum,
        &f,
        "long sum u64",
    );
}

#[test]
fn sum_i32_wraps() {
    let algs = algorithms();
    // Values near the ends of i32, so that partial sums overflow in both directions.
    let input = |r: usize, i: usize| {
        let h = mix(r, i, 3);
        if h.is_multiple_of(2) {
            i32::MAX - (h % 1000) as i32
        } else {
            i32::MIN + (h % 1000) as i32
        }
    };
    let f = |a: i32, b: i32| a.wrapping_add(b);
    for team in teams(&SOME_PS) {
        let c = counts(team.size());
        check(&team, &algs, &c, &input, &op::Sum, &f, "sum i32");
    }
    let team = team(7);
    check(&team, &algs, &[LONG], &input, &op::Sum, &f, "long sum i32");
}

/// Small integers are exact in `f64` whatever the order of additions, so every algorithm must
/// give the left-to-right fold bit for bit (on every rank).
#[test]
fn sum_f64_of_small_integers_is_exact() {
    let algs = algorithms();
    let input = |r: usize, i: usize| (mix(r, i, 4) % 2001) as f64 - 1000.0;
    let f = |a: f64, b: f64| a + b;
    for team in teams(&SOME_PS) {
        let c = counts(team.size());
        check(&team, &algs, &c, &input, &op::Sum, &f, "sum f64 (integers)");
    }
    let team = team(5);
    check(&team, &algs, &[LONG], &input, &op::Sum, &f, "long sum f64");
}

/// Arbitrary floats: every rank gets the same bits; the linear algorithm (rank 0 folds in rank
/// order) and the direct one (each slice folded in rank order) give exactly the left-to-right
/// fold; the others are within the rounding bound of a sum of p terms.
#[test]
fn sum_f64_bit_identical_on_all_ranks() {
    let input = |r: usize, i: usize| float(r, i, 5);
    for team in teams(&SOME_PS) {
        let p = team.size();
        let algs = algorithms();
        let c = [1, p + 1, 1000, 3 * BLOCK_U64 + 7];
        let cases = cases(p, &algs, &c, &input, &|a, b| a + b);
        // Per case and element, the sum of the terms' magnitudes, for the rounding bound.
        let scales: Vec<Vec<f64>> = cases
            .iter()
            .map(|case| {
                (0..case.n)
                    .map(|i| case.inputs.iter().map(|v| v[i].abs()).sum())
                    .collect()
            })
            .collect();
        for &alg in &algs {
            for (case, per_rank) in run_cases(&team, alg, &cases, &op::Sum) {
                let (n, want) = (case.n, &case.want);
                let k = cases
                    .iter()
                    .position(|c| c.n == n)
                    .expect("a case of its own");
                for (r, v) in per_rank.iter().enumerate() {
                    assert!(
                        same_vec(v, &per_rank[0]),
                        "{alg:?} p = {p} n = {n}: rank {r} differs from rank 0"
                    );
                }
                if matches!(alg, Algorithm::Linear | Algorithm::Direct) {
                    assert!(same_vec(&per_rank[0], want), "{alg:?} is the left fold");
                }
                for (i, (&x, &w)) in per_rank[0].iter().zip(want).enumerate() {
                    let bound = 2.0 * p as f64 * f64::EPSILON * scales[k][i];
                    assert!(
                        (x - w).abs() <= bound,
                        "{alg:?} p = {p} n = {n} [{i}]: {x} vs {w}"
                    );
                }
            }
        }
    }
}

#[test]
fn prod_integers_and_floats() {
    let fu = |a: u64, b: u64| a.wrapping_mul(b);
    let fi = |a: i32, b: i32| a.wrapping_mul(b);
    let ff = |a: f64, b: f64| a * b;
    // Odd factors keep the wrapping u64 product from collapsing to zero.
    let iu = |r: usize, i: usize| mix(r, i, 6) | 1;
    let ii = |r: usize, i: usize| (mix(r, i, 7) % 201) as i32 - 100;
    // Powers of two (and signs): every product is exact, so the order cannot show.
    let iff = |r: usize, i: usize| {
        let h = mix(r, i, 8);
        let sign = if h.is_multiple_of(2) { 1.0 } else { -1.0 };
        sign * 2f64.powi((h >> 1) as i32 % 11 - 5)
    };
    for team in teams(&SOME_PS) {
        let c = counts(team.size());
        let algs = algorithms();
        check(&team, &algs, &c, &iu, &op::Prod, &fu, "prod u64");
        check(&team, &algs, &c, &ii, &op::Prod, &fi, "prod i32");
        check(&team, &algs, &c, &iff, &op::Prod, &ff, "prod f64");
    }
}

#[test]
fn min_max_integers() {
    let iu = |r: usize, i: usize| mix(r, i, 9);
    let ii = |r: usize, i: usize| mix(r, i, 10) as i32;
    for team in teams(&SOME_PS) {
        let c = counts(team.size());
        let algs = algorithms();
        check(
            &team,
            &algs,
            &c,
            &iu,
            &op::Min,
            &|a: u64, b| a.min(b),
            "min u64",
        );
        check(
            &team,
            &algs,
            &c,
            &iu,
            &op::Max,
            &|a: u64, b| a.max(b),
            "max u64",
        );
        check(
            &team,
            &algs,
            &c,
            &ii,
            &op::Min,
            &|a: i32, b| a.min(b),
            "min i32",
        );
        check(
            &team,
            &algs,
            &c,
            &ii,
            &op::Max,
            &|a: i32, b| a.max(b),
            "max i32",
        );
    }
}

/// −0.0 and +0.0, infinities, NaNs of both signs and several payloads: `Min` and `Max` order
/// them by `total_cmp`, which makes the result independent of the order of combination, so
/// every rank must get the reference's bits.
#[test]
fn min_max_f64_signed_zeros_and_nans() {
    let specials = [
        0.0,
        -0.0,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001),
        f64::from_bits(0xfff8_0000_0000_0042),
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.5,
        -1.5,
        f64::MIN_POSITIVE,
    ];
    let input = move |r: usize, i: usize| {
        let h = mix(r, i, 11);
        if h.is_multiple_of(4) {
            float(r, i, 12)
        } else {
            specials[(h >> 2) as usize % specials.len()]
        }
    };
    let min = |a: f64, b: f64| if b.total_cmp(&a).is_lt() { b } else { a };
    let max = |a: f64, b: f64| if b.total_cmp(&a).is_gt() { b } else { a };
    for team in teams(&SOME_PS) {
        let c = counts(team.size());
        let algs = algorithms();
        check(&team, &algs, &c, &input, &op::Min, &min, "min f64");
        check(&team, &algs, &c, &input, &op::Max, &max, "max f64");
    }
    let team5 = team(5);
    check(
        &team5,
        &algorithms(),
        &[LONG],
        &input,
        &op::Max,
        &max,
        "long max f64",
    );
    // Only zeros of both signs: the minimum is −0.0 exactly when some rank has −0.0.
    let zeros = |r: usize, i: usize| if (r + i) % 5 == 3 { -0.0 } else { 0.0 };
    let team = team(4);
    let algs = algorithms();
    check(&team, &algs, &[1, 3, 7], &zeros, &op::Min, &min, "min ±0");
    check(&team, &algs, &[1, 3, 7], &zeros, &op::Max, &max, "max ±0");
}

#[test]
fn bitwise_and_logical_ops() {
    let iu = |r: usize, i: usize| mix(r, i, 13);
    // Mostly ones for And, mostly zeros for Or, so that neither is trivially 0 or all ones.
    let dense = |r: usize, i: usize| mix(r, i, 14) | mix(r, i, 15) | mix(r, i, 16);
    let sparse = |r: usize, i: usize| mix(r, i, 17) & mix(r, i, 18) & mix(r, i, 19);
    let ib = |r: usize, i: usize| !mix(r, i, 20).is_multiple_of(3);
    let ib_rare = |r: usize, i: usize| mix(r, i, 21).is_multiple_of(23);
    let iw = |r: usize, i: usize| (mix(r, i, 22) % 4) as u8;
    for team in teams(&SOME_PS) {
        let c = counts(team.size());
        let algs = algorithms();
        check(
            &team,
            &algs,
            &c,
            &iu,
            &op::BitXor,
            &|a: u64, b| a ^ b,
            "xor u64",
        );
        check(
            &team,
            &algs,
            &c,
            &dense,
            &op::BitAnd,
            &|a: u64, b| a & b,
            "and u64",
        );
        check(
            &team,
            &algs,
            &c,
            &sparse,
            &op::BitOr,
            &|a: u64, b| a | b,
            "or u64",
        );
        check(
            &team,
            &algs,
            &c,
            &ib,
            &op::BitXor,
            &|a: bool, b| a ^ b,
            "xor bool",
        );
        check(
            &team,
            &algs,
            &c,
            &ib,
            &op::BitAnd,
            &|a: bool, b| a & b,
            "and bool",
        );
        check(
            &team,
            &algs,
            &c,
            &ib_rare,
            &op::BitOr,
            &|a: bool, b| a | b,
            "or bool",
        );
        check(
            &team,
            &algs,
            &c,
            &ib,
            &op::LogicalAnd,
            &|a: bool, b| a && b,
            "land",
        );
        check(
            &team,
            &algs,
            &c,
            &ib_rare,
            &op::LogicalOr,
            &|a: bool, b| a || b,
            "lor",
        );
        let land = |a: u8, b: u8| u8::from(a != 0 && b != 0);
        let lor = |a: u8, b: u8| u8::from(a != 0 || b != 0);
        check(&team, &algs, &c, &iw, &op::LogicalAnd, &land, "land u8");
        check(&team, &algs, &c, &iw, &op::LogicalOr, &lor, "lor u8");
    }
    let team = team(5);
    let algs = algorithms();
    check(
        &team,
        &algs,
        &[LONG],
        &iu,
        &op::BitXor,
        &|a: u64, b| a ^ b,
        "long xor",
    );
    check(
        &team,
        &algs,
        &[LONG],
        &ib,
        &op::LogicalAnd,
        &|a: bool, b| a && b,
        "long land",
    );
}

/// Rank r contributes the span (r, r + 1) in every element; the op refuses spans that are not
/// adjacent, so the only possible result is (0, p), reached by combining in rank order.
#[test]
fn non_commutative_spans_every_ordered_algorithm() {
    let input = |r: usize, _i: usize| (r as u32, r as u32 + 1);
    let f = |a: (u32, u32), b: (u32, u32)| (a.0, b.1);
    for team in teams(&all_ps()) {
        let c = counts(team.size());
        check(&team, &ordered(), &c, &input, &span_op(), &f, "spans");
    }
    for team in teams(&[3, 8]) {
        check(
            &team,
            &ordered(),
            &[LONG],
            &input,
            &span_op(),
            &f,
            "long spans",
        );
    }
}

/// The ring cannot keep the rank order: with a non-commutative op every rank gets
/// `Unsupported` (another rank's refusal may reach it first, as the cause of an `Aborted`).
/// `Auto` never picks the ring for such an op, even for long vectors.
#[test]
fn ring_refuses_non_commutative_ops_on_every_rank() {
    for team in teams(&[1, 2, 3, 8, 33]) {
        let p = team.size();
        for n in [0, 5, LONG] {
            let out = team
                .run(|comm| {
                    let r = comm.rank() as u32;
                    let mut v = vec![(r, r + 1); n];
                    comm.allreduce_with(&mut v, span_op(), Algorithm::Ring { block: Block::Auto })
                })
                .unwrap();
            for (r, res) in out.into_iter().enumerate() {
                let e = res.expect_err("the ring accepted a non-commutative op");
                match e.root_cause() {
                    Error::Unsupported { op, what, .. } => {
                        assert_eq!(*op, "allreduce");
                        assert!(what.contains("ring"), "{e}");
                    }
                    other => panic!("p = {p} n = {n} rank {r}: {other}"),
                }
            }
        }
    }
    let team = team(4);
    let f = |a: (u32, u32), b: (u32, u32)| (a.0, b.1);
    let input = |r: usize, _i: usize| (r as u32, r as u32 + 1);
    check(
        &team,
        &[Algorithm::Auto],
        &[100_003],
        &input,
        &span_op(),
        &f,
        "auto",
    );
}
