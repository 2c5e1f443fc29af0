//! Which algorithm wins between MPI processes, by size: the measurements behind the `Auto`
//! rules of the crate's collectives between processes (feature `mpi`), whose thresholds are MPICH's with
//! guessed constants until measured here.
//!
//! ```text
//! cargo build --release -p corecoll-bench --features mpi --example process_sweep
//! mpirun -np 2 --bind-to none target/release/examples/process_sweep
//! mpirun -np 4 --oversubscribe --bind-to none target/release/examples/process_sweep \
//!     --collective allreduce --max-bytes 1MiB --csv p4.csv
//! ```
//!
//! (As root, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.)
//!
//! **What is timed**, between the P processes of the job (a hybrid team of one thread per process
//! over `MPI_COMM_WORLD`), on vectors of `u64` with `op::Sum`, at sizes from 8 bytes to
//! 16 MiB in steps of ×4 (and the largest size itself):
//! - allreduce: every algorithm of `Algorithm::ALL` but the shared-memory ones (`Direct`,
//!   `Hierarchical`, `HierarchicalDirect`), `Auto` among them, in place; beside them
//!   `MPI_Allreduce` (rsmpi's `all_reduce_into`, out of place);
//! - broadcast from process 0: every `Broadcast::ALL` but the shared-memory ones, beside
//!   `MPI_Bcast`;
//! - reduce to process 0: every `Reduce::ALL` but the shared-memory ones (in place: the
//!   others' buffers stay unchanged), beside `MPI_Reduce` (out of place).
//!
//! The lists come from the crate's `ALL` arrays, so an algorithm added there (such as one
//! that calls MPI's own collective) appears here without a change.
//!
//! **How:** the shared timing method (`examples/common/timing.rs`: a barrier before every
//! repetition, the slowest process's time by `MPI_Allreduce` with `MPI_MAX` outside the timed
//! region, the methods of one size in turn per round, minimum and median, a time budget per
//! cell). The buffer is refilled before every repetition, outside the timed region, for every
//! method alike. Before the timed rounds every cell is checked once against the exact result
//! on every process (the sum, the root's vector, and for reduce the non-roots' unchanged
//! input); a wrong result, or an error from the crate (the same on every process), marks the
//! cell `WRONG` and makes the exit code non-zero.
//!
//! **Output** (process 0, markdown): per collective a table of the minima and one of the
//! medians, one row per size: each method's time in µs, the best method (crate or MPI, `Auto`
//! aside), and `auto/best`, `Auto`'s time over the best one's; then a line listing, per size,
//! the best of the crate's own algorithms by the minimum (what an `Auto` rule should pick).
//! Progress goes to stderr; `--csv FILE` writes every cell.
//!
//! Options: `--collective allreduce|broadcast|reduce|all` (default `all`), `--sizes
//! 8,1KiB,64KiB,…` (bytes; rounded down to whole `u64`), `--max-bytes SIZE` (16MiB; caps the
//! default sizes), `--budget SECONDS` (0.2 per cell), `--min-reps N` (3), `--max-reps N`
//! (1000), `--csv FILE`.

// The timing method shared with the other MPI examples; each uses part of it.
#[allow(dead_code)]
#[path = "common/timing.rs"]
mod timing;

use corecoll::algorithm::{Broadcast, Reduce};
use corecoll::Collective;
use corecoll::{op, Algorithm, Comm, Team};
use mpi::collective::SystemOperation;
use mpi::environment::Threading;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;
use timing::{shown, Budget, Cell};

/// The root of broadcast and reduce.
const ROOT: usize = 0;

/// Process `r`'s element `i`: small enough that no sum over many processes overflows.
fn input(r: usize, i: usize) -> u64 {
    ((i % 1009) * (r + 1) + r) as u64
}

/// The exact sum over `p` processes of element `i`.
fn sum(p: usize, i: usize) -> u64 {
    ((i % 1009) * p * (p + 1) / 2 + p * (p - 1) / 2) as u64
}

