//! The reduce suite: every algorithm against a sequential fold computed here, through the
//! public API (`Comm::reduce`, `Comm::reduce_with`).
//!
//! **Algorithms** ([`ALGORITHMS`]): `Auto`, `Binomial`, `PipelinedTree` with blocks `Auto`, 1
//! and 7 elements, and `Direct`.
//!
//! **The matrix** (`*_p_1_to_9`, `*_p_10_to_17`, `*_p_31_to_33` per algorithm, so that the
//! harness can run them side by side): p ∈ 1..=17 ∪ {31, 33} × roots (every root for
//! p ≤ 17 at the short counts; 0, 1, p/2, p − 2 and p − 1 otherwise, [`roots`]) × counts
//! {0, 1, 2, p − 1, p + 1, 1000} and 65 537 at [`LONG_PS`] (not with one-element blocks, and
//! with seven-element ones only up to 7 ranks: [`long_ok`]) × four ops, all in one team per
//! p. To keep the calls few, the four ops run at every root as one combined op on tuples
//! ([`mixed_op`]), and each on its own (the built-in `Sum`s among them) at the roots 0, p/2
//! and p − 1:
//!
//! * wrapping `Sum` on `u64` (exact whatever the order);
//! * `Sum` on `f64` of small integers (exact whatever the order, so checked exactly);
//! * the 2×2 `u32` matrix product, rank- and element-dependent matrices: non-commutative, so
//!   it checks rank order whatever the root;
//! * the span op, `(a, b) ⊙ (b, c) = (a, c)`, which panics on operands out of rank order.
//!
//! On the root the result must equal the sequential left fold; on every other rank `buf` must
//! be unchanged.
//!
//! **Also**: many rendezvous-sized and inline pipeline blocks at every root (p ≤ 8); the
//! pipelined tree with blocks of 1 and 3 elements at the roots 0, p/2 and p − 1 of up to 33
//! ranks, non-commutative; `f64` sums of arbitrary values repeatable bit for bit, and the left
//! fold exactly for `Direct`.
//!
//! **Bad input**: a root out of range (on all ranks or on one), different roots, lengths,
//! algorithms or element types on different ranks: `Err` on every rank, no hang (every team
//! times out after 30 s, and a timeout would show as a wrong root cause); an op that panics on
//! the ranks that combine: `Err` on every other rank.
//!
//! Budget: the whole file should take well under a minute of wall time in a debug build on
//! the loaded 2-core machine.

mod common;

use common::{matmul, matrix, matrix_op, mismatch, mix, span_op, team};
use corecoll::algorithm::Reduce;
use corecoll::op::{self, Op};
use corecoll::{Block, Comm, Error};

/// Every algorithm the suite runs.
const ALGORITHMS: [Reduce; 7] = [
    Reduce::Auto,
    Reduce::Binomial,
    Reduce::PipelinedTree { block: Block::Auto },
    Reduce::PipelinedTree {
        block: Block::Elements(1),
    },
    Reduce::PipelinedTree {
        block: Block::Elements(7),
    },
    Reduce::Direct,
    Reduce::Linear,
];

/// Rank counts at which the matrix also runs the long count [`LONG`].
const LONG_PS: [usize; 6] = [1, 2, 3, 7, 16, 33];

/// The long count (an odd number just past 2¹⁶).
const LONG: usize = 65_537;

/// The most ranks on which seven-element blocks run the long count (9 363 blocks per call;
/// on 33 oversubscribed ranks that takes seconds per call in a debug build).
const MAX_P_LONG_BLOCK_7: usize = 7;

/// Whether the long count runs with `alg` at `p` ranks: at [`LONG_PS`], except that
/// one-element blocks never run it (65 537 blocks cost about 3 s per call even on 3 ranks in
/// a debug build; 1000 blocks at every p must do) and seven-element blocks only up to
/// [`MAX_P_LONG_BLOCK_7`] ranks.
fn long_ok(alg: Reduce, p: usize) -> bool {
    let small_blocks = |b| {
        alg == Reduce::PipelinedTree {
            block: Block::Elements(b),
        }
    };
    LONG_PS.contains(&p) && !small_blocks(1) && (!small_blocks(7) || p <= MAX_P_LONG_BLOCK_7)
}

/// The counts run at `p` ranks with `alg`: {0, 1, 2, p − 1, p + 1, 1000}, and [`LONG`] where
/// [`long_ok`].
fn counts(alg: Reduce, p: usize) -> Vec<usize> {
    let mut c = vec![0, 1, 2, p - 1, p + 1, 1000];
    if long_ok(alg, p) {
        c.push(LONG);
    }
    c.sort_unstable();
    c.dedup();
    c
}

