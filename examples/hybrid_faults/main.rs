//! The randomized fault test of a hybrid `Comm` (feature `mpi`): runs of random sequences of
//! collective calls — every collective, `v` forms, split communicators, duplicates, requests
//! and persistent calls — on one team, each run with at most one rank misbehaving in one random
//! way at one call: another root, count, op, element type, algorithm or collective, a panic
//! instead of the call, or a return from the run instead of it (`plan`). Every rank of a run
//! with a fault must get an `Err` (its panicking rank aside), never a hang and never the team's
//! timeout; every rank of a run without one must get the sequential reference's answer bit for
//! bit (`exec`); and the team is reused for the next run.
//!
//! ```text
//! cargo build --features mpi --example hybrid_faults
//! mpirun -np 2 --bind-to none target/debug/examples/hybrid_faults --threads 2 --runs 200
//! mpirun -np 3 --oversubscribe --bind-to none target/debug/examples/hybrid_faults --threads-by-rank --multiple
//! target/debug/examples/hybrid_faults --local 5 --threads 2
//! ```
//!
//! Options: `--runs N` (default 100); `--seed S`, the first run's seed (the runs take S, S+1,
//! …; default: from the clock, printed, so that a failing run can be run again alone with
//! `--seed` and `--runs 1`); `--faulty K`, how many runs in ten have a fault (default 7);
//! `--threads T`, `--threads-by-rank` and `--local T` as in `examples/hybrid_check`;
//! `--multiple` initialises MPI with `Threading::Multiple` (default `Funneled`); `--join` runs
//! the team's ranks as threads of the program that join it (`TeamBuilder::external`).

#[allow(dead_code)]
#[path = "../common/cases.rs"]
mod cases;
mod exec;
mod plan;
#[allow(dead_code)]
#[path = "../common/suite.rs"]
mod suite;

use corecoll::{Comm, Error, Team};
use mpi::environment::Threading;
use mpi::traits::*;
use plan::{Fault, Plan};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use suite::{local_groups, option, Across, Counts, Ctx, Outcome, RunFails, Suite};

/// The start of the message of the panics the runs cause on purpose (not printed).
const INTENTIONAL: &str = "the intentional panic of a fault run";

/// The team's timeout: the backstop that no run may need.
const TIMEOUT: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let by_rank = flag("--threads-by-rank");
    let joined = flag("--join");
    let builder = |t: usize| {
        let b = Team::builder().ranks(t).timeout(TIMEOUT);
        if joined {
            b.external()
        } else {
            b
        }
    };
    let threads: usize = option(&args, "--threads").unwrap_or(2).max(1);
    let runs: u64 = option(&args, "--runs").unwrap_or(100);
    let faulty: usize = option(&args, "--faulty").unwrap_or(7);
    let clock = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs() ^ u64::from(d.subsec_nanos()))
    };
    let seed: u64 = option(&args, "--seed").unwrap_or_else(clock);
    let t0 = Instant::now();
    suite::quiet_panics(INTENTIONAL);

    if let Some(t) = option::<usize>(&args, "--local") {
        let team = match builder(t).build() {
            Ok(team) => team,
            Err(e) => {
                eprintln!("hybrid_faults: {e}");
                return ExitCode::FAILURE;
            }
        };
        let groups = local_groups(t, threads, by_rank);
        let suite = Suite::new(
            &team,
            Ctx::new(&groups, false, no_counts()),
            Across::Local,
            0,
        )
        .joined(joined);
        let what = format!("a plain team of {t} ranks ({groups:?}){}", joins(joined));
        return run_all(&suite, seed, runs, faulty, &what, t0);
    }

    let wanted = if flag("--multiple") {
        Threading::Multiple
    } else {
        Threading::Funneled
    };
    let (universe, level) = mpi::initialize_with_threading(wanted).expect("MPI initialises once");
    let world = universe.world();
    if level < wanted {
        eprintln!("hybrid_faults: MPI gave {level:?}, not {wanted:?}");
        return ExitCode::FAILURE;
    }
    let process = world.rank() as usize;
    // Every process runs process 0's seeds.
    let mut seed = seed;
    world.process_at_rank(0).broadcast_into(&mut seed);
    let mine = if by_rank { process + 1 } else { threads };
    let mut all = vec![0usize; world.size() as usize];
    world.all_gather_into(&mine, &mut all[..]);
    let team = match builder(mine).mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("process {process}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ctx = Ctx::new(&all, true, no_counts());
    let suite = Suite::new(&team, ctx, Across::Mpi(world.duplicate()), process).joined(joined);
    let what = format!(
        "{} processes with {all:?} threads ({level:?}){}",
        all.len(),
        joins(joined)
    );
    let code = run_all(&suite, seed, runs, faulty, &what, t0);
    drop(suite);
    drop(team); // before MPI is finalised with `universe`
    code
}

