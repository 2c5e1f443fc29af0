//! The allreduce reference suite: every algorithm against a sequential fold computed here.
//!
//! **Algorithms** ([`ALGORITHMS`], the one list every test draws from): `Auto`, `Linear`,
//! `Chain`, `Binomial`, `RecursiveDoubling`, `Rabenseifner`, `Ring`, `Direct`, and
//! `PipelinedTree`, `DualRoot` and `TwoTree` each with blocks of 1 and 7 elements and `Auto`
//! (`Chain` and `Ring` cut the automatic segment), and `Hierarchical` (on these teams, placed
//! on the detected machine, usually one group; tests/hierarchy.rs runs it on described ones).
//!
//! **The full matrix** (`sum_i64_full_matrix_*`, `matrix_full_matrix_*`, split by rank count
//! so that the test harness runs them in parallel): every algorithm × p ∈ 1..=17 ∪ {31, 33}
//! × count ∈ {0, 1, 2, p − 1, p + 1, 1000} (deduplicated) for wrapping `Sum` on `i64`
//! (exact) and for a non-commutative op, the product of 2×2 integer matrices that differ per
//! rank and element, which every algorithm but the ring must compute in rank order and the
//! ring must refuse with `Unsupported` on every rank. The count 65 537 runs at
//! p ∈ {1, 2, 3, 6, 7, 16, 17, 33} ([`LONG_PS`]: one rank, a pair, the smallest odd p,
//! full dual-root and post-order trees, a power of two and one more, and 33 oversubscribed);
//! at all nineteen p the matrix would take about three times as long.
//!
//! **Sampled** (the other ops at p ∈ {1, 2, 3, 5, 8, 17}, [`SOME_PS`], with the counts up
//! to 1000; every algorithm): `Sum` on `f64` of small integers (exact) and of arbitrary values
//! (also 24 583 elements; bit-identical on all ranks, the left fold exactly for `Linear` and
//! `Direct`, within the rounding bound for the others), `Max` and `Min` on `u64`, `i32` and on
//! `f64` with −0.0, +0.0, infinities and NaNs, `BitXor` on `u64` and the other bitwise and
//! logical ops on integers and `bool`, wrapping `Prod` on integers and exact `Prod` on `f64`,
//! wrapping `Sum` on `i32`; the count 65 537 at one p (5 or 7) for `Sum` on `i32` and `f64`,
//! `Max` on `f64`, `BitXor` and `LogicalAnd`. Adjacent spans, an op that panics on operands
//! out of rank order, at all nineteen p (65 537 at p = 3 and 8). Long vectors whose chunks
//! straddle 64 KiB block boundaries at p ∈ {2, 3, 5, 8} (33 for three algorithms), for the
//! algorithms whose block is automatic.
//!
//! **One-element blocks** run counts above 1000 only on up to 3 ranks ([`feasible`]): 65 537
//! blocks of one element on 33 oversubscribed ranks take seconds per call in a debug build.
//!
//! **Semantics and bad input**: bit-identical results run after run (float sums of 1000 and
//! 65 537 elements, p ∈ {3, 17, 33}; at 33 the ring and the newest schedules only); `Auto`
//! never picks the ring for a non-commutative op; `allreduce_into` leaves `send` alone;
//! `send` and `recv` of different lengths, ranks passing different lengths (short, long and
//! block-boundary counts) and ranks choosing different algorithms or blocks all fail on every
//! rank, with a mismatch or the invalid argument as the root cause, without a hang (every team
//! times out after 30 s); allreduces in a row on one communicator and on split
//! sub-communicators whose rank order is not the team's.
//!
//! **Property test**: random p ∈ 1..=33, count ∈ 0..=3000, algorithm, block (1..=64 or
//! `Auto`) and inputs, in place or through `allreduce_into` (which always runs `Auto`), with
//! the matrix product, against the reference ([`PROPTEST_CASES`] cases).
//!
//! Teams larger than the machine's cores (it has 2) must still finish promptly. Budget: the
//! whole file should take at most 2–3 minutes of wall time in a debug build on an idle 2-core
//! machine (CI runs it twice); time it before adding to it.
//!
//! Debugging aid: `CORECOLL_TEST_SKIP=dual-root,two-tree,direct` (names as
//! `Algorithm::name`, comma-separated) leaves those algorithms out of every test, e.g. while
//! one of them is being written. Never set it in CI.

