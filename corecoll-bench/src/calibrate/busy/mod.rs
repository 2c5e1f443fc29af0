//! The `oversubscribed` level measured the way `Block::Auto` uses it: a busy pipeline on more
//! ranks than cores, not a ping-pong.
//!
//! **Why.** A ping-pong of two ranks on one core pays one context switch per message (about
//! 1.6 µs on the 2-core machine of docs/tuning.md). In a pipeline of several ranks per core
//! every rank is busy: a hop waits until the receiver is scheduled among the other ranks of its
//! core, and each core serves all its ranks' copies and folds in turn. The block sweeps of
//! docs/tuning.md (8 ranks on 2 cores) put the start-up of such a hop near 20 µs, and that is
//! the α that `Block::Auto` (the pipelining lemma, Träff 2021 §1.2) needs for an
//! oversubscribed team; a profile carrying the ping-pong's α made its blocks far too small.
//!
//! **What runs.** A team of [`RANKS_PER_CORE`] ranks per core on up to [`MAX_CORES`] of the
//! machine's cores (8 ranks on 2 cores here), pinned round-robin (rank r on core r mod k, as
//! `Pinning::Compact` places a bench's oversubscribed team) with `Wait::Passive`, as a team with
//! more ranks than cores waits. It runs the chain allreduce (`Algorithm::Chain`) of `f64` sums
//! with an explicit block, for the [`cases`]: every vector size of [`BYTES`] and block count
//! of [`BLOCKS`] whose block is at most `Block::Auto`'s cap of 512 KiB (the blocks it can pick):
//! the pipeline whose step count the model gives exactly, 2(p − 2 + b) steps of
//! α + β·m/b (docs/model.md), plus the folds of the reduce half. Timing is the bench's own
//! (`measure`: a barrier before each call, the slowest rank). The cases run in [`PASSES`]
//! passes of `--time`/[`PASSES`] each, every pass through all cases (the odd ones in reverse
//! order), and a case's time is the least of its passes' medians: a slow spell of a shared
//! machine, which lasts seconds, then spoils one pass of a case rather than the case (the
//! bench's `--repeat` does the same).
//!
//! **The model.** For each case the simulator (`corecoll::sim`) replays the same schedule under
//! three unit models (α = 1, β = 1, γ = 1, the others 0) and so gives the coefficients of
//! T = A·α + B·β + G·γ: A is the steps on the critical path, B its bytes, G the bytes folded on
//! it. For the chain A = 2(p − 2 + b) and B ≈ A·m/b (the last block is a few elements short).
//! The times are linear in α, β and γ for this schedule (checked per case: a mixed model must
//! give the sum of the parts).
//!
//! **The fit.** γ comes from the calibration's own fold measurement and is taken off; B and G
//! are both proportional to m/b, so the times alone cannot tell β from γ. What is left, per
//! step, is a line: (T − G·γ)/A = α + β·(B/A), the time of a step against the bytes it moves.
//! On a busy machine that line moves with the vector: the ranks' vectors together (8 × 4 MiB
//! here) leave the caches, and every step of a long vector is slower whatever its block. The
//! lemma picks b for a given m, so it needs what a step costs as the block changes *at a fixed
//! m*. So the fit is least squares with a line per vector size and one slope for all (the
//! within-size regression, [`fit_lines`]): β is that common slope, and α the mean of the
//! sizes' intercepts; each case weighs the same, whatever its number of steps. R² is that
//! model's (a line per size) over the time per step. α is at least 1 ns, β at least 0. A
//! single line through every case, tried first, let the long vectors' slowness pass for a per-
//! byte cost and made blocks twice too many (docs/calibration.md).

use super::median;
use crate::domain::fmt_bytes;
use crate::measure::{measure, Kernel, Timing};
use corecoll::algorithm::Any;
use corecoll::op;
use corecoll::profile::LevelCosts;
use corecoll::sim::{self, Case, Model, Ports};
use corecoll::unstable::MAX_AUTO_BLOCK;
use corecoll::{Algorithm, Block, Comm, Pinning, Profile, Team, Wait};
use std::time::Duration;

