//! `--simulate`: the sweep predicted instead of measured. For each selected collective, size
//! and algorithm the simulator (`corecoll::sim`) runs the crate's own schedule on `--ranks`
//! ranks (any number: 1 152 for the 36 × 32 machine of Träff 2021) under the α-β-γ model of
//! `--alpha-ns`, `--beta-ns`, `--gamma-ns` and `--one-port`, or of a calibrated profile's level
//! (`--model-profile PATH --model-level mpi`). It prints, per size, every algorithm's predicted
//! time and the fastest, and writes CSV, JSON and an SVG plot as a measured sweep does (the
//! rows say `predicted` in their note). The model and what it leaves out: docs/model.md.
//!
//! With `--nodes N --sockets S --cores C` the ranks are placed on a hierarchical machine
//! (`sim::Machine`: α and β per level, `--nic-lanes` transfers at a time on each node's link)
//! and the table has, beside the flat algorithms placed on it, the hierarchical compositions of
//! `--compose` (`sim::simulate_hierarchical`), labelled `h:` and their stages: the leader
//! compositions (`h:pt/two-tree/pt`) and the reduce-scatter/allgather one
//! (`h:rs-ring/two-tree/ag-ring`).

use crate::cli::Args;
use crate::domain::{
    algorithms, fmt_bytes, parse_alg_spec, parse_size, with_param, Alg, Call, Dtype, Form,
};
use crate::output::{self, default_dir};
use crate::plot;
use crate::record::{Record, Source, Validation};
use crate::stats::{algbw_gbs, busbw_factor};
use corecoll::algorithm::Any;
use corecoll::profile::{Level, Profile};
use corecoll::sim::{self, Case, Composition, Grouping, HierCase, Link, Machine, Model, Ports};
use corecoll::Collective;
use std::process::ExitCode;

/// Ranks when `--ranks` is not given: Träff 2021's 36 × 32 machine.
const DEFAULT_RANKS: usize = 1152;

/// The model of the command line.
fn model(args: &Args) -> Result<(Model, String), String> {
    let mut m = match &args.model_profile {
        Some(path) => {
            let profile = Profile::load(path).map_err(|e| e.to_string())?;
            let level = Level::ALL
                .into_iter()
                .find(|l| l.name() == args.model_level)
                .ok_or_else(|| format!("--model-level {}: no such level", args.model_level))?;
            Model::from_profile(&profile, level, args.dtype.name().starts_with('f'))
        }
        None => Model {
            alpha_ns: args.alpha_ns,
            beta_ns: args.beta_ns,
            gamma_ns: args.gamma_ns,
            ports: Ports::Bidirectional,
        },
    };
    if args.one_port {
        m.ports = Ports::Unidirectional;
    }
    let how = format!(
        "α = {} ns, β = {} ns/B, γ = {} ns/B, {} ports",
        m.alpha_ns,
        m.beta_ns,
        m.gamma_ns,
        match m.ports {
            Ports::Bidirectional => "bidirectional",
            Ports::Unidirectional => "unidirectional",
        }
    );
    Ok((m, how))
}

