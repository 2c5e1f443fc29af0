//! The full table of a sweep: every cell, grouped, sizes apart, the fastest of corecoll's
//! algorithms marked; and the choice of that fastest row, which the summary and the checks
//! share.

use super::grid::{fmt_pct, fmt_rel_err, fmt_sig, fmt_time, Align, Grid};
use super::{groups, Group};
use crate::domain::fmt_bytes;
use crate::record::{Record, Source, Validation};
use std::io::Write;

/// Whether `r` may be called the best: one of corecoll's algorithms other than `auto`, timed,
/// and not failed.
fn contender(r: &Record) -> bool {
    r.source == Source::Corecoll
        && r.algorithm != "auto"
        && r.validation != Validation::Fail
        && r.median_us.is_finite()
}

/// The group's rows split by size: runs of indices with equal `bytes` (the rows are sorted).
pub fn by_size(records: &[Record], g: &Group) -> Vec<Vec<usize>> {
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
pub fn best(records: &[Record], run: &[usize]) -> Option<usize> {
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
        let touched = g.rows.iter().any(|&i| records[i].touch_us.is_some());
        let switched = g.rows.iter().any(|&i| records[i].switches.is_some());
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
        if touched {
            cols.push(("touch", Right));
        }
        if switched {
            cols.push(("switches", Right));
        }
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
                if touched {
                    cells.push(r.touch_us.map_or_else(|| "-".into(), fmt_time));
                }
                if switched {
                    cells.push(r.switches.map_or_else(|| "-".into(), |s| fmt_sig(s, 3)));
                }
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
        if records.iter().any(|r| r.switches.is_some()) {
            writeln!(
                w,
                "switches: context switches per iteration (its barrier included) of all the \
                 ranks' threads or processes together, voluntary (waiting) and not (time slice \
                 used up)."
            )?;
        }
        if records.iter().any(|r| r.touch_us.is_some()) {
            writeln!(
                w,
                "touch: the slowest rank's write of its whole input before a call (not in the \
                 call's time; the limit kernel's includes two barriers)."
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::testing::{cells, set};

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
}
