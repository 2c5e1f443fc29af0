//! The hierarchy's overhead or benefit: each hierarchical row of a sweep against the best flat
//! algorithm and flat `auto` of its group and size.

use super::grid::{fmt_time, Align, Grid, Titled};
use super::table::by_size;
use super::{groups, Group};
use crate::domain::fmt_bytes;
use crate::record::{Record, Source, Validation};
use std::io::Write;

/// The hierarchy's goal: a hierarchical run costs at most this many times the flat ones of the
/// same collective, size and rank count. Ratios above it are flagged.
pub const HIER_GOAL: f64 = 1.3;

/// Whether `algorithm` (a row's name, perhaps with a parameter) is one of the hierarchical
/// algorithms: `hierarchical` or all-to-all's `ring-leaders`.
pub fn is_hierarchical(algorithm: &str) -> bool {
    let base = algorithm.split(':').next().unwrap_or(algorithm);
    matches!(
        base,
        "hierarchical" | "hierarchical-direct" | "ring-leaders"
    )
}

/// One hierarchical row of a group at one size against the flat rows beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct HierRatio {
    /// Bytes per rank.
    pub bytes: usize,
    /// The hierarchical row's algorithm.
    pub algorithm: String,
    /// Its median, µs.
    pub median_us: f64,
    /// The best flat algorithm (fastest of corecoll's other algorithms, `auto` and
    /// hierarchical ones not counted, failed cells left out) and its median, µs.
    pub best_flat: Option<(String, f64)>,
    /// The flat `auto` row's median, µs.
    pub auto_us: Option<f64>,
    /// `median_us` ÷ the best flat median.
    pub vs_best: Option<f64>,
    /// `median_us` ÷ `auto`'s median.
    pub vs_auto: Option<f64>,
}

impl HierRatio {
    /// Whether a ratio is above [`HIER_GOAL`].
    pub fn flagged(&self) -> bool {
        [self.vs_best, self.vs_auto]
            .into_iter()
            .flatten()
            .any(|r| r > HIER_GOAL)
    }
}

/// The ratios of every hierarchical row of group `g` (timed, not failed) to the flat rows of
/// its size, for the sizes that have flat rows (a best flat algorithm or `auto`).
pub fn hierarchy_ratios(records: &[Record], g: &Group) -> Vec<HierRatio> {
    let timed = |r: &Record| {
        r.source == Source::Corecoll
            && r.validation != Validation::Fail
            && r.median_us.is_finite()
            && r.median_us > 0.0
    };
    let mut out = Vec::new();
    for run in by_size(records, g) {
        let rows: Vec<&Record> = run
            .iter()
            .map(|&i| &records[i])
            .filter(|r| timed(r))
            .collect();
        let best_flat = rows
            .iter()
            .filter(|r| r.algorithm != "auto" && !is_hierarchical(&r.algorithm))
            .min_by(|a, b| a.median_us.total_cmp(&b.median_us))
            .map(|r| (r.algorithm.clone(), r.median_us));
        let auto_us = rows
            .iter()
            .find(|r| r.algorithm == "auto")
            .map(|r| r.median_us);
        if best_flat.is_none() && auto_us.is_none() {
            continue;
        }
        for h in rows.iter().filter(|r| is_hierarchical(&r.algorithm)) {
            out.push(HierRatio {
                bytes: h.bytes,
                algorithm: h.algorithm.clone(),
                median_us: h.median_us,
                vs_best: best_flat.as_ref().map(|(_, t)| h.median_us / t),
                vs_auto: auto_us.map(|t| h.median_us / t),
                best_flat: best_flat.clone(),
                auto_us,
            });
        }
    }
    out
}

/// Per group with hierarchical rows and flat ones to compare them with: its heading and the
/// table of [`hierarchy_ratios`].
pub fn hierarchy_tables(records: &[Record]) -> Vec<Titled> {
    use Align::{Left, Right};
    let mut tables = Vec::new();
    for g in groups(records) {
        let ratios = hierarchy_ratios(records, &g);
        if ratios.is_empty() {
            continue;
        }
        let mut grid = Grid::new(&[
            ("size", Right),
            ("hierarchical", Left),
            ("median", Right),
            ("best flat", Left),
            ("median ", Right),
            ("÷best", Right),
            ("auto", Right),
            ("÷auto", Right),
            ("goal", Left),
        ]);
        let ratio = |r: Option<f64>| r.map_or_else(|| "-".into(), |r| format!("{r:.2}"));
        for h in &ratios {
            let (name, t) = match &h.best_flat {
                Some((n, t)) => (n.clone(), fmt_time(*t)),
                None => ("-".into(), "-".into()),
            };
            grid.rows.push(Some(vec![
                fmt_bytes(h.bytes),
                h.algorithm.clone(),
                fmt_time(h.median_us),
                name,
                t,
                ratio(h.vs_best),
                h.auto_us.map_or_else(|| "-".into(), fmt_time),
                ratio(h.vs_auto),
                if h.flagged() {
                    format!("> {HIER_GOAL:.1}")
                } else {
                    "ok".into()
                },
            ]));
        }
        tables.push(Titled {
            heading: g.key.heading(),
            grid,
        });
    }
    tables
}

