//! Non-blocking collectives (`Comm::scope`, `Scope::i*`, `Request`) against the blocking calls.
//!
//! **Same bits**: every collective with every algorithm of its enum (`Any::of`), at
//! p ∈ {1, 2, 3, 4, 5, 8, 17} and 33 (fewer counts), counts {0, 1, p − 1, p + 1, 7, 1000} and
//! 65 537 at p ∈ {2, 3}, every root for the rooted ones at small p: the request's result equals
//! the blocking call's with the same algorithm on the same inputs, bit for bit — floating-point
//! sums of arbitrary values (whose bits show the order of the additions) and products of 2×2
//! matrices (non-commutative: rank order), on every algorithm that takes them (`accepts`).
//!
//! **In flight together**: several requests waited in reverse order and in an order that
//! differs per rank, more of them than the shadows (`SHADOWS` = 8), blocking collectives and
//! point-to-point between start and wait, `test` polled until done, `wait_all` and `wait_any`,
//! requests forgotten (`mem::forget`) and completed by the end of their scope.
//!
//! **Failures**: lengths that differ between ranks (a mismatch on every rank), a bad root (an
//! error at start), a failed request never waited (the scope's error), a rank that panics with
//! requests in flight (every other rank fails, none hangs). Teams time out after 30 s.

mod common;

use common::{float, matrix, matrix_op, mismatch, team};
use corecoll::algorithm::{Any, Barrier};
use corecoll::op;
use corecoll::{Algorithm, Collective, Comm, Error, Request, Result};

/// The counts at `p` ranks.
fn counts(p: usize) -> Vec<usize> {
    let mut c = vec![0, 1, p.saturating_sub(1), p + 1, 7, 1000];
    if p > 17 {
        c = vec![0, 1, p + 1];
    }
    if p == 2 || p == 3 {
        c.push(65_537);
    }
    c.sort_unstable();
    c.dedup();
    c
}

/// Whether the blocking call of `alg` takes the matrix op (non-commutative) on 3 ranks.
fn accepts(alg: Any) -> bool {
    let out = team(3)
        .run(|comm| -> Result<()> {
            let mut v = vec![[1u32, 0, 0, 1]; 3];
            let mut out = vec![[0u32; 4]; 3];
            let m = matrix_op();
            match alg {
                Any::Allreduce(a) => comm.allreduce_with(&mut v, m, a),
                Any::Reduce(a) => comm.reduce_with(&mut v, m, 0, a),
                Any::Scan(a) => comm.scan_with(&mut v, m, a),
                Any::ReduceScatter(a) => {
                    let send = vec![[1u32, 0, 0, 1]; 9];
                    comm.reduce_scatter_block_with(&send, &mut out, m, a)
                }
                _ => Ok(()),
            }
        })
        .unwrap();
    out.iter().all(Result::is_ok)
}

