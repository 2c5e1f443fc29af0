//! The sweep: scopes (the placement, or each socket and then all of them) × collectives ×
//! sizes × algorithms and baselines, each cell measured and checked, then the outputs and the
//! checks over them (`output::checks`). `--blocks` adds fixed-block rows beside each pipelined
//! algorithm's `Block::Auto` one; `--guidelines` replaces the selection by what the
//! guidelines need: their collectives, each with the algorithm a user gets.

use crate::cell::{self, Alg, CellSpec, CorecollKernel};
use crate::cli::{parse_alg_specs, parse_collectives, Args, Collective, Dtype, Param, Placement};
use crate::elem::{dispatch, Elem, Visit};
use crate::measure::{measure, Kernel, Timing};
use crate::output::checks::{self, Checks, BLOCK_SWEPT};
use crate::output::{self, RunInfo};
use crate::placement;
use crate::record::{Record, Source, Validation};
use crate::{baselines, plot};
use corecoll::op::Op;
use corecoll::{Pinning, Team, Topology};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Where the ranks of one sweep run.
struct Scope {
    /// `all` or `socket N`.
    label: String,
    /// The placement's spelling in the results.
    placement: String,
    /// The pinning.
    pinning: Pinning,
    /// Ranks.
    ranks: usize,
    /// The team's topology: `None` for the detected machine, else the described one of
    /// `--machine` (or the part of it that `cores:LIST` names).
    topology: Option<Topology>,
}

/// What runs one row: a corecoll algorithm or a baseline.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// corecoll's algorithm (with its parameter set).
    Corecoll(Alg),
    /// A baseline, by its name.
    Baseline(&'static str),
}

/// One entry of a collective's list: the row's name (with its parameter, e.g.
/// `hierarchical:64KiB`) and what runs it.
#[derive(Debug, Clone)]
struct Entry {
    /// The name in the results.
    name: String,
    /// What runs it.
    kind: Kind,
}

impl Entry {
    /// The name in the results.
    fn name(&self) -> &str {
        &self.name
    }
}

/// The entries of `c` that `--algorithms` selects (`all`, or a list of names, some with
/// parameters, whose block sizes are counted in elements of `dtype`), each pipelined one of
/// [`BLOCK_SWEPT`] followed by its rows with the fixed blocks of `blocks` (bytes; see
/// [`with_blocks`]). The order is the collective's, each name's parameterised rows after it
/// in the order given. An item that does not apply to `c` (another collective's name, a
/// parameter that `c`'s algorithm of that name does not take) selects nothing.
fn entries(c: Collective, selection: &str, dtype: Dtype, blocks: &[usize]) -> Vec<Entry> {
    with_blocks(selected(c, selection, dtype), blocks, dtype)
}

/// `list` with, after each entry of [`BLOCK_SWEPT`] without a parameter (its `Block::Auto`
/// row), one entry per block of `blocks` (bytes) that the algorithm takes, named as
/// `--algorithms` would name it (`dual-root:4KiB`); a name already in the list is not added
/// twice.
fn with_blocks(list: Vec<Entry>, blocks: &[usize], dtype: Dtype) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for e in list {
        let mut extra = Vec::new();
        if let Kind::Corecoll(a) = e.kind {
            if BLOCK_SWEPT.contains(&e.name.as_str()) {
                for &b in blocks {
                    let param = Param::Bytes(b);
                    if let Some(fixed) = cell::with_param(a, param, dtype) {
                        extra.push(Entry {
                            name: format!("{}:{}", e.name, param.label()),
                            kind: Kind::Corecoll(fixed),
                        });
                    }
                }
            }
        }
        for e in std::iter::once(e).chain(extra) {
            if !out.iter().any(|o| o.name == e.name) {
                out.push(e);
            }
        }
    }
    out
}

