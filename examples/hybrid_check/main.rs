//! Checks every collective of a hybrid `Comm` (feature `mpi`: a team whose ranks are the threads
//! of several MPI processes, `TeamBuilder::mpi`) against sequential references computed in the
//! program: every rank's input is a function of (rank, index), so every rank knows every exact
//! answer (`cases`).
//!
//! ```text
//! cargo build --release --features mpi --example hybrid_check
//! mpirun -np 2 --bind-to none target/release/examples/hybrid_check
//! mpirun -np 3 --oversubscribe --bind-to none target/release/examples/hybrid_check --threads-by-rank
//! target/release/examples/hybrid_check --local 5
//! ```
//!
//! (As root, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.)
//!
//! Options: `--threads T` threads per process (default 2); `--threads-by-rank` gives process q
//! q + 1 threads (an unequal layout); `--quick` checks fewer counts (for CI); `--local T` runs
//! the same suite on a plain shared-memory team of T ranks (`Team::new(T)`, no MPI at all), to
//! validate the checks themselves — the ranks are then cut into groups as the processes would
//! be (T/`--threads` groups, or 1, 2, 3, … ranks with `--threads-by-rank`), which the failure
//! checks treat as processes.
//!
//! Each check runs in a `Team::run` of its own, since a failed call fails the rest of its run;
//! global rank 0 prints one line per check (`ok`, `FAIL`, or `skip` where the layout has too
//! few processes), each process prints its ranks' problems on stderr, and the exit code is
//! non-zero on every process if any check failed on any process. What is checked:
//! - results (`collectives`, the v-forms in `vector`): allreduce with every algorithm (and
//!   `Direct` refused between processes, of gather and scatter too, the ring refused for a
//!   non-commutative op),
//!   allreduce_into, broadcast and reduce at every root, scan, exscan, gather, scatter,
//!   allgather, alltoall, alltoallv, reduce_scatter_block, gatherv, scatterv, allgatherv,
//!   barrier; `u64` sum (exact), `f64` sum (close to the sequential sum, and the same bits on
//!   every rank where every rank holds the result) and a non-commutative op for every
//!   reducing collective;
//! - the segmented (stage-pipelined) allreduce between processes (`pipeline`): small segments
//!   at counts of one, two and many segments, the default segment on a long vector, processes
//!   that cut differently, and a panic of the op on a leader at a later segment;
//! - failures (`failures`): mismatched lengths and roots between processes, a panicking
//!   thread, a process that skips the last collective, roots out of range — each an `Err` on
//!   every rank of every process, never a hang — and a normal run on the same team afterwards.

mod cases;
mod collectives;
mod failures;
mod pipeline;
mod vector;

use corecoll::{Comm, Team};
use mpi::environment::Threading;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

/// The layout of the world the checks run on, the same on every rank of every process.
pub struct Ctx {
    /// The first rank of every process (of every group in `--local` mode), and the number of
    /// ranks at the end.
    offsets: Vec<usize>,
    /// Fewer counts.
    quick: bool,
    /// Whether the ranks span MPI processes (not `--local`).
    pub hybrid: bool,
}

impl Ctx {
    /// The layout of processes with `threads[q]` ranks each.
    fn new(threads: &[usize], quick: bool, hybrid: bool) -> Ctx {
        let mut offsets = vec![0];
        for &t in threads {
            offsets.push(offsets.last().copied().unwrap_or(0) + t);
        }
        Ctx {
            offsets,
            quick,
            hybrid,
        }
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        *self.offsets.last().expect("offsets start with 0")
    }

    /// Number of processes (groups).
    pub fn processes(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The first rank of process `q`.
    pub fn offset(&self, q: usize) -> usize {
        self.offsets[q]
    }

    /// The ranks of process `q`.
    pub fn threads(&self, q: usize) -> usize {
        self.offsets[q + 1] - self.offsets[q]
    }

    /// The process of `rank`.
    pub fn process_of(&self, rank: usize) -> usize {
        self.offsets.partition_point(|&o| o <= rank) - 1
    }

    /// The counts every collective is checked at.
    pub fn counts(&self) -> &'static [usize] {
        if self.quick {
            &[0, 7, 1000]
        } else {
            &[0, 1, 7, 1000]
        }
    }

    /// The counts the allreduce is checked at.
    pub fn allreduce_counts(&self) -> &'static [usize] {
        if self.quick {
            &[0, 1, 7, 100_003]
        } else {
            &[0, 1, 7, 1000, 100_003]
        }
    }
}

/// How the processes agree on a check's outcome: over MPI, or alone (`--local`).
enum Across {
    /// The user's world communicator (called by each process's main thread, outside runs).
    Mpi(SimpleCommunicator),
    /// One process.
    Local,
}

