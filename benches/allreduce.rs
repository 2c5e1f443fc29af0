//! Criterion benchmarks of allreduce on 2 ranks: every algorithm at every size beside the
//! *limit kernel* (the ideal data movement), and the built-in `Sum` fold beside a plain loop.
//!
//! ```text
//! rm -rf target/criterion/allreduce_p2 target/criterion/op_sum_f64   # drop stale results
//! cargo bench --bench allreduce                   # the full run, 5 to 6 minutes
//! python3 benches/summary.py                      # the markdown tables for docs/benchmarks.md
//! ```
//!
//! A criterion filter selects benchmarks as usual, e.g.
//! `cargo bench --bench allreduce -- 'allreduce_p2/direct'` or `-- '/(8|2097152)$'`; with
//! `CORECOLL_BENCH_QUICK=1` every benchmark runs for a fraction of a second (to check that the
//! bench works, not to measure). Group settings take precedence over criterion's
//! `--measurement-time` and the like, hence the variable.
//!
//! # Interleaved mode: `CORECOLL_BENCH_INTERLEAVED=1 cargo bench --bench allreduce`
//!
//! This machine is a VM whose speed changes for seconds at a time (docs/benchmarks.md), and
//! criterion measures one benchmark after another, so two benchmarks of the same algorithm
//! can differ by 2–3× when a slow phase hits one of them. Ratios between algorithms (Auto
//! against the best, Direct against the limit kernel) are only meaningful when every kernel
//! sees the same phases. With `CORECOLL_BENCH_INTERLEAVED=1` the bench skips criterion and, for
//! each size, takes rounds of one sample of every kernel in turn (a sample is a loop of about
//! 2 ms, at least one call, after a barrier, rank 0's clock), 15 rounds (3 with
//! `CORECOLL_BENCH_QUICK=1`), and prints the median per call of every kernel as a markdown
//! table with the same ratio columns as `benches/summary.py`.
//!
//! # `allreduce_p2`
//!
//! f64 `Sum` of 8 B, 32 B, 128 B, … (×4) … 32 MiB, plus 256 KiB (where the `Direct` goal
//! starts) and 64 MiB per rank; ids `allreduce_p2/<algorithm>/<bytes>`, throughput in bytes
//! per rank. Every [`Algorithm`] runs with `Block::Auto`; one whose first (tiny) call returns
//! `Err` is skipped with a note on stderr.
//!
//! Starting a team costs far more than one call, so, as in `benches/runtime.rs`, one [`Team`]
//! of 2 serves every benchmark and `iter_custom` runs one `Team::run` per criterion sample: each
//! rank warms up (a few calls for small sizes, none above 1 MiB, where a call is long and the
//! barrier alone brings both ranks in), meets the other at a barrier, and calls
//! `allreduce_with` `iters` times back to back; rank 0 (the calling thread) times its loop and
//! that is the sample's time. The two vectors of a size are allocated once, 64-byte aligned,
//! and reused by every benchmark of that size, so pages are faulted in once and no sample pays
//! for an allocation.
//!
//! `limit` is what a perfect allreduce would cost: the same two ranks, inside one `Team::run`
//! after a barrier, each sum their half of both vectors (split at a cache line) and write the
//! sum into both, `iters` times, with no synchronisation at all inside the loop; rank 0's time
//! counts. Every byte of both vectors is read once and written once per call, the lower bound
//! of 2pS bytes moved for p ranks of S bytes. Between calls nothing touches the vectors (but
//! the rescaling below), so while a rank's half of both vectors fits in its core's cache
//! (2 MiB of L2 here: up to about 1 MiB per rank) the limit kernel runs from that cache and
//! moves no data between cores at all; `Direct`, whose rank r always reduces the same slice,
//! can do the same, which is the point of the comparison. From 32 MiB per rank the vectors
//! exceed the L3 and every kernel is bound by memory.
//!
//! ## Keeping the values finite
//!
//! An in-place Sum allreduce of two equal vectors doubles them, so a long loop would reach
//! infinity after about a thousand calls and then time arithmetic on inf (or NaN). Rescaling
//! outside the timed region is not possible, since one sample may hold a million calls of
//! 8 B. Instead every element starts in [1, 2)·2⁻¹⁰⁰⁰, both ranks' vectors equal: each call
//! (and each limit pass) doubles every element *exactly* (the sum of two equal normal floats
//! has no rounding), so all elements stay in one binade together, and after a call a rank
//! looks at its first element: once it reaches 1.0 the rank multiplies its vector by 2⁻¹⁰⁰⁰,
//! exactly, which returns it to where it started. Both ranks hold bit-identical results, so
//! they rescale after the same call. The values never leave the normal range (no subnormal
//! slow path), the data is rewritten by every call, and the rescaling pass — one pass every
//! thousand calls, inside the timed loop — adds under 0.1 % to the time. The compiler cannot
//! elide calls into the library's synchronisation; the buffers still go through `black_box`.
//!
//! # `op_sum_f64`
//!
//! `Op::fold_right` of [`op::Sum`] on f64 slices (`sum_fold`) beside
//! `for (a, b) in acc.iter_mut().zip(rhs) { *a += *b }` (`plain_loop`), at 4 KiB (L1),
//! 256 KiB (L2) and 8 MiB (L3), single-threaded. Each iteration adds `rhs` (all 1.0) into
//! `acc`, so `acc` grows by one per iteration and stays finite (and normal).

