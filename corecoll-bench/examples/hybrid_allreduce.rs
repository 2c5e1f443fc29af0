//! Hybrid MPI + threads: every thread of every MPI process a rank of one `Comm`
//! (`TeamBuilder::mpi`, feature `mpi`), an allreduce over all of them with each algorithm
//! between the processes, checked against the exact sum and timed.
//!
//! ```text
//! cargo build --release -p corecoll-bench --features mpi --example hybrid_allreduce
//! mpirun -np 2 --bind-to none target/release/examples/hybrid_allreduce
//! mpirun -np 2 --bind-to none target/release/examples/hybrid_allreduce --threads 3 --count 1000000
//! mpirun -np 2 --bind-to none target/release/examples/hybrid_allreduce --table --counts 1,1000,100000
//! ```
//!
//! (As root, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.
//! `--bind-to none` lets each process's threads use every core; with Open MPI's default
//! binding for two processes, one core each, a process's threads would share one core.)
//!
//! Options: `--threads T` threads per process (default 2), `--count N` `u64` elements per rank
//! (default 100 000), `--iters K` timed calls per algorithm (default 20), `--algorithm NAME`
//! one algorithm between the processes (default: `auto` and every transport-generic one),
//! `--segments a,b` the stage pipelining in segments of a, b elements as well
//! (`Algorithm::Hierarchical { segment }`, `Auto` between the processes), `--requests` (table
//! mode) a column of `Auto` as a request (`iallreduce` started and waited in a scope).
//!
//! Every rank prints one line per algorithm: its rank, process and thread, the first elements
//! of its result, whether the result is exact, and its median time; then rank 0 prints the
//! slowest rank's median per algorithm, and beside them Open MPI's `MPI_Allreduce` between the
//! processes alone (one rank each; with `--threads 1` and as many processes as the hybrid run
//! has ranks, the flat-MPI baseline). The exit code is non-zero if any result is wrong.
//!
//! **Table mode** (`--table`, for hybrid against flat MPI at the same total ranks; the
//! `corecoll-bench/scripts/hybrid_vs_flat.sh` runs): `--counts a,b,c` (u64 per rank; default `--count`'s),
//! timed by the shared method of the MPI examples (`examples/common/timing.rs`: a barrier over
//! every rank before each repetition, the slowest rank's time by a `Max` allreduce outside
//! the timed region, the algorithms in turn per round, minimum and median, `--budget SECONDS`
//! per cell (0.2), `--min-reps N` (3), `--max-reps N` (1000), each cell checked once against
//! the exact sum before timing). Rank 0 prints a markdown table of the minima and one of the
//! medians: count, bytes per rank, each algorithm between the processes (`Auto` first), the
//! fastest of them (`Auto` aside), `auto/best` (`Auto`'s time over the fastest one's), and
//! `MPI_Allreduce` between the processes alone (one rank each, by the same method over
//! `MPI_COMM_WORLD`). The MPI column is timed after the team's run of the same count, not in
//! turn with the algorithms: inside a run each process's rank 0 is pinned by the team, and
//! on an oversubscribed node (`--bind-to none`, more threads than cores) the processes' rank
//! 0s can share one core, where Open MPI's busy-polling processes wait a scheduler time slice
//! for each other (milliseconds per call, measured) — the crate's placement, not MPI's cost.
//! Outside the run the thread is unpinned and the team's workers sleep. With one process
//! (`mpirun -np 1`)
//! the team is the plain threads team (`Team::build`, no MPI in its collectives) and its
//! columns are every algorithm of `Algorithm::ALL`, the shared-memory ones included. A wrong
//! result is `WRONG`, an error from the crate (the same on every rank) ends the run; either
//! makes the exit code non-zero.

// The timing method shared with the other MPI examples; each uses part of it.
#[allow(dead_code)]
#[path = "common/timing.rs"]
mod timing;

use corecoll::{op, Algorithm, Comm, Team};
use mpi::collective::SystemOperation;
use mpi::environment::Threading;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::process::ExitCode;
use std::time::Instant;
use timing::{option, shown, Budget, Cell};

