//! The peers: what the people this crate is for would write instead of calling it, measured
//! in the same sweep and checked by the same reference as corecoll's rows. Unlike the
//! baselines (`baselines`), which run on the team's threads, a peer brings its own threads,
//! as it would in a program:
//!
//! - `openmp-reduction`, `openmp-slices` (`openmp.rs`, over `c/openmp_peer.c`): a C program's
//!   OpenMP region, one per call, with an array-section reduction or a hand-written sum of
//!   slices; built when the system's C compiler links OpenMP, otherwise absent with the
//!   reason;
//! - `rayon-reduce`, `rayon-chunks` (`rayon.rs`): a Rust program's rayon pool, reducing the
//!   ranks' vectors as a whole or chunk by chunk, and leaving the result in every vector.
//!
//! Each peer's threads are pinned to the cores of the team's ranks of the same numbers. Both
//! run the allreduce (the collective that OpenMP and rayon have an idiom for) on one buffer
//! per rank, warm or written before each call (`--touch`), not `--cold`. The MPI libraries,
//! the peers in other processes, are `mpi_baseline`'s rows.

mod openmp;
mod rayon;

use crate::cell::CellSpec;
use crate::domain::{Cache, Call, Dtype, Form, OpName};
use crate::elem::Elem;
use crate::measure::{Driven, Measured, Timing};
use corecoll::op::Op;
use corecoll::Collective;

/// OpenMP's array-section reduction, a region per call.
pub const OPENMP_REDUCTION: &str = "openmp-reduction";
/// A hand-written OpenMP region summing one slice of every vector per thread.
pub const OPENMP_SLICES: &str = "openmp-slices";
/// rayon's parallel reduction of the ranks' vectors, then a parallel copy into each.
pub const RAYON_REDUCE: &str = "rayon-reduce";
/// rayon over chunks of the vectors: each task reduces one chunk of all of them and writes it
/// back into each.
pub const RAYON_CHUNKS: &str = "rayon-chunks";

/// The peers of `c`, in table order.
pub fn names(c: Call) -> Vec<&'static str> {
    if c == Call::plain(Collective::Allreduce) {
        vec![OPENMP_REDUCTION, OPENMP_SLICES, RAYON_REDUCE, RAYON_CHUNKS]
    } else {
        Vec::new()
    }
}

/// The family of a peer's rows (what the summary compares against: the best of its rows).
pub fn family(name: &str) -> Option<&'static str> {
    match name {
        OPENMP_REDUCTION | OPENMP_SLICES => Some("OpenMP"),
        RAYON_REDUCE | RAYON_CHUNKS => Some("rayon"),
        _ => None,
    }
}

/// Why peer `name` cannot run a cell of `dtype`, `op` and `cache` in this build, in one line;
/// `None` when it can.
pub fn missing(name: &str, dtype: Dtype, op: OpName, cache: Cache) -> Option<String> {
    if cache == Cache::Cold {
        return Some(format!(
            "{name}: peers run on one buffer per rank (warm or --touch), not --cold"
        ));
    }
    if let Some(why) = op.corecoll_only() {
        return Some(why.to_string());
    }
    match family(name)? {
        "OpenMP" => openmp::missing(dtype, op).map(|why| format!("{name}: {why}")),
        _ => None,
    }
}

/// Runs peer `name` for `spec`, its threads pinned to `cores` (a rank's core by rank, `None`
/// for unpinned), with the timing method of [`crate::measure::measure_driven`].
pub fn run<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
    name: &str,
    timing: &Timing,
    spec: &CellSpec,
    op: O,
    cores: &[Option<usize>],
) -> Result<Measured, String> {
    if !names(spec.call).contains(&name) {
        return Err(format!("no peer `{name}` for {}", spec.call));
    }
    if let Some(why) = missing(name, spec.dtype, spec.op, spec.cache) {
        return Err(why);
    }
    if spec.call.form != Form::Plain || cores.len() != spec.p {
        return Err(format!("{} cores for {} ranks", cores.len(), spec.p));
    }
    match name {
        OPENMP_REDUCTION | OPENMP_SLICES => openmp::run(name == OPENMP_SLICES, timing, spec, cores),
        _ => rayon::run::<T, O>(name == RAYON_CHUNKS, timing, spec, op, cores),
    }
}

