//! The checks of issue 8 over what one sweep measured, each printed after the summary and
//! written into the JSON file beside the records:
//!
//! - **Self-consistent performance guidelines**, after Träff, Gropp and Thakur,
//!   "Self-consistent MPI performance guidelines" (IEEE TPDS 2010). The idea: when a
//!   collective can be done by calling other collectives (or a more general one), the library's
//!   own call should be no slower than that combination — else a user would do better by
//!   writing the combination out. [`RULES`] is the table checked. Each side is the median of the
//!   row a user gets by calling the collective (`auto`, or the single algorithm of a `v` form),
//!   on the same ranks, element type and caches, and a rule is violated when its left side is
//!   above `(1 + tolerance)` times its right side.
//! - **No cliffs**: at every size, `auto` within [`CLIFF_GOAL`] of the best algorithm measured
//!   in the same run (the summary's `auto/best` column, marked `!` above it).
//! - **`Block::Auto` against fixed blocks**: a pipelined algorithm's row with its block chosen
//!   by the library (its plain name, `dual-root`) against its rows with fixed blocks
//!   (`dual-root:4KiB`, as `--blocks` adds them), within [`BLOCK_GOAL`].
//!
//! The bench reports; it does not fail a run over these, since on a shared machine a single
//! cell's noise can cross any threshold.
//!
//! ## What m is
//!
//! Every size here is a record's `bytes`: the bytes of a rank's largest buffer. For allreduce,
//! reduce, broadcast and the scans that is the vector; for gather, scatter, allgather,
//! alltoall, reduce-scatter and the `v` forms it is the buffer of p blocks (the root's for
//! gather and scatter, every rank's receive buffer for allgather, every rank's send buffer for
//! reduce-scatter). With that reading every term of a rule moves the same m: e.g. in
//! broadcast(m) ≤ scatter(m) + allgather(m) the root's m bytes are scattered in p blocks of m/p
//! and the blocks allgathered back into m bytes on every rank. A rule is evaluated only where
//! every side has a row of exactly that size; the blocked collectives round a size down to p
//! whole blocks of whole elements, so with sizes that are not multiples of p × the element size
//! their rows do not line up with the others' and those rules are skipped (`--guidelines`
//! rounds its sizes so that they do).

use super::text::{best, by_size, fmt_time, Align, Grid};
use super::{groups, GroupKey};
use crate::record::{Record, Source, Validation};
use crate::sweep::fmt_bytes;
use serde::Serialize;
use std::io::Write;

/// Issue 8's no-cliff goal: at every size `auto` at most this many times the best algorithm's
/// median.
pub const CLIFF_GOAL: f64 = 1.25;

/// Issue 8's goal for `Block::Auto`: at most this many times the best fixed block's median.
pub const BLOCK_GOAL: f64 = 1.10;

/// The guidelines' default tolerance: a rule is violated when its left side exceeds the right
/// by more than this fraction. The two sides are different cells timed at different moments,
/// and their medians move by several percent from run to run on a shared machine; a smaller
/// difference than that says nothing about the library.
pub const DEFAULT_TOLERANCE: f64 = 0.1;

/// The pipelined algorithms whose block `--blocks` sweeps, and whose `Block::Auto` row the
/// block table compares with their fixed-block rows (the ring's block is its largest piece).
pub const BLOCK_SWEPT: &[&str] = &["chain", "ring", "pipelined-tree", "dual-root", "two-tree"];

/// One side's call in a rule: a collective, moving the rule's m bytes or none (a barrier).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Term {
    /// The collective, as the records name it.
    pub collective: &'static str,
    /// Whether it moves the rule's m bytes; `false` for the barrier (its rows have size 0).
    pub sized: bool,
}

/// A call of `collective` on the rule's m bytes.
const fn m(collective: &'static str) -> Term {
    Term {
        collective,
        sized: true,
    }
}

