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

#[path = "allreduce/blocks.rs"]
mod blocks;
#[path = "allreduce/ops.rs"]
mod ops;
#[path = "allreduce/semantics.rs"]
mod semantics;
