//! The sweep: scopes (the placement, or each socket and then all of them) × collectives ×
//! sizes × algorithms and baselines, each cell measured and checked, then the outputs and the
//! checks over them (`output::checks`). `--blocks` adds fixed-block rows beside each pipelined
//! algorithm's `Block::Auto` one; `--guidelines` replaces the selection by what the
//! guidelines need: their collectives, each with the algorithm a user gets.

mod combine;
mod entries;
mod samples;

use crate::cell::{record_of, CellSpec, CorecollKernel};
use crate::cli::Args;
use crate::domain::{fmt_bytes, Cache, Call, OpName, Placement, BLOCK_SWEPT};
use crate::elem::{dispatch, Elem, Visit};
use crate::measure::{measure, Kernel, Timing};
use crate::output::checks::{self, Checks};
use crate::output::{self, create_parent, default_dir, RunInfo};
use crate::placement;
use crate::record::{Record, Source, Validation};
use crate::{baselines, peers, plot};
use combine::{best_of_passes, merge_rounds, round_order};
use corecoll::op::Op;
use corecoll::{Pinning, Team, Topology};
use entries::{check_algorithms, entries, selected, Entry, Kind};
use indicatif::{ProgressBar, ProgressStyle};
use samples::{write_samples, Sample};
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
    let collectives: &[Call] = if guide {
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
    let entries_of = |c: Call| -> Vec<Entry> {
        if guide {
            selected(c, "all", args.dtype).into_iter().take(1).collect()
        } else {
            let mut list = entries(c, &args.algorithms, args.dtype, &blocks);
            list.retain(|e| match e.kind {
                Kind::Peer(name) => peer_missing(args, name).is_none(),
                Kind::Baseline(_) => args.op.corecoll_only().is_none(),
                Kind::Corecoll(_) => true,
            });
            list
        }
    };
    // The peers that the selection names but that cannot run here, each with why (printed
    // after the table).
    let mut absent: Vec<String> = Vec::new();
    absent.extend(args.op.corecoll_only().map(String::from));
    if !guide {
        for &c in collectives {
            for e in entries(c, &args.algorithms, args.dtype, &blocks) {
                if let Kind::Peer(name) = e.kind {
                    if let Some(why) = peer_missing(args, name) {
                        if !absent.contains(&why) {
                            absent.push(why);
                        }
                    }
                }
            }
        }
    }
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
    let sizes_of = |c: Call, p: usize| -> Vec<usize> {
        if c.is_barrier() {
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
    let mut samples: Vec<Sample> = Vec::new();
    for (pass, scope) in scopes
        .iter()
        .cycle()
        .take(scopes.len() * args.repeat)
        .enumerate()
    {
        let pass = pass / scopes.len();
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
                    args.cache(),
                );
                let entries = entries_of(c);
                let mut rounds: Vec<Vec<(Record, Vec<f64>)>> = vec![Vec::new(); entries.len()];
                for round in 0..args.rounds {
                    for i in round_order(entries.len(), round) {
                        let entry = &entries[i];
                        bar.set_message(format!(
                            "{c} {} {}",
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
                if args.samples.is_some() {
                    samples.extend(Sample::of_rounds(pass, &rounds));
                }
                records.extend(rounds.into_iter().filter_map(merge_rounds));
            }
        }
        if !guide
            && args.op.corecoll_only().is_none()
            && crate::mpi_baseline::selected(&args.algorithms)
        {
            bar.set_message(format!("MPI libraries, {} processes", scope.ranks));
            let (mut r, missing) =
                crate::mpi_baseline::run(args, &scope.label, &scope.placement, scope.ranks);
            records.append(&mut r);
            for why in missing {
                if !absent.contains(&why) {
                    absent.push(why);
                }
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
        output::print_peers(stdout, &records).map_err(io)?;
        checks::print_cliffs(stdout, &checks.cliffs).map_err(io)?;
    }
    for why in &absent {
        println!("Not measured: {why}");
    }
    if !absent.is_empty() {
        // Also where the progress bar and -q leave stdout to the table alone.
        eprintln!(
            "corecoll-bench: {} peer(s) not measured (see the table's end)",
            absent.len()
        );
    }
    output::print_hierarchy(stdout, &records).map_err(io)?;
    checks::print_blocks(stdout, &checks.blocks).map_err(io)?;
    checks::print_guidelines(stdout, &checks.guidelines).map_err(io)?;
    if guide && checks.guidelines.checks.is_empty() {
        println!("\nNo guideline had both sides measured (see the table's check column).");
    }
    let dir = default_dir();
    let csv = args.csv.clone().unwrap_or_else(|| dir.join("results.csv"));
    let json = args
        .json
        .clone()
        .unwrap_or_else(|| dir.join("results.json"));
    for path in [&csv, &json] {
        create_parent(path)?;
    }
    output::write_csv(&csv, &records)?;
    if let Some(path) = &args.samples {
        write_samples(path, &samples)?;
    }
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
    if let Some(path) = &args.samples {
        println!("samples: {} ({} iterations)", path.display(), samples.len());
    }
    for &c in collectives {
        let path = match &args.plot {
            Some(p) if collectives.len() == 1 => p.clone(),
            Some(p) => p.with_file_name(format!(
                "{}-{c}.svg",
                p.file_stem().and_then(|s| s.to_str()).unwrap_or("plot")
            )),
            None => dir.join(format!("{c}.svg")),
        };
        create_parent(&path)?;
        let mine: Vec<Record> = records
            .iter()
            .filter(|r| r.collective == c.name())
            .cloned()
            .collect();
        let data = if c.is_barrier() {
            String::new()
        } else if c.reduces() {
            format!(" · {} {}", args.dtype.name(), args.op.name())
        } else {
            format!(" · {}", args.dtype.name())
        };
        let ranks = scopes.last().map_or(0, |s| s.ranks);
        let cache = match args.cache() {
            Cache::Warm => "",
            Cache::Cold => " · cold caches",
            Cache::Touch => " · inputs written before each call",
        };
        let title = format!("{c}{data} · {ranks} ranks{cache}");
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

/// Why peer `name` cannot run the cells of `args` here, or `None`.
fn peer_missing(args: &Args, name: &str) -> Option<String> {
    peers::missing(name, args.dtype, args.op, args.cache())
}

/// The calls of the guidelines' rules, in the order of their first use.
fn guideline_collectives() -> Vec<Call> {
    checks::guideline_collectives()
        .into_iter()
        .map(|name| Call::from_name(name).expect("the rules name known collectives"))
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
        _: OpName,
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
            Kind::Peer(name) => (
                Source::Peer,
                peers::run::<T, O>(name, self.timing, &spec, op, self.team.cores()),
            ),
        };
        let times = measured
            .as_ref()
            .map_or_else(|_| Vec::new(), |m| m.times.clone());
        let mut rec = record_of::<T, O>(&spec, self.entry.name(), source, &op, measured);
        rec.scope = self.scope.label.clone();
        rec.placement = self.scope.placement.clone();
        (rec, times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Dtype;
    use clap::Parser;

    fn args(list: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("corecoll-bench").chain(list.iter().copied())).unwrap()
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
    fn guideline_sizes_are_whole_blocks() {
        assert_eq!(guideline_sizes(&[8, 1024, 4096], 2, 8), [16, 1024, 4096]);
        assert_eq!(guideline_sizes(&[0, 8, 1024], 3, 8), [0, 24, 1008]);
        assert_eq!(guideline_sizes(&[8, 16], 2, 8), [16]);
        // Every collective's cell then moves exactly that size.
        for &c in &guideline_collectives() {
            for m in guideline_sizes(&[8, 1000, 1 << 20], 3, 8) {
                let spec = CellSpec::new(c, 3, Dtype::F64, OpName::Sum, m, 0, Cache::Warm);
                let want = if c.is_barrier() { 0 } else { m };
                assert_eq!(spec.bytes(), want, "{c:?} {m}");
            }
        }
        // The guidelines run one row per collective: the user's.
        let first = selected(Call::from_name("alltoallv").unwrap(), "all", Dtype::F64);
        assert_eq!(first[0].name, "pairwise");
    }
}
