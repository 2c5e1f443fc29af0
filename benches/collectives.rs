//! Criterion benchmarks of every collective and every algorithm of each, at 2 ranks (a core
//! each) and 8 ranks (oversubscribed on the 2-core development machine), beside reference
//! kernels that say what the hardware allows.
//!
//! ```text
//! rm -rf target/criterion/*_p2 target/criterion/*_p8         # drop stale results
//! cargo bench --bench collectives                            # criterion, every group
//! cargo bench --bench collectives -- '^broadcast_p2/'         # one group (a criterion filter)
//! CORECOLL_BENCH_INTERLEAVED=1 cargo bench --bench collectives   # the ratio tables
//! CORECOLL_BENCH_QUICK=1 cargo bench --bench collectives     # does the bench work? (~2 min)
//! ```
//!
//! `CORECOLL_BENCH_QUICK=1` cuts every benchmark to a fraction of a second (and the
//! interleaved mode to 3 rounds): a check that everything runs, not a measurement. On the
//! 2-core development machine (estimates from the quick runs, the machine shared): a full
//! criterion run takes roughly half an hour (about 1 100 benchmarks of 1 to 2 s; filter by
//! group for less), a full interleaved run a few minutes (the quick one, 30 s).
//!
//! # Groups and ids
//!
//! One group per collective and rank count: `broadcast_p2`, `reduce_p8`, `scan_p2`,
//! `gather_p2`, `scatter_p2`, `allgather_p2`, `alltoall_p2`, `reduce_scatter_p2`,
//! `allreduce_p2`, `barrier_p2`, … with ids
//! `<group>/<kernel>/<bytes>` (`barrier_p<p>/<kernel>`, size-less), throughput in bytes per
//! rank. The kernels of a group are every algorithm of the collective's enum
//! (`corecoll::algorithm::*`, `corecoll::Algorithm` for allreduce), `auto` first, pipeline
//! blocks `Block::Auto`; an algorithm whose first tiny call returns `Err` (not written yet) is
//! skipped with a note on stderr. Beside them:
//!
//! * `memcpy` (every sized group): rank 0 alone copies S bytes (`copy_from_slice`) from one of
//!   its buffers into another, the same S as the collective's size per rank; the other ranks
//!   only meet it at the barriers. The single-copy reference of goal 1.
//! * `limit` (allgather, alltoall): the bytes-moved bound. Every rank at once, without any
//!   synchronisation inside the timed loop, copies all p blocks of S bytes it must end with
//!   straight from their owners' buffers into its receive buffer, starting with its own
//!   (p·S bytes per rank, what `Direct` moves); for the all-to-all, block r of every rank's
//!   send buffer. The reference of goal 2.
//!
//! The table of collectives (`collectives()`) is the one place to extend: an entry names the
//! collective, its buffers, its algorithms with how to call each, and its limit kernel if it
//! has one.
//!
//! **Data.** Elements are `u64`; the reductions (reduce, scan, reduce-scatter, allreduce) use [`op::Sum`],
//! which wraps on integers, so repeating a call in place never overflows, never slows down
//! (no subnormal floats, no infinities) and needs no rescaling. Roots are rank 0. S is the
//! block (an all-to-all sends p blocks of S, a reduce-scatter reduces p blocks of S). Sizes per
//! rank's contribution S: 8 B, 32 B, 128 B, … (×4) … 32 MiB plus 256 KiB and 64 MiB at
//! p = 2; at p = 8, up to 2 MiB on the same ladder plus 256 KiB and 4 MiB, where the largest
//! sizes would take minutes per benchmark with 8 ranks on 2 cores (and a p = 8 allgather of
//! 4 MiB already has 32 MiB of receive buffer per rank). Buffers — per rank S bytes (own) and
//! p·S bytes (whole: gather's and allgather's receive, scatter's send; the memcpy's
//! destination), 64-byte aligned and filled before use — are allocated once per size and
//! reused by every kernel of the size; the kernels of a fresh size are each run once before
//! anything is timed, so that no benchmark pays for page faults the others do not.
//!
//! **Timing**, as in `benches/allreduce.rs`: one persistent [`Team`] per rank count, and
//! `iter_custom` runs one `Team::run` per sample, in which each rank warms up (a few calls for
//! small sizes, none above 1 MiB), meets the others at a barrier, runs `iters` calls back to
//! back and meets them at a closing barrier; rank 0's time from the first barrier to the
//! closing one is the sample's. The closing barrier makes the sample cover every rank's last
//! call (a broadcast's root may leave before its receivers are done); it adds one barrier per
//! sample, negligible beside a sample of a couple of milliseconds.
//!
//! # Interleaved mode: `CORECOLL_BENCH_INTERLEAVED=1`
//!
//! This machine is a VM whose speed drifts for seconds at a time (docs/benchmarks.md), so
//! ratios between benchmarks measured minutes apart mean little. In this mode the bench skips
//! criterion and, for each rank count and size, takes rounds of one sample (about 2 ms of
//! calls, at least one) of *every kernel of every collective* at that size in turn, 15 rounds
//! (3 with `CORECOLL_BENCH_QUICK=1`), then prints markdown tables of the median time per call:
//! one per collective and rank count, kernels as columns, with the ratio columns
//!
//! * `best`, `auto/best`: the fastest algorithm and Auto's time over it;
//! * `direct vs memcpy` = memcpy time / `direct` time, in % (goal 1: broadcast `direct`
//!   ≥ 80 % at p = 2 from 256 KiB);
//! * `direct vs limit` = limit time / `direct` time, in % (goal 2: allgather `direct`
//!   ≥ 70 %);
//!
//! and a last table per rank count, of each collective's 8 B time (Auto) beside allreduce's
//! (Auto) and the ratio, collective / allreduce (goal 3: ≤ 2 at p = 2); the barrier sits
//! there too. Every kernel at one size sees the same phases of the machine, so the ratios
//! hold even when the absolute times drift.

