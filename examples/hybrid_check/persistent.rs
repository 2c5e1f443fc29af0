//! The checks of persistent short allreduces (`Scope::allreduce_init`) of `hybrid_check`. Where
//! one node holds every process and none runs more than two threads, they fold through the
//! node's segment instead of running as requests: the checks hold either way. Each start
//! against the blocking call with the same algorithm and inputs, bit for bit, for a sum and a
//! non-commutative op, several alive and in flight at once, a thousand starts of one; set-ups
//! dropped and made again past the node's regions; more alive at once than it has, refused on
//! every rank; a process whose ranks skip a start, and a thread that panics instead of one:
//! an `Err` on every rank, never a hang.

use crate::cases::{inputs, Affine, Case};
use crate::suite::{Outcome, RunFails, Suite};
use corecoll::{op, Algorithm, Comm, Error, Result};

/// Whether `got` and `want` hold the same bits.
fn same<T: Case>(got: &[T], want: &[T]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g.bits() == w.bits())
}

/// Rank `r`'s input to start `k` of a persistent allreduce of `n` elements: another rank's
/// inputs each time, so that every start's result differs.
fn input<T: Case>(r: usize, k: usize, n: usize) -> Vec<T> {
    inputs::<T>((r + 3 * k) % 41, n)
}

/// Three persistent allreduces alive at once (`f64` sums of 1 and 31 elements, 15 affine maps
/// under their non-commutative composition) with `alg`, started `starts` times each, all in
/// flight together and waited in an order that depends on the rank and the start: every start
/// against the blocking call.
fn alive_together(comm: &Comm, alg: Algorithm, starts: usize) -> Option<String> {
    let r = comm.rank();
    let (mut a, mut b) = (vec![0f64; 1], vec![0f64; 31]);
    let mut m = inputs::<Affine>(r, 15);
    let out = comm.scope(|s| -> Result<Option<String>> {
        let mut pa = s.allreduce_init_with(&mut a, op::Sum, alg)?;
        let mut pb = s.allreduce_init_with(&mut b, op::Sum, alg)?;
        let mut pm = s.allreduce_init_with(&mut m, Affine::op(), alg)?;
        let mut wrong = None;
        for k in 0..starts {
            let (xa, xb, xm) = (input::<f64>(r, k, 1), input(r, k, 31), input(r, k, 15));
            pa.buffer()?.copy_from_slice(&xa);
            pb.buffer()?.copy_from_slice(&xb);
            pm.buffer()?.copy_from_slice(&xm);
            pm.start()?;
            pa.start()?;
            pb.start()?;
            if (r + k).is_multiple_of(2) {
                pb.wait()?;
                while !pa.test()? {}
                pm.wait()?;
            } else {
                pm.wait()?;
                pa.wait()?;
                pb.wait()?;
            }
            let (mut wa, mut wb, mut wm) = (xa, xb, xm);
            comm.allreduce_with(&mut wa, op::Sum, alg)?;
            comm.allreduce_with(&mut wb, op::Sum, alg)?;
            comm.allreduce_with(&mut wm, Affine::op(), alg)?;
            let differs =
                !same(pa.buffer()?, &wa) || !same(pb.buffer()?, &wb) || !same(pm.buffer()?, &wm);
            // Every rank goes on to the end (the others wait for its starts).
            if differs && wrong.is_none() {
                wrong = Some(format!("{alg:?}: start {k} differs from the blocking call"));
            }
        }
        Ok(wrong)
    });
    out.unwrap_or_else(|e| Some(format!("{alg:?}: {e}")))
}

/// One persistent allreduce of 7 `u64`s started `starts` times, against the sum every start
/// must give (every rank knows every rank's input).
fn many_starts(comm: &Comm, starts: usize) -> Option<String> {
    let (r, p) = (comm.rank(), comm.size());
    let mut x = vec![0u64; 7];
    let out = comm.scope(|s| -> Result<Option<String>> {
        let mut ar = s.allreduce_init(&mut x, op::Sum)?;
        let mut wrong = None;
        for k in 0..starts {
            ar.buffer()?.copy_from_slice(&input::<u64>(r, k, 7));
            ar.start()?;
            ar.wait()?;
            let want: Vec<u64> = (0..7)
                .map(|i| (0..p).fold(0u64, |acc, q| acc.wrapping_add(input::<u64>(q, k, 7)[i])))
                .collect();
            // Every rank goes on to the end (the others wait for its starts).
            if ar.buffer()? != want && wrong.is_none() {
                wrong = Some(format!(
                    "start {k} of {starts}: {:?}, want {want:?}",
                    ar.buffer()?
                ));
            }
        }
        Ok(wrong)
    });
    out.unwrap_or_else(|e| Some(format!("{e}")))
}