/// The entries of `c` that `--algorithms` selects, without `--blocks` (see [`entries`]).
fn selected(c: Collective, selection: &str, dtype: Dtype) -> Vec<Entry> {
    let all: Vec<(&'static str, Kind)> = cell::algorithms(c)
        .into_iter()
        .map(|(n, a)| (n, Kind::Corecoll(a)))
        .chain(
            baselines::names(c)
                .into_iter()
                .map(|n| (n, Kind::Baseline(n))),
        )
        .collect();
    if selection.trim() == "all" {
        return all
            .into_iter()
            .map(|(n, kind)| Entry {
                name: n.into(),
                kind,
            })
            .collect();
    }
    // Checked by `check_algorithms` before the sweep.
    let specs = parse_alg_specs(selection).unwrap_or_default();
    let mut out = Vec::new();
    for (name, kind) in all {
        for spec in specs.iter().filter(|s| s.name == name) {
            match (spec.param, kind) {
                (None, _) => out.push(Entry {
                    name: name.into(),
                    kind,
                }),
                (Some(p), Kind::Corecoll(a)) => {
                    if let Some(a) = cell::with_param(a, p, dtype) {
                        out.push(Entry {
                            name: spec.label(),
                            kind: Kind::Corecoll(a),
                        });
                    }
                }
                (Some(_), Kind::Baseline(_)) => {}
            }
        }
    }
    out
}

/// Every name `--algorithms` accepts for `collectives` (for its error message).
fn known_names(collectives: &[Collective]) -> Vec<String> {
    let mut names: Vec<String> = collectives
        .iter()
        .flat_map(|&c| selected(c, "all", Dtype::F64).into_iter().map(|e| e.name))
        .collect();
    // The MPI baseline's rows (feature `mpi`; without it they select nothing).
    names.extend(["mpi".to_string(), "mpi-reduce-bcast".to_string()]);
    names.sort_unstable();
    names.dedup();
    names
}

/// Checks `--algorithms` against `collectives`: every name is known, and every parameter is
/// taken by the algorithm of that name of at least one of them.
fn check_algorithms(collectives: &[Collective], selection: &str) -> Result<(), String> {
    if selection.trim() == "all" {
        return Ok(());
    }
    let known = known_names(collectives);
    for spec in parse_alg_specs(selection).map_err(|e| format!("--algorithms: {e}"))? {
        if !known.contains(&spec.name) {
            return Err(format!(
                "unknown algorithm `{}` (known here: {})",
                spec.name,
                known.join(", ")
            ));
        }
        if spec.param.is_some() {
            let label = spec.label();
            let taken = collectives.iter().any(|&c| {
                selected(c, &label, Dtype::F64)
                    .iter()
                    .any(|e| e.name == label)
            });
            if !taken {
                return Err(format!(
                    "`{label}`: `{}` takes no parameter here (parameters: the block size of \
                     chain, ring, pipelined-tree, dual-root and two-tree, the segment size of \
                     allreduce's hierarchical, the fanout of alltoall's ring-leaders)",
                    spec.name
                ));
            }
        }
    }
    Ok(())
}

/// The scopes of the run: the placement; with `--per-socket` each socket's cores first. On
/// the machine of `--machine` when there is one.
fn scopes(args: &Args) -> Result<Vec<Scope>, String> {
    match &args.machine {
        Some(m) => {
            let t = m.topology()?;
            scopes_on(args, placement::sockets_of(&t), Some(&t))
        }
        None => scopes_on(args, placement::sockets(), None),
    }
}

/// [`scopes`] on a machine of sockets `socks` (id and cores of each): the detected one
/// (`machine` `None`; sockets are pinned to their cores' OS indices), or the described
/// `machine` (sockets are its packages).
fn scopes_on(
    args: &Args,
    socks: Vec<(usize, Vec<usize>)>,
    machine: Option<&Topology>,
) -> Result<Vec<Scope>, String> {
    let mut out = Vec::new();
    if args.per_socket {
        if socks.len() > 1 {
            for (id, cores) in socks {
                out.push(Scope {
                    label: format!("socket {id}"),
                    placement: Placement::Socket(id).to_string(),
                    ranks: args.ranks.unwrap_or(cores.len()),
                    pinning: match machine {
                        Some(_) => Pinning::Socket(id),
                        None => Pinning::Cores(cores),
                    },
                    topology: machine.cloned(),
                });
            }
        } else {
            eprintln!(
                "corecoll-bench: one socket here, so --per-socket is the whole-machine sweep"
            );
        }
    }
    let (pinning, n, topology) = match (machine, &args.placement) {
        (Some(t), Placement::Cores(list)) => {
            let sub = placement::sub_machine(t, list)?;
            let n = sub.leaves().len();
            (Pinning::Compact, n, Some(sub))
        }
        (Some(t), p) => {
            let (pinning, n) = placement::pinning_on(t, p)?;
            (pinning, n, Some(t.clone()))
        }
        (None, p) => {
            let (pinning, n) = placement::pinning(p)?;
            (pinning, n, None)
        }
    };
    out.push(Scope {
        label: "all".into(),
        placement: args.placement.to_string(),
        pinning,
        ranks: args.ranks.unwrap_or(n),
        topology,
    });
    Ok(out)
}

/// Of `records` from `passes` passes of one sweep, each cell's record with the lowest median,
/// in the order of the first pass, its note saying how many passes there were; a cell that
/// failed its check in any pass keeps that failure (a failure is never hidden by a pass that
/// passed).
fn best_of_passes(records: Vec<Record>, passes: usize) -> Vec<Record> {
    if passes <= 1 {
        return records;
    }
    type Key = (String, String, String, usize, usize, Source);
    let key = |r: &Record| -> Key {
        (
            r.scope.clone(),
            r.collective.clone(),
            r.algorithm.clone(),
            r.ranks,
            r.bytes,
            r.source,
        )
    };
    let mut order: Vec<Key> = Vec::new();
    let mut best: std::collections::HashMap<Key, Record> = std::collections::HashMap::new();
    for r in records {
        let k = key(&r);
        match best.get(&k) {
            None => {
                order.push(k.clone());
                best.insert(k, r);
            }
            Some(old) if old.validation == Validation::Fail => {}
            Some(old)
                if r.validation == Validation::Fail
                    || old.median_us.is_nan()
                    || r.median_us < old.median_us =>
            {
                best.insert(k, r);
            }
            Some(_) => {}
        }
    }
    order
        .into_iter()
        .filter_map(|k| best.remove(&k))
        .map(|mut r| {
            let note = format!("best median of {passes} passes");
            r.note = if r.note.is_empty() {
                note
            } else {
                format!("{}; {note}", r.note)
            };
            r
        })
        .collect()
}

/// Runs the sweep of `args` and writes its outputs.
pub fn main(args: &Args) -> Result<ExitCode, String> {
    if !args.op.applies_to(args.dtype) {
        return Err(format!(
            "--op {} is not defined on --type {}",
            args.op.name(),
            args.dtype.name()
        ));
    }
    if args.time <= 0.0 || !args.time.is_finite() {
        return Err("--time must be a positive number of seconds".into());
    }
    if args.guideline_tolerance < 0.0 || !args.guideline_tolerance.is_finite() {
        return Err("--guideline-tolerance must be a number ≥ 0".into());
    }
    let guide = args.guidelines;
    let blocks: Vec<usize> = args.blocks.as_ref().map_or_else(Vec::new, |b| b.0.clone());
    if blocks.contains(&0) {
        return Err("--blocks: a block must be at least 1 byte".into());
    }
    let collectives: &[Collective] = if guide {
        if !blocks.is_empty() {
            return Err(
                "--guidelines runs auto only and --blocks the pipelined algorithms: run them \
                 separately"
                    .into(),
            );
        }
        &guideline_collectives()
    } else {
        check_algorithms(&args.collective.0, &args.algorithms)?;
        &args.collective.0
    };
    // What each collective runs: with --guidelines the algorithm a user gets (the first of
    // the collective's list: `auto`, or a v form's one algorithm), else the selection.
    let entries_of = |c: Collective| -> Vec<Entry> {
        if guide {
            selected(c, "all", args.dtype).into_iter().take(1).collect()
        } else {
            entries(c, &args.algorithms, args.dtype, &blocks)
        }
    };
    if !blocks.is_empty()
        && collectives
            .iter()
            .all(|&c| entries_of(c).len() == entries(c, &args.algorithms, args.dtype, &[]).len())
    {
        return Err(format!(
            "--blocks: none of the selected algorithms takes a block (those that do: {})",
            BLOCK_SWEPT.join(", ")
        ));
    }
    let sizes_of = |c: Collective, p: usize| -> Vec<usize> {
        if c == Collective::Barrier {
            vec![0]
        } else if guide {
            guideline_sizes(&args.sizes.0, p, args.dtype.size())
        } else {
            args.sizes.0.clone()
        }
    };
    if args.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    // One round's share of each cell's time (the warm-up is per round: each round builds
    // its buffers anew).
    let timing = Timing {
        warmup: args.warmup,
        iters: args.iters.map(|i| i.div_ceil(args.rounds)),
        budget: Duration::from_secs_f64(args.time / args.rounds as f64),
        ..Timing::default()
    };
    let scopes = scopes(args)?;
    let cells: u64 = scopes
        .iter()
        .flat_map(|s| {
            collectives
                .iter()
                .map(|&c| (sizes_of(c, s.ranks).len() * entries_of(c).len()) as u64)
        })
        .sum();
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::new(cells);
        b.set_style(
            ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        b
    };
    if args.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    bar.set_length(cells * (args.repeat * args.rounds) as u64);
    let mut records = Vec::new();
    for scope in scopes.iter().cycle().take(scopes.len() * args.repeat) {
        let mut builder = Team::builder()
            .ranks(scope.ranks)
            .pinning(scope.pinning.clone());
        if let Some(t) = &scope.topology {
            builder = builder.topology(t.clone());
        }
        let team = builder.build().map_err(|e| {
            format!(
                "cannot start {} ranks ({}): {e}",
                scope.ranks, scope.placement
            )
        })?;
        if args.root >= scope.ranks {
            return Err(format!(
                "--root {} is not a rank of {} ranks",
                args.root, scope.ranks
            ));
        }
        for &c in collectives {
            for bytes in sizes_of(c, scope.ranks) {
                let spec = CellSpec::new(
                    c,
                    scope.ranks,
                    args.dtype,
                    args.op,
                    bytes,
                    args.root,
                    args.cold,
                );
                let entries = entries_of(c);
                let mut rounds: Vec<Vec<(Record, Vec<f64>)>> = vec![Vec::new(); entries.len()];
                for round in 0..args.rounds {
                    for i in round_order(entries.len(), round) {
                        let entry = &entries[i];
                        bar.set_message(format!(
                            "{} {} {}",
                            c.name(),
                            fmt_bytes(spec.bytes()),
                            entry.name()
                        ));
                        let measured = dispatch(
                            args.dtype,
                            args.op,
                            Cell {
                                team: &team,
                                timing: &timing,
                                spec,
                                entry,
                                scope,
                            },
                        )
                        .expect("the op was checked against the type");
                        rounds[i].push(measured);
                        bar.inc(1);
                    }
                }
                records.extend(rounds.into_iter().filter_map(merge_rounds));
            }
        }
        #[cfg(feature = "mpi")]
        if !guide && crate::mpi_baseline::selected(&args.algorithms) {
            bar.set_message(format!("MPI baseline, {} processes", scope.ranks));
            match crate::mpi_baseline::run(args, &scope.label, &scope.placement, scope.ranks) {
                Ok(mut r) => records.append(&mut r),
                // `suspend`, not `println`: a hidden bar (-q, or no terminal) drops the latter.
                Err(e) => bar.suspend(|| eprintln!("corecoll-bench: MPI baseline skipped: {e}")),
            }
        }
    }
    bar.finish_and_clear();
    let mut records = best_of_passes(records, args.repeat);
    output::fill_limit_pct(&mut records);
    let info = RunInfo::of_this_run(args.machine.as_ref());
    let stdout = &mut std::io::stdout();
    println!("{}", info.header());
    println!();
    let checks = Checks::of(&records, args.guideline_tolerance);
    let io = |e: std::io::Error| e.to_string();
    output::print_table(stdout, &records).map_err(io)?;
    if !guide {
        // With --guidelines every row is a user's, so there is no best to compare with.
        output::print_summary(stdout, &records).map_err(io)?;
        checks::print_cliffs(stdout, &checks.cliffs).map_err(io)?;
    }
    output::print_hierarchy(stdout, &records).map_err(io)?;
    checks::print_blocks(stdout, &checks.blocks).map_err(io)?;
    checks::print_guidelines(stdout, &checks.guidelines).map_err(io)?;
    if guide && checks.guidelines.checks.is_empty() {
        println!("\nNo guideline had both sides measured (see the table's check column).");
    }
    let dir = PathBuf::from("target/corecoll-bench");
    let csv = args.csv.clone().unwrap_or_else(|| dir.join("results.csv"));
    let json = args
        .json
        .clone()
        .unwrap_or_else(|| dir.join("results.json"));
    for path in [&csv, &json] {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
    }
    output::write_csv(&csv, &records)?;
    output::write_json(&json, &info, &records, Some(&checks))?;
    let md = json.with_extension("md");
    let markdown = format!(
        "{}\n\n{}",
        info.header(),
        output::summary_markdown(&records)
    );
    std::fs::write(&md, markdown).map_err(|e| format!("{}: {e}", md.display()))?;
    println!();
    println!("CSV:  {}", csv.display());
    println!("JSON: {}", json.display());
    println!("summary (markdown): {}", md.display());
    for &c in collectives {
        let path = match &args.plot {
            Some(p) if collectives.len() == 1 => p.clone(),
            Some(p) => p.with_file_name(format!(
                "{}-{}.svg",
                p.file_stem().and_then(|s| s.to_str()).unwrap_or("plot"),
                c.name()
            )),
            None => dir.join(format!("{}.svg", c.name())),
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let mine: Vec<Record> = records
            .iter()
            .filter(|r| r.collective == c.name())
            .cloned()
            .collect();
        let data = match c {
            Collective::Barrier => String::new(),
            c if c.reduces() => format!(" · {} {}", args.dtype.name(), args.op.name()),
            _ => format!(" · {}", args.dtype.name()),
        };
        let ranks = scopes.last().map_or(0, |s| s.ranks);
        let cache = if args.cold { " · cold caches" } else { "" };
        let title = format!("{}{data} · {ranks} ranks{cache}", c.name());
        plot::plot_svg(&path, &title, &mine)?;
        println!("plot: {}", path.display());
    }
    let failed = records
        .iter()
        .filter(|r| r.validation == Validation::Fail)
        .count();
    if failed > 0 {
        eprintln!("corecoll-bench: {failed} cell(s) failed their check (see the note column)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The order in which round `round` measures `n` rows: all of them, starting at row
/// `round mod n`, so that no row always follows the same one (nor always comes first, after
/// the previous size's last row).
fn round_order(n: usize, round: usize) -> impl Iterator<Item = usize> {
    let first = if n == 0 { 0 } else { round % n };
    (0..n).map(move |k| (first + k) % n)
}

/// One row's record from its rounds (each a record and that round's per-iteration times):
/// the statistics over every round's times together, the check's outcome of the first round
/// that failed (or else of the first round), the largest error of any round. `None` for no
/// rounds.
fn merge_rounds(rounds: Vec<(Record, Vec<f64>)>) -> Option<Record> {
    let n = rounds.len();
    if n <= 1 {
        return rounds.into_iter().next().map(|(r, _)| r);
    }
    let worst = rounds
        .iter()
        .position(|(r, _)| r.validation == Validation::Fail)
        .unwrap_or(0);
    let max_err = rounds
        .iter()
        .filter_map(|(r, _)| r.max_rel_error)
        .reduce(f64::max);
    let unmeasured = rounds.iter().any(|(r, t)| t.is_empty() && r.iters == 0);
    let times: Vec<f64> = rounds.iter().flat_map(|(_, t)| t.iter().copied()).collect();
    let mut rec = rounds.into_iter().nth(worst).map(|(r, _)| r)?;
    rec.max_rel_error = max_err;
    if !unmeasured {
        rec.set_times(&times);
    }
    let note = format!("{n} interleaved rounds");
    rec.note = if rec.note.is_empty() {
        note
    } else {
        format!("{}; {note}", rec.note)
    };
    Some(rec)
}

/// The collectives of the guidelines' rules, in the order of their first use.
fn guideline_collectives() -> Vec<Collective> {
    checks::guideline_collectives()
        .into_iter()
        .map(|name| {
            parse_collectives(name)
                .expect("the rules name known collectives")
                .0[0]
        })
        .collect()
}

/// `sizes` for the guidelines on `p` ranks with elements of `elem` bytes: each rounded down
/// to a multiple of p × elem (and at least that), so that the blocked collectives, which move
/// p whole blocks of whole elements, have rows of exactly the size of the others'; 0 stays 0.
fn guideline_sizes(sizes: &[usize], p: usize, elem: usize) -> Vec<usize> {
    let unit = p.max(1) * elem.max(1);
    let mut out: Vec<usize> = sizes
        .iter()
        .map(|&m| if m == 0 { 0 } else { (m / unit).max(1) * unit })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// One cell to run: everything but the element type and op, which [`dispatch`] supplies.
struct Cell<'a> {
    team: &'a Team,
    timing: &'a Timing,
    spec: CellSpec,
    entry: &'a Entry,
    scope: &'a Scope,
}

impl Visit for Cell<'_> {
    /// The cell's record and its per-iteration times (none if it failed to run).
    type Out = (Record, Vec<f64>);

    fn visit<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
        self,
        _: crate::cli::OpName,
        op: O,
    ) -> (Record, Vec<f64>) {
        let spec = self.spec;
        let (source, measured) = match self.entry.kind {
            Kind::Corecoll(alg) => (
                Source::Corecoll,
                measure(self.team, self.timing, true, |comm| {
                    Ok(Box::new(CorecollKernel::<T, O>::new(comm, spec, alg, op))
                        as Box<dyn Kernel + '_>)
                }),
            ),
            Kind::Baseline(name) => (
                Source::Baseline,
                baselines::run::<T, O>(name, self.team, self.timing, &spec, op),
            ),
        };
        let times = measured
            .as_ref()
            .map_or_else(|_| Vec::new(), |m| m.times.clone());
        let mut rec = Record::of_cell::<T, O>(&spec, self.entry.name(), source, &op, measured);
        rec.scope = self.scope.label.clone();
        rec.placement = self.scope.placement.clone();
        (rec, times)
    }
}

/// A byte count as B, KiB, MiB or GiB.
pub fn fmt_bytes(b: usize) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(list: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("corecoll-bench").chain(list.iter().copied())).unwrap()
    }

    /// Each cell keeps its fastest pass, a failure in any pass stays, order of the first.
    #[test]
    fn best_of_passes_keeps_the_fastest_and_every_failure() {
        use crate::output::tests::rec;
        let mut fail = rec("ring", 8, 1.0);
        fail.validation = Validation::Fail;
        let passes = vec![
            rec("ring", 8, 5.0),
            rec("chain", 8, 2.0),
            rec("direct", 8, 3.0),
            rec("ring", 8, 4.0),
            rec("chain", 8, 3.0),
            rec("direct", 8, f64::NAN),
        ];
        let best = best_of_passes(passes.clone(), 2);
        let got: Vec<(&str, f64)> = best
            .iter()
            .map(|r| (r.algorithm.as_str(), r.median_us))
            .collect();
        assert_eq!(got, vec![("ring", 4.0), ("chain", 2.0), ("direct", 3.0)]);
        assert!(best
            .iter()
            .all(|r| r.note.contains("best median of 2 passes")));
        let mut with_fail = passes.clone();
        with_fail.insert(3, fail);
        let best = best_of_passes(with_fail, 2);
        assert_eq!(best[0].validation, Validation::Fail);
        // One pass: unchanged (NaN ≠ NaN, so compare the medians' bits).
        let one = best_of_passes(passes.clone(), 1);
        let bits = |v: &[Record]| -> Vec<u64> { v.iter().map(|r| r.median_us.to_bits()).collect() };
        assert_eq!(bits(&one), bits(&passes));
    }

    /// Every round measures every row once, each round starting one row later.
    #[test]
    fn rounds_rotate_through_every_row() {
        let order = |n, r| round_order(n, r).collect::<Vec<_>>();
        assert_eq!(order(3, 0), [0, 1, 2]);
        assert_eq!(order(3, 1), [1, 2, 0]);
        assert_eq!(order(3, 5), [2, 0, 1]);
        assert_eq!(order(1, 7), [0]);
        assert!(order(0, 3).is_empty());
        for n in 1..6 {
            for r in 0..2 * n {
                let mut o = order(n, r);
                assert_eq!(o[0], r % n);
                o.sort_unstable();
                assert_eq!(o, (0..n).collect::<Vec<_>>());
            }
        }
    }

    /// A row's rounds: statistics over all their times, a failure in any round kept (with
    /// its note), the largest error of any round.
    #[test]
    fn merged_rounds_pool_their_times_and_keep_failures() {
        use crate::output::tests::rec;
        let round = |median: f64, times: &[f64]| (rec("ring", 8, median), times.to_vec());
        assert!(merge_rounds(Vec::new()).is_none());
        // One round: the record as it was.
        let one = merge_rounds(vec![round(4.0, &[1e-6])]).unwrap();
        assert_eq!(
            (one.median_us, one.iters, one.note.as_str()),
            (4.0, 100, "")
        );
        // Three rounds of 3, 1 and 2 iterations: the statistics of the 6 times.
        let m = merge_rounds(vec![
            round(2.0, &[2e-6, 2e-6, 9e-6]),
            round(1.0, &[1e-6]),
            round(3.0, &[3e-6, 3e-6]),
        ])
        .unwrap();
        assert_eq!(m.iters, 6);
        assert!((m.median_us - 2.5).abs() < 1e-9, "{}", m.median_us);
        assert!((m.min_us - 1.0).abs() < 1e-9);
        assert!((m.p95_us - 9.0).abs() < 1e-9);
        assert!((m.mean_us - 20.0 / 6.0).abs() < 1e-9);
        assert!(m.note.contains("3 interleaved rounds"), "{}", m.note);
        // A failed check in the second round is the row's outcome, with its note and the
        // largest error of the rounds.
        let mut bad = round(1.0, &[1e-6]);
        bad.0.validation = Validation::Fail;
        bad.0.note = "rank 1 differs".into();
        bad.0.max_rel_error = Some(1e-3);
        let mut good = round(2.0, &[2e-6]);
        good.0.max_rel_error = Some(1e-2);
        let m = merge_rounds(vec![good, bad]).unwrap();
        assert_eq!(m.validation, Validation::Fail);
        assert!(m.note.starts_with("rank 1 differs"), "{}", m.note);
        assert_eq!(m.max_rel_error, Some(1e-2));
        assert_eq!(m.iters, 2);
        // A round that could not run: the row is that round's error, unmeasured.
        let mut err = rec("ring", 8, f64::NAN);
        (err.iters, err.validation) = (0, Validation::Fail);
        err.note = "rank 0: cannot start".into();
        let m = merge_rounds(vec![round(2.0, &[2e-6]), (err, Vec::new())]).unwrap();
        assert!(m.median_us.is_nan());
        assert_eq!(m.validation, Validation::Fail);
        assert!(m.note.starts_with("rank 0: cannot start"), "{}", m.note);
    }

    #[test]
    fn per_socket_runs_each_socket_then_all() {
        let two = vec![(0, vec![0, 1, 2]), (1, vec![3, 4, 5])];
        let s = scopes_on(&args(&["--per-socket"]), two.clone(), None).unwrap();
        let labels: Vec<&str> = s.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["socket 0", "socket 1", "all"]);
        assert_eq!((s[0].ranks, s[1].ranks), (3, 3));
        assert_eq!(s[1].pinning, Pinning::Cores(vec![3, 4, 5]));
        assert_eq!(s[1].placement, "socket:1");
        // --ranks applies to every scope; one socket gives only the whole-machine sweep.
        let s = scopes_on(&args(&["--per-socket", "--ranks", "2"]), two, None).unwrap();
        assert!(s.iter().all(|s| s.ranks == 2));
        let one = vec![(0, vec![0, 1])];
        assert_eq!(
            scopes_on(&args(&["--per-socket"]), one.clone(), None)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(scopes_on(&args(&[]), one, None).unwrap()[0].label, "all");
    }

    #[test]
    fn scopes_on_a_described_machine() {
        let s = scopes(&args(&["--machine", "3+2/4", "--per-socket"])).unwrap();
        let labels: Vec<&str> = s.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["socket 0", "socket 1", "all"]);
        assert_eq!(s.iter().map(|s| s.ranks).collect::<Vec<_>>(), [5, 4, 9]);
        assert_eq!(s[1].pinning, Pinning::Socket(1));
        assert!(s.iter().all(|s| s.topology.is_some()));
        let s = scopes(&args(&["--machine", "2x2x4", "--placement", "socket:1"])).unwrap();
        assert_eq!((s[0].ranks, &s[0].pinning), (8, &Pinning::Socket(1)));
        let s = scopes(&args(&["--machine", "2x2x2", "--placement", "cores:0,1,6"])).unwrap();
        let t = s[0].topology.as_ref().unwrap();
        assert_eq!((s[0].ranks, t.num_packages(), t.num_l3_groups()), (3, 2, 2));
        assert!(scopes(&args(&["--machine", "2x2", "--placement", "socket:2"])).is_err());
        assert!(scopes(&args(&["--machine", "2x2", "--placement", "cores:4"])).is_err());
        let s = scopes(&args(&["--machine", "2x3", "--placement", "spread"])).unwrap();
        assert_eq!((s[0].ranks, &s[0].pinning), (6, &Pinning::Spread));
    }

    #[test]
    fn parameterised_entries() {
        let names = |c, sel: &str| -> Vec<String> {
            entries(c, sel, Dtype::F64, &[])
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(
            names(
                Collective::Allreduce,
                "direct,hierarchical:1KiB,auto,hierarchical,dual-root:64"
            ),
            [
                "auto",
                "dual-root:64B",
                "direct",
                "hierarchical:1KiB",
                "hierarchical"
            ]
        );
        // A parameter the collective's algorithm does not take selects nothing there.
        assert!(names(Collective::Broadcast, "hierarchical:1KiB").is_empty());
        assert_eq!(
            names(Collective::Alltoall, "ring-leaders:fanout=2,ring-leaders"),
            ["ring-leaders:2", "ring-leaders"]
        );
        let both = [Collective::Allreduce, Collective::Broadcast];
        assert!(check_algorithms(&both, "hierarchical:1KiB,pipelined-tree:4KiB").is_ok());
        let e = check_algorithms(&[Collective::Broadcast], "hierarchical:1KiB").unwrap_err();
        assert!(e.contains("takes no parameter"), "{e}");
        let e = check_algorithms(&both, "limit:8").unwrap_err();
        assert!(e.contains("takes no parameter"), "{e}");
        let e = check_algorithms(&both, "hierarchical:fast").unwrap_err();
        assert!(e.contains("block size"), "{e}");
        let e = check_algorithms(&both, "fastest:8").unwrap_err();
        assert!(e.contains("unknown algorithm `fastest`"), "{e}");
    }

    #[test]
    fn blocks_expand_the_pipelined_algorithms() {
        let names = |c, sel: &str, blocks: &[usize]| -> Vec<String> {
            entries(c, sel, Dtype::F64, blocks)
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(
            names(
                Collective::Allreduce,
                "ring,dual-root,dual-root:4KiB,direct",
                &[1024, 4096]
            ),
            [
                "ring",
                "ring:1KiB",
                "ring:4KiB",
                "dual-root",
                "dual-root:1KiB",
                "dual-root:4KiB",
                "direct"
            ]
        );
        // Every swept algorithm of allreduce gets its rows; the hierarchy's segment does not.
        let all = names(Collective::Allreduce, "all", &[64]);
        for n in [
            "chain:64B",
            "ring:64B",
            "pipelined-tree:64B",
            "dual-root:64B",
            "two-tree:64B",
        ] {
            assert!(all.iter().any(|a| a == n), "{n}: {all:?}");
        }
        assert!(!all.iter().any(|a| a.starts_with("hierarchical:")));
        // The block is set, in elements of the type.
        let e = entries(Collective::Broadcast, "pipelined-tree", Dtype::F32, &[4096]);
        assert_eq!(e.len(), 2);
        assert!(matches!(
            e[1].kind,
            Kind::Corecoll(Alg::Broadcast(
                corecoll::algorithm::Broadcast::PipelinedTree {
                    block: corecoll::Block::Elements(1024)
                }
            ))
        ));
        // Not pipelined: nothing added.
        assert_eq!(names(Collective::Allgather, "ring", &[64]), ["ring"]);
    }

    #[test]
    fn guideline_sizes_are_whole_blocks() {
        assert_eq!(guideline_sizes(&[8, 1024, 4096], 2, 8), [16, 1024, 4096]);
        assert_eq!(guideline_sizes(&[0, 8, 1024], 3, 8), [0, 24, 1008]);
        assert_eq!(guideline_sizes(&[8, 16], 2, 8), [16]);
        // Every collective's cell then moves exactly that size.
        for &c in &guideline_collectives() {
            for m in guideline_sizes(&[8, 1000, 1 << 20], 3, 8) {
                let spec = CellSpec::new(c, 3, Dtype::F64, crate::cli::OpName::Sum, m, 0, false);
                let want = if c == Collective::Barrier { 0 } else { m };
                assert_eq!(spec.bytes(), want, "{c:?} {m}");
            }
        }
        // The guidelines run one row per collective: the user's.
        let first = selected(Collective::Alltoallv, "all", Dtype::F64);
        assert_eq!(first[0].name, "pairwise");
    }

    #[test]
    fn algorithm_selection() {
        let names = |sel: &str| -> Vec<String> {
            entries(Collective::Allreduce, sel, Dtype::F64, &[])
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(names("direct, limit"), ["direct", "limit"]);
        assert_eq!(names("all")[0], "auto");
        assert!(names("all").iter().any(|n| n == "channels"));
        assert!(entries(Collective::Broadcast, "all", Dtype::F64, &[])
            .iter()
            .all(|e| e.name() != "channels"));
        let known = known_names(&[Collective::Allreduce]);
        for n in [
            "auto",
            "dual-root",
            "limit",
            "std-naive",
            "channels",
            "mpi",
            "mpi-reduce-bcast",
        ] {
            assert!(known.iter().any(|k| k == n), "{n}");
        }
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(3 << 20), "3 MiB");
        assert_eq!(fmt_bytes(1536), "1536 B");
    }
}
