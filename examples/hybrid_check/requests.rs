//! The checks of non-blocking collectives (`Comm::scope`, `Scope::i*`) of `hybrid_check`:
//! every one against the blocking call with the same algorithm and inputs, bit for bit, in the
//! same run; many in flight, waited in an order that differs between ranks, with blocking
//! calls meanwhile; a disagreement between processes, a process that never starts a request
//! the others started, and a thread that panics — each an `Err` on every rank that made the
//! call, never a hang; persistent collectives started many times and a setup that differs;
//! and requests on a duplicate in flight with the original's, started in another order on
//! different ranks.

use crate::cases::{inputs, Affine, Case};
use crate::collectives::note;
use crate::suite::{Outcome, RunFails, Suite};
use corecoll::algorithm::{Broadcast, Reduce};
use corecoll::{op, Algorithm, Comm, Error, Request, Result};

/// Whether `got` and `want` hold the same bits.
fn same<T: Case>(got: &[T], want: &[T]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g.bits() == w.bits())
}

/// What a rank found: `Err` if a call failed (which fails the run, so every rank stops
/// calling), `Ok(Some(..))` if a result was wrong — the rank then goes on making the same
/// calls as the others, so that a wrong answer shows as a FAIL rather than as ranks waiting
/// in different calls.
type Found = std::result::Result<Option<String>, String>;

/// Runs `blocking` on one copy of `input` and the request that `start` makes on another, and
/// says what differs (`what` names the call).
fn against<T: Case>(
    comm: &Comm,
    what: &str,
    input: &[T],
    blocking: impl FnOnce(&Comm, &mut [T]) -> Result<()>,
    start: impl for<'s> FnOnce(&'s corecoll::Scope<'s, '_>, &'s mut [T]) -> Result<Request<'s>>,
) -> Found {
    let mut want = input.to_vec();
    blocking(comm, &mut want).map_err(|e| format!("{what}, blocking: {e}"))?;
    let mut got = input.to_vec();
    comm.scope(|s| start(s, &mut got)?.wait())
        .map_err(|e| format!("{what}, request: {e}"))?;
    Ok((!same(&got, &want)).then(|| format!("{what}: the request's result differs")))
}

/// The reducing requests of type `T` at `n` elements with the type's op.
fn reductions<T: Case>(comm: &Comm, n: usize, algs: &[Algorithm]) -> Found {
    let (r, p) = (comm.rank(), comm.size());
    let x = inputs::<T>(r, n);
    let o = T::op();
    let mut problem = None;
    for &alg in algs {
        let what = format!("iallreduce {} {alg:?} n={n}", T::NAME);
        let found = against(
            comm,
            &what,
            &x,
            |c, b| c.allreduce_with(b, o, alg),
            |s, b| s.iallreduce_with(b, o, alg),
        )?;
        note(&mut problem, found);
    }
    let what = format!("ireduce {} n={n}", T::NAME);
    let found = against(
        comm,
        &what,
        &x,
        |c, b| c.reduce_with(b, o, p - 1, Reduce::Auto),
        |s, b| s.ireduce_with(b, o, p - 1, Reduce::Auto),
    )?;
    note(&mut problem, found);
    let what = format!("iscan {} n={n}", T::NAME);
    let found = against(comm, &what, &x, |c, b| c.scan(b, o), |s, b| s.iscan(b, o))?;
    note(&mut problem, found);
    let what = format!("iexscan {} n={n}", T::NAME);
    let found = against(
        comm,
        &what,
        &x,
        |c, b| c.exscan(b, o),
        |s, b| s.iexscan(b, o),
    )?;
    note(&mut problem, found);
    Ok(problem)
}

/// Every request against its blocking call, at every count of the suite.
fn every_request(comm: &Comm, counts: &[usize]) -> Option<String> {
    every_request_found(comm, counts).unwrap_or_else(Some)
}

