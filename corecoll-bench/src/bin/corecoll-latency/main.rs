//! The runtime's latency check: measures point-to-point latency, barriers, a large
//! pairwise exchange and allreduce (8 B with `Auto`; 1 MiB with `Direct`, `DualRoot` and
//! `Ring`) on this machine and prints them in a table beside the goals; then the 8-byte
//! latency of every collective (`Auto`, one u64 per rank, root 0, `Sum` for the reductions)
//! at p = 2 beside allreduce's on the same data, with the ratio (goal: at most 2×).
//! The library's `benches/collectives.rs` measures the same against every algorithm and size.
//!
//! ```text
//! cargo run --release -p corecoll-bench --bin corecoll-latency
//! ```
//!
//! Every row is 30 samples; a sample is one timed loop of N repetitions (N chosen so that a
//! sample lasts about 10 ms), and the table shows the median, minimum and 95th percentile of
//! the per-repetition time over the samples. Ranks run in one persistent [`Team`] per size,
//! pinned compactly (rank r on the r-th available core, wrapping around); rank 0 is the calling
//! thread and its clock is the one reported. One-way latency is half a ping-pong round trip.
//! Before measuring, a short self-check sends known data around rings of several sizes and
//! splits a communicator, so that a broken build cannot print fast numbers.

use corecoll::op::Sum;
use corecoll::tuning::Collective;
use corecoll::{Algorithm, Block, Comm, Team, EAGER_MAX};
use corecoll_bench::domain::fmt_bytes;
use corecoll_bench::output::grid;
use corecoll_bench::output::this_cpu;
use corecoll_bench::stats::Summary;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Samples per row.
const SAMPLES: usize = 30;
/// How long one sample should last.
const SAMPLE_TARGET: Duration = Duration::from_millis(10);
/// Size of the large exchange and of the memcpy it is compared with.
const BIG: usize = 8 << 20;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// What the ranks repeat in one sample.
#[derive(Debug, Clone, Copy)]
enum Work {
    /// Rank 0 sends `n` bytes to rank 1, which sends them back; ranks ≥ 2 idle.
    PingPong(usize),
    /// Every rank calls `barrier`.
    Barrier,
    /// Ranks 0 and 1 swap `n` bytes with one `sendrecv` each; ranks ≥ 2 idle.
    Exchange(usize),
    /// Every rank copies `n` bytes between its own two buffers (`copy_from_slice`): the memory
    /// traffic of an exchange without any communication.
    Copy(usize),
    /// Every rank sends `n` bytes to itself and receives them: the library's own cost for one
    /// message at both ends, with no waiting and no data crossing cores.
    SelfMessage(usize),
    /// Every rank calls `allreduce_with` on `n` bytes of f64 with `Sum` and this algorithm.
    Allreduce(usize, Algorithm),
    /// Every rank calls a collective (`Auto`) on one u64 of its own (root 0; `Sum`, which
    /// wraps, for the reductions).
    Collective(CollectiveCall),
}

/// One call of a collective on a rank's own element and its two buffers of one element per
/// rank.
type CollectiveCall = fn(&Comm, &mut [u64], &mut [u64], &mut [u64]) -> corecoll::Result<()>;

/// The call of collective `c` in the 8-byte table (`Auto`, root 0, `Sum` for the reductions):
/// every collective of the library's list but the barrier, which the goals measure on its own
/// (and a collective this check does not know yet).
fn collective_call(c: Collective) -> Option<CollectiveCall> {
    Some(match c {
        Collective::Allreduce => |comm, own, _, _| comm.allreduce(own, Sum),
        Collective::Broadcast => |comm, own, _, _| comm.broadcast(own, 0),
        Collective::Reduce => |comm, own, _, _| comm.reduce(own, Sum, 0),
        Collective::Scan => |comm, own, _, _| comm.scan(own, Sum),
        Collective::Gather => |comm, own, all, _| comm.gather(own, all, 0),
        Collective::Scatter => |comm, own, all, _| comm.scatter(all, own, 0),
        Collective::Allgather => |comm, own, all, _| comm.allgather(own, all),
        Collective::Alltoall => |comm, _, all, all2| comm.alltoall(all, all2),
        Collective::ReduceScatter => |comm, own, all, _| comm.reduce_scatter_block(all, own, Sum),
        _ => return None,
    })
}