/// What a non-root's buffer holds before a broadcast: never a value of the root's input.
fn stale(i: usize) -> u64 {
    u64::MAX - i as u64
}

/// The MPI library's own collective that does `c`'s job, by its name, for the collectives of
/// this sweep: allreduce, broadcast and reduce (`None` for the others).
fn mpi_name(c: Collective) -> Option<&'static str> {
    match c {
        Collective::Allreduce => Some("MPI_Allreduce"),
        Collective::Broadcast => Some("MPI_Bcast"),
        Collective::Reduce => Some("MPI_Reduce"),
        _ => None,
    }
}

/// The methods of `c`, in column order: the crate's algorithms that run between processes
/// (every one of the `ALL` list but those that need shared memory; `Auto` first), then the
/// MPI library's collective; `None` for a collective this sweep does not time.
fn methods(c: Collective) -> Option<Vec<Method>> {
    let mut m: Vec<Method> = match c {
        Collective::Allreduce => Algorithm::ALL
            .into_iter()
            .filter(|a| !a.needs_shared_memory())
            .map(Method::Allreduce)
            .collect(),
        Collective::Broadcast => Broadcast::ALL
            .into_iter()
            .filter(|a| !a.needs_shared_memory())
            .map(Method::Broadcast)
            .collect(),
        Collective::Reduce => Reduce::ALL
            .into_iter()
            .filter(|a| !a.needs_shared_memory())
            .map(Method::Reduce)
            .collect(),
        _ => return None,
    };
    m.push(Method::Mpi(c));
    Some(m)
}

/// The collectives this sweep times, in the library's order.
fn swept() -> Vec<Collective> {
    Collective::ALL
        .into_iter()
        .filter(|&c| mpi_name(c).is_some())
        .collect()
}

/// One way of doing a collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    /// The MPI library's own collective.
    Mpi(Collective),
    /// The crate's allreduce between processes.
    Allreduce(Algorithm),
    /// The crate's broadcast between processes.
    Broadcast(Broadcast),
    /// The crate's reduce between processes.
    Reduce(Reduce),
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Mpi(c) => mpi_name(c).unwrap_or("MPI"),
            Method::Allreduce(a) => a.name(),
            Method::Broadcast(a) => a.name(),
            Method::Reduce(a) => a.name(),
        }
    }

    /// Whether this is the crate's `Auto`.
    fn is_auto(self) -> bool {
        matches!(
            self,
            Method::Allreduce(Algorithm::Auto)
                | Method::Broadcast(Broadcast::Auto)
                | Method::Reduce(Reduce::Auto)
        )
    }
}

/// Command-line options (see the module docs).
struct Options {
    collectives: Vec<Collective>,
    sizes: Option<Vec<usize>>,
    max_bytes: usize,
    budget: Budget,
    csv: Option<String>,
}

impl Options {
    fn parse() -> Result<Options, String> {
        let mut o = Options {
            collectives: swept(),
            sizes: None,
            max_bytes: 16 << 20,
            budget: Budget {
                seconds: 0.2,
                min_reps: 3,
                max_reps: 1000,
            },
            csv: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut value = || args.next().ok_or(format!("{a} needs a value"));
            let num = |s: String| s.parse::<usize>().map_err(|e| format!("{a} {s}: {e}"));
            match a.as_str() {
                "--collective" => {
                    let v = value()?;
                    o.collectives = match v.as_str() {
                        "all" => swept(),
                        name => vec![Collective::from_name(name)
                            .filter(|&c| mpi_name(c).is_some())
                            .ok_or(format!(
                                "--collective {name}: allreduce, broadcast, reduce or all"
                            ))?],
                    }
                }
                "--sizes" => {
                    o.sizes = Some(
                        value()?
                            .split(',')
                            .map(timing::bytes)
                            .collect::<Result<_, _>>()
                            .map_err(|e| format!("{a} {e}"))?,
                    )
                }
                "--max-bytes" => o.max_bytes = timing::bytes(&value()?)?,
                "--budget" => {
                    let s = value()?;
                    o.budget.seconds = s.parse().map_err(|e| format!("--budget {s}: {e}"))?
                }
                "--min-reps" => o.budget.min_reps = num(value()?)?.max(1),
                "--max-reps" => o.budget.max_reps = num(value()?)?.max(1),
                "--csv" => o.csv = Some(value()?),
                _ => return Err(format!("unknown argument {a} (see the example's docs)")),
            }
        }
        o.budget.max_reps = o.budget.max_reps.max(o.budget.min_reps);
        Ok(o)
    }

