//! The short allreduce on more ranks than cores: the blocking call (`Auto`) against the
//! persistent one, whose start and wait are one arrival and one wait per rank (every rank
//! deposits its vector in its own slots and folds all of them in rank order once every rank
//! has deposited: no rank waits for one particular other rank to get a core). Both timed as
//! the sweep times a cell (a barrier, then max(end) − min(start) over the ranks, the median of
//! the iterations), with the context switches of all the ranks' threads per iteration, the
//! barrier included (getrusage(2)). Three alternating rounds.
//!
//! ```sh
//! cargo run --release -p corecoll-bench --example short_call_switches -- 8   # 8 ranks
//! ```

use corecoll::{op, Team};
use corecoll_bench::measure::{switches, Who};
use std::time::Instant;

/// Iterations per round and form.
const ITERS: usize = 20_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let p: usize = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 8,
    };
    let team = Team::builder().ranks(p).build()?;
    let origin = Instant::now();
    let ns = || origin.elapsed().as_nanos() as u64;
    for round in 0..3 {
        for persistent in [false, true] {
            let results = team.run(|comm| {
                // Max keeps the value ordinary however many calls fold it.
                let mut v = [comm.rank() as f64];
                let mut stamps = Vec::with_capacity(ITERS);
                let before = switches(Who::Thread);
                if persistent {
                    comm.scope(|s| {
                        let mut r = s.allreduce_init(&mut v, op::Max)?;
                        for _ in 0..ITERS {
                            comm.barrier()?;
                            let start = ns();
                            r.start()?;
                            r.wait()?;
                            stamps.push((start, ns()));
                        }
                        Ok(())
                    })?;
                } else {
                    for _ in 0..ITERS {
                        comm.barrier()?;
                        let start = ns();
                        comm.allreduce(&mut v, op::Max)?;
                        stamps.push((start, ns()));
                    }
                }
                let switched = switches(Who::Thread) - before;
                Ok::<_, corecoll::Error>((stamps, switched))
            })?;
            let per_rank = results.into_iter().collect::<Result<Vec<_>, _>>()?;
            let mut times: Vec<u64> = (0..ITERS)
                .map(|i| {
                    let end = per_rank.iter().map(|r| r.0[i].1).max().unwrap_or(0);
                    let start = per_rank.iter().map(|r| r.0[i].0).min().unwrap_or(0);
                    end - start
                })
                .collect();
            times.sort_unstable();
            let switched: u64 = per_rank.iter().map(|r| r.1).sum();
            println!(
                "round {round}, {p} ranks, {}: median {:.2} µs, {:.1} switches per iteration",
                if persistent {
                    "persistent"
                } else {
                    "blocking  "
                },
                times[ITERS / 2] as f64 / 1000.0,
                switched as f64 / ITERS as f64
            );
        }
    }
    Ok(())
}