/// `count` persistent allreduces set up, started twice and dropped one after the other (more
/// than the node's regions: each is taken again by a later set-up).
fn made_again(comm: &Comm, count: usize) -> Option<String> {
    let (r, p) = (comm.rank(), comm.size());
    for k in 0..count {
        let mut x = input::<u64>(r, k, 3);
        let done = comm.scope(|s| -> Result<()> {
            let mut ar = s.allreduce_init(&mut x, op::Sum)?;
            ar.start()?;
            ar.wait()?;
            ar.buffer()?.copy_from_slice(&input::<u64>(r, k, 3));
            ar.start()?;
            ar.wait()
        });
        let want: Vec<u64> = (0..3)
            .map(|i| (0..p).fold(0u64, |acc, q| acc.wrapping_add(input::<u64>(q, k, 3)[i])))
            .collect();
        match done {
            Err(e) => return Some(format!("set-up {k}: {e}")),
            Ok(()) if x != want => return Some(format!("set-up {k}: wrong sum")),
            Ok(()) => {}
        }
    }
    None
}

/// Every check of persistent short allreduces.
pub fn check_all(s: &Suite<'_>) {
    let ctx = &s.ctx;
    let process_of = |rank: usize| ctx.process_of(rank);
    for alg in [Algorithm::Auto, Algorithm::Linear, Algorithm::Direct] {
        // `Direct` between processes is refused on a team without a node stage: every start
        // would fail alike, which `results` checks for the blocking call.
        if alg == Algorithm::Direct && !s.ctx.on_node {
            continue;
        }
        s.check(
            &format!(
                "persistent: three short allreduces with {alg:?} alive and in flight together, \
                 50 starts against the blocking calls"
            ),
            |comm| alive_together(comm, alg, 50),
        );
    }
    s.check(
        "persistent: one short allreduce started 2000 times",
        |comm| many_starts(comm, 2000),
    );
    s.check(
        "persistent: 150 short allreduces set up and dropped in turn",
        |comm| made_again(comm, 150),
    );
    // A forgotten one (folded: its region never marked done) holds nothing up in later runs.
    s.check(
        "persistent: one forgotten with a start in flight, then set-ups in the next run",
        |comm| {
            let mut v = vec![1u64; 3];
            let forgot = comm.scope(|s| -> Result<()> {
                let mut ar = s.allreduce_init(&mut v, op::Sum)?;
                ar.start()?;
                std::mem::forget(ar);
                Ok(())
            });
            forgot.err().map(|e| format!("forgotten: {e}"))
        },
    );
    s.check(
        "persistent: set-ups in the run after one was forgotten",
        |comm| made_again(comm, 3),
    );
    let two = s.ctx.processes() >= 2;
    let hybrid = s.ctx.hybrid;
    let any = |_: usize, _: &Error| true;
    let name = "persistent: process 1's ranks set it up but skip its start (the others test)";
    if two {
        s.check_fails(name, RunFails::Either, None, any, |comm| {
            let mut v = inputs::<u64>(comm.rank(), 5);
            let skip = process_of(comm.rank()) == 1;
            Outcome::Called(comm.scope(|s| {
                let mut ar = s.allreduce_init(&mut v, op::Sum)?;
                if skip {
                    return Err(Error::InvalidArgument {
                        rank: comm.rank(),
                        op: "hybrid_check",
                        what: "this rank skips the start on purpose".into(),
                    });
                }
                // `test` alone, never `wait`: it must end in an error too.
                ar.start()?;
                while !ar.test()? {}
                Ok(())
            }))
        });
    } else {
        s.skip(name, "needs two processes");
    }
    // Waits through the node see process 1's run fail in its notice or in the segment.
    crate::requests::process_1_panics(
        s,
        "persistent: a thread of process 1 panics instead of its third start",
        |comm, victim| {
            let mut v = inputs::<f64>(comm.rank(), 3);
            Outcome::Called(comm.scope(|s| {
                let mut ar = s.allreduce_init(&mut v, op::Sum)?;
                for k in 0..3 {
                    if k == 2 && comm.rank() == victim {
                        panic!("{} (rank {victim})", crate::failures::INTENTIONAL);
                    }
                    ar.start()?;
                    ar.wait()?;
                }
                Ok(())
            }))
        },
    );
    // Folded through the node (one node holds every process, none runs more than two
    // threads), a rank holds at most 64 at once: the 65th is refused on every rank alike.
    let whole = std::env::var("CORECOLL_NODE_SIZE")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .is_none_or(|k| k >= s.ctx.processes());
    let most = (0..s.ctx.processes()).map(|q| s.ctx.threads(q)).max();
    let name = "persistent: 65 short allreduces alive at once through the node";
    if hybrid && s.ctx.on_node && whole && most <= Some(2) {
        let refused = |_: usize, e: &Error| {
            matches!(
                e,
                Error::InvalidArgument { .. } | Error::Aborted { .. } | Error::ProcessFailed { .. }
            )
        };
        s.check_fails(name, RunFails::Either, None, refused, |comm| {
            let mut bufs = vec![[0u64; 2]; 65];
            Outcome::Called(comm.scope(|s| {
                let all: Result<Vec<_>> = bufs
                    .iter_mut()
                    .map(|b| s.allreduce_init(&mut b[..], op::Sum))
                    .collect();
                all.map(drop)
            }))
        });
    } else {
        s.skip(
            name,
            "needs one node of processes with at most two threads each",
        );
    }
    s.check("persistent: a normal run after the failures", |comm| {
        many_starts(comm, 10)
    });
}