mod common;

use common::{mix, team};
use corecoll::op::{self, Op};
use corecoll::{Algorithm, Block, Comm, Error, Team};
use proptest::prelude::*;
use std::fmt::Debug;
use std::sync::OnceLock;

/// Rank counts of the full matrix: 1..=17, 31 and 33 (the last ones oversubscribe a
/// small machine many times over).
fn all_ps() -> Vec<usize> {
    (1..=17).chain([31, 33]).collect()
}

/// Rank counts of the sweeps of the less central ops (a sample of [`all_ps`]: the smallest,
/// odd and even, a power of two, and one above a power of two, oversubscribed; the full
/// matrices run every algorithm at 31 to 33).
const SOME_PS: [usize; 6] = [1, 2, 3, 5, 8, 17];

/// Rank counts at which the full matrix also runs the long count [`LONG`].
const LONG_PS: [usize; 8] = [1, 2, 3, 6, 7, 16, 17, 33];

/// Cases of the property test.
const PROPTEST_CASES: u32 = 256;

/// The long count of the full matrix (an odd number just past 2¹⁶).
const LONG: usize = 65_537;

/// The largest count run with pipeline blocks of one element on more than
/// [`MAX_P_LONG_BLOCK_1`] ranks, and the longest on those: one-element blocks mean one
/// message per element and edge, so 65 537 of them cost about 0.5 s per call on 3 ranks but
/// 3 s on 33 oversubscribed ranks (debug build, busy machine), too slow for every long count
/// and rank count.
const MAX_COUNT_BLOCK_1: usize = 1000;

/// The most ranks on which one-element blocks run counts up to [`LONG`] (so that the deepest
/// pipelines, 65 538 blocks, are tested somewhere).
const MAX_P_LONG_BLOCK_1: usize = 2;

/// Every algorithm the suite runs, in one list: every variant of [`Algorithm`], the three
/// tree-shaped ones that take a pipeline block each with blocks of 1 and 7 elements and
/// `Auto`'s (`Chain` and `Ring` with `Auto`'s here; their explicit blocks are tested beside
/// their schedules, `src/algorithms/allreduce/{chain,ring}.rs`). Filtered by `CORECOLL_TEST_SKIP` (see
/// [`algorithms`]).
const ALGORITHMS: [Algorithm; 18] = [
    Algorithm::Auto,
    Algorithm::Linear,
    Algorithm::Chain { block: Block::Auto },
    Algorithm::Binomial,
    Algorithm::RecursiveDoubling,
    Algorithm::Rabenseifner,
    Algorithm::Ring { block: Block::Auto },
    Algorithm::PipelinedTree {
        block: Block::Elements(1),
    },
    Algorithm::PipelinedTree {
        block: Block::Elements(7),
    },
    Algorithm::PipelinedTree { block: Block::Auto },
    Algorithm::DualRoot {
        block: Block::Elements(1),
    },
    Algorithm::DualRoot {
        block: Block::Elements(7),
    },
    Algorithm::DualRoot { block: Block::Auto },
    Algorithm::TwoTree {
        block: Block::Elements(1),
    },
    Algorithm::TwoTree {
        block: Block::Elements(7),
    },
    Algorithm::TwoTree { block: Block::Auto },
    Algorithm::Direct,
    Algorithm::Hierarchical {
        segment: Block::Auto,
    },
];

/// The algorithm names (`Algorithm::name`) listed, comma-separated, in the environment
/// variable `CORECOLL_TEST_SKIP`: a debugging aid, read once.
fn skipped() -> &'static [String] {
    static SKIPPED: OnceLock<Vec<String>> = OnceLock::new();
    SKIPPED.get_or_init(|| {
        let names: Vec<String> = std::env::var("CORECOLL_TEST_SKIP")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if !names.is_empty() {
            eprintln!("CORECOLL_TEST_SKIP: not testing {}", names.join(", "));
        }
        names
    })
}