/// Runs one algorithm's blocking call and its request on the same inputs at every count, and
/// compares every rank's results.
fn same_bits(p: usize, alg: Any) {
    let noncomm = accepts(alg);
    let t = team(p);
    let out = t
        .run(|comm| -> Result<()> {
            let r = comm.rank();
            for n in counts(p) {
                let roots: Vec<usize> = if p <= 5 {
                    (0..p).collect()
                } else {
                    vec![0, p - 1]
                };
                let f: Vec<f64> = (0..n).map(|i| float(r, i, n as u64)).collect();
                let m: Vec<[u32; 4]> = (0..n).map(|i| matrix(r, i)).collect();
                let fp: Vec<f64> = (0..n * p).map(|i| float(r, i, 5)).collect();
                let mp: Vec<[u32; 4]> = (0..n * p).map(|i| matrix(r, i)).collect();
                match alg {
                    Any::Allreduce(a) => {
                        let (mut x, mut y) = (f.clone(), f.clone());
                        comm.allreduce_with(&mut x, op::Sum, a)?;
                        comm.scope(|s| s.iallreduce_with(&mut y, op::Sum, a)?.wait())?;
                        assert_bits(&x, &y, alg, n, r);
                        if noncomm {
                            let (mut x, mut y) = (m.clone(), m.clone());
                            comm.allreduce_with(&mut x, matrix_op(), a)?;
                            comm.scope(|s| s.iallreduce_with(&mut y, matrix_op(), a)?.wait())?;
                            assert_eq!(x, y, "{alg} n = {n} rank {r}");
                        }
                    }
                    Any::Broadcast(a) => {
                        for &root in &roots {
                            let (mut x, mut y) = (f.clone(), f.clone());
                            comm.broadcast_with(&mut x, root, a)?;
                            comm.scope(|s| s.ibroadcast_with(&mut y, root, a)?.wait())?;
                            assert_bits(&x, &y, alg, n, r);
                        }
                    }
                    Any::Reduce(a) => {
                        for &root in &roots {
                            let (mut x, mut y) = (f.clone(), f.clone());
                            comm.reduce_with(&mut x, op::Sum, root, a)?;
                            comm.scope(|s| s.ireduce_with(&mut y, op::Sum, root, a)?.wait())?;
                            assert_bits(&x, &y, alg, n, r);
                            if noncomm {
                                let (mut x, mut y) = (m.clone(), m.clone());
                                comm.reduce_with(&mut x, matrix_op(), root, a)?;
                                comm.scope(|s| {
                                    s.ireduce_with(&mut y, matrix_op(), root, a)?.wait()
                                })?;
                                assert_eq!(x, y, "{alg} n = {n} rank {r}");
                            }
                        }
                    }
                    Any::Scan(a) => {
                        let (mut x, mut y) = (f.clone(), f.clone());
                        comm.scan_with(&mut x, op::Sum, a)?;
                        comm.scope(|s| s.iscan_with(&mut y, op::Sum, a)?.wait())?;
                        assert_bits(&x, &y, alg, n, r);
                        let (mut x, mut y) = (m.clone(), m.clone());
                        comm.exscan_with(&mut x, matrix_op(), a)?;
                        comm.scope(|s| s.iexscan_with(&mut y, matrix_op(), a)?.wait())?;
                        assert_eq!(x, y, "{alg} exscan n = {n} rank {r}");
                    }
                    Any::Allgather(a) => {
                        let (mut x, mut y) = (vec![0.0; n * p], vec![0.0; n * p]);
                        comm.allgather_with(&f, &mut x, a)?;
                        comm.scope(|s| s.iallgather_with(&f, &mut y, a)?.wait())?;
                        assert_bits(&x, &y, alg, n, r);
                    }
                    Any::Alltoall(a) => {
                        let (mut x, mut y) = (vec![0.0; n * p], vec![0.0; n * p]);
                        comm.alltoall_with(&fp, &mut x, a)?;
                        comm.scope(|s| s.ialltoall_with(&fp, &mut y, a)?.wait())?;
                        assert_bits(&x, &y, alg, n, r);
                    }
                    Any::ReduceScatter(a) => {
                        let (mut x, mut y) = (vec![0.0; n], vec![0.0; n]);
                        comm.reduce_scatter_block_with(&fp, &mut x, op::Sum, a)?;
                        comm.scope(|s| {
                            s.ireduce_scatter_block_with(&fp, &mut y, op::Sum, a)?
                                .wait()
                        })?;
                        assert_bits(&x, &y, alg, n, r);
                        if noncomm {
                            let (mut x, mut y) = (vec![[0u32; 4]; n], vec![[0u32; 4]; n]);
                            comm.reduce_scatter_block_with(&mp, &mut x, matrix_op(), a)?;
                            comm.scope(|s| {
                                s.ireduce_scatter_block_with(&mp, &mut y, matrix_op(), a)?
                                    .wait()
                            })?;
                            assert_eq!(x, y, "{alg} n = {n} rank {r}");
                        }
                    }
                    Any::Barrier(a) if n == 0 => {
                        comm.scope(|s| s.ibarrier_with(a)?.wait())?;
                    }
                    _ => {}
                }
            }
            Ok(())
        })
        .unwrap();
    for (r, o) in out.into_iter().enumerate() {
        o.unwrap_or_else(|e| panic!("{alg} at p = {p}, rank {r}: {e}"));
    }
}

