//! `corecoll-bench --calibrate`: measures this machine's cost constants and writes them as a
//! [`Profile`] (JSON) that teams load (`CORECOLL_PROFILE`, `TeamBuilder::profile`).
//!
//! - **α and β per level.** A ping-pong between two ranks of a two-rank team, on a pair of
//!   cores of that level: two cores of one L3 group (`l3`), of one package in different L3
//!   groups (`package`), of different packages (`machine`); a level the machine lacks is
//!   recorded as not measured, and says why. Messages go through the crate's own
//!   `Comm::send` and `Comm::recv`, the calls the schedules make.
//! - **`oversubscribed`** is not a ping-pong: a chain allreduce on four ranks per core, in
//!   explicit blocks, fitted to the model's step counts (`busy` says how and why). The
//!   ping-pong of two ranks pinned to one core (passive waiting) is still run and kept in the
//!   level's `pingpong` record and in the tables, for comparison.
//!   Sizes are [`SIZES`] (8 B to 4 MiB); per size, a few warm-up round trips, then as many as
//!   fit in `--time` seconds (at least [`MIN_REPS`]), each timed alone; the size's time is the
//!   median of the half round trips.
//! - **The fit**, t(m) = α + βm, in two parts because of the kink at the switch from the
//!   eager copy to the rendezvous (`EAGER_MAX` = 1 KiB): α is the least-squares intercept over
//!   the eager sizes (up to 1 KiB), β the least-squares slope over the sizes from 64 KiB, where
//!   the per-byte cost dominates. R² is that model's over every size measured.
//! - **`mpi`** (feature `mpi`): the same ping-pong between two processes that `mpirun -np 2
//!   --bind-to none` starts from this executable (`--calibrate-mpi-worker`), with MPI's own
//!   send and receive; without the feature or without `mpirun`, not measured, said on stdout.
//! - **γ**: `op::Sum` folds over in-cache 64 KiB buffers of `f64` and of `u64`, in batches; the
//!   median batch time per byte.
//!
//! A full calibration takes about 5 s at the default `--time` of 0.1 s per size and level (and
//! per case of the busy pipeline).

mod busy;

use crate::cli::Args;
use crate::domain::fmt_bytes;
use crate::output::default_dir;
use crate::stats::Summary;
use corecoll::op::{self, Op};
use corecoll::profile::{Gamma, Level, LevelCosts};
use corecoll::unstable::EAGER_MAX;
use corecoll::{Comm, Pinning, Profile, Team, Topology, Wait};
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Message sizes of the ping-pong: powers of 4 from 8 B, the largest eager size, and 4 MiB.
pub const SIZES: [usize; 12] = [
    8,
    32,
    128,
    512,
    1 << 10,
    2 << 10,
    8 << 10,
    32 << 10,
    128 << 10,
    512 << 10,
    2 << 20,
    4 << 20,
];

/// Round trips before the timed ones, per size.
const WARMUP: u32 = 3;
/// Fewest timed round trips per size.
pub const MIN_REPS: u64 = 5;
/// Most timed round trips per size.
const MAX_REPS: u64 = 20_000;
/// The smallest size whose time enters β's fit.
const BETA_FROM: usize = 64 << 10;
/// Bytes of each γ buffer: in L1/L2 on any current core.
const GAMMA_BYTES: usize = 64 << 10;

/// The ping-pong's result at one size.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct SizeTime {
    /// Bytes per message.
    pub bytes: usize,
    /// Median half round trip, nanoseconds.
    pub median_ns: f64,
    /// Timed round trips.
    pub samples: u64,
}

/// Two ends of a ping-pong: the crate's ranks, or MPI processes.
pub trait Link {
    /// Sends `data` to the other end.
    fn send(&self, data: &[u8]) -> Result<(), String>;
    /// Receives exactly `buf.len()` bytes from the other end.
    fn recv(&self, buf: &mut [u8]) -> Result<(), String>;
    /// Sends a count.
    fn send_count(&self, n: u64) -> Result<(), String>;
    /// Receives a count.
    fn recv_count(&self) -> Result<u64, String>;
}