/// The algorithms between processes that run over MPI point-to-point. Every algorithm but the
/// shared-memory ones (`Direct`, and the hierarchies, which the hybrid world itself is).
fn algorithms() -> Vec<Algorithm> {
    Algorithm::ALL
        .into_iter()
        .filter(|a| !a.needs_shared_memory())
        .collect()
}

/// A column's name: the algorithm's, with the segment of a chosen hierarchical one.
fn label(a: Algorithm) -> String {
    match a {
        Algorithm::Hierarchical {
            segment: corecoll::Block::Elements(s),
        } => format!("segments of {s}"),
        a => a.name().to_string(),
    }
}

/// How a table's column calls the allreduce: its algorithm, and whether as a request
/// (`iallreduce_with` started and waited in a scope of its own) instead of the blocking call.
type Method = (Algorithm, bool);

/// A table column's name.
fn label_of((a, request): Method) -> String {
    if request {
        format!("iallreduce {}", label(a))
    } else {
        label(a)
    }
}

/// The value of element `i` on rank `r`.
fn value(r: usize, i: usize) -> u64 {
    (r as u64 + 1) * 1_000_003 + i as u64
}

/// One rank's part of a table row on the team (see the module docs, table mode): its input
/// and buffer for the largest count, the exact sum, and the first error of the run (after
/// which the rank makes no more calls: the error is on every rank, so all stop alike).
struct TeamBench<'c> {
    comm: &'c Comm,
    send: Vec<u64>,
    buf: Vec<u64>,
    expected: Vec<u64>,
    n: usize,
    error: Option<corecoll::Error>,
}

impl TeamBench<'_> {
    /// Keeps the first error; true if `r` is fine and no error came before.
    fn ok(&mut self, r: corecoll::Result<()>) -> bool {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
        self.error.is_none()
    }

    /// The largest of every rank's `x` (known to every rank).
    fn max_over_ranks(&mut self, x: f64) -> f64 {
        let mut m = [x];
        let r = self.comm.allreduce(&mut m, op::Max);
        if self.ok(r) {
            m[0]
        } else {
            f64::NAN
        }
    }

    /// One call of `alg` on the first `n` elements (as a request if `request`), after
    /// refilling the buffer and a barrier; its time on this rank.
    fn call(&mut self, (alg, request): Method) -> f64 {
        let n = self.n;
        self.buf[..n].copy_from_slice(&self.send[..n]);
        let comm = self.comm;
        let buf = &mut self.buf[..n];
        // (After a failed barrier the allreduce fails too: the error is kept, the run stops.)
        let (mut barrier, mut result) = (Ok(()), Ok(()));
        let t = timing::timed(
            || barrier = comm.barrier(),
            || {
                result = if request {
                    comm.scope(|s| s.iallreduce_with(buf, op::Sum, alg)?.wait())
                } else {
                    comm.allreduce_with(buf, op::Sum, alg)
                }
            },
            |t| t,
        );
        self.ok(barrier.and(result));
        t
    }
}

impl timing::Bench for TeamBench<'_> {
    type Method = Method;

    fn check(&mut self, alg: Method) -> bool {
        if self.error.is_some() {
            return false;
        }
        self.call(alg);
        let n = self.n;
        let wrong = if self.error.is_some() {
            1
        } else {
            (0..n).filter(|&i| self.buf[i] != self.expected[i]).count()
        };
        self.max_over_ranks(wrong as f64) == 0.0
    }

    fn time(&mut self, alg: Method) -> f64 {
        if self.error.is_some() {
            return f64::NAN;
        }
        let t = self.call(alg);
        self.max_over_ranks(t)
    }
}

/// `MPI_Allreduce` between the processes alone, one rank each (the flat baseline).
struct MpiBench<'a> {
    world: &'a SimpleCommunicator,
    send: Vec<u64>,
    buf: Vec<u64>,
    expected: Vec<u64>,
    n: usize,
}

impl MpiBench<'_> {
    fn max_over_processes(world: &SimpleCommunicator, x: f64) -> f64 {
        let mut m = 0.0f64;
        world.all_reduce_into(&x, &mut m, SystemOperation::max());
        m
    }

    fn call(&mut self) {
        let n = self.n;
        self.world
            .all_reduce_into(&self.send[..n], &mut self.buf[..n], SystemOperation::sum());
    }
}

