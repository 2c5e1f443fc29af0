//! The MPI libraries' own collectives as rows of the sweep, measured in the same run and
//! merged into the same table as corecoll's rows: Open MPI's and MPICH's, each between
//! processes that its own launcher starts.
//!
//! Rust cannot link two MPI libraries into one program (and rsmpi builds against one), so
//! the build script compiles a thin C layer, `c/mpi_peer.c`, once with each MPI's `mpicc`
//! into a shared library of its own ([`Mpi`]; a build without an MPI's `mpicc` has no rows
//! of it, and the sweep says why). The sweep calls [`run`] once per scope: for each MPI it
//! starts that MPI's launcher with p processes of this very executable with the hidden
//! `--mpi-worker` flag and the layer to load, waits, and reads back the records that the
//! worker's rank 0 wrote to a temporary file (a JSON array of [`Record`]), labelled with the
//! sweep's scope so that they group with the threads' rows. [`worker()`] (in `worker.rs`) is
//! the other side, one MPI process, measuring with the method of `measure` through the layer
//! (`library.rs`).
//!
//! Rows, named after the library (`openmpi`, `mpich`; `--algorithms mpi` selects every
//! library's): allreduce → `MPI_Allreduce` (out of place: send and receive buffers, as OSU's
//! `osu_allreduce`) and `openmpi-reduce-bcast` (`mpich-reduce-bcast`; `--algorithms
//! mpi-reduce-bcast` selects both) → `MPI_Reduce` to the root then `MPI_Bcast` from it;
//! broadcast → `MPI_Bcast`; reduce → `MPI_Reduce`; scan → `MPI_Scan`; exscan → `MPI_Exscan`;
//! gather, scatter, allgather, alltoall → `MPI_Gather`, `MPI_Scatter`, `MPI_Allgather`,
//! `MPI_Alltoall`; their `v` forms → `MPI_Gatherv`, … with equal counts; reduce-scatter →
//! `MPI_Reduce_scatter_block`; barrier → `MPI_Barrier`.
//!
//! Placement: with p no larger than the cores available, each process is bound to a core in
//! order (Open MPI: `--map-by core --bind-to core`; MPICH's Hydra: `-bind-to core`), as
//! `--placement compact` pins thread r, so that neither moves between cores during a
//! measurement. More processes than cores run unbound (Open MPI also needs
//! `--oversubscribe`), and the scheduler then shares the cores as it does oversubscribed
//! threads; so does `--placement none`. Other placements (`spread`, `socket:N`,
//! `cores:LIST`) are not mirrored: the processes take the first available cores.

mod library;
mod worker;

pub use worker::worker;

use crate::cli::Args;
use crate::domain::{Call, Placement};
use crate::mpirun;
use crate::record::{Record, Source};
use corecoll::Collective;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An MPI library that rows can come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mpi {
    /// The name of its rows, and of the layer built for it: `openmpi`, `mpich`.
    pub label: &'static str,
    /// Its name as its users spell it.
    pub name: &'static str,
    /// The layer the build script compiled with this MPI's `mpicc`, or why there is none.
    layer: Result<&'static str, &'static str>,
    /// Its launchers, by the names to look for on `PATH`, in order; a name without this
    /// MPI's suffix is taken only if its `--version` names the MPI (`marker`).
    launchers: &'static [&'static str],
    /// What the `--version` of this MPI's launcher prints.
    marker: &'static str,
}

/// The layer's path from the build script, or why it has none.
const fn layer(
    path: Option<&'static str>,
    missing: Option<&'static str>,
) -> Result<&'static str, &'static str> {
    match (path, missing) {
        (Some(p), _) => Ok(p),
        (None, Some(why)) => Err(why),
        (None, None) => Err("the build script did not look for it"),
    }
}

/// The MPI libraries, in table order.
pub const MPIS: [Mpi; 2] = [
    Mpi {
        label: "openmpi",
        name: "Open MPI",
        layer: layer(
            option_env!("CORECOLL_MPI_LAYER_OPENMPI"),
            option_env!("CORECOLL_MPI_LAYER_OPENMPI_MISSING"),
        ),
        launchers: &["mpirun.openmpi", "mpirun"],
        marker: "Open MPI",
    },
    Mpi {
        label: "mpich",
        name: "MPICH",
        layer: layer(
            option_env!("CORECOLL_MPI_LAYER_MPICH"),
            option_env!("CORECOLL_MPI_LAYER_MPICH_MISSING"),
        ),
        launchers: &["mpiexec.mpich", "mpirun.mpich", "mpiexec"],
        marker: "HYDRA",
    },
];