mod common;

use common::{config, configure, fmt_secs, fmt_size, iters_for, median, rounds};
use corecoll::op::{self, Op};
use corecoll::{Algorithm, Block, Comm, Team};
use criterion::{BenchmarkId, Criterion, Throughput};
use std::cell::{OnceCell, UnsafeCell};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Every algorithm of the enum, pipeline blocks `Auto`, in the order of the summary table.
const ALGORITHMS: [Algorithm; 11] = [
    Algorithm::Auto,
    Algorithm::Linear,
    Algorithm::Chain { block: Block::Auto },
    Algorithm::Binomial,
    Algorithm::RecursiveDoubling,
    Algorithm::Rabenseifner,
    Algorithm::Ring { block: Block::Auto },
    Algorithm::PipelinedTree { block: Block::Auto },
    Algorithm::DualRoot { block: Block::Auto },
    Algorithm::TwoTree { block: Block::Auto },
    Algorithm::Direct,
];

/// Number of ranks.
const P: usize = 2;

/// Doublings between two rescalings (see "Keeping the values finite").
const SPAN: i32 = 1000;

/// Sizes per rank of `allreduce_p2`, in bytes: 8 · 4^k up to 32 MiB, then 64 MiB.
fn sizes() -> Vec<usize> {
    let mut v: Vec<usize> = (0..12).map(|k| 8 << (2 * k)).collect();
    v.push(256 << 10);
    v.push(64 << 20);
    v.sort_unstable();
    v
}

/// Sizes of `op_sum_f64`, in bytes.
const FOLD_SIZES: [usize; 3] = [4 << 10, 256 << 10, 8 << 20];

/// `2^e` for `e` in the normal range.
fn pow2(e: i32) -> f64 {
    f64::from_bits(((1023 + e) as u64) << 52)
}

/// The starting value of element `i`: in [1, 2)·2⁻¹⁰⁰⁰, varied so that no two neighbours
/// are equal.
fn start_value(i: usize) -> f64 {
    (1.0 + (i % 1021) as f64 / 1024.0) * pow2(-SPAN)
}

/// Restores `v` (whose elements were doubled in step since they started) to the starting
/// binade once it has left it upward. Empty slices are left alone.
#[inline]
fn rescale(v: &mut [f64]) {
    if v.first().is_some_and(|&x| x >= 1.0) {
        let s = pow2(-SPAN);
        v.iter_mut().for_each(|x| *x *= s);
    }
}

