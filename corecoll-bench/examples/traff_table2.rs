//! Träff's Table 2 on this machine: the experiment of J. L. Träff, "A Doubly-pipelined,
//! Dual-root Reduction-to-all Algorithm and Implementation" (2021), Table 2, run between MPI
//! processes with the crate's schedules (feature `mpi`: a hybrid team with one thread per
//! process, `Team::builder().ranks(1).mpi(&world)`, whose `Comm` runs them over MPI) beside
//! the MPI library's own collectives.
//!
//! ```text
//! cargo build --release -p corecoll-bench --features mpi --example traff_table2
//! mpirun -np 2 target/release/examples/traff_table2 --markdown
//! mpirun -np 3 --oversubscribe target/release/examples/traff_table2 --markdown
//! mpirun -np 4 --oversubscribe target/release/examples/traff_table2 --markdown --csv p4.csv
//! ```
//!
//! (As root, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.)
//!
//! **What is timed.** An allreduce of `count` `i32` with `MPI_SUM` (the crate's `op::Sum`), at
//! the paper's 30 counts from 0 to 8 388 608 elements (32 MiB), by six methods:
//! - `MPI_Allreduce` (out of place, rsmpi's `all_reduce_into`);
//! - `MPI_Reduce` to rank 0 followed by `MPI_Bcast` from it (out of place);
//! - the crate's `Algorithm::PipelinedTree` (the paper's "Pipelined": a pipelined reduce up a
//!   binary tree, then a pipelined broadcast down it) and `Algorithm::DualRoot` (the paper's
//!   "Doubly pipelined": two trees whose roots exchange blocks, reduce and broadcast
//!   overlapping), both with the paper's blocks of 16 000 elements (`--block`), in place;
//! - the same two with `Block::Auto`, the block the crate's pipelining lemma picks.
//!
//! All of it runs inside one `Team::run` of the team, on each process's one thread (the thread
//! that initialised MPI, which the team's run is on); the MPI library's collectives and the
//! timing are called through rsmpi directly, as they would be without the crate.
//!
//! **How** (as the paper's mpicroscope benchmark): each repetition starts after an
//! `MPI_Barrier`; its time is the slowest process's (an `MPI_Allreduce` with `MPI_MAX` of the
//! per-process times, outside the timed region). A cell reports the **minimum** over its
//! repetitions (the paper's statistic) and the median. Unlike mpicroscope, the six methods of
//! one count take turns, one repetition each per round, so that on a shared machine they all
//! see the same changes of load. Rounds continue until the row has spent `--budget` seconds
//! per method of timed calls, at least `--min-reps` and at most `--max-reps` rounds; every
//! process sees the same slowest times, so all stop together. Before the timed rounds, one
//! untimed call per cell is checked against the exact sum (every process can compute every
//! process's input): a wrong element on any process marks the cell `WRONG` and makes the exit
//! code non-zero. The crate's in-place buffer is refilled with the input before each
//! repetition, outside the timed region.
//!
//! Rank 0 prints the minimum and median tables (aligned text, or markdown with `--markdown`:
//! count, bytes, the six methods and the pipelined tree ÷ dual root ratios), progress on
//! stderr, and with `--csv FILE` one row per cell.
//!
//! Options: `--counts 0,1,2,…` (default the paper's 30), `--block N` (16000), `--budget
//! SECONDS` (0.6 per cell), `--min-reps N` (5), `--max-reps N` (2000), `--csv FILE`,
//! `--markdown`.

// The timing method shared with the other MPI examples; each uses part of it.
#[allow(dead_code)]
#[path = "common/timing.rs"]
mod timing;

use corecoll::{op, Algorithm, Block, Comm, Team};
use mpi::collective::SystemOperation;
use mpi::environment::Threading;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;
use timing::{shown, Budget, Cell};

/// The element counts of Träff 2021, Table 2 (MPI_INT; 0 to 32 MiB).
const PAPER_COUNTS: [usize; 30] = [
    0, 1, 2, 8, 15, 21, 25, 87, 150, 212, 250, 875, 1500, 2125, 2500, 8750, 15_000, 21_250, 25_000,
    87_500, 150_000, 212_500, 250_000, 875_000, 1_500_000, 2_125_000, 2_500_000, 4_597_152,
    6_694_304, 8_388_608,
];

/// The paper's pipeline block: 16 000 elements.
const PAPER_BLOCK: usize = 16_000;

/// Process `r`'s element `i`: small enough that no sum over a few processes overflows.
fn input(r: usize, i: usize) -> i32 {
    ((i % 1009) * (r + 1) + r) as i32
}

/// The exact sum over `p` processes of element `i`.
fn expected(p: usize, i: usize) -> i32 {
    ((i % 1009) * p * (p + 1) / 2 + p * (p - 1) / 2) as i32
}

/// One way of computing the allreduce.
#[derive(Debug, Clone, Copy)]
enum Method {
    /// `MPI_Allreduce`, out of place.
    MpiAllreduce,
    /// `MPI_Reduce` to rank 0, then `MPI_Bcast` from rank 0, out of place.
    MpiReduceBcast,
    /// The crate's schedule between processes, in place.
    Crate(Algorithm),
}