impl Link for Comm {
    fn send(&self, data: &[u8]) -> Result<(), String> {
        Comm::send(self, 1 - self.rank(), data).map_err(|e| e.to_string())
    }
    fn recv(&self, buf: &mut [u8]) -> Result<(), String> {
        Comm::recv(self, 1 - self.rank(), buf)
            .map(drop)
            .map_err(|e| e.to_string())
    }
    fn send_count(&self, n: u64) -> Result<(), String> {
        Comm::send(self, 1 - self.rank(), &[n]).map_err(|e| e.to_string())
    }
    fn recv_count(&self) -> Result<u64, String> {
        let mut n = [0u64];
        Comm::recv(self, 1 - self.rank(), &mut n).map_err(|e| e.to_string())?;
        Ok(n[0])
    }
}

/// The side that times: for each size, warm-up round trips, then the count of timed ones
/// (sent to the other side, from the warm-up's pace and `budget`), each timed alone.
pub fn ping(link: &impl Link, budget: Duration) -> Result<Vec<SizeTime>, String> {
    let mut buf = vec![0u8; SIZES[SIZES.len() - 1]];
    let mut out = Vec::with_capacity(SIZES.len());
    for &m in &SIZES {
        let b = &mut buf[..m];
        let start = Instant::now();
        for _ in 0..WARMUP {
            link.send(b)?;
            link.recv(b)?;
        }
        let pace = start.elapsed().as_secs_f64() / f64::from(WARMUP);
        let reps = ((budget.as_secs_f64() / pace.max(1e-9)) as u64).clamp(MIN_REPS, MAX_REPS);
        link.send_count(reps)?;
        let mut times = Vec::with_capacity(reps as usize);
        for _ in 0..reps {
            let t = Instant::now();
            link.send(b)?;
            link.recv(b)?;
            times.push(t.elapsed().as_nanos() as f64 / 2.0);
        }
        out.push(SizeTime {
            bytes: m,
            median_ns: median(&times),
            samples: reps,
        });
    }
    Ok(out)
}

/// The side that answers [`ping`].
pub fn pong(link: &impl Link) -> Result<(), String> {
    let mut buf = vec![0u8; SIZES[SIZES.len() - 1]];
    for &m in &SIZES {
        let b = &mut buf[..m];
        for _ in 0..WARMUP {
            link.recv(b)?;
            link.send(b)?;
        }
        for _ in 0..link.recv_count()? {
            link.recv(b)?;
            link.send(b)?;
        }
    }
    Ok(())
}

/// The median of `v` (the statistics' [`Summary`]); NaN for none.
fn median(v: &[f64]) -> f64 {
    Summary::of(v).map_or(f64::NAN, |s| s.median)
}