/// One rank's message buffers for a `Work`: `a` is sent (or, for a ping-pong, sent and
/// received into), `b` is received into. An exchange swaps them after each repetition, so
/// that what a rank sends is always data it has just written, as in an application: the
/// bytes really move between the cores instead of being re-read from a clean copy left in the
/// receiver's cache by the previous repetition.
struct Buffers {
    a: Vec<u8>,
    b: Vec<u8>,
    /// The vector of an allreduce.
    f: Vec<f64>,
    /// A collective's own element and its two buffers of one element per rank.
    own: Vec<u64>,
    all: Vec<u64>,
    all2: Vec<u64>,
}

impl Buffers {
    fn new(work: Work, rank: usize, size: usize) -> Buffers {
        let n = match work {
            Work::PingPong(n) | Work::Exchange(n) | Work::Copy(n) | Work::SelfMessage(n) => n,
            Work::Barrier | Work::Allreduce(..) | Work::Collective(_) => 0,
        };
        let k = usize::from(matches!(work, Work::Collective(_)));
        let f = match work {
            Work::Allreduce(n, _) => vec![1.0 + rank as f64; n / 8],
            _ => Vec::new(),
        };
        Buffers {
            a: vec![rank as u8 + 1; n],
            b: vec![0; n],
            f,
            own: vec![rank as u64 + 1; k],
            all: vec![7; k * size],
            all2: vec![0; k * size],
        }
    }
}

/// Repeats `work` `iters` times on this rank.
fn repeat(comm: &Comm, work: Work, bufs: &mut Buffers, iters: u64) -> corecoll::Result<()> {
    let rank = comm.rank();
    match work {
        // One buffer per rank: each message carries what the sender has just received.
        Work::PingPong(_) if rank == 0 => {
            for _ in 0..iters {
                comm.send(1, &bufs.a)?;
                comm.recv(1, &mut bufs.a)?;
            }
        }
        Work::PingPong(_) if rank == 1 => {
            for _ in 0..iters {
                comm.recv(0, &mut bufs.a)?;
                comm.send(0, &bufs.a)?;
            }
        }
        Work::Exchange(_) if rank < 2 => {
            let peer = 1 - rank;
            for _ in 0..iters {
                comm.sendrecv(peer, &bufs.a, peer, &mut bufs.b)?;
                std::mem::swap(&mut bufs.a, &mut bufs.b);
            }
        }
        Work::Barrier => {
            for _ in 0..iters {
                comm.barrier()?;
            }
        }
        Work::Copy(_) => {
            for _ in 0..iters {
                bufs.b.copy_from_slice(black_box(&bufs.a));
                std::mem::swap(black_box(&mut bufs.a), black_box(&mut bufs.b));
            }
        }
        Work::SelfMessage(_) => {
            for _ in 0..iters {
                comm.send(rank, &bufs.a)?;
                comm.recv(rank, &mut bufs.a)?;
            }
        }
        Work::Allreduce(_, alg) => {
            for _ in 0..iters {
                comm.allreduce_with(&mut bufs.f, Sum, alg)?;
                // Sums double every value; start again (on every rank alike: the values are
                // equal everywhere) long before they would overflow.
                if bufs.f.first().is_some_and(|&x| x > 1e300) {
                    bufs.f.fill(1.0);
                }
            }
        }
        Work::Collective(call) => {
            for _ in 0..iters {
                call(comm, &mut bufs.own, &mut bufs.all, &mut bufs.all2)?;
            }
        }
        Work::PingPong(_) | Work::Exchange(_) => {}
    }
    Ok(())
}