    /// The element counts of the sweep: the given sizes, or 8 bytes × 4ᵏ up to `max_bytes`
    /// and `max_bytes` itself; sizes in whole `u64`, each once, ascending.
    fn counts(&self) -> Vec<usize> {
        let mut bytes = match &self.sizes {
            Some(s) => s.clone(),
            None => {
                let mut v: Vec<usize> = std::iter::successors(Some(8usize), |b| b.checked_mul(4))
                    .take_while(|&b| b <= self.max_bytes)
                    .collect();
                v.push(self.max_bytes);
                v
            }
        };
        bytes.iter_mut().for_each(|b| *b /= 8);
        bytes.sort_unstable();
        bytes.dedup();
        bytes
    }
}

/// What a cell needs: the communicators, this process's input (for the largest count), the
/// result buffer, and the row's collective and count.
struct Bench<'a> {
    world: &'a SimpleCommunicator,
    comm: &'a Comm,
    send: Vec<u64>,
    buf: Vec<u64>,
    collective: Collective,
    n: usize,
}

impl Bench<'_> {
    /// One call of `method` on the first `n` elements. The crate's error (the same on every
    /// process: the call check has agreed on the call) comes back as its message.
    fn run(&mut self, method: Method) -> Result<(), String> {
        let n = self.n;
        let (send, buf) = (&self.send[..n], &mut self.buf[..n]);
        let root = self.world.process_at_rank(ROOT as i32);
        let result = match method {
            Method::Mpi(Collective::Allreduce) => {
                self.world
                    .all_reduce_into(send, buf, SystemOperation::sum());
                Ok(())
            }
            Method::Mpi(Collective::Broadcast) => {
                root.broadcast_into(buf);
                Ok(())
            }
            Method::Mpi(Collective::Reduce) => {
                if self.comm.rank() == ROOT {
                    root.reduce_into_root(send, buf, SystemOperation::sum());
                } else {
                    root.reduce_into(send, SystemOperation::sum());
                }
                Ok(())
            }
            Method::Mpi(_) => unreachable!("the sweep has no other collective"),
            Method::Allreduce(alg) => self.comm.allreduce_with(buf, op::Sum, alg),
            Method::Broadcast(alg) => self.comm.broadcast_with(buf, ROOT, alg),
            Method::Reduce(alg) => self.comm.reduce_with(buf, op::Sum, ROOT, alg),
        };
        result.map_err(|e| {
            format!(
                "{} {} at {n} elements: {e}",
                self.collective.name(),
                method.name()
            )
        })
    }

    /// Refills the buffer (outside the timed region): the input for allreduce and reduce, the
    /// root's input or stale values for broadcast.
    fn reset(&mut self) {
        let n = self.n;
        if self.collective == Collective::Broadcast && self.comm.rank() != ROOT {
            self.buf[..n]
                .iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = stale(i));
        } else {
            self.buf[..n].copy_from_slice(&self.send[..n]);
        }
    }

    /// The exact content of this process's buffer after the collective.
    fn expected(&self, i: usize) -> u64 {
        let (rank, p) = (self.comm.rank(), self.comm.size());
        match self.collective {
            Collective::Allreduce => sum(p, i),
            Collective::Broadcast => input(ROOT, i),
            Collective::Reduce if rank == ROOT => sum(p, i),
            Collective::Reduce => input(rank, i),
            _ => unreachable!("the sweep has no other collective"),
        }
    }

    /// The largest of every process's `x` (known to every process).
    fn max_over_processes(world: &SimpleCommunicator, x: f64) -> f64 {
        let mut m = 0.0f64;
        world.all_reduce_into(&x, &mut m, SystemOperation::max());
        m
    }
}