/// Ranks per core of the busy pipeline. Four is the oversubscription the built-in decision
/// tables and the block sweeps were measured at (8 ranks on 2 cores, docs/tuning.md), so the α
/// measured here is the one those teams run with; it is also the upper end of what the
/// pipelines are run at in practice (twice the cores is the lower), and the more ranks share a
/// core, the longer a busy hop waits.
pub const RANKS_PER_CORE: usize = 4;

/// Most cores the busy pipeline uses: the cost per hop depends on the ranks per core, not on
/// the number of cores, and a chain of 4 × 64 ranks would mostly measure its own fill.
pub const MAX_CORES: usize = 8;

/// Vector sizes m of the busy pipeline, bytes per rank: from where `Block::Auto` starts to cut
/// blocks on an oversubscribed team to where its 512 KiB cap takes over.
pub const BYTES: [usize; 3] = [128 << 10, 1 << 20, 4 << 20];

/// Block counts b of the busy pipeline: around the lemma's b* = √(6βm/α) for the chain on 8
/// ranks (2 to 10 blocks from 128 KiB to 4 MiB at α = 20 µs, β = 0.07 ns/B; 3 to 18 at
/// α = 30 µs, β = 0.37 ns/B), and beyond on both sides.
pub const BLOCKS: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// The cases (m bytes, b blocks): [`BYTES`] × [`BLOCKS`] with m/b at most `Block::Auto`'s cap
/// ([`MAX_AUTO_BLOCK`]), so the fit covers the blocks `Block::Auto` can choose and no others.
pub fn cases() -> Vec<(usize, usize)> {
    BYTES
        .iter()
        .flat_map(|&m| BLOCKS.iter().map(move |&b| (m, b)))
        .filter(|&(m, b)| m / b <= MAX_AUTO_BLOCK)
        .collect()
}

/// Passes over the cases (module documentation).
pub const PASSES: usize = 3;

/// Bytes per element: the pipeline sums `f64`.
const ELEM: usize = std::mem::size_of::<f64>();

/// One case of the busy pipeline: what ran, how long it took, and the model's coefficients.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BusyTime {
    /// Bytes per rank, m.
    pub bytes: usize,
    /// Pipeline blocks, b.
    pub blocks: usize,
    /// The block, elements (`Block::Elements`).
    pub block: usize,
    /// Median call, nanoseconds.
    pub median_ns: f64,
    /// Timed calls.
    pub samples: u64,
    /// The model's coefficients of α, β and γ for this case.
    pub coeffs: Coeffs,
}

/// The coefficients of T = A·α + B·β + G·γ for one case: steps on the critical path, bytes
/// moved on it, bytes folded on it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Coeffs {
    /// A: steps.
    pub alpha: f64,
    /// B: bytes.
    pub beta: f64,
    /// G: bytes folded.
    pub gamma: f64,
}

impl Coeffs {
    /// The model's time for these constants.
    pub fn time(&self, alpha_ns: f64, beta_ns: f64, gamma_ns: f64) -> f64 {
        self.alpha * alpha_ns + self.beta * beta_ns + self.gamma * gamma_ns
    }
}

/// Elements per block for `blocks` pipeline blocks of `n` elements: the schedules cut
/// ⌊n/B⌋ + 1 blocks, so B = ⌊n/b⌋ + 1 gives b of them, the last a few elements short (n at
/// least b·(b − 1), which every case here is by far).
pub fn block_for(n: usize, blocks: usize) -> usize {
    n / blocks.max(1) + 1
}

/// The chain allreduce of `n` `f64` with blocks of `block` on `p` ranks, as the simulator
/// sees it.
fn chain_case(p: usize, n: usize, block: usize) -> Case {
    let alg = Algorithm::Chain {
        block: Block::Elements(block),
    };
    Case {
        elem_bytes: ELEM,
        ..Case::new(Any::Allreduce(alg), p, n)
    }
}

