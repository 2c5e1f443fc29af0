//! The results as files: CSV (one row per record, the schema [`Record`]'s fields) and JSON
//! (the run's description, the records and the checks over them), written and read back; and
//! where they go unless told otherwise.

use super::checks::Checks;
use super::RunInfo;
use crate::record::Record;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the results go unless told otherwise: `target/corecoll-bench` of the workspace,
/// beside the build's own output, from whichever directory the bench runs; relative to the
/// current directory when it lies below it (`target/corecoll-bench` from the workspace root).
pub fn default_dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = crate_dir
        .parent()
        .unwrap_or(crate_dir)
        .join("target")
        .join("corecoll-bench");
    match std::env::current_dir() {
        Ok(cwd) => dir.strip_prefix(&cwd).map(Path::to_path_buf).unwrap_or(dir),
        Err(_) => dir,
    }
}

/// Creates the directory that `path` will be written into, if it names one.
pub fn create_parent(path: &Path) -> Result<(), String> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))
        }
        None => Ok(()),
    }
}

/// Writes `rows` as CSV: a header of the row type's field names in order (for [`Record`]s,
/// the results' schema), then one line per row; `None` is an empty field and NaN is `NaN`. No
/// rows, an empty file.
pub fn write_csv<R: Serialize>(path: &Path, rows: &[R]) -> Result<(), String> {
    let err = |e: csv::Error| format!("{}: {e}", path.display());
    let mut w = csv::Writer::from_path(path).map_err(err)?;
    for r in rows {
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
    checks: Option<&'a Checks>,
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
    checks: Option<&Checks>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::checks::DEFAULT_TOLERANCE;
    use crate::record::testing::rec;
    use crate::record::Validation;

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
        (v[1].cache, v[1].touch_us) = ("touch".into(), Some(0.25));
        v[0].switches = Some(7.5);
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
            "touch_us",
            "switches",
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
        assert!(row.ends_with(",,pass,,,,,"), "{row}");
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
        let checks = Checks::of(&v, DEFAULT_TOLERANCE);
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
    fn json_without_the_later_fields_reads() {
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
}
