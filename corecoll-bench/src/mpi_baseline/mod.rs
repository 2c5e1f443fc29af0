//! The MPI library's own collectives as a baseline (feature `mpi`), measured in the same run
//! and merged into the same table as corecoll's rows.
//!
//! The sweep calls [`run`] once per scope: it starts `mpirun -np p` on this very executable
//! with the hidden `--mpi-worker` flag, waits, and reads back the records that the worker's
//! rank 0 wrote to a temporary file (a JSON array of [`Record`]), labelled with the sweep's
//! scope so that they group with the threads' rows. [`worker()`] (in `worker.rs`) is the other
//! side, one MPI process, measuring with the method of `measure`.
//!
//! Rows, each named `mpi` unless said otherwise: allreduce → `MPI_Allreduce` (out of place:
//! send and receive buffers, as OSU's `osu_allreduce`) and `mpi-reduce-bcast` →
//! `MPI_Reduce` to the root then `MPI_Bcast` from it; broadcast → `MPI_Bcast`; reduce →
//! `MPI_Reduce`; scan → `MPI_Scan`; exscan → `MPI_Exscan`; gather, scatter, allgather,
//! alltoall → `MPI_Gather`, `MPI_Scatter`, `MPI_Allgather`, `MPI_Alltoall`; their `v` forms
//! → `MPI_Gatherv`, … with equal counts; reduce-scatter → `MPI_Reduce_scatter_block`;
//! barrier → `MPI_Barrier`.
//!
//! Placement: with p no larger than the cores available, `mpirun --map-by core --bind-to
//! core` puts process r on the r-th available core, as `--placement compact` pins thread r, so
//! that neither moves between cores during a measurement. More processes than cores run with
//! `--oversubscribe --bind-to none` (Open MPI refuses to bind more processes than cores, and
//! the scheduler then shares the cores as it does oversubscribed threads), and so does
//! `--placement none`. Other placements (`spread`, `socket:N`, `cores:LIST`) are not
//! mirrored: the processes take the first available cores. These flags are Open MPI's
//! `mpirun`'s; another MPI's launcher may want others.

mod worker;

pub use worker::worker;

use crate::cli::Args;
use crate::domain::{Call, Placement};
use crate::mpirun;
use crate::record::{Record, Source};
use corecoll::Collective;
use std::path::Path;
use std::time::Duration;

/// Every row name of the MPI baseline, as `--algorithms` spells them.
pub const NAMES: [&str; 2] = ["mpi", "mpi-reduce-bcast"];

/// One row of the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    /// The MPI collective of the same name (`mpi`).
    Native,
    /// Allreduce as `MPI_Reduce` to the root, then `MPI_Bcast` (`mpi-reduce-bcast`).
    ReduceBcast,
}

impl Row {
    /// The row's name in the results.
    fn name(self) -> &'static str {
        match self {
            Row::Native => NAMES[0],
            Row::ReduceBcast => NAMES[1],
        }
    }
}

/// The rows of `c` that `selection` (`--algorithms`: `all` or a list of names) asks for, in
/// table order.
fn rows(c: Call, selection: &str) -> Vec<Row> {
    let all: &[Row] = match c.collective {
        Collective::Allreduce => &[Row::Native, Row::ReduceBcast],
        Collective::Broadcast
        | Collective::Reduce
        | Collective::Scan
        | Collective::Gather
        | Collective::Scatter
        | Collective::Allgather
        | Collective::Alltoall
        | Collective::ReduceScatter
        | Collective::Barrier => &[Row::Native],
        // A collective the library has and this baseline does not know yet.
        _ => &[],
    };
    let wanted = |row: &Row| {
        selection.trim() == "all" || selection.split(',').any(|n| n.trim() == row.name())
    };
    all.iter().copied().filter(wanted).collect()
}

/// Whether `selection` (`--algorithms`) asks for any row of the MPI baseline.
pub fn selected(selection: &str) -> bool {
    selection.trim() == "all" || selection.split(',').any(|n| NAMES.contains(&n.trim()))
}

/// Runs the MPI baseline of `args` between `ranks` processes under `mpirun` and returns its
/// records, labelled with the sweep's `scope` and `placement` so that they group with the
/// thread rows of the same scope. `Err` says why there are none: `mpirun` missing, or the
/// job failed (with the tail of its output), or it timed out.
///
/// With `--cold` or `--touch`, each process's buffers behave as the threads' buffer pools do.
pub fn run(args: &Args, scope: &str, placement: &str, ranks: usize) -> Result<Vec<Record>, String> {
    let cells: usize = args
        .collective
        .0
        .iter()
        .map(|&c| {
            let sizes = if c.is_barrier() {
                1
            } else {
                args.sizes.0.len()
            };
            sizes * rows(c, &args.algorithms).len()
        })
        .sum();
    if cells == 0 {
        return Ok(Vec::new());
    }
    let cores = crate::placement::available_cores().len();
    let options: &[&str] = if ranks > cores {
        &["--oversubscribe", "--bind-to", "none"]
    } else if args.placement == Placement::Unpinned {
        &["--bind-to", "none"]
    } else {
        &["--map-by", "core", "--bind-to", "core"]
    };
    let text = mpirun::run_job(
        ranks,
        options,
        |out| worker_args(args, out),
        deadline(args, cells),
    )?;
    let mut records: Vec<Record> = serde_json::from_str(&text)
        .map_err(|e| format!("the MPI job's records do not parse: {e}"))?;
    for r in &mut records {
        r.source = Source::Mpi;
        r.scope = scope.to_string();
        r.placement = placement.to_string();
    }
    Ok(records)
}

