//! The printed results: the full table (every cell, grouped, sizes apart, the fastest of
//! corecoll's algorithms marked), the summary (per size the best algorithm against `auto`,
//! the limit and each baseline) and the hierarchy's overhead (hierarchical rows against the
//! flat ones), as fixed-width text and the summaries also as GitHub markdown.

use super::{groups, Group};
use crate::record::{Record, Source, Validation};
use crate::sweep::fmt_bytes;
use std::io::Write;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Align {
    /// Text: padded on the right.
    Left,
    /// Numbers: padded on the left.
    Right,
}

/// A table of text cells under a header; a `None` row is a blank line.
#[derive(Debug, Default)]
pub(super) struct Grid {
    /// Column titles.
    header: Vec<String>,
    /// One per column.
    align: Vec<Align>,
    /// The rows, each as long as the header.
    pub(super) rows: Vec<Option<Vec<String>>>,
}

impl Grid {
    /// A grid with the columns `cols` (title and alignment).
    pub(super) fn new(cols: &[(&str, Align)]) -> Grid {
        Grid {
            header: cols.iter().map(|c| c.0.to_string()).collect(),
            align: cols.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    /// Writes the grid as fixed-width text, two spaces between columns, no trailing blanks.
    pub(super) fn render(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let mut width: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in self.rows.iter().flatten() {
            for (wd, cell) in width.iter_mut().zip(row) {
                *wd = (*wd).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (k, cell) in cells.iter().enumerate() {
                if k > 0 {
                    s.push_str("  ");
                }
                let wd = width[k];
                match self.align[k] {
                    Align::Left => s.push_str(&format!("{cell:<wd$}")),
                    Align::Right => s.push_str(&format!("{cell:>wd$}")),
                }
            }
            s.trim_end().to_string()
        };
        writeln!(w, "{}", line(&self.header))?;
        for row in &self.rows {
            match row {
                Some(cells) => writeln!(w, "{}", line(cells))?,
                None => writeln!(w)?,
            }
        }
        Ok(())
    }

    /// The grid as a GitHub markdown table (blank rows dropped).
    fn markdown(&self) -> String {
        let esc = |c: &String| c.replace('|', "\\|");
        let mut s = String::new();
        let row = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        s.push_str(&row(self.header.iter().map(esc).collect()));
        s.push_str(&row(self
            .align
            .iter()
            .map(|a| match a {
                Align::Left => ":---".to_string(),
                Align::Right => "---:".to_string(),
            })
            .collect()));
        for cells in self.rows.iter().flatten() {
            s.push_str(&row(cells.iter().map(esc).collect()));
        }
        s
    }
}

/// `x` rounded to `n` significant digits.
fn round_sig(x: f64, n: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let f = 10f64.powi(n - 1 - x.abs().log10().floor() as i32);
    (x * f).round() / f
}

/// `x` with `n` significant digits in plain notation (`12.3`, `0.00412`, `12300`); `-` when it
/// is not a number.
fn fmt_sig(x: f64, n: i32) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let r = round_sig(x, n);
    let decimals = (n - 1 - r.abs().log10().floor() as i32).max(0) as usize;
    format!("{r:.decimals$}")
}

/// A time given in µs, with three significant digits in ns, µs, ms or s (`812 ns`,
/// `1.50 µs`, `12.3 ms`); `-` when it is not a number.
pub(super) fn fmt_time(us: f64) -> String {
    if !us.is_finite() {
        return "-".into();
    }
    // Round first, so that 999.7 ns is shown as 1.00 µs and not as 1000 ns.
    let ns = round_sig(us * 1e3, 3);
    let (v, unit) = match ns.abs() {
        a if a < 1e3 => (ns, "ns"),
        a if a < 1e6 => (ns / 1e3, "µs"),
        a if a < 1e9 => (ns / 1e6, "ms"),
        _ => (ns / 1e9, "s"),
    };
    format!("{} {unit}", fmt_sig(v, 3))
}

/// A relative error as `3.1e-16`; `0` for none at all, `-` when there is no figure.
fn fmt_rel_err(e: Option<f64>) -> String {
    match e {
        None => "-".into(),
        Some(0.0) => "0".into(),
        Some(e) => format!("{e:.1e}"),
    }
}

/// A percentage of the limit, or `-`.
fn fmt_pct(p: Option<f64>) -> String {
    p.map_or_else(|| "-".into(), |p| fmt_sig(p, 3))
}

/// Whether `r` may be called the best: one of corecoll's algorithms other than `auto`, timed,
/// and not failed.
fn contender(r: &Record) -> bool {
    r.source == Source::Corecoll
        && r.algorithm != "auto"
        && r.validation != Validation::Fail
        && r.median_us.is_finite()
}

/// The group's rows split by size: runs of indices with equal `bytes` (the rows are sorted).
pub(super) fn by_size(records: &[Record], g: &Group) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for &i in &g.rows {
        match out.last_mut() {
            Some(run) if records[run[0]].bytes == records[i].bytes => run.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

/// Of the indices `run`, the contender with the smallest median (the first of equals).
pub(super) fn best(records: &[Record], run: &[usize]) -> Option<usize> {
    run.iter()
        .copied()
        .filter(|&i| contender(&records[i]))
        .min_by(|&a, &b| records[a].median_us.total_cmp(&records[b].median_us))
}

/// Prints every record: per group a heading and a table, sizes separated by a blank line and
/// ascending, within a size the records in their order; the fastest of corecoll's algorithms
/// at each size has its median marked `*`.
pub fn print_table(w: &mut dyn Write, records: &[Record]) -> std::io::Result<()> {
    use Align::{Left, Right};
    for g in groups(records) {
        let notes = g.rows.iter().any(|&i| !records[i].note.is_empty());
        let mut cols = vec![
            ("size", Right),
            ("algorithm", Left),
            ("iters", Right),
            ("min", Right),
            ("median ", Right),
            ("p95", Right),
            ("mean", Right),
            ("algbw GB/s", Right),
            ("busbw GB/s", Right),
            ("% limit", Right),
            ("check", Left),
            ("max rel err", Right),
        ];
        if notes {
            cols.push(("note", Left));
        }
        let mut grid = Grid::new(&cols);
        for (k, run) in by_size(records, &g).iter().enumerate() {
            if k > 0 {
                grid.rows.push(None);
            }
            let top = best(records, run);
            for &i in run {
                let r = &records[i];
                let mark = if Some(i) == top { "*" } else { " " };
                let mut cells = vec![
                    fmt_bytes(r.bytes),
                    r.algorithm.clone(),
                    r.iters.to_string(),
                    fmt_time(r.min_us),
                    format!("{}{mark}", fmt_time(r.median_us)),
                    fmt_time(r.p95_us),
                    fmt_time(r.mean_us),
                    fmt_sig(r.algbw_gbs, 3),
                    fmt_sig(r.busbw_gbs, 3),
                    fmt_pct(r.limit_pct),
                    r.validation.as_str().into(),
                    fmt_rel_err(r.max_rel_error),
                ];
                if notes {
                    cells.push(r.note.replace(['\n', '\r'], " "));
                }
                grid.rows.push(Some(cells));
            }
        }
        writeln!(w, "{}", g.key.heading())?;
        grid.render(w)?;
        writeln!(w)?;
    }
    if !records.is_empty() {
        writeln!(
            w,
            "*: the fastest of corecoll's algorithms at that size (auto and failed cells not \
             counted).\n\
             Times per call: max(end) − min(start) over the ranks. algbw = bytes per rank / \
             median; busbw = algbw × nccl-tests' factor.\n\
             % limit = the limit kernel's median / this median × 100."
        )?;
    }
    Ok(())
}

/// One group's summary.
struct SummaryTable {
    /// The group's heading.
    heading: String,
    /// Its rows.
    grid: Grid,
}

/// The summary of every group with rows of corecoll, and the names of the baselines (other
/// than `limit`) that appear in them.
fn summary_tables(records: &[Record]) -> (Vec<SummaryTable>, Vec<String>) {
    use Align::{Left, Right};
    let mut tables = Vec::new();
    let mut all_baselines: Vec<String> = Vec::new();
    for g in groups(records) {
        if !g
            .rows
            .iter()
            .any(|&i| records[i].source == Source::Corecoll)
        {
            continue;
        }
        let mut baselines: Vec<&str> = Vec::new();
        for &i in &g.rows {
            let r = &records[i];
            if r.source != Source::Corecoll
                && r.algorithm != "limit"
                && !baselines.contains(&r.algorithm.as_str())
            {
                baselines.push(&r.algorithm);
            }
        }
        let mut cols = vec![
            ("size", Right),
            ("best", Left),
            ("median", Right),
            ("auto", Right),
            ("auto ran", Left),
            ("auto/best", Right),
            ("% limit", Right),
        ];
        cols.extend(baselines.iter().map(|b| (*b, Right)));
        let mut grid = Grid::new(&cols);
        for run in by_size(records, &g) {
            let find = |name: &str| {
                run.iter()
                    .map(|&i| &records[i])
                    .find(|r| r.algorithm == name)
            };
            let top = best(records, &run).map(|i| &records[i]);
            let mut cells = vec![fmt_bytes(records[run[0]].bytes)];
            let auto = find("auto").filter(|r| r.source == Source::Corecoll);
            let timed = |r: &Record| r.validation != Validation::Fail && r.median_us.is_finite();
            let auto_cell = match auto {
                None => "-".into(),
                Some(a) if a.validation == Validation::Fail => "FAIL".into(),
                Some(a) => fmt_time(a.median_us),
            };
            // What auto chose, `=` when it is the best's own algorithm.
            let ran = match auto.map(|a| a.auto_choice.as_str()) {
                None | Some("") => "-".to_string(),
                Some(c) if top.is_some_and(|t| super::checks::same_algorithm(c, &t.algorithm)) => {
                    format!("= {c}")
                }
                Some(c) => c.to_string(),
            };
            match top {
                Some(t) => {
                    cells.push(t.algorithm.clone());
                    cells.push(fmt_time(t.median_us));
                    cells.push(auto_cell);
                    cells.push(ran);
                    cells.push(match auto.filter(|a| timed(a)) {
                        Some(a) => super::checks::fmt_cliff_ratio(a.median_us / t.median_us),
                        None => "-".into(),
                    });
                    cells.push(fmt_pct(t.limit_pct));
                }
                None => {
                    cells.extend([
                        "-".into(),
                        "-".into(),
                        auto_cell,
                        ran,
                        "-".into(),
                        "-".into(),
                    ]);
                }
            }
            for b in &baselines {
                cells.push(match (find(b), top) {
                    (Some(r), _) if r.validation == Validation::Fail => "FAIL".into(),
                    (Some(r), Some(t)) if timed(r) && t.median_us > 0.0 => {
                        format!("{}×", fmt_sig(r.median_us / t.median_us, 3))
                    }
                    _ => "-".into(),
                });
            }
            grid.rows.push(Some(cells));
        }
        for b in baselines {
            if !all_baselines.iter().any(|x| x == b) {
                all_baselines.push(b.to_string());
            }
        }
        tables.push(SummaryTable {
            heading: g.key.heading(),
            grid,
        });
    }
    (tables, all_baselines)
}

/// Prints the summary: per group and size the best of corecoll's algorithms (not `auto`, not
/// failed) and its median, `auto`'s median and its ratio to the best, the best's % of the
/// limit, and each baseline's median as a multiple of the best's; then a legend.
pub fn print_summary(w: &mut dyn Write, records: &[Record]) -> std::io::Result<()> {
    let (tables, baselines) = summary_tables(records);
    if tables.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(w, "Summary")?;
    writeln!(w)?;
    for t in &tables {
        writeln!(w, "{}", t.heading)?;
        t.grid.render(w)?;
        writeln!(w)?;
    }
    writeln!(
        w,
        "best: the fastest of corecoll's algorithms at that size whose result passed its check \
         (auto not counted); median: its median time."
    )?;
    writeln!(
        w,
        "auto ran: the algorithm auto chose (Comm::auto_choice); `=` marks best's own \
         algorithm, where auto/best is the run's noise between two measurements of one schedule."
    )?;
    writeln!(
        w,
        "auto/best: auto's median over best's (1.00: auto did as well as the best); `!` marks \
         a ratio above {:.2} (a cliff: issue 8's goal is none).",
        super::checks::CLIFF_GOAL
    )?;
    writeln!(
        w,
        "% limit: the limit kernel's median as a percentage of best's."
    )?;
    if !baselines.is_empty() {
        writeln!(
            w,
            "{}: the baseline's median over best's, i.e. how many times faster best is.",
            baselines.join(", ")
        )?;
    }
    Ok(())
}

/// The summary of [`print_summary`] as GitHub markdown: per group its heading in bold and a
/// table (for README and docs; the legend is left to the prose around it); then, where there
/// are hierarchical rows, the tables of [`print_hierarchy`] under a heading of their own.
pub fn summary_markdown(records: &[Record]) -> String {
    let (tables, _) = summary_tables(records);
    let mut md = tables
        .iter()
        .map(|t| format!("**{}**\n\n{}", t.heading, t.grid.markdown()))
        .collect::<Vec<_>>()
        .join("\n");
    let hier = hierarchy_tables(records);
    if !hier.is_empty() {
        md.push_str(&format!(
            "\n### Hierarchical vs flat (goal: at most {HIER_GOAL:.1}×)\n\n"
        ));
        md.push_str(
            &hier
                .iter()
                .map(|t| format!("**{}**\n\n{}", t.heading, t.grid.markdown()))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    md
}

/// Issue 6's goal: a hierarchical run costs at most this many times the flat ones of the same
/// collective, size and rank count. Ratios above it are flagged.
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
fn hierarchy_tables(records: &[Record]) -> Vec<SummaryTable> {
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
        tables.push(SummaryTable {
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
    writeln!(w)?;
    writeln!(w, "Hierarchical vs flat")?;
    writeln!(w)?;
    for t in &tables {
        writeln!(w, "{}", t.heading)?;
        t.grid.render(w)?;
        writeln!(w)?;
    }
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
    use crate::output::fill_limit_pct;
    use crate::output::tests::rec;

    #[test]
    fn numbers_with_three_significant_digits() {
        assert_eq!(fmt_sig(12.345, 3), "12.3");
        assert_eq!(fmt_sig(0.004_123, 3), "0.00412");
        assert_eq!(fmt_sig(1.0, 3), "1.00");
        assert_eq!(fmt_sig(99.96, 3), "100");
        assert_eq!(fmt_sig(12_345.0, 3), "12300");
        assert_eq!(fmt_sig(0.0, 3), "0");
        assert_eq!(fmt_sig(f64::NAN, 3), "-");
        assert_eq!(fmt_time(0.8123), "812 ns");
        assert_eq!(fmt_time(0.9997), "1.00 µs");
        assert_eq!(fmt_time(1.5), "1.50 µs");
        assert_eq!(fmt_time(12_345.0), "12.3 ms");
        assert_eq!(fmt_time(2.5e6), "2.50 s");
        assert_eq!(fmt_time(f64::NAN), "-");
        assert_eq!(fmt_rel_err(Some(3.1e-16)), "3.1e-16");
        assert_eq!(fmt_rel_err(Some(0.0)), "0");
        assert_eq!(fmt_rel_err(None), "-");
        assert_eq!(fmt_pct(Some(87.345)), "87.3");
        assert_eq!(fmt_pct(None), "-");
    }

    /// Two sizes of one group, and a second group: at 8 B ring is fastest; at 1 KiB ring is
    /// faster still but failed, so direct is the best.
    fn set() -> Vec<Record> {
        let mut v = vec![
            rec("auto", 8, 1.1),
            rec("ring", 8, 1.0),
            rec("direct", 8, 2.0),
            rec("limit", 8, 0.5),
            rec("std-naive", 8, 12.3),
            rec("auto", 1024, 3.3),
            rec("ring", 1024, 0.1),
            rec("direct", 1024, 3.0),
            rec("limit", 1024, 1.5),
            rec("std-naive", 1024, 30.0),
            rec("mpi", 1024, 15.0),
            rec("ring", 8, 7.0),
        ];
        v[0].auto_choice = "binomial".into();
        v[5].auto_choice = "direct".into();
        v[1].max_rel_error = Some(3.1e-16);
        v[6].validation = Validation::Fail;
        v[6].note = "rank 1, element 0: 1 != 2".into();
        v[11].ranks = 4;
        fill_limit_pct(&mut v);
        v
    }

    /// The cells of the line of `text` that starts with `size` and names `alg`.
    fn cells<'a>(text: &'a str, size: &str, alg: &str) -> Vec<&'a str> {
        text.lines()
            .find(|l| {
                let t: Vec<&str> = l.split_whitespace().collect();
                l.trim_start().starts_with(size) && t.contains(&alg)
            })
            .unwrap_or_else(|| panic!("no line for {size} {alg} in\n{text}"))
            .split_whitespace()
            .collect()
    }

    #[test]
    fn table_marks_the_fastest_and_shows_the_columns() {
        let mut out = Vec::new();
        print_table(&mut out, &set()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("allreduce · f64 sum · 2 ranks · all, compact · warm\n"));
        assert!(text.contains("allreduce · f64 sum · 4 ranks · all, compact · warm\n"));
        // size, algorithm, iters, min, median(+mark), p95, mean, algbw, busbw, %, check, err
        let ring = cells(&text, "8 B", "ring");
        assert_eq!(
            ring,
            [
                "8", "B", "ring", "100", "900", "ns", "1.00", "µs*", "1.50", "µs", "1.10", "µs",
                "0.00800", "0.00800", "50.0", "pass", "3.1e-16"
            ]
        );
        assert_eq!(cells(&text, "8 B", "auto")[7], "µs");
        assert_eq!(cells(&text, "8 B", "direct")[7], "µs");
        let limit = cells(&text, "8 B", "limit");
        assert_eq!(&limit[limit.len() - 3..], ["100", "-", "-"]);
        // The failed ring is faster but not the best; its note ends the line.
        let failed = cells(&text, "1 KiB", "ring");
        assert!(!failed.contains(&"ns*"), "{failed:?}");
        assert_eq!(
            &failed[failed.len() - 9..failed.len() - 6],
            ["FAIL", "-", "rank"]
        );
        assert_eq!(cells(&text, "1 KiB", "direct")[7], "µs*");
        // The one ring of the 4-rank group is its best.
        assert!(text.contains("µs*"));
        // A blank line between the sizes of a group.
        let dir = text.find("8 B  direct").unwrap();
        let tail = &text[dir..];
        let next = tail.find("1 KiB").unwrap();
        assert_eq!(tail[..next].matches('\n').count(), 4, "{tail}");
    }

    #[test]
    fn summary_has_best_auto_limit_and_baselines() {
        let mut out = Vec::new();
        print_summary(&mut out, &set()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let header = text
            .lines()
            .find(|l| l.trim_start().starts_with("size"))
            .unwrap();
        let header: Vec<&str> = header.split_whitespace().collect();
        assert_eq!(
            header,
            [
                "size",
                "best",
                "median",
                "auto",
                "auto",
                "ran",
                "auto/best",
                "%",
                "limit",
                "std-naive",
                "mpi"
            ]
        );
        assert_eq!(
            cells(&text, "8 B", "ring"),
            [
                "8", "B", "ring", "1.00", "µs", "1.10", "µs", "binomial", "1.10", "50.0", "12.3×",
                "-"
            ]
        );
        assert_eq!(
            cells(&text, "1 KiB", "direct"),
            [
                "1", "KiB", "direct", "3.00", "µs", "3.30", "µs", "=", "direct", "1.10", "50.0",
                "10.0×", "5.00×"
            ]
        );
        assert!(text.contains("std-naive, mpi: the baseline's median over best's"));
        let md = summary_markdown(&set());
        assert!(md.starts_with("**allreduce · f64 sum · 2 ranks · all, compact · warm**\n\n"));
        assert!(md.contains(
            "| size | best | median | auto | auto ran | auto/best | % limit | std-naive | mpi |\n"
        ));
        assert!(md.contains("| ---: | :--- | ---: |"));
        assert!(md.contains(
            "| 1 KiB | direct | 3.00 µs | 3.30 µs | = direct | 1.10 | 50.0 | 10.0× | 5.00× |\n"
        ));
        assert!(md.contains("| 8 B | ring | 7.00 µs | - | - | - | - |\n"));
    }

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

    #[test]
    fn nothing_to_print() {
        let mut out = Vec::new();
        print_table(&mut out, &[]).unwrap();
        print_summary(&mut out, &[]).unwrap();
        assert!(out.is_empty());
        assert_eq!(summary_markdown(&[]), "");
    }
}