impl Method {
    /// The column name (the block as given, `Auto` for the lemma's).
    fn name(self) -> String {
        let block = |b: Block| match b {
            Block::Elements(n) => n.to_string(),
            Block::Auto => "Auto".to_string(),
        };
        match self {
            Method::MpiAllreduce => "MPI_Allreduce".to_string(),
            Method::MpiReduceBcast => "MPI_Reduce+MPI_Bcast".to_string(),
            Method::Crate(Algorithm::PipelinedTree { block: b }) => {
                format!("PipelinedTree({})", block(b))
            }
            Method::Crate(Algorithm::DualRoot { block: b }) => format!("DualRoot({})", block(b)),
            Method::Crate(alg) => alg.name().to_string(),
        }
    }
}

/// The six methods, in the table's column order.
fn methods(block: usize) -> [Method; 6] {
    let b = Block::Elements(block);
    [
        Method::MpiAllreduce,
        Method::MpiReduceBcast,
        Method::Crate(Algorithm::PipelinedTree { block: b }),
        Method::Crate(Algorithm::DualRoot { block: b }),
        Method::Crate(Algorithm::PipelinedTree { block: Block::Auto }),
        Method::Crate(Algorithm::DualRoot { block: Block::Auto }),
    ]
}

/// Command-line options (see the module docs).
struct Options {
    counts: Vec<usize>,
    block: usize,
    budget: Budget,
    csv: Option<String>,
    markdown: bool,
}

impl Options {
    fn parse() -> Result<Options, String> {
        let mut o = Options {
            counts: PAPER_COUNTS.to_vec(),
            block: PAPER_BLOCK,
            budget: Budget {
                seconds: 0.6,
                min_reps: 5,
                max_reps: 2000,
            },
            csv: None,
            markdown: false,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut value = || args.next().ok_or(format!("{a} needs a value"));
            let num = |s: String| s.parse::<usize>().map_err(|e| format!("{a} {s}: {e}"));
            match a.as_str() {
                "--counts" => {
                    o.counts = timing::counts(&value()?).map_err(|e| format!("{a} {e}"))?
                }
                "--block" => o.block = num(value()?)?.max(1),
                "--budget" => {
                    let s = value()?;
                    o.budget.seconds = s.parse().map_err(|e| format!("--budget {s}: {e}"))?
                }
                "--min-reps" => o.budget.min_reps = num(value()?)?.max(1),
                "--max-reps" => o.budget.max_reps = num(value()?)?.max(1),
                "--csv" => o.csv = Some(value()?),
                "--markdown" => o.markdown = true,
                _ => return Err(format!("unknown argument {a} (see the example's docs)")),
            }
        }
        o.budget.max_reps = o.budget.max_reps.max(o.budget.min_reps);
        Ok(o)
    }
}

/// What a cell needs: the communicators (MPI's world, and the team's, whose ranks are the
/// processes), the inputs (this process's, for the largest count), the result buffer and the
/// cell's count.
struct Bench<'a> {
    world: &'a SimpleCommunicator,
    comm: &'a Comm,
    send: Vec<i32>,
    buf: Vec<i32>,
    /// Elements of the current row.
    n: usize,
}

impl Bench<'_> {
    /// One call of `method` on the first `n` elements; the result is in `buf[..n]`.
    fn run(&mut self, method: Method) {
        let n = self.n;
        let (send, buf) = (&self.send[..n], &mut self.buf[..n]);
        match method {
            Method::MpiAllreduce => self
                .world
                .all_reduce_into(send, buf, SystemOperation::sum()),
            Method::MpiReduceBcast => {
                let root = self.world.process_at_rank(0);
                if self.comm.rank() == 0 {
                    root.reduce_into_root(send, buf, SystemOperation::sum());
                } else {
                    root.reduce_into(send, SystemOperation::sum());
                }
                root.broadcast_into(buf);
            }
            Method::Crate(alg) => {
                if let Err(e) = self.comm.allreduce_with(buf, op::Sum, alg) {
                    // The same error on every process (the call check), so all stop here.
                    eprintln!("traff_table2: {} at {n} elements: {e}", method.name());
                    std::process::exit(2);
                }
            }
        }
    }

    /// Refills the crate's in-place buffer with the input (outside the timed region).
    fn reset(&mut self, method: Method) {
        if matches!(method, Method::Crate(_)) {
            let n = self.n;
            self.buf[..n].copy_from_slice(&self.send[..n]);
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

    /// Whether one untimed call gives the exact sum on every process (every process can
    /// compute every process's input).
    fn check(&mut self, method: Method) -> bool {
        let p = self.comm.size();
        self.reset(method);
        self.world.barrier();
        self.run(method);
        let wrong = self.buf[..self.n]
            .iter()
            .enumerate()
            .filter(|&(i, &x)| x != expected(p, i))
            .count();
        Self::max_over_processes(self.world, wrong as f64) == 0.0
    }

    /// The slowest process's time of one call, after a barrier.
    fn time(&mut self, method: Method) -> f64 {
        self.reset(method);
        let world = self.world;
        timing::timed(
            || world.barrier(),
            || self.run(method),
            |t| Self::max_over_processes(world, t),
        )
    }
}

/// The table of one statistic (minimum or median), markdown or aligned text, with the
/// pipelined tree ÷ dual root ratios after each pair.
fn table(
    o: &Options,
    names: &[String],
    rows: &[(usize, Vec<Cell>)],
    stat: fn(&Cell) -> f64,
) -> String {
    let ratio = |pt: &Cell, dr: &Cell| {
        if pt.correct && dr.correct && stat(dr) > 0.0 {
            format!("{:.2}", stat(pt) / stat(dr))
        } else {
            "-".to_string()
        }
    };
    let mut header = vec!["count".to_string(), "bytes".to_string()];
    header.extend(names[..4].iter().cloned());
    header.push("PT/DR".to_string());
    header.extend(names[4..6].iter().cloned());
    header.push("PT/DR (Auto)".to_string());
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|(n, cells)| {
            let mut l = vec![n.to_string(), (n * 4).to_string()];
            l.extend(cells[..4].iter().map(|c| shown(c, stat)));
            l.push(ratio(&cells[2], &cells[3]));
            l.extend(cells[4..6].iter().map(|c| shown(c, stat)));
            l.push(ratio(&cells[4], &cells[5]));
            l
        })
        .collect();
    timing::render(&header, &lines, o.markdown)
}

