//! `--samples`: every timed iteration of every row, as CSV.

use crate::output::{create_parent, write_csv};
use crate::record::Record;

/// One timed iteration of one row, for `--samples`.
#[derive(Debug, serde::Serialize)]
pub(super) struct Sample {
    /// The row's scope (`all`, `socket N`).
    scope: String,
    /// The collective.
    collective: String,
    /// The row's name.
    algorithm: String,
    /// Ranks.
    ranks: usize,
    /// Bytes per rank.
    bytes: usize,
    /// The pass of `--repeat`, from 0.
    pass: usize,
    /// The round of `--rounds`, from 0.
    round: usize,
    /// The iteration within its round, from 0.
    iteration: usize,
    /// Its time: max(end) − min(start) over the ranks, seconds.
    seconds: f64,
}

impl Sample {
    /// The iterations of one size's rows, each row's rounds in order (a row per entry of
    /// `rounds`, as the sweep collects them).
    pub(super) fn of_rounds(pass: usize, rounds: &[Vec<(Record, Vec<f64>)>]) -> Vec<Sample> {
        let mut out = Vec::new();
        for row in rounds {
            for (round, (rec, times)) in row.iter().enumerate() {
                out.extend(
                    times
                        .iter()
                        .enumerate()
                        .map(|(iteration, &seconds)| Sample {
                            scope: rec.scope.clone(),
                            collective: rec.collective.clone(),
                            algorithm: rec.algorithm.clone(),
                            ranks: rec.ranks,
                            bytes: rec.bytes,
                            pass,
                            round,
                            iteration,
                            seconds,
                        }),
                );
            }
        }
        out
    }
}

/// Writes `samples` as CSV to `path` (creating its directory).
pub(super) fn write_samples(path: &std::path::Path, samples: &[Sample]) -> Result<(), String> {
    create_parent(path)?;
    write_csv(path, samples)
}