/// Least-squares line through `(x, y)`: (intercept, slope); `None` for fewer than two distinct
/// x.
fn line(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|&(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = points.iter().map(|&(x, y)| (x - mx) * (y - my)).sum();
    if points.len() < 2 || sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    Some((my - slope * mx, slope))
}

/// α (over the eager sizes) and β (from `BETA_FROM`) of the module documentation, with R²
/// over every size and the samples. α is at least 1 ns (the lemma divides by it), β at least
/// 0; where a part has too few sizes, α is the smallest size's time and β the slope between
/// the first and last sizes.
pub fn fit(times: &[SizeTime]) -> LevelCosts {
    let pts = |keep: &dyn Fn(usize) -> bool| -> Vec<(f64, f64)> {
        times
            .iter()
            .filter(|t| keep(t.bytes) && t.median_ns.is_finite())
            .map(|t| (t.bytes as f64, t.median_ns))
            .collect()
    };
    let all = pts(&|_| true);
    let alpha = line(&pts(&|m| m <= EAGER_MAX))
        .map(|(a, _)| a)
        .filter(|a| *a > 0.0)
        .or_else(|| all.first().map(|p| p.1))
        .unwrap_or(f64::NAN)
        .max(1.0);
    let beta = line(&pts(&|m| m >= BETA_FROM))
        .map(|(_, b)| b)
        .or_else(|| line(&[*all.first()?, *all.last()?]).map(|(_, b)| b))
        .unwrap_or(0.0)
        .max(0.0);
    let my = all.iter().map(|p| p.1).sum::<f64>() / all.len() as f64;
    let ss_tot: f64 = all.iter().map(|p| (p.1 - my).powi(2)).sum();
    let ss_res: f64 = all.iter().map(|p| (p.1 - alpha - beta * p.0).powi(2)).sum();
    let mut c = LevelCosts::measured(alpha, beta);
    c.r2 = (ss_tot > 0.0).then(|| 1.0 - ss_res / ss_tot);
    c.samples = times.iter().map(|t| t.samples).sum();
    c
}

/// The ping-pong on a two-rank team pinned to `cores` (OS indices) with `wait`.
fn measure_pair(cores: [usize; 2], wait: Wait, budget: Duration) -> Result<Vec<SizeTime>, String> {
    let team = Team::builder()
        .ranks(2)
        .pinning(Pinning::Cores(cores.to_vec()))
        .wait(wait)
        .profile(Profile::default())
        .build()
        .map_err(|e| e.to_string())?;
    let mut out = team
        .run(|comm| {
            if comm.rank() == 0 {
                ping(comm, budget)
            } else {
                pong(comm).map(|()| Vec::new())
            }
        })
        .map_err(|e| e.to_string())?;
    out.swap_remove(0)
}

/// A pair of cores (OS indices) of `level` on `t`, or why there is none.
fn pair_of(t: &Topology, level: Level) -> Result<[usize; 2], &'static str> {
    let leaves = t.leaves();
    let found = leaves.iter().enumerate().find_map(|(i, a)| {
        leaves[i + 1..].iter().find_map(|b| {
            let same = match level {
                Level::L3 => a.l3 == b.l3,
                Level::Package => a.package == b.package && a.l3 != b.l3,
                _ => a.package != b.package,
            };
            same.then_some([a.os_index, b.os_index])
        })
    });
    found.ok_or(match level {
        Level::L3 => "no L3 group with two cores on this machine",
        Level::Package => "no package with two L3 groups on this machine",
        _ => "one package on this machine",
    })
}

/// γ of `T`: median time per byte of batches of `op::Sum` folds over two in-cache buffers.
fn gamma<T: Copy + Send + Sync + 'static>(one: T, budget: Duration) -> Option<f64>
where
    op::Sum: Op<T>,
{
    const BATCH: u32 = 16;
    let n = GAMMA_BYTES / std::mem::size_of::<T>();
    let mut acc = vec![one; n];
    let rhs = vec![one; n];
    for _ in 0..BATCH {
        op::Sum.fold_right(&mut acc, black_box(&rhs));
    }
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 5 || (start.elapsed() < budget && times.len() < 100_000) {
        let t = Instant::now();
        for _ in 0..BATCH {
            op::Sum.fold_right(black_box(&mut acc), black_box(&rhs));
        }
        times.push(t.elapsed().as_nanos() as f64 / f64::from(BATCH) / GAMMA_BYTES as f64);
    }
    black_box(&acc);
    Some(median(&times))
}

/// What the `oversubscribed` level measured besides its constants.
struct Oversubscribed {
    /// The ping-pong of two ranks on one core, per size.
    pingpong: Vec<SizeTime>,
    /// The busy pipeline's cases.
    busy: Vec<busy::BusyTime>,
    /// The busy pipeline's ranks.
    ranks: usize,
}

/// The `oversubscribed` level: the busy pipeline's fit ([`busy`]), with γ of `profile` taken
/// off, carrying the ping-pong of two ranks on one core (passive waiting: every message waits
/// for a context switch) as its `pingpong` record.
fn oversubscribed(
    topology: &Topology,
    profile: &Profile,
    budget: Duration,
) -> Result<(LevelCosts, Oversubscribed), String> {
    let core = topology.leaves()[0].os_index;
    let pingpong = measure_pair([core, core], Wait::Passive, budget)?;
    let mut pp = fit(&pingpong);
    pp.note = format!("ping-pong, both ranks on core {core}");
    let cores: Vec<usize> = topology.leaves().iter().map(|l| l.os_index).collect();
    let (used, ranks) = busy::shape(&cores);
    let gamma = profile.gamma_ns(true);
    let times = busy::measure_busy(&cores, budget, |_| {})?;
    let mut c = busy::fit(&times, gamma);
    c.note = format!(
        "busy pipeline: chain allreduce of f64 on {ranks} ranks over cores {} ({} per core, \
         passive waits), {} cases (m, b), γ = {gamma:.4} ns/B taken off",
        used.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
        busy::RANKS_PER_CORE,
        times.len()
    );
    c.pingpong = Some(Box::new(pp));
    Ok((
        c,
        Oversubscribed {
            pingpong,
            busy: times,
            ranks,
        },
    ))
}