/// Prints the hierarchy's overhead or benefit: per group (collective, scope, ranks, …) and
/// size, each hierarchical row's median over the best flat algorithm's and over flat `auto`'s,
/// flagged where either is above [`HIER_GOAL`]; nothing when no group has hierarchical and
/// flat rows. With `--per-socket`, each socket's scope and the whole machine's get their own.
pub fn print_hierarchy(w: &mut dyn Write, records: &[Record]) -> std::io::Result<()> {
    let tables = hierarchy_tables(records);
    if tables.is_empty() {
        return Ok(());
    }
    Titled::print_all(w, "Hierarchical vs flat", &tables)?;
    let flagged = tables
        .iter()
        .flat_map(|t| t.grid.rows.iter().flatten())
        .filter(|r| r.last().is_some_and(|c| c != "ok"))
        .count();
    writeln!(
        w,
        "÷best: the hierarchical median over the best flat algorithm's (auto and hierarchical \
         rows not counted); ÷auto: over flat auto's. Goal: at most {HIER_GOAL:.1} \
         ({flagged} row(s) above)."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::summary::summary_markdown;
    use crate::output::testing::{cells, set};
    use crate::record::testing::rec;

    #[test]
    fn hierarchy_ratios_against_the_best_flat_and_auto() {
        let mut v = vec![
            rec("auto", 8, 2.0),
            rec("direct", 8, 1.0),
            rec("ring", 8, 4.0),
            rec("hierarchical", 8, 1.2),
            rec("hierarchical:1KiB", 8, 3.0),
            rec("limit", 8, 0.1), // a baseline: not flat corecoll
            rec("auto", 64, 2.0),
            rec("direct", 64, 0.5), // failed: not the best
            rec("hierarchical", 64, 2.5),
            rec("direct", 512, 1.0), // no hierarchical row at this size
            rec("hierarchical", 4096, 1.0), // nothing flat to compare with
            rec("hierarchical", 8, 9.0), // another group: socket 0, alone
            rec("ring", 8, 3.0),
        ];
        v[7].validation = Validation::Fail;
        v[11].scope = "socket 0".into();
        v[12].scope = "socket 0".into();
        let gs = groups(&v);
        assert_eq!(gs.len(), 2);
        let r = hierarchy_ratios(&v, &gs[0]);
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!(r[0].algorithm, "hierarchical");
        assert_eq!(r[0].best_flat, Some(("direct".to_string(), 1.0)));
        assert!((r[0].vs_best.unwrap() - 1.2).abs() < 1e-12);
        assert!((r[0].vs_auto.unwrap() - 0.6).abs() < 1e-12);
        assert!(!r[0].flagged());
        assert_eq!(r[1].algorithm, "hierarchical:1KiB");
        assert!(r[1].flagged());
        assert_eq!((r[2].bytes, r[2].best_flat.clone()), (64, None));
        assert_eq!(r[2].vs_best, None);
        assert!((r[2].vs_auto.unwrap() - 1.25).abs() < 1e-12);
        assert!(!r[2].flagged());
        let s = hierarchy_ratios(&v, &gs[1]);
        assert_eq!(s.len(), 1);
        assert!((s[0].vs_best.unwrap() - 3.0).abs() < 1e-12 && s[0].vs_auto.is_none());
        assert!(is_hierarchical("ring-leaders:2") && !is_hierarchical("ring"));

        let mut out = Vec::new();
        print_hierarchy(&mut out, &v).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Hierarchical vs flat"), "{text}");
        assert_eq!(
            cells(&text, "8 B", "hierarchical:1KiB"),
            [
                "8",
                "B",
                "hierarchical:1KiB",
                "3.00",
                "µs",
                "direct",
                "1.00",
                "µs",
                "3.00",
                "2.00",
                "µs",
                "1.50",
                ">",
                "1.3"
            ]
        );
        assert!(text.contains("socket 0"), "{text}");
        assert!(text.contains("(2 row(s) above)"), "{text}");
        let md = summary_markdown(&v);
        assert!(md.contains("### Hierarchical vs flat"), "{md}");
        assert!(
            md.contains(
                "| 8 B | hierarchical | 1.20 µs | direct | 1.00 µs | 1.20 | 2.00 µs | 0.60 | ok |"
            ),
            "{md}"
        );
        // No hierarchical rows, no section.
        let mut out = Vec::new();
        print_hierarchy(&mut out, &set()).unwrap();
        assert!(out.is_empty());
        assert!(!summary_markdown(&set()).contains("Hierarchical"));
    }
}