#[track_caller]
fn assert_bits(x: &[f64], y: &[f64], alg: Any, n: usize, r: usize) {
    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(x), bits(y), "{alg}, n = {n}, rank {r}");
}

/// The collectives that have non-blocking forms.
const NONBLOCKING: [Collective; 8] = [
    Collective::Allreduce,
    Collective::Broadcast,
    Collective::Reduce,
    Collective::Scan,
    Collective::Allgather,
    Collective::Alltoall,
    Collective::ReduceScatter,
    Collective::Barrier,
];

fn same_bits_at(p: usize) {
    for c in NONBLOCKING {
        for alg in Any::of(c) {
            same_bits(p, alg);
        }
    }
}

#[test]
fn same_bits_p1_p2() {
    same_bits_at(1);
    same_bits_at(2);
}

#[test]
fn same_bits_p3() {
    same_bits_at(3);
}

#[test]
fn same_bits_p4_p5() {
    same_bits_at(4);
    same_bits_at(5);
}

#[test]
fn same_bits_p8() {
    same_bits_at(8);
}

#[test]
fn same_bits_p17() {
    same_bits_at(17);
}

#[test]
fn same_bits_p33() {
    same_bits_at(33);
}

/// The sum over ranks of `float(r, i, salt)` as the blocking `Auto` allreduce computes it.
fn expected(comm: &Comm, n: usize, salt: u64) -> Vec<f64> {
    let mut v: Vec<f64> = (0..n).map(|i| float(comm.rank(), i, salt)).collect();
    comm.allreduce(&mut v, op::Sum).unwrap();
    v
}

#[test]
fn several_in_flight_in_any_order() {
    for p in [1, 2, 3, 5, 8, 33] {
        let out = team(p)
            .run(|comm| -> Result<()> {
                let r = comm.rank();
                let lens = [3usize, 5000, 1, 70_000, 0, 9, 2, 300, 1, 64, 100, 7];
                let want: Vec<Vec<f64>> = lens
                    .iter()
                    .enumerate()
                    .map(|(k, &n)| expected(comm, n, k as u64))
                    .collect();
                let mut bufs: Vec<Vec<f64>> = lens
                    .iter()
                    .enumerate()
                    .map(|(k, &n)| (0..n).map(|i| float(r, i, k as u64)).collect())
                    .collect();
                let mut root_buf = vec![r as u64; 10];
                let mut token = vec![0u32; 3];
                comm.scope(|s| {
                    let mut reqs: Vec<Request<'_>> = Vec::new();
                    for b in bufs.iter_mut() {
                        reqs.push(s.iallreduce(b, op::Sum)?);
                    }
                    let bcast = s.ibroadcast(&mut root_buf, p - 1)?;
                    // Blocking calls on the communicator meanwhile.
                    let total = comm.allreduce_value(1u64, op::Sum)?;
                    assert_eq!(total, p as u64);
                    if p > 1 {
                        let (to, from) = ((r + 1) % p, (r + p - 1) % p);
                        comm.sendrecv(to, &[r as u32; 3], from, &mut token)?;
                    }
                    // Every rank waits in its own order: rotated by its rank, reversed.
                    let k = reqs.len();
                    let mut order: Vec<usize> = (0..k).map(|i| (i + r) % k).collect();
                    order.reverse();
                    let mut slots: Vec<Option<Request<'_>>> = reqs.into_iter().map(Some).collect();
                    for i in order {
                        slots[i].take().unwrap().wait()?;
                    }
                    bcast.wait()
                })?;
                for (k, b) in bufs.iter().enumerate() {
                    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(b), bits(&want[k]), "request {k} at p = {p}");
                }
                assert!(root_buf.iter().all(|&x| x == (p - 1) as u64));
                if p > 1 {
                    assert_eq!(token, [((r + p - 1) % p) as u32; 3]);
                }
                Ok(())
            })
            .unwrap();
        for (r, o) in out.into_iter().enumerate() {
            o.unwrap_or_else(|e| panic!("p = {p}, rank {r}: {e}"));
        }
    }
}

