//! `--tune`: `Auto`'s decision tables (`corecoll::tuning`) from the measurements of sweeps.
//!
//! For each collective and rank count in the results, the sizes are taken in order and each
//! gets the fastest of the algorithms a table may name (median times of passing rows; `auto`,
//! baselines and fixed-block rows aside), except that the previous size's algorithm stays while
//! it is within `--tune-hysteresis` of the fastest, so that noise between near-equal
//! algorithms does not cut the range of sizes into pieces. Between two measured sizes s < t
//! whose algorithms differ the switch is at their geometric mean: sizes up to ⌊√(st)⌋ take the
//! smaller one's. A single size whose algorithm differs from its two neighbours', which agree,
//! takes theirs if it is within 10% of the fastest there. For the allreduce a second set of
//! rules leaves out the algorithms that reorder operands (the ring), for non-commutative ops.
//! A rank count above the machine's cores is marked oversubscribed. The tables go into a
//! profile (docs/tuning.md).

use crate::cli::Args;
use crate::output::{create_parent, default_dir, read_json, RunInfo};
use crate::record::{Record, Source, Validation};
use corecoll::tuning::{Rule, Rules, Table};
use corecoll::Collective;
use corecoll::Profile;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

/// Reads the results, derives the tables, prints them and writes the profile.
pub fn main(args: &Args) -> Result<ExitCode, String> {
    let h = args.tune_hysteresis;
    if !(h.is_finite() && h >= 0.0) {
        return Err("--tune-hysteresis must be a number ≥ 0".into());
    }
    let mut runs = Vec::new();
    for path in &args.tune {
        runs.push(read_json(path)?);
    }
    let tables = derive(&runs, h);
    if tables.is_empty() {
        return Err(
            "--tune: the results hold no passing rows of a collective with `Auto` (sweep with \
             --algorithms all first)"
                .into(),
        );
    }
    for t in &tables {
        println!(
            "{:<15} {:>3} ranks{}: {}",
            t.collective.name(),
            t.ranks,
            if t.oversubscribed {
                " (oversubscribed)"
            } else {
                ""
            },
            t.rules
        );
        if let Some(nc) = &t.noncommutative {
            println!("{:<15} {:>3}   non-commutative: {nc}", "", "");
        }
    }
    let mut profile = Profile::from_env()
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    profile
        .tables
        .retain(|old| !tables.iter().any(|t| t.collective == old.collective));
    profile.tables.extend(tables.iter().cloned());
    let out = args
        .profile_out
        .clone()
        .unwrap_or_else(|| default_dir().join("profile.json"));
    write(&out, &profile.to_json())?;
    println!("\nprofile: {} (CORECOLL_PROFILE={0})", out.display());
    if let Some(path) = &args.tables_out {
        let json = serde_json::to_string_pretty(&tables).map_err(|e| e.to_string())?;
        write(path, &json)?;
        println!("tables:  {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` (and a newline) to `path`, creating its directory.
fn write(path: &Path, text: &str) -> Result<(), String> {
    create_parent(path)?;
    std::fs::write(path, format!("{text}\n")).map_err(|e| format!("{}: {e}", path.display()))
}

/// The tables of every (collective, rank count) in `runs`, ordered by collective then ranks
/// (a later run's rows of the same cell replace an earlier one's).
pub fn derive(runs: &[(RunInfo, Vec<Record>)], hysteresis: f64) -> Vec<Table> {
    // (collective, ranks) → (oversubscribed, command, size → algorithm → median µs)
    type Cells = BTreeMap<usize, BTreeMap<&'static str, f64>>;
    let mut groups: BTreeMap<(Collective, usize), (bool, String, Cells)> = BTreeMap::new();
    // The names a rule may use, per collective, looked up once.
    let allowed: BTreeMap<Collective, Vec<&'static str>> = Collective::ALL
        .iter()
        .map(|&c| (c, c.algorithms()))
        .collect();
    for (info, records) in runs {
        for r in records {
            let Some(c) = Collective::from_name(&r.collective) else {
                continue;
            };
            let Some(&alg) = allowed[&c].iter().find(|&&a| a == r.algorithm) else {
                continue;
            };
            if r.source != Source::Corecoll
                || r.validation == Validation::Fail
                || !r.median_us.is_finite()
            {
                continue;
            }
            let g = groups.entry((c, r.ranks)).or_insert_with(|| {
                (
                    r.ranks > info.cores.max(1),
                    format!("{} ({} cores, {})", info.command, info.cores, info.cpu),
                    BTreeMap::new(),
                )
            });
            g.2.entry(r.bytes).or_default().insert(alg, r.median_us);
        }
    }
    groups
        .into_iter()
        .filter_map(|((c, ranks), (oversubscribed, measured, cells))| {
            let all = rules(c, &cells, hysteresis, |_| true)?;
            let noncommutative = if c == Collective::Allreduce {
                rules(c, &cells, hysteresis, |a| c.admits(a, false))
                    .map(|nc| nc.to_string())
                    .filter(|nc| *nc != all.to_string())
            } else {
                None
            };
            Some(Table {
                collective: c,
                ranks,
                oversubscribed,
                rules: all.to_string(),
                noncommutative,
                measured,
            })
        })
        .collect()
}

/// How much slower than the fastest a lone size's neighbours' algorithm may be and still take
/// the size over (see [`rules`]).
const ISOLATED: f64 = 1.10;

/// The rules read off `cells` (size → algorithm → median) among the algorithms `admit`
/// accepts; `None` if no size has one.
fn rules(
    c: Collective,
    cells: &BTreeMap<usize, BTreeMap<&'static str, f64>>,
    hysteresis: f64,
    admit: impl Fn(&str) -> bool,
) -> Option<Rules> {
    // The algorithm per measured size.
    let mut picks: Vec<(usize, &'static str)> = Vec::new();
    for (&bytes, times) in cells {
        let Some((&best, &t_best)) = times
            .iter()
            .filter(|(a, _)| admit(a))
            .min_by(|a, b| a.1.total_cmp(b.1))
        else {
            continue;
        };
        let keep = picks.last().and_then(|&(_, prev)| {
            times
                .get(prev)
                .filter(|&&t| t <= t_best * (1.0 + hysteresis))
                .map(|_| prev)
        });
        picks.push((bytes, keep.unwrap_or(best)));
    }
    // A size whose pick differs from both neighbours', which agree, takes theirs if it is
    // within `ISOLATED` of the fastest there: one size's noise does not make a range.
    for i in 1..picks.len().saturating_sub(1) {
        let (prev, next) = (picks[i - 1].1, picks[i + 1].1);
        if prev == next && picks[i].1 != prev {
            let times = &cells[&picks[i].0];
            if times
                .get(prev)
                .is_some_and(|&t| t <= times[picks[i].1] * ISOLATED)
            {
                picks[i].1 = prev;
            }
        }
    }
    let mut rules: Vec<Rule> = Vec::new();
    for (i, &(bytes, alg)) in picks.iter().enumerate() {
        match rules.last_mut() {
            Some(last) if last.algorithm == alg => {}
            last => {
                let from = match (last, i.checked_sub(1).map(|j| picks[j].0)) {
                    (Some(last), Some(prev)) => {
                        let switch = ((prev as f64) * (bytes as f64)).sqrt().floor() as usize;
                        let switch = switch.clamp(prev, bytes - 1);
                        last.to = Some(switch);
                        switch + 1
                    }
                    _ => 0,
                };
                rules.push(Rule {
                    from,
                    to: None,
                    algorithm: alg,
                });
            }
        }
    }
    (!rules.is_empty()).then_some(Rules {
        collective: c,
        rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(c: &str, alg: &str, ranks: usize, bytes: usize, us: f64) -> Record {
        let mut r: Record = serde_json::from_value(serde_json::json!({
            "collective": c, "algorithm": alg, "source": "corecoll", "scope": "all",
            "placement": "compact", "ranks": ranks, "dtype": "f64", "op": "sum",
            "bytes": bytes, "count": bytes / 8, "cache": "warm", "iters": 10,
            "min_us": us, "median_us": us, "p95_us": us, "mean_us": us, "algbw_gbs": 0.0,
            "busbw_gbs": 0.0, "limit_pct": null, "validation": "pass",
            "max_rel_error": null, "note": ""
        }))
        .unwrap();
        r.median_us = us;
        r
    }

    fn info(cores: usize) -> RunInfo {
        serde_json::from_value(serde_json::json!({
            "command": "corecoll-bench", "version": "0", "cores": cores
        }))
        .unwrap()
    }

    /// The fastest per size, switches at the geometric mean, hysteresis, the non-commutative
    /// rules without the ring, and rows that do not count.
    #[test]
    fn tables_from_records() {
        let mut rs = Vec::new();
        for (bytes, rd, ring, direct) in [
            (8, 1.0, 5.0, 3.0),
            (64, 1.0, 5.0, 3.0),
            (4096, 9.0, 4.0, 6.0),
            (65536, 50.0, 20.0, 19.5), // within 5 % of the ring: the ring stays
            (1 << 20, 900.0, 300.0, 200.0),
        ] {
            rs.push(rec("allreduce", "recursive-doubling", 2, bytes, rd));
            rs.push(rec("allreduce", "ring", 2, bytes, ring));
            rs.push(rec("allreduce", "direct", 2, bytes, direct));
            // Not candidates: auto, a fixed block, a baseline, a failed row, hierarchical.
            rs.push(rec("allreduce", "auto", 2, bytes, 0.1));
            rs.push(rec("allreduce", "dual-root:4KiB", 2, bytes, 0.1));
            let mut b = rec("allreduce", "limit", 2, bytes, 0.1);
            b.source = Source::Baseline;
            rs.push(b);
            let mut f = rec("allreduce", "linear", 2, bytes, 0.1);
            f.validation = Validation::Fail;
            rs.push(f);
            rs.push(rec("allreduce", "hierarchical-direct", 2, bytes, 0.1));
        }
        rs.push(rec("barrier", "tree", 8, 0, 3.0));
        rs.push(rec("barrier", "dissemination", 8, 0, 2.0));
        let tables = derive(&[(info(2), rs)], 0.05);
        assert_eq!(tables.len(), 2);
        let a = &tables[0];
        assert_eq!(
            (a.collective, a.ranks, a.oversubscribed),
            (Collective::Allreduce, 2, false)
        );
        // √(64 · 4096) = 512; √(65536 · 2²⁰) = 262 144.
        assert_eq!(
            a.rules,
            "recursive-doubling:0-512;ring:513-262144;direct:262145-max"
        );
        assert_eq!(
            a.noncommutative.as_deref(),
            Some("recursive-doubling:0-512;direct:513-max")
        );
        let b = &tables[1];
        assert_eq!(
            (b.collective, b.ranks, b.oversubscribed),
            (Collective::Barrier, 8, true)
        );
        assert_eq!(b.rules, "dissemination:0-max");
        assert_eq!(b.noncommutative, None);
        corecoll::tuning::Table::check_all(&tables).unwrap();
    }
}
