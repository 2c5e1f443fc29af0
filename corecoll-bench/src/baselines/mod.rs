//! The baselines that run in the same sweep and table as corecoll's algorithms, timed by the
//! same method (`measure`) and checked by the same reference (`cell::check`):
//!
//! - `limit` (`limit.rs`): the ideal data movement of the collective with no synchronisation
//!   inside a call; every rank reads and writes the other ranks' buffers directly. Its time is
//!   the "100 %" of the table's "% of limit" column.
//! - `std-naive` (`naive.rs`): what a user would write with the standard library alone, a
//!   shared `Mutex<Vec<T>>` and `std::sync::Barrier`s.
//! - `channels` (`channels.rs`): a ring allreduce over crossbeam channels, each message a
//!   `Vec<T>` of its own.
//!
//! The MPI library's collectives, the fourth baseline, run in other processes
//! (`mpi_baseline`).

mod channels;
mod limit;
mod naive;

use crate::cell::CellSpec;
use crate::domain::Call;
use crate::elem::Elem;
use crate::measure::{Measured, Timing};
use corecoll::op::Op;
use corecoll::Team;
use std::ops::Range;

/// The name of the ideal-data-movement baseline.
pub const LIMIT: &str = "limit";
/// The name of the std-only baseline.
pub const STD_NAIVE: &str = "std-naive";
/// The name of the channel-ring baseline.
pub const CHANNELS: &str = "channels";

/// The baselines of `c`, in table order.
pub fn names(c: Call) -> Vec<&'static str> {
    let mut out = Vec::new();
    if limit::applies(c) {
        out.push(LIMIT);
    }
    if naive::applies(c) {
        out.push(STD_NAIVE);
    }
    if channels::applies(c) {
        out.push(CHANNELS);
    }
    out
}

/// Runs baseline `name` for `spec` on `team`: one kernel per rank, timed by
/// [`crate::measure::measure`], with the check call's outputs in the shape that corecoll's
/// kernel gives (`cell::output`).
pub fn run<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
    name: &str,
    team: &Team,
    timing: &Timing,
    spec: &CellSpec,
    op: O,
) -> Result<Measured, String> {
    if !names(spec.call).contains(&name) {
        return Err(format!("no baseline `{name}` for {}", spec.call));
    }
    if team.size() != spec.p {
        return Err(format!(
            "the team has {} ranks, the cell {}",
            team.size(),
            spec.p
        ));
    }
    match name {
        LIMIT => limit::run::<T, O>(team, timing, spec, op),
        STD_NAIVE => naive::run::<T, O>(team, timing, spec, op),
        _ => channels::run::<T, O>(team, timing, spec, op),
    }
}

/// The part of `n` elements of type `T` that falls to rank `r` of `p`: near-equal ranges of
/// whole 64-byte cache lines (counted from element 0), so that two ranks write the same line
/// only where a buffer does not start on a line; the ranges cover `0..n` in rank order, and
/// when `n` has fewer lines than `p` the last ranks get empty ranges.
pub fn split<T>(n: usize, p: usize, r: usize) -> Range<usize> {
    let line = (64 / size_of::<T>().max(1)).max(1);
    let lines = n.div_ceil(line);
    let at = |q: usize| (q * lines / p.max(1) * line).min(n);
    at(r)..at(r + 1)
}

/// Elements per chunk of the reducing loops: 8 KiB, so that a chunk's accumulator stays in
/// the first-level cache while the p inputs stream past it.
pub fn chunk<T>() -> usize {
    ((8 << 10) / size_of::<T>().max(1)).max(1)
}