#[test]
fn test_polls_and_helpers() {
    for p in [1, 2, 3, 6] {
        let out = team(p)
            .run(|comm| -> Result<()> {
                let r = comm.rank();
                let want = expected(comm, 20_000, 1);
                let mut a: Vec<f64> = (0..20_000).map(|i| float(r, i, 1)).collect();
                let mut b = vec![r as i64; 5];
                let mut c = vec![r as i64; 5];
                let mut d = vec![0i64; 5];
                comm.scope(|s| {
                    let mut req = s.iallreduce(&mut a, op::Sum)?;
                    // Work between polls; `test` never blocks.
                    while !req.test()? {
                        std::hint::black_box((0..100).sum::<u64>());
                    }
                    assert!(req.test()?, "a completed request stays completed");
                    let reqs = vec![
                        s.iallreduce(&mut b, op::Max)?,
                        s.iallreduce(&mut c, op::Min)?,
                    ];
                    Request::wait_all(reqs)?;
                    let mut reqs = vec![s.iscan(&mut d, op::Sum)?, s.ibarrier()?];
                    let mut left = 2;
                    while let Some((_, out)) = Request::wait_any(&mut reqs) {
                        out?;
                        left -= 1;
                    }
                    assert_eq!(left, 0);
                    Ok(())
                })?;
                assert_eq!(
                    a.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|f| f.to_bits()).collect::<Vec<_>>()
                );
                assert_eq!(b, vec![p as i64 - 1; 5]);
                assert_eq!(c, vec![0; 5]);
                assert_eq!(d, vec![0; 5]);
                Ok(())
            })
            .unwrap();
        for (r, o) in out.into_iter().enumerate() {
            o.unwrap_or_else(|e| panic!("p = {p}, rank {r}: {e}"));
        }
    }
}

#[test]
fn forgotten_requests_complete_at_the_end_of_their_scope() {
    for p in [1, 2, 4, 9] {
        let out = team(p)
            .run(|comm| -> Result<()> {
                let r = comm.rank();
                let want = expected(comm, 3000, 2);
                let mut a: Vec<f64> = (0..3000).map(|i| float(r, i, 2)).collect();
                let mut b = vec![r as u64 + 1; 40_000];
                comm.scope(|s| {
                    // A request holds nothing that must be dropped (its scope owns the
                    // collective), which is what makes forgetting it harmless.
                    #[allow(clippy::forget_non_drop)]
                    std::mem::forget(s.iallreduce(&mut a, op::Sum)?);
                    drop(s.iallreduce(&mut b, op::Sum)?);
                    Ok(())
                })?;
                assert_eq!(
                    a.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|f| f.to_bits()).collect::<Vec<_>>()
                );
                assert!(b.iter().all(|&x| x == (p * (p + 1) / 2) as u64));
                Ok(())
            })
            .unwrap();
        for (r, o) in out.into_iter().enumerate() {
            o.unwrap_or_else(|e| panic!("p = {p}, rank {r}: {e}"));
        }
    }
}

#[test]
fn lengths_that_differ_fail_on_every_rank() {
    for p in [2, 3, 8] {
        let out = team(p)
            .run(|comm| -> Result<()> {
                let n = if comm.rank() == p - 1 { 6 } else { 5 };
                let mut v = vec![1u64; n];
                comm.scope(|s| {
                    s.iallreduce_with(&mut v, op::Sum, Algorithm::Linear)?
                        .wait()
                })
            })
            .unwrap();
        for (r, o) in out.into_iter().enumerate() {
            let e = o.expect_err("a mismatch");
            assert!(mismatch(e.root_cause()), "p = {p}, rank {r}: {e}");
        }
    }
}