/// The hierarchical machine of the command line, if `--nodes`, `--sockets` or `--cores` is
/// given, and how to describe it.
fn machine(args: &Args, model: &Model) -> Result<Option<(Machine, String)>, String> {
    if args.nodes.is_none() && args.sockets.is_none() && args.cores.is_none() {
        return Ok(None);
    }
    let shape = (
        args.nodes.unwrap_or(1),
        args.sockets.unwrap_or(1),
        args.cores.unwrap_or(1),
    );
    let float = args.dtype.name().starts_with('f');
    let mut m = match &args.model_profile {
        Some(path) => corecoll::unstable::machine_from_profile(
            &Profile::load(path).map_err(|e| e.to_string())?,
            shape,
            float,
        ),
        None => {
            let mut m = corecoll::unstable::machine_from_profile(&Profile::default(), shape, float);
            m.network = Link {
                alpha_ns: 1200.0,
                beta_ns: 0.08,
            };
            m.gamma_ns = model.gamma_ns;
            m
        }
    };
    let set = |l: &mut Link, a: Option<f64>, b: Option<f64>| {
        l.alpha_ns = a.unwrap_or(l.alpha_ns);
        l.beta_ns = b.unwrap_or(l.beta_ns);
    };
    set(&mut m.socket, args.socket_alpha_ns, args.socket_beta_ns);
    set(&mut m.node, args.node_alpha_ns, args.node_beta_ns);
    set(&mut m.network, args.net_alpha_ns, args.net_beta_ns);
    m.lanes = args.nic_lanes;
    m.ports = model.ports;
    if [m.nodes, m.sockets, m.cores, m.lanes].contains(&0) {
        return Err("--nodes, --sockets, --cores and --nic-lanes must be at least 1".into());
    }
    if let Some(r) = args.ranks.filter(|&r| r != m.ranks()) {
        return Err(format!(
            "--ranks {r} does not match --nodes × --sockets × --cores = {}",
            m.ranks()
        ));
    }
    let l = |l: Link| format!("α = {} ns, β = {} ns/B", l.alpha_ns, l.beta_ns);
    let how = format!(
        "{} nodes × {} sockets × {} cores, in a socket {}, across sockets {}, across nodes {} \
         with {} lane(s) per node and direction, γ = {} ns/B, {} ports",
        m.nodes,
        m.sockets,
        m.cores,
        l(m.socket),
        l(m.node),
        l(m.network),
        m.lanes,
        m.gamma_ns,
        match m.ports {
            Ports::Bidirectional => "bidirectional",
            Ports::Unidirectional => "unidirectional",
        }
    );
    Ok(Some((m, how)))
}

/// The compositions `--compose` names for `call` (label, composition, segment in elements).
fn compositions(
    args: &Args,
    call: Call,
    elem: usize,
) -> Result<Vec<(String, Composition, Option<usize>)>, String> {
    let plain = call.form == Form::Plain;
    let defaults: &[&str] = match call.collective {
        Collective::Allreduce if plain => &[
            "binomial/recursive-doubling/binomial",
            "binomial/rabenseifner/binomial",
            "pipelined-tree/ring/pipelined-tree",
            "pipelined-tree/dual-root/pipelined-tree",
            "pipelined-tree/two-tree/pipelined-tree",
            "pipelined-tree/ring/pipelined-tree:1MiB",
            "rs-ring/two-tree/ag-ring",
            "rs-ring/rabenseifner/ag-ring",
        ],
        Collective::Broadcast if plain => &["binomial/binomial", "pipelined-tree/pipelined-tree"],
        _ => &[],
    };
    // `default` stands for the standard set, alone or in a list.
    let words: Vec<&str> = match args.compose.as_str() {
        "none" => Vec::new(),
        list => list
            .split(',')
            .map(str::trim)
            .flat_map(|w| match w {
                "default" => defaults.to_vec(),
                w => vec![w],
            })
            .collect(),
    };
    let mut out = Vec::new();
    for w in words {
        let (stages, segment) = match w.split_once(':') {
            Some((st, seg)) => (st, Some((parse_size(seg)? / elem.max(1)).max(1))),
            None => (w, None),
        };
        // A list names compositions of several collectives: keep this one's.
        let n = stages.split('/').count();
        let fits = plain
            && matches!(
                (call.collective, n),
                (Collective::Allreduce, 3) | (Collective::Broadcast, 2)
            );
        if !fits {
            continue;
        }
        let c = Composition::parse(call.name(), stages)
            .ok_or_else(|| format!("--compose {w}: not a composition of {call} algorithms"))?;
        if segment.is_some() && call.collective != Collective::Allreduce {
            return Err(format!("--compose {w}: only the allreduce takes a segment"));
        }
        let short: Vec<String> = stages.split('/').map(|a| abbreviation(a.trim())).collect();
        let label = match w.split_once(':') {
            Some((_, seg)) => format!("h:{}:{seg}", short.join("/")),
            None => format!("h:{}", short.join("/")),
        };
        out.push((label, c, segment));
    }
    Ok(out)
}

/// The short name of a stage's algorithm in a composition's label (`h:pt/ring/pt`,
/// `h:rs-rh/two-tree/ag-rd`): the reduce-scatter/allgather stages keep their `rs-`/`ag-`.
fn abbreviation(name: &str) -> String {
    let (prefix, alg) = ["rs-", "ag-"]
        .into_iter()
        .find_map(|pre| Some((pre, name.strip_prefix(pre)?)))
        .unwrap_or(("", name));
    let short = ABBREVIATIONS
        .iter()
        .find(|(long, _)| *long == alg)
        .map_or(alg, |(_, short)| short);
    format!("{prefix}{short}")
}