/// The error of a baseline that folds in an order other than rank order, for a
/// non-commutative op.
fn needs_commutative(name: &str) -> String {
    format!("{name} folds in an order other than rank order, so it needs a commutative op")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::check;
    use crate::domain::{Cache, Dtype, OpName};
    use crate::record::Validation;
    use corecoll::op::{self, Op};

    /// The call named `name`.
    fn call(name: &str) -> Call {
        Call::from_name(name).unwrap()
    }

    fn timing() -> Timing {
        Timing {
            iters: Some(2),
            warmup: Some(1),
            ..Timing::default()
        }
    }

    /// Runs `name` on every collective that has it, for `p` ranks and element counts 0, 1, an
    /// odd count and a few thousand, with f64 sums and i32 exclusive ors, roots 0 and p − 1;
    /// every check must pass.
    fn sweep(name: &str, p: usize) {
        let team = Team::new(p).expect("a team");
        for c in Call::all() {
            if !names(c).contains(&name) {
                continue;
            }
            for elems in [0, 1, 37, 3001] {
                for root in [0, p - 1] {
                    cell::<f64, _>(
                        name,
                        &team,
                        c,
                        Dtype::F64,
                        OpName::Sum,
                        op::Sum,
                        elems,
                        root,
                    );
                    cell::<i32, _>(
                        name,
                        &team,
                        c,
                        Dtype::I32,
                        OpName::Bxor,
                        op::BitXor,
                        elems,
                        root,
                    );
                }
            }
        }
    }

    /// Runs one cell of `name` (warm) and asserts that its check passes.
    #[allow(clippy::too_many_arguments)]
    fn cell<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
        name: &str,
        team: &Team,
        c: Call,
        dtype: Dtype,
        opname: OpName,
        op: O,
        elems: usize,
        root: usize,
    ) {
        let p = team.size();
        let spec = CellSpec::new(c, p, dtype, opname, elems * dtype.size(), root, Cache::Warm);
        run_and_check::<T, O>(name, team, &spec, op);
    }

    fn run_and_check<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
        name: &str,
        team: &Team,
        spec: &CellSpec,
        op: O,
    ) {
        let what = format!(
            "{name} {} p={} count={} root={} {:?}",
            spec.call, spec.p, spec.count, spec.root, spec.dtype
        );
        let m =
            run::<T, O>(name, team, &timing(), spec, op).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(m.times.len(), 2, "{what}");
        if spec.call.is_barrier() {
            assert!(m.outputs.is_empty(), "{what}");
            return;
        }
        let c = check::<T, O>(spec, &op, &m.outputs);
        assert_eq!(c.validation, Validation::Pass, "{what}: {}", c.note);
    }

    #[test]
    fn names_in_table_order() {
        assert_eq!(names(call("allreduce")), [LIMIT, STD_NAIVE, CHANNELS]);
        assert_eq!(names(call("reduce")), [LIMIT, STD_NAIVE]);
        assert_eq!(names(call("scan")), [LIMIT]);
        assert_eq!(names(call("gatherv")), [LIMIT]);
        assert_eq!(names(call("barrier")), [STD_NAIVE]);
        for c in Call::all() {
            let n = names(c);
            assert_eq!(n.contains(&LIMIT), !c.is_barrier(), "{c}");
        }
    }

    #[test]
    fn split_covers_in_rank_order_on_lines() {
        for n in [0, 1, 7, 8, 9, 63, 64, 1000, 4097] {
            for p in 1..=6 {
                let mut next = 0;
                for r in 0..p {
                    let s = split::<f64>(n, p, r);
                    assert_eq!(s.start, next);
                    assert!(s.start == n || s.start.is_multiple_of(8));
                    next = s.end;
                }
                assert_eq!(next, n);
            }
        }
        // 16 lines of f64 over 3 ranks: 5, 5, 6 lines.
        assert_eq!(split::<f64>(128, 3, 0), 0..40);
        assert_eq!(split::<f64>(128, 3, 2), 80..128);
    }

    #[test]
    fn limit_passes_its_checks() {
        for p in [1, 2, 3, 5] {
            sweep(LIMIT, p);
        }
    }

    #[test]
    fn std_naive_passes_its_checks() {
        for p in [1, 2, 3, 5] {
            sweep(STD_NAIVE, p);
        }
    }

    #[test]
    fn channels_pass_their_checks() {
        for p in [1, 2, 3, 5] {
            sweep(CHANNELS, p);
        }
    }

    #[test]
    fn cold_and_touched_buffers_pass_their_checks() {
        let team = Team::new(3).expect("a team");
        for (c, name) in [
            ("allreduce", LIMIT),
            ("reduce", LIMIT),
            ("allreduce", STD_NAIVE),
            ("allreduce", CHANNELS),
        ] {
            let spec = CellSpec::new(
                call(c),
                3,
                Dtype::F64,
                OpName::Sum,
                8 * 301,
                1,
                Cache::Touch,
            );
            run_and_check::<f64, _>(name, &team, &spec, op::Sum);
        }
        for (c, name) in [
            ("allreduce", LIMIT),
            ("exscan", LIMIT),
            ("gather", LIMIT),
            ("alltoall", LIMIT),
            ("allreduce", STD_NAIVE),
            ("allreduce", CHANNELS),
        ] {
            let spec = CellSpec::new(call(c), 3, Dtype::F64, OpName::Sum, 8 * 301, 1, Cache::Cold);
            run_and_check::<f64, _>(name, &team, &spec, op::Sum);
        }
    }

    #[test]
    fn other_ops_and_types() {
        let team = Team::new(3).expect("a team");
        for c in ["allreduce", "reduce-scatter", "scan"].map(call) {
            for &name in &names(c) {
                let spec = CellSpec::new(c, 3, Dtype::F32, OpName::Prod, 4 * 999, 2, Cache::Warm);
                run_and_check::<f32, _>(name, &team, &spec, op::Prod);
                let spec = CellSpec::new(c, 3, Dtype::U8, OpName::Max, 333, 2, Cache::Warm);
                run_and_check::<u8, _>(name, &team, &spec, op::Max);
            }
        }
    }

    #[test]
    fn refuse_non_commutative_ops_where_the_order_is_not_rank_order() {
        let team = Team::new(2).expect("a team");
        // Left projection: associative, and a ⊙ b ≠ b ⊙ a whenever a ≠ b.
        let op = op::non_commutative(|a: &i64, _: &i64| *a);
        let spec = CellSpec::new(
            call("allreduce"),
            2,
            Dtype::I64,
            OpName::Sum,
            80,
            0,
            Cache::Warm,
        );
        for name in [STD_NAIVE, CHANNELS] {
            let e = run::<i64, _>(name, &team, &timing(), &spec, op).unwrap_err();
            assert!(e.contains("commutative"), "{e}");
        }
        // `limit` folds in rank order, so the check against the rank-order fold passes.
        let m = run::<i64, _>(LIMIT, &team, &timing(), &spec, op).expect("limit runs");
        assert_eq!(
            check::<i64, _>(&spec, &op, &m.outputs).validation,
            Validation::Pass
        );
    }

    #[test]
    fn unknown_names_and_wrong_teams_are_errors() {
        let team = Team::new(2).expect("a team");
        let spec = CellSpec::new(call("scan"), 2, Dtype::F64, OpName::Sum, 64, 0, Cache::Warm);
        assert!(run::<f64, _>(CHANNELS, &team, &timing(), &spec, op::Sum).is_err());
        assert!(run::<f64, _>("nope", &team, &timing(), &spec, op::Sum).is_err());
        let spec = CellSpec { p: 3, ..spec };
        assert!(run::<f64, _>(LIMIT, &team, &timing(), &spec, op::Sum).is_err());
    }
}
