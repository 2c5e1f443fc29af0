//! The table, CSV and JSON (stub: filled in next).

use crate::record::Record;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// What the JSON file says about the run besides its records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The command line.
    pub command: String,
    /// corecoll's version.
    pub version: String,
    /// Cores available to the process.
    pub cores: usize,
}

/// Fills each record's `limit_pct` from the `limit` row of its group.
pub fn fill_limit_pct(_records: &mut [Record]) {}

/// Prints the table of `records`.
pub fn print_table(w: &mut dyn Write, records: &[Record]) -> std::io::Result<()> {
    for r in records {
        writeln!(
            w,
            "{} {} {} {} {:.3} {}",
            r.collective,
            r.algorithm,
            r.bytes,
            r.iters,
            r.median_us,
            r.validation.as_str()
        )?;
    }
    Ok(())
}

/// Prints the summary of `records`.
pub fn print_summary(_w: &mut dyn Write, _records: &[Record]) -> std::io::Result<()> {
    Ok(())
}

/// Writes `records` as CSV.
pub fn write_csv(_path: &Path, _records: &[Record]) -> Result<(), String> {
    Ok(())
}

/// Writes `info` and `records` as JSON.
pub fn write_json(_path: &Path, _info: &RunInfo, _records: &[Record]) -> Result<(), String> {
    Ok(())
}