/// A guideline: `lhs` should take no longer than the calls of `rhs` one after the other,
/// because they do its job.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The collective checked.
    pub lhs: Term,
    /// The calls that do its job.
    pub rhs: &'static [Term],
    /// How they do it (printed under the guidelines' tables).
    pub how: &'static str,
}

impl Rule {
    /// The rule as printed: `allreduce(m) ≤ reduce(m) + broadcast(m)`.
    pub fn label(&self) -> String {
        let term = |t: &Term| {
            if t.sized {
                format!("{}(m)", t.collective)
            } else {
                t.collective.to_string()
            }
        };
        let rhs: Vec<String> = self.rhs.iter().map(term).collect();
        format!("{} ≤ {}", term(&self.lhs), rhs.join(" + "))
    }

    /// Every term, the left one first.
    fn terms(&self) -> impl Iterator<Item = &Term> {
        std::iter::once(&self.lhs).chain(self.rhs)
    }
}

/// The rules checked. The scans have none: each way of building a scan out of the others
/// needs a local reduction or a shift to a neighbour that the bench does not time, so no rule
/// over what it measures is sound for them.
pub const RULES: &[Rule] = &[
    Rule {
        lhs: m("allreduce"),
        rhs: &[m("reduce"), m("broadcast")],
        how: "reduce the vector to the root, then broadcast the result",
    },
    Rule {
        lhs: m("allreduce"),
        rhs: &[m("reduce-scatter"), m("allgather")],
        how: "reduce-scatter the vector (each rank ends with its reduced block of m/p), then \
              allgather the blocks back into m bytes everywhere",
    },
    Rule {
        lhs: m("reduce"),
        rhs: &[m("allreduce")],
        how: "an allreduce leaves the result at the root as well",
    },
    Rule {
        lhs: m("reduce"),
        rhs: &[m("reduce-scatter"), m("gather")],
        how: "reduce-scatter the vector, then gather the p reduced blocks at the root",
    },
    Rule {
        lhs: m("reduce-scatter"),
        rhs: &[m("allreduce")],
        how: "allreduce the whole vector; each rank keeps its block",
    },
    Rule {
        lhs: m("reduce-scatter"),
        rhs: &[m("reduce"), m("scatter")],
        how: "reduce the vector to the root, then scatter its p blocks",
    },
    Rule {
        lhs: m("broadcast"),
        rhs: &[m("scatter"), m("allgather")],
        how: "scatter the root's m bytes in p blocks, then allgather the blocks",
    },
    Rule {
        lhs: m("scatter"),
        rhs: &[m("broadcast")],
        how: "broadcast the root's whole buffer; each rank keeps its block",
    },
    Rule {
        lhs: m("gather"),
        rhs: &[m("allgather")],
        how: "an allgather leaves the p blocks at the root as well",
    },
    Rule {
        lhs: m("allgather"),
        rhs: &[m("gather"), m("broadcast")],
        how: "gather the p blocks at the root, then broadcast the m bytes",
    },
    Rule {
        lhs: m("gather"),
        rhs: &[m("gatherv")],
        how: "the v form with equal counts does the same job knowing less",
    },
    Rule {
        lhs: m("scatter"),
        rhs: &[m("scatterv")],
        how: "the v form with equal counts does the same job knowing less",
    },
    Rule {
        lhs: m("allgather"),
        rhs: &[m("allgatherv")],
        how: "the v form with equal counts does the same job knowing less",
    },
    Rule {
        lhs: m("alltoall"),
        rhs: &[m("alltoallv")],
        how: "the v form with equal counts does the same job knowing less",
    },
    Rule {
        lhs: Term {
            collective: "barrier",
            sized: false,
        },
        rhs: &[m("allreduce")],
        how: "no rank leaves an allreduce of any size before every rank has entered it",
    },
];

