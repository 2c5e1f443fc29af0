//! The runtime's latency check: measures point-to-point latency, barriers, a large
//! pairwise exchange and allreduce (8 B with `Auto`; 1 MiB with `Direct`, `DualRoot` and
//! `Ring`) on this machine and prints them in a table beside the goals; then the 8-byte
//! latency of every collective (`Auto`, one u64 per rank, root 0, `Sum` for the reductions)
//! at p = 2 beside allreduce's on the same data, with the ratio (goal: at most 2×); last, the
//! requests: the persistent and non-blocking 8-byte allreduce, a ping-pong and a neighbour
//! exchange written with requests (a scope per round trip or exchange), each beside its
//! blocking form and the handoff floor, in interleaved rounds (goals: persistent ≤ 0.75×
//! blocking and ≤ 2× the floor, non-blocking allreduce ≤ 1.5× blocking, the ping-pong and the
//! exchange ≤ 1.3× theirs; each the median of the rounds' ratios). `--requests` runs that table
//! alone.
//! The library's `benches/collectives.rs` measures the same against every algorithm and size.
//!
//! ```text
//! cargo run --release -p corecoll-bench --bin corecoll-latency
//! cargo run --release -p corecoll-bench --bin corecoll-latency -- --requests
//! ```
//!
//! Every row is 30 samples; a sample is one timed loop of N repetitions (N chosen so that a
//! sample lasts about 10 ms), and the table shows the median, minimum and 95th percentile of
//! the per-repetition time over the samples; the last table's rows take their samples in
//! turn, one of each per round, so that the machine's changes of load (on a virtual machine
//! the floor alone moves 2–3× from minute to minute) fall on all of them alike. Ranks run in
//! one persistent [`Team`] per size, pinned compactly (rank r on the r-th available core,
//! wrapping around); rank 0 is the calling thread and its clock is the one reported. One-way latency is half a ping-pong round trip.
//! Before measuring, a short self-check sends known data around rings of several sizes and
//! splits a communicator, so that a broken build cannot print fast numbers.

#[cfg(feature = "mpi")]
mod mpi_requests;
mod self_check;
mod work;

use corecoll::unstable::EAGER_MAX;
use corecoll::Collective;
use corecoll::{Algorithm, Block, Team};
use corecoll_bench::domain::fmt_bytes;
use corecoll_bench::output::grid;
use corecoll_bench::output::this_cpu;
use corecoll_bench::stats::Summary;
use self_check::self_check;
use std::time::Instant;
use work::{
    collective_call, measure, measure_handoff, measure_interleaved, measure_memcpy, AnyResult, Work,
};
use work::{SAMPLES, SAMPLE_TARGET};

/// Size of the large exchange and of the memcpy it is compared with.
const BIG: usize = 8 << 20;

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

/// Persistent and non-blocking calls beside their blocking forms and the handoff floor, in
/// interleaved rounds: the goal's ratios are taken round by round, like with like.
fn requests_table(team2: &Team) -> AnyResult<()> {
    let works = [
        (Work::Persistent(8), 1.0),
        (Work::Nonblocking(8), 1.0),
        (Work::Allreduce(8, Algorithm::Auto), 1.0),
        (Work::RequestPingPong(8), 1.0),
        (Work::PingPong(8), 1.0),
        (Work::RequestExchange(8), 1.0),
        (Work::Exchange(8), 1.0),
    ];
    let per_round = measure_interleaved(team2, &works, SAMPLES)?;
    let summary = |k: usize| Summary::of(&per_round[k]).expect("at least one round");
    let floor2 = &per_round[works.len()];
    // The median over the rounds of row `num`'s time over `den`'s.
    let ratio = |num: usize, den: &[f64]| {
        let r: Vec<f64> = per_round[num].iter().zip(den).map(|(p, d)| p / d).collect();
        Summary::of(&r).expect("at least one round").median
    };
    let goal = |row: Row, text: String, met: bool| Row {
        goal: Some((text, met)),
        ..row
    };
    let (vs_blocking, vs_floor) = (ratio(0, &per_round[2]), ratio(0, floor2));
    let nb = ratio(1, &per_round[2]);
    let pp = ratio(3, &per_round[4]);
    let ex = ratio(5, &per_round[6]);
    let requests = [
        goal(
            Row::new("persistent allreduce 8 B, start + wait, p=2", summary(0)),
            format!(
                "≤ 0.75× blocking (is {vs_blocking:.2}×), ≤ 2× floor (is {vs_floor:.2}×), \
                 medians of the rounds' ratios"
            ),
            vs_blocking <= 0.75 && vs_floor <= 2.0,
        ),
        goal(
            Row::new(
                "non-blocking allreduce 8 B, scope + start + wait, p=2",
                summary(1),
            ),
            format!("≤ 1.5× blocking (is {nb:.2}×)"),
            nb <= 1.5,
        ),
        Row::new(
            "blocking allreduce 8 B (Auto), p=2, same rounds",
            summary(2),
        ),
        goal(
            Row::new(
                "ping-pong 8 B with irecv + isend, scope per round trip",
                summary(3),
            ),
            format!("≤ 1.3× recv + send (is {pp:.2}×)"),
            pp <= 1.3,
        ),
        Row::new("ping-pong 8 B with recv + send, same rounds", summary(4)),
        goal(
            Row::new(
                "exchange 8 B with irecv + isend + wait_all, scope per exchange",
                summary(5),
            ),
            format!("≤ 1.3× sendrecv (is {ex:.2}×)"),
            ex <= 1.3,
        ),
        Row::new("exchange 8 B with sendrecv, same rounds", summary(6)),
        Row::new(
            "  floor: bare cache-line handoff, same rounds",
            summary(works.len()),
        ),
    ];
    print_rows("requests: persistent and non-blocking calls", &requests);
    #[cfg(feature = "mpi")]
    mpi_rows(&[summary(5).median, summary(3).median, summary(1).median]);
    Ok(())
}