impl timing::Bench for Bench<'_> {
    type Method = Method;

    /// Whether one untimed call gives the exact result on every process (every process can
    /// compute every process's input); a crate error counts as wrong.
    fn check(&mut self, method: Method) -> bool {
        self.reset();
        self.world.barrier();
        let wrong = match self.run(method) {
            Ok(()) => (0..self.n)
                .filter(|&i| self.buf[i] != self.expected(i))
                .count(),
            Err(e) => {
                if self.comm.rank() == 0 {
                    eprintln!("process_sweep: {e}");
                }
                1
            }
        };
        Self::max_over_processes(self.world, wrong as f64) == 0.0
    }

    /// The slowest process's time of one call, after a barrier (an error was reported by the
    /// check and is the same on every process, so every process goes on alike).
    fn time(&mut self, method: Method) -> f64 {
        self.reset();
        let world = self.world;
        timing::timed(
            || world.barrier(),
            || {
                let _ = self.run(method);
            },
            |t| Self::max_over_processes(world, t),
        )
    }
}

/// The index of the fastest correct cell among `candidates` by `stat`.
fn fastest(
    cells: &[Cell],
    candidates: impl Iterator<Item = usize>,
    stat: fn(&Cell) -> f64,
) -> Option<usize> {
    candidates
        .filter(|&j| cells[j].correct)
        .min_by(|&a, &b| stat(&cells[a]).total_cmp(&stat(&cells[b])))
}

/// One collective's rows: (count, one cell per method).
type Rows = Vec<(usize, Vec<Cell>)>;

/// The table of one statistic: a row per size, a column per method, the best method (`Auto`
/// aside) and `Auto` over it.
fn table(methods: &[Method], rows: &Rows, stat: fn(&Cell) -> f64) -> String {
    let auto = methods.iter().position(|m| m.is_auto());
    let mut header = vec!["bytes".to_string(), "count".to_string()];
    header.extend(methods.iter().map(|m| m.name().to_string()));
    header.push("best".to_string());
    header.push("auto/best".to_string());
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|(n, cells)| {
            let mut l = vec![timing::show_bytes(n * 8), n.to_string()];
            l.extend(cells.iter().map(|c| shown(c, stat)));
            let best = fastest(cells, (0..cells.len()).filter(|&j| Some(j) != auto), stat);
            l.push(best.map_or("-".to_string(), |j| methods[j].name().to_string()));
            l.push(match (auto, best) {
                (Some(a), Some(b)) if cells[a].correct && stat(&cells[b]) > 0.0 => {
                    format!("{:.2}", stat(&cells[a]) / stat(&cells[b]))
                }
                _ => "-".to_string(),
            });
            l
        })
        .collect();
    timing::render(&header, &lines, true)
}

/// Per size, the fastest of the crate's own algorithms (`Auto` and the MPI library's
/// collective aside) by the minimum: what an `Auto` rule should pick.
fn best_crate_line(c: Collective, methods: &[Method], rows: &Rows) -> String {
    let crate_algs = || {
        methods
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.is_auto() && !matches!(m, Method::Mpi(_)))
            .map(|(j, _)| j)
    };
    let picks: Vec<String> = rows
        .iter()
        .map(|(n, cells)| {
            let best = fastest(cells, crate_algs(), |c| c.min);
            format!(
                "{} {}",
                timing::show_bytes(n * 8),
                best.map_or("-", |j| methods[j].name())
            )
        })
        .collect();
    format!(
        "Best crate algorithm for {} by size (minimum): {}",
        c.name(),
        picks.join(", ")
    )
}