/// The collectives the rules need, in the order of their first use.
pub fn guideline_collectives() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for t in RULES.iter().flat_map(Rule::terms) {
        if !out.contains(&t.collective) {
            out.push(t.collective);
        }
    }
    out
}

/// The row a user gets by calling `collective`: `auto`, or for a collective with one
/// algorithm (the `v` forms) that one.
pub fn users_algorithm(collective: &str) -> &'static str {
    crate::cli::parse_collectives(collective)
        .ok()
        .and_then(|c| crate::cell::algorithms(c.0[0]).first().map(|a| a.0))
        .unwrap_or("auto")
}

/// Whether `r` was timed and passed (or needed no) check.
fn timed(r: &Record) -> bool {
    r.source == Source::Corecoll
        && r.validation != Validation::Fail
        && r.median_us.is_finite()
        && r.median_us >= 0.0
}

/// What the two sides of a rule must share besides the size: where, on how many ranks, the
/// element type and the caches (the op is the run's; the non-reducing collectives show `-`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Context {
    /// `all`, `socket N`.
    pub scope: String,
    /// The placement.
    pub placement: String,
    /// Ranks.
    pub ranks: usize,
    /// Element type.
    pub dtype: String,
    /// `warm` or `cold`.
    pub cache: String,
}

impl Context {
    /// The context of `r`.
    fn of(r: &Record) -> Context {
        Context {
            scope: r.scope.clone(),
            placement: r.placement.clone(),
            ranks: r.ranks,
            dtype: r.dtype.clone(),
            cache: r.cache.clone(),
        }
    }

    /// The heading, e.g. `f64 · 2 ranks · all, compact · warm`.
    fn heading(&self) -> String {
        let ranks = if self.ranks == 1 { "rank" } else { "ranks" };
        format!(
            "{} · {} {ranks} · {}, {} · {}",
            self.dtype, self.ranks, self.scope, self.placement, self.cache
        )
    }
}

/// One rule at one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuidelineCheck {
    /// The rule, as [`Rule::label`] prints it.
    pub rule: String,
    /// Where it was measured.
    #[serde(flatten)]
    pub context: Context,
    /// m, bytes per rank.
    pub bytes: usize,
    /// The left side's median, µs.
    pub lhs_us: f64,
    /// The sum of the right side's medians, µs.
    pub rhs_us: f64,
    /// `lhs_us / rhs_us`.
    pub ratio: f64,
    /// Whether `lhs_us > (1 + tolerance) · rhs_us`.
    pub violated: bool,
}

/// The guidelines evaluated over a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Guidelines {
    /// The tolerance they were checked with.
    pub tolerance: f64,
    /// Every rule at every size where all its sides were measured.
    pub checks: Vec<GuidelineCheck>,
    /// Rules at a size where some side was measured but another was not (or failed).
    pub skipped: usize,
}

impl Guidelines {
    /// How many checks are violated.
    pub fn violations(&self) -> usize {
        self.checks.iter().filter(|c| c.violated).count()
    }
}

