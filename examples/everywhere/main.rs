//! One program, every kind of team: checks the collectives of `corecoll::Comm` against
//! sequential references computed in the program, with the checks written once against `&Comm`,
//! on whatever team the program was started on:
//!
//! - started directly, the ranks are threads of this process (`Team::new(P)`, no MPI at all;
//!   builds and runs without the `mpi` feature);
//! - started by `mpirun` (found from the launcher's environment, `OMPI_COMM_WORLD_SIZE` or
//!   `PMI_SIZE`, or forced with `--mpi`; feature `mpi`), the ranks are the threads of every MPI
//!   process, T per process (`Team::builder().ranks(T).mpi(&world)`, a hybrid team; T = 1 is
//!   one rank per MPI process).
//!
//! ```text
//! cargo run --example everywhere -- --ranks 4
//! cargo build --release --features mpi --example everywhere
//! mpirun -np 2 --bind-to none target/release/examples/everywhere
//! mpirun -np 3 --oversubscribe --bind-to none target/release/examples/everywhere --threads 2
//! ```
//!
//! (As root, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.
//! `--bind-to none` lets each process's threads use every core.)
//!
//! Options: `--ranks P` ranks of a threads-only team (default 4); `--threads T` threads per
//! MPI process (default 1); `--mpi` a hybrid team even where no launcher's environment is
//! found; `--quick` broadcast and reduce at every root with a large count of 10 007 elements
//! instead of 100 003 (as CI runs the teams of several threads per process); `--panic` the
//! panic check alone (below).
//!
//! Every rank's input is a function of (rank, index), so every rank knows every exact answer
//! (`examples/common/cases.rs`). Each check is a `Team::run` of its own; rank 0 prints one
//! line per check (`ok`, `FAIL`, or `skip` where the layout does not allow it), and the exit
//! code is non-zero on every process if any check failed on any rank. Counts 0, 1, 2, p − 1
//! (p the number of ranks), 7, 1000 and a large one: 100 003 elements for allreduce,
//! broadcast and reduce (`--quick`: 10 007 for broadcast and reduce), 10 007 per block for
//! the other collectives. What is checked:
//! - allreduce with every algorithm that runs on the team (`Direct` is refused between
//!   processes; the others run everywhere), three pipelines with small explicit blocks, and
//!   `Auto`: `u64` sum (exact), `f64` sum (close to the sequential sum, the same bits on every
//!   rank), a non-commutative op (composition of affine maps mod 2⁶¹ − 1; not the ring, which
//!   refuses it); `Native` (MPI's own collective between processes, `Auto` between threads)
//!   with `i32` max, `i32` wrapping product and `u64` xor; a zero-sized element type;
//! - broadcast and reduce from and to every root with every algorithm that runs on the team;
//! - allreduce_into, scan and exscan, gather, scatter, allgather, alltoall,
//!   reduce_scatter_block and the `v` forms, with `Auto`, and barrier (the checks shared with
//!   `examples/hybrid_check`, in `examples/common/`);
//! - refusals, an error on every rank, after which the next run works (`refusals.rs`): the
//!   ring with a non-commutative op and a root out of range on every team; between processes
//!   also the shared-memory-only `Direct`, and `Native` with a user op, with `f64` min and on
//!   `u128` (on a threads-only team these run, and their results are checked instead);
//! - mismatched calls (length, built-in op, root, algorithm, element type, collective kind)
//!   made by the last process's ranks (the last rank's on a threads-only team):
//!   `Error::Mismatch` on every rank (the same one on every rank between processes), and the
//!   next run works.
//!
//! `--panic`: rank 0's op panics inside an allreduce (the linear one, when it combines the
//! values of two processes, or of two ranks on a threads-only team). On a hybrid team the job
//! must end (through `MPI_Abort`) rather than hang; on threads the other ranks get `Err` and
//! `Team::run` returns `Error::Panicked`, which the program checks. `--panic-auto`: the same
//! with the `Auto` allreduce, which between processes on several nodes runs through the nodes'
//! shared memory and the nodes' leaders, where the job must end too.