mod common;

use common::{config, configure, fmt_secs, fmt_size, iters_for, median, rounds};
use corecoll::algorithm::{
    Allgather, Alltoall, Barrier, Broadcast, Gather, Reduce, ReduceScatter, Scan, Scatter,
};
use corecoll::{op, Algorithm, Block, Comm, Team};
use criterion::{BenchmarkId, Criterion, Throughput};
use std::cell::{OnceCell, UnsafeCell};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The rank counts: 2 (a core per rank on the development machine) and 8 (oversubscribed).
const RANKS: [usize; 2] = [2, 8];

/// The largest size per rank at more than 2 ranks.
const CAP_OVERSUBSCRIBED: usize = 4 << 20;

/// Criterion's warm-up and measurement times are scaled by this: the bench has about 1 000
/// benchmarks.
const TIME_SCALE: f64 = 0.6;

/// The sizes per rank at `p` ranks, in bytes (see the module docs).
fn sizes(p: usize) -> Vec<usize> {
    let (cap, extra) = if p <= 2 {
        (64 << 20, [256 << 10, 64 << 20])
    } else {
        (CAP_OVERSUBSCRIBED, [256 << 10, CAP_OVERSUBSCRIBED])
    };
    let mut v: Vec<usize> = (0..12)
        .map(|k| 8usize << (2 * k))
        .filter(|&b| b <= cap)
        .chain(extra)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// One cache line of u64, so that buffers are line-aligned.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u64; 8]);

/// A line-aligned buffer of `len` u64 that the rank threads share (see [`Store`]).
struct Buf {
    lines: Box<[UnsafeCell<Line>]>,
    len: usize,
}

impl Buf {
    /// `len` elements, all written (so that the pages are mapped), none zero.
    fn new(len: usize, seed: u64) -> Buf {
        let lines = (0..len.div_ceil(8) as u64)
            .map(|l| UnsafeCell::new(Line(std::array::from_fn(|j| seed + 8 * l + j as u64))))
            .collect();
        Buf { lines, len }
    }

    /// The elements, to read.
    ///
    /// # Safety
    ///
    /// No mutable reference to the buffer may exist while the slice lives.
    unsafe fn get(&self) -> &[u64] {
        let base = UnsafeCell::raw_get(self.lines.as_ptr()).cast::<u64>();
        // SAFETY: `Line` is `repr(C)` over `[u64; 8]`, so the lines are `8 * lines.len()`
        // contiguous u64, `len` of them in bounds; no writer exists (the caller's promise).
        unsafe { std::slice::from_raw_parts(base, self.len) }
    }

    /// The elements, to write.
    ///
    /// # Safety
    ///
    /// No other reference to the buffer may exist while the slice lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get_mut(&self) -> &mut [u64] {
        let base = UnsafeCell::raw_get(self.lines.as_ptr()).cast::<u64>();
        // SAFETY: as in `get`; the access is exclusive (the caller's promise), and the cells
        // make writing through a shared `Buf` allowed.
        unsafe { std::slice::from_raw_parts_mut(base, self.len) }
    }
}