/// Evaluates [`RULES`] over `records` with `tolerance`: per context (see [`Context`]), rule
/// and size m (every size above 0 at which a user's row was measured), the sides' medians.
pub fn guidelines(records: &[Record], tolerance: f64) -> Guidelines {
    let users: Vec<&Record> = records
        .iter()
        .filter(|r| r.source == Source::Corecoll && r.algorithm == users_algorithm(&r.collective))
        .collect();
    let mut contexts: Vec<Context> = Vec::new();
    for r in &users {
        let c = Context::of(r);
        if !contexts.contains(&c) {
            contexts.push(c);
        }
    }
    let mut out = Guidelines {
        tolerance,
        checks: Vec::new(),
        skipped: 0,
    };
    for ctx in &contexts {
        let here: Vec<&Record> = users
            .iter()
            .copied()
            .filter(|r| Context::of(r) == *ctx)
            .collect();
        let mut sizes: Vec<usize> = here
            .iter()
            .filter(|r| r.collective != "barrier" && r.bytes > 0)
            .map(|r| r.bytes)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        for rule in RULES {
            for &bytes in &sizes {
                // Per term: None when not measured, Some(None) when measured but failed.
                let side = |t: &Term| {
                    let want = if t.sized { bytes } else { 0 };
                    here.iter()
                        .find(|r| r.collective == t.collective && r.bytes == want)
                        .map(|r| timed(r).then_some(r.median_us))
                };
                let found: Vec<Option<Option<f64>>> = rule.terms().map(side).collect();
                if found.iter().all(|f| matches!(f, Some(Some(_)))) {
                    let us: Vec<f64> = found.iter().map(|f| f.flatten().unwrap_or(0.0)).collect();
                    let (lhs_us, rhs_us) = (us[0], us[1..].iter().sum::<f64>());
                    if rhs_us <= 0.0 {
                        out.skipped += 1;
                        continue;
                    }
                    out.checks.push(GuidelineCheck {
                        rule: rule.label(),
                        context: ctx.clone(),
                        bytes,
                        lhs_us,
                        rhs_us,
                        ratio: lhs_us / rhs_us,
                        violated: lhs_us > (1.0 + tolerance) * rhs_us,
                    });
                } else if found.iter().any(Option::is_some) {
                    out.skipped += 1;
                }
            }
        }
    }
    out
}

/// Prints the guidelines: per context a table of every rule at every size (left and right
/// side, their ratio, `VIOLATED` where the rule is), then the count. Nothing when no rule had
/// both sides measured.
pub fn print_guidelines(w: &mut dyn Write, g: &Guidelines) -> std::io::Result<()> {
    use Align::{Left, Right};
    if g.checks.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "Self-consistent performance guidelines (Träff, Gropp, Thakur): lhs ≤ (1 + {}) × rhs",
        g.tolerance
    )?;
    writeln!(w)?;
    let mut contexts: Vec<&Context> = Vec::new();
    for c in &g.checks {
        if !contexts.contains(&&c.context) {
            contexts.push(&c.context);
        }
    }
    for ctx in contexts {
        let mut grid = Grid::new(&[
            ("rule", Left),
            ("size", Right),
            ("lhs", Right),
            ("rhs", Right),
            ("lhs/rhs", Right),
            ("check", Left),
        ]);
        let mut last: Option<&str> = None;
        for c in g.checks.iter().filter(|c| c.context == *ctx) {
            if last.is_some_and(|l| l != c.rule) {
                grid.rows.push(None);
            }
            last = Some(&c.rule);
            grid.rows.push(Some(vec![
                c.rule.clone(),
                fmt_bytes(c.bytes),
                fmt_time(c.lhs_us),
                fmt_time(c.rhs_us),
                format!("{:.2}", c.ratio),
                if c.violated { "VIOLATED" } else { "ok" }.into(),
            ]));
        }
        writeln!(w, "{}", ctx.heading())?;
        grid.render(w)?;
        writeln!(w)?;
    }
    writeln!(
        w,
        "{} violation(s) in {} check(s). lhs, rhs: the medians of the rows a user gets (auto; a \
         v form's one algorithm), rhs summed over its calls; m = the size column, bytes of a \
         rank's largest buffer (the p blocks of gather, scatter, allgather, alltoall, \
         reduce-scatter and the v forms).",
        g.violations(),
        g.checks.len()
    )?;
    writeln!(
        w,
        "Why each rule holds (its right side does the left side's job):"
    )?;
    for rule in RULES {
        let label = rule.label();
        if g.checks.iter().any(|c| c.rule == label) {
            writeln!(w, "  {label}: {}", rule.how)?;
        }
    }
    if g.skipped > 0 {
        writeln!(
            w,
            "{} rule(s) at some size skipped: a side not measured there or failed (the blocked \
             collectives' sizes are whole blocks: p × element size divides them).",
            g.skipped
        )?;
    }
    Ok(())
}

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