/// Brings `v`, whose elements share one binade, back to the starting binade [1, 2)·2⁻¹⁰⁰⁰
/// (exactly: a power-of-two factor). Empty slices are left alone.
fn renormalise(v: &mut [f64]) {
    if let Some(&x) = v.first() {
        let e = ((x.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let s = pow2(-SPAN - e);
        v.iter_mut().for_each(|x| *x *= s);
    }
}

/// One cache line of f64, so that vectors are line-aligned.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f64; 8]);

/// The two ranks' vectors of one size, shared between the rank threads: in an allreduce each
/// rank uses only its own vector; in the limit kernel each rank uses its own half of both.
/// No two threads ever touch the same element in one `Team::run`, and runs do not overlap.
struct Vectors {
    /// Rank r's vector, 64-byte aligned, `len` elements used (the last line padded).
    lines: [Box<[UnsafeCell<Line>]>; P],
    /// Elements per vector.
    len: usize,
}

// SAFETY: the cells are only accessed through `Vectors::slice`, whose callers guarantee that
// the ranges used by different threads at the same time are disjoint.
unsafe impl Sync for Vectors {}

impl Vectors {
    /// Two vectors of `bytes` bytes each, both holding the starting values.
    fn new(bytes: usize) -> Vectors {
        let len = bytes / size_of::<f64>();
        let make = || -> Box<[UnsafeCell<Line>]> {
            (0..len.div_ceil(8))
                .map(|l| UnsafeCell::new(Line(std::array::from_fn(|j| start_value(8 * l + j)))))
                .collect()
        };
        Vectors {
            lines: [make(), make()],
            len,
        }
    }

    /// Elements `range` of rank `rank`'s vector.
    ///
    /// # Safety
    ///
    /// No other reference to these elements may exist while the slice lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice(&self, rank: usize, range: std::ops::Range<usize>) -> &mut [f64] {
        assert!(range.start <= range.end && range.end <= self.len);
        let base = UnsafeCell::raw_get(self.lines[rank].as_ptr()).cast::<f64>();
        // SAFETY: `Line` is `repr(C)` over `[f64; 8]`, so the lines are `8 * lines` contiguous
        // f64 with `len` of them in bounds; exclusivity is the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(base.add(range.start), range.len()) }
    }

    /// The elements rank `rank` of the limit kernel sums: its half, split at a cache line
    /// (rank 0 takes the first ⌈len/2⌉ rounded up to a line).
    fn half(&self, rank: usize) -> std::ops::Range<usize> {
        let mid = self.len.div_ceil(2).next_multiple_of(8).min(self.len);
        if rank == 0 {
            0..mid
        } else {
            mid..self.len
        }
    }
}

/// What one benchmark of `allreduce_p2` repeats.
#[derive(Debug, Clone, Copy)]
enum Kernel {
    /// `allreduce_with` of f64 `Sum` in place with this algorithm.
    Allreduce(Algorithm),
    /// The limit kernel.
    Limit,
}

impl Kernel {
    /// The benchmark's name (the middle part of its id).
    fn name(self) -> &'static str {
        match self {
            Kernel::Allreduce(a) => a.name(),
            Kernel::Limit => "limit",
        }
    }
}

/// Calls on each rank before the barrier of a sample whose size is `bytes`: enough to have
/// both ranks spinning for small sizes, none above 1 MiB.
fn warm_up(bytes: usize, iters: u64) -> u64 {
    ((1 << 20) / bytes).min(100).min(iters as usize) as u64
}

/// Repeats `kernel` `iters` times on this rank over `vectors`.
fn repeat(comm: &Comm, kernel: Kernel, vectors: &Vectors, iters: u64) -> corecoll::Result<()> {
    let r = comm.rank();
    match kernel {
        Kernel::Allreduce(alg) => {
            // SAFETY: in an allreduce run each rank uses only its own vector.
            let mine = unsafe { vectors.slice(r, 0..vectors.len) };
            for _ in 0..iters {
                comm.allreduce_with(black_box(&mut *mine), op::Sum, alg)?;
                rescale(mine);
            }
        }
        Kernel::Limit => {
            let half = vectors.half(r);
            // SAFETY: the two ranks' halves are disjoint, and in a limit run nothing else
            // touches the vectors.
            let (a, b) = unsafe {
                (
                    vectors.slice(0, half.clone()),
                    vectors.slice(1, half.clone()),
                )
            };
            for _ in 0..iters {
                let (a, b) = (black_box(&mut *a), black_box(&mut *b));
                for (x, y) in a.iter_mut().zip(b.iter_mut()) {
                    let s = *x + *y;
                    *x = s;
                    *y = s;
                }
                rescale(a);
                rescale(b);
            }
        }
    }
    Ok(())
}

