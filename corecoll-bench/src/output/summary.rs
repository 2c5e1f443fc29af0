//! The summary of a sweep: per group and size the best of corecoll's algorithms against
//! `auto`, the limit and each baseline, as text with its legend and as GitHub markdown (with
//! the hierarchy's tables after it).

use super::checks::{fmt_cliff_ratio, same_algorithm, CLIFF_GOAL};
use super::grid::{fmt_pct, fmt_sig, fmt_time, Align, Grid, Titled};
use super::groups;
use super::hierarchy::{hierarchy_tables, HIER_GOAL};
use super::table::{best, by_size};
use crate::domain::fmt_bytes;
use crate::record::{Record, Source, Validation};
use std::io::Write;

/// The summary of every group with rows of corecoll, and the names of the baselines (other
/// than `limit`) that appear in them.
fn summary_tables(records: &[Record]) -> (Vec<Titled>, Vec<String>) {
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
                && r.source != Source::Peer
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
                Some(c) if top.is_some_and(|t| same_algorithm(c, &t.algorithm)) => {
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
                        Some(a) => fmt_cliff_ratio(a.median_us / t.median_us),
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
        tables.push(Titled {
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
    Titled::print_all(w, "Summary", &tables)?;
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
         a ratio above {:.2} (a cliff; the goal is none).",
        CLIFF_GOAL
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
/// are peers' rows, the tables of `print_peers`, and where there are hierarchical rows, the
/// tables of `print_hierarchy`, each under a heading of its own.
pub fn summary_markdown(records: &[Record]) -> String {
    let (tables, _) = summary_tables(records);
    let mut md = Titled::markdown_all(&tables);
    md.push_str(&super::peers_markdown(records));
    let hier = hierarchy_tables(records);
    if !hier.is_empty() {
        md.push_str(&format!(
            "\n### Hierarchical vs flat (goal: at most {HIER_GOAL:.1}×)\n\n"
        ));
        md.push_str(&Titled::markdown_all(&hier));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::table::print_table;
    use crate::output::testing::{cells, set};

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
    fn nothing_to_print() {
        let mut out = Vec::new();
        print_table(&mut out, &[]).unwrap();
        print_summary(&mut out, &[]).unwrap();
        assert!(out.is_empty());
        assert_eq!(summary_markdown(&[]), "");
    }
}
