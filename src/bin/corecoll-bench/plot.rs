//! SVG plots of a sweep (stub: filled in next).

use crate::record::Record;
use std::path::Path;

/// Plots `records` (one collective) into `path`.
pub fn plot_svg(_path: &Path, _title: &str, _records: &[Record]) -> Result<(), String> {
    Ok(())
}