/// The roots tried for `n` elements on `p` ranks: all of them for p ≤ 17 and n ≤ p + 1; else
/// the ends, the middle and their neighbours.
fn roots(p: usize, n: usize) -> Vec<usize> {
    let mut r: Vec<usize> = if p <= 17 && n <= p + 1 {
        (0..p).collect()
    } else {
        vec![0, 1 % p, p / 2, p.saturating_sub(2), p - 1]
    };
    r.sort_unstable();
    r.dedup();
    r
}

/// A `u64` input of rank `r`, element `i`.
fn int(r: usize, i: usize) -> u64 {
    mix(r, i, 1)
}

/// An `f64` input of rank `r`, element `i`: a small integer (−512 … 511), so that every sum of
/// up to 33 of them is exact in any order.
fn small_float(r: usize, i: usize) -> f64 {
    (mix(r, i, 2) % 1024) as f64 - 512.0
}

/// The results expected on the root for `n` elements on `p` ranks: the sequential left folds.
struct Expected {
    /// Number of elements.
    n: usize,
    /// Wrapping sums of [`int`].
    sums: Vec<u64>,
    /// Sums of [`small_float`] (exact).
    floats: Vec<f64>,
    /// Products of [`matrix`] in rank order.
    products: Vec<[u32; 4]>,
}

impl Expected {
    /// The sequential folds over ranks 0 … p − 1.
    fn new(p: usize, n: usize) -> Self {
        let sums = (0..n)
            .map(|i| (0..p).fold(0u64, |s, r| s.wrapping_add(int(r, i))))
            .collect();
        let floats = (0..n)
            .map(|i| (0..p).map(|r| small_float(r, i)).sum())
            .collect();
        let products = (0..n)
            .map(|i| (1..p).fold(matrix(0, i), |m, r| matmul(m, matrix(r, i))))
            .collect();
        Expected {
            n,
            sums,
            floats,
            products,
        }
    }
}

/// Runs one reduce of `input(rank, i)` and checks the root's result against `want` and the
/// other ranks' buffers against their input.
fn check_one<T, O>(
    comm: &Comm,
    alg: Reduce,
    root: usize,
    what: &str,
    input: impl Fn(usize, usize) -> T,
    want: &[T],
    op: O,
) -> Result<(), String>
where
    T: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static,
    O: Op<T>,
{
    let (p, r, n) = (comm.size(), comm.rank(), want.len());
    let ctx = || format!("{alg:?}, p = {p}, root {root}, n = {n}, {what}, rank {r}");
    let mut v: Vec<T> = (0..n).map(|i| input(r, i)).collect();
    comm.reduce_with(&mut v, op, root, alg)
        .map_err(|e| format!("{}: {e}", ctx()))?;
    let bad = if r == root {
        v.iter().zip(want).position(|(a, b)| a != b)
    } else {
        v.iter().enumerate().position(|(i, a)| *a != input(r, i))
    };
    match bad {
        None => Ok(()),
        Some(i) => Err(format!(
            "{}: element {i} is {:?}, want {:?}",
            ctx(),
            v[i],
            if r == root { want[i] } else { input(r, i) }
        )),
    }
}

/// One element of every op at once: a wrapping `u64` sum, an `f64` sum, a matrix product and
/// a span, combined component-wise by [`mixed_op`].
type Mixed = (u64, f64, [u32; 4], (u32, u32));

/// The op on [`Mixed`]: all four ops of the suite in one call (non-commutative, and it panics
/// on operands out of rank order).
fn mixed_op() -> impl Op<Mixed> + Copy {
    op::non_commutative(|a: &Mixed, b: &Mixed| {
        assert_eq!(a.3 .1, b.3 .0, "operands out of rank order");
        (
            a.0.wrapping_add(b.0),
            a.1 + b.1,
            matmul(a.2, b.2),
            (a.3 .0, b.3 .1),
        )
    })
}

/// The [`Mixed`] input of rank `r`, element `i`.
fn mixed(r: usize, i: usize) -> Mixed {
    (
        int(r, i),
        small_float(r, i),
        matrix(r, i),
        (r as u32, r as u32 + 1),
    )
}

/// How much of the matrix a test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// Every count and root of the module docs.
    Full,
    /// Only the ends and the middle as roots, no long count except at p = 7 (for `Auto`,
    /// which only picks the other algorithms).
    Light,
}