/// [`ALGORITHMS`] without those named in `CORECOLL_TEST_SKIP`.
fn algorithms() -> Vec<Algorithm> {
    ALGORITHMS
        .into_iter()
        .filter(|a| !skipped().iter().any(|s| s == a.name()))
        .collect()
}

/// Whether `alg` must honour a non-commutative op (all but the ring; `Auto` must pick one
/// that does).
fn keeps_order(alg: Algorithm) -> bool {
    !matches!(alg, Algorithm::Ring { .. })
}

/// The algorithms of [`algorithms`] that accept a non-commutative op.
fn ordered() -> Vec<Algorithm> {
    algorithms()
        .into_iter()
        .filter(|&a| keeps_order(a))
        .collect()
}

/// The pipeline block `alg` was given, if it takes one.
fn block_of(alg: Algorithm) -> Option<Block> {
    match alg {
        Algorithm::Chain { block }
        | Algorithm::Ring { block }
        | Algorithm::PipelinedTree { block }
        | Algorithm::DualRoot { block }
        | Algorithm::TwoTree { block } => Some(block),
        _ => None,
    }
}

/// Whether `alg` cuts vectors into pipeline blocks of one element.
fn one_element_blocks(alg: Algorithm) -> bool {
    block_of(alg) == Some(Block::Elements(1))
}

/// Whether the count `n` is not too long for `alg` on `p` ranks: with one-element blocks,
/// counts above [`MAX_COUNT_BLOCK_1`] run only on up to [`MAX_P_LONG_BLOCK_1`] ranks and only
/// up to [`LONG`].
fn feasible_count(alg: Algorithm, p: usize, n: usize) -> bool {
    let max = match (one_element_blocks(alg), p <= MAX_P_LONG_BLOCK_1) {
        (false, _) => usize::MAX,
        (true, true) => LONG,
        (true, false) => MAX_COUNT_BLOCK_1,
    };
    n <= max
}

/// `counts` without those too long for `alg` on `p` ranks ([`feasible_count`]).
fn feasible(alg: Algorithm, p: usize, counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .copied()
        .filter(|&n| feasible_count(alg, p, n))
        .collect()
}

/// Elements of a `u64` pipeline block (64 KiB).
const BLOCK_U64: usize = (64 << 10) / 8;

/// The full matrix's counts on `p` ranks but the long one: 0, 1, 2, p − 1, p + 1 and 1000,
/// deduplicated.
fn counts(p: usize) -> Vec<usize> {
    let mut c = vec![0, 1, 2, p - 1, p + 1, 1000];
    c.sort_unstable();
    c.dedup();
    c
}

/// The full matrix's counts on `p` ranks, [`counts`] and [`LONG`], the long one only at the rank
/// counts of [`LONG_PS`].
fn full_counts(p: usize) -> Vec<usize> {
    let mut c = counts(p);
    if LONG_PS.contains(&p) {
        c.push(LONG);
    }
    c
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
    /// Whether `self` and `other` have the same value, bit for bit.
    fn same(&self, other: &Self) -> bool;
}

/// Implements [`Same`] by `==` for types whose equality is bitwise.
macro_rules! same_by_eq {
    ($($t:ty),*) => {$(
        impl Same for $t {
            fn same(&self, other: &Self) -> bool {
                self == other
            }
        }
    )*};
}
same_by_eq!(u8, u32, u64, i32, i64, bool, (u32, u32), [u32; 4]);

impl Same for f64 {
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

/// Whether every element of `a` and `b` is the same bit for bit.
fn same_vec<T: Same>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
}

/// Every rank's input of `n` elements: `[rank][i] → input(rank, i)`.
fn rank_inputs<T>(p: usize, n: usize, input: &dyn Fn(usize, usize) -> T) -> Vec<Vec<T>> {
    (0..p)
        .map(|r| (0..n).map(|i| input(r, i)).collect())
        .collect()
}

