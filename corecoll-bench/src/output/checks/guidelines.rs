//! The self-consistent performance guidelines, after Träff, Gropp and Thakur,
//! "Self-consistent MPI performance guidelines" (IEEE TPDS 2010). The idea: when a collective
//! can be done by calling other collectives (or a more general one), the library's own call
//! should be no slower than that combination — else a user would do better by writing the
//! combination out. [`RULES`] is the table checked. Each side is the median of the row a user
//! gets by calling the collective (`auto`, or the single algorithm of a `v` form), on the same
//! ranks, element type and caches, and a rule is violated when its left side is above
//! `(1 + tolerance)` times its right side.
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

use super::timed;
use crate::domain::{algorithms, fmt_bytes, Call};
use crate::output::grid::{fmt_time, Align, Grid};
use crate::record::{Record, Source};
use serde::Serialize;
use std::io::Write;

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
    Call::from_name(collective)
        .and_then(|c| algorithms(c).first().map(|a| a.0))
        .unwrap_or("auto")
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::testing::rec;
    use crate::record::Validation;

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
            assert!(Call::from_name(c).is_some(), "{c}");
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
}