/// Rank 0's time for `iters` repetitions of `kernel` over `vectors` on `team`, after a
/// warm-up and a barrier.
fn timed(team: &Team, kernel: Kernel, vectors: &Vectors, iters: u64) -> Duration {
    let bytes = vectors.len * size_of::<f64>();
    let out = team
        .run(|comm| -> corecoll::Result<Duration> {
            repeat(comm, kernel, vectors, warm_up(bytes, iters))?;
            comm.barrier()?;
            let t0 = Instant::now();
            repeat(comm, kernel, vectors, iters)?;
            let t = t0.elapsed();
            if let Kernel::Limit = kernel {
                // The two halves were doubled a different number of times; an allreduce needs
                // each vector in one binade (see `rescale`).
                let half = vectors.half(comm.rank());
                for rank in 0..P {
                    // SAFETY: the halves are disjoint and nothing else runs.
                    renormalise(unsafe { vectors.slice(rank, half.clone()) });
                }
            }
            Ok(t)
        })
        .expect("the benchmark run failed");
    let mut out = out.into_iter();
    let t = out.next().expect("rank 0's result");
    let others = out
        .map(|o| o.map(drop))
        .collect::<corecoll::Result<Vec<()>>>();
    match (t, others) {
        (Ok(t), Ok(_)) => t,
        (Err(e), _) | (_, Err(e)) => panic!("{} failed at {bytes} B: {e}", kernel.name()),
    }
}

/// Whether `alg` works today: one allreduce of 64 f64 on both ranks, checked for the right
/// sum. An `Err` (an algorithm still being written) is reported on stderr and skips it; a
/// wrong sum panics, since measuring it would be meaningless.
fn available(team: &Team, alg: Algorithm) -> bool {
    let out = team
        .run(|comm| {
            let mut v: Vec<f64> = (0..64).map(|i| (i + comm.rank()) as f64).collect();
            comm.allreduce_with(&mut v, op::Sum, alg).map(|()| v)
        })
        .expect("the probe run failed");
    match out.into_iter().collect::<corecoll::Result<Vec<_>>>() {
        Ok(results) => {
            let want: Vec<f64> = (0..64).map(|i| (2 * i + 1) as f64).collect();
            assert!(
                results.iter().all(|v| v == &want),
                "allreduce with {} gives a wrong sum",
                alg.name()
            );
            true
        }
        Err(e) => {
            eprintln!("allreduce_p2: skipping {} ({e})", alg.name());
            false
        }
    }
}

/// Group `allreduce_p2`: every available algorithm and the limit kernel at every size.
fn allreduce_p2(c: &mut Criterion) {
    let team = Team::new(P).expect("a team of 2");
    let kernels: Vec<Kernel> = ALGORITHMS
        .into_iter()
        .filter(|&a| available(&team, a))
        .map(Kernel::Allreduce)
        .chain([Kernel::Limit])
        .collect();
    let mut g = c.benchmark_group("allreduce_p2");
    for bytes in sizes() {
        // Allocated on the first benchmark of this size that the filter lets through.
        let vectors = OnceCell::new();
        configure(&mut g, bytes > 128 << 10, 1.0);
        g.throughput(Throughput::Bytes(bytes as u64));
        for &kernel in &kernels {
            g.bench_function(BenchmarkId::new(kernel.name(), bytes), |bch| {
                let v = vectors.get_or_init(|| {
                    // Fresh vectors are touched by every kernel once before anything is
                    // timed, so that the first benchmark of a size (auto) does not pay for
                    // page faults and cold caches that the later ones do not.
                    let v = Vectors::new(bytes);
                    for &k in &kernels {
                        timed(&team, k, &v, warm_up(bytes, 100).max(2));
                    }
                    v
                });
                bch.iter_custom(|iters| timed(&team, kernel, v, iters))
            });
        }
    }
    g.finish();
}