#[allow(dead_code)]
#[path = "../common/cases.rs"]
mod cases;
#[allow(dead_code)]
#[path = "../common/collectives.rs"]
mod collectives;
mod refusals;
#[allow(dead_code)]
#[path = "../common/suite.rs"]
mod suite;
#[path = "../common/vector.rs"]
mod vector;

use cases::{reduction, reduction_with, Affine, Case};
use collectives::{allreduce, allreduce_op, broadcast, label, reduce, reduce_op};
use corecoll::algorithm::{Broadcast, Reduce};
use corecoll::{op, Algorithm, Block, Error, Team};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;
use suite::{Across, Counts, Ctx, Suite};

/// The command line.
struct Options {
    /// Ranks of a threads-only team.
    ranks: usize,
    /// Threads per MPI process.
    threads: usize,
    /// A hybrid team (started by mpirun, or `--mpi`).
    mpi: bool,
    /// The smaller large count for broadcast and reduce.
    quick: bool,
    /// The panic check alone, with the allreduce algorithm it runs.
    panic: Option<Algorithm>,
}

impl Options {
    fn parse() -> Result<Options, String> {
        // Open MPI's and MPICH's launchers give every process these.
        let launched = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
            .iter()
            .any(|v| std::env::var_os(v).is_some());
        let mut o = Options {
            ranks: 4,
            threads: 1,
            mpi: launched,
            quick: false,
            panic: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut number = || {
                let v = args.next().ok_or(format!("{a} needs a value"))?;
                match v.parse::<usize>() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(format!("{a} {v}: a positive whole number")),
                }
            };
            match a.as_str() {
                "--ranks" => o.ranks = number()?,
                "--threads" => o.threads = number()?,
                "--mpi" => o.mpi = true,
                "--quick" => o.quick = true,
                "--panic" => o.panic = Some(Algorithm::Linear),
                "--panic-auto" => o.panic = Some(Algorithm::Auto),
                _ => return Err(format!("unknown argument {a} (see the example's docs)")),
            }
        }
        Ok(o)
    }
}

/// The counts the checks run at on `p` ranks: 0, 1, 2, fewer than p, odd, and a large one
/// (100 003 elements for allreduce, and for broadcast and reduce unless `quick`; 10 007 per
/// block for the other collectives, whose buffers hold p or p² blocks).
fn counts(p: usize, quick: bool) -> Counts {
    let with = |large: usize| {
        let mut c = vec![0, 1, 2, p.saturating_sub(1), 7, 1000, large];
        c.sort_unstable();
        c.dedup();
        c
    };
    Counts {
        allreduce: with(100_003),
        rooted: with(if quick { 10_007 } else { 100_003 }),
        others: with(10_007),
    }
}

fn main() -> ExitCode {
    let o = match Options::parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("everywhere: {e}");
            return ExitCode::FAILURE;
        }
    };
    if o.mpi {
        return hybrid_main(&o);
    }
    let team = match Team::new(o.ranks) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("everywhere: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Each rank stands for a process where a check needs processes (the mismatches).
    let ctx = Ctx::new(&vec![1; o.ranks], false, counts(o.ranks, o.quick));
    if let Some(alg) = o.panic {
        return panic_check(&team, &ctx, 0, alg);
    }
    let suite = Suite::new(&team, ctx, Across::Local, 0);
    let what = format!("{} threads of one process", o.ranks);
    check_all(&suite, &what)
}