/// Runs `samples` timed loops of `iters` repetitions of `work` in one run of `team` (after a
/// warm-up, with a barrier before each loop) and returns rank 0's time per loop.
fn run_samples(team: &Team, work: Work, samples: usize, iters: u64) -> AnyResult<Vec<Duration>> {
    let mut per_rank = team.run(|comm| -> corecoll::Result<Vec<Duration>> {
        let mut bufs = Buffers::new(work, comm.rank(), comm.size());
        repeat(comm, work, &mut bufs, iters.div_ceil(10).min(1000))?;
        let mut times = Vec::with_capacity(samples);
        for _ in 0..samples {
            comm.barrier()?;
            let t0 = Instant::now();
            repeat(comm, work, &mut bufs, iters)?;
            times.push(t0.elapsed());
        }
        Ok(times)
    })?;
    Ok(per_rank.swap_remove(0)?)
}

/// The repetition count that makes one sample last about `SAMPLE_TARGET`, found by timing
/// growing loops with `time(iters)`.
fn calibrate(mut time: impl FnMut(u64) -> AnyResult<Duration>) -> AnyResult<u64> {
    let mut iters = 1u64;
    loop {
        let t = time(iters)?;
        if t >= SAMPLE_TARGET / 2 || iters >= 1 << 30 {
            let scale = SAMPLE_TARGET.as_secs_f64() / t.as_secs_f64().max(1e-9);
            return Ok(((iters as f64 * scale).round() as u64).max(1));
        }
        let grow = (SAMPLE_TARGET.as_secs_f64() / t.as_secs_f64().max(1e-9)).clamp(2.0, 100.0);
        iters = (iters as f64 * grow).ceil() as u64;
    }
}

/// Seconds per repetition over the samples (median, minimum and 95th percentile among the
/// rest), each sample divided by `iters * per` (`per` = 2 turns a ping-pong round trip into
/// one way).
fn stats(samples: &[Duration], iters: u64, per: f64) -> Summary {
    let s: Vec<f64> = samples
        .iter()
        .map(|d| d.as_secs_f64() / (iters as f64 * per))
        .collect();
    Summary::of(&s).expect("at least one sample")
}

/// Measures `work` on `team`; `per` as in [`stats`].
fn measure(team: &Team, work: Work, per: f64) -> AnyResult<Summary> {
    let iters = calibrate(|i| Ok(run_samples(team, work, 1, i)?[0]))?;
    Ok(stats(&run_samples(team, work, SAMPLES, iters)?, iters, per))
}

/// Measures a plain memcpy of `n` bytes (`copy_from_slice`) on the calling thread, swapping
/// source and destination after each copy as the exchange swaps its buffers.
fn measure_memcpy(n: usize) -> AnyResult<Summary> {
    let mut src = vec![1u8; n];
    let mut dst = vec![0u8; n];
    let mut time = |iters: u64| {
        let t0 = Instant::now();
        for _ in 0..iters {
            dst.copy_from_slice(black_box(&src));
            std::mem::swap(black_box(&mut src), black_box(&mut dst));
        }
        t0.elapsed()
    };
    time(2);
    let iters = calibrate(|i| Ok(time(i)))?;
    let samples: Vec<Duration> = (0..SAMPLES).map(|_| time(iters)).collect();
    Ok(stats(&samples, iters, 1.0))
}

/// The floor under any message: two plain threads on the cores of ranks 0 and 1 handing a
/// counter back and forth through two cache-line-padded atomics (no library, no payload, no
/// checks). Reported one way, as the ping-pong rows are, so the two can be compared within one
/// run (on a virtual machine this floor itself moves from run to run).
fn measure_handoff(cores: &[Option<usize>]) -> AnyResult<Summary> {
    use crossbeam_utils::CachePadded;
    use std::sync::atomic::{AtomicU64, Ordering::*};
    let pin = |r: usize| {
        if let Some(Some(c)) = cores.get(r) {
            core_affinity::set_for_current(core_affinity::CoreId { id: *c });
        }
    };
    let (ping, pong) = (
        CachePadded::new(AtomicU64::new(0)),
        CachePadded::new(AtomicU64::new(0)),
    );
    let rounds = |from: u64, iters: u64| {
        let t0 = Instant::now();
        for i in from + 1..=from + iters {
            ping.store(i, Release);
            while pong.load(Acquire) != i {
                std::hint::spin_loop();
            }
        }
        t0.elapsed()
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(1);
            let mut i = 0;
            loop {
                let v = ping.load(Acquire);
                if v == u64::MAX {
                    return;
                }
                if v != i {
                    i = v;
                    pong.store(i, Release);
                }
                std::hint::spin_loop();
            }
        });
        // The timing side on a thread of its own too, so the caller's affinity is untouched.
        let timer = s.spawn(|| {
            pin(0);
            let mut next = 0u64;
            let mut time = |iters: u64| {
                let t = rounds(next, iters);
                next += iters;
                t
            };
            time(1000);
            let stats = calibrate(|i| Ok(time(i))).map(|iters| {
                let samples: Vec<Duration> = (0..SAMPLES).map(|_| time(iters)).collect();
                stats(&samples, iters, 2.0)
            });
            ping.store(u64::MAX, Release);
            stats.map_err(|e| e.to_string())
        });
        let stats = timer.join().map_err(|_| "the handoff timer panicked")?;
        Ok(stats?)
    })
}