/// Stage algorithms and their short names in labels, printed under the tables.
const ABBREVIATIONS: [(&str, &str); 7] = [
    ("binomial", "bin"),
    ("recursive-doubling", "rd"),
    ("recursive-halving", "rh"),
    ("rabenseifner", "rab"),
    ("pipelined-tree", "pt"),
    ("dual-root", "dr"),
    ("scatter-allgather", "sag"),
];

/// One column of the table: a flat algorithm or a composition.
#[derive(Clone, Copy)]
enum Column {
    Flat(Any),
    Composed(Composition, Option<usize>),
}

/// `alg` as the simulator takes it, if it runs it (every algorithm of its list, with any
/// block).
fn simulable(alg: Alg) -> Option<Any> {
    let Alg::Library(c) = alg else {
        return None;
    };
    c.is_schedule().then_some(c)
}

/// The columns of the flat algorithms of `call` that the simulator runs, labelled by their
/// names (none for the `v` forms, which it does not have).
fn flat_columns(call: Call) -> Vec<(String, Column)> {
    algorithms(call)
        .into_iter()
        .filter_map(|(name, alg)| Some((name.to_string(), Column::Flat(simulable(alg)?))))
        .collect()
}

/// The column of the algorithm of `call` that `--algorithms` names `word` (`dual-root`, or
/// with a block in bytes, `dual-root:64000`, counted in elements of `dtype`), labelled by
/// `word` so that rows with different blocks stay apart; `None` if the simulator does not run
/// it.
fn named(call: Call, word: &str, dtype: Dtype) -> Result<Option<(String, Column)>, String> {
    let spec = parse_alg_spec(word)?;
    let Some((_, alg)) = algorithms(call).into_iter().find(|a| a.0 == spec.name) else {
        return Ok(None);
    };
    let alg = match spec.param {
        None => alg,
        Some(p) => with_param(alg, p, dtype)
            .ok_or_else(|| format!("{word}: `{}` takes no such parameter", spec.name))?,
    };
    Ok(simulable(alg).map(|c| (word.to_string(), Column::Flat(c))))
}

