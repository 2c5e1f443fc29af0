//! The checks over what one sweep measured, each printed after the summary and written into
//! the JSON file beside the records. The bench reports them; it does not fail a run over them,
//! since on a shared machine a single cell's noise can cross any threshold.
//!
//! - **Self-consistent performance guidelines** (`guidelines.rs`), after Träff, Gropp and
//!   Thakur: a collective should be no slower than other collectives that do its job.
//! - **No cliffs** (`cliffs.rs`): at every size, `auto` within [`CLIFF_GOAL`] of the best
//!   algorithm measured in the same run (the summary's `auto/best` column, marked `!` above
//!   it).
//! - **`Block::Auto` against fixed blocks** (`blocks.rs`): a pipelined algorithm's row with its
//!   block chosen by the library (its plain name, `dual-root`) against its rows with fixed
//!   blocks (`dual-root:4KiB`, as `--blocks` adds them), within [`BLOCK_GOAL`].

mod blocks;
mod cliffs;
mod guidelines;

pub use blocks::{block_compares, print_blocks, BlockCompare};
pub use cliffs::{cliffs, fmt_cliff_ratio, print_cliffs, same_algorithm, CliffRatio, Cliffs};
pub use guidelines::{
    guideline_collectives, guidelines, print_guidelines, users_algorithm, Context, GuidelineCheck,
    Guidelines, Rule, Term, RULES,
};

use crate::record::{Record, Source, Validation};
use serde::Serialize;

/// The no-cliff goal: at every size `auto` at most this many times the best algorithm's
/// median.
pub const CLIFF_GOAL: f64 = 1.25;

/// The goal for `Block::Auto`: at most this many times the best fixed block's median.
pub const BLOCK_GOAL: f64 = 1.10;

/// The guidelines' default tolerance: a rule is violated when its left side exceeds the right
/// by more than this fraction. The two sides are different cells timed at different moments,
/// and their medians move by several percent from run to run on a shared machine; a smaller
/// difference than that says nothing about the library.
pub const DEFAULT_TOLERANCE: f64 = 0.1;

/// Whether `r` is a row of corecoll's that was timed and passed (or needed no) check.
fn timed(r: &Record) -> bool {
    r.source == Source::Corecoll
        && r.validation != Validation::Fail
        && r.median_us.is_finite()
        && r.median_us >= 0.0
}

/// Every check of a run, as the JSON file holds them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checks {
    /// The guidelines.
    pub guidelines: Guidelines,
    /// `auto` against the best, per group.
    pub cliffs: Vec<Cliffs>,
    /// `Block::Auto` against fixed blocks.
    pub blocks: Vec<BlockCompare>,
}

impl Checks {
    /// The checks of `records`, the guidelines with `tolerance`.
    pub fn of(records: &[Record], tolerance: f64) -> Checks {
        Checks {
            guidelines: guidelines(records, tolerance),
            cliffs: cliffs(records),
            blocks: block_compares(records),
        }
    }
}
