//! The harness of the checks of `examples/hybrid_check` and `examples/everywhere` (included by
//! each with `#[path]`): the layout of a team's ranks over processes ([`Ctx`]), one
//! run per check ([`Suite::check`], [`Suite::check_fails`]: a `Team::run`, or one
//! `Team::join` per rank on a team whose ranks join, [`run_team`]), and every process's
//! agreement on each check's outcome ([`Across`]).
//!
//! Each check runs in a run of its own, since a failed call fails the rest of its run.
//! Process 0 prints one line per check (`ok`, `FAIL`, or `skip` where the layout does not
//! allow it); each process prints its ranks' problems on stderr.

use corecoll::{Comm, Team};
use std::cell::{Cell, RefCell};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

/// The value of option `name` (`--name VALUE`) of the command line `args`, parsed, if given.
pub fn option<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    let i = args.iter().position(|a| a == name)?;
    Some(
        args.get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} takes a number")),
    )
}

/// The sizes of the groups that stand for processes on a plain team of `t` ranks: groups of
/// `threads`, or of 1, 2, 3, … ranks (`by_rank`), the last one cut short.
pub fn local_groups(t: usize, threads: usize, by_rank: bool) -> Vec<usize> {
    let mut groups = Vec::new();
    let mut left = t;
    while left > 0 {
        let g = if by_rank { groups.len() + 1 } else { threads };
        groups.push(g.min(left));
        left -= g.min(left);
    }
    groups
}

/// Keeps out of the log the panics whose message starts with `intentional` (those a check
/// causes on purpose), and every other one in.
pub fn quiet_panics(intentional: &'static str) {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied());
        if !message.is_some_and(|m| m.starts_with(intentional)) {
            hook(info);
        }
    }));
}

/// The counts (elements per rank, or per block) the checks run at.
pub struct Counts {
    /// Allreduce's.
    pub allreduce: Vec<usize>,
    /// Broadcast's and reduce's (at every root).
    pub rooted: Vec<usize>,
    /// Every other collective's.
    pub others: Vec<usize>,
}

/// The layout of the ranks the checks run on and the counts they run at, the same on every
/// rank of every process.
pub struct Ctx {
    /// The first rank of every process (of every group of ranks that stands for one on a
    /// threads-only team), and the number of ranks at the end.
    offsets: Vec<usize>,
    /// The counts.
    counts: Counts,
    /// Whether the ranks span MPI processes (a hybrid team), not only threads of one.
    pub hybrid: bool,
    /// Whether the stage between those processes runs through their node's shared memory
    /// (they all share one node: `Comm::auto_choice` says so).
    pub on_node: bool,
}

/// Runs `f` on every rank of this process's part of `team`: `Team::run`, or where the team's
/// ranks are joined threads (`joined`, `TeamBuilder::external`) one `Team::join` per rank, rank
/// 0 on the calling thread (MPI's main thread, as `Threading::Funneled` asks) and every other
/// on a thread of its own; the results by rank, or the run's error.
pub fn run_team<R: Send>(
    team: &Team,
    joined: bool,
    f: impl Fn(&Comm) -> R + Sync,
) -> corecoll::Result<Vec<R>> {
    if !joined {
        return team.run(f);
    }
    std::thread::scope(|s| {
        let others: Vec<_> = (1..team.size())
            .map(|rank| {
                let f = &f;
                s.spawn(move || team.join(rank, f))
            })
            .collect();
        let mut all = vec![team.join(0, &f)];
        all.extend(
            others
                .into_iter()
                .map(|h| h.join().expect("join catches panics")),
        );
        all.into_iter().collect()
    })
}

/// Whether `team`'s stage between processes runs through the node's shared memory: what
/// `Comm::auto_choice` says after a barrier.
pub fn stage_on_node(team: &Team, joined: bool) -> bool {
    let said = run_team(team, joined, |comm| {
        comm.barrier()
            .map(|()| corecoll::unstable::auto_choice(comm))
    });
    matches!(said.as_deref(), Ok([Ok(Some(s)), ..]) if s.starts_with("node shared memory"))
}

