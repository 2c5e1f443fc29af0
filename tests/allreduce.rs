//! The allreduce reference suite: every algorithm of [`Algorithm`] (`Auto` included) against a
//! sequential fold computed here, over rank counts 1, 2, 3, 4, 5, 7, 8, 9, 16, 17 and 33 (33 is
//! oversubscribed on a small machine), counts 0, 1, p − 1, p + 1, 1001 and a few long vectors
//! (more than one 64 KiB pipeline block per chunk, chunks whose piece counts differ within a
//! step), and the built-in ops: wrapping `Sum` and `Prod` on integers, `Sum` on `f64` (exact
//! for small integers, bit-identical on all ranks and run after run for arbitrary values),
//! `Min` and `Max` with −0.0, +0.0, infinities and NaNs, the bitwise and logical ops on integers
//! and `bool`; non-commutative ops (adjacent spans, 2×2 matrix products) on every algorithm
//! but the ring, which must refuse them on every rank; `allreduce_into`; bad input — send and
//! receive buffers of different lengths, ranks passing different lengths, ranks choosing
//! different algorithms — failing on every rank without a hang; allreduces in a row on one
//! communicator and on split sub-communicators whose ranks are not in team order; and a
//! property test over rank count, length and algorithm with a non-commutative op.

use corecoll::op::{self, Op};
use corecoll::{Algorithm, Block, Comm, Error, Team};
use proptest::prelude::*;
use std::fmt::Debug;
use std::time::Duration;

/// Rank counts of the full sweeps.
const PS: [usize; 11] = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33];
/// Rank counts of the sweeps of the less central ops.
const SOME_PS: [usize; 6] = [1, 2, 3, 5, 8, 17];

/// Every algorithm.
const ALL: [Algorithm; 9] = [
    Algorithm::Auto,
    Algorithm::Linear,
    Algorithm::Chain,
    Algorithm::Binomial,
    Algorithm::RecursiveDoubling,
    Algorithm::Rabenseifner,
    Algorithm::Ring,
    Algorithm::PipelinedTree { block: Block::Auto },
    Algorithm::PipelinedTree {
        block: Block::Elements(3),
    },
];

/// The algorithms that accept a non-commutative op (all but the ring).
const ORDERED: [Algorithm; 8] = [
    Algorithm::Auto,
    Algorithm::Linear,
    Algorithm::Chain,
    Algorithm::Binomial,
    Algorithm::RecursiveDoubling,
    Algorithm::Rabenseifner,
    Algorithm::PipelinedTree { block: Block::Auto },
    Algorithm::PipelinedTree {
        block: Block::Elements(3),
    },
];

/// Elements of a `u64` pipeline block (64 KiB).
const BLOCK_U64: usize = (64 << 10) / 8;

/// The short counts every sweep tries on `p` ranks: 0, 1, p − 1, p + 1 and an odd 1001.
fn counts(p: usize) -> Vec<usize> {
    let mut c = vec![0, 1, p - 1, p + 1, 1001];
    c.sort_unstable();
    c.dedup();
    c
}