/// One CSV row per cell.
fn write_csv(
    path: &str,
    p: usize,
    names: &[String],
    rows: &[(usize, Vec<Cell>)],
) -> std::io::Result<()> {
    let mut s = String::from("processes,count,bytes,method,correct,reps,min_us,median_us\n");
    for (n, cells) in rows {
        for (name, c) in names.iter().zip(cells) {
            let _ = writeln!(
                s,
                "{p},{n},{},{name},{},{},{:.3},{:.3}",
                n * 4,
                c.correct,
                c.reps,
                c.min * 1e6,
                c.median * 1e6
            );
        }
    }
    std::fs::write(path, s)
}

fn main() -> ExitCode {
    let o = match Options::parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("traff_table2: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some((universe, level)) = mpi::initialize_with_threading(Threading::Funneled) else {
        eprintln!("traff_table2: MPI was initialised already");
        return ExitCode::FAILURE;
    };
    if level < Threading::Funneled {
        eprintln!("traff_table2: MPI gave {level:?}; the team needs Threading::Funneled");
        return ExitCode::FAILURE;
    }
    let world = universe.world();
    let team = match Team::builder().ranks(1).mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("traff_table2: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (rank, p) = (world.rank() as usize, world.size() as usize);
    let largest = o.counts.iter().copied().max().unwrap_or(0);
    let methods = methods(o.block);
    let names: Vec<String> = methods.iter().map(|m| m.name()).collect();
    let t0 = Instant::now();
    let run = team.run(|comm| {
        // MPI's world again, for the baseline and the timing (this is the thread that
        // initialised MPI: the team's only rank in this process runs on it).
        let world = SimpleCommunicator::world();
        let mut bench = Bench {
            world: &world,
            comm,
            send: (0..largest).map(|i| input(rank, i)).collect(),
            buf: vec![0; largest],
            n: 0,
        };
        let mut rows = Vec::new();
        for &n in &o.counts {
            bench.n = n;
            let cells = timing::row(&mut bench, &methods, &o.budget);
            if rank == 0 {
                eprintln!(
                    "[{:6.1} s] count {n}: {} rounds",
                    t0.elapsed().as_secs_f64(),
                    cells[0].reps
                );
            }
            rows.push((n, cells));
        }
        rows
    });
    let rows = match run {
        Ok(mut rows) => rows.swap_remove(0),
        Err(e) => {
            eprintln!("traff_table2: {e}");
            return ExitCode::FAILURE;
        }
    };
    let failures = rows
        .iter()
        .flat_map(|(_, cells)| cells)
        .filter(|c| !c.correct)
        .count();
    if rank == 0 {
        let library = mpi::environment::library_version().unwrap_or_default();
        let library = library.lines().next().unwrap_or("").trim();
        println!(
            "Träff 2021, Table 2: allreduce of i32 (sum) on {p} processes ({library}); pipeline \
             block {} elements; slowest process per repetition, after MPI_Barrier; {:.2} s per \
             cell, {}..{} repetitions; {:.0} s in all",
            o.block,
            o.budget.seconds,
            o.budget.min_reps,
            o.budget.max_reps,
            t0.elapsed().as_secs_f64()
        );
        println!("\nMinimum (µs):\n");
        print!("{}", table(&o, &names, &rows, |c| c.min));
        println!("\nMedian (µs):\n");
        print!("{}", table(&o, &names, &rows, |c| c.median));
        if failures > 0 {
            println!("\n{failures} cells gave a wrong result (WRONG)");
        }
        if let Some(path) = &o.csv {
            if let Err(e) = write_csv(path, p, &names, &rows) {
                eprintln!("traff_table2: writing {path}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    drop(team); // before MPI is finalised with `universe`
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
