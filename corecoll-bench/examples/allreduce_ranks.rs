//! Allreduce of every algorithm at several rank counts, measured interleaved: for each rank
//! count and size, five rounds in which every algorithm takes one sample in turn (so that a
//! slow phase of the machine hits all of them alike); the median time per call is printed.
//!
//! ```text
//! cargo run --release -p corecoll-bench --example allreduce_ranks            # p = 4 and 8, 64 B … 8 MiB
//! cargo run --release -p corecoll-bench --example allreduce_ranks -- 3 16    # other rank counts
//! ```
//!
//! f64 `Sum`, in place, `Block::Auto`. A sample is a loop of calls (about 200 000 / (bytes/64 +
//! 1), at least 2, at most 2000) after a barrier, timed on rank 0. With more ranks than cores
//! this measures the oversubscribed regime, where every wait may cost a context switch.

use corecoll::op::Sum;
use corecoll::{Algorithm, Block, Team};
use std::time::Instant;

/// The algorithms compared (the linear, chain and binomial ones are far behind at every size
/// on 2 ranks already; see docs/benchmarks.md).
const ALGORITHMS: [Algorithm; 8] = [
    Algorithm::Auto,
    Algorithm::RecursiveDoubling,
    Algorithm::Rabenseifner,
    Algorithm::Ring { block: Block::Auto },
    Algorithm::PipelinedTree { block: Block::Auto },
    Algorithm::DualRoot { block: Block::Auto },
    Algorithm::TwoTree { block: Block::Auto },
    Algorithm::Direct,
];

/// Sizes per rank, in bytes.
const SIZES: [usize; 6] = [64, 1024, 8192, 64 << 10, 1 << 20, 8 << 20];

/// Rounds per cell.
const ROUNDS: usize = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let ranks = if args.is_empty() { vec![4, 8] } else { args };
    let names: Vec<&str> = ALGORITHMS.iter().map(|a| a.name()).collect();
    println!("| p | bytes per rank | {} | best |", names.join(" | "));
    println!("|{}", " --- |".repeat(names.len() + 3));
    for p in ranks {
        let team = Team::new(p)?;
        for bytes in SIZES {
            let n = bytes / 8;
            let iters = (200_000 / (bytes / 64 + 1)).clamp(2, 2000);
            let mut samples = vec![Vec::with_capacity(ROUNDS); ALGORITHMS.len()];
            for _ in 0..ROUNDS {
                for (i, &alg) in ALGORITHMS.iter().enumerate() {
                    let out = team.run(|c| -> corecoll::Result<f64> {
                        let mut v = vec![1.0f64; n];
                        c.allreduce_with(&mut v, Sum, alg)?;
                        c.barrier()?;
                        let t0 = Instant::now();
                        for _ in 0..iters {
                            c.allreduce_with(&mut v, Sum, alg)?;
                            // Every call multiplies the values by p; start again long
                            // before they overflow (all ranks hold the same values).
                            if v.first().is_some_and(|&x| x > 1e300) {
                                v.fill(1.0);
                            }
                        }
                        Ok(t0.elapsed().as_secs_f64() / iters as f64)
                    })?;
                    samples[i].push(out[0].clone()?);
                }
            }
            let medians: Vec<f64> = samples
                .iter_mut()
                .map(|s| {
                    s.sort_by(f64::total_cmp);
                    s[s.len() / 2]
                })
                .collect();
            let best = (1..ALGORITHMS.len())
                .min_by(|&a, &b| medians[a].total_cmp(&medians[b]))
                .map_or("", |i| names[i]);
            let cells: Vec<String> = medians
                .iter()
                .map(|t| format!("{:.1} µs", t * 1e6))
                .collect();
            println!("| {p} | {bytes} | {} | {best} |", cells.join(" | "));
        }
    }
    Ok(())
}