/// Sends known data around rings of several sizes and lengths (eager, exactly eager max,
/// rendezvous), then splits the world by parity and meets at a barrier in each half.
fn self_check() -> AnyResult<()> {
    let lens = [0usize, 1, EAGER_MAX / 8, EAGER_MAX / 8 + 1, 100_000];
    for p in [1usize, 2, 3, 5, 8, 17] {
        let out = corecoll::run(p, |comm| -> corecoll::Result<(usize, usize)> {
            let (r, p) = (comm.rank(), comm.size());
            let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
            for len in lens {
                let send: Vec<u64> = (0..len as u64).map(|i| i * 1000 + r as u64).collect();
                let mut recv = vec![u64::MAX; len];
                comm.sendrecv(next, &send, prev, &mut recv)?;
                let good = recv
                    .iter()
                    .enumerate()
                    .all(|(i, &v)| v == i as u64 * 1000 + prev as u64);
                assert!(
                    good,
                    "rank {r} of {p}: wrong data from rank {prev} ({len} u64)"
                );
                comm.barrier()?;
            }
            let sub = comm
                .split(Some(r % 2), p - r)?
                .expect("every rank has a colour");
            sub.barrier()?;
            Ok((sub.rank(), sub.size()))
        })?;
        for (r, res) in out.into_iter().enumerate() {
            let (sub_rank, sub_size) = res?;
            let same_parity = (r % 2..p).step_by(2).count();
            // Keys p - r order each half by descending world rank.
            let expected_rank = (r + 2..p).step_by(2).count();
            if (sub_rank, sub_size) != (expected_rank, same_parity) {
                return Err(format!(
                    "split on p = {p}: rank {r} got rank {sub_rank} of {sub_size}, \
                     expected {expected_rank} of {same_parity}"
                )
                .into());
            }
        }
    }
    Ok(())
}

/// A time in seconds in the unit that suits it, with three significant digits.
fn fmt_time(secs: f64) -> String {
    grid::fmt_time(secs * 1e6)
}

/// One line of the table.
struct Row {
    what: String,
    stats: Summary,
    /// Bytes moved per repetition, for the bandwidth column.
    bytes: Option<usize>,
    /// The goal as text, and whether the median meets it.
    goal: Option<(String, bool)>,
}

impl Row {
    fn new(what: impl Into<String>, stats: Summary) -> Row {
        Row {
            what: what.into(),
            stats,
            bytes: None,
            goal: None,
        }
    }
    fn bytes(mut self, n: usize) -> Row {
        self.bytes = Some(n);
        self
    }
    /// Goal: median at most `limit` seconds.
    fn at_most(mut self, limit: f64) -> Row {
        self.goal = Some((format!("≤ {}", fmt_time(limit)), self.stats.median <= limit));
        self
    }
}