/// Every check of a run, as the JSON file holds them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checks {
    /// The guidelines.
    pub guidelines: Guidelines,
    /// `auto` against the best, per group.
    pub cliffs: Vec<Cliffs>,
    /// `Block::Auto` against fixed blocks.
    pub blocks: Vec<BlockCompare>,
}

impl Checks {
    /// The checks of `records`, the guidelines with `tolerance`.
    pub fn of(records: &[Record], tolerance: f64) -> Checks {
        Checks {
            guidelines: guidelines(records, tolerance),
            cliffs: cliffs(records),
            blocks: block_compares(records),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::tests::rec;

    /// A user's row of `collective` at `bytes` with median `us`.
    fn row(collective: &str, bytes: usize, us: f64) -> Record {
        let mut r = rec(users_algorithm(collective), bytes, us);
        r.collective = collective.into();
        r
    }

    fn find<'a>(g: &'a Guidelines, rule: &str, bytes: usize) -> Option<&'a GuidelineCheck> {
        g.checks.iter().find(|c| c.rule == rule && c.bytes == bytes)
    }

    #[test]
    fn the_rules_and_the_users_rows() {
        assert_eq!(RULES[0].label(), "allreduce(m) ≤ reduce(m) + broadcast(m)");
        assert_eq!(RULES.last().unwrap().label(), "barrier ≤ allreduce(m)");
        let needed = guideline_collectives();
        for c in [
            "allreduce",
            "reduce",
            "broadcast",
            "reduce-scatter",
            "allgather",
            "scatter",
            "gather",
            "gatherv",
            "scatterv",
            "allgatherv",
            "alltoall",
            "alltoallv",
            "barrier",
        ] {
            assert!(needed.contains(&c), "{c}");
        }
        // Every collective named is one the bench knows.
        for c in &needed {
            assert!(crate::cli::parse_collectives(c).is_ok(), "{c}");
        }
        assert_eq!(users_algorithm("allreduce"), "auto");
        assert_eq!(users_algorithm("alltoallv"), "pairwise");
        assert_eq!(users_algorithm("gatherv"), "linear");
    }

