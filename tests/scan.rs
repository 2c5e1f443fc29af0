//! The scan suite: `Comm::scan` and `Comm::exscan` with every algorithm against sequential
//! prefixes computed here, through the public API (`scan_with`, `exscan_with`, and the `Auto`
//! entry points).
//!
//! **Algorithms** ([`ALGORITHMS`]): `RecursiveDoubling`, `PipelinedTree` with blocks `Auto`,
//! 1 and 7 elements; `Auto` (which only picks among them) runs a lighter matrix.
//!
//! **The matrix** (`*_p_1_to_9`, `*_p_10_to_17`, `*_p_31_to_33` per algorithm, so that the
//! harness can run them side by side): p ∈ 1..=17 ∪ {31, 32, 33} × counts
//! {0, 1, 2, p − 1, p + 1, 1000} and 65 537 at [`LONG_PS`] (not with one-element blocks, and
//! with seven-element ones only up to 7 ranks: [`long_ok`]) × {scan, exscan} × three ops, all
//! in one team per p:
//!
//! * wrapping `Sum` on `u64` (exact whatever the order);
//! * the 2×2 `u32` matrix product, rank- and element-dependent matrices: non-commutative, so
//!   it checks rank order;
//! * the span op, `(a, b) ⊙ (b, c) = (a, c)`, which panics on operands out of rank order.
//!
//! Rank r must end with the sequential left fold over ranks 0 … r (scan) or 0 … r − 1
//! (exscan; rank 0's buffer unchanged).
//!
//! **Bad input**: different lengths, algorithms, element types, or scan against exscan on
//! different ranks: `Err` (a mismatch) on every rank, no hang (every team times out after
//! 30 s, and a timeout would show as a wrong root cause).
//!
//! Budget: the whole file should take well under 40 s of wall time in a debug build on the
//! loaded 2-core machine.

mod common;

use common::{matmul, matrix, matrix_op, mix, span_op, team};
use corecoll::algorithm::Scan;
use corecoll::op::{self, Op};
use corecoll::{Block, Comm, Error};

/// Every explicit algorithm the suite runs.
const ALGORITHMS: [Scan; 4] = [
    Scan::RecursiveDoubling,
    Scan::PipelinedTree { block: Block::Auto },
    Scan::PipelinedTree {
        block: Block::Elements(1),
    },
    Scan::PipelinedTree {
        block: Block::Elements(7),
    },
];

/// Rank counts at which the matrix also runs the long count [`LONG`].
const LONG_PS: [usize; 4] = [1, 2, 7, 33];

/// The long count (an odd number just past 2¹⁶).
const LONG: usize = 65_537;

/// Whether the long count runs with `alg` at `p` ranks: at [`LONG_PS`], except that
/// one-element blocks never run it (65 537 blocks per phase) and seven-element blocks only up
/// to 7 ranks.
fn long_ok(alg: Scan, p: usize) -> bool {
    let small_blocks = |b| {
        alg == Scan::PipelinedTree {
            block: Block::Elements(b),
        }
    };
    LONG_PS.contains(&p) && !small_blocks(1) && (!small_blocks(7) || p <= 7)
}

/// The counts run at `p` ranks with `alg`: {0, 1, 2, p − 1, p + 1, 1000}, and [`LONG`] where
/// [`long_ok`].
fn counts(alg: Scan, p: usize) -> Vec<usize> {
    let mut c = vec![0, 1, 2, p - 1, p + 1, 1000];
    if long_ok(alg, p) {
        c.push(LONG);
    }
    c.sort_unstable();
    c.dedup();
    c
}

/// A `u64` input of rank `r`, element `i`.
fn int(r: usize, i: usize) -> u64 {
    mix(r, i, 1)
}

/// The span input of rank `r` (any element).
fn span(r: usize, _: usize) -> (u32, u32) {
    (r as u32, r as u32 + 1)
}

/// The inclusive prefixes of `input` under `f` for every rank: `[r][i]` is the left fold of
/// `input(0, i) … input(r, i)`.
fn prefixes<T: Copy>(
    p: usize,
    n: usize,
    input: impl Fn(usize, usize) -> T,
    f: impl Fn(T, T) -> T,
) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = Vec::with_capacity(p);
    for r in 0..p {
        let row = (0..n)
            .map(|i| match out.last() {
                None => input(r, i),
                Some(prev) => f(prev[i], input(r, i)),
            })
            .collect();
        out.push(row);
    }
    out
}

