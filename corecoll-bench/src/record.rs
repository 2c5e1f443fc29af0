//! One row of the results: a (collective, algorithm or baseline, size) cell's statistics, as
//! the table prints it and as the CSV and JSON files hold it (the schema is this struct's
//! fields, in order). A measured cell becomes a record in `cell`; the files are written and
//! read in `output`.

use crate::stats::{algbw_gbs, busbw_factor, Summary};
use serde::{Deserialize, Deserializer, Serialize};

/// Where a row's numbers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// One of corecoll's algorithms (`auto` included).
    Corecoll,
    /// A baseline run by this binary on the same threads: `limit`, `std-naive`, `channels`.
    Baseline,
    /// A collective of an MPI library (Open MPI, MPICH), between processes started by its
    /// launcher.
    Mpi,
    /// A peer with threads of its own, what a program would use instead: OpenMP's regions,
    /// a rayon pool (`openmp-reduction`, `openmp-slices`, `rayon-reduce`, `rayon-chunks`).
    Peer,
}

/// The outcome of the check after the timed loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Validation {
    /// The result matched the reference computed sequentially in the harness.
    Pass,
    /// It did not (or the call failed); `note` says how.
    Fail,
    /// Nothing to check (a data-movement limit kernel, a barrier).
    Skipped,
}

impl Validation {
    /// The table's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Validation::Pass => "pass",
            Validation::Fail => "FAIL",
            Validation::Skipped => "-",
        }
    }
}

/// One measured cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The collective (`allreduce`, `broadcast`, …, as `--collective` spells it).
    pub collective: String,
    /// The algorithm (`auto`, `direct`, … as the crate names them) or the baseline (`limit`,
    /// `std-naive`, `channels`, `openmpi`, `mpich-reduce-bcast`, …).
    pub algorithm: String,
    /// Where the numbers come from.
    pub source: Source,
    /// Which ranks ran it: `all` for the whole placement, `socket N` for one socket's cores
    /// under `--per-socket` (MPI rows carry the label of the thread sweep they belong with:
    /// the same number of processes as that sweep has threads).
    pub scope: String,
    /// The placement (`compact`, `spread`, `socket:N`, `cores:LIST`).
    pub placement: String,
    /// Ranks (threads, or MPI processes).
    pub ranks: usize,
    /// Element type (`f64`, `f32`, `i64`, `i32`, `u8`).
    pub dtype: String,
    /// Reduction op (`sum`, `max`, …; `-` for the collectives without one).
    pub op: String,
    /// Bytes per rank: the largest buffer a rank passes (the vector of allreduce, broadcast,
    /// reduce and scan; the p blocks of allgather, alltoall, reduce-scatter, gather and
    /// scatter), as nccl-tests counts.
    pub bytes: usize,
    /// Elements in that buffer.
    pub count: usize,
    /// `warm` (buffers reused), `cold` (a different buffer each iteration) or `touch` (buffers
    /// reused, each rank writing its whole input before every call).
    pub cache: String,
    /// Timed iterations.
    pub iters: usize,
    /// Fastest iteration, µs (an iteration's time is max(end) − min(start) over the ranks).
    #[serde(deserialize_with = "f64_or_nan")]
    pub min_us: f64,
    /// Median iteration, µs.
    #[serde(deserialize_with = "f64_or_nan")]
    pub median_us: f64,
    /// 95th percentile, µs.
    #[serde(deserialize_with = "f64_or_nan")]
    pub p95_us: f64,
    /// Mean, µs.
    #[serde(deserialize_with = "f64_or_nan")]
    pub mean_us: f64,
    /// Algorithm bandwidth `bytes / median`, GB/s (10⁹ bytes).
    #[serde(deserialize_with = "f64_or_nan")]
    pub algbw_gbs: f64,
    /// Bus bandwidth: `algbw` times the collective's nccl-tests factor, GB/s.
    #[serde(deserialize_with = "f64_or_nan")]
    pub busbw_gbs: f64,
    /// The limit kernel's median as a percentage of this row's median (100 = as fast as the
    /// limit); empty where there is no limit kernel.
    pub limit_pct: Option<f64>,
    /// The check after the timed loop.
    pub validation: Validation,
    /// For floating-point sums: the largest relative error of any element against the exactly
    /// rounded sum.
    pub max_rel_error: Option<f64>,
    /// What went wrong, or what else is worth knowing about the row.
    pub note: String,
    /// For corecoll's `auto`: the algorithm it chose (`Comm::auto_choice`); empty otherwise
    /// (and in result files without the column).
    #[serde(default)]
    pub auto_choice: String,
    /// Under `--touch` (`cache` is `touch`): the median time, µs, that the slowest rank took
    /// to write its whole input before a call, outside the call's timed window; empty
    /// otherwise (and in result files without the column).
    #[serde(default)]
    pub touch_us: Option<f64>,
    /// Context switches per timed iteration (its barrier included) of all the ranks' threads
    /// or processes together (getrusage(2)); empty where not counted (and in result files
    /// without the column).
    #[serde(default)]
    pub switches: Option<f64>,
}

impl Record {
    /// Sets the statistics and bandwidths from the per-iteration `times` (seconds); leaves
    /// them as they are when there are none.
    pub fn set_times(&mut self, times: &[f64]) {
        if let Some(s) = Summary::of(times) {
            self.iters = s.iters;
            self.min_us = s.min * 1e6;
            self.p95_us = s.p95 * 1e6;
            self.mean_us = s.mean * 1e6;
            self.set_median(s.median);
        }
    }

    /// Sets the median to `seconds`, and the bandwidths, which are computed from it.
    pub fn set_median(&mut self, seconds: f64) {
        self.median_us = seconds * 1e6;
        self.algbw_gbs = algbw_gbs(self.bytes, seconds);
        self.busbw_gbs = self.algbw_gbs * busbw_factor(&self.collective, self.ranks);
    }
}

/// Deserialises an `f64` that may be missing: JSON's `null` (what serde_json writes for NaN)
/// and an empty CSV field become NaN. For the `#[serde(deserialize_with)]` of [`Record`]'s
/// times and bandwidths.
pub fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Records for the tests of the modules that print, combine and plot them.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A record of allreduce `algorithm` at `bytes` with median `median_us`; the rest
    /// plausible.
    pub fn rec(algorithm: &str, bytes: usize, median_us: f64) -> Record {
        let source = match algorithm {
            "limit" | "std-naive" | "channels" => Source::Baseline,
            "mpi" | "mpi-reduce-bcast" | "openmpi" | "mpich" => Source::Mpi,
            a if a.starts_with("openmp-") || a.starts_with("rayon-") => Source::Peer,
            _ => Source::Corecoll,
        };
        Record {
            collective: "allreduce".into(),
            algorithm: algorithm.into(),
            source,
            scope: "all".into(),
            placement: "compact".into(),
            ranks: 2,
            dtype: "f64".into(),
            op: "sum".into(),
            bytes,
            count: bytes / 8,
            cache: "warm".into(),
            iters: 100,
            min_us: median_us * 0.9,
            median_us,
            p95_us: median_us * 1.5,
            mean_us: median_us * 1.1,
            algbw_gbs: bytes as f64 / median_us / 1e3,
            busbw_gbs: bytes as f64 / median_us / 1e3,
            limit_pct: None,
            validation: if algorithm == "limit" {
                Validation::Skipped
            } else {
                Validation::Pass
            },
            max_rel_error: None,
            note: String::new(),
            auto_choice: String::new(),
            touch_us: None,
            switches: None,
        }
    }
}