impl Across {
    /// Whether `ok` holds on every process.
    fn all(&self, ok: bool) -> bool {
        match self {
            Across::Mpi(world) => {
                let mut all = 0u8;
                world.all_reduce_into(
                    &u8::from(ok),
                    &mut all,
                    mpi::collective::SystemOperation::min(),
                );
                all == 1
            }
            Across::Local => ok,
        }
    }
}

/// What a rank did in a failure check's run.
pub enum Outcome {
    /// It did not make the call under test (it skipped it on purpose).
    Skipped,
    /// It made the call, with this result.
    Called(corecoll::Result<()>),
    /// Something before the call under test went wrong.
    Problem(String),
}

/// Whose `Team::run` must return `Err` in a failure check.
#[derive(Debug, Clone, Copy)]
pub enum RunFails {
    /// Every process's.
    Everywhere,
    /// Process q's (the others may return `Ok` with every rank's `Err`).
    In(usize),
    /// No requirement: `Ok` (with every rank's `Err`) or `Err`.
    Either,
}

/// The team, the layout, and the tally.
pub struct Suite<'a> {
    /// The team every check runs on.
    team: &'a Team,
    /// The layout.
    pub ctx: Ctx,
    /// How outcomes are agreed.
    across: Across,
    /// This process's number (0 in `--local` mode).
    process: usize,
    /// Checks run.
    checks: usize,
    /// Names of the checks that failed.
    failed: Vec<String>,
}

impl Suite<'_> {
    /// The number of this process's first rank: in `--local` mode the team's own ranks are
    /// the whole world, so 0.
    fn first_rank(&self) -> usize {
        if self.ctx.hybrid {
            self.ctx.offset(self.process)
        } else {
            0
        }
    }

    /// Records check `name`: passed if `problem` is `None` on every process.
    fn record(&mut self, name: &str, problem: Option<String>, t0: Instant) {
        if let Some(why) = &problem {
            eprintln!("process {}: {name}: {why}", self.process);
        }
        let ok = self.across.all(problem.is_none());
        self.checks += 1;
        if !ok {
            self.failed.push(name.to_string());
        }
        if self.process == 0 {
            let status = if ok { "ok  " } else { "FAIL" };
            println!("{status} {name} ({:.3} s)", t0.elapsed().as_secs_f64());
        }
    }

    /// Prints a check skipped for this layout (on every process alike).
    pub fn skip(&mut self, name: &str, why: &str) {
        if self.process == 0 {
            println!("skip {name} ({why})");
        }
    }

    /// Runs `body` on every rank in a run of its own: passes if the run succeeds and every
    /// rank of every process returns `None` (a rank's `Some` describes its problem).
    pub fn check(&mut self, name: &str, body: impl Fn(&Comm) -> Option<String> + Sync) {
        let t0 = Instant::now();
        let first = self.first_rank();
        // Each rank's problem, kept where a failed run still shows it.
        let slots: Vec<Mutex<Option<String>>> =
            (0..self.team.size()).map(|_| Mutex::new(None)).collect();
        let run = self.team.run(|comm| {
            if let Some(why) = body(comm) {
                *slots[comm.rank() - first]
                    .lock()
                    .expect("no panic holds it") = Some(why);
            }
        });
        let ranks = slots.into_iter().enumerate().find_map(|(i, slot)| {
            let why = slot.into_inner().expect("no panic holds it")?;
            Some(format!("rank {}: {why}", first + i))
        });
        let problem = match (run, ranks) {
            (Ok(_), ranks) => ranks,
            (Err(e), None) => Some(format!("the run failed: {e}")),
            (Err(e), Some(why)) => Some(format!("{why} (and the run failed: {e})")),
        };
        self.record(name, problem, t0);
    }

    /// Runs `body` on every rank in a run of its own, where the call under test must fail:
    /// passes if every rank that makes it (`Outcome::Called`) gets an `Err` that `accept`s
    /// (given the rank), a rank that makes no call returns `Skipped` or is `panicker` (whose
    /// closure panics), and `Team::run` fails where `run_fails` says.
    pub fn check_fails(
        &mut self,
        name: &str,
        run_fails: RunFails,
        panicker: Option<usize>,
        accept: impl Fn(usize, &corecoll::Error) -> bool + Sync,
        body: impl Fn(&Comm) -> Outcome + Sync,
    ) {
        let t0 = Instant::now();
        let first = self.first_rank();
        let slots: Vec<Mutex<Option<Outcome>>> =
            (0..self.team.size()).map(|_| Mutex::new(None)).collect();
        let run = self.team.run(|comm| {
            let outcome = body(comm);
            *slots[comm.rank() - first]
                .lock()
                .expect("no panic holds it") = Some(outcome);
        });
        let mut problem = match (run_fails, &run) {
            (RunFails::Everywhere, Ok(_)) => Some("Team::run returned Ok".to_string()),
            (RunFails::In(q), Ok(_)) if q == self.process => {
                Some("Team::run returned Ok in this process".to_string())
            }
            _ => None,
        };
        // The first error here, printed under the check's line (what the failure looked like).
        let mut shown = None;
        for (i, slot) in slots.into_iter().enumerate() {
            let rank = first + i;
            let slot = slot.into_inner().expect("no panic holds it");
            if let (None, Some(Outcome::Called(Err(e)))) = (&shown, &slot) {
                shown = Some(e.to_string());
            }
            let why = match slot {
                None if panicker == Some(rank) => None,
                None => Some("its closure did not return".to_string()),
                Some(_) if panicker == Some(rank) => Some("it did not panic".to_string()),
                Some(Outcome::Skipped) => None,
                Some(Outcome::Problem(why)) => Some(why),
                Some(Outcome::Called(Ok(()))) => Some("the call succeeded".to_string()),
                Some(Outcome::Called(Err(e))) if accept(rank, &e) => None,
                Some(Outcome::Called(Err(e))) => Some(format!("unexpected error: {e}")),
            };
            if let Some(why) = why {
                problem = problem.or(Some(format!("rank {rank}: {why}")));
            }
        }
        if let (Some(why), Err(e)) = (&mut problem, &run) {
            *why += &format!(" (Team::run: {e})");
        }
        self.record(name, problem, t0);
        if self.process == 0 {
            if let Some(e) = shown {
                println!("       {e}");
            }
        }
    }
}