/// The matrix for `alg` at the rank counts `ps`, one team per p: per count, one call of the
/// combined op ([`mixed_op`]) at every root of [`roots`], and at the roots 0, p/2 and p − 1
/// one call of each built-in op (`Sum` on `u64` and `f64`) and of the matrix and span ops;
/// for the long count, the combined op at those three roots and the others at p/2 only.
fn sweep(alg: Reduce, ps: &[usize], depth: Depth) {
    for &p in ps {
        let started = std::time::Instant::now();
        let mut ns = counts(alg, p);
        if depth == Depth::Light && p != 7 {
            ns.retain(|&n| n != LONG);
        }
        let all: Vec<(Expected, Vec<Mixed>)> = ns
            .into_iter()
            .map(|n| {
                let e = Expected::new(p, n);
                let m = (0..n)
                    .map(|i| (e.sums[i], e.floats[i], e.products[i], (0, p as u32)))
                    .collect();
                (e, m)
            })
            .collect();
        let few = {
            let mut r = vec![0, p / 2, p - 1];
            r.dedup();
            r
        };
        let out = team(p)
            .run(|comm| -> Result<(), String> {
                for (e, mixed_want) in &all {
                    let every = match depth {
                        Depth::Full if e.n < LONG => roots(p, e.n),
                        _ => few.clone(),
                    };
                    for root in every {
                        check_one(comm, alg, root, "all ops", mixed, mixed_want, mixed_op())?;
                    }
                    // The built-in ops on long vectors at one root only (time).
                    let one = [p / 2];
                    for &root in if e.n < LONG { &few[..] } else { &one[..] } {
                        check_one(comm, alg, root, "u64 sum", int, &e.sums, op::Sum)?;
                        check_one(comm, alg, root, "f64 sum", small_float, &e.floats, op::Sum)?;
                        check_one(
                            comm,
                            alg,
                            root,
                            "matrices",
                            matrix,
                            &e.products,
                            matrix_op(),
                        )?;
                        let spans = vec![(0, p as u32); e.n];
                        let span = |r: usize, _| (r as u32, r as u32 + 1);
                        check_one(comm, alg, root, "spans", span, &spans, span_op())?;
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{alg:?}, p = {p}: the run failed: {e}"));
        for res in out {
            res.unwrap();
        }
        eprintln!("{alg:?}, p = {p}: {:.3} s", started.elapsed().as_secs_f64());
    }
}

/// Rank counts 1 … 9.
const PS_SMALL: [usize; 9] = [1, 2, 3, 4, 5, 6, 7, 8, 9];
/// Rank counts 10 … 17.
const PS_MEDIUM: [usize; 8] = [10, 11, 12, 13, 14, 15, 16, 17];
/// The most oversubscribed rank counts (two odd ones; the powers of two are below).
const PS_LARGE: [usize; 2] = [31, 33];

/// Declares the three matrix tests of one algorithm.
macro_rules! matrix_tests {
    ($small:ident, $medium:ident, $large:ident, $alg:expr) => {
        #[test]
        fn $small() {
            sweep($alg, &PS_SMALL, Depth::Full);
        }
        #[test]
        fn $medium() {
            sweep($alg, &PS_MEDIUM, Depth::Full);
        }
        #[test]
        fn $large() {
            sweep($alg, &PS_LARGE, Depth::Full);
        }
    };
}

/// `Auto` only picks among the others (by size), so it gets the light matrix.
#[test]
fn auto_light() {
    sweep(Reduce::Auto, &[1, 2, 3, 5, 7, 8, 17, 33], Depth::Light);
}

matrix_tests!(
    binomial_p_1_to_9,
    binomial_p_10_to_17,
    binomial_p_31_to_33,
    ALGORITHMS[1]
);
matrix_tests!(
    pipelined_tree_auto_p_1_to_9,
    pipelined_tree_auto_p_10_to_17,
    pipelined_tree_auto_p_31_to_33,
    ALGORITHMS[2]
);
matrix_tests!(
    pipelined_tree_block_1_p_1_to_9,
    pipelined_tree_block_1_p_10_to_17,
    pipelined_tree_block_1_p_31_to_33,
    ALGORITHMS[3]
);
matrix_tests!(
    pipelined_tree_block_7_p_1_to_9,
    pipelined_tree_block_7_p_10_to_17,
    pipelined_tree_block_7_p_31_to_33,
    ALGORITHMS[4]
);
matrix_tests!(
    direct_p_1_to_9,
    direct_p_10_to_17,
    direct_p_31_to_33,
    ALGORITHMS[5]
);
matrix_tests!(
    linear_p_1_to_9,
    linear_p_10_to_17,
    linear_p_31_to_33,
    ALGORITHMS[6]
);

/// Asserts that every rank's result is an error whose root cause satisfies `cause`.
fn all_failed(out: Vec<corecoll::Result<()>>, what: &str, cause: impl Fn(&Error) -> bool) {
    for (r, res) in out.into_iter().enumerate() {
        let e = res.expect_err(&format!("{what}: rank {r} succeeded"));
        assert!(cause(e.root_cause()), "{what}: rank {r}: {e}");
    }
}

#[path = "reduce/semantics.rs"]
mod semantics;
