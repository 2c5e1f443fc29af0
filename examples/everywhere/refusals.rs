//! The refusals and mismatches of `everywhere`: calls that must be an error on every rank —
//! never a hang or a wrong answer — each in a run of its own, and after each a run on the same
//! team that must work.
//!
//! Between processes the shared-memory-only `Direct` and MPI's own collective (`Native`) with
//! what MPI does not have are refused; on a threads-only team the same calls run, and their
//! results are checked here instead. A mismatch is made by the ranks of the last process (by
//! the last rank on a threads-only team, where each rank stands for a process), so that
//! between processes it is the processes' call check that meets it.

use crate::cases::{inputs, reduction, reduction_with, Affine, Case};
use crate::collectives::{allreduce, reduce_op};
use crate::suite::{Outcome, RunFails, Suite};
use corecoll::algorithm::{Broadcast, Reduce};
use corecoll::{op, Algorithm, Block, Comm, Error};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Instant;

/// Which errors a refusal accepts, by the run's root cause ([`Error::root_cause`]).
type Kind = fn(&Error) -> bool;

fn unsupported(e: &Error) -> bool {
    matches!(e, Error::Unsupported { .. })
}

fn mismatch(e: &Error) -> bool {
    matches!(e, Error::Mismatch { .. })
}

fn out_of_range(e: &Error) -> bool {
    matches!(e, Error::RankOutOfRange { .. })
}

