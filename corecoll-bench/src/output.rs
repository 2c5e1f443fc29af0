//! The results as files and groups: the run's description (`RunInfo`), the grouping of records
//! into comparable sets, the "% of limit" column, and the CSV and JSON files (JSON also read
//! back, as the MPI baseline's processes hand their records over in it). The printed table and
//! summary are in `output/text.rs`, the checks of issue 8 over a run (guidelines, cliffs,
//! blocks) in `output/checks.rs`.

pub mod checks;
mod text;

pub use text::{print_hierarchy, print_summary, print_table, summary_markdown};

use crate::record::{Record, Source};
use serde::{Deserialize, Deserializer, Serialize};
use std::path::Path;

/// What the JSON file says about the run besides its records: the command and a description of
/// the machine, with no date or host name, so that two runs on one machine compare equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The command line.
    pub command: String,
    /// corecoll's version.
    pub version: String,
    /// Cores available to the process (one per core: SMT siblings are not counted).
    pub cores: usize,
    /// Sockets (packages) those cores are on, from `Topology::detect` (1 when the machine
    /// does not say).
    #[serde(default)]
    pub sockets: usize,
    /// The CPU model from /proc/cpuinfo, empty where it is not readable.
    #[serde(default)]
    pub cpu: String,
    /// Operating system and architecture, e.g. `linux x86_64`.
    #[serde(default)]
    pub os: String,
    /// `release` or `debug` (a debug build's times say little).
    #[serde(default)]
    pub build: String,
    /// The cargo features the binary was built with that change what it measures (`mpi`:
    /// the MPI baseline rows).
    #[serde(default)]
    pub features: String,
    /// The machine the ranks were placed on: `detected`, or the described machine of
    /// `--machine`, e.g. `2x2x4 (synthetic: 2 packages, 4 L3 groups, 16 cores)`, whose cores
    /// wrap onto the `cores` real ones. Empty in the files of older runs.
    #[serde(default)]
    pub machine: String,
}

impl RunInfo {
    /// The description of this run of this process on this machine, the ranks placed on
    /// `machine` (the described one of `--machine`) or, without one, on the detected machine.
    pub fn of_this_run(machine: Option<&crate::cli::Machine>) -> RunInfo {
        RunInfo {
            command: std::env::args().collect::<Vec<_>>().join(" "),
            version: env!("CARGO_PKG_VERSION").into(),
            cores: crate::placement::available_cores().len(),
            sockets: crate::placement::sockets().len(),
            cpu: std::fs::read_to_string("/proc/cpuinfo")
                .map(|s| cpu_model(&s))
                .unwrap_or_default(),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            build: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .into(),
            features: if cfg!(feature = "mpi") { "mpi" } else { "" }.into(),
            machine: machine.map_or_else(|| "detected".into(), |m| m.describe()),
        }
    }

    /// The line that heads the printed results and the markdown summary, e.g. `machine:
    /// 2x2x4 (synthetic: 2 packages, 4 L3 groups, 16 cores) on 2 cores, 1 socket`.
    pub fn header(&self) -> String {
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let real = format!(
            "{}, {}",
            plural(self.cores, "core"),
            plural(self.sockets, "socket")
        );
        match self.machine.as_str() {
            "" | "detected" => format!("machine: detected, {real}"),
            m => format!("machine: {m} on {real}"),
        }
    }
}

/// The CPU model named in the text of /proc/cpuinfo: the first `model name` (x86), else
/// `Processor` or `cpu model` (some Arm and MIPS kernels); empty when none is there.
fn cpu_model(cpuinfo: &str) -> String {
    for key in ["model name", "Processor", "cpu model"] {
        let found = cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        });
        if let Some(model) = found {
            return model;
        }
    }
    String::new()
}