    #[test]
    fn a_violation_is_found_and_a_kept_rule_is_not_flagged() {
        let v = vec![
            row("allreduce", 1024, 10.0),
            row("reduce", 1024, 4.0),
            row("broadcast", 1024, 4.0), // 10 > 1.1 × 8: violated
            row("allreduce", 4096, 8.5),
            row("reduce", 4096, 4.0),
            row("broadcast", 4096, 4.0), // 8.5 ≤ 8.8: within the tolerance
            row("allreduce", 16384, 5.0),
            row("reduce", 16384, 3.0),
            row("broadcast", 16384, 3.0), // 5 < 6: kept
        ];
        let g = guidelines(&v, 0.1);
        let rule = "allreduce(m) ≤ reduce(m) + broadcast(m)";
        let c = find(&g, rule, 1024).unwrap();
        assert!(c.violated);
        assert_eq!((c.lhs_us, c.rhs_us), (10.0, 8.0));
        assert!((c.ratio - 1.25).abs() < 1e-12);
        assert!(!find(&g, rule, 4096).unwrap().violated);
        assert!(!find(&g, rule, 16384).unwrap().violated);
        // reduce(m) ≤ allreduce(m) holds at every size.
        assert!(!find(&g, "reduce(m) ≤ allreduce(m)", 1024).unwrap().violated);
        assert_eq!(g.violations(), 1);
        // With no tolerance the 4 KiB one is violated too.
        assert_eq!(guidelines(&v, 0.0).violations(), 2);

        let mut out = Vec::new();
        print_guidelines(&mut out, &g).unwrap();
        let text = String::from_utf8(out).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with(rule) && l.contains("1 KiB"))
            .unwrap();
        let cells: Vec<&str> = line[rule.len()..].split_whitespace().collect();
        assert_eq!(
            cells,
            ["1", "KiB", "10.0", "µs", "8.00", "µs", "1.25", "VIOLATED"]
        );
        assert!(
            text.contains("f64 · 2 ranks · all, compact · warm\n"),
            "{text}"
        );
        assert!(text.contains("1 violation(s) in 6 check(s)"), "{text}");
    }

    #[test]
    fn missing_and_failed_sides_are_skipped() {
        let mut v = vec![
            row("allreduce", 1024, 10.0),
            row("reduce", 1024, 1.0), // no broadcast at 1 KiB
            row("allreduce", 64, 10.0),
            row("reduce", 64, 1.0),
            row("broadcast", 64, 1.0), // failed
            row("gather", 512, 9.0),   // only one side
            rec("ring", 64, 1.0),      // not a user's row: ignored
        ];
        v[4].validation = Validation::Fail;
        let g = guidelines(&v, 0.1);
        let rule = "allreduce(m) ≤ reduce(m) + broadcast(m)";
        assert!(find(&g, rule, 1024).is_none());
        assert!(find(&g, rule, 64).is_none());
        // reduce ≤ allreduce at 64 B and 1 KiB are checked; everything else touching a
        // measured collective is skipped.
        assert_eq!(g.checks.len(), 2, "{:?}", g.checks);
        assert!(g.skipped > 0);
        // Nothing to compare, nothing printed.
        let only = guidelines(&[row("allreduce", 8, 1.0)], 0.1);
        assert!(only.checks.is_empty());
        let mut out = Vec::new();
        print_guidelines(&mut out, &only).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn sizes_are_matched_as_the_records_count_them() {
        // broadcast(m) ≤ scatter(m) + allgather(m): the scatter and the allgather of a 4 KiB
        // buffer (p blocks of 2 KiB) are rows of 4 KiB, and so is the broadcast.
        let v = vec![
            row("broadcast", 4096, 3.0),
            row("scatter", 4096, 1.0),
            row("allgather", 4096, 1.0),
            // On 3 ranks an 8-element f64 buffer is blocked as 3 × 2 = 6 elements: 48 B.
            row("scatter", 48, 1.0),
            row("allgather", 48, 1.0),
            row("broadcast", 64, 1.0),
            // The barrier (size 0) against the allreduce of every size.
            row("barrier", 0, 2.0),
            row("allreduce", 8, 1.5),
            row("allreduce", 4096, 1.0),
        ];
        let g = guidelines(&v, 0.1);
        let rule = "broadcast(m) ≤ scatter(m) + allgather(m)";
        let c = find(&g, rule, 4096).unwrap();
        assert_eq!((c.rhs_us, c.violated), (2.0, true));
        assert!(find(&g, rule, 48).is_none() && find(&g, rule, 64).is_none());
        // The barrier is checked at the allreduce's sizes, not at 0.
        let b = "barrier ≤ allreduce(m)";
        assert!(find(&g, b, 8).unwrap().violated);
        assert!(find(&g, b, 4096).unwrap().violated);
        assert!(find(&g, b, 0).is_none());
        // Another context (4 ranks) is not mixed in.
        let mut other = v.clone();
        for r in &mut other[..3] {
            r.ranks = 4;
        }
        let g = guidelines(&other, 0.1);
        assert!(find(&g, rule, 4096).unwrap().context.ranks == 4);
        assert_eq!(g.checks.iter().filter(|c| c.rule == rule).count(), 1);
    }

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
        crate::output::print_summary(&mut out, &v).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(" 1.41! "), "{text}");
        assert!(text.contains(" 1.00 "), "{text}");
        // auto alone: no line at all.
        let mut out = Vec::new();
        print_cliffs(&mut out, &cliffs(&[rec("auto", 8, 1.0)])).unwrap();
        assert!(out.is_empty());
    }

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
