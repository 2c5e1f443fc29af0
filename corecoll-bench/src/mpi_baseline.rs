//! The MPI library's own collectives as a baseline (feature `mpi`), measured in the same run
//! and merged into the same table as corecoll's rows.
//!
//! The sweep calls [`run`] once per scope: it starts `mpirun -np p` on this very executable
//! with the hidden `--mpi-worker` flag, waits, and reads back the records that the worker's
//! rank 0 wrote to a temporary file (a JSON array of [`Record`]), labelled with the sweep's
//! scope so that they group with the threads' rows. [`worker()`] (in `worker.rs`) is the other
//! side, one MPI process, measuring with the method of `measure.rs`.
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

use crate::cli::{Args, Collective};
use crate::record::{Record, Source};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

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
fn rows(c: Collective, selection: &str) -> Vec<Row> {
    let all: &[Row] = match c {
        Collective::Allreduce => &[Row::Native, Row::ReduceBcast],
        _ => &[Row::Native],
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

// ---------------------------------------------------------------------------------------------
// The launcher: one `mpirun` per scope.
// ---------------------------------------------------------------------------------------------

/// Runs the MPI baseline of `args` between `ranks` processes under `mpirun` and returns its
/// records, labelled with the sweep's `scope` and `placement` so that they group with the
/// thread rows of the same scope. `Err` says why there are none: `mpirun` missing, or the
/// job failed (with the tail of its output), or it timed out.
///
/// With `--cold`, each process cycles through enough buffers that they have left the caches
/// when they come round again, as `measure::Pool` does for the threads.
pub fn run(args: &Args, scope: &str, placement: &str, ranks: usize) -> Result<Vec<Record>, String> {
    let cells: usize = args
        .collective
        .0
        .iter()
        .map(|&c| {
            let sizes = if c == Collective::Barrier {
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
    let mpirun = find_on_path("mpirun").ok_or_else(|| {
        "mpirun not found on PATH (Open MPI's is in Debian's openmpi-bin package)".to_string()
    })?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let files = TempFiles::new()?;
    let log = File::create(&files.log).map_err(|e| format!("{}: {e}", files.log.display()))?;
    let log2 = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", files.log.display()))?;

    let mut cmd = Command::new(&mpirun);
    cmd.arg("-np").arg(ranks.to_string());
    let cores = crate::placement::available_cores().len();
    if ranks > cores {
        cmd.args(["--oversubscribe", "--bind-to", "none"]);
    } else if args.placement == crate::cli::Placement::Unpinned {
        cmd.args(["--bind-to", "none"]);
    } else {
        cmd.args(["--map-by", "core", "--bind-to", "core"]);
    }
    cmd.arg(&exe).args(worker_args(args, &files.out));
    if running_as_root() {
        // Open MPI refuses to start as root unless told twice that this is intended (CI
        // containers run as root).
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    cmd.stdin(Stdio::null()).stdout(log).stderr(log2);
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", mpirun.display()))?;
    let status = wait(&mut child, deadline(args, cells));
    let tail = || log_tail(&files.log);
    let status = status.map_err(|e| format!("{e} ({shown}){}", tail()))?;
    if !status.success() {
        return Err(format!("{shown} failed ({status}){}", tail()));
    }
    let text = std::fs::read_to_string(&files.out)
        .map_err(|e| format!("no records from the MPI job ({e}){}", tail()))?;
    let mut records = records_from_json(&text)?;
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

/// Waits for `child`; past `limit`, asks `mpirun` to stop (SIGTERM, which it passes on to its
/// processes), then kills it, and says so.
pub(crate) fn wait(
    child: &mut std::process::Child,
    limit: Option<Duration>,
) -> Result<ExitStatus, String> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status);
        }
        if limit.is_some_and(|l| start.elapsed() > l) {
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill(2) with the id of our own child, which has not been reaped yet
                // (try_wait above found it running), so the id cannot belong to another
                // process; it only sends a signal.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            let grace = Instant::now();
            while grace.elapsed() < Duration::from_secs(5) {
                if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the MPI job did not finish in {:.0} s and was stopped",
                start.elapsed().as_secs_f64()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last lines of the job's output (its stdout and stderr), prefixed for an error message;
/// empty when there is none.
pub(crate) fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let from = lines.len().saturating_sub(30);
    format!(":\n{}", lines[from..].join("\n"))
}

/// The first executable file named `name` in the directories of `PATH`.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Whether this process runs as root (effective user id 0).
pub(crate) fn running_as_root() -> bool {
    // SAFETY: geteuid(2) takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() == 0 }
}

/// The job's two files in the temporary directory, named after this process and the time;
/// removed on drop.
pub(crate) struct TempFiles {
    /// The records that the worker's rank 0 writes.
    pub(crate) out: PathBuf,
    /// `mpirun`'s stdout and stderr.
    pub(crate) log: PathBuf,
}

impl TempFiles {
    /// Names two fresh files (they are created by whoever writes them first).
    pub(crate) fn new() -> Result<TempFiles, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let stem = format!("corecoll-bench-mpi-{}-{nanos}", std::process::id());
        let dir = std::env::temp_dir();
        Ok(TempFiles {
            out: dir.join(format!("{stem}.json")),
            log: dir.join(format!("{stem}.log")),
        })
    }
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The statistics fields of a record that are NaN when a cell has no timing (JSON writes NaN
/// as `null`, which does not read back as an `f64`).
const FLOAT_FIELDS: [&str; 6] = [
    "min_us",
    "median_us",
    "p95_us",
    "mean_us",
    "algbw_gbs",
    "busbw_gbs",
];

/// Reads the worker's JSON array of records, turning the `null`s of [`FLOAT_FIELDS`] back
/// into NaN.
fn records_from_json(text: &str) -> Result<Vec<Record>, String> {
    let bad = |e: serde_json::Error| format!("the MPI job's records do not parse: {e}");
    let value: serde_json::Value = serde_json::from_str(text).map_err(bad)?;
    let items = value
        .as_array()
        .ok_or("the MPI job's records are not a JSON array")?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let mut item = item.clone();
        let mut nulls = Vec::new();
        if let Some(obj) = item.as_object_mut() {
            for key in FLOAT_FIELDS {
                if obj.get(key).is_some_and(serde_json::Value::is_null) {
                    obj.insert(key.into(), 0.into());
                    nulls.push(key);
                }
            }
        }
        let mut rec: Record = serde_json::from_value(item).map_err(bad)?;
        for key in nulls {
            *match key {
                "min_us" => &mut rec.min_us,
                "median_us" => &mut rec.median_us,
                "p95_us" => &mut rec.p95_us,
                "mean_us" => &mut rec.mean_us,
                "algbw_gbs" => &mut rec.algbw_gbs,
                _ => &mut rec.busbw_gbs,
            } = f64::NAN;
        }
        out.push(rec);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellSpec;
    use crate::cli::OpName;
    use crate::record::Validation;
    use clap::Parser;

    #[test]
    fn rows_follow_the_selection() {
        assert_eq!(
            rows(Collective::Allreduce, "all"),
            vec![Row::Native, Row::ReduceBcast]
        );
        assert_eq!(
            rows(Collective::Allreduce, "auto, mpi-reduce-bcast"),
            vec![Row::ReduceBcast]
        );
        assert_eq!(rows(Collective::Broadcast, "mpi"), vec![Row::Native]);
        assert!(rows(Collective::Broadcast, "mpi-reduce-bcast").is_empty());
        assert!(rows(Collective::Gather, "auto,ring").is_empty());
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
    fn a_job_past_its_deadline_is_stopped() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let e = wait(&mut child, Some(Duration::from_millis(100))).unwrap_err();
        assert!(e.contains("was stopped"), "{e}");
        let mut child = Command::new("true").spawn().unwrap();
        assert!(wait(&mut child, None).unwrap().success());
    }

    #[test]
    fn json_nulls_read_back_as_nan() {
        let rec = Record::of_cell::<f64, corecoll::op::Sum>(
            &CellSpec::new(
                Collective::Allreduce,
                2,
                crate::cli::Dtype::F64,
                OpName::Sum,
                64,
                0,
                false,
            ),
            Row::Native.name(),
            Source::Mpi,
            &corecoll::op::Sum,
            Err("it broke".into()),
        );
        let text = serde_json::to_string(&vec![rec.clone()]).unwrap();
        let back = records_from_json(&text).unwrap();
        assert_eq!(back.len(), 1);
        assert!(back[0].median_us.is_nan() && back[0].busbw_gbs.is_nan());
        assert_eq!(
            (back[0].count, &back[0].note, back[0].validation),
            (8, &rec.note, Validation::Fail)
        );
        assert!(records_from_json("{}").is_err());
    }
}