#[test]
fn a_bad_root_is_an_error_at_start_and_an_unwaited_failure_the_scopes() {
    let out = team(3)
        .run(|comm| -> Result<()> {
            let mut v = vec![1u64; 4];
            let started = comm.scope(|s| s.ibroadcast(&mut v, 7).map(drop));
            assert!(started.is_err());
            Ok(())
        })
        .unwrap();
    assert!(out.iter().all(Result::is_ok));
    // A request that fails and is never waited: the scope returns its error.
    let out = team(3)
        .run(|comm| -> Result<()> {
            let n = if comm.rank() == 0 { 2 } else { 3 };
            let mut v = vec![1u64; n];
            comm.scope(|s| {
                let _forgotten = s.iallreduce_with(&mut v, op::Sum, Algorithm::Linear)?;
                Ok(())
            })
        })
        .unwrap();
    for o in out {
        assert!(o.is_err());
    }
}

#[test]
fn a_rank_that_panics_with_requests_in_flight_fails_the_others() {
    for p in [2, 3, 5] {
        let out = team(p).run(|comm| -> Result<()> {
            let mut v = vec![1u64; 50_000];
            let mut w = vec![2u64; 3];
            comm.scope(|s| {
                let a = s.iallreduce(&mut v, op::Sum)?;
                let b = s.iallreduce(&mut w, op::Sum)?;
                if comm.rank() == 1 {
                    panic!("a rank panics on purpose with requests in flight");
                }
                a.wait()?;
                b.wait()
            })
        });
        assert!(
            matches!(out, Err(Error::Panicked { rank: 1, .. })),
            "p = {p}: {out:?}"
        );
    }
}

#[test]
fn many_ranks_many_requests() {
    let p = 33;
    let out = team(p)
        .run(|comm| -> Result<()> {
            let r = comm.rank();
            let mut bufs: Vec<Vec<u64>> =
                (0..20).map(|k| vec![(r * k) as u64; 1 + k * 37]).collect();
            let mut bar = 0usize;
            comm.scope(|s| {
                let mut reqs = Vec::new();
                for b in bufs.iter_mut() {
                    reqs.push(s.iallreduce(b, op::Sum)?);
                }
                reqs.push(s.ibarrier_with(Barrier::Tree)?);
                while let Some((_, out)) = Request::wait_any(&mut reqs) {
                    out?;
                    bar += 1;
                }
                Ok(())
            })?;
            assert_eq!(bar, 21);
            let sum_r = (p * (p - 1) / 2) as u64;
            for (k, b) in bufs.iter().enumerate() {
                assert!(b.iter().all(|&x| x == sum_r * k as u64), "request {k}");
            }
            Ok(())
        })
        .unwrap();
    for (r, o) in out.into_iter().enumerate() {
        o.unwrap_or_else(|e| panic!("rank {r}: {e}"));
    }
}

/// A closure op works in a request as in the blocking call.
#[test]
fn user_ops_in_requests() {
    let out = team(4)
        .run(|comm| -> Result<()> {
            let mut v = vec![comm.rank() as u64 + 1; 10];
            let prod = op::commutative(|a: &u64, b: &u64| a * b);
            comm.scope(|s| s.iallreduce(&mut v, prod)?.wait())?;
            assert!(v.iter().all(|&x| x == 24));
            Ok(())
        })
        .unwrap();
    assert!(out.iter().all(Result::is_ok));
}

