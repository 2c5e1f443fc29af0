//! No cliffs: at every size of a sweep, `auto` against the best of corecoll's algorithms
//! measured in the same run, as the summary's `auto/best` column shows it.

use super::{timed, CLIFF_GOAL};
use crate::domain::fmt_bytes;
use crate::output::groups;
use crate::output::table::{best, by_size};
use crate::record::Record;
use serde::Serialize;
use std::io::Write;

/// `auto` against the best algorithm at one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CliffRatio {
    /// Bytes per rank.
    pub bytes: usize,
    /// `auto`'s median, µs.
    pub auto_us: f64,
    /// The best of corecoll's other algorithms (failed cells not counted).
    pub best: String,
    /// Its median, µs.
    pub best_us: f64,
    /// `auto_us / best_us`.
    pub ratio: f64,
    /// The algorithm `auto` chose (empty if the results do not say).
    pub auto_choice: String,
}

impl CliffRatio {
    /// Whether `auto` ran the best's own algorithm (its block aside): a ratio away from 1 is
    /// then the same schedule measured twice, the run's noise, not a wrong decision.
    pub fn same_algorithm(&self) -> bool {
        same_algorithm(&self.auto_choice, &self.best)
    }
}

/// Whether `auto`'s choice `chose` is the algorithm of the row named `row` (a name, or a name
/// and a block: `dual-root:1MiB`).
pub fn same_algorithm(chose: &str, row: &str) -> bool {
    !chose.is_empty() && row.split(':').next() == Some(chose)
}

/// One group's `auto/best` ratios.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cliffs {
    /// The group's heading.
    pub group: String,
    /// Its sizes with both an `auto` row and a best, ascending.
    pub ratios: Vec<CliffRatio>,
}

impl Cliffs {
    /// The sizes whose ratio is above [`CLIFF_GOAL`].
    pub fn above(&self) -> usize {
        self.ratios.iter().filter(|r| r.ratio > CLIFF_GOAL).count()
    }

    /// Of [`Cliffs::above`], those where `auto` ran the best's own algorithm
    /// ([`CliffRatio::same_algorithm`]).
    pub fn above_same(&self) -> usize {
        self.ratios
            .iter()
            .filter(|r| r.ratio > CLIFF_GOAL && r.same_algorithm())
            .count()
    }

    /// The size with the largest ratio (the first of equals).
    pub fn worst(&self) -> Option<&CliffRatio> {
        self.ratios
            .iter()
            .reduce(|a, b| if b.ratio > a.ratio { b } else { a })
    }
}

/// The summary's `auto/best` ratio as printed: two decimals, `!` after it above
/// [`CLIFF_GOAL`].
pub fn fmt_cliff_ratio(r: f64) -> String {
    let mark = if r > CLIFF_GOAL { "!" } else { "" };
    format!("{r:.2}{mark}")
}

/// Per group with an `auto` row and another algorithm of corecoll at some size, the ratios of
/// `auto` to the best (as the summary's `auto/best`).
pub fn cliffs(records: &[Record]) -> Vec<Cliffs> {
    let mut out = Vec::new();
    for g in groups(records) {
        let mut ratios = Vec::new();
        for run in by_size(records, &g) {
            let Some(top) = best(records, &run).map(|i| &records[i]) else {
                continue;
            };
            let auto = run
                .iter()
                .map(|&i| &records[i])
                .find(|r| r.algorithm == "auto" && timed(r));
            if let Some(a) = auto.filter(|_| top.median_us > 0.0) {
                ratios.push(CliffRatio {
                    bytes: a.bytes,
                    auto_us: a.median_us,
                    best: top.algorithm.clone(),
                    best_us: top.median_us,
                    ratio: a.median_us / top.median_us,
                    auto_choice: a.auto_choice.clone(),
                });
            }
        }
        if !ratios.is_empty() {
            out.push(Cliffs {
                group: g.key.heading(),
                ratios,
            });
        }
    }
    out
}

/// Prints a line per group of [`cliffs`]: how many sizes are above [`CLIFF_GOAL`] and the
/// worst ratio. Nothing when there are none.
pub fn print_cliffs(w: &mut dyn Write, cliffs: &[Cliffs]) -> std::io::Result<()> {
    if cliffs.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "No cliffs (goal: auto within {CLIFF_GOAL:.2}× of the best at every size)"
    )?;
    for c in cliffs {
        let worst = c.worst().map_or_else(String::new, |r| {
            format!(
                " (worst {:.2}× at {}, best {})",
                r.ratio,
                fmt_bytes(r.bytes),
                r.best
            )
        });
        let same = match c.above_same() {
            0 => String::new(),
            k => format!(
                "; at {k} of them auto ran the best's own algorithm (the same schedule measured \
                 twice: noise)"
            ),
        };
        writeln!(
            w,
            "{}: {} of {} size(s) above {CLIFF_GOAL:.2}×{worst}{same}",
            c.group,
            c.above(),
            c.ratios.len()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::summary::print_summary;
    use crate::record::testing::rec;
    use crate::record::Validation;

    #[test]
    fn cliffs_count_and_mark_the_sizes_above_the_goal() {
        let v = vec![
            rec("auto", 8, 1.0),
            rec("ring", 8, 1.0),
            rec("auto", 64, 2.82),
            rec("ring", 64, 2.0), // 1.41
            rec("direct", 64, 4.0),
            rec("auto", 512, 2.6),
            rec("ring", 512, 2.0), // 1.30
            rec("auto", 4096, 5.0),
            rec("ring", 4096, 1.0), // failed: not the best
            rec("direct", 4096, 4.5),
            rec("auto", 32768, 1.0), // alone: no best
        ];
        let mut v = v;
        v[8].validation = Validation::Fail;
        // At 512 B auto ran the best's own algorithm (with another block): noise.
        v[5].auto_choice = "ring".into();
        v[6].algorithm = "ring:1KiB".into();
        v[2].auto_choice = "direct".into();
        let c = cliffs(&v);
        assert_eq!(c.len(), 1);
        let c = &c[0];
        assert_eq!(c.ratios.len(), 4);
        assert_eq!(c.above(), 2);
        assert_eq!(c.above_same(), 1);
        assert!(c.ratios[2].same_algorithm() && !c.ratios[1].same_algorithm());
        assert!(!same_algorithm("", "ring") && !same_algorithm("ring", "ring-leaders"));
        let w = c.worst().unwrap();
        assert_eq!((w.bytes, w.best.as_str()), (64, "ring"));
        assert!((w.ratio - 1.41).abs() < 1e-12);
        assert_eq!(c.ratios[3].best, "direct");
        assert_eq!(fmt_cliff_ratio(1.41), "1.41!");
        assert_eq!(fmt_cliff_ratio(1.25), "1.25");
        let mut out = Vec::new();
        print_cliffs(&mut out, &cliffs(&v)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(
                "allreduce · f64 sum · 2 ranks · all, compact · warm: 2 of 4 size(s) above \
                 1.25× (worst 1.41× at 64 B, best ring); at 1 of them auto ran the best's own \
                 algorithm (the same schedule measured twice: noise)"
            ),
            "{text}"
        );
        // The summary marks them.
        let mut out = Vec::new();
        print_summary(&mut out, &v).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(" 1.41! "), "{text}");
        assert!(text.contains(" 1.00 "), "{text}");
        // auto alone: no line at all.
        let mut out = Vec::new();
        print_cliffs(&mut out, &cliffs(&[rec("auto", 8, 1.0)])).unwrap();
        assert!(out.is_empty());
    }
}