/// Runs one scan (or exscan if `exclusive`) of `input(rank, i)` and checks rank r's result
/// against `want[r]` (scan), `want[r − 1]` (exscan, r > 0) or its input (exscan, rank 0).
#[allow(clippy::too_many_arguments)]
fn check_one<T, O>(
    comm: &Comm,
    alg: Scan,
    exclusive: bool,
    n: usize,
    what: &str,
    input: impl Fn(usize, usize) -> T,
    want: &[Vec<T>],
    op: O,
) -> Result<(), String>
where
    T: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static,
    O: Op<T>,
{
    let (p, r) = (comm.size(), comm.rank());
    let name = if exclusive { "exscan" } else { "scan" };
    let ctx = || format!("{name} {alg:?}, p = {p}, n = {n}, {what}, rank {r}");
    let mut v: Vec<T> = (0..n).map(|i| input(r, i)).collect();
    let res = if exclusive {
        comm.exscan_with(&mut v, op, alg)
    } else {
        comm.scan_with(&mut v, op, alg)
    };
    res.map_err(|e| format!("{}: {e}", ctx()))?;
    let expect = |i: usize| match (exclusive, r) {
        (false, _) => want[r][i],
        (true, 0) => input(0, i),
        (true, _) => want[r - 1][i],
    };
    match (0..n).find(|&i| v[i] != expect(i)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{}: element {i} is {:?}, want {:?}",
            ctx(),
            v[i],
            expect(i)
        )),
    }
}

/// How much of the matrix a test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// Every count and op of the module docs.
    Full,
    /// No long count (for `Auto`, which only picks the other algorithms).
    Light,
}