fn print_rows(title: &str, rows: &[Row]) {
    println!("\n{title}");
    println!(
        "  {:<48} {:>10} {:>10} {:>10} {:>7}   {:<24} met",
        "measurement", "median", "min", "p95", "GB/s", "goal"
    );
    for r in rows {
        let bw = r.bytes.map_or("".to_string(), |n| {
            format!("{:.2}", n as f64 / r.stats.median / 1e9)
        });
        let (goal, met) = match &r.goal {
            Some((g, ok)) => (g.as_str(), if *ok { "yes" } else { "NO" }),
            None => ("", ""),
        };
        println!(
            "  {:<48} {:>10} {:>10} {:>10} {:>7}   {:<24} {}",
            r.what,
            fmt_time(r.stats.median),
            fmt_time(r.stats.min),
            fmt_time(r.stats.p95),
            bw,
            goal,
            met
        );
    }
}

/// How a team of `p` ranks sits on `cores` cores, for a row label.
fn placement(p: usize, cores: usize) -> String {
    if p > cores {
        format!("p={p}, {p} ranks on {cores} cores")
    } else {
        format!("p={p}")
    }
}

/// `--sweep`: one-way latency over message sizes around the eager/rendezvous boundary and
/// beyond, the measurement `EAGER_MAX` was chosen by (rebuild with another `EAGER_MAX` in
/// the library's src/mailbox/mod.rs to compare).
fn sweep() -> AnyResult<()> {
    let team2 = Team::new(2)?;
    println!("one-way latency by size, p=2 (EAGER_MAX = {EAGER_MAX} B)");
    println!(
        "  {:>8}  {:>10}  {:>10}  {:>7}  protocol",
        "bytes", "median", "min", "GB/s"
    );
    for n in [
        8, 64, 256, 512, 768, 1024, 1025, 1536, 2048, 3072, 4096, 4097, 8192, 16384, 65536,
    ] {
        let s = measure(&team2, Work::PingPong(n), 2.0)?;
        let how = if n <= 16 {
            "inline"
        } else if n <= EAGER_MAX {
            "eager"
        } else {
            "rendezvous"
        };
        println!(
            "  {n:>8}  {:>10}  {:>10}  {:>7.2}  {how}",
            fmt_time(s.median),
            fmt_time(s.min),
            n as f64 / s.median / 1e9
        );
    }
    Ok(())
}

