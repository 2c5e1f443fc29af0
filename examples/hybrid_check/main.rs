//! Checks every collective of a hybrid `Comm` (feature `mpi`: a team whose ranks are the threads
//! of several MPI processes, `TeamBuilder::mpi`) against sequential references computed in the
//! program: every rank's input is a function of (rank, index), so every rank knows every exact
//! answer (`cases`). The element types, the harness (`suite`) and most checks of results
//! (`collectives`, `vector`) are shared with `examples/everywhere`, in `examples/common/`.
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
//! checks treat as processes. `--join` builds the team with `TeamBuilder::external` and runs
//! each check by threads of the program that join it (`Team::join`, rank 0 on the thread that
//! initialised MPI), locally or under mpirun.
//!
//! Each check runs in a run of its own (a `Team::run`, or the joins), since a failed call fails the rest of its run;
//! global rank 0 prints one line per check (`ok`, `FAIL`, or `skip` where the layout has too
//! few processes), each process prints its ranks' problems on stderr, and the exit code is
//! non-zero on every process if any check failed on any process. What is checked:
//! - results (`results`, from the checks of `collectives` and `vector`): allreduce with every
//!   algorithm (and `Direct` refused between processes, of gather and scatter too, the ring
//!   refused for a non-commutative op), allreduce_into, broadcast and reduce at every root,
//!   scan, exscan, gather, scatter, allgather, alltoall, alltoallv, reduce_scatter_block,
//!   gatherv, scatterv, allgatherv, barrier; `u64` sum (exact), `f64` sum (close to the sequential sum, and the same bits on
//!   every rank where every rank holds the result) and a non-commutative op for every
//!   reducing collective;
//! - the segmented (stage-pipelined) allreduce between processes (`pipeline`): small segments
//!   at counts of one, two and many segments, the default segment on a long vector, processes
//!   that cut differently, and a panic of the op on a leader at a later segment;
//! - requests (`requests`): every non-blocking collective against the blocking call, bit for
//!   bit; twelve in flight waited in per-rank orders; a disagreement, a process that never
//!   starts a request the others started; the refusals on a duplicate and of persistent ones;
//! - persistent short allreduces (`persistent`), which fold through the node's segment where
//!   they can: every start against the blocking call, many alive and in flight, thousands of
//!   starts, set-ups past the node's regions and more alive than it has, a skipped start and
//!   a panic instead of a start;
//! - failures (`failures`): mismatched lengths and roots between processes, a panicking
//!   thread, a process that skips the last collective, roots out of range — each an `Err` on
//!   every rank of every process, never a hang — and a normal run on the same team afterwards.

#[allow(dead_code)]
#[path = "../common/cases.rs"]
mod cases;
#[allow(dead_code)]
#[path = "../common/collectives.rs"]
mod collectives;
mod failures;
mod persistent;
mod pipeline;
mod requests;
mod results;
#[allow(dead_code)]
#[path = "../common/suite.rs"]
mod suite;
#[path = "../common/vector.rs"]
mod vector;

use corecoll::Team;
use mpi::environment::Threading;
use mpi::traits::*;
use std::process::ExitCode;
use std::time::Instant;
use suite::{local_groups, option, Across, Counts, Ctx, Suite};