/// Group `op_sum_f64`: the built-in `Sum` fold against a plain loop, one thread.
fn op_sum_f64(c: &mut Criterion) {
    let mut g = c.benchmark_group("op_sum_f64");
    for bytes in FOLD_SIZES {
        configure(&mut g, false, 1.0);
        g.throughput(Throughput::Bytes(bytes as u64));
        let n = bytes / size_of::<f64>();
        let rhs = vec![1.0f64; n];
        // Not zero: a zeroed vector would be mapped lazily, and its page faults would land
        // in the first kernel's warm-up only.
        let mut acc = vec![0.5f64; n];
        g.bench_function(BenchmarkId::new("sum_fold", bytes), |bch| {
            bch.iter(|| op::Sum.fold_right(black_box(&mut acc[..]), black_box(&rhs[..])))
        });
        acc.fill(0.5);
        g.bench_function(BenchmarkId::new("plain_loop", bytes), |bch| {
            bch.iter(|| {
                let (acc, rhs) = (black_box(&mut acc[..]), black_box(&rhs[..]));
                for (a, b) in acc.iter_mut().zip(rhs) {
                    *a += *b;
                }
            })
        });
        assert!(acc.iter().all(|x| x.is_finite()));
    }
    g.finish();
}

/// The time per call of `kernel` with `iters` calls per sample.
fn per_call(team: &Team, kernel: Kernel, vectors: &Vectors, iters: u64) -> f64 {
    timed(team, kernel, vectors, iters).as_secs_f64() / iters as f64
}

/// The interleaved mode (see the module docs): rounds of one sample of every kernel in turn.
fn interleaved() {
    let team = Team::new(P).expect("a team of 2");
    let kernels: Vec<Kernel> = ALGORITHMS
        .into_iter()
        .filter(|&a| available(&team, a))
        .map(Kernel::Allreduce)
        .chain([Kernel::Limit])
        .collect();
    let rounds = rounds();
    let names: Vec<&str> = kernels.iter().map(|k| k.name()).collect();
    println!(
        "### allreduce, 2 ranks, f64 Sum, interleaved: median time per call ({rounds} rounds)\n"
    );
    println!(
        "| size per rank | {} | best | auto/best | direct % of limit |",
        names.join(" | ")
    );
    println!("|{}", " --- |".repeat(names.len() + 4));
    for bytes in sizes() {
        let v = Vectors::new(bytes);
        // Calls per sample: about 2 ms' worth, measured after a warm-up of every kernel.
        let iters: Vec<u64> = kernels
            .iter()
            .map(|&k| {
                timed(&team, k, &v, warm_up(bytes, 100).max(2));
                iters_for(per_call(&team, k, &v, 8))
            })
            .collect();
        let mut samples = vec![Vec::with_capacity(rounds); kernels.len()];
        for _ in 0..rounds {
            for (i, &k) in kernels.iter().enumerate() {
                samples[i].push(per_call(&team, k, &v, iters[i]));
            }
        }
        let median: Vec<f64> = samples.iter_mut().map(|s| median(s)).collect();
        let of = |name: &str| names.iter().position(|&n| n == name).map(|i| median[i]);
        let (best, best_t) = names
            .iter()
            .zip(&median)
            .filter(|(n, _)| !matches!(**n, "auto" | "limit"))
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(n, t)| (*n, *t))
            .expect("at least one algorithm");
        let ratio = of("auto").map_or("—".into(), |a| format!("{:.2}", a / best_t));
        let direct = match (of("direct"), of("limit")) {
            (Some(d), Some(l)) => format!("{:.0} %", 100.0 * l / d),
            _ => "—".into(),
        };
        let cells: Vec<String> = median.iter().map(|&t| fmt_secs(t)).collect();
        println!(
            "| {} | {} | {best} | {ratio} | {direct} |",
            fmt_size(bytes),
            cells.join(" | ")
        );
    }
}

/// Runs both groups with criterion's command-line settings, or the interleaved mode.
fn main() {
    if common::interleaved() {
        interleaved();
        return;
    }
    // What criterion_group! and criterion_main! expand to, without the undocumented public
    // function the former generates.
    let mut c = config().configure_from_args();
    allreduce_p2(&mut c);
    op_sum_f64(&mut c);
    c.final_summary();
}