/// The matrix for `alg` at the rank counts `ps`, one team per p: per count, scan and exscan
/// with each of the three ops.
fn sweep(alg: Scan, ps: &[usize], depth: Depth) {
    for &p in ps {
        let started = std::time::Instant::now();
        let mut ns = counts(alg, p);
        if depth == Depth::Light {
            ns.retain(|&n| n != LONG);
        }
        let wants: Vec<_> = ns
            .iter()
            .map(|&n| {
                (
                    n,
                    prefixes(p, n, int, u64::wrapping_add),
                    prefixes(p, n, matrix, matmul),
                    prefixes(p, n, span, |a, b| (a.0, b.1)),
                )
            })
            .collect();
        let out = team(p)
            .run(|comm| -> Result<(), String> {
                for (n, sums, products, spans) in &wants {
                    for exclusive in [false, true] {
                        let n = *n;
                        check_one(comm, alg, exclusive, n, "u64 sum", int, sums, op::Sum)?;
                        let m = matrix_op();
                        check_one(comm, alg, exclusive, n, "matrices", matrix, products, m)?;
                        check_one(comm, alg, exclusive, n, "spans", span, spans, span_op())?;
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
/// The oversubscribed rank counts.
const PS_LARGE: [usize; 3] = [31, 32, 33];

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
    sweep(Scan::Auto, &[1, 2, 3, 5, 8, 17, 33], Depth::Light);
}

matrix_tests!(
    recursive_doubling_p_1_to_9,
    recursive_doubling_p_10_to_17,
    recursive_doubling_p_31_to_33,
    ALGORITHMS[0]
);
matrix_tests!(
    pipelined_tree_auto_p_1_to_9,
    pipelined_tree_auto_p_10_to_17,
    pipelined_tree_auto_p_31_to_33,
    ALGORITHMS[1]
);
matrix_tests!(
    pipelined_tree_block_1_p_1_to_9,
    pipelined_tree_block_1_p_10_to_17,
    pipelined_tree_block_1_p_31_to_33,
    ALGORITHMS[2]
);
matrix_tests!(
    pipelined_tree_block_7_p_1_to_9,
    pipelined_tree_block_7_p_10_to_17,
    pipelined_tree_block_7_p_31_to_33,
    ALGORITHMS[3]
);

/// The `Auto` entry points `Comm::scan` and `Comm::exscan`, small and large, in a row with
/// another collective on one communicator.
#[test]
fn scan_and_exscan_in_a_row() {
    let p = 5;
    let out = team(p)
        .run(|comm| -> corecoll::Result<()> {
            let r = comm.rank() as u64;
            for n in [3usize, 50_000] {
                let mut v = vec![r + 1; n];
                comm.scan(&mut v, op::Sum)?;
                let want = (r + 1) * (r + 2) / 2;
                assert!(v.iter().all(|&x| x == want), "scan, n = {n}");
                let mut v = vec![r + 1; n];
                comm.exscan(&mut v, op::Sum)?;
                let want = if r == 0 { 1 } else { r * (r + 1) / 2 };
                assert!(v.iter().all(|&x| x == want), "exscan, n = {n}");
                comm.allreduce(&mut v, op::Max)?;
            }
            Ok(())
        })
        .unwrap();
    for res in out {
        res.unwrap();
    }
}

/// Asserts that every rank's result is an error whose root cause is a mismatch.
fn all_mismatched(out: Vec<corecoll::Result<()>>, what: &str) {
    for (r, res) in out.into_iter().enumerate() {
        let e = res.expect_err(&format!("{what}: rank {r} succeeded"));
        assert!(
            matches!(e.root_cause(), Error::Mismatch { .. }),
            "{what}: rank {r}: {e}"
        );
    }
}

/// Runs scan (or exscan if `exclusive`) on `comm` with `alg` over `len` elements.
fn call(comm: &Comm, exclusive: bool, alg: Scan, len: usize) -> corecoll::Result<()> {
    let mut v = vec![comm.rank() as u64; len];
    if exclusive {
        comm.exscan_with(&mut v, op::Sum, alg)
    } else {
        comm.scan_with(&mut v, op::Sum, alg)
    }
}

#[test]
fn different_lengths_fail_everywhere() {
    for p in [2, 3, 5, 17] {
        let team = team(p);
        for alg in ALGORITHMS {
            for exclusive in [false, true] {
                for (n, m) in [(0, 1), (1, 0), (7, 8), (20_000, 0)] {
                    for odd in [0, p - 1, p / 2] {
                        let out = team
                            .run(|comm| {
                                let len = if comm.rank() == odd { m } else { n };
                                call(comm, exclusive, alg, len)
                            })
                            .unwrap();
                        let what = format!("{alg:?} ({exclusive}), p = {p}, rank {odd}: {m}");
                        all_mismatched(out, &what);
                    }
                }
            }
        }
    }
}

#[test]
fn different_algorithms_fail_everywhere() {
    let every = [Scan::Auto, ALGORITHMS[0], ALGORITHMS[1], ALGORITHMS[3]];
    for p in [2, 5] {
        let team = team(p);
        for a in every {
            for b in every {
                if a == b {
                    continue;
                }
                let out = team
                    .run(|comm| {
                        let alg = if comm.rank() == 1 { b } else { a };
                        call(comm, false, alg, 5000)
                    })
                    .unwrap();
                let what = format!("{a:?} against {b:?}, p = {p}");
                // Auto may choose the other algorithm itself: then the call is fine.
                if out.iter().all(|r| r.is_ok()) {
                    assert!(a == Scan::Auto || b == Scan::Auto, "{what}");
                    continue;
                }
                all_mismatched(out, &what);
            }
        }
    }
}

#[test]
fn scan_against_exscan_fails_everywhere() {
    for p in [2, 3, 6] {
        let team = team(p);
        for alg in [Scan::Auto, ALGORITHMS[0], ALGORITHMS[1]] {
            for n in [0, 10, 5000] {
                for odd in [0, p - 1] {
                    let out = team
                        .run(|comm| call(comm, comm.rank() == odd, alg, n))
                        .unwrap();
                    // The rank that found the difference names both calls.
                    let named = out.iter().any(|res| match res {
                        Err(e) => match e.root_cause() {
                            Error::Mismatch {
                                expected, found, ..
                            } => {
                                let both = format!("{expected} / {found}");
                                both.contains("exclusive") && both.contains("inclusive")
                            }
                            _ => false,
                        },
                        Ok(()) => false,
                    });
                    assert!(named, "{alg:?}, p = {p}, n = {n}: {:?}", out[0]);
                    all_mismatched(out, &format!("{alg:?}, p = {p}, n = {n}, rank {odd}"));
                }
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
                        comm.scan_with(&mut v, op::Sum, alg)
                    } else {
                        let mut v = vec![1u32; 64];
                        comm.scan_with(&mut v, op::Sum, alg)
                    }
                })
                .unwrap();
            all_mismatched(out, &format!("{alg:?}, p = {p}"));
        }
    }
}

/// Many rendezvous-sized blocks (200 `u64`, above `EAGER_MAX`) and many inline ones (64 `u64`)
/// for scan and exscan: the up phase's and the down phase's overlapped sends and receives must
/// not deadlock when every block is a single-copy handshake.
#[test]
fn pipelined_tree_many_large_blocks() {
    const N: usize = 20_000;
    for p in [2, 3, 4, 5, 8, 13] {
        let sums = prefixes(p, N, int, u64::wrapping_add);
        let out = team(p)
            .run(|comm| -> Result<(), String> {
                for b in [64, 200] {
                    let alg = Scan::PipelinedTree {
                        block: Block::Elements(b),
                    };
                    for exclusive in [false, true] {
                        check_one(comm, alg, exclusive, N, "u64 sum", int, &sums, op::Sum)?;
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