/// The model's coefficients of the chain allreduce of `n` `f64` in blocks of `block` on `p`
/// ranks, from the simulator under the three unit models; an error if the schedule's time is
/// not their sum under a mixed model (the fit would not apply).
pub fn coeffs(p: usize, n: usize, block: usize) -> Result<Coeffs, String> {
    let case = chain_case(p, n, block);
    let time = |alpha_ns, beta_ns, gamma_ns| {
        let model = Model {
            alpha_ns,
            beta_ns,
            gamma_ns,
            ports: Ports::Bidirectional,
        };
        sim::simulate(&case, &model)
            .map(|pr| pr.time_ns)
            .map_err(|e| format!("simulating the chain on {p} ranks: {e}"))
    };
    let c = Coeffs {
        alpha: time(1.0, 0.0, 0.0)?,
        beta: time(0.0, 1.0, 0.0)?,
        gamma: time(0.0, 0.0, 1.0)?,
    };
    // A mixed model of the magnitudes measured: steps of 10 µs, 0.1 ns/B, 0.05 ns/B.
    let (a, b, g) = (10_000.0, 0.1, 0.05);
    let mixed = time(a, b, g)?;
    let sum = c.time(a, b, g);
    if (mixed - sum).abs() > 1e-9 * sum.max(1.0) {
        return Err(format!(
            "the chain on {p} ranks in blocks of {block} is not linear in α, β, γ \
             ({mixed} ns against {sum} ns)"
        ));
    }
    Ok(c)
}

/// Lines of one slope, one per group ([`fit_lines`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Lines {
    /// The common slope.
    pub slope: f64,
    /// Each group's intercept, in order of the groups' first points.
    pub intercepts: Vec<(usize, f64)>,
    /// R² of the lines over every point (`None` if the points do not vary).
    pub r2: Option<f64>,
}

/// Least squares with a line per group and one slope for all: `points` are (group, x, y). A
/// group whose x do not vary adds to its intercept only; with no x varying anywhere the slope
/// is 0. `None` for no points.
pub fn fit_lines(points: &[(usize, f64, f64)]) -> Option<Lines> {
    let mut groups: Vec<usize> = Vec::new();
    for &(g, _, _) in points {
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let means: Vec<(f64, f64)> = groups
        .iter()
        .map(|&g| {
            let (n, sx, sy) = points
                .iter()
                .filter(|p| p.0 == g)
                .fold((0.0, 0.0, 0.0), |(n, sx, sy), p| {
                    (n + 1.0, sx + p.1, sy + p.2)
                });
            (sx / n, sy / n)
        })
        .collect();
    let mean_of = |g: usize| means[groups.iter().position(|&h| h == g).expect("a group")];
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for &(g, x, y) in points {
        let (mx, my) = mean_of(g);
        sxx += (x - mx) * (x - mx);
        sxy += (x - mx) * (y - my);
    }
    if groups.is_empty() {
        return None;
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let intercepts: Vec<(usize, f64)> = groups
        .iter()
        .zip(&means)
        .map(|(&g, &(mx, my))| (g, my - slope * mx))
        .collect();
    let n = points.len() as f64;
    let my = points.iter().map(|p| p.2).sum::<f64>() / n;
    let ss_tot: f64 = points.iter().map(|p| (p.2 - my).powi(2)).sum();
    let ss_res: f64 = points
        .iter()
        .map(|&(g, x, y)| {
            let (mx, gy) = mean_of(g);
            (y - (gy - slope * mx) - slope * x).powi(2)
        })
        .sum();
    Some(Lines {
        slope,
        intercepts,
        r2: (ss_tot > 0.0).then(|| 1.0 - ss_res / ss_tot),
    })
}

/// The per-step points of the busy cases with `gamma_ns` taken off: (bytes per rank, bytes a
/// step moves, time of a step).
fn step_points(times: &[BusyTime], gamma_ns: f64) -> Vec<(usize, f64, f64)> {
    times
        .iter()
        .filter(|t| t.median_ns.is_finite() && t.coeffs.alpha > 0.0)
        .map(|t| {
            let c = &t.coeffs;
            (
                t.bytes,
                c.beta / c.alpha,
                (t.median_ns - c.gamma * gamma_ns) / c.alpha,
            )
        })
        .collect()
}

/// The fit of the module documentation: α and β from the busy cases with `gamma_ns` taken
/// off, R² of the lines per size, and the samples. With a slope below 0 (noise), β is 0 and
/// the intercepts are the sizes' mean times per step.
pub fn fit(times: &[BusyTime], gamma_ns: f64) -> LevelCosts {
    let pts = step_points(times, gamma_ns);
    let mean =
        |l: &Lines| l.intercepts.iter().map(|i| i.1).sum::<f64>() / l.intercepts.len() as f64;
    let (alpha, beta, r2) = match fit_lines(&pts) {
        Some(l) if l.slope >= 0.0 => (mean(&l), l.slope, l.r2),
        Some(_) => {
            let flat: Vec<(usize, f64, f64)> = pts.iter().map(|&(g, _, y)| (g, 0.0, y)).collect();
            let l = fit_lines(&flat).expect("the same points");
            (mean(&l), 0.0, l.r2)
        }
        None => (f64::NAN, 0.0, None),
    };
    let alpha = if alpha.is_finite() {
        alpha.max(1.0)
    } else {
        f64::NAN
    };
    let mut c = LevelCosts::measured(alpha, beta);
    c.r2 = r2;
    c.samples = times.iter().map(|t| t.samples).sum();
    c
}

/// Per vector size: its own line through its cases (intercept and slope, ns and ns/B), for the
/// printout.
fn own_lines(times: &[BusyTime], gamma_ns: f64) -> Vec<(usize, Option<(f64, f64)>)> {
    let pts = step_points(times, gamma_ns);
    BYTES
        .iter()
        .map(|&m| {
            let mine: Vec<(f64, f64)> = pts
                .iter()
                .filter(|p| p.0 == m)
                .map(|p| (p.1, p.2))
                .collect();
            (m, super::line(&mine))
        })
        .collect()
}

/// The team of the busy pipeline on `cores` (OS indices of the machine's cores): the cores
/// it uses (at most [`MAX_CORES`]) and its ranks.
pub fn shape(cores: &[usize]) -> (Vec<usize>, usize) {
    let used: Vec<usize> = cores.iter().copied().take(MAX_CORES).collect();
    let ranks = RANKS_PER_CORE * used.len();
    (used, ranks)
}

/// One rank's chain allreduce of one case.
struct ChainCall<'c> {
    comm: &'c Comm,
    buf: Vec<f64>,
    block: usize,
}

impl Kernel for ChainCall<'_> {
    fn call(&mut self) -> Result<(), String> {
        let alg = Algorithm::Chain {
            block: Block::Elements(self.block),
        };
        // Zeros stay zeros, so repeated sums neither overflow nor slow down.
        self.comm
            .allreduce_with(&mut self.buf, op::Sum, alg)
            .map_err(|e| e.to_string())
    }
}