/// How the summary line says that the ranks joined.
fn joins(joined: bool) -> &'static str {
    if joined {
        ", joined by threads of the program"
    } else {
        ""
    }
}

/// The suite's counts, which these runs draw for themselves.
fn no_counts() -> Counts {
    Counts {
        allreduce: Vec::new(),
        rooted: Vec::new(),
        others: Vec::new(),
    }
}

/// Runs `runs` runs from seed `seed` and prints the summary; the exit code.
fn run_all(
    s: &Suite<'_>,
    seed: u64,
    runs: u64,
    faulty: usize,
    what: &str,
    t0: Instant,
) -> ExitCode {
    let p = s.ctx.size();
    let parts = exec::Parts {
        of: (0..p).map(|r| s.ctx.process_of(r)).collect(),
    };
    let part = |r: usize| s.ctx.threads(s.ctx.process_of(r));
    s.say(&format!(
        "seeds {seed}..={} (one again: --seed N --runs 1)",
        seed.wrapping_add(runs.saturating_sub(1))
    ));
    for k in 0..runs {
        let seed = seed.wrapping_add(k);
        let plan = plan::plan(seed, p, &part, faulty);
        let name = format!("seed {seed}: {}", describe(&plan));
        match plan.fault {
            None => s.check(&name, |comm| clean(comm, &plan, &parts)),
            Some((_, victim, how)) => {
                let panicker = (how == Fault::Panic).then_some(victim);
                let not_by_timeout =
                    |_: usize, e: &Error| !matches!(e.root_cause(), Error::Timeout { .. });
                s.check_fails(&name, RunFails::Either, panicker, not_by_timeout, |comm| {
                    faulty_run(comm, &plan, &parts)
                });
            }
        }
    }
    s.summary("hybrid_faults", what, t0)
}

/// The plan in a few words: its steps and its fault.
fn describe(plan: &Plan) -> String {
    let steps: Vec<String> = plan
        .steps
        .iter()
        .map(|st| format!("{:?}({}, {:?})", st.kind, st.n, st.ty))
        .collect();
    let fault = match plan.fault {
        Some((at, victim, how)) => format!("; rank {victim} at step {at}: {how:?}"),
        None => String::new(),
    };
    format!("{}{fault}", steps.join(" "))
}

/// A run without a fault on this rank: the first wrong result or error, if any.
fn clean(comm: &Comm, plan: &Plan, parts: &exec::Parts) -> Option<String> {
    for (i, step) in plan.steps.iter().enumerate() {
        match exec::run(comm, step, parts, None) {
            Ok(None) => {}
            Ok(Some(why)) => return Some(format!("step {i}: {why}")),
            Err(e) => return Some(format!("step {i}: {e}")),
        }
    }
    None
}

/// A run with a fault on this rank: the steps up to the first error (which must come).
fn faulty_run(comm: &Comm, plan: &Plan, parts: &exec::Parts) -> Outcome {
    let (at, victim, how) = plan.fault.expect("a run with a fault");
    for (i, step) in plan.steps.iter().enumerate() {
        let fault = (i == at && comm.rank() == victim).then_some(how);
        match fault {
            Some(Fault::Panic) => panic!("{INTENTIONAL} (rank {victim}, step {i})"),
            Some(Fault::Return) => return Outcome::Skipped,
            _ => {}
        }
        if let Err(e) = exec::run(comm, step, parts, fault) {
            return Outcome::Called(Err(e));
        }
    }
    Outcome::Called(Ok(()))
}