/// The worker's command line: the options that decide what it measures, and where to write.
fn worker_args(args: &Args, out: &Path) -> Vec<String> {
    let join = |v: Vec<String>| v.join(",");
    let mut a = vec![
        "--mpi-worker".to_string(),
        "--mpi-out".into(),
        out.display().to_string(),
        "--collective".into(),
        join(args.collective.0.iter().map(|c| c.name().into()).collect()),
        "--algorithms".into(),
        args.algorithms.clone(),
        "--sizes".into(),
        join(args.sizes.0.iter().map(usize::to_string).collect()),
        "--type".into(),
        args.dtype.name().into(),
        "--op".into(),
        args.op.name().into(),
        "--root".into(),
        args.root.to_string(),
        "--time".into(),
        args.time.to_string(),
        "--quiet".into(),
    ];
    if let Some(i) = args.iters {
        a.extend(["--iters".into(), i.to_string()]);
    }
    if let Some(w) = args.warmup {
        a.extend(["--warmup".into(), w.to_string()]);
    }
    if args.cold {
        a.push("--cold".into());
    }
    if args.touch {
        a.push("--touch".into());
    }
    a
}

/// How long the job may take before it counts as hung: a minute to start, and per cell ten
/// seconds plus twenty times the `--time` budget (warm-up, timed loop, check, slow processes
/// on a loaded machine); no limit when `--iters` fixes the iterations, as then nothing bounds
/// a cell's time.
fn deadline(args: &Args, cells: usize) -> Option<Duration> {
    if args.iters.is_some() {
        return None;
    }
    let per_cell = 10.0 + 20.0 * args.time;
    Some(Duration::from_secs_f64(60.0 + cells as f64 * per_cell))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{record_of, CellSpec};
    use crate::domain::{Cache, Dtype, OpName};
    use crate::record::Validation;
    use clap::Parser;
    use std::path::PathBuf;

    /// The plain call of `c`.
    fn call(c: Collective) -> Call {
        Call::plain(c)
    }

    #[test]
    fn rows_follow_the_selection() {
        assert_eq!(
            rows(call(Collective::Allreduce), "all"),
            vec![Row::Native, Row::ReduceBcast]
        );
        assert_eq!(
            rows(call(Collective::Allreduce), "auto, mpi-reduce-bcast"),
            vec![Row::ReduceBcast]
        );
        assert_eq!(rows(call(Collective::Broadcast), "mpi"), vec![Row::Native]);
        assert!(rows(call(Collective::Broadcast), "mpi-reduce-bcast").is_empty());
        assert!(rows(call(Collective::Gather), "auto,ring").is_empty());
        assert!(selected("all") && selected("ring, mpi") && selected("mpi-reduce-bcast"));
        assert!(!selected("auto,ring"));
    }

    #[test]
    fn worker_arguments_parse_back() {
        let args = Args::try_parse_from([
            "corecoll-bench",
            "--collective",
            "allreduce,reduce-scatter",
            "--sizes",
            "8,4KiB",
            "--type",
            "i32",
            "--op",
            "band",
            "--root",
            "1",
            "--iters",
            "5",
            "--cold",
            "--time",
            "0.25",
        ])
        .unwrap();
        let mut argv = vec!["corecoll-bench".to_string()];
        argv.extend(worker_args(&args, Path::new("/tmp/x.json")));
        let back = Args::try_parse_from(argv).unwrap();
        assert!(back.mpi_worker && back.quiet && back.cold);
        assert_eq!(back.mpi_out, Some(PathBuf::from("/tmp/x.json")));
        assert_eq!(back.collective, args.collective);
        assert_eq!(back.sizes, args.sizes);
        assert_eq!((back.dtype, back.op), (args.dtype, args.op));
        assert_eq!((back.root, back.iters, back.warmup), (1, Some(5), None));
        assert_eq!(back.time, 0.25);
    }

    #[test]
    fn json_nulls_read_back_as_nan() {
        let rec = record_of::<f64, corecoll::op::Sum>(
            &CellSpec::new(
                call(Collective::Allreduce),
                2,
                Dtype::F64,
                OpName::Sum,
                64,
                0,
                Cache::Warm,
            ),
            Row::Native.name(),
            Source::Mpi,
            &corecoll::op::Sum,
            Err("it broke".into()),
        );
        let text = serde_json::to_string(&vec![rec.clone()]).unwrap();
        let back: Vec<Record> = serde_json::from_str(&text).unwrap();
        assert_eq!(back.len(), 1);
        assert!(back[0].median_us.is_nan() && back[0].busbw_gbs.is_nan());
        assert_eq!(
            (back[0].count, &back[0].note, back[0].validation),
            (8, &rec.note, Validation::Fail)
        );
    }
}