/// `test` does not block: rank 0 tells rank 1 to start its side only after a `test` of its
/// own request has returned `false` (a blocking `test` would wait for rank 1 forever, until the
/// team's timeout).
#[test]
fn test_returns_before_the_peers_start() {
    for n in [1usize, 10_000] {
        let out = team(2)
            .run(|comm| -> Result<()> {
                let mut v = vec![comm.rank() as u64 + 1; n];
                comm.scope(|s| {
                    if comm.rank() == 0 {
                        let mut req = s.iallreduce(&mut v, op::Sum)?;
                        assert!(!req.test()?, "rank 1 has not started");
                        comm.send(1, &[1u8])?;
                        req.wait()
                    } else {
                        comm.recv(0, &mut [0u8])?;
                        s.iallreduce(&mut v, op::Sum)?.wait()
                    }
                })?;
                assert!(v.iter().all(|&x| x == 3));
                Ok(())
            })
            .unwrap();
        assert!(out.iter().all(Result::is_ok), "{out:?}");
    }
}

/// A request advances while its rank waits in another call: rank 0 starts a request and then
/// waits for a message that rank 1 sends only after its side of the request has completed.
#[test]
fn requests_advance_inside_other_calls() {
    for p in [2, 3, 7] {
        for n in [1usize, 3000, 100_000] {
            let out = team(p)
                .run(|comm| -> Result<()> {
                    let r = comm.rank();
                    let mut v = vec![r as u64; n];
                    let mut w = vec![r as u64; 2];
                    comm.scope(|s| {
                        let a = s.iallreduce(&mut v, op::Sum)?;
                        let b = s.ibroadcast(&mut w, p - 1)?;
                        if r == 0 {
                            comm.recv(p - 1, &mut [0u8])?;
                            a.wait()?;
                            b.wait()
                        } else {
                            a.wait()?;
                            b.wait()?;
                            if r == p - 1 {
                                comm.send(0, &[1u8])?;
                            }
                            Ok(())
                        }
                    })?;
                    assert!(v.iter().all(|&x| x == (p * (p - 1) / 2) as u64));
                    assert_eq!(w, vec![(p - 1) as u64; 2]);
                    Ok(())
                })
                .unwrap();
            for (r, o) in out.into_iter().enumerate() {
                o.unwrap_or_else(|e| panic!("p = {p}, n = {n}, rank {r}: {e}"));
            }
        }
    }
}

/// A genuine deadlock inside a scope is still found: the ranks' requests complete (each rank's
/// waits advance them), then every rank receives from its left neighbour, which never sends.
/// A rank waiting with requests of its scope still able to go on is not counted as blocked
/// (`requests_advance_inside_other_calls` would then fail with a false deadlock).
#[test]
fn a_deadlock_inside_a_scope_is_found() {
    for p in [2, 3] {
        let out = corecoll::Team::builder()
            .ranks(p)
            .build()
            .unwrap()
            .run(|comm| -> Result<()> {
                let r = comm.rank();
                let mut v = vec![1u64; 4];
                comm.scope(|s| {
                    let _req = s.iallreduce(&mut v, op::Sum)?;
                    comm.recv((r + p - 1) % p, &mut [0u8])?;
                    Ok(())
                })
            })
            .unwrap();
        for (r, o) in out.into_iter().enumerate() {
            let e = o.expect_err("a deadlock");
            assert!(
                matches!(e.root_cause(), Error::Deadlock { .. }),
                "p = {p}, rank {r}: {e}"
            );
        }
    }
}

/// An op that panics inside a request (on one rank) panics that rank as the blocking call would:
/// the run fails with the panic, every other rank's request fails, none hangs.
#[test]
fn an_op_that_panics_inside_a_request() {
    for p in [2, 3] {
        let out = team(p).run(|comm| -> Result<()> {
            let r = comm.rank();
            let mut v = vec![r as u64; 8];
            let angry = op::commutative(move |a: &u64, b: &u64| {
                assert!(r != p - 1, "an op panics on purpose inside a request");
                a + b
            });
            comm.scope(|s| s.iallreduce_with(&mut v, angry, Algorithm::Direct)?.wait())
        });
        assert!(
            matches!(out, Err(Error::Panicked { .. })),
            "p = {p}: {out:?}"
        );
    }
}