/// The path of `--profile-out`, or the default `profile.json` in `target/corecoll-bench`.
fn out_path(args: &Args) -> PathBuf {
    args.profile_out
        .clone()
        .unwrap_or_else(|| default_dir().join("profile.json"))
}

/// `--calibrate`: measures every level, prints the table, writes the profile.
pub fn main(args: &Args) -> Result<ExitCode, String> {
    if args.machine.is_some() {
        return Err(
            "--calibrate measures the detected machine; --machine describes another".into(),
        );
    }
    if !(args.time.is_finite() && args.time > 0.0) {
        return Err(format!("--time must be positive, not {}", args.time));
    }
    let budget = Duration::from_secs_f64(args.time);
    let topology = Topology::detect();
    let mut profile = Profile {
        host: corecoll::unstable::host_here(&topology),
        ..Profile::default()
    };
    println!(
        "calibrating on {} ({}): {:.3} s per size and level",
        profile.host.hostname.as_deref().unwrap_or("this machine"),
        profile.host.topology,
        args.time
    );
    let mut tables = Vec::new();
    for level in [Level::L3, Level::Package, Level::Machine] {
        let costs = match pair_of(&topology, level) {
            Ok(cores) => {
                let times = measure_pair(cores, Wait::Active, budget)?;
                let mut c = fit(&times);
                c.note = format!("cores {} and {}", cores[0], cores[1]);
                tables.push((level.name(), times));
                c
            }
            Err(why) => LevelCosts::not_measured(why),
        };
        profile.set_level(level, costs);
    }
    let (mpi, mpi_times) = mpi_level(args);
    if let Some(t) = mpi_times {
        tables.push(("mpi", t));
    }
    profile.set_level(Level::Mpi, mpi);
    // γ before the busy pipeline, whose fit takes the folds off with it.
    profile.gamma = Gamma {
        f64_sum_ns: gamma(1.0f64, budget),
        u64_sum_ns: gamma(1u64, budget),
    };
    let (costs, over) = oversubscribed(&topology, &profile, budget)?;
    tables.push(("oversub. pp", over.pingpong));
    profile.set_level(Level::Oversubscribed, costs.clone());

    print_table(&profile, &tables);
    busy::print_cases(&over.busy, &costs, profile.gamma_ns(true), over.ranks);
    if let Some(pp) = &costs.pingpong {
        busy::print_auto_blocks(&over.busy, &costs, pp, over.ranks);
    }
    let path = out_path(args);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&path, profile.to_json() + "\n")
        .map_err(|e| format!("{}: {e}", path.display()))?;
    println!(
        "wrote {} (load it with CORECOLL_PROFILE={} or TeamBuilder::profile)",
        path.display(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The summary: a row per level, the per-size medians of the measured ones, and γ.
fn print_table(profile: &Profile, tables: &[(&str, Vec<SizeTime>)]) {
    println!();
    println!(
        "{:<15} {:>10} {:>10} {:>8} {:>7} {:>8}  note",
        "level", "α (ns)", "β (ns/B)", "GB/s", "R²", "samples"
    );
    for level in Level::ALL {
        let Some(c) = profile.level(level) else {
            continue;
        };
        print_level(level.name(), c);
        if let Some(pp) = &c.pingpong {
            print_level("  ping-pong", pp);
        }
    }
    let g = |v: Option<f64>| v.map_or("-".into(), |g| format!("{g:.4} ns/B"));
    println!(
        "γ (op::Sum, {} KiB in cache): f64 {}, u64 {}",
        GAMMA_BYTES >> 10,
        g(profile.gamma.f64_sum_ns),
        g(profile.gamma.u64_sum_ns)
    );
    println!();
    let sizes: Vec<String> = SIZES.iter().map(|&m| fmt_bytes(m)).collect();
    println!("median one-way time (µs) by size");
    println!("{:<15} {}", "level", row(&sizes));
    for (level, times) in tables {
        let cells: Vec<String> = times
            .iter()
            .map(|t| format!("{:.2}", t.median_ns / 1e3))
            .collect();
        println!("{:<15} {}", level, row(&cells));
    }
    println!();
}

/// A row of the summary: `name`'s α, β, bandwidth, R², samples and note.
fn print_level(name: &str, c: &LevelCosts) {
    match (c.alpha_ns, c.beta_ns) {
        (Some(a), Some(b)) => println!(
            "{:<15} {:>10.1} {:>10.4} {:>8.2} {:>7} {:>8}  {}",
            name,
            a,
            b,
            if b > 0.0 { 1.0 / b } else { f64::INFINITY },
            c.r2.map_or("-".into(), |r| format!("{r:.3}")),
            c.samples,
            c.note
        ),
        _ => println!(
            "{:<15} {:>10} {:>10} {:>8} {:>7} {:>8}  not measured: {}",
            name, "-", "-", "-", "-", "-", c.note
        ),
    }
}

/// Cells right-aligned in columns of 8.
fn row(cells: &[String]) -> String {
    cells
        .iter()
        .map(|c| format!("{c:>8}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Without the `mpi` feature: not measured.
#[cfg(not(feature = "mpi"))]
fn mpi_level(_args: &Args) -> (LevelCosts, Option<Vec<SizeTime>>) {
    let why = "this corecoll-bench was built without the `mpi` feature";
    println!("mpi: not measured ({why})");
    (LevelCosts::not_measured(why), None)
}

/// With the `mpi` feature: the ping-pong between two processes under `mpirun`, or not
/// measured (said on stdout) if that cannot run.
#[cfg(feature = "mpi")]
fn mpi_level(args: &Args) -> (LevelCosts, Option<Vec<SizeTime>>) {
    match mpi::launch(args) {
        Ok(times) => {
            let mut c = fit(&times);
            c.note = "2 processes, mpirun --bind-to none".into();
            (c, Some(times))
        }
        Err(why) => {
            println!("mpi: not measured ({why})");
            (LevelCosts::not_measured(why), None)
        }
    }
}

#[cfg(feature = "mpi")]
pub mod mpi;

#[cfg(test)]
mod tests {
    use super::*;

    fn times(alpha: f64, beta: f64) -> Vec<SizeTime> {
        SIZES
            .iter()
            .map(|&m| SizeTime {
                bytes: m,
                // The rendezvous adds a second start-up above the eager limit.
                median_ns: alpha + beta * m as f64 + if m > EAGER_MAX { alpha } else { 0.0 },
                samples: 10,
            })
            .collect()
    }

    #[test]
    fn the_fit_takes_alpha_from_small_sizes_and_beta_from_large_ones() {
        let c = fit(&times(200.0, 0.05));
        let (a, b) = (c.alpha_ns.unwrap(), c.beta_ns.unwrap());
        assert!((a - 200.0).abs() < 1e-6, "{a}");
        assert!((b - 0.05).abs() < 1e-9, "{b}");
        assert_eq!(c.samples, 10 * SIZES.len() as u64);
        assert!(c.r2.unwrap() > 0.99);
        // Noise that makes the intercept negative still gives a positive α.
        let mut t = times(0.0, 0.05);
        t[0].median_ns = 0.0;
        assert!(fit(&t).alpha_ns.unwrap() >= 1.0);
    }

    #[test]
    fn lines_and_medians() {
        assert_eq!(line(&[(0.0, 1.0), (2.0, 5.0)]), Some((1.0, 2.0)));
        assert_eq!(line(&[(1.0, 1.0)]), None);
        assert_eq!(line(&[(1.0, 1.0), (1.0, 2.0)]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn pairs_of_each_level() {
        let t = Topology::synthetic_groups(vec![vec![2, 1], vec![1]]).unwrap();
        let l = t.leaves();
        assert_eq!(pair_of(&t, Level::L3), Ok([l[0].os_index, l[1].os_index]));
        assert_eq!(
            pair_of(&t, Level::Package),
            Ok([l[0].os_index, l[2].os_index])
        );
        assert_eq!(
            pair_of(&t, Level::Machine),
            Ok([l[0].os_index, l[3].os_index])
        );
        let flat = Topology::synthetic_groups(vec![vec![1, 1]]).unwrap();
        assert!(pair_of(&flat, Level::L3).is_err());
        assert!(pair_of(&flat, Level::Machine).is_err());
    }
}