/// A hash of a message, for comparing messages between processes.
fn hash_text(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Whether a run of an allreduce of 7 `u64` works on the team (after a failed one).
fn next_run_works(s: &Suite<'_>) -> Option<String> {
    let want = reduction::<u64>(s.ctx.size(), 7);
    s.run_check(|comm| {
        let mut v = inputs::<u64>(comm.rank(), 7);
        match comm.allreduce(&mut v, u64::op()) {
            Err(e) => Some(format!("the next run's allreduce failed: {e}")),
            Ok(()) => (v != want).then(|| "the next run's allreduce is wrong".to_string()),
        }
    })
}

/// Check `name`: `call` must fail on every rank, with an error whose root cause is of `kind`
/// and, if `same`, the same root cause on every rank of every process; then the next run
/// must work. The error of process 0's first rank is printed under the check's line.
fn refused(
    s: &Suite<'_>,
    name: &str,
    kind: Kind,
    same: bool,
    call: impl Fn(&Comm) -> corecoll::Result<()> + Sync,
) {
    let t0 = Instant::now();
    let causes = Mutex::new(BTreeSet::new());
    let accept = |_: usize, e: &Error| {
        let cause = e.root_cause();
        causes
            .lock()
            .expect("no panic holds it")
            .insert(cause.to_string());
        kind(cause)
    };
    let (mut problem, shown) = s.run_fails(RunFails::Either, None, accept, |comm| {
        Outcome::Called(call(comm))
    });
    // Every process takes part in the comparison and in the next run, whatever it saw.
    let causes = causes.into_inner().expect("no panic holds it");
    let mine = causes.iter().next().map_or(0, |c| hash_text(c));
    let agreed = s.same_everywhere(mine);
    if same {
        if causes.len() > 1 {
            problem = problem.or(Some(format!("the ranks' errors differ: {causes:?}")));
        }
        if !agreed {
            problem = problem.or(Some("the errors differ between processes".to_string()));
        }
    }
    problem = problem.or(next_run_works(s));
    s.record(name, problem, t0);
    if let Some(e) = shown {
        s.say(&e);
    }
}

/// Every refusal and mismatch.
pub fn check_all(s: &Suite<'_>) {
    refused(
        s,
        "refused: allreduce ring with a non-commutative op",
        unsupported,
        false,
        |comm| {
            let mut v = inputs::<Affine>(comm.rank(), 5);
            let ring = Algorithm::Ring { block: Block::Auto };
            comm.allreduce_with(&mut v, Affine::op(), ring)
        },
    );
    refused(
        s,
        "refused: broadcast from a root out of range",
        out_of_range,
        false,
        |comm| comm.broadcast(&mut [1u64; 5], comm.size()),
    );
    if s.ctx.hybrid {
        between_processes(s);
    } else {
        between_threads(s);
    }
    mismatches(s);
}

/// The refusals between processes: what needs shared memory, and what MPI's own collective
/// cannot do.
fn between_processes(s: &Suite<'_>) {
    // Processes that share one node run the direct algorithms through its shared memory
    // (hybrid_check checks them there); between nodes they need shared memory they lack.
    if !s.ctx.on_node {
        let shm = "refused between processes (shared memory only)";
        refused(
            s,
            &format!("{shm}: allreduce direct"),
            unsupported,
            false,
            |comm| comm.allreduce_with(&mut [1u64; 5], op::Sum, Algorithm::Direct),
        );
        refused(
            s,
            &format!("{shm}: broadcast direct"),
            unsupported,
            false,
            |comm| comm.broadcast_with(&mut [1u64; 5], 0, Broadcast::Direct),
        );
        refused(
            s,
            &format!("{shm}: reduce direct"),
            unsupported,
            false,
            |comm| comm.reduce_with(&mut [1u64; 5], op::Sum, 0, Reduce::Direct),
        );
    }
    let native = "refused between processes: native";
    refused(
        s,
        &format!("{native} with a user op"),
        unsupported,
        false,
        |comm| {
            let mut v = inputs::<Affine>(comm.rank(), 5);
            comm.allreduce_with(&mut v, Affine::op(), Algorithm::Native)
        },
    );
    refused(
        s,
        &format!("{native} reduce of f64 min (total_cmp against C's <)"),
        unsupported,
        false,
        |comm| comm.reduce_with(&mut [1.0f64; 5], op::Min, 0, Reduce::Native),
    );
    refused(
        s,
        &format!("{native} u128 sum (no MPI type)"),
        unsupported,
        false,
        |comm| comm.allreduce_with(&mut [1u128; 5], op::Sum, Algorithm::Native),
    );
}

/// On a threads-only team the calls refused between processes run (`Native` is `Auto`
/// there; `Direct` ran with the other algorithms): their results.
fn between_threads(s: &Suite<'_>) {
    let p = s.ctx.size();
    let big = *s.ctx.allreduce_counts().iter().max().expect("counts");
    allreduce(s, Algorithm::Native, &reduction::<u128>(p, big));
    let min = |a: &f64, b: &f64| if b.total_cmp(a).is_lt() { *b } else { *a };
    let name = "reduce native f64 min (every root)";
    reduce_op(
        s,
        name,
        Reduce::Native,
        op::Min,
        &reduction_with(p, big, min),
    );
}

/// Mismatched calls: the last process's ranks call differently from the others.
fn mismatches(s: &Suite<'_>) {
    let names = [
        "length",
        "built-in op",
        "root",
        "algorithm",
        "element type",
        "collective (barrier against reduce)",
    ];
    if s.ctx.processes() < 2 {
        let why = if s.ctx.hybrid {
            "needs two processes"
        } else {
            "needs two ranks"
        };
        for name in names {
            s.skip(&format!("mismatch: {name}"), why);
        }
        return;
    }
    let ctx = &s.ctx;
    let last = ctx.processes() - 1;
    let odd = |comm: &Comm| ctx.process_of(comm.rank()) == last;
    let p = ctx.size();
    // Between processes the check agrees on one error for all; on threads the ranks that meet
    // the difference themselves report it each in its own words.
    let same = ctx.hybrid;
    let mismatch_of = |name: &str, call: &(dyn Fn(&Comm) -> corecoll::Result<()> + Sync)| {
        refused(s, &format!("mismatch: {name}"), mismatch, same, call);
    };
    mismatch_of(names[0], &|comm| {
        let mut v = vec![1u64; if odd(comm) { 8 } else { 7 }];
        comm.allreduce(&mut v, op::Sum)
    });
    mismatch_of(names[1], &|comm| {
        let mut v = [3u64; 9];
        if odd(comm) {
            comm.allreduce_with(&mut v, op::Max, Algorithm::Native)
        } else {
            comm.allreduce_with(&mut v, op::Sum, Algorithm::Native)
        }
    });
    mismatch_of(names[2], &|comm| {
        comm.broadcast(&mut [1u64; 100], if odd(comm) { 0 } else { p - 1 })
    });
    mismatch_of(names[3], &|comm| {
        let alg = if odd(comm) {
            Algorithm::Chain { block: Block::Auto }
        } else {
            Algorithm::DualRoot { block: Block::Auto }
        };
        comm.allreduce_with(&mut [1u64; 100], op::Sum, alg)
    });
    mismatch_of(names[4], &|comm| {
        if odd(comm) {
            comm.allreduce(&mut [1u32; 7], op::Sum)
        } else {
            comm.allreduce(&mut [1i32; 7], op::Sum)
        }
    });
    mismatch_of(names[5], &|comm| {
        if odd(comm) {
            comm.barrier()
        } else {
            comm.reduce(&mut [1u64; 7], op::Sum, 0)
        }
    });
}