fn main() -> AnyResult<()> {
    if std::env::args().any(|a| a == "--sweep") {
        return sweep();
    }
    let started = Instant::now();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("corecoll latency: point-to-point, barrier, exchange and allreduce on this machine");
    println!(
        "  cores: {cores}{}; ranks pinned compactly (rank r on core r mod {cores}); \
         rank 0 = the calling thread",
        match this_cpu() {
            m if m.is_empty() => String::new(),
            m => format!(" ({m})"),
        }
    );
    println!(
        "  each row: {SAMPLES} samples of ~{} ms; median / min / p95 per operation; \
         GB/s = bytes / median",
        SAMPLE_TARGET.as_millis()
    );

    let t = Instant::now();
    self_check()?;
    println!(
        "  self-check: ok (ring sendrecv p = 1, 2, 3, 5, 8, 17 with 0 … 100000 u64; split) in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let team2 = Team::new(2)?;
    let one_way = |n: usize| measure(&team2, Work::PingPong(n), 2.0);
    let barrier = |p: usize| -> AnyResult<Summary> {
        let team = Team::new(p)?;
        measure(&team, Work::Barrier, 1.0)
    };

    let lat8 = one_way(8)?;
    let floor = measure_handoff(team2.cores())?;
    let bar2 = measure(&team2, Work::Barrier, 1.0)?;
    let bar8 = barrier(8)?;
    let exch = measure(&team2, Work::Exchange(BIG), 1.0)?;
    let copy = measure_memcpy(BIG)?;
    let ratio = exch.median / copy.median;
    let mut exch_row = Row::new(
        format!("sendrecv {} pairwise exchange, p=2", fmt_bytes(BIG)),
        exch,
    )
    .bytes(BIG);
    exch_row.goal = Some((format!("≤ 1.2× memcpy (is {ratio:.2}×)"), ratio <= 1.2));
    let ar8 = measure(&team2, Work::Allreduce(8, Algorithm::Auto), 1.0)?;
    let goals = [
        Row::new("one-way latency 8 B, p=2 (ping-pong / 2)", lat8)
            .bytes(8)
            .at_most(60e-9),
        Row::new("  floor: bare cache-line handoff, same cores", floor),
        Row::new("barrier p=2", bar2).at_most(100e-9),
        Row::new(format!("barrier {}", placement(8, cores)), bar8).at_most(20e-6),
        exch_row,
        Row::new(format!("memcpy {} (copy_from_slice)", fmt_bytes(BIG)), copy).bytes(BIG),
        Row::new("allreduce 8 B (one f64, Sum, Auto), p=2", ar8).at_most(120e-9),
    ];
    print_rows("goals", &goals);

    let mut more = Vec::new();
    for (n, note) in [
        (64, String::new()),
        (EAGER_MAX, " (eager max)".to_string()),
        (EAGER_MAX + 1, " (first rendezvous)".to_string()),
        (64 << 10, String::new()),
        (1 << 20, String::new()),
    ] {
        let label = if n == EAGER_MAX + 1 {
            format!("{}+1", fmt_bytes(EAGER_MAX))
        } else {
            fmt_bytes(n)
        };
        more.push(Row::new(format!("one-way latency {label}, p=2{note}"), one_way(n)?).bytes(n));
    }
    more.push(
        Row::new(
            format!("memcpy {} on each of 2 ranks at once", fmt_bytes(BIG)),
            measure(&team2, Work::Copy(BIG), 1.0)?,
        )
        .bytes(BIG),
    );
    more.push(Row::new(
        "send + recv to itself, 8 B, 1 rank (library cost, no waiting)",
        measure(&Team::new(1)?, Work::SelfMessage(8), 1.0)?,
    ));
    for p in [4, 16] {
        more.push(Row::new(
            format!("barrier {}", placement(p, cores)),
            barrier(p)?,
        ));
    }
    for alg in [
        Algorithm::Direct,
        Algorithm::DualRoot { block: Block::Auto },
        Algorithm::Ring { block: Block::Auto },
    ] {
        let n = 1 << 20;
        more.push(
            Row::new(
                format!("allreduce {} f64 Sum, p=2, {}", fmt_bytes(n), alg.name()),
                measure(&team2, Work::Allreduce(n, alg), 1.0)?,
            )
            .bytes(n),
        );
    }
    print_rows("more", &more);

    // Each collective's 8 B latency beside allreduce's on the same data (goal: ≤ 2×).
    let coll_stats = Collective::ALL
        .into_iter()
        .filter_map(|c| Some((c, collective_call(c)?)))
        .map(|(c, call)| Ok((c, measure(&team2, Work::Collective(call), 1.0)?)))
        .collect::<AnyResult<Vec<_>>>()?;
    let (_, ar_u64) = *coll_stats
        .iter()
        .find(|(c, _)| *c == Collective::Allreduce)
        .expect("allreduce is in the table");
    let allreduce = ar_u64.median;
    let ratio_row = |what: String, stats: Summary| {
        let ratio = stats.median / allreduce;
        let mut row = Row::new(what, stats);
        row.goal = Some((format!("≤ 2× allreduce (is {ratio:.2}×)"), ratio <= 2.0));
        row
    };
    let mut colls: Vec<Row> = coll_stats
        .iter()
        .filter(|(c, _)| *c != Collective::Allreduce)
        .map(|&(c, s)| ratio_row(format!("{c} 8 B (one u64, Auto), p=2"), s))
        .collect();
    colls.push(ratio_row("barrier p=2 (from the goals)".into(), bar2));
    colls.push(Row::new("allreduce 8 B (one u64, Sum, Auto), p=2", ar_u64));
    print_rows("collectives: 8 B latency beside allreduce's", &colls);

    let met = goals
        .iter()
        .filter(|r| matches!(r.goal, Some((_, true))))
        .count();
    let total = goals.iter().filter(|r| r.goal.is_some()).count();
    let coll_met = colls
        .iter()
        .filter(|r| matches!(r.goal, Some((_, true))))
        .count();
    let coll_total = colls.iter().filter(|r| r.goal.is_some()).count();
    println!(
        "\ngoals met: {met} of {total}, collective latency goals met: {coll_met} of {coll_total} \
         (medians; goals are stated for a 2-core machine). Took {:.1} s.",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