/// The sequential reference of the ranks' `inputs`: element-wise `x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}`,
/// folded left to right.
fn fold_ranks<T: Copy>(inputs: &[Vec<T>], f: &dyn Fn(T, T) -> T) -> Vec<T> {
    let (first, rest) = inputs.split_first().expect("at least one rank");
    first
        .iter()
        .enumerate()
        .map(|(i, &x)| rest.iter().fold(x, |acc, v| f(acc, v[i])))
        .collect()
}

/// The sequential reference: element-wise `x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}`, folded left to right.
fn reference<T: Copy>(
    p: usize,
    n: usize,
    input: &dyn Fn(usize, usize) -> T,
    f: &dyn Fn(T, T) -> T,
) -> Vec<T> {
    fold_ranks(&rank_inputs(p, n, input), f)
}

/// One count of a check: every rank's input and the sequential reference, made once per team
/// and shared by all the algorithms run on it (in a debug build, making them again for each
/// algorithm cost as much as a fifth of the suite's time).
struct Case<T> {
    /// The count.
    n: usize,
    /// `inputs[r]`: rank r's vector.
    inputs: Vec<Vec<T>>,
    /// The reference: the left-to-right fold of the inputs with the checked op.
    want: Vec<T>,
}

/// The [`Case`]s of `counts` on `p` ranks that at least one of `algs` runs ([`feasible`]),
/// rank r's element i being `input(r, i)` and the reference the fold with `f`.
fn cases<T: Copy>(
    p: usize,
    algs: &[Algorithm],
    counts: &[usize],
    input: &dyn Fn(usize, usize) -> T,
    f: &dyn Fn(T, T) -> T,
) -> Vec<Case<T>> {
    counts
        .iter()
        .copied()
        .filter(|&n| algs.iter().any(|&a| feasible_count(a, p, n)))
        .map(|n| {
            let inputs = rank_inputs(p, n, input);
            let want = fold_ranks(&inputs, f);
            Case { n, inputs, want }
        })
        .collect()
}

/// Runs one allreduce per case of `cases` that is [`feasible`] for `alg` (in a row, on one
/// communicator) with `alg` and `op`, each rank on a copy of its input; returns each case run
/// with its results, `[rank] → result`.
fn run_cases<'c, T: Same, O: Op<T>>(
    team: &Team,
    alg: Algorithm,
    cases: &'c [Case<T>],
    op: &O,
) -> Vec<(&'c Case<T>, Vec<Vec<T>>)> {
    let p = team.size();
    let cases: Vec<&Case<T>> = cases
        .iter()
        .filter(|c| feasible_count(alg, p, c.n))
        .collect();
    let out = team
        .run(|comm| -> Result<Vec<Vec<T>>, Error> {
            let r = comm.rank();
            cases
                .iter()
                .map(|c| {
                    let mut v = c.inputs[r].clone();
                    comm.allreduce_with(&mut v, op, alg)?;
                    Ok(v)
                })
                .collect()
        })
        .unwrap_or_else(|e| panic!("{alg:?} on {p} ranks: {e}"));
    let mut per_rank: Vec<Vec<Vec<T>>> = out
        .into_iter()
        .enumerate()
        .map(|(r, res)| res.unwrap_or_else(|e| panic!("{alg:?} on {p} ranks, rank {r}: {e}")))
        .collect();
    let mut got: Vec<Vec<Vec<T>>> = vec![Vec::with_capacity(p); cases.len()];
    for rank_results in &mut per_rank {
        for (k, v) in rank_results.drain(..).enumerate() {
            got[k].push(v);
        }
    }
    cases.into_iter().zip(got).collect()
}