/// One rank's buffers for one size of S bytes = `n` elements.
struct RankBufs {
    /// S bytes: the in-place buffer, the send buffer of gather and allgather, the receive
    /// buffer of scatter, the memcpy's source.
    own: Buf,
    /// p·S bytes: the receive buffer of gather and allgather, the send buffer of scatter, the
    /// memcpy's destination.
    whole: Buf,
    /// p·S bytes more, for collectives that need two (an all-to-all's receive buffer); empty
    /// unless some entry of the table asks for it.
    whole2: Buf,
}

/// Every rank's buffers for one size, shared by the rank threads. In a collective's run each
/// rank uses only its own [`RankBufs`] (through [`Store::bufs`]); in a limit run each rank
/// reads every rank's `own` (the allgather's) or `whole` (the all-to-all's) and writes only its
/// own `whole` or `whole2`, which no rank reads in that run; runs of one team do not overlap.
struct Store {
    /// Elements per rank's contribution.
    n: usize,
    ranks: Vec<RankBufs>,
}

// SAFETY: the cells are only accessed through `Buf::get` and `Buf::get_mut`, whose callers
// follow the rules in `Store`'s docs: within one run, no buffer is written by one thread while
// another thread reads or writes it.
unsafe impl Sync for Store {}

impl Store {
    /// Buffers of `n` elements per rank's contribution for `p` ranks, with a second whole
    /// buffer if `wholes` ≥ 2.
    fn new(p: usize, n: usize, wholes: usize) -> Store {
        let ranks = (0..p as u64)
            .map(|r| RankBufs {
                own: Buf::new(n, 1 + (r << 40)),
                whole: Buf::new(p * n, 2 + (r << 40)),
                whole2: Buf::new(if wholes >= 2 { p * n } else { 0 }, 3 + (r << 40)),
            })
            .collect();
        Store { n, ranks }
    }

    /// Rank `r`'s buffers, for a collective's call.
    ///
    /// # Safety
    ///
    /// No other reference to rank `r`'s buffers may exist while the result lives.
    unsafe fn bufs(&self, r: usize) -> Bufs<'_> {
        let b = &self.ranks[r];
        // SAFETY: exclusive access to rank r's three buffers (the caller's promise); they are
        // three different allocations.
        unsafe {
            Bufs {
                own: b.own.get_mut(),
                whole: b.whole.get_mut(),
                whole2: b.whole2.get_mut(),
            }
        }
    }
}

/// A rank's buffers as a collective call sees them (see [`RankBufs`]).
struct Bufs<'a> {
    own: &'a mut [u64],
    whole: &'a mut [u64],
    whole2: &'a mut [u64],
}