/// The counts the collectives are checked at (`--quick`: fewer).
fn counts(quick: bool) -> Counts {
    let (allreduce, others) = if quick {
        (vec![0, 1, 7, 100_003], vec![0, 7, 1000])
    } else {
        (vec![0, 1, 7, 1000, 100_003], vec![0, 1, 7, 1000])
    };
    Counts {
        allreduce,
        rooted: others.clone(),
        others,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let quick = flag("--quick");
    let by_rank = flag("--threads-by-rank");
    // The team's ranks are threads of this program that join it (`TeamBuilder::external`).
    let joined = flag("--join");
    let threads: usize = option(&args, "--threads").unwrap_or(2).max(1);
    let local: Option<usize> = option(&args, "--local");
    let t0 = Instant::now();

    if let Some(t) = local {
        let builder = Team::builder().ranks(t);
        let builder = if joined { builder.external() } else { builder };
        let team = match builder.build() {
            Ok(team) => team,
            Err(e) => {
                eprintln!("hybrid_check: {e}");
                return ExitCode::FAILURE;
            }
        };
        let groups = local_groups(t, threads, by_rank);
        let ctx = Ctx::new(&groups, false, counts(quick));
        let suite = Suite::new(&team, ctx, Across::Local, 0).joined(joined);
        return finish(
            &suite,
            false,
            &format!("a plain team of {t} ranks ({groups:?}){}", joins(joined)),
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
    let builder = Team::builder().ranks(mine);
    let builder = if joined { builder.external() } else { builder };
    let team = match builder.mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("process {process}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut ctx = Ctx::new(&all, true, counts(quick));
    ctx.on_node = suite::stage_on_node(&team, joined);
    if process == 0 && !segments_left().is_empty() {
        eprintln!(
            "FAIL the node's segment is still in /dev/shm: {:?}",
            segments_left()
        );
        return ExitCode::FAILURE;
    }
    let suite = Suite::new(&team, ctx, Across::Mpi(world.duplicate()), process).joined(joined);
    let what = format!(
        "{} processes with {all:?} threads{}",
        all.len(),
        joins(joined)
    );
    let code = finish(&suite, joined, &what, t0);
    drop(suite);
    drop(team); // before MPI is finalised with `universe`
    code
}

/// Under `Threading::Funneled`, rank 0 of every process joined from a thread other than the
/// one that initialised MPI: `Error::Unsupported` from every join of every process (before any
/// MPI call), and the next run is whole.
fn join_from_another_thread(suite: &Suite<'_>) {
    let t0 = Instant::now();
    let team = suite.team();
    let first = suite.ctx.offset(suite.process());
    let outcomes: Vec<corecoll::Result<()>> = std::thread::scope(|s| {
        let joins: Vec<_> = (0..team.size())
            .map(|rank| s.spawn(move || team.join(rank, |comm| comm.barrier())?))
            .collect();
        joins
            .into_iter()
            .map(|j| j.join().expect("join catches panics"))
            .collect()
    });
    let problem = outcomes.iter().enumerate().find_map(|(i, o)| match o {
        Err(corecoll::Error::Unsupported { .. }) => None,
        other => Some(format!("rank {}: {other:?}, not Unsupported", first + i)),
    });
    suite.record(
        "join: rank 0 on a thread that did not initialise MPI (Funneled) fails every rank",
        problem,
        t0,
    );
    suite.check("join: a whole run after it", |comm| {
        comm.barrier().err().map(|e| e.to_string())
    });
}

/// How the summary line says that the ranks joined.
fn joins(joined: bool) -> &'static str {
    if joined {
        ", joined by threads of the program"
    } else {
        ""
    }
}

/// The names in /dev/shm of the segments this process made (`corecoll-<pid>-…`): none once its
/// team is built, since each is removed as soon as every process has mapped it.
fn segments_left() -> Vec<String> {
    let mine = format!("corecoll-{}-", std::process::id());
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with(&mine))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs every check (and those of joins from the wrong thread, `wrong_thread`) and prints the
/// summary; the exit code.
fn finish(suite: &Suite<'_>, wrong_thread: bool, what: &str, t0: Instant) -> ExitCode {
    let rank_check = suite.ctx.size();
    suite.check("the layout: rank and size", |comm| {
        (comm.size() != rank_check).then(|| format!("size {}, want {rank_check}", comm.size()))
    });
    results::check_all(suite);
    failures::check_all(suite);
    pipeline::check_all(suite);
    requests::check_all(suite);
    persistent::check_all(suite);
    if wrong_thread {
        join_from_another_thread(suite);
    }
    suite.summary("hybrid_check", what, t0)
}