/// Checks `op` with each of `algs` on `team` against the sequential fold with `f`
/// (`a ⊙ b = f(a, b)`), bit for bit on every rank, for every count in `counts` that is
/// [`feasible`] for the algorithm.
fn check<T: Same, O: Op<T>>(
    team: &Team,
    algs: &[Algorithm],
    counts: &[usize],
    input: &(dyn Fn(usize, usize) -> T + Sync),
    op: &O,
    f: &dyn Fn(T, T) -> T,
    what: &str,
) {
    let p = team.size();
    let cases = cases(p, algs, counts, input, f);
    for &alg in algs {
        for (case, per_rank) in run_cases(team, alg, &cases, op) {
            let (n, want) = (case.n, &case.want);
            for (r, v) in per_rank.iter().enumerate() {
                if !same_vec(v, want) {
                    let i = (0..n).find(|&i| v.get(i).is_none_or(|x| !x.same(&want[i])));
                    panic!(
                        "{what}, {alg:?}, p = {p}, n = {n}, rank {r}: first difference at \
                         {i:?}: got {:?}, want {:?}",
                        i.and_then(|i| v.get(i)),
                        i.map(|i| want[i]),
                    );
                }
            }
        }
    }
}

/// Checks that `alg`, which cannot keep a non-commutative op's order, refuses `op` with
/// `Unsupported` on every rank (another rank's refusal may reach a rank first, as the cause
/// of an `Aborted`), for every count in `counts`.
fn check_refused<T: Same, O: Op<T>>(
    team: &Team,
    alg: Algorithm,
    counts: &[usize],
    input: &(dyn Fn(usize, usize) -> T + Sync),
    op: &O,
    what: &str,
) {
    let p = team.size();
    for &n in counts {
        let out = team
            .run(|comm| {
                let mut v: Vec<T> = (0..n).map(|i| input(comm.rank(), i)).collect();
                comm.allreduce_with(&mut v, op, alg)
            })
            .unwrap_or_else(|e| panic!("{alg:?} on {p} ranks: {e}"));
        for (r, res) in out.into_iter().enumerate() {
            let e = res.expect_err(&format!(
                "{what}, p = {p}, n = {n}, rank {r}: {alg:?} accepted a non-commutative op"
            ));
            match e.root_cause() {
                Error::Unsupported { op, what: why, .. } => {
                    assert_eq!(*op, "allreduce");
                    assert!(why.contains(alg.name()), "{e}");
                }
                other => panic!("{what}, {alg:?}, p = {p}, n = {n}, rank {r}: {other}"),
            }
        }
    }
}

/// [`check`] for a non-commutative `op`: the left-to-right fold in rank order with those of
/// `algs` that [keep the order](keeps_order), [`check_refused`] with the others.
fn check_ordered<T: Same, O: Op<T>>(
    team: &Team,
    algs: &[Algorithm],
    counts: &[usize],
    input: &(dyn Fn(usize, usize) -> T + Sync),
    op: &O,
    f: &dyn Fn(T, T) -> T,
    what: &str,
) {
    let (keep, refuse): (Vec<Algorithm>, Vec<Algorithm>) =
        algs.iter().partition(|&&a| keeps_order(a));
    check(team, &keep, counts, input, op, f, what);
    for alg in refuse {
        check_refused(team, alg, counts, input, op, what);
    }
}

/// One team per rank count in `ps`, each made when the previous one is done with (so that
/// the threads of only one team exist at a time).
fn teams(ps: &[usize]) -> impl Iterator<Item = Team> + '_ {
    ps.iter().map(|&p| team(p))
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

/// The non-commutative op of 2×2 matrix products ([`matmul`]).
fn matrix_op() -> impl Op<[u32; 4]> + Copy {
    op::non_commutative(|a: &[u32; 4], b: &[u32; 4]| matmul(*a, *b))
}

/// A matrix for rank r, element i: small entries, so that the products do not commute.
fn matrix(r: usize, i: usize, salt: u64) -> [u32; 4] {
    let h = mix(r, i, salt);
    [0, 16, 32, 48].map(|s| ((h >> s) & 0xffff) as u32 % 7)
}

/// The full matrix for `Sum` on `i64` (wrapping, so exact whatever the order) at the rank
/// counts `ps`: every algorithm × every count of [`full_counts`].
fn sum_i64_full_matrix(ps: &[usize]) {
    let algs = algorithms();
    let input = |r: usize, i: usize| mix(r, i, 1) as i64;
    for team in teams(ps) {
        let c = full_counts(team.size());
        check(
            &team,
            &algs,
            &c,
            &input,
            &op::Sum,
            &|a: i64, b| a.wrapping_add(b),
            "sum i64",
        );
    }
}