impl Ctx {
    /// The layout of processes (or groups) with `threads[q]` ranks each.
    pub fn new(threads: &[usize], hybrid: bool, counts: Counts) -> Ctx {
        let mut offsets = vec![0];
        for &t in threads {
            offsets.push(offsets.last().copied().unwrap_or(0) + t);
        }
        Ctx {
            offsets,
            counts,
            hybrid,
            on_node: false,
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

    /// The counts the collectives other than allreduce, broadcast and reduce are checked at.
    pub fn counts(&self) -> &[usize] {
        &self.counts.others
    }

    /// The counts broadcast and reduce are checked at.
    pub fn rooted_counts(&self) -> &[usize] {
        &self.counts.rooted
    }

    /// The counts the allreduce is checked at.
    pub fn allreduce_counts(&self) -> &[usize] {
        &self.counts.allreduce
    }
}

/// How the processes agree on a check's outcome: over MPI, or alone (one process).
pub enum Across {
    /// The user's world communicator (called by each process's main thread, outside runs).
    #[cfg(feature = "mpi")]
    Mpi(mpi::topology::SimpleCommunicator),
    /// One process.
    Local,
}

impl Across {
    /// Every process's `words`, element-wise maximum, left in `words` on every process.
    #[cfg_attr(not(feature = "mpi"), allow(unused_variables))]
    fn max(&self, words: &mut [u64; 2]) {
        match self {
            #[cfg(feature = "mpi")]
            Across::Mpi(world) => {
                use mpi::traits::*;
                let mine = *words;
                world.all_reduce_into(
                    &mine[..],
                    &mut words[..],
                    mpi::collective::SystemOperation::max(),
                );
            }
            Across::Local => {}
        }
    }

    /// Whether `ok` holds on every process.
    pub fn all(&self, ok: bool) -> bool {
        let mut w = [u64::from(!ok), 0];
        self.max(&mut w);
        w[0] == 0
    }

    /// Whether every process passes the same `h` (the maximum and the complement of the
    /// minimum agree).
    pub fn same(&self, h: u64) -> bool {
        let mut w = [h, !h];
        self.max(&mut w);
        w[0] == !w[1]
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
    /// This process's number (0 on a threads-only team).
    process: usize,
    /// Checks run.
    checks: Cell<usize>,
    /// Names of the checks that failed.
    failed: RefCell<Vec<String>>,
    /// Whether the team's ranks are joined threads ([`run_team`]).
    joined: bool,
}

impl<'a> Suite<'a> {
    /// The checks of process `process` on `team`, laid out as `ctx` says.
    pub fn new(team: &'a Team, ctx: Ctx, across: Across, process: usize) -> Suite<'a> {
        Suite {
            team,
            ctx,
            across,
            process,
            checks: Cell::new(0),
            failed: RefCell::new(Vec::new()),
            joined: false,
        }
    }

    /// The same checks run by threads that join the team (`TeamBuilder::external`).
    pub fn joined(mut self, joined: bool) -> Self {
        self.joined = joined;
        self
    }

    /// The team the checks run on.
    pub fn team(&self) -> &Team {
        self.team
    }

    /// This process's number.
    pub fn process(&self) -> usize {
        self.process
    }

    /// The number of this process's first rank: on a threads-only team the team's own ranks
    /// are the whole world, so 0.
    fn first_rank(&self) -> usize {
        if self.ctx.hybrid {
            self.ctx.offset(self.process)
        } else {
            0
        }
    }

    /// Prints `line` on process 0 (under a check's line: what a failure looked like).
    pub fn say(&self, line: &str) {
        if self.process == 0 {
            println!("       {line}");
        }
    }

    /// Whether every process passes the same `h`.
    pub fn same_everywhere(&self, h: u64) -> bool {
        self.across.same(h)
    }

    /// Records check `name`: passed if `problem` is `None` on every process.
    pub fn record(&self, name: &str, problem: Option<String>, t0: Instant) {
        if let Some(why) = &problem {
            eprintln!("process {}: {name}: {why}", self.process);
        }
        let ok = self.across.all(problem.is_none());
        self.checks.set(self.checks.get() + 1);
        if !ok {
            self.failed.borrow_mut().push(name.to_string());
        }
        if self.process == 0 {
            let status = if ok { "ok  " } else { "FAIL" };
            println!("{status} {name} ({:.3} s)", t0.elapsed().as_secs_f64());
        }
    }

    /// Prints a check skipped for this layout (on every process alike).
    pub fn skip(&self, name: &str, why: &str) {
        if self.process == 0 {
            println!("skip {name} ({why})");
        }
    }

    /// Runs `body` on every rank in a run of its own; this process's problem: `None` if the
    /// run succeeds and every rank of this process returns `None` (a rank's `Some` describes
    /// its problem).
    pub fn run_check(&self, body: impl Fn(&Comm) -> Option<String> + Sync) -> Option<String> {
        let first = self.first_rank();
        // Each rank's problem, kept where a failed run still shows it.
        let slots: Vec<Mutex<Option<String>>> =
            (0..self.team.size()).map(|_| Mutex::new(None)).collect();
        let run = run_team(self.team, self.joined, |comm| {
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
        match (run, ranks) {
            (Ok(_), ranks) => ranks,
            (Err(e), None) => Some(format!("the run failed: {e}")),
            (Err(e), Some(why)) => Some(format!("{why} (and the run failed: {e})")),
        }
    }

    /// [`Suite::run_check`], recorded as check `name`.
    pub fn check(&self, name: &str, body: impl Fn(&Comm) -> Option<String> + Sync) {
        let t0 = Instant::now();
        let problem = self.run_check(body);
        self.record(name, problem, t0);
    }

    /// Runs `body` on every rank in a run of its own, where the call under test must fail;
    /// returns this process's problem and the first error seen here. No problem if every rank
    /// that makes the call (`Outcome::Called`) gets an `Err` that `accept`s (given the rank),
    /// a rank that makes no call returns `Skipped` or is `panicker` (whose closure panics),
    /// and `Team::run` fails where `run_fails` says.
    pub fn run_fails(
        &self,
        run_fails: RunFails,
        panicker: Option<usize>,
        accept: impl Fn(usize, &corecoll::Error) -> bool + Sync,
        body: impl Fn(&Comm) -> Outcome + Sync,
    ) -> (Option<String>, Option<String>) {
        let first = self.first_rank();
        let slots: Vec<Mutex<Option<Outcome>>> =
            (0..self.team.size()).map(|_| Mutex::new(None)).collect();
        let run = run_team(self.team, self.joined, |comm| {
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
        (problem, shown)
    }

    /// [`Suite::run_fails`], recorded as check `name`, with the first error printed under its
    /// line.
    pub fn check_fails(
        &self,
        name: &str,
        run_fails: RunFails,
        panicker: Option<usize>,
        accept: impl Fn(usize, &corecoll::Error) -> bool + Sync,
        body: impl Fn(&Comm) -> Outcome + Sync,
    ) {
        let t0 = Instant::now();
        let (problem, shown) = self.run_fails(run_fails, panicker, accept, body);
        self.record(name, problem, t0);
        if let Some(e) = shown {
            self.say(&e);
        }
    }

    /// Prints the summary line of `program`'s checks on `what` (process 0) and returns the
    /// exit code: a failure if any check failed.
    pub fn summary(&self, program: &str, what: &str, t0: Instant) -> ExitCode {
        let failed = self.failed.borrow();
        let checks = self.checks.get();
        let seconds = t0.elapsed().as_secs_f64();
        if self.process == 0 {
            if failed.is_empty() {
                println!("{program}: all {checks} checks passed on {what} in {seconds:.2} s");
            } else {
                println!(
                    "{program}: {} of {checks} checks FAILED on {what} in {seconds:.2} s: {}",
                    failed.len(),
                    failed.join("; ")
                );
            }
        }
        if failed.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}