/// What makes records comparable: every field that says what was run, except the size and the
/// algorithm. The table and the summary have one section per key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// The collective.
    pub collective: String,
    /// `all`, `socket N` or `processes`.
    pub scope: String,
    /// The placement.
    pub placement: String,
    /// Ranks.
    pub ranks: usize,
    /// Element type.
    pub dtype: String,
    /// Reduction op (`-` for none).
    pub op: String,
    /// `warm` or `cold`.
    pub cache: String,
}

impl GroupKey {
    /// The key of `r`.
    pub fn of(r: &Record) -> GroupKey {
        GroupKey {
            collective: r.collective.clone(),
            scope: r.scope.clone(),
            placement: r.placement.clone(),
            ranks: r.ranks,
            dtype: r.dtype.clone(),
            op: r.op.clone(),
            cache: r.cache.clone(),
        }
    }

    /// Whether `self` and `other` differ at most in scope and placement.
    fn same_run_but_where(&self, other: &GroupKey) -> bool {
        (
            &self.collective,
            self.ranks,
            &self.dtype,
            &self.op,
            &self.cache,
        ) == (
            &other.collective,
            other.ranks,
            &other.dtype,
            &other.op,
            &other.cache,
        )
    }

    /// The heading line of the group, e.g. `allreduce · f64 sum · 2 ranks · all, compact ·
    /// warm`.
    pub fn heading(&self) -> String {
        let what = if self.op == "-" {
            self.dtype.clone()
        } else {
            format!("{} {}", self.dtype, self.op)
        };
        let ranks = if self.ranks == 1 { "rank" } else { "ranks" };
        format!(
            "{} · {what} · {} {ranks} · {}, {} · {}",
            self.collective, self.ranks, self.scope, self.placement, self.cache
        )
    }
}

/// A set of comparable records: their key and their indices in the record slice, ordered by
/// size and, within a size, as the records came.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// What the records have in common.
    pub key: GroupKey,
    /// Indices into the records.
    pub rows: Vec<usize>,
}

/// The groups of `records`, in order of first appearance.
///
/// A record belongs to the group of its [`GroupKey`], with one exception: a record of the MPI
/// library (source `mpi`) whose key no record of this binary's own threads has joins the group
/// that differs from it only in scope and placement (the one of scope `all` if there are
/// several), since MPI's processes are placed by `mpirun` and its rows are there to be compared
/// with the threads' rows. Without such a group it forms its own.
pub fn groups(records: &[Record]) -> Vec<Group> {
    fn add(out: &mut Vec<Group>, key: GroupKey, i: usize) {
        match out.iter_mut().find(|g| g.key == key) {
            Some(g) => g.rows.push(i),
            None => out.push(Group { key, rows: vec![i] }),
        }
    }
    let mut out: Vec<Group> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        if r.source != Source::Mpi {
            add(&mut out, GroupKey::of(r), i);
        }
    }
    let threads = out.len();
    for (i, r) in records.iter().enumerate() {
        if r.source != Source::Mpi {
            continue;
        }
        let own = GroupKey::of(r);
        let host = out[..threads]
            .iter()
            .position(|g| g.key == own)
            .or_else(|| {
                let similar = |g: &&Group| g.key.same_run_but_where(&own);
                let all = out[..threads]
                    .iter()
                    .position(|g| similar(&g) && g.key.scope == "all");
                all.or_else(|| out[..threads].iter().position(|g| similar(&g)))
            });
        match host {
            Some(h) => out[h].rows.push(i),
            None => add(&mut out, own, i),
        }
    }
    for g in &mut out {
        // Stable: within a size the records keep their order.
        g.rows.sort_by_key(|&i| records[i].bytes);
    }
    out
}