#[test]
fn sum_i64_full_matrix_p_1_to_9() {
    sum_i64_full_matrix(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
}

/// Above 9 ranks the sum's matrix samples the rank counts (a power of two, the ranks around
/// it, one far above it with no long count); the matrices' product, whose order mistakes show,
/// runs every one.
#[test]
fn sum_i64_full_matrix_p_10_to_31() {
    sum_i64_full_matrix(&[11, 16, 17, 31]);
}

/// The full matrix for the non-commutative product of 2×2 matrices that differ per rank and
/// per element at the rank counts `ps`: every algorithm × every count of [`full_counts`],
/// against the sequential product in rank order; the ring refuses on every rank.
fn matrix_full_matrix(ps: &[usize]) {
    let algs = algorithms();
    let input = |r: usize, i: usize| matrix(r, i, 23);
    for team in teams(ps) {
        let c = full_counts(team.size());
        check_ordered(&team, &algs, &c, &input, &matrix_op(), &matmul, "matrices");
    }
}

#[test]
fn matrix_full_matrix_p_1_to_9() {
    matrix_full_matrix(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
}

#[test]
fn matrix_full_matrix_p_10_to_17() {
    matrix_full_matrix(&[10, 11, 12, 13, 14, 15, 16, 17]);
}

#[test]
fn matrix_full_matrix_p_31_and_33() {
    matrix_full_matrix(&[31, 33]);
}

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
    for team in teams(&[2, 3, 5, 8, 33]) {
        let p = team.size();
        let cases = [
            (0, p - 1, 1),
            (1, 0, 1),
            (2, p - 1, 7),
            (p + 1, 1, 1),
            (1001, p / 2, p),
            // Segmented: one block per chunk against a block and one element.
            (p * BLOCK_U64, 0, 1),
            (p * BLOCK_U64, p - 1, 1),
            // One block per chunk against almost two.
            (p * BLOCK_U64, 1, p * (BLOCK_U64 - 1)),
        ];
        for alg in algorithms() {
            for (n, long, extra) in cases {
                lengths_differ(&team, alg, n, long, extra);
            }
        }
    }
}

/// Rank 1 picks another algorithm, or the same with another block size, than the others:
/// every rank fails, with a mismatch as the first failure. (`Auto` is left out: it
/// legitimately agrees with the algorithm it picks; so is `Hierarchical`, which on these
/// teams, one group each, is `Auto`'s flat choice. tests/hierarchy.rs checks its mismatches
/// on machines with several groups.)
#[test]
fn different_algorithms_on_different_ranks_fail_everywhere() {
    let explicit: Vec<Algorithm> = algorithms()
        .into_iter()
        .filter(|&a| a != Algorithm::Auto && !matches!(a, Algorithm::Hierarchical { .. }))
        .collect();
    for team in teams(&[2, 3, 5, 17]) {
        let p = team.size();
        for a in &explicit {
            for b in &explicit {
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
    let (all, ord) = (algorithms(), ordered());
    let alg = |j: usize| all[(k + j) % all.len()];
    let ordered = |j: usize| ord[(k + j) % ord.len()];
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
    // The next algorithm from the fifth on that runs so long a vector (see `feasible`).
    let long = (4..)
        .map(alg)
        .find(|&a| !feasible(a, p, &[v.len()]).is_empty())
        .unwrap();
    comm.allreduce_with(&mut v, op::BitXor, long)?;
    assert_eq!(v, reference(p, v.len(), &x, &|a, b| a ^ b), "xor");
    Ok(())
}

#[test]
fn several_in_a_row_on_one_communicator() {
    for team in teams(&[1, 3, 8]) {
        team.run(|comm| {
            for k in 0..algorithms().len() {
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
                    sub.allreduce_with(
                        &mut e,
                        first_last,
                        Algorithm::Chain { block: Block::Auto },
                    )?;
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
    for team in teams(&[3, 17]) {
        let p = team.size();
        let algs = algorithms();
        // Long vectors on 3 ranks; 17 oversubscribed ranks repeat the short one.
        let lens: &[usize] = if p <= 3 { &[1000, LONG] } else { &[1000] };
        let cases = cases(p, &algs, lens, &input, &|a, b| a + b);
        for &alg in &algs {
            let first = run_cases(&team, alg, &cases, &op::Sum);
            let second = run_cases(&team, alg, &cases, &op::Sum);
            for ((case, a), (_, b)) in first.iter().zip(&second) {
                for r in 0..p {
                    assert!(
                        same_vec(&a[r], &a[0]),
                        "{alg:?} p = {p}: rank {r} vs rank 0"
                    );
                    assert!(
                        same_vec(&a[r], &b[r]),
                        "{alg:?} p = {p} n = {}: rank {r} differs between runs",
                        case.n
                    );
                }
            }
        }
    }
}

/// The algorithm variants the property test draws from: those of [`algorithms`], one entry
/// per variant whatever its block (the block is drawn separately).
fn variants() -> Vec<Algorithm> {
    let mut v = algorithms();
    v.dedup_by_key(|a| a.name());
    v
}

/// `alg` with pipeline block `block` if it takes one (the block is ignored otherwise).
fn with_block(alg: Algorithm, block: Block) -> Algorithm {
    match alg {
        Algorithm::Chain { .. } => Algorithm::Chain { block },
        Algorithm::Ring { .. } => Algorithm::Ring { block },
        Algorithm::PipelinedTree { .. } => Algorithm::PipelinedTree { block },
        Algorithm::DualRoot { .. } => Algorithm::DualRoot { block },
        Algorithm::TwoTree { .. } => Algorithm::TwoTree { block },
        other => other,
    }
}

/// A pipeline block: `Auto` or 1 to 64 elements.
fn any_block() -> impl Strategy<Value = Block> {
    prop_oneof![1 => Just(Block::Auto), 3 => (1usize..=64).prop_map(Block::Elements)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(PROPTEST_CASES))]

    /// Matrix products in rank order for random rank counts, lengths, algorithms, blocks and
    /// inputs, in place (`allreduce_with`) or, one time in four, out of place
    /// (`allreduce_into`, which has no algorithm argument and runs `Auto`); the ring refuses
    /// on every rank.
    #[test]
    fn non_commutative_any_p_count_block_algorithm(
        p in 1usize..=33,
        n in 0usize..=3000,
        variant in prop::sample::select(variants()),
        block in any_block(),
        into in prop::bool::weighted(0.25),
        salt in any::<u64>(),
    ) {
        let alg = if into { Algorithm::Auto } else { with_block(variant, block) };
        let input = |r: usize, i: usize| matrix(r, i, salt);
        let out = team(p).run(|comm| {
            let mine: Vec<[u32; 4]> = (0..n).map(|i| input(comm.rank(), i)).collect();
            if into {
                let mut recv = vec![[u32::MAX; 4]; n];
                comm.allreduce_into(&mine, &mut recv, matrix_op())?;
                assert_eq!(mine, (0..n).map(|i| input(comm.rank(), i)).collect::<Vec<_>>());
                Ok(recv)
            } else {
                let mut v = mine;
                comm.allreduce_with(&mut v, matrix_op(), alg).map(|()| v)
            }
        })
        .unwrap();
        let want = reference(p, n, &input, &matmul);
        for (r, res) in out.into_iter().enumerate() {
            match (keeps_order(alg), res) {
                (false, Err(e)) => prop_assert!(
                    matches!(e.root_cause(), Error::Unsupported { .. }),
                    "rank {}: {}", r, e
                ),
                (false, Ok(_)) => prop_assert!(false, "rank {}: {:?} accepted", r, alg),
                (true, Err(e)) => prop_assert!(false, "{:?}, rank {}: {}", alg, r, e),
                (true, Ok(v)) => prop_assert_eq!(v, want.clone(), "{:?}, rank {}", alg, r),
            }
        }
    }
}