/// `--simulate`.
pub fn main(args: &Args) -> Result<ExitCode, String> {
    let (model, flat_how) = model(args)?;
    let hier = machine(args, &model)?;
    let (p, how) = match &hier {
        Some((m, how)) => (m.ranks(), how.clone()),
        None => (args.ranks.unwrap_or(DEFAULT_RANKS), flat_how),
    };
    let grouping = if args.group_by == "nodes" {
        Grouping::Nodes
    } else {
        Grouping::Sockets
    };
    let elem = args.dtype.size();
    let wanted: Option<Vec<&str>> =
        (args.algorithms != "all").then(|| args.algorithms.split(',').map(str::trim).collect());
    println!(
        "Predicted by the cost-model simulator (docs/model.md): {p} ranks, {how}, {elem}-byte \
         elements."
    );
    let mut records = Vec::new();
    for &call in &args.collective.0 {
        let mut algs: Vec<(String, Column)> = match &wanted {
            None => flat_columns(call),
            Some(words) => words
                .iter()
                .map(|w| named(call, w, args.dtype))
                .collect::<Result<Vec<_>, String>>()?
                .into_iter()
                .flatten()
                .collect(),
        };
        if hier.is_some() {
            for (label, c, seg) in compositions(args, call, elem)? {
                algs.push((label, Column::Composed(c, seg)));
            }
        }
        if algs.is_empty() {
            println!("\n{call}: nothing the simulator can run");
            continue;
        }
        let blocked = call.blocked();
        let sizes: Vec<usize> = if call.is_barrier() {
            vec![0]
        } else {
            args.sizes.0.clone()
        };
        println!("\n{call} (µs)");
        let width = |label: &str| label.chars().count().max(12);
        let mut header = format!("{:>10}", "size");
        for (label, _) in &algs {
            header += &format!(" {label:>w$}", w = width(label));
        }
        header += "  fastest";
        println!("{header}");
        for &bytes in &sizes {
            // The bench's bytes are the buffer a rank passes: p blocks for the blocked ones.
            let count = if blocked {
                bytes / elem / p
            } else {
                bytes / elem
            };
            let mut line = format!("{:>10}", fmt_bytes(bytes));
            let mut best: Option<(f64, &str)> = None;
            for (label, column) in &algs {
                let root = args.root.min(p - 1);
                let predicted = match (*column, &hier) {
                    (Column::Flat(c), hier) => {
                        let case = Case {
                            elem_bytes: elem,
                            root,
                            ..Case::new(c, p, count)
                        };
                        match hier {
                            Some((m, _)) => sim::simulate_on(&case, m),
                            None => sim::simulate(&case, &model),
                        }
                    }
                    (Column::Composed(c, segment), Some((m, _))) => {
                        let case = HierCase {
                            grouping,
                            elem_bytes: elem,
                            root,
                            segment,
                            ..HierCase::new(c, count)
                        };
                        sim::simulate_hierarchical(&case, m)
                    }
                    (Column::Composed(..), None) => unreachable!("compositions need --nodes"),
                };
                let w = width(label);
                match &predicted {
                    Ok(pr) => {
                        let us = pr.time_ns / 1000.0;
                        line += &format!(" {us:>w$.2}");
                        if best.as_ref().is_none_or(|(b, _)| us < *b) {
                            best = Some((us, label.as_str()));
                        }
                    }
                    Err(_) => line += &format!(" {:>w$}", "-"),
                }
                records.push(record(call, label, args, p, (bytes, count), predicted));
            }
            if let Some((_, name)) = best {
                line += &format!("  {name}");
            }
            println!("{line}");
        }
        if algs.iter().any(|(_, c)| matches!(c, Column::Composed(..))) {
            let legend: Vec<String> = ABBREVIATIONS
                .iter()
                .map(|(long, short)| format!("{short} = {long}"))
                .collect();
            println!(
                "h: = hierarchical, grouped by {} (reduce/top/broadcast, rs-/top/ag- = \
                 reduce-scatter/concurrent allreduces/allgather, or groups/top; \
                 :SIZE = segments); {}",
                args.group_by,
                legend.join(", ")
            );
        }
    }
    let dir = default_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let csv = args
        .csv
        .clone()
        .unwrap_or_else(|| dir.join("simulated.csv"));
    output::write_csv(&csv, &records)?;
    for &call in &args.collective.0 {
        let rows: Vec<Record> = records
            .iter()
            .filter(|r| r.collective == call.name())
            .cloned()
            .collect();
        if rows.is_empty() {
            continue;
        }
        let path = match &args.plot {
            Some(p) if args.collective.0.len() == 1 => p.clone(),
            _ => dir.join(format!("{call}-simulated.svg")),
        };
        let title = match &hier {
            Some((m, _)) => format!(
                "{call} predicted, {} × {} × {} ranks, {} lane(s) per node",
                m.nodes, m.sockets, m.cores, m.lanes
            ),
            None => format!("{call} predicted, {p} ranks ({how})"),
        };
        plot::plot_svg(&path, &title, &rows)?;
        println!("\nplot: {}", path.display());
    }
    println!("csv: {}", csv.display());
    Ok(ExitCode::SUCCESS)
}

/// The result row of one prediction (or of the simulator's refusal).
fn record(
    call: Call,
    label: &str,
    args: &Args,
    p: usize,
    (bytes, count): (usize, usize),
    predicted: corecoll::Result<sim::Prediction>,
) -> Record {
    let (us, validation, note) = match predicted {
        Ok(pr) => (
            pr.time_ns / 1000.0,
            Validation::Skipped,
            format!(
                "predicted: {} steps, {} messages, block {}, most bytes sent by a rank {}",
                pr.rounds, pr.messages, pr.block, pr.max_bytes_sent
            ),
        ),
        Err(e) => (f64::NAN, Validation::Fail, e.to_string()),
    };
    let algbw = algbw_gbs(bytes, us / 1e6);
    Record {
        collective: call.name().into(),
        algorithm: label.into(),
        source: Source::Corecoll,
        scope: "model".into(),
        placement: "simulated".into(),
        ranks: p,
        dtype: args.dtype.name().into(),
        op: if call.reduces() {
            args.op.name().into()
        } else {
            "-".into()
        },
        bytes,
        count,
        cache: "-".into(),
        iters: 0,
        min_us: us,
        median_us: us,
        p95_us: us,
        mean_us: us,
        algbw_gbs: algbw,
        busbw_gbs: algbw * busbw_factor(call.name(), p),
        limit_pct: None,
        validation,
        max_rel_error: None,
        note,
        auto_choice: String::new(),
        touch_us: None,
        switches: None,
    }
}