/// Runs every case of [`cases`] on a team of [`shape`]'s ranks over `cores`,
/// in [`PASSES`] passes sharing `budget` of timed calls per case; a case's time is its best
/// pass's median, its samples those of every pass. `progress` is told each pass as it ends.
pub fn measure_busy(
    cores: &[usize],
    budget: Duration,
    mut progress: impl FnMut(usize),
) -> Result<Vec<BusyTime>, String> {
    let (used, p) = shape(cores);
    if used.is_empty() {
        return Err("no core to run the busy pipeline on".into());
    }
    let team = Team::builder()
        .ranks(p)
        .pinning(Pinning::Cores(used))
        .wait(Wait::Passive)
        .profile(Profile::default())
        .build()
        .map_err(|e| e.to_string())?;
    let timing = Timing {
        budget: budget / PASSES as u32,
        ..Timing::default()
    };
    let mut out = Vec::new();
    for (bytes, blocks) in cases() {
        let n = bytes / ELEM;
        let block = block_for(n, blocks);
        out.push(BusyTime {
            bytes,
            blocks,
            block,
            median_ns: f64::INFINITY,
            samples: 0,
            coeffs: coeffs(p, n, block)?,
        });
    }
    for pass in 0..PASSES {
        let order: Vec<usize> = if pass % 2 == 0 {
            (0..out.len()).collect()
        } else {
            (0..out.len()).rev().collect()
        };
        for i in order {
            let t = &mut out[i];
            let (n, block) = (t.bytes / ELEM, t.block);
            let m = measure(&team, &timing, false, |comm| {
                Ok(Box::new(ChainCall {
                    comm,
                    buf: vec![0.0; n],
                    block,
                }))
            })
            .map_err(|e| {
                format!(
                    "busy pipeline, {} in {} blocks: {e}",
                    fmt_bytes(t.bytes),
                    t.blocks
                )
            })?;
            t.median_ns = t.median_ns.min(median(&m.times) * 1e9);
            t.samples += m.times.len() as u64;
        }
        progress(pass);
    }
    Ok(out)
}