/// One CSV row per cell of every collective.
fn write_csv(
    path: &str,
    p: usize,
    results: &[(Collective, Vec<Method>, Rows)],
) -> std::io::Result<()> {
    let mut s =
        String::from("collective,processes,bytes,count,method,correct,reps,min_us,median_us\n");
    for (c, methods, rows) in results {
        for (n, cells) in rows {
            for (m, cell) in methods.iter().zip(cells) {
                let _ = writeln!(
                    s,
                    "{},{p},{},{n},{},{},{},{:.3},{:.3}",
                    c.name(),
                    n * 8,
                    m.name(),
                    cell.correct,
                    cell.reps,
                    cell.min * 1e6,
                    cell.median * 1e6
                );
            }
        }
    }
    std::fs::write(path, s)
}

fn main() -> ExitCode {
    let o = match Options::parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("process_sweep: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some((universe, _)) = mpi::initialize_with_threading(Threading::Funneled) else {
        eprintln!("process_sweep: MPI was initialised already");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    // One rank per process: a hybrid team of one thread each (the thread that initialised
    // MPI), whose runs hand it the communicator of the processes.
    let team = match Team::builder().ranks(1).mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("process_sweep: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (rank, p) = (world.rank() as usize, world.size() as usize);
    let counts = o.counts();
    let largest = counts.iter().copied().max().unwrap_or(0);
    let send: Vec<u64> = (0..largest).map(|i| input(rank, i)).collect();
    let t0 = Instant::now();
    let mut results = Vec::new();
    for &c in &o.collectives {
        let methods = methods(c).expect("a collective of the sweep");
        let mut rows = Vec::new();
        for &n in &counts {
            // A run per row: an error of the crate's fails the rest of its run, which the
            // row's later cells then show as WRONG; the next row starts afresh.
            let row = Mutex::new(None);
            let run = team.run(|comm| {
                // MPI's world again, for the baseline and the timing (this is the thread
                // that initialised MPI: the team's only rank in this process runs on it).
                let world = SimpleCommunicator::world();
                let mut bench = Bench {
                    world: &world,
                    comm,
                    send: send.clone(),
                    buf: vec![0; largest],
                    collective: c,
                    n,
                };
                let cells = timing::row(&mut bench, &methods, &o.budget);
                *row.lock().expect("no panic holds it") = Some(cells);
            });
            let cells = match (row.into_inner().expect("no panic holds it"), run) {
                (Some(cells), Ok(_)) => cells,
                (Some(cells), Err(e)) => {
                    eprintln!("process_sweep: {} at {n} elements: {e}", c.name());
                    cells
                }
                (None, run) => {
                    eprintln!("process_sweep: {} at {n} elements: {run:?}", c.name());
                    return ExitCode::FAILURE;
                }
            };
            if rank == 0 {
                eprintln!(
                    "[{:6.1} s] {} {}: {} rounds",
                    t0.elapsed().as_secs_f64(),
                    c.name(),
                    timing::show_bytes(n * 8),
                    cells[0].reps
                );
            }
            rows.push((n, cells));
        }
        results.push((c, methods, rows));
    }
    let failures = results
        .iter()
        .flat_map(|(_, _, rows)| rows.iter().flat_map(|(_, cells)| cells))
        .filter(|c| !c.correct)
        .count();
    if rank == 0 {
        let library = mpi::environment::library_version().unwrap_or_default();
        let library = library.lines().next().unwrap_or("").trim();
        println!(
            "Between {p} processes ({library}): u64 sum, root {ROOT}; slowest process per \
             repetition, after MPI_Barrier; {:.2} s per cell, {}..{} repetitions; {:.0} s in all",
            o.budget.seconds,
            o.budget.min_reps,
            o.budget.max_reps,
            t0.elapsed().as_secs_f64()
        );
        for (c, methods, rows) in &results {
            println!("\n## {} on {p} processes\n\nMinimum (µs):\n", c.name());
            print!("{}", table(methods, rows, |c| c.min));
            println!("\nMedian (µs):\n");
            print!("{}", table(methods, rows, |c| c.median));
            println!("\n{}", best_crate_line(*c, methods, rows));
        }
        if failures > 0 {
            println!("\n{failures} cells gave a wrong result or an error (WRONG)");
        }
        if let Some(path) = &o.csv {
            if let Err(e) = write_csv(path, p, &results) {
                eprintln!("process_sweep: writing {path}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    drop(team);
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