/// [`every_request`], telling a failed call from a wrong result ([`Found`]).
fn every_request_found(comm: &Comm, counts: &[usize]) -> Found {
    let (r, p) = (comm.rank(), comm.size());
    let between: Vec<Algorithm> = Algorithm::ALL
        .into_iter()
        .filter(|a| !a.needs_shared_memory() && *a != Algorithm::Native)
        .collect();
    let keeps_order: Vec<Algorithm> = between
        .iter()
        .copied()
        .filter(|a| !matches!(a, Algorithm::Ring { .. }))
        .collect();
    let mut problem = None;
    for &n in counts {
        let u64_algs = [&between[..], &[Algorithm::Native]].concat();
        note(&mut problem, reductions::<u64>(comm, n, &u64_algs)?);
        note(&mut problem, reductions::<f64>(comm, n, &between)?);
        note(&mut problem, reductions::<Affine>(comm, n, &keeps_order)?);
        let x = inputs::<u64>(r, n);
        for root in [0, p - 1] {
            let what = format!("ibroadcast root {root} n={n}");
            let found = against(
                comm,
                &what,
                &x,
                |c, b| c.broadcast_with(b, root, Broadcast::Auto),
                |s, b| s.ibroadcast(b, root),
            )?;
            note(&mut problem, found);
        }
        let mut want = vec![0u64; n * p];
        let mut got = vec![0u64; n * p];
        comm.allgather(&x, &mut want)
            .and_then(|()| comm.scope(|s| s.iallgather(&x, &mut got)?.wait()))
            .map_err(|e| format!("iallgather n={n}: {e}"))?;
        let differs = |what: &str| format!("{what} n={n}: the request's result differs");
        note(&mut problem, (got != want).then(|| differs("iallgather")));
        let all = inputs::<u64>(r, n * p);
        comm.alltoall(&all, &mut want)
            .and_then(|()| comm.scope(|s| s.ialltoall(&all, &mut got)?.wait()))
            .map_err(|e| format!("ialltoall n={n}: {e}"))?;
        note(&mut problem, (got != want).then(|| differs("ialltoall")));
        let aff = inputs::<Affine>(r, n * p);
        let fill = Affine::input(0, 0);
        let (mut want, mut got) = (vec![fill; n], vec![fill; n]);
        comm.reduce_scatter_block(&aff, &mut want, Affine::op())
            .and_then(|()| {
                comm.scope(|s| {
                    s.ireduce_scatter_block(&aff, &mut got, Affine::op())?
                        .wait()
                })
            })
            .map_err(|e| format!("ireduce_scatter_block n={n}: {e}"))?;
        note(
            &mut problem,
            (!same(&got, &want)).then(|| differs("ireduce_scatter_block")),
        );
    }
    comm.scope(|s| s.ibarrier()?.wait())
        .map_err(|e| format!("ibarrier: {e}"))?;
    Ok(problem)
}

/// Twelve requests in flight, a blocking allreduce among them, waited in an order rotated by
/// rank; each against the blocking call.
fn many_in_flight(comm: &Comm) -> Option<String> {
    let (r, p) = (comm.rank(), comm.size());
    const K: usize = 12;
    let n = 301;
    let input = |k: usize| inputs::<f64>((r + k) % p, n);
    let mut want: Vec<Vec<f64>> = (0..K).map(input).collect();
    for w in want.iter_mut() {
        if let Err(e) = comm.allreduce(w, op::Sum) {
            return Some(format!("blocking allreduce: {e}"));
        }
    }
    let mut got: Vec<Vec<f64>> = (0..K).map(input).collect();
    let mut middle = inputs::<u64>(r, 5);
    let waited = comm.scope(|s| {
        let mut reqs = Vec::new();
        for g in got.iter_mut() {
            reqs.push(Some(s.iallreduce(g, op::Sum)?));
        }
        comm.allreduce(&mut middle, op::Sum)?;
        for k in 0..K {
            let i = (k + r) % K;
            reqs[i].take().expect("waited once").wait()?;
        }
        Ok(())
    });
    if let Err(e) = waited {
        return Some(format!("requests: {e}"));
    }
    let bad = (0..K).find(|&k| !same(&got[k], &want[k]));
    bad.map(|k| format!("request {k} differs from the blocking allreduce"))
}

/// Persistent collectives started many times, each start against the blocking call.
fn persistent(comm: &Comm) -> Option<String> {
    let (r, p) = (comm.rank(), comm.size());
    let n = 33;
    let mut x = vec![0f64; n];
    let mut b = vec![0u64; n];
    let out = comm.scope(|s| {
        let mut problem = None;
        let mut ar = s.allreduce_init(&mut x, op::Sum)?;
        let mut bc = s.broadcast_init(&mut b, p - 1)?;
        let mut bar = s.barrier_init()?;
        for k in 0..50 {
            let input = inputs::<f64>((r + k) % p, n);
            ar.buffer()?.copy_from_slice(&input);
            bc.buffer()?.copy_from_slice(&inputs::<u64>(r + k, n));
            ar.start()?;
            bc.start()?;
            bar.start()?;
            bar.wait()?;
            bc.wait()?;
            ar.wait()?;
            let mut want = input;
            comm.allreduce(&mut want, op::Sum)?;
            if !same(ar.buffer()?, &want) {
                let why = format!("allreduce start {k} differs from the blocking call");
                note(&mut problem, Some(why));
            }
            if bc.buffer()? != inputs::<u64>(p - 1 + k, n) {
                note(
                    &mut problem,
                    Some(format!("broadcast start {k}: wrong result")),
                );
            }
        }
        Ok(problem)
    });
    out.unwrap_or_else(|e| Some(format!("persistent: {e}")))
}

/// The check `name` in which the last thread of process 1 (the victim, `body`'s second
/// argument) panics: every run fails, and every rank's call with it — between processes with
/// `ProcessFailed` or `Aborted`. Skipped with one process.
pub fn process_1_panics(s: &Suite<'_>, name: &str, body: impl Fn(&Comm, usize) -> Outcome + Sync) {
    if s.ctx.processes() < 2 {
        s.skip(name, "needs two processes");
        return;
    }
    let (ctx, hybrid) = (&s.ctx, s.ctx.hybrid);
    let victim = ctx.offset(1) + ctx.threads(1) - 1;
    s.check_fails(
        name,
        RunFails::Everywhere,
        Some(victim),
        |rank, e| {
            !hybrid
                || ctx.process_of(rank) == 1
                || matches!(e, Error::ProcessFailed { .. } | Error::Aborted { .. })
        },
        |comm| body(comm, victim),
    );
}