/// The busy cases as a table: per case the measured median, the fit's prediction and their
/// ratio, and the time per step.
pub fn print_cases(times: &[BusyTime], fitted: &LevelCosts, gamma_ns: f64, p: usize) {
    let (a, b) = (
        fitted.alpha_ns.unwrap_or(f64::NAN),
        fitted.beta_ns.unwrap_or(f64::NAN),
    );
    println!(
        "busy pipeline: chain allreduce on {p} ranks, T = A·α + B·β + G·γ (γ = {gamma_ns:.4} ns/B)"
    );
    println!(
        "{:>8} {:>4} {:>9} {:>6} {:>11} {:>11} {:>7} {:>10}",
        "m", "b", "m/b", "steps", "median µs", "model µs", "ratio", "µs/step"
    );
    for t in times {
        let model = t.coeffs.time(a, b, gamma_ns);
        println!(
            "{:>8} {:>4} {:>9} {:>6} {:>11.1} {:>11.1} {:>7.2} {:>10.2}",
            fmt_bytes(t.bytes),
            t.blocks,
            fmt_bytes(t.block * ELEM),
            t.coeffs.alpha,
            t.median_ns / 1e3,
            model / 1e3,
            t.median_ns / model,
            t.median_ns / t.coeffs.alpha / 1e3
        );
    }
    for (m, l) in own_lines(times, gamma_ns) {
        if let Some((a, b)) = l {
            println!(
                "{:>8} alone: α {:.1} µs, β {:.4} ns/B (its own line)",
                fmt_bytes(m),
                a / 1e3,
                b
            );
        }
    }
    println!();
}

/// The blocks `Block::Auto` gives the chain allreduce of `bytes` of `f64` on `p` ranks under
/// `costs` (α and β; γ plays no part in the lemma): the block in bytes and the count.
pub fn auto_block(p: usize, bytes: usize, costs: &LevelCosts) -> Option<(usize, usize)> {
    let n = bytes / ELEM;
    let model = Model {
        alpha_ns: costs.alpha_ns?,
        beta_ns: costs.beta_ns?,
        gamma_ns: 0.0,
        ports: Ports::Bidirectional,
    };
    let case = Case {
        elem_bytes: ELEM,
        ..Case::new(
            Any::Allreduce(Algorithm::Chain { block: Block::Auto }),
            p,
            n,
        )
    };
    let block = sim::simulate(&case, &model).ok()?.block.max(1);
    Some((block * ELEM, n / block + 1))
}

/// For each size of [`BYTES`]: the block count that was fastest among the busy cases, and
/// the counts `Block::Auto` picks from the busy fit, from the ping-pong and from the built-in
/// constants (`select::Costs::OVERSUBSCRIBED`, what a profile without the level gives).
pub fn print_auto_blocks(times: &[BusyTime], busy: &LevelCosts, pingpong: &LevelCosts, p: usize) {
    let builtin = {
        let r = Profile::default().resolve(corecoll::profile::Level::Oversubscribed);
        LevelCosts::measured(r.alpha_ns, r.beta_ns)
    };
    println!("chain allreduce on {p} ranks: blocks b, fastest measured and Block::Auto's");
    println!(
        "{:>8} {:>9} {:>13} {:>13} {:>13}",
        "m", "fastest", "busy fit", "ping-pong", "built-in"
    );
    let auto = |m: usize, c: &LevelCosts| {
        auto_block(p, m, c).map_or("-".into(), |(bytes, b)| {
            format!("{b} × {}", fmt_bytes(bytes))
        })
    };
    for &m in &BYTES {
        let best = times
            .iter()
            .filter(|t| t.bytes == m)
            .min_by(|x, y| x.median_ns.total_cmp(&y.median_ns))
            .map_or("-".into(), |t| t.blocks.to_string());
        println!(
            "{:>8} {:>9} {:>13} {:>13} {:>13}",
            fmt_bytes(m),
            best,
            auto(m, busy),
            auto(m, pingpong),
            auto(m, &builtin)
        );
    }
    println!();
}

#[cfg(test)]
mod tests;