/// Fills each record's `limit_pct`: the median of the `limit` row of its group (see
/// [`groups`]) and size, over the record's median, × 100. The limit row itself gets 100.
/// Records without a limit row, or where either median is not a positive number (a failed
/// cell), get `None`.
pub fn fill_limit_pct(records: &mut [Record]) {
    for g in groups(records) {
        for &i in &g.rows {
            let r = &records[i];
            let limit = g
                .rows
                .iter()
                .map(|&j| &records[j])
                .find(|l| l.algorithm == "limit" && l.bytes == r.bytes);
            let pct = limit.and_then(|l| {
                let ok = |t: f64| t.is_finite() && t > 0.0;
                (ok(l.median_us) && ok(r.median_us)).then(|| l.median_us / r.median_us * 100.0)
            });
            records[i].limit_pct = pct;
        }
    }
}

/// Writes `records` as CSV: a header of [`Record`]'s field names in order, then one row per
/// record; `None` is an empty field and NaN is `NaN`. No records, an empty file.
pub fn write_csv(path: &Path, records: &[Record]) -> Result<(), String> {
    let err = |e: csv::Error| format!("{}: {e}", path.display());
    let mut w = csv::Writer::from_path(path).map_err(err)?;
    for r in records {
        w.serialize(r).map_err(err)?;
    }
    w.flush().map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads a CSV file of [`write_csv`] back.
#[cfg(test)]
fn read_csv(path: &Path) -> Result<Vec<Record>, String> {
    let err = |e: csv::Error| format!("{}: {e}", path.display());
    let mut r = csv::Reader::from_path(path).map_err(err)?;
    r.deserialize().map(|x| x.map_err(err)).collect()
}

/// The JSON file as written.
#[derive(Serialize)]
struct ResultsOut<'a> {
    /// The run.
    info: &'a RunInfo,
    /// Its records.
    records: &'a [Record],
    /// The checks over them, when the caller has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    checks: Option<&'a checks::Checks>,
}

/// The JSON file as read.
#[derive(Deserialize)]
struct ResultsIn {
    /// The run.
    info: RunInfo,
    /// Its records.
    records: Vec<Record>,
}

/// Writes `{ "info": …, "records": [ … ], "checks": { … } }` (no `checks` when `checks` is
/// `None`), pretty printed. JSON has no NaN: a failed cell's times are written as `null` (and
/// read back as NaN by [`read_json`], which ignores the checks).
pub fn write_json(
    path: &Path,
    info: &RunInfo,
    records: &[Record],
    checks: Option<&checks::Checks>,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(|e| err(&e))?;
    let mut w = std::io::BufWriter::new(file);
    let out = ResultsOut {
        info,
        records,
        checks,
    };
    serde_json::to_writer_pretty(&mut w, &out).map_err(|e| err(&e))?;
    std::io::Write::write_all(&mut w, b"\n").map_err(|e| err(&e))?;
    std::io::Write::flush(&mut w).map_err(|e| err(&e))
}

/// Reads a file of [`write_json`] back.
pub fn read_json(path: &Path) -> Result<(RunInfo, Vec<Record>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let r: ResultsIn =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((r.info, r.records))
}

