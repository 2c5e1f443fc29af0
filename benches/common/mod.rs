//! Machinery the criterion benches share: the environment switches, group settings and the
//! number formats of the interleaved tables.

#![allow(dead_code)] // each bench uses its own subset

use criterion::{BenchmarkGroup, Criterion, SamplingMode};
use std::time::Duration;

/// Whether the environment variable `name` is set to something other than empty or `0`.
fn flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether `CORECOLL_BENCH_QUICK` asks for a quick check run.
pub fn quick() -> bool {
    flag("CORECOLL_BENCH_QUICK")
}

/// Whether `CORECOLL_BENCH_INTERLEAVED` asks for the interleaved mode instead of criterion.
pub fn interleaved() -> bool {
    flag("CORECOLL_BENCH_INTERLEAVED")
}

/// Rounds of the interleaved mode: 15, or 3 with `CORECOLL_BENCH_QUICK`.
pub fn rounds() -> usize {
    if quick() {
        3
    } else {
        15
    }
}

/// Sample count, warm-up and measurement time for the next benchmarks of `g`: long enough for
/// stable medians of short calls, and bounded for `long` ones (large sizes), where flat
/// sampling (the same `iters` in every sample) keeps a sample of 64 MiB to a few calls instead
/// of criterion's linear ramp of 1 + 2 + … + n. `scale` multiplies the times (a bench with
/// many benchmarks passes less than 1).
pub fn configure(
    g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    long: bool,
    scale: f64,
) {
    let ms = |t: f64| Duration::from_secs_f64(t * scale / 1e3);
    let (samples, warm, measure) = if quick() {
        (10, Duration::from_millis(20), Duration::from_millis(50))
    } else if !long {
        (30, ms(300.0), ms(1500.0))
    } else {
        (10, ms(300.0), ms(1000.0))
    };
    g.sample_size(samples)
        .warm_up_time(warm)
        .measurement_time(measure);
    g.sampling_mode(if long {
        SamplingMode::Flat
    } else {
        SamplingMode::Auto
    });
}

/// Defaults for anything a group does not set; analysis resamples reduced from 100 000,
/// plenty for a median and a large saving over hundreds of benchmarks.
pub fn config() -> Criterion {
    Criterion::default().nresamples(20_000)
}

/// The median of `samples` (sorted in place; the upper middle of an even count).
pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Calls per interleaved sample for a kernel taking `one` seconds per call: about 2 ms'
/// worth, at least one.
pub fn iters_for(one: f64) -> u64 {
    (2e-3 / one.max(1e-9)).clamp(1.0, 1e6) as u64
}

/// Formats seconds as ns, µs or ms with three significant digits.
pub fn fmt_secs(t: f64) -> String {
    let (v, unit) = match t {
        t if t < 1e-6 => (t * 1e9, "ns"),
        t if t < 1e-3 => (t * 1e6, "µs"),
        t => (t * 1e3, "ms"),
    };
    let decimals = if v < 10.0 {
        2
    } else if v < 100.0 {
        1
    } else {
        0
    };
    format!("{v:.decimals$} {unit}")
}

/// Formats a byte count as B, KiB or MiB.
pub fn fmt_size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}
