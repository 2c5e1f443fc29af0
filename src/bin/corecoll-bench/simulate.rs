//! `--simulate`: the sweep predicted instead of measured. For each selected collective, size
//! and algorithm the simulator (`corecoll::sim`) runs the crate's own schedule on `--ranks`
//! ranks (any number: 1 152 for the 36 × 32 machine of Träff 2021) under the α-β-γ model of
//! `--alpha-ns`, `--beta-ns`, `--gamma-ns` and `--one-port`, or of a calibrated profile's level
//! (`--model-profile PATH --model-level mpi`). It prints, per size, every algorithm's predicted
//! time and the fastest, and writes CSV, JSON and an SVG plot as a measured sweep does (the
//! rows say `predicted` in their note). The model and what it leaves out: docs/model.md.

use crate::cli::{Args, Collective as BenchCollective};
use crate::output;
use crate::record::{Record, Source, Validation};
use crate::stats::{algbw_gbs, busbw_factor};
use crate::sweep::fmt_bytes;
use corecoll::profile::{Level, Profile};
use corecoll::sim::{self, Case, Collective, Model, Ports};
use corecoll::{Algorithm, Block};
use std::path::PathBuf;
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

/// The simulator's algorithms of one of the bench's collectives (none for the `v` forms and
/// exscan, which it does not have).
fn collectives(c: BenchCollective) -> Vec<Collective> {
    Collective::all()
        .into_iter()
        .filter(|s| s.parts().0 == c.name())
        .collect()
}

/// The algorithm of `bc` that `--algorithms` names `word` (`dual-root`, or with a block in
/// bytes, `dual-root:64000`), if the simulator has it.
fn named(bc: BenchCollective, word: &str, elem: usize) -> Result<Option<Collective>, String> {
    let (name, block) = match word.split_once(':') {
        Some((n, b)) => (n, Some(crate::cli::parse_size(b)? / elem.max(1))),
        None => (word, None),
    };
    let Some(c) = collectives(bc).into_iter().find(|c| c.parts().1 == name) else {
        return Ok(None);
    };
    let Some(b) = block else {
        return Ok(Some(c));
    };
    let block = Block::Elements(b.max(1));
    Ok(Some(match c {
        Collective::Allreduce(Algorithm::Chain { .. }) => {
            Collective::Allreduce(Algorithm::Chain { block })
        }
        Collective::Allreduce(Algorithm::Ring { .. }) => {
            Collective::Allreduce(Algorithm::Ring { block })
        }
        Collective::Allreduce(Algorithm::PipelinedTree { .. }) => {
            Collective::Allreduce(Algorithm::PipelinedTree { block })
        }
        Collective::Allreduce(Algorithm::DualRoot { .. }) => {
            Collective::Allreduce(Algorithm::DualRoot { block })
        }
        Collective::Allreduce(Algorithm::TwoTree { .. }) => {
            Collective::Allreduce(Algorithm::TwoTree { block })
        }
        _ => {
            return Err(format!(
                "{word}: only the pipelined allreduces (chain, ring, pipelined-tree, dual-root, \
                 two-tree) take a block here"
            ))
        }
    }))
}

/// `--simulate`.
pub fn main(args: &Args) -> Result<ExitCode, String> {
    let (model, how) = model(args)?;
    let p = args.ranks.unwrap_or(DEFAULT_RANKS);
    let elem = args.dtype.size();
    let wanted: Option<Vec<&str>> =
        (args.algorithms != "all").then(|| args.algorithms.split(',').map(str::trim).collect());
    println!(
        "Predicted by the cost-model simulator (docs/model.md): {p} ranks, {how}, {}-byte \
         elements.",
        elem
    );
    let mut records = Vec::new();
    for &bc in &args.collective.0 {
        // Each with its label: the word that named it (`dual-root:64000`), so that rows with
        // different blocks stay apart.
        let algs: Vec<(String, Collective)> = match &wanted {
            None => collectives(bc)
                .into_iter()
                .map(|c| (c.parts().1.to_string(), c))
                .collect(),
            Some(names) => names
                .iter()
                .map(|w| Ok(named(bc, w, elem)?.map(|c| (w.to_string(), c))))
                .collect::<Result<Vec<_>, String>>()?
                .into_iter()
                .flatten()
                .collect(),
        };
        if algs.is_empty() {
            println!("\n{}: nothing the simulator can run", bc.name());
            continue;
        }
        let blocked = bc.blocked();
        let sizes: Vec<usize> = if bc == BenchCollective::Barrier {
            vec![0]
        } else {
            args.sizes.0.clone()
        };
        println!("\n{} (µs)", bc.name());
        let mut header = format!("{:>10}", "size");
        for (label, _) in &algs {
            header += &format!(" {label:>18}");
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
            for (label, c) in &algs {
                let c = *c;
                let case = Case {
                    elem_bytes: elem,
                    root: args.root.min(p - 1),
                    ..Case::new(c, p, count)
                };
                let predicted = sim::simulate(&case, &model);
                match &predicted {
                    Ok(pr) => {
                        let us = pr.time_ns / 1000.0;
                        line += &format!(" {us:>18.2}");
                        if best.as_ref().is_none_or(|(b, _)| us < *b) {
                            best = Some((us, label.as_str()));
                        }
                    }
                    Err(_) => line += &format!(" {:>18}", "-"),
                }
                records.push(record(bc, label, args, (bytes, count), predicted));
            }
            if let Some((_, name)) = best {
                line += &format!("  {name}");
            }
            println!("{line}");
        }
    }
    let dir = PathBuf::from("target/corecoll-bench");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let csv = args
        .csv
        .clone()
        .unwrap_or_else(|| dir.join("simulated.csv"));
    output::write_csv(&csv, &records)?;
    for &bc in &args.collective.0 {
        let rows: Vec<Record> = records
            .iter()
            .filter(|r| r.collective == bc.name())
            .cloned()
            .collect();
        if rows.is_empty() {
            continue;
        }
        let path = match &args.plot {
            Some(p) if args.collective.0.len() == 1 => p.clone(),
            _ => dir.join(format!("{}-simulated.svg", bc.name())),
        };
        let title = format!("{} predicted, {p} ranks ({how})", bc.name());
        crate::plot::plot_svg(&path, &title, &rows)?;
        println!("\nplot: {}", path.display());
    }
    println!("csv: {}", csv.display());
    Ok(ExitCode::SUCCESS)
}

/// The result row of one prediction (or of the simulator's refusal).
fn record(
    bc: BenchCollective,
    label: &str,
    args: &Args,
    (bytes, count): (usize, usize),
    predicted: corecoll::Result<sim::Prediction>,
) -> Record {
    let p = args.ranks.unwrap_or(DEFAULT_RANKS);
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
        collective: bc.name().into(),
        algorithm: label.into(),
        source: Source::Corecoll,
        scope: "model".into(),
        placement: "simulated".into(),
        ranks: p,
        dtype: args.dtype.name().into(),
        op: if bc.reduces() {
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
        busbw_gbs: algbw * busbw_factor(bc.name(), p),
        limit_pct: None,
        validation,
        max_rel_error: None,
        note,
    }
}