/// Under mpirun: a hybrid team of `--threads` threads in every process.
#[cfg(feature = "mpi")]
fn hybrid_main(o: &Options) -> ExitCode {
    use mpi::environment::Threading;
    use mpi::traits::*;
    let Some((universe, level)) = mpi::initialize_with_threading(Threading::Funneled) else {
        eprintln!("everywhere: MPI was initialised already");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let (process, processes) = (world.rank() as usize, world.size() as usize);
    if level < Threading::Funneled {
        eprintln!("everywhere: MPI gave {level:?}; a hybrid team needs Threading::Funneled");
        return ExitCode::FAILURE;
    }
    let team = match Team::builder().ranks(o.threads).mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("everywhere: process {process}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let p = processes * o.threads;
    let mut ctx = Ctx::new(&vec![o.threads; processes], true, counts(p, o.quick));
    ctx.on_node = suite::stage_on_node(&team, false);
    let code = if let Some(alg) = o.panic {
        panic_check(&team, &ctx, process, alg)
    } else {
        let suite = Suite::new(&team, ctx, Across::Mpi(world.duplicate()), process);
        let procs = if processes == 1 {
            "process"
        } else {
            "processes"
        };
        let what = if o.threads == 1 {
            format!("{processes} MPI {procs}, one rank each")
        } else {
            format!("{processes} MPI {procs} × {} threads", o.threads)
        };
        check_all(&suite, &what)
    };
    drop(team); // before MPI is finalised with `universe`
    code
}

/// Without the `mpi` feature there is no hybrid team.
#[cfg(not(feature = "mpi"))]
fn hybrid_main(_: &Options) -> ExitCode {
    eprintln!(
        "everywhere: started by an MPI launcher (or with --mpi), but built without the `mpi` \
         feature: cargo build --features mpi --example everywhere"
    );
    ExitCode::FAILURE
}

/// The algorithms of a collective that run on the suite's team: every one on a threads-only
/// team; between processes every one but `Direct`, which is refused there (`refusals`).
fn running<A: Copy + PartialEq>(
    s: &Suite<'_>,
    all: impl IntoIterator<Item = A>,
    direct: A,
) -> Vec<A> {
    all.into_iter()
        .filter(|&a| !(s.ctx.hybrid && a == direct))
        .collect()
}

/// Every check, then the summary line; the exit code.
fn check_all(s: &Suite<'_>, what: &str) -> ExitCode {
    let t0 = Instant::now();
    let p = s.ctx.size();
    s.check("the layout: rank and size", |comm| {
        (comm.size() != p).then(|| format!("size {}, want {p}", comm.size()))
    });
    let big = *s.ctx.allreduce_counts().iter().max().expect("counts");
    let most = big.max(p * s.ctx.counts().iter().max().expect("counts"));
    let full_u64 = reduction::<u64>(p, most);
    let full_f64 = reduction::<f64>(p, most);
    let full_aff = reduction::<Affine>(p, most);

    // Allreduce: every algorithm, and three pipelines in many small blocks.
    let mut algs = running(s, Algorithm::ALL, Algorithm::Direct);
    let b = Block::Elements(4000);
    algs.extend([
        Algorithm::PipelinedTree { block: b },
        Algorithm::DualRoot { block: b },
        Algorithm::TwoTree { block: b },
    ]);
    for &alg in &algs {
        allreduce(s, alg, &full_u64);
        allreduce(s, alg, &full_f64);
        // The ring and MPI's own collective refuse a non-commutative op (`refusals`); between
        // threads `Native` is `Auto`, which takes it.
        let refuses =
            matches!(alg, Algorithm::Ring { .. }) || (alg == Algorithm::Native && s.ctx.hybrid);
        if !refuses {
            allreduce(s, alg, &full_aff);
        }
    }
    native_ops(s);
    zero_sized(s);
    collectives::allreduce_into(s, &full_u64);
    collectives::allreduce_into(s, &full_aff);

    for alg in running(s, Broadcast::ALL, Broadcast::Direct) {
        broadcast::<u64>(s, alg);
        broadcast::<Affine>(s, alg);
    }
    for alg in running(s, Reduce::ALL, Reduce::Direct) {
        reduce(s, &full_u64, alg);
        reduce(s, &full_f64, alg);
        if !(alg == Reduce::Native && s.ctx.hybrid) {
            reduce(s, &full_aff, alg);
        }
    }
    collectives::others(s, &full_u64, &full_f64, &full_aff);
    refusals::check_all(s);
    s.summary("everywhere", what, t0)
}

/// `Native` with more of MPI's built-in ops than the sums: `i32` max and wrapping product,
/// `u64` xor (allreduce), `i32` max (reduce at every root).
fn native_ops(s: &Suite<'_>) {
    let p = s.ctx.size();
    let counts = s.ctx.allreduce_counts();
    let big = *counts.iter().max().expect("counts");
    let native = Algorithm::Native;
    let max = reduction::<i32>(p, big);
    allreduce(s, native, &max);
    let prod = reduction_with(p, big, |a: &i32, b: &i32| a.wrapping_mul(*b));
    let name = format!("allreduce {} i32 prod (wrapping)", label(native));
    allreduce_op(s, &name, native, op::Prod, &prod, counts);
    let xor = reduction_with(p, big, |a: &u64, b: &u64| a ^ b);
    let name = format!("allreduce {} u64 xor", label(native));
    allreduce_op(s, &name, native, op::BitXor, &xor, counts);
    let name = format!(
        "reduce {} {} (every root)",
        i32::NAME,
        Reduce::Native.name()
    );
    reduce_op(s, &name, Reduce::Native, op::Max, &max);
}

/// Allreduce (`Auto` and recursive doubling) and broadcast of `()`, at counts 0 and 7.
fn zero_sized(s: &Suite<'_>) {
    s.check("allreduce and broadcast of a zero-sized type", |comm| {
        let unit = op::commutative(|_: &(), _: &()| ());
        for n in [0, 7] {
            let mut units = vec![(); n];
            for alg in [Algorithm::Auto, Algorithm::RecursiveDoubling] {
                if let Err(e) = comm.allreduce_with(&mut units, unit, alg) {
                    return Some(format!("allreduce {}, n = {n}: {e}", alg.name()));
                }
            }
            if let Err(e) = comm.broadcast(&mut units, comm.size() - 1) {
                return Some(format!("broadcast, n = {n}: {e}"));
            }
        }
        None
    });
}

/// `--panic`: rank 0's op panics inside an allreduce with `alg` when it combines the values of
/// two processes (of two ranks on a threads-only team, where each rank stands for a process).
/// On a hybrid team that is inside the stage between processes, and the job must end there
/// (`MPI_Abort`); returning is a failure. On threads every other rank must get `Err` and
/// `Team::run` must return `Error::Panicked` naming rank 0.
fn panic_check(team: &Team, ctx: &Ctx, process: usize, alg: Algorithm) -> ExitCode {
    let first = if ctx.hybrid { ctx.offset(process) } else { 0 };
    let results: Vec<Mutex<Option<corecoll::Result<()>>>> =
        (0..team.size()).map(|_| Mutex::new(None)).collect();
    let run = team.run(|comm| {
        let me = comm.rank();
        // One bit per process: a value with two bits holds two processes' contributions.
        let mut v = vec![1u64 << (ctx.process_of(me) % 64); 1000];
        let boom = op::commutative(move |a: &u64, b: &u64| {
            let both = a | b;
            assert!(
                me != 0 || both.count_ones() < 2,
                "the op panics on rank 0, as asked (--panic)"
            );
            both
        });
        let result = comm.allreduce_with(&mut v, boom, alg);
        *results[me - first].lock().expect("no panic holds it") = Some(result);
    });
    if ctx.hybrid {
        eprintln!(
            "everywhere: process {process}: the run returned ({run:?}) instead of the job ending"
        );
        return ExitCode::FAILURE;
    }
    let mut problems = Vec::new();
    match run {
        Err(Error::Panicked { rank: 0, .. }) => {}
        other => problems.push(format!(
            "Team::run returned {other:?}, not a panic of rank 0"
        )),
    }
    for (rank, slot) in results.into_iter().enumerate().skip(1) {
        match slot.into_inner().expect("no panic holds it") {
            Some(Err(_)) => {}
            other => problems.push(format!("rank {rank}: {other:?}, not an error")),
        }
    }
    let status = if problems.is_empty() { "ok  " } else { "FAIL" };
    println!("{status} a panicking op on rank 0: an error on every other rank, Team::run fails");
    for why in &problems {
        println!("       {why}");
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