/// A well-mixed hash of `(rank, index, salt)` (splitmix64 finaliser).
fn mix(r: usize, i: usize, salt: u64) -> u64 {
    let mut z = (r as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add((i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9))
        .wrapping_add(salt.wrapping_mul(0x94d0_49bb_1331_11eb));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A float of varied sign and magnitude (10⁻³ … 10³), so that the order of additions shows in
/// the last bits.
fn float(r: usize, i: usize, salt: u64) -> f64 {
    let h = mix(r, i, salt);
    let unit = (h >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    unit * 10f64.powi((h % 7) as i32 - 3)
}

/// Equality bit for bit (`==` is not, for floats).
trait Same: Copy + Send + Sync + Debug + 'static {
    fn same(&self, other: &Self) -> bool;
}

macro_rules! same_by_eq {
    ($($t:ty),*) => {$(
        impl Same for $t {
            fn same(&self, other: &Self) -> bool {
                self == other
            }
        }
    )*};
}
same_by_eq!(u8, u32, u64, i32, bool, (u32, u32), [u32; 4]);

impl Same for f64 {
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

/// Whether every element of `a` and `b` is the same bit for bit.
fn same_vec<T: Same>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
}

/// Runs one allreduce per count in `counts` (in a row, on one communicator) with `alg` and
/// `op`, rank r's element i being `input(r, i)`; returns `[count][rank] → result`.
fn run_counts<T: Same, O: Op<T>>(
    team: &Team,
    alg: Algorithm,
    counts: &[usize],
    input: &(dyn Fn(usize, usize) -> T + Sync),
    op: &O,
) -> Vec<Vec<Vec<T>>> {
    let p = team.size();
    let out = team
        .run(|comm| -> Result<Vec<Vec<T>>, Error> {
            let r = comm.rank();
            counts
                .iter()
                .map(|&n| {
                    let mut v: Vec<T> = (0..n).map(|i| input(r, i)).collect();
                    comm.allreduce_with(&mut v, op, alg)?;
                    Ok(v)
                })
                .collect()
        })
        .unwrap_or_else(|e| panic!("{alg:?} on {p} ranks: {e}"));
    let per_rank: Vec<Vec<Vec<T>>> = out
        .into_iter()
        .enumerate()
        .map(|(r, res)| res.unwrap_or_else(|e| panic!("{alg:?} on {p} ranks, rank {r}: {e}")))
        .collect();
    (0..counts.len())
        .map(|k| per_rank.iter().map(|v| v[k].clone()).collect())
        .collect()
}

/// The sequential reference: element-wise `x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}`, folded left to right.
fn reference<T: Copy>(
    p: usize,
    n: usize,
    input: &dyn Fn(usize, usize) -> T,
    f: &dyn Fn(T, T) -> T,
) -> Vec<T> {
    (0..n)
        .map(|i| (1..p).fold(input(0, i), |acc, r| f(acc, input(r, i))))
        .collect()
}

/// Checks `op` with `alg` on `team` against the sequential fold with `f` (`a ⊙ b = f(a, b)`),
/// bit for bit on every rank, for every count in `counts`.
fn check<T: Same, O: Op<T>>(
    team: &Team,
    alg: Algorithm,
    counts: &[usize],
    input: &(dyn Fn(usize, usize) -> T + Sync),
    op: &O,
    f: &dyn Fn(T, T) -> T,
    what: &str,
) {
    let p = team.size();
    let got = run_counts(team, alg, counts, input, op);
    for (&n, per_rank) in counts.iter().zip(&got) {
        let want = reference(p, n, input, f);
        for (r, v) in per_rank.iter().enumerate() {
            if !same_vec(v, &want) {
                let i = (0..n).find(|&i| v.get(i).is_none_or(|x| !x.same(&want[i])));
                panic!(
                    "{what}, {alg:?}, p = {p}, n = {n}, rank {r}: first difference at {i:?}: \
                     got {:?}, want {:?}",
                    i.and_then(|i| v.get(i)),
                    i.map(|i| want[i]),
                );
            }
        }
    }
}

/// A team of `p` ranks whose waits time out, so that a hang fails the test (with a
/// `Timeout` that no check here accepts) instead of stalling it.
fn team(p: usize) -> Team {
    Team::builder()
        .ranks(p)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// One team per rank count in `ps`.
fn teams(ps: &[usize]) -> Vec<Team> {
    ps.iter().map(|&p| team(p)).collect()
}

/// The span op: `(a, b) ⊙ (b, c) = (a, c)`; it panics (failing the run) when the spans are
/// not adjacent, that is when operands come out of rank order.
fn span_op() -> impl Op<(u32, u32)> + Copy {
    op::non_commutative(|a: &(u32, u32), b: &(u32, u32)| {
        assert_eq!(a.1, b.0, "operands out of rank order");
        (a.0, b.1)
    })
}

/// The 2×2 matrix product with wrapping arithmetic, row-major `[a, b, c, d]`.
fn matmul(x: [u32; 4], y: [u32; 4]) -> [u32; 4] {
    let [a, b, c, d] = x;
    let [e, f, g, h] = y;
    [
        a.wrapping_mul(e).wrapping_add(b.wrapping_mul(g)),
        a.wrapping_mul(f).wrapping_add(b.wrapping_mul(h)),
        c.wrapping_mul(e).wrapping_add(d.wrapping_mul(g)),
        c.wrapping_mul(f).wrapping_add(d.wrapping_mul(h)),
    ]
}

fn matrix_op() -> impl Op<[u32; 4]> + Copy {
    op::non_commutative(|a: &[u32; 4], b: &[u32; 4]| matmul(*a, *b))
}

/// A matrix for rank r, element i: small entries, so that the products do not commute.
fn matrix(r: usize, i: usize, salt: u64) -> [u32; 4] {
    let h = mix(r, i, salt);
    [0, 16, 32, 48].map(|s| ((h >> s) & 0xffff) as u32 % 7)
}

#[test]
fn sum_u64_every_algorithm_rank_count_and_short_count() {
    let input = |r: usize, i: usize| mix(r, i, 1);
    for team in teams(&PS) {
        let c = counts(team.size());
        for alg in ALL {
            check(
                &team,
                alg,
                &c,
                &input,
                &op::Sum,
                &|a: u64, b| a.wrapping_add(b),
                "sum u64",
            );
        }
    }
}

/// Long vectors: 100 003 elements (several 64 KiB blocks per chunk), and counts whose chunks
/// straddle a block boundary so that the outgoing and incoming chunks of one ring step take
/// different numbers of pieces, or are exact multiples of a block.
#[test]
fn sum_u64_long_vectors() {
    let input = |r: usize, i: usize| mix(r, i, 2);
    let f = |a: u64, b: u64| a.wrapping_add(b);
    for team in teams(&[2, 3, 5, 8]) {
        let p = team.size();
        let c = [
            100_003,
            p * BLOCK_U64 + 1,
            2 * p * BLOCK_U64,
            p * BLOCK_U64 - 1,
        ];
        for alg in ALL {
            check(&team, alg, &c, &input, &op::Sum, &f, "long sum u64");
        }
    }
    let team = team(33);
    for alg in [Algorithm::Auto, Algorithm::Chain, Algorithm::Ring] {
        check(&team, alg, &[100_003], &input, &op::Sum, &f, "long sum u64");
    }
}

#[test]
fn sum_i32_wraps() {
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
        for alg in ALL {
            check(&team, alg, &c, &input, &op::Sum, &f, "sum i32");
        }
    }
    let team = team(7);
    for alg in ALL {
        check(&team, alg, &[100_003], &input, &op::Sum, &f, "long sum i32");
    }
}

/// Small integers are exact in `f64` whatever the order of additions, so every algorithm must
/// give the left-to-right fold bit for bit (on every rank).
#[test]
fn sum_f64_of_small_integers_is_exact() {
    let input = |r: usize, i: usize| (mix(r, i, 4) % 2001) as f64 - 1000.0;
    let f = |a: f64, b: f64| a + b;
    for team in teams(&PS) {
        let p = team.size();
        let c: Vec<usize> = if p == 33 { vec![1, 34] } else { counts(p) };
        for alg in ALL {
            check(&team, alg, &c, &input, &op::Sum, &f, "sum f64 (integers)");
        }
    }
    let team = team(5);
    for alg in ALL {
        check(&team, alg, &[100_003], &input, &op::Sum, &f, "long sum f64");
    }
}

/// Arbitrary floats: every rank gets the same bits; the linear algorithm (rank 0 folds in rank
/// order) gives exactly the left-to-right fold; the others are within the rounding bound of a
/// sum of p terms.
#[test]
fn sum_f64_bit_identical_on_all_ranks() {
    let input = |r: usize, i: usize| float(r, i, 5);
    for team in teams(&[2, 3, 5, 8, 17]) {
        let p = team.size();
        let c = [1, p + 1, 1001, 3 * BLOCK_U64 + 7];
        for alg in ALL {
            let got = run_counts(&team, alg, &c, &input, &op::Sum);
            for (&n, per_rank) in c.iter().zip(&got) {
                let want = reference(p, n, &input, &|a, b| a + b);
                for (r, v) in per_rank.iter().enumerate() {
                    assert!(
                        same_vec(v, &per_rank[0]),
                        "{alg:?} p = {p} n = {n}: rank {r} differs from rank 0"
                    );
                }
                if alg == Algorithm::Linear {
                    assert!(same_vec(&per_rank[0], &want), "linear is the left fold");
                }
                for (i, (&x, &w)) in per_rank[0].iter().zip(&want).enumerate() {
                    let scale: f64 = (0..p).map(|r| input(r, i).abs()).sum();
                    let bound = 2.0 * p as f64 * f64::EPSILON * scale;
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
        for alg in ALL {
            check(&team, alg, &c, &iu, &op::Prod, &fu, "prod u64");
            check(&team, alg, &c, &ii, &op::Prod, &fi, "prod i32");
            check(&team, alg, &c, &iff, &op::Prod, &ff, "prod f64");
        }
    }
}

#[test]
fn min_max_integers() {
    let iu = |r: usize, i: usize| mix(r, i, 9);
    let ii = |r: usize, i: usize| mix(r, i, 10) as i32;
    for team in teams(&SOME_PS) {
        let c = counts(team.size());
        for alg in ALL {
            check(
                &team,
                alg,
                &c,
                &iu,
                &op::Min,
                &|a: u64, b| a.min(b),
                "min u64",
            );
            check(
                &team,
                alg,
                &c,
                &iu,
                &op::Max,
                &|a: u64, b| a.max(b),
                "max u64",
            );
            check(
                &team,
                alg,
                &c,
                &ii,
                &op::Min,
                &|a: i32, b| a.min(b),
                "min i32",
            );
            check(
                &team,
                alg,
                &c,
                &ii,
                &op::Max,
                &|a: i32, b| a.max(b),
                "max i32",
            );
        }
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
        for alg in ALL {
            check(&team, alg, &c, &input, &op::Min, &min, "min f64");
            check(&team, alg, &c, &input, &op::Max, &max, "max f64");
        }
    }
    let team5 = team(5);
    for alg in ALL {
        check(
            &team5,
            alg,
            &[100_003],
            &input,
            &op::Max,
            &max,
            "long max f64",
        );
    }
    // Only zeros of both signs: the minimum is −0.0 exactly when some rank has −0.0.
    let zeros = |r: usize, i: usize| if (r + i) % 5 == 3 { -0.0 } else { 0.0 };
    let team = team(4);
    for alg in ALL {
        check(&team, alg, &[1, 3, 7], &zeros, &op::Min, &min, "min ±0");
        check(&team, alg, &[1, 3, 7], &zeros, &op::Max, &max, "max ±0");
    }
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
        for alg in ALL {
            check(
                &team,
                alg,
                &c,
                &iu,
                &op::BitXor,
                &|a: u64, b| a ^ b,
                "xor u64",
            );
            check(
                &team,
                alg,
                &c,
                &dense,
                &op::BitAnd,
                &|a: u64, b| a & b,
                "and u64",
            );
            check(
                &team,
                alg,
                &c,
                &sparse,
                &op::BitOr,
                &|a: u64, b| a | b,
                "or u64",
            );
            check(
                &team,
                alg,
                &c,
                &ib,
                &op::BitXor,
                &|a: bool, b| a ^ b,
                "xor bool",
            );
            check(
                &team,
                alg,
                &c,
                &ib,
                &op::BitAnd,
                &|a: bool, b| a & b,
                "and bool",
            );
            check(
                &team,
                alg,
                &c,
                &ib_rare,
                &op::BitOr,
                &|a: bool, b| a | b,
                "or bool",
            );
            check(
                &team,
                alg,
                &c,
                &ib,
                &op::LogicalAnd,
                &|a: bool, b| a && b,
                "land",
            );
            check(
                &team,
                alg,
                &c,
                &ib_rare,
                &op::LogicalOr,
                &|a: bool, b| a || b,
                "lor",
            );
            let land = |a: u8, b: u8| u8::from(a != 0 && b != 0);
            let lor = |a: u8, b: u8| u8::from(a != 0 || b != 0);
            check(&team, alg, &c, &iw, &op::LogicalAnd, &land, "land u8");
            check(&team, alg, &c, &iw, &op::LogicalOr, &lor, "lor u8");
        }
    }
    let team = team(5);
    for alg in ALL {
        check(
            &team,
            alg,
            &[100_003],
            &iu,
            &op::BitXor,
            &|a: u64, b| a ^ b,
            "long xor",
        );
        check(
            &team,
            alg,
            &[100_003],
            &ib,
            &op::LogicalAnd,
            &|a: bool, b| a && b,
            "long land",
        );
    }
}

/// Rank r contributes the span (r, r + 1) in every element; the op refuses spans that are not
/// adjacent, so the only possible result is (0, p), reached by combining in rank order.
#[test]
fn non_commutative_spans_every_ordered_algorithm() {
    let input = |r: usize, _i: usize| (r as u32, r as u32 + 1);
    let f = |a: (u32, u32), b: (u32, u32)| (a.0, b.1);
    for team in teams(&PS) {
        let c = counts(team.size());
        for alg in ORDERED {
            check(&team, alg, &c, &input, &span_op(), &f, "spans");
        }
    }
    for team in teams(&[3, 8]) {
        for alg in ORDERED {
            check(&team, alg, &[100_003], &input, &span_op(), &f, "long spans");
        }
    }
}

/// Products of 2×2 matrices that differ per rank and per element, against the sequential
/// product in rank order.
#[test]
fn non_commutative_matrix_products_every_ordered_algorithm() {
    let input = |r: usize, i: usize| matrix(r, i, 23);
    for team in teams(&PS) {
        let p = team.size();
        let c: Vec<usize> = if p == 33 {
            vec![p - 1, 1001]
        } else {
            counts(p)
        };
        for alg in ORDERED {
            check(&team, alg, &c, &input, &matrix_op(), &matmul, "matrices");
        }
    }
    let team = team(5);
    for alg in ORDERED {
        check(
            &team,
            alg,
            &[20_011],
            &input,
            &matrix_op(),
            &matmul,
            "long matrices",
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
        for n in [0, 5, 100_003] {
            let out = team
                .run(|comm| {
                    let r = comm.rank() as u32;
                    let mut v = vec![(r, r + 1); n];
                    comm.allreduce_with(&mut v, span_op(), Algorithm::Ring)
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
        Algorithm::Auto,
        &[100_003],
        &input,
        &span_op(),
        &f,
        "auto",
    );
}

#[test]
fn allreduce_into_leaves_send_untouched() {
    for p in [1, 4, 7] {
        let out = team(p)
            .run(|comm| -> Result<(Vec<u64>, Vec<u64>), Error> {
                let r = comm.rank();
                let send: Vec<u64> = (0..1001).map(|i| mix(r, i, 24)).collect();
                let mut recv = vec![u64::MAX; 1001];
                comm.allreduce_into(&send, &mut recv, op::BitXor)?;
                Ok((send, recv))
            })
            .unwrap();
        let input = |r: usize, i: usize| mix(r, i, 24);
        let want = reference(p, 1001, &input, &|a, b| a ^ b);
        for (r, res) in out.into_iter().enumerate() {
            let (send, recv) = res.unwrap();
            let mine: Vec<u64> = (0..1001).map(|i| input(r, i)).collect();
            assert_eq!(send, mine, "p = {p}: rank {r}'s send changed");
            assert_eq!(recv, want, "p = {p}: rank {r}'s recv");
        }
    }
}

/// Rank 1 (rank 0 when alone) passes a `recv` one longer than its `send`: it gets
/// `InvalidArgument`; the others, whose calls cannot complete without it, fail with it as
/// the cause.
#[test]
fn allreduce_into_with_mismatched_buffers_fails_everywhere() {
    for p in [1, 2, 5] {
        let bad = 1 % p;
        let out = team(p)
            .run(|comm| {
                let n = 10;
                let send = vec![1u64; n];
                let extra = usize::from(comm.rank() == bad);
                let mut recv = vec![0u64; n + extra];
                comm.allreduce_into(&send, &mut recv, op::Sum)
            })
            .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            let e = res.expect_err("mismatched buffers");
            match e.root_cause() {
                Error::InvalidArgument { rank, op, what } => {
                    assert_eq!((*rank, *op), (bad, "allreduce"));
                    assert!(what.contains("10") && what.contains("11"), "{what}");
                }
                other => panic!("p = {p} rank {r}: {other}"),
            }
            if r == bad {
                assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
            }
        }
    }
}

/// Runs an allreduce in which rank `long` passes `extra` more elements than the others'
/// `n`; every rank must return an error, and the run's first failure must be a mismatch.
fn lengths_differ(team: &Team, alg: Algorithm, n: usize, long: usize, extra: usize) {
    let p = team.size();
    let out = team
        .run(|comm| {
            let len = if comm.rank() == long { n + extra } else { n };
            let mut v = vec![comm.rank() as u64; len];
            comm.allreduce_with(&mut v, op::Sum, alg)
        })
        .unwrap();
    for (r, res) in out.into_iter().enumerate() {
        let e = res.expect_err(&format!(
            "{alg:?} p = {p}: rank {r} succeeded though rank {long} passed {} elements and \
             the others {n}",
            n + extra
        ));
        assert!(
            matches!(e.root_cause(), Error::Mismatch { .. }),
            "{alg:?} p = {p} n = {n} rank {r}: {e}"
        );
    }
}

#[test]
fn different_lengths_on_different_ranks_fail_everywhere() {
    for team in teams(&[2, 3, 5, 8]) {
        let p = team.size();
        let cases = [
            (0, p - 1, 1),
            (1, 0, 1),
            (p + 1, 1, 1),
            (1001, p / 2, p),
            // Segmented: one block per chunk against a block and one element.
            (p * BLOCK_U64, 0, 1),
            (p * BLOCK_U64, p - 1, 1),
            // One block per chunk against almost two.
            (p * BLOCK_U64, 1, p * (BLOCK_U64 - 1)),
        ];
        for alg in ALL {
            for (n, long, extra) in cases {
                lengths_differ(&team, alg, n, long, extra);
            }
        }
    }
}

/// Rank 1 picks another algorithm than the others: every rank fails, with a mismatch as the
/// first failure. (`Auto` is left out: it legitimately agrees with the algorithm it picks.)
#[test]
fn different_algorithms_on_different_ranks_fail_everywhere() {
    for team in teams(&[2, 3, 5]) {
        let p = team.size();
        for a in &ALL[1..] {
            for b in &ALL[1..] {
                if a == b {
                    continue;
                }
                let out = team
                    .run(|comm| {
                        let alg = if comm.rank() == 1 { *b } else { *a };
                        let mut v = vec![comm.rank() as u64; 2 * BLOCK_U64 + 3];
                        comm.allreduce_with(&mut v, op::Sum, alg)
                    })
                    .unwrap();
                for (r, res) in out.into_iter().enumerate() {
                    let e = res.expect_err(&format!("{a:?} against {b:?}, p = {p}, rank {r}"));
                    assert!(
                        matches!(e.root_cause(), Error::Mismatch { .. }),
                        "{a:?} against {b:?}, p = {p}, rank {r}: {e}"
                    );
                }
            }
        }
    }
}

/// One allreduce of each kind on `comm`, `k` choosing algorithms so that consecutive calls use
/// different ones, asserting every result. `id(i)` is the value communicator rank i stands
/// for (its team rank), so that a result in another order than the communicator's shows.
fn several_in_a_row(comm: &Comm, k: usize, id: &dyn Fn(usize) -> u32) -> Result<(), Error> {
    let (r, p) = (comm.rank(), comm.size());
    let alg = |j: usize| ALL[(k + j) % ALL.len()];
    let ordered = |j: usize| ORDERED[(k + j) % ORDERED.len()];
    // Spans in communicator rank order.
    let mut spans = vec![(r as u32, r as u32 + 1); 37];
    comm.allreduce_with(&mut spans, span_op(), ordered(0))?;
    assert!(spans.iter().all(|&s| s == (0, p as u32)), "spans {spans:?}");
    // Matrices of the ids, in communicator rank order.
    let mat = |q: usize, i: usize| matrix(id(q) as usize, i, 25);
    let mut m: Vec<[u32; 4]> = (0..301).map(|i| mat(r, i)).collect();
    comm.allreduce_with(&mut m, matrix_op(), ordered(1))?;
    assert_eq!(m, reference(p, 301, &mat, &matmul), "matrices");
    // A sum, a maximum and a long xor.
    let mut s = vec![u64::from(id(r)); 3];
    comm.allreduce_with(&mut s, op::Sum, alg(2))?;
    let want: u64 = (0..p).map(|q| u64::from(id(q))).sum();
    assert_eq!(s, vec![want; 3], "sum of ids");
    let mut mx = [f64::from(id(r)), -f64::from(id(r))];
    comm.allreduce_with(&mut mx, op::Max, alg(3))?;
    let hi = (0..p).map(id).max().unwrap();
    let lo = (0..p).map(id).min().unwrap();
    assert_eq!(mx, [f64::from(hi), -f64::from(lo)], "max of ids");
    let x = |q: usize, i: usize| mix(id(q) as usize, i, 26);
    let mut v: Vec<u64> = (0..3 * BLOCK_U64 + 5).map(|i| x(r, i)).collect();
    comm.allreduce_with(&mut v, op::BitXor, alg(4))?;
    assert_eq!(v, reference(p, v.len(), &x, &|a, b| a ^ b), "xor");
    Ok(())
}

#[test]
fn several_in_a_row_on_one_communicator() {
    for team in teams(&[1, 3, 8]) {
        team.run(|comm| {
            for k in 0..ALL.len() {
                several_in_a_row(comm, k, &|q| q as u32).unwrap();
            }
        })
        .unwrap();
    }
}

/// Colours r mod 3 interleave the sub-communicators' members; with reversed keys their rank
/// order is the reverse of the team order. Allreduces alternate between the world and the
/// sub-communicator, and the order of the non-commutative ops must be the sub-communicator's.
#[test]
fn several_in_a_row_on_split_sub_communicators() {
    for team in teams(&[5, 9, 17]) {
        let p = team.size();
        for reversed in [false, true] {
            let out = team
                .run(|world| -> Result<(u32, u32), Error> {
                    let r = world.rank();
                    let key = if reversed { p - r } else { r };
                    let sub = world.split(Some(r % 3), key)?.expect("a colour");
                    // The sub-communicator's ranks, in its order, as team ranks: the colour's
                    // members sorted by key.
                    let mut members: Vec<usize> = (0..p).filter(|q| q % 3 == r % 3).collect();
                    if reversed {
                        members.reverse();
                    }
                    assert_eq!(sub.size(), members.len());
                    let id = |i: usize| members[i] as u32;
                    for k in 0..3 {
                        several_in_a_row(&sub, k, &id)?;
                        several_in_a_row(world, k + 1, &|q| q as u32)?;
                    }
                    // The first and last member in the sub-communicator's order.
                    let ends = |i: usize| (id(i), id(i));
                    let mut e = vec![ends(sub.rank())];
                    let first_last =
                        op::non_commutative(|a: &(u32, u32), b: &(u32, u32)| (a.0, b.1));
                    sub.allreduce_with(&mut e, first_last, Algorithm::Chain)?;
                    Ok(e[0])
                })
                .unwrap();
            for (r, res) in out.into_iter().enumerate() {
                let mut members: Vec<u32> =
                    (0..p as u32).filter(|q| *q as usize % 3 == r % 3).collect();
                if reversed {
                    members.reverse();
                }
                let want = (members[0], *members.last().unwrap());
                assert_eq!(
                    res.unwrap(),
                    want,
                    "p = {p}, reversed = {reversed}, rank {r}"
                );
            }
        }
    }
}

/// The same algorithm, rank count and inputs give the same bits run after run (and on every
/// rank), for float sums whose rounding depends on the order of additions.
#[test]
fn deterministic_across_runs() {
    let input = |r: usize, i: usize| float(r, i, 27);
    for team in teams(&[3, 8, 17, 33]) {
        let p = team.size();
        let c = [1001, 2 * p * BLOCK_U64 + 3];
        let algs: &[Algorithm] = if p == 33 { &[Algorithm::Ring] } else { &ALL };
        for &alg in algs {
            let first = run_counts(&team, alg, &c, &input, &op::Sum);
            let second = run_counts(&team, alg, &c, &input, &op::Sum);
            for (k, (a, b)) in first.iter().zip(&second).enumerate() {
                for r in 0..p {
                    assert!(
                        same_vec(&a[r], &a[0]),
                        "{alg:?} p = {p}: rank {r} vs rank 0"
                    );
                    assert!(
                        same_vec(&a[r], &b[r]),
                        "{alg:?} p = {p} n = {}: rank {r} differs between runs",
                        c[k]
                    );
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Matrix products in rank order for random rank counts, lengths, algorithms and inputs;
    /// the ring refuses on every rank.
    #[test]
    fn non_commutative_any_p_count_algorithm(
        p in 1usize..=12,
        n in 0usize..=300,
        alg in prop::sample::select(ALL.to_vec()),
        salt in any::<u64>(),
    ) {
        let input = |r: usize, i: usize| matrix(r, i, salt);
        let out = team(p).run(|comm| {
            let mut v: Vec<[u32; 4]> = (0..n).map(|i| input(comm.rank(), i)).collect();
            comm.allreduce_with(&mut v, matrix_op(), alg).map(|()| v)
        })
        .unwrap();
        let want = reference(p, n, &input, &matmul);
        for (r, res) in out.into_iter().enumerate() {
            match (alg, res) {
                (Algorithm::Ring, Err(e)) => prop_assert!(
                    matches!(e.root_cause(), Error::Unsupported { .. }),
                    "rank {}: {}", r, e
                ),
                (Algorithm::Ring, Ok(_)) => prop_assert!(false, "rank {}: ring accepted", r),
                (_, res) => prop_assert_eq!(res.unwrap(), want.clone(), "rank {}", r),
            }
        }
    }
}