/// Deserialises an `f64` that may be missing: JSON's `null` (what serde_json writes for NaN)
/// and an empty CSV field become NaN. For `#[serde(deserialize_with)]` in `record.rs`.
pub fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::Validation;

    /// A record of `algorithm` at `bytes` with median `median_us`; the rest plausible.
    pub fn rec(algorithm: &str, bytes: usize, median_us: f64) -> Record {
        let source = match algorithm {
            "limit" | "std-naive" | "channels" => Source::Baseline,
            "mpi" | "mpi-reduce-bcast" => Source::Mpi,
            _ => Source::Corecoll,
        };
        Record {
            collective: "allreduce".into(),
            algorithm: algorithm.into(),
            source,
            scope: "all".into(),
            placement: "compact".into(),
            ranks: 2,
            dtype: "f64".into(),
            op: "sum".into(),
            bytes,
            count: bytes / 8,
            cache: "warm".into(),
            iters: 100,
            min_us: median_us * 0.9,
            median_us,
            p95_us: median_us * 1.5,
            mean_us: median_us * 1.1,
            algbw_gbs: bytes as f64 / median_us / 1e3,
            busbw_gbs: bytes as f64 / median_us / 1e3,
            limit_pct: None,
            validation: if algorithm == "limit" {
                Validation::Skipped
            } else {
                Validation::Pass
            },
            max_rel_error: None,
            note: String::new(),
            auto_choice: String::new(),
        }
    }

    /// Equality that takes NaN as equal to NaN (`Record`'s `PartialEq` does not).
    fn same(a: &[Record], b: &[Record]) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    /// A file under the temporary directory, unique to this process and `name`.
    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("corecoll-bench-{}-{name}", std::process::id()))
    }

    /// A set with the awkward values: a failed cell (NaN times, no iterations), an error, a
    /// limit percentage, a note with a comma, quotes and a line break, non-ASCII text.
    fn awkward() -> Vec<Record> {
        let mut v = vec![
            rec("ring", 8, 1.234_567_890_123_4),
            rec("limit", 8, 0.1),
            rec("direct", 1 << 20, 0.1 + 0.2),
        ];
        v[0].max_rel_error = Some(3.1e-16);
        v[0].limit_pct = Some(100.0 / 3.0);
        v[1].validation = Validation::Skipped;
        let f = &mut v[2];
        f.iters = 0;
        (f.min_us, f.median_us, f.p95_us, f.mean_us) = (f64::NAN, f64::NAN, f64::NAN, f64::NAN);
        (f.algbw_gbs, f.busbw_gbs) = (f64::NAN, f64::NAN);
        f.validation = Validation::Fail;
        f.note = "rank 1: \"oops\", then\nµ-trouble".into();
        v
    }

    #[test]
    fn csv_header_is_the_schema() {
        // Changing this list changes the files' schema: do it on purpose, and update
        // docs/benchmarks.md with it.
        let fields = [
            "collective",
            "algorithm",
            "source",
            "scope",
            "placement",
            "ranks",
            "dtype",
            "op",
            "bytes",
            "count",
            "cache",
            "iters",
            "min_us",
            "median_us",
            "p95_us",
            "mean_us",
            "algbw_gbs",
            "busbw_gbs",
            "limit_pct",
            "validation",
            "max_rel_error",
            "note",
            "auto_choice",
        ];
        let path = temp("header.csv");
        write_csv(&path, &[rec("ring", 8, 1.0)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(fields.join(",").as_str()));
        let row = lines.next().unwrap();
        assert!(row.starts_with("allreduce,ring,corecoll,all,compact,2,f64,sum,8,1,warm,100,"));
        // None is an empty field.
        assert!(row.ends_with(",,pass,,,"), "{row}");
    }

    #[test]
    fn csv_round_trip() {
        let v = awkward();
        let path = temp("trip.csv");
        write_csv(&path, &v).unwrap();
        let back = read_csv(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(same(&v, &back), "{v:?}\n{back:?}");
    }

    #[test]
    fn json_round_trip_with_nan() {
        let v = awkward();
        let info = RunInfo {
            command: "corecoll-bench --sizes 8".into(),
            version: "0.1.0".into(),
            cores: 2,
            sockets: 1,
            cpu: "Some CPU".into(),
            os: "linux x86_64".into(),
            build: "release".into(),
            features: String::new(),
            machine: "2x2 (synthetic: 2 packages, 2 L3 groups, 4 cores)".into(),
        };
        let path = temp("trip.json");
        let checks = checks::Checks::of(&v, checks::DEFAULT_TOLERANCE);
        write_json(&path, &info, &v, Some(&checks)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let (info2, back) = read_json(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(text.contains("\"median_us\": null"), "{text}");
        assert!(text.contains("\"checks\": {"), "{text}");
        assert_eq!(info2, info);
        assert!(same(&v, &back), "{v:?}\n{back:?}");
    }

    #[test]
    fn json_of_an_older_run_info_reads() {
        let path = temp("old.json");
        std::fs::write(
            &path,
            r#"{"info": {"command": "x", "version": "0.1.0", "cores": 4}, "records": []}"#,
        )
        .unwrap();
        let (info, records) = read_json(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!((info.cores, info.cpu.as_str()), (4, ""));
        assert!(records.is_empty());
        assert!(read_json(&temp("missing.json")).is_err());
    }

    #[test]
    fn cpu_model_from_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: X\nmodel name\t: Fast CPU 3000\n";
        assert_eq!(cpu_model(x86), "Fast CPU 3000");
        let arm = "Processor\t: ARMv7 rev 4 (v7l)\nprocessor\t: 0\n";
        assert_eq!(cpu_model(arm), "ARMv7 rev 4 (v7l)");
        assert_eq!(cpu_model("processor : 0\n"), "");
        let info = RunInfo::of_this_run(None);
        assert!(info.cores >= 1 && info.sockets >= 1);
        assert!(info.header().starts_with("machine: detected, "));
        let m = crate::cli::parse_machine("2x2x4").unwrap();
        let info = RunInfo {
            cores: 2,
            sockets: 1,
            ..RunInfo::of_this_run(Some(&m))
        };
        assert_eq!(
            info.header(),
            "machine: 2x2x4 (synthetic: 2 packages, 4 L3 groups, 16 cores) on 2 cores, 1 socket"
        );
    }

    #[test]
    fn limit_pct_within_groups() {
        let mut v = vec![
            rec("limit", 8, 1.0),
            rec("ring", 8, 4.0),
            rec("ring", 64, 4.0), // no limit at 64 B
            rec("direct", 8, 2.0),
            rec("limit", 8, 3.0), // another group: 4 ranks
            rec("ring", 8, 6.0),
            rec("ring", 8, 0.5), // another group: cold
            rec("ring", 8, f64::NAN),
            rec("mpi", 8, 10.0), // processes: joins the 2-rank group
        ];
        for r in &mut v[4..6] {
            r.ranks = 4;
        }
        v[6].cache = "cold".into();
        v[8].scope = "processes".into();
        v[8].placement = "mpirun".into();
        v[1].limit_pct = Some(1.0); // overwritten
        fill_limit_pct(&mut v);
        let pct: Vec<Option<f64>> = v.iter().map(|r| r.limit_pct).collect();
        assert_eq!(
            pct,
            [
                Some(100.0),
                Some(25.0),
                None,
                Some(50.0),
                Some(100.0),
                Some(50.0),
                None,
                None,
                Some(10.0)
            ]
        );
        let mut failed_limit = vec![rec("limit", 8, f64::NAN), rec("ring", 8, 1.0)];
        fill_limit_pct(&mut failed_limit);
        assert_eq!(failed_limit[0].limit_pct, None);
        assert_eq!(failed_limit[1].limit_pct, None);
    }

    #[test]
    fn groups_by_key_then_size() {
        let mut v = vec![
            rec("ring", 64, 1.0),
            rec("limit", 64, 1.0),
            rec("ring", 8, 1.0),
            rec("ring", 8, 1.0),
            rec("mpi", 8, 1.0),
            rec("mpi", 8, 1.0),
        ];
        v[3].scope = "socket 0".into();
        v[4].scope = "processes".into();
        v[5].scope = "processes".into();
        v[5].ranks = 3;
        let g = groups(&v);
        assert_eq!(g.len(), 3);
        // The MPI row with 2 ranks joins scope `all`, not `socket 0`; the 3-rank one has no
        // group of threads to join.
        assert_eq!(g[0].rows, vec![2, 4, 0, 1]);
        assert_eq!(
            (g[1].key.scope.as_str(), g[1].rows.clone()),
            ("socket 0", vec![3])
        );
        assert_eq!(
            (g[2].key.scope.as_str(), g[2].rows.clone()),
            ("processes", vec![5])
        );
        assert_eq!(
            g[0].key.heading(),
            "allreduce · f64 sum · 2 ranks · all, compact · warm"
        );
    }
}