/// One call of a collective with one algorithm, on this rank's buffers.
type Call = Box<dyn Fn(&Comm, &mut Bufs<'_>) -> corecoll::Result<()> + Sync>;

/// A limit kernel: `iters` repetitions of the ideal data movement on every rank's buffers of
/// the [`Store`], on the calling rank (see each one's docs for what it may touch).
type Limit = fn(&Comm, &Store, u64);

/// One entry of the table of collectives.
struct Collective {
    /// The collective, as in the group names.
    name: &'static str,
    /// Whether its calls have a size (all but the barrier).
    sized: bool,
    /// Buffers of p·S bytes a rank needs beside its own S bytes: 1 or 2.
    wholes: usize,
    /// Every algorithm, `auto` first, with how to call it.
    algorithms: fn() -> Vec<(&'static str, Call)>,
    /// The bytes-moved bound, if the collective has one.
    limit: Option<Limit>,
}

/// The algorithms `algs` (names by `name`), each called through `call`.
fn each<A: Copy + Send + Sync + 'static>(
    algs: &[A],
    name: fn(A) -> &'static str,
    call: fn(&Comm, &mut Bufs<'_>, A) -> corecoll::Result<()>,
) -> Vec<(&'static str, Call)> {
    algs.iter()
        .map(|&a| {
            let f: Call = Box::new(move |comm, b| call(comm, b, a));
            (name(a), f)
        })
        .collect()
}

/// The table: every collective this bench measures (see the module docs).
fn collectives() -> Vec<Collective> {
    const AUTO: Block = Block::Auto;
    vec![
        Collective {
            name: "broadcast",
            sized: true,
            wholes: 1,
            algorithms: || {
                use Broadcast::*;
                let algs = [
                    Auto,
                    Binomial,
                    PipelinedTree { block: AUTO },
                    ScatterAllgather,
                    Direct,
                ];
                each(&algs, Broadcast::name, |c, b, a| {
                    c.broadcast_with(b.own, 0, a)
                })
            },
            limit: None,
        },
        Collective {
            name: "reduce",
            sized: true,
            wholes: 1,
            algorithms: || {
                use Reduce::*;
                let algs = [Auto, Binomial, PipelinedTree { block: AUTO }, Direct];
                each(&algs, Reduce::name, |c, b, a| {
                    c.reduce_with(b.own, op::Sum, 0, a)
                })
            },
            limit: None,
        },
        Collective {
            name: "scan",
            sized: true,
            wholes: 1,
            algorithms: || {
                use Scan::*;
                let algs = [Auto, RecursiveDoubling, PipelinedTree { block: AUTO }];
                each(&algs, Scan::name, |c, b, a| c.scan_with(b.own, op::Sum, a))
            },
            limit: None,
        },
        Collective {
            name: "gather",
            sized: true,
            wholes: 1,
            algorithms: || {
                use Gather::*;
                each(&[Auto, Linear, Binomial], Gather::name, |c, b, a| {
                    c.gather_with(b.own, b.whole, 0, a)
                })
            },
            limit: None,
        },
        Collective {
            name: "scatter",
            sized: true,
            wholes: 1,
            algorithms: || {
                use Scatter::*;
                each(&[Auto, Linear, Binomial], Scatter::name, |c, b, a| {
                    c.scatter_with(b.whole, b.own, 0, a)
                })
            },
            limit: None,
        },
        Collective {
            name: "allgather",
            sized: true,
            wholes: 1,
            algorithms: || {
                use Allgather::*;
                let algs = [Auto, Ring, RecursiveDoubling, Bruck, Direct];
                each(&algs, Allgather::name, |c, b, a| {
                    c.allgather_with(b.own, b.whole, a)
                })
            },
            limit: Some(allgather_limit),
        },
        Collective {
            name: "alltoall",
            sized: true,
            wholes: 2,
            algorithms: || {
                use Alltoall::*;
                each(
                    &[Auto, Pairwise, Bruck, Direct],
                    Alltoall::name,
                    |c, b, a| c.alltoall_with(b.whole, b.whole2, a),
                )
            },
            limit: Some(alltoall_limit),
        },
        Collective {
            name: "reduce_scatter",
            sized: true,
            wholes: 1,
            algorithms: || {
                use ReduceScatter::*;
                let algs = [Auto, Ring, RecursiveHalving, Direct];
                each(&algs, ReduceScatter::name, |c, b, a| {
                    c.reduce_scatter_block_with(b.whole, b.own, op::Sum, a)
                })
            },
            limit: None,
        },
        Collective {
            name: "allreduce",
            sized: true,
            wholes: 1,
            algorithms: || {
                use Algorithm::*;
                let algs = [
                    Auto,
                    Linear,
                    Chain { block: AUTO },
                    Binomial,
                    RecursiveDoubling,
                    Rabenseifner,
                    Ring { block: AUTO },
                    PipelinedTree { block: AUTO },
                    DualRoot { block: AUTO },
                    TwoTree { block: AUTO },
                    Direct,
                ];
                each(&algs, Algorithm::name, |c, b, a| {
                    c.allreduce_with(b.own, op::Sum, a)
                })
            },
            limit: None,
        },
        Collective {
            name: "barrier",
            sized: false,
            wholes: 1,
            algorithms: || {
                use Barrier::*;
                each(&[Auto, Dissemination, Tree], Barrier::name, |c, _, a| {
                    c.barrier_with(a)
                })
            },
            limit: None,
        },
    ]
}

/// The allgather's limit kernel: rank r copies every rank's `own` block, its own first and
/// then r + 1, r + 2, … (mod p), into its `whole`, `iters` times.
fn allgather_limit(comm: &Comm, store: &Store, iters: u64) {
    let (p, r, n) = (comm.size(), comm.rank(), store.n);
    // SAFETY: in a limit run no rank writes an `own` buffer, and rank r alone touches its
    // `whole` (see `Store`).
    let (blocks, recv) = unsafe {
        let blocks: Vec<&[u64]> = (0..p).map(|q| store.ranks[(r + q) % p].own.get()).collect();
        (blocks, store.ranks[r].whole.get_mut())
    };
    for _ in 0..iters {
        for (i, src) in blocks.iter().enumerate() {
            let q = (r + i) % p;
            recv[q * n..(q + 1) * n].copy_from_slice(black_box(src));
        }
        black_box(&mut *recv);
    }
}

/// The all-to-all's limit kernel: rank r copies block r of every rank's `whole` (the send
/// buffers), its own first and then r + 1, r + 2, … (mod p), into block q of its `whole2`,
/// `iters` times: the p·S bytes per rank that `Direct` moves.
fn alltoall_limit(comm: &Comm, store: &Store, iters: u64) {
    let (p, r, n) = (comm.size(), comm.rank(), store.n);
    // SAFETY: in a limit run no rank writes a `whole` buffer, and rank r alone touches its
    // `whole2` (see `Store`).
    let (blocks, recv) = unsafe {
        let blocks: Vec<&[u64]> = (0..p)
            .map(|q| &store.ranks[(r + q) % p].whole.get()[r * n..(r + 1) * n])
            .collect();
        (blocks, store.ranks[r].whole2.get_mut())
    };
    for _ in 0..iters {
        for (i, src) in blocks.iter().enumerate() {
            let q = (r + i) % p;
            recv[q * n..(q + 1) * n].copy_from_slice(black_box(src));
        }
        black_box(&mut *recv);
    }
}

/// What a benchmark repeats.
#[derive(Clone, Copy)]
enum Work<'a> {
    /// A collective with one algorithm, on every rank.
    Call(&'a Call),
    /// Rank 0 copies its `own` into the start of its `whole`.
    Memcpy,
    /// A limit kernel, on every rank.
    Limit(Limit),
}

/// One benchmark: a name (the middle part of its id) and what it repeats.
#[derive(Clone, Copy)]
struct Kernel<'a> {
    name: &'static str,
    work: Work<'a>,
}

/// The kernels of collective `coll` whose algorithms are `algs`: every algorithm, then memcpy
/// and the limit kernel where they apply.
fn kernels<'a>(coll: &Collective, algs: &'a [(&'static str, Call)]) -> Vec<Kernel<'a>> {
    let mut out: Vec<Kernel<'a>> = algs
        .iter()
        .map(|(name, call)| Kernel {
            name,
            work: Work::Call(call),
        })
        .collect();
    if coll.sized {
        out.push(Kernel {
            name: "memcpy",
            work: Work::Memcpy,
        });
    }
    if let Some(limit) = coll.limit {
        out.push(Kernel {
            name: "limit",
            work: Work::Limit(limit),
        });
    }
    out
}

/// Calls before the first barrier of a sample of `bytes` bytes: enough to have every rank
/// spinning for small sizes, none above 1 MiB.
fn warm_up(bytes: usize, iters: u64) -> u64 {
    ((1 << 20) / bytes.max(8)).min(100).min(iters as usize) as u64
}

/// Repeats `work` `iters` times on this rank over `store`.
fn repeat(comm: &Comm, work: Work<'_>, store: &Store, iters: u64) -> corecoll::Result<()> {
    match work {
        Work::Call(call) => {
            // SAFETY: in a collective's run each rank uses only its own buffers.
            let mut b = unsafe { store.bufs(comm.rank()) };
            for _ in 0..iters {
                call(comm, &mut b)?;
            }
        }
        Work::Memcpy if comm.rank() == 0 => {
            // SAFETY: in a memcpy run only rank 0 touches any buffer, and only its own.
            let b = unsafe { store.bufs(0) };
            let dst = &mut b.whole[..store.n];
            for _ in 0..iters {
                dst.copy_from_slice(black_box(&*b.own));
                black_box(&mut *dst);
            }
        }
        Work::Memcpy => {}
        Work::Limit(limit) => limit(comm, store, iters),
    }
    Ok(())
}

/// Rank 0's time for `iters` repetitions of `kernel` over `store` on `team`, from a barrier
/// after the warm-up to a closing barrier.
fn timed(team: &Team, kernel: Kernel<'_>, store: &Store, iters: u64) -> Duration {
    let bytes = store.n * 8;
    let out = team
        .run(|comm| -> corecoll::Result<Duration> {
            repeat(comm, kernel.work, store, warm_up(bytes, iters))?;
            comm.barrier()?;
            let t0 = Instant::now();
            repeat(comm, kernel.work, store, iters)?;
            comm.barrier()?;
            Ok(t0.elapsed())
        })
        .expect("the benchmark run failed");
    let mut times = Vec::with_capacity(out.len());
    for res in out {
        match res {
            Ok(t) => times.push(t),
            Err(e) => panic!("{} failed at {bytes} B: {e}", kernel.name),
        }
    }
    times[0]
}

/// The time per call of `kernel` with `iters` calls per sample.
fn per_call(team: &Team, kernel: Kernel<'_>, store: &Store, iters: u64) -> f64 {
    timed(team, kernel, store, iters).as_secs_f64() / iters as f64
}

/// The algorithms of `coll` that work today on `team`: one call of each on 8 elements per
/// rank. An `Err` (an algorithm still being written) is reported on stderr and skips it.
fn available(team: &Team, coll: &Collective) -> Vec<(&'static str, Call)> {
    let store = Store::new(team.size(), 8, coll.wholes);
    (coll.algorithms)()
        .into_iter()
        .filter(|(name, call)| {
            let out = team
                .run(|comm| {
                    // SAFETY: each rank uses only its own buffers.
                    call(comm, &mut unsafe { store.bufs(comm.rank()) })
                })
                .expect("the probe run failed");
            match out.into_iter().collect::<corecoll::Result<Vec<()>>>() {
                Ok(_) => true,
                Err(e) => {
                    eprintln!("{}_p{}: skipping {name} ({e})", coll.name, team.size());
                    false
                }
            }
        })
        .collect()
}

/// Runs every kernel on a fresh store once, so that no benchmark pays for the first touch.
fn touch(team: &Team, kernels: &[Kernel<'_>], store: &Store) {
    let bytes = store.n * 8;
    for &k in kernels {
        timed(team, k, store, warm_up(bytes, 100).max(2));
    }
}

#[path = "collectives/modes.rs"]
mod modes;

/// Runs every group with criterion's command-line settings, or the interleaved mode.
fn main() {
    if common::interleaved() {
        for p in RANKS {
            modes::interleaved(p);
        }
        return;
    }
    // What criterion_group! and criterion_main! expand to, without the undocumented public
    // function the former generates.
    let mut c = config().configure_from_args();
    for p in RANKS {
        modes::criterion_groups(&mut c, p);
    }
    c.final_summary();
}