/// `--algorithms` names that select a kind of row of every MPI library.
pub const ALIASES: [&str; 2] = ["mpi", "mpi-reduce-bcast"];

/// One row of an MPI library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    /// The MPI collective of the same name (`openmpi`, `mpich`).
    Native,
    /// Allreduce as `MPI_Reduce` to the root, then `MPI_Bcast` (`openmpi-reduce-bcast`).
    ReduceBcast,
}

impl Row {
    /// The row's name for the MPI labelled `label`.
    fn name(self, label: &str) -> String {
        match self {
            Row::Native => label.to_string(),
            Row::ReduceBcast => format!("{label}-reduce-bcast"),
        }
    }

    /// The alias of `--algorithms` that selects this row of every MPI.
    fn alias(self) -> &'static str {
        match self {
            Row::Native => ALIASES[0],
            Row::ReduceBcast => ALIASES[1],
        }
    }
}

impl Mpi {
    /// The compiled layer's path, or why there is none.
    pub fn layer(&self) -> Result<&'static Path, String> {
        self.layer
            .map(Path::new)
            .map_err(|why| format!("{}: {why}", self.name))
    }

    /// This MPI's launcher on `PATH`.
    fn launcher(&self) -> Result<PathBuf, String> {
        for name in self.launchers {
            let Some(path) = crate::on_path::find_on_path(name) else {
                continue;
            };
            if name.contains('.') || mpirun::version_mentions(&path, self.marker) {
                return Ok(path);
            }
        }
        Err(format!(
            "{}: none of {} on PATH",
            self.name,
            self.launchers.join(", ")
        ))
    }

    /// The launcher's options for `ranks` processes on `cores` cores.
    fn options(&self, ranks: usize, cores: usize, unpinned: bool) -> &'static [&'static str] {
        match (self.label, ranks > cores, unpinned) {
            ("openmpi", true, _) => &["--oversubscribe", "--bind-to", "none"],
            ("openmpi", false, true) => &["--bind-to", "none"],
            ("openmpi", false, false) => &["--map-by", "core", "--bind-to", "core"],
            (_, false, false) => &["-bind-to", "core"],
            _ => &["-bind-to", "none"],
        }
    }

    /// The MPI labelled `label`.
    pub fn by_label(label: &str) -> Option<Mpi> {
        MPIS.into_iter().find(|m| m.label == label)
    }
}

/// The rows of `c` that `selection` (`--algorithms`: `all` or a list of names) asks for of
/// the MPI labelled `label`, in table order.
fn rows(c: Call, selection: &str, label: &str) -> Vec<Row> {
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
        selection.trim() == "all"
            || selection
                .split(',')
                .any(|n| n.trim() == row.name(label) || n.trim() == row.alias())
    };
    all.iter().copied().filter(wanted).collect()
}

/// Every row name of the MPI libraries, and the aliases, as `--algorithms` spells them.
pub fn names() -> Vec<String> {
    MPIS.iter()
        .flat_map(|m| [Row::Native, Row::ReduceBcast].map(|r| r.name(m.label)))
        .chain(ALIASES.iter().map(|a| a.to_string()))
        .collect()
}

/// Whether `selection` (`--algorithms`) asks for any row of an MPI library.
pub fn selected(selection: &str) -> bool {
    let names = names();
    selection.trim() == "all"
        || selection
            .split(',')
            .any(|n| names.iter().any(|m| m == n.trim()))
}

/// Runs the MPI rows of `args` between `ranks` processes under each MPI's launcher and
/// returns their records, labelled with the sweep's `scope` and `placement` so that they
/// group with the thread rows of the same scope, and a line for each MPI whose rows are
/// missing: not built, no launcher, or its job failed (with the tail of its output) or timed
/// out.
///
/// With `--cold` or `--touch`, each process's buffers behave as the threads' buffer pools do.
pub fn run(args: &Args, scope: &str, placement: &str, ranks: usize) -> (Vec<Record>, Vec<String>) {
    let (mut records, mut missing) = (Vec::new(), Vec::new());
    for mpi in MPIS {
        match run_one(&mpi, args, scope, placement, ranks) {
            Ok(mut r) => records.append(&mut r),
            Err(why) => missing.push(why),
        }
    }
    (records, missing)
}