/// Every check of requests.
pub fn check_all(s: &Suite<'_>) {
    let ctx = &s.ctx;
    let process_of = |rank: usize| ctx.process_of(rank);
    let counts: Vec<usize> = s.ctx.counts().to_vec();
    s.check(
        "requests: every non-blocking collective gives the blocking call's bits",
        |comm| every_request(comm, &counts),
    );
    s.check(
        "requests: twelve in flight and a blocking call, waited in per-rank orders",
        many_in_flight,
    );
    let two = s.ctx.processes() >= 2;
    let hybrid = s.ctx.hybrid;
    let any = |_: usize, _: &Error| true;
    let name = "requests: process 1 starts another collective (ibroadcast, not iallreduce)";
    if two {
        s.check_fails(name, RunFails::Either, None, any, |comm| {
            let mut v = inputs::<u64>(comm.rank(), 7);
            Outcome::Called(comm.scope(|s| {
                if process_of(comm.rank()) == 1 {
                    s.ibroadcast(&mut v, 0)?.wait()
                } else {
                    s.iallreduce(&mut v, op::Sum)?.wait()
                }
            }))
        });
    } else {
        s.skip(name, "needs two processes");
    }
    // Between processes the started request meets process 1's end of the run at the last
    // check of its shadow: an error there and in process 1's `Team::run`.
    let name = "requests: process 1's ranks never start a request the others started";
    if two {
        let run_fails = if hybrid {
            RunFails::In(1)
        } else {
            RunFails::Either
        };
        s.check_fails(name, run_fails, None, any, |comm| {
            if process_of(comm.rank()) == 1 {
                return Outcome::Skipped;
            }
            let mut v = inputs::<u64>(comm.rank(), 7);
            Outcome::Called(comm.scope(|s| s.iallreduce(&mut v, op::Sum)?.wait()))
        });
    } else {
        s.skip(name, "needs two processes");
    }
    // A thread of process 1 panics before it starts the request the others start: theirs
    // fails (between processes with `ProcessFailed` or `Aborted`), and so does every run.
    process_1_panics(
        s,
        "requests: a thread of process 1 panics before starting an iallreduce",
        |comm, victim| {
            if comm.rank() == victim {
                panic!("{} (rank {victim})", crate::failures::INTENTIONAL);
            }
            let mut v = inputs::<u64>(comm.rank(), 1000);
            Outcome::Called(comm.scope(|s| s.iallreduce(&mut v, op::Sum)?.wait()))
        },
    );
    let want = crate::cases::reduction::<u64>(s.ctx.size(), 1000);
    s.check(
        "requests: on a duplicate and on the team's communicator at once, started in another \
         order on odd processes and odd ranks",
        |comm| {
            let d = match comm.dup() {
                Ok(d) => d,
                Err(e) => return Some(format!("dup: {e}")),
            };
            let mut a = inputs::<u64>(comm.rank(), 1000);
            let mut b = inputs::<u64>(comm.rank(), 1000);
            let odd = (process_of(comm.rank()) + comm.rank()) % 2 == 1;
            let done = comm.scope(|s| {
                d.scope(|t| {
                    let (ra, rb) = if odd {
                        let rb = t.iallreduce(&mut b, op::Sum)?;
                        (s.iallreduce(&mut a, op::Sum)?, rb)
                    } else {
                        let ra = s.iallreduce(&mut a, op::Sum)?;
                        (ra, t.iallreduce(&mut b, op::Sum)?)
                    };
                    d.barrier()?;
                    rb.wait()?;
                    ra.wait()
                })
            });
            match done {
                Err(e) => Some(format!("iallreduce on both: {e}")),
                Ok(()) if a != want || b != want => Some("iallreduce on both: wrong result".into()),
                Ok(()) => None,
            }
        },
    );
    s.check(
        "persistent: allreduce, broadcast and barrier started 50 times, against blocking calls",
        persistent,
    );
    let name = "persistent: process 1 sets up another length";
    if two {
        s.check_fails(name, RunFails::Either, None, any, |comm| {
            let n = if process_of(comm.rank()) == 1 { 8 } else { 7 };
            let mut v = inputs::<u64>(comm.rank(), n);
            Outcome::Called(comm.scope(|s| s.allreduce_init(&mut v, op::Sum).map(drop)))
        });
    } else {
        s.skip(name, "needs two processes");
    }
    s.check("requests: a normal run after the failures", |comm| {
        let mut v = inputs::<u64>(comm.rank(), 1000);
        match comm.scope(|s| s.iallreduce(&mut v, op::Sum)?.wait()) {
            Err(e) => Some(format!("iallreduce: {e}")),
            Ok(()) if v != want => Some("iallreduce: wrong result".into()),
            Ok(()) => None,
        }
    });
}
