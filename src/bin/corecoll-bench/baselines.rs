//! The baselines that run in the same sweep as corecoll's algorithms (stub: filled in next).

use crate::cell::CellSpec;
use crate::cli::Collective;
use crate::elem::Elem;
use crate::measure::{Measured, Timing};
use corecoll::op::Op;
use corecoll::Team;

/// The baselines of `c`, in table order.
pub fn names(_c: Collective) -> Vec<&'static str> {
    Vec::new()
}

/// Runs baseline `name` for `spec` on `team`.
pub fn run<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
    name: &str,
    _team: &Team,
    _timing: &Timing,
    _spec: &CellSpec,
    _op: O,
) -> Result<Measured, String> {
    Err(format!("no baseline `{name}`"))
}