/// [`run`] for one MPI.
fn run_one(
    mpi: &Mpi,
    args: &Args,
    scope: &str,
    placement: &str,
    ranks: usize,
) -> Result<Vec<Record>, String> {
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
            sizes * rows(c, &args.algorithms, mpi.label).len()
        })
        .sum();
    if cells == 0 {
        return Ok(Vec::new());
    }
    let layer = mpi.layer()?;
    let launcher = mpi.launcher()?;
    let cores = crate::placement::available_cores().len();
    let options = mpi.options(ranks, cores, args.placement == Placement::Unpinned);
    let text = mpirun::run_job_with(
        &launcher,
        ranks,
        options,
        |out| worker_args(args, mpi, layer, out),
        deadline(args, cells),
    )
    .map_err(|e| format!("{}: {e}", mpi.name))?;
    let mut records: Vec<Record> = serde_json::from_str(&text)
        .map_err(|e| format!("the {} job's records do not parse: {e}", mpi.name))?;
    for r in &mut records {
        r.source = Source::Mpi;
        r.scope = scope.to_string();
        r.placement = placement.to_string();
    }
    Ok(records)
}

/// The worker's command line: the options that decide what it measures, the MPI and its
/// layer, and where to write.
fn worker_args(args: &Args, mpi: &Mpi, layer: &Path, out: &Path) -> Vec<String> {
    let join = |v: Vec<String>| v.join(",");
    let mut a = vec![
        "--mpi-worker".to_string(),
        "--mpi-out".into(),
        out.display().to_string(),
        "--mpi-label".into(),
        mpi.label.into(),
        "--mpi-layer".into(),
        layer.display().to_string(),
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
        let all = call(Collective::Allreduce);
        assert_eq!(
            rows(all, "all", "mpich"),
            vec![Row::Native, Row::ReduceBcast]
        );
        assert_eq!(
            rows(all, "auto, mpi-reduce-bcast", "openmpi"),
            vec![Row::ReduceBcast]
        );
        assert_eq!(rows(all, "auto,mpich", "mpich"), vec![Row::Native]);
        assert!(rows(all, "auto,mpich", "openmpi").is_empty());
        assert_eq!(
            rows(all, "openmpi-reduce-bcast", "openmpi"),
            vec![Row::ReduceBcast]
        );
        assert_eq!(
            rows(call(Collective::Broadcast), "mpi", "openmpi"),
            vec![Row::Native]
        );
        assert!(rows(call(Collective::Broadcast), "mpi-reduce-bcast", "mpich").is_empty());
        assert!(rows(call(Collective::Gather), "auto,ring", "openmpi").is_empty());
        assert!(selected("all") && selected("ring, mpi") && selected("mpi-reduce-bcast"));
        assert!(selected("mpich") && selected("openmpi-reduce-bcast"));
        assert!(!selected("auto,ring"));
        assert_eq!(Row::ReduceBcast.name("mpich"), "mpich-reduce-bcast");
        assert_eq!(Mpi::by_label("openmpi").map(|m| m.name), Some("Open MPI"));
    }

    #[test]
    fn each_launcher_gets_its_own_options() {
        let (o, m) = (MPIS[0], MPIS[1]);
        assert_eq!(
            o.options(2, 2, false),
            ["--map-by", "core", "--bind-to", "core"]
        );
        assert_eq!(
            o.options(8, 2, false),
            ["--oversubscribe", "--bind-to", "none"]
        );
        assert_eq!(m.options(2, 2, false), ["-bind-to", "core"]);
        assert_eq!(m.options(8, 2, false), ["-bind-to", "none"]);
        assert_eq!(m.options(2, 2, true), ["-bind-to", "none"]);
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
        let layer = Path::new("/lib/x.so");
        argv.extend(worker_args(
            &args,
            &MPIS[1],
            layer,
            Path::new("/tmp/x.json"),
        ));
        let back = Args::try_parse_from(argv).unwrap();
        assert!(back.mpi_worker && back.quiet && back.cold);
        assert_eq!(back.mpi_out, Some(PathBuf::from("/tmp/x.json")));
        assert_eq!(back.mpi_layer, Some(PathBuf::from("/lib/x.so")));
        assert_eq!(back.mpi_label.as_deref(), Some("mpich"));
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
            &Row::Native.name("openmpi"),
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
