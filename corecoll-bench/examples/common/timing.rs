//! The timing method shared by the MPI examples (`traff_table2`, `process_sweep`,
//! `hybrid_allreduce --table`), included by each with `#[path = "common/timing.rs"] mod timing;`.
//!
//! **Method** (after the mpicroscope benchmark behind Träff 2021's tables): every repetition of
//! a call starts after a barrier over everything that takes part; its time is the slowest
//! participant's, found by a maximum over all of them *outside* the timed region
//! ([`timed`]). The methods of one table row take turns, one repetition each per round, so
//! that on a shared machine they all see the same changes of load ([`row`]); rounds go on
//! until the row has spent its [`Budget`] of timed calls per method, at least `min_reps` and
//! at most `max_reps` rounds. Every participant sees the same slowest times, so all stop after
//! the same round. Before the timed rounds each method is called once untimed and checked
//! ([`Bench::check`]); a cell that fails its check is shown as `WRONG` ([`shown`]). A cell
//! reports the minimum of its repetitions (the usual statistic of such benchmarks: the time
//! the machine can do it in) and the median (what a call typically costs under the load seen).
//!
//! Also here: the microsecond format of the tables ([`us`]), a table printer (markdown or
//! aligned text, [`render`]), and the parsing of lists of counts and byte sizes.

use std::fmt::Write as _;
use std::time::Instant;

/// How long a row's methods are timed (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Seconds of timed calls per method and row (the slowest participant's times, summed).
    pub seconds: f64,
    /// Rounds at least (each method once per round).
    pub min_reps: usize,
    /// Rounds at most.
    pub max_reps: usize,
}

/// One cell's result: the slowest participant's time of each repetition, summarised.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    /// The check before the timed repetitions passed everywhere.
    pub correct: bool,
    /// Number of timed repetitions.
    pub reps: usize,
    /// Minimum over the repetitions, seconds.
    pub min: f64,
    /// Median over the repetitions, seconds.
    pub median: f64,
}

/// What a row needs from an example: one untimed checked call and one timed call of a method,
/// both collective over every participant.
pub trait Bench {
    /// One way of doing the timed operation.
    type Method: Copy;

    /// Whether one untimed call of `m` gives the exact result everywhere (the same answer on
    /// every participant, e.g. through a maximum of the wrong-element counts).
    fn check(&mut self, m: Self::Method) -> bool;

    /// The slowest participant's time of one call of `m`, seconds, the same on every
    /// participant (usually [`timed`] around the call, with any refilling of in-place
    /// buffers before it).
    fn time(&mut self, m: Self::Method) -> f64;
}

/// Times one call: `barrier()`, then `call()` under the clock, then `slowest(elapsed)` (a
/// maximum over every participant, outside the timed region), whose result is returned.
pub fn timed(barrier: impl FnOnce(), call: impl FnOnce(), slowest: impl FnOnce(f64) -> f64) -> f64 {
    barrier();
    let t = Instant::now();
    call();
    slowest(t.elapsed().as_secs_f64())
}

/// One table row: checks every method once, then times rounds of one repetition of each
/// method in turn until the budget is spent (see the module docs). One cell per method, in
/// the order of `methods`.
pub fn row<B: Bench>(bench: &mut B, methods: &[B::Method], budget: &Budget) -> Vec<Cell> {
    let correct: Vec<bool> = methods.iter().map(|&m| bench.check(m)).collect();
    let mut times = vec![Vec::new(); methods.len()];
    let total = budget.seconds * methods.len() as f64;
    let (mut spent, mut rounds) = (0.0, 0);
    let max_reps = budget.max_reps.max(budget.min_reps);
    while rounds < budget.min_reps || (spent < total && rounds < max_reps) {
        for (j, &m) in methods.iter().enumerate() {
            let t = bench.time(m);
            spent += t;
            times[j].push(t);
        }
        rounds += 1;
    }
    correct
        .into_iter()
        .zip(times)
        .map(|(correct, mut ts)| {
            ts.sort_by(f64::total_cmp);
            Cell {
                correct,
                reps: ts.len(),
                min: ts.first().copied().unwrap_or(f64::NAN),
                median: ts.get(ts.len() / 2).copied().unwrap_or(f64::NAN),
            }
        })
        .collect()
}

/// Microseconds with about four significant digits.
pub fn us(t: f64) -> String {
    let u = t * 1e6;
    if u < 100.0 {
        format!("{u:.2}")
    } else if u < 10_000.0 {
        format!("{u:.1}")
    } else {
        format!("{u:.0}")
    }
}

/// A cell for a table: its time by `stat` in µs, or `WRONG` if its check failed.
pub fn shown(c: &Cell, stat: fn(&Cell) -> f64) -> String {
    if c.correct {
        us(stat(c))
    } else {
        "WRONG".to_string()
    }
}

/// A table: markdown (numbers right-aligned) or aligned plain text.
pub fn render(header: &[String], lines: &[Vec<String>], markdown: bool) -> String {
    let mut out = String::new();
    if markdown {
        let row = |cols: &[String]| format!("| {} |", cols.join(" | "));
        let _ = writeln!(out, "{}", row(header));
        let _ = writeln!(out, "|{}", " ---: |".repeat(header.len()));
        for l in lines {
            let _ = writeln!(out, "{}", row(l));
        }
    } else {
        let widths: Vec<usize> = (0..header.len())
            .map(|j| {
                lines
                    .iter()
                    .filter_map(|l| l.get(j))
                    .map(|c| c.chars().count())
                    .chain([header[j].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for l in std::iter::once(header).chain(lines.iter().map(Vec::as_slice)) {
            let cols: Vec<String> = l
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:>w$}"))
                .collect();
            let _ = writeln!(out, "{}", cols.join("  "));
        }
    }
    out
}

/// A comma-separated list of counts (`1,1000,100_000`; underscores ignored).
pub fn counts(list: &str) -> Result<Vec<usize>, String> {
    list.split(',')
        .map(|c| c.trim().replace('_', ""))
        .map(|c| c.parse::<usize>().map_err(|e| format!("{c}: {e}")))
        .collect()
}

/// A byte size: a number with an optional suffix `B`, `KiB`, `MiB` or `GiB` (`64KiB`).
pub fn bytes(s: &str) -> Result<usize, String> {
    let s = s.trim().replace('_', "");
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s.as_str(), ""),
    };
    let scale = match unit {
        "" | "B" => 1,
        "KiB" | "K" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        _ => return Err(format!("{s}: unknown unit {unit:?} (B, KiB, MiB, GiB)")),
    };
    let n: usize = digits.parse().map_err(|e| format!("{s}: {e}"))?;
    n.checked_mul(scale).ok_or(format!("{s}: too large"))
}

/// A byte size for a table: `8 B`, `64 KiB`, `16 MiB`, or the plain number of bytes when it is
/// not a whole number of the unit.
pub fn show_bytes(b: usize) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// The value of option `name` (`--name VALUE`) in `args`, parsed, or `default` if absent; a
/// panic naming the option if its value does not parse.
pub fn option<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    match args.iter().position(|a| a == name) {
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} takes a value")),
        None => default,
    }
}