/// Runs `kernel` with [`crate::measure::measure_driven`], the check included.
fn measure(timing: &Timing, kernel: &mut dyn Driven) -> Result<Measured, String> {
    crate::measure::measure_driven(timing, true, kernel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::check;
    use crate::record::Validation;
    use corecoll::op;

    fn timing() -> Timing {
        Timing {
            iters: Some(3),
            warmup: Some(2),
            ..Timing::default()
        }
    }

    /// Runs `name` on `p` ranks for `elems` f64 sums in `cache` mode and checks the result.
    fn cell(name: &str, p: usize, elems: usize, cache: Cache) {
        let call = Call::plain(Collective::Allreduce);
        let spec = CellSpec::new(call, p, Dtype::F64, OpName::Sum, elems * 8, 0, cache);
        let cores: Vec<Option<usize>> = vec![None; p];
        let what = format!("{name} p={p} n={elems} {cache:?}");
        let m = run::<f64, _>(name, &timing(), &spec, op::Sum, &cores)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(m.times.len(), 3, "{what}");
        assert_eq!(m.touch.len(), 3, "{what}");
        assert_eq!(m.outputs.len(), p, "{what}");
        let c = check::<f64, _>(&spec, &op::Sum, &m.outputs);
        assert_eq!(c.validation, Validation::Pass, "{what}: {}", c.note);
    }

    #[test]
    fn rayon_peers_pass_their_checks() {
        for name in [RAYON_REDUCE, RAYON_CHUNKS] {
            for p in [1, 2, 3, 5] {
                for elems in [0, 1, 37, 3001] {
                    cell(name, p, elems, Cache::Warm);
                }
            }
            cell(name, 3, 5000, Cache::Touch);
        }
    }

    #[test]
    fn rayon_keeps_rank_order_for_non_commutative_ops() {
        let call = Call::plain(Collective::Allreduce);
        // Left projection: associative, and a ⊙ b ≠ b ⊙ a whenever a ≠ b.
        let op = op::non_commutative(|a: &i64, _: &i64| *a);
        for name in [RAYON_REDUCE, RAYON_CHUNKS] {
            let spec = CellSpec::new(call, 4, Dtype::I64, OpName::Sum, 8 * 2000, 0, Cache::Warm);
            let m = run::<i64, _>(name, &timing(), &spec, op, &[None; 4]).unwrap();
            let c = check::<i64, _>(&spec, &op, &m.outputs);
            assert_eq!(c.validation, Validation::Pass, "{name}: {}", c.note);
        }
    }

    #[test]
    fn openmp_peers_pass_their_checks_or_say_why_they_are_missing() {
        for name in [OPENMP_REDUCTION, OPENMP_SLICES] {
            let built = cfg!(corecoll_openmp);
            if let Some(why) = missing(name, Dtype::F64, OpName::Sum, Cache::Warm) {
                assert!(!built, "built, yet {why}");
                eprintln!("skipped: {why}");
                continue;
            }
            for p in [1, 2, 3, 5] {
                for elems in [0, 1, 37, 3001] {
                    cell(name, p, elems, Cache::Warm);
                }
            }
            cell(name, 3, 5000, Cache::Touch);
        }
    }

    #[test]
    fn peers_refuse_what_they_cannot_run() {
        assert_eq!(
            names(Call::plain(Collective::Broadcast)),
            Vec::<&str>::new()
        );
        assert!(missing(RAYON_REDUCE, Dtype::F64, OpName::Sum, Cache::Cold).is_some());
        assert!(missing(RAYON_REDUCE, Dtype::U8, OpName::Max, Cache::Touch).is_none());
        assert!(missing(OPENMP_SLICES, Dtype::F32, OpName::Sum, Cache::Warm).is_some());
        assert!(missing(OPENMP_SLICES, Dtype::F64, OpName::Max, Cache::Warm).is_some());
        let call = Call::plain(Collective::Allreduce);
        let spec = CellSpec::new(call, 2, Dtype::F64, OpName::Sum, 64, 0, Cache::Warm);
        assert!(run::<f64, _>("nope", &timing(), &spec, op::Sum, &[None; 2]).is_err());
        assert!(run::<f64, _>(RAYON_REDUCE, &timing(), &spec, op::Sum, &[None; 3]).is_err());
    }
}