/// The value of option `name` (`--name VALUE`), parsed, if given.
fn option<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    let i = args.iter().position(|a| a == name)?;
    Some(
        args.get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} takes a number")),
    )
}

/// The sizes of the groups that stand for processes on a plain team of `t` ranks.
fn local_groups(t: usize, threads: usize, by_rank: bool) -> Vec<usize> {
    let mut groups = Vec::new();
    let mut left = t;
    while left > 0 {
        let g = if by_rank { groups.len() + 1 } else { threads };
        groups.push(g.min(left));
        left -= g.min(left);
    }
    groups
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let quick = flag("--quick");
    let by_rank = flag("--threads-by-rank");
    let threads: usize = option(&args, "--threads").unwrap_or(2).max(1);
    let local: Option<usize> = option(&args, "--local");
    let t0 = Instant::now();

    if let Some(t) = local {
        let team = match Team::new(t) {
            Ok(team) => team,
            Err(e) => {
                eprintln!("hybrid_check: {e}");
                return ExitCode::FAILURE;
            }
        };
        let groups = local_groups(t, threads, by_rank);
        let mut suite = Suite {
            team: &team,
            ctx: Ctx::new(&groups, quick, false),
            across: Across::Local,
            process: 0,
            checks: 0,
            failed: Vec::new(),
        };
        return finish(
            &mut suite,
            &format!("a plain team of {t} ranks ({groups:?})"),
            t0,
        );
    }

    let (universe, level) =
        mpi::initialize_with_threading(Threading::Funneled).expect("MPI initialises once");
    let world = universe.world();
    if level < Threading::Funneled {
        eprintln!("hybrid_check: MPI gave {level:?}; a hybrid team needs Threading::Funneled");
        return ExitCode::FAILURE;
    }
    let process = world.rank() as usize;
    let mine = if by_rank { process + 1 } else { threads };
    let mut all = vec![0usize; world.size() as usize];
    world.all_gather_into(&mine, &mut all[..]);
    let team = match Team::builder().ranks(mine).mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("process {process}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut suite = Suite {
        team: &team,
        ctx: Ctx::new(&all, quick, true),
        across: Across::Mpi(world.duplicate()),
        process,
        checks: 0,
        failed: Vec::new(),
    };
    let what = format!("{} processes with {all:?} threads", all.len());
    let code = finish(&mut suite, &what, t0);
    drop(suite);
    drop(team); // before MPI is finalised with `universe`
    code
}

/// Runs every check and prints the summary; the exit code.
fn finish(suite: &mut Suite<'_>, what: &str, t0: Instant) -> ExitCode {
    let rank_check = suite.ctx.size();
    suite.check("the layout: rank and size", |comm| {
        (comm.size() != rank_check).then(|| format!("size {}, want {rank_check}", comm.size()))
    });
    collectives::check_all(suite);
    failures::check_all(suite);
    pipeline::check_all(suite);
    if suite.process == 0 {
        if suite.failed.is_empty() {
            println!(
                "hybrid_check: all {} checks passed on {what} in {:.2} s",
                suite.checks,
                t0.elapsed().as_secs_f64()
            );
        } else {
            println!(
                "hybrid_check: {} of {} checks FAILED on {what} in {:.2} s: {}",
                suite.failed.len(),
                suite.checks,
                t0.elapsed().as_secs_f64(),
                suite.failed.join("; ")
            );
        }
    }
    if suite.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