/// The MPI library's rows of the requests table (`mpi_requests`), and corecoll's exchange,
/// ping-pong and non-blocking allreduce with requests (`ours`, medians of this run) beside
/// its non-blocking ones.
#[cfg(feature = "mpi")]
fn mpi_rows(ours: &[f64; 3]) {
    let rounds = match mpi_requests::measure(SAMPLES) {
        Ok(r) => r,
        Err(e) => {
            println!("\n(the MPI rows are missing: {e})");
            return;
        }
    };
    let summary = |k: usize| Summary::of(&rounds[k]).expect("at least one round");
    let rows: Vec<Row> = mpi_requests::WORKS
        .iter()
        .enumerate()
        .map(|(k, name)| Row::new(format!("MPI {name}, 2 processes"), summary(k)))
        .collect();
    print_rows(
        "requests: the same with the MPI library, 2 processes bound to cores 0 and 1",
        &rows,
    );
    // Medians of separate runs: the MPI job runs after the threads' rounds.
    let theirs = [summary(2).median, summary(0).median, summary(4).median];
    println!(
        "  corecoll against MPI, with requests (medians of the two runs): exchange {:.2}×, \
         ping-pong {:.2}×, non-blocking allreduce {:.2}× (goal for the exchange and the \
         ping-pong: ≤ 0.4×)",
        ours[0] / theirs[0],
        ours[1] / theirs[1],
        ours[2] / theirs[2]
    );
}

/// What `--help` prints, and a wrong argument beside its error.
const USAGE: &str = "usage: corecoll-latency [--requests | --sweep]
  (none)      the latency check: its goals, every collective at 8 bytes, the requests table
  --requests  the requests table alone (p = 2)
  --sweep     one-way latency over message sizes around the eager/rendezvous boundary";

fn main() -> AnyResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return Ok(());
    }
    let known = ["--requests", "--sweep", "--mpi-requests"];
    if let Some(bad) = args.first().filter(|a| !known.contains(&a.as_str())) {
        eprintln!("corecoll-latency: unknown argument `{bad}`\n{USAGE}");
        std::process::exit(2);
    }
    if args.iter().any(|a| a == "--sweep") {
        return sweep();
    }
    #[cfg(feature = "mpi")]
    {
        if let Some(i) = args.iter().position(|a| a == "--mpi-requests") {
            let file = args.get(i + 1).ok_or("--mpi-requests FILE ROUNDS")?;
            let rounds = args
                .get(i + 2)
                .and_then(|r| r.parse().ok())
                .unwrap_or(SAMPLES);
            return Ok(mpi_requests::worker(std::path::Path::new(file), rounds)?);
        }
    }
    if args.iter().any(|a| a == "--requests") {
        println!("corecoll latency: the requests table alone (p = 2)");
        return requests_table(&Team::new(2)?);
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

    requests_table(&team2)?;

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
