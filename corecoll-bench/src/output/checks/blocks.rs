//! `Block::Auto` against fixed blocks: each pipelined algorithm's row with the block the
//! library picks against its rows with the fixed blocks of `--blocks`.

use super::{timed, BLOCK_GOAL};
use crate::domain::{fmt_bytes, BLOCK_SWEPT};
use crate::output::grid::{fmt_time, Align, Grid};
use crate::output::table::by_size;
use crate::output::{groups, GroupKey};
use crate::record::Record;
use serde::Serialize;
use std::io::Write;

/// A pipelined algorithm's `Block::Auto` row against its best fixed block at one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockCompare {
    /// The group's heading.
    pub group: String,
    /// The algorithm (one of [`BLOCK_SWEPT`]).
    pub algorithm: String,
    /// Bytes per rank.
    pub bytes: usize,
    /// The `Block::Auto` row's median, µs.
    pub auto_us: f64,
    /// The fastest fixed block's row (`dual-root:4KiB`).
    pub best_fixed: String,
    /// Its median, µs.
    pub best_fixed_us: f64,
    /// `auto_us / best_fixed_us`.
    pub ratio: f64,
}

impl BlockCompare {
    /// Whether the ratio is above [`BLOCK_GOAL`].
    pub fn flagged(&self) -> bool {
        self.ratio > BLOCK_GOAL
    }
}

/// Per group, size and algorithm of [`BLOCK_SWEPT`] with a timed `Block::Auto` row (the plain
/// name) and timed fixed-block rows (`NAME:SIZE`): the first against the fastest of the others.
pub fn block_compares(records: &[Record]) -> Vec<BlockCompare> {
    let mut out = Vec::new();
    for g in groups(records) {
        let heading = GroupKey::heading(&g.key);
        for run in by_size(records, &g) {
            let rows: Vec<&Record> = run
                .iter()
                .map(|&i| &records[i])
                .filter(|r| timed(r))
                .collect();
            for &name in BLOCK_SWEPT {
                let Some(auto) = rows.iter().find(|r| r.algorithm == name) else {
                    continue;
                };
                let fixed = rows
                    .iter()
                    .filter(|r| {
                        r.algorithm
                            .split_once(':')
                            .is_some_and(|(base, _)| base == name)
                    })
                    .min_by(|a, b| a.median_us.total_cmp(&b.median_us));
                if let Some(f) = fixed.filter(|f| f.median_us > 0.0) {
                    out.push(BlockCompare {
                        group: heading.clone(),
                        algorithm: name.into(),
                        bytes: auto.bytes,
                        auto_us: auto.median_us,
                        best_fixed: f.algorithm.clone(),
                        best_fixed_us: f.median_us,
                        ratio: auto.median_us / f.median_us,
                    });
                }
            }
        }
    }
    out
}

/// Prints [`block_compares`]: per group and algorithm a table of sizes, the `Block::Auto`
/// median, the best fixed block and its median, their ratio and the goal; then the count above
/// it. Nothing when there is nothing to compare.
pub fn print_blocks(w: &mut dyn Write, blocks: &[BlockCompare]) -> std::io::Result<()> {
    use Align::{Left, Right};
    if blocks.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "Block::Auto against fixed blocks (goal: at most {BLOCK_GOAL:.2}× the best fixed block)"
    )?;
    writeln!(w)?;
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for b in blocks {
        if !keys.contains(&(&b.group, &b.algorithm)) {
            keys.push((&b.group, &b.algorithm));
        }
    }
    for (group, alg) in keys {
        let mut grid = Grid::new(&[
            ("size", Right),
            ("Block::Auto", Right),
            ("best fixed", Left),
            ("median", Right),
            ("auto/fixed", Right),
            ("goal", Left),
        ]);
        for b in blocks
            .iter()
            .filter(|b| b.group == group && b.algorithm == alg)
        {
            grid.rows.push(Some(vec![
                fmt_bytes(b.bytes),
                fmt_time(b.auto_us),
                b.best_fixed.clone(),
                fmt_time(b.best_fixed_us),
                format!("{:.2}", b.ratio),
                if b.flagged() {
                    format!("> {BLOCK_GOAL:.2}")
                } else {
                    "ok".into()
                },
            ]));
        }
        writeln!(w, "{group} · {alg}")?;
        grid.render(w)?;
        writeln!(w)?;
    }
    writeln!(
        w,
        "Block::Auto: the algorithm's row with the block the library picks (its plain name); best \
         fixed: the fastest of its rows with a fixed block (NAME:BLOCK). {} row(s) above {:.2}.",
        blocks.iter().filter(|b| b.flagged()).count(),
        BLOCK_GOAL
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::checks::{Checks, DEFAULT_TOLERANCE};
    use crate::record::testing::rec;
    use crate::record::Validation;

    #[test]
    fn block_auto_against_the_best_fixed_block() {
        let mut v = vec![
            rec("dual-root", 4096, 1.2),
            rec("dual-root:1KiB", 4096, 1.5),
            rec("dual-root:4KiB", 4096, 1.0),  // best: 1.20, flagged
            rec("dual-root:16KiB", 4096, 0.5), // failed
            rec("two-tree", 4096, 1.0),
            rec("two-tree:1KiB", 4096, 1.05),      // 0.95, ok
            rec("pipelined-tree:1KiB", 4096, 1.0), // no Block::Auto row
            rec("hierarchical", 4096, 1.0),
            rec("hierarchical:1KiB", 4096, 0.1), // not a swept block
            rec("dual-root", 64, 1.0),           // no fixed row at 64 B
        ];
        v[3].validation = Validation::Fail;
        let b = block_compares(&v);
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(
            (b[0].algorithm.as_str(), b[0].best_fixed.as_str()),
            ("dual-root", "dual-root:4KiB")
        );
        assert!((b[0].ratio - 1.2).abs() < 1e-12 && b[0].flagged());
        assert_eq!(b[1].algorithm, "two-tree");
        assert!(!b[1].flagged());
        let mut out = Vec::new();
        print_blocks(&mut out, &b).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("allreduce · f64 sum · 2 ranks · all, compact · warm · dual-root\n"),
            "{text}"
        );
        let line = text.lines().find(|l| l.contains("dual-root:4KiB")).unwrap();
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "4",
                "KiB",
                "1.20",
                "µs",
                "dual-root:4KiB",
                "1.00",
                "µs",
                "1.20",
                ">",
                "1.10"
            ]
        );
        assert!(text.contains("1 row(s) above 1.10"), "{text}");
        // The JSON form.
        let checks = Checks::of(&v, DEFAULT_TOLERANCE);
        let json = serde_json::to_value(&checks).unwrap();
        assert_eq!(json["blocks"][0]["best_fixed"], "dual-root:4KiB");
        assert_eq!(json["guidelines"]["tolerance"], 0.1);
    }
}