impl timing::Bench for MpiBench<'_> {
    type Method = ();

    fn check(&mut self, (): ()) -> bool {
        self.world.barrier();
        self.call();
        let n = self.n;
        let wrong = (0..n).filter(|&i| self.buf[i] != self.expected[i]).count();
        Self::max_over_processes(self.world, wrong as f64) == 0.0
    }

    fn time(&mut self, (): ()) -> f64 {
        let world = self.world;
        timing::timed(
            || world.barrier(),
            || self.call(),
            |t| Self::max_over_processes(world, t),
        )
    }
}

/// The exact sum over ranks `0..p` of element `i`.
fn sum(p: usize, i: usize) -> u64 {
    (0..p).map(|q| value(q, i)).fold(0u64, u64::wrapping_add)
}

/// Table mode (see the module docs): every count, the team's algorithms in turn, then (outside
/// the team's run, see the module docs) `MPI_Allreduce` between the processes; rank 0 of
/// process 0 prints the tables.
fn table_main(
    world: &SimpleCommunicator,
    team: &Team,
    threads: usize,
    algs: &[Method],
    counts: &[usize],
    budget: &Budget,
) -> ExitCode {
    let (process, nprocs) = (world.rank() as usize, world.size() as usize);
    let ranks = team.size() * nprocs;
    let largest = counts.iter().copied().max().unwrap_or(0);
    let mut mpi = MpiBench {
        world,
        send: (0..largest).map(|i| value(process, i)).collect(),
        buf: vec![0; largest],
        expected: (0..largest).map(|i| sum(nprocs, i)).collect(),
        n: 0,
    };
    let t0 = Instant::now();
    let mut rows: Vec<(usize, Vec<Cell>)> = Vec::new();
    for &n in counts {
        let outcome = team.run(|comm| {
            let r = comm.rank();
            let mut bench = TeamBench {
                comm,
                send: (0..n).map(|i| value(r, i)).collect(),
                buf: vec![0; n],
                expected: (0..n).map(|i| sum(comm.size(), i)).collect(),
                n,
                error: None,
            };
            let cells = timing::row(&mut bench, algs, budget);
            match bench.error {
                Some(e) => Err(e),
                None => Ok(cells),
            }
        });
        let cells = match outcome.map(|mut v| v.swap_remove(0)) {
            Ok(Ok(cells)) => cells,
            Ok(Err(e)) | Err(e) => {
                eprintln!("process {process}: count {n}: {e}");
                return ExitCode::FAILURE;
            }
        };
        mpi.n = n;
        let mut all = cells;
        all.extend(timing::row(&mut mpi, &[()], budget));
        if process == 0 {
            eprintln!(
                "[{:6.1} s] count {n}: {} rounds",
                t0.elapsed().as_secs_f64(),
                all[0].reps
            );
        }
        rows.push((n, all));
    }
    let failures = rows
        .iter()
        .flat_map(|(_, c)| c)
        .filter(|c| !c.correct)
        .count();
    if process == 0 {
        let kind = if nprocs == 1 {
            "the plain threads team"
        } else {
            "a hybrid team"
        };
        let procs = if nprocs == 1 { "process" } else { "processes" };
        println!(
            "{nprocs} {procs} × {threads} {} = {ranks} ranks ({kind}); allreduce of u64 \
             (sum) per rank; slowest rank per repetition, after a barrier; {:.2} s per cell, \
             {}..{} repetitions; MPI_Allreduce between the {nprocs} {procs} alone (1 rank \
             each, after the team's run); {:.0} s in all",
            if threads == 1 { "thread" } else { "threads" },
            budget.seconds,
            budget.min_reps,
            budget.max_reps,
            t0.elapsed().as_secs_f64()
        );
        let auto = algs.iter().position(|&a| a == (Algorithm::Auto, false));
        let table = |stat: fn(&Cell) -> f64| {
            let mut header = vec!["count".to_string(), "bytes".to_string()];
            header.extend(algs.iter().map(|&a| label_of(a)));
            header.push("best".to_string());
            header.push("auto/best".to_string());
            header.push(format!("MPI_Allreduce ({nprocs} × 1)"));
            let lines: Vec<Vec<String>> = rows
                .iter()
                .map(|(n, cells)| {
                    let (team_cells, mpi_cell) = cells.split_at(algs.len());
                    let mut l = vec![n.to_string(), (n * 8).to_string()];
                    l.extend(team_cells.iter().map(|c| shown(c, stat)));
                    let best = (0..algs.len())
                        .filter(|&j| Some(j) != auto && !algs[j].1 && team_cells[j].correct)
                        .min_by(|&a, &b| stat(&team_cells[a]).total_cmp(&stat(&team_cells[b])));
                    l.push(best.map_or("-".to_string(), |j| label_of(algs[j])));
                    l.push(match (auto, best) {
                        (Some(a), Some(b))
                            if team_cells[a].correct && stat(&team_cells[b]) > 0.0 =>
                        {
                            format!("{:.2}", stat(&team_cells[a]) / stat(&team_cells[b]))
                        }
                        _ => "-".to_string(),
                    });
                    l.push(shown(&mpi_cell[0], stat));
                    l
                })
                .collect();
            timing::render(&header, &lines, true)
        };
        println!("\nMinimum (µs):\n");
        print!("{}", table(|c| c.min));
        println!("\nMedian (µs):\n");
        print!("{}", table(|c| c.median));
        if failures > 0 {
            println!("\n{failures} cells gave a wrong result (WRONG)");
        }
    }
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let threads: usize = option(&args, "--threads", 2);
    let count: usize = option(&args, "--count", 100_000);
    let iters: usize = option(&args, "--iters", 20).max(1);
    let chosen: Option<String> = args
        .iter()
        .position(|a| a == "--algorithm")
        .and_then(|i| args.get(i + 1).cloned());
    let algs: Vec<Algorithm> = match &chosen {
        Some(name) => {
            vec![Algorithm::from_name(name).unwrap_or_else(|| panic!("unknown algorithm {name:?}"))]
        }
        None => algorithms(),
    };
    // `--segments a,b`: the hybrid stage pipelining with segments of a, b elements as well
    // (`Hierarchical { segment }`, which runs `Auto` between the processes).
    let mut algs = algs;
    if let Some(i) = args.iter().position(|a| a == "--segments") {
        let list = args.get(i + 1).expect("--segments takes a list");
        for s in list.split(',') {
            let s: usize = s.parse().expect("--segments takes element counts");
            algs.push(Algorithm::Hierarchical {
                segment: corecoll::Block::Elements(s),
            });
        }
    }

    let table = args.iter().any(|a| a == "--table");
    let counts: Vec<usize> = match args.iter().position(|a| a == "--counts") {
        Some(i) => args
            .get(i + 1)
            .map(|v| timing::counts(v))
            .unwrap_or_else(|| Err("--counts takes a value".to_string()))
            .unwrap_or_else(|e| panic!("--counts: {e}")),
        None => vec![count],
    };
    let budget = Budget {
        seconds: option(&args, "--budget", 0.2),
        min_reps: option(&args, "--min-reps", 3usize).max(1),
        max_reps: option(&args, "--max-reps", 1000usize).max(1),
    };

    let (universe, level) =
        mpi::initialize_with_threading(Threading::Funneled).expect("MPI initialises once");
    let world = universe.world();
    if level < Threading::Funneled {
        eprintln!("MPI gave {level:?}; a hybrid team needs Threading::Funneled");
        return ExitCode::FAILURE;
    }
    if table {
        // One process: the plain threads team, with every algorithm (see the module docs).
        let (built, algs) = if world.size() == 1 {
            let all = match &chosen {
                Some(_) => algs,
                None => Algorithm::ALL.to_vec(),
            };
            (Team::builder().ranks(threads).build(), all)
        } else {
            (Team::builder().ranks(threads).mpi(&world), algs)
        };
        let team = match built {
            Ok(team) => team,
            Err(e) => {
                eprintln!("process {}: {e}", world.rank());
                return ExitCode::FAILURE;
            }
        };
        // `--requests`: `Auto` as a request too, beside the blocking calls.
        let mut methods: Vec<Method> = algs.iter().map(|&a| (a, false)).collect();
        if args.iter().any(|a| a == "--requests") {
            methods.push((Algorithm::Auto, true));
        }
        return table_main(&world, &team, threads, &methods, &counts, &budget);
    }
    let team = match Team::builder().ranks(threads).mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("process {}: {e}", world.rank());
            return ExitCode::FAILURE;
        }
    };
    let process = world.rank();
    // The flat baseline: Open MPI's own allreduce between the processes (one rank each, the
    // same count per process), timed the same way; with `--threads 1` and P·T processes this
    // is flat MPI at the same rank count as P processes × T threads.
    let native = {
        let nprocs = world.size() as usize;
        let send: Vec<u64> = (0..count).map(|i| value(process as usize, i)).collect();
        let expected: Vec<u64> = (0..count)
            .map(|i| {
                (0..nprocs)
                    .map(|q| value(q, i))
                    .fold(0u64, u64::wrapping_add)
            })
            .collect();
        let mut recv = vec![0u64; count];
        let mut times = Vec::with_capacity(iters);
        for _ in 0..iters {
            world.barrier();
            let start = Instant::now();
            world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
            times.push(start.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let mut slowest = 0.0;
        world.all_reduce_into(
            &times[times.len() / 2],
            &mut slowest,
            SystemOperation::max(),
        );
        (slowest, recv == expected)
    };
    let outcome = team.run(|comm| {
        let (r, p) = (comm.rank(), comm.size());
        let expected: Vec<u64> = (0..count)
            .map(|i| (0..p).map(|q| value(q, i)).fold(0u64, u64::wrapping_add))
            .collect();
        let mut all_ok = true;
        let mut medians = Vec::new();
        for &alg in &algs {
            let mut buf = vec![0u64; count];
            let mut times = Vec::with_capacity(iters);
            let mut ok = true;
            for _ in 0..iters {
                for (i, x) in buf.iter_mut().enumerate() {
                    *x = value(r, i);
                }
                comm.barrier()?;
                let start = Instant::now();
                comm.allreduce_with(&mut buf, op::Sum, alg)?;
                times.push(start.elapsed().as_secs_f64());
                ok &= buf == expected;
            }
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            println!(
                "rank {r:3} (process {process}, thread {:2}) {:18} result[..3] = {:?} {} median {:9.1} µs",
                r - process as usize * threads,
                alg.name(),
                &buf[..buf.len().min(3)],
                if ok { "exact" } else { "WRONG" },
                median * 1e6
            );
            all_ok &= ok;
            medians.push(median);
        }
        // The slowest rank's median per algorithm, and whether every rank was exact.
        comm.allreduce(&mut medians, op::Max)?;
        let mut wrong = [u64::from(!all_ok)];
        comm.allreduce(&mut wrong, op::Sum)?;
        Ok::<_, corecoll::Error>((medians, wrong[0]))
    });
    let results = match outcome {
        Ok(results) => results,
        Err(e) => {
            eprintln!("process {process}: the run failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (medians, wrong) = match results.into_iter().next().expect("rank 0 ran") {
        Ok(r) => r,
        Err(e) => {
            eprintln!("process {process}: {e}");
            return ExitCode::FAILURE;
        }
    };
    if process == 0 {
        let p = world.size() as usize * threads;
        println!(
            "\n{} processes × {threads} threads = {p} ranks, {count} u64 per rank ({} bytes), \
             slowest rank's median of {iters}:",
            world.size(),
            count * 8
        );
        for (alg, m) in algs.iter().zip(&medians) {
            println!("  {:18} {:10.1} µs", alg.name(), m * 1e6);
        }
        println!(
            "  {:18} {:10.1} µs  (MPI_Allreduce between the {} processes alone, 1 rank each{})",
            "MPI_Allreduce",
            native.0 * 1e6,
            world.size(),
            if native.1 { "" } else { ", WRONG" }
        );
        println!("wrong results: {wrong}");
    }
    if wrong == 0 && native.1 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
