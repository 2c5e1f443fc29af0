//! Persistent collectives (`Scope::*_init`, `Persistent`) against the blocking calls.
//!
//! Every persistent collective with every algorithm of its enum at p ∈ {1, 2, 3, 5, 8} and
//! 17 (fewer algorithms' counts), started several times on new contents of its buffers: each
//! start's result equals the blocking call's on the same inputs, bit for bit (float sums of
//! arbitrary values; 2×2 matrix products, non-commutative, where the algorithm takes them).
//! Thousands of starts of one 8-byte allreduce; two persistent collectives and a non-blocking
//! one in flight together; buffers refused while a start is in flight; a setup that differs
//! between ranks (length, root, op, algorithm) an error on every rank at setup; a bad root an
//! error at setup; a persistent collective forgotten with a start in flight; a rank that skips
//! a start while the others poll `test` alone (an error for them, never a spin for ever).
//! Teams time out after 30 s.

mod common;

use common::{float, matrix, matrix_op, mismatch, team};
use corecoll::algorithm::{Allgather, Alltoall, Any, Broadcast, Reduce, ReduceScatter};
use corecoll::op;
use corecoll::{Algorithm, Collective, Error, Result};

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// Whether the blocking allreduce, reduce and reduce-scatter of `alg` take a non-commutative
/// op (the ring refuses it).
fn noncommutative_ok(alg: Any) -> bool {
    !alg.name().contains("ring")
}

/// A commutative op on matrices (element-wise xor), for algorithms that refuse the product.
fn xor() -> impl corecoll::op::Op<[u32; 4]> + Copy {
    op::commutative(|a: &[u32; 4], b: &[u32; 4]| std::array::from_fn(|i| a[i] ^ b[i]))
}

const STARTS: u64 = 3;

fn persistent_matches_blocking(p: usize, alg: Any, n: usize) {
    let out = team(p)
        .run(|comm| -> Result<()> {
            let r = comm.rank();
            let root = p / 2;
            match alg {
                Any::Allreduce(a) => {
                    let mut buf = vec![0.0f64; n];
                    let mut mbuf = vec![[0u32; 4]; n];
                    let nc = noncommutative_ok(alg);
                    comm.scope(|s| {
                        let mut ar = s.allreduce_init_with(&mut buf, op::Sum, a)?;
                        let mut mr = if nc {
                            Some(s.allreduce_init_with(&mut mbuf, matrix_op(), a)?)
                        } else {
                            None
                        };
                        for k in 0..STARTS {
                            let input: Vec<f64> = (0..n).map(|i| float(r, i, k)).collect();
                            ar.buffer()?.copy_from_slice(&input);
                            ar.start()?;
                            assert!(ar.buffer().is_err(), "the buffer while in flight");
                            assert!(ar.start().is_err(), "a second start while in flight");
                            let mut want = input.clone();
                            comm.allreduce_with(&mut want, op::Sum, a)?;
                            ar.wait()?;
                            assert_eq!(bits(ar.buffer()?), bits(&want), "{alg} start {k}");
                            if let Some(mr) = &mut mr {
                                let m: Vec<[u32; 4]> =
                                    (0..n).map(|i| matrix(r, i + k as usize)).collect();
                                mr.buffer()?.copy_from_slice(&m);
                                mr.start()?;
                                let mut want = m;
                                comm.allreduce_with(&mut want, matrix_op(), a)?;
                                mr.wait()?;
                                assert_eq!(mr.buffer()?, &want[..], "{alg} start {k}");
                            }
                        }
                        Ok(())
                    })
                }
                Any::Broadcast(a) => {
                    let mut buf = vec![0.0f64; n];
                    comm.scope(|s| {
                        let mut b = s.broadcast_init_with(&mut buf, root, a)?;
                        for k in 0..STARTS {
                            let input: Vec<f64> = (0..n).map(|i| float(r, i, k)).collect();
                            b.buffer()?.copy_from_slice(&input);
                            b.start()?;
                            let mut want = input;
                            comm.broadcast_with(&mut want, root, a)?;
                            b.wait()?;
                            assert_eq!(bits(b.buffer()?), bits(&want), "{alg} start {k}");
                        }
                        Ok(())
                    })
                }
                Any::Reduce(a) => {
                    let mut buf = vec![[0u32; 4]; n];
                    let nc = noncommutative_ok(alg);
                    comm.scope(|s| {
                        let mut red = if nc {
                            s.reduce_init_with(&mut buf, matrix_op(), root, a)?
                        } else {
                            s.reduce_init_with(&mut buf, xor(), root, a)?
                        };
                        for k in 0..STARTS {
                            let m: Vec<[u32; 4]> =
                                (0..n).map(|i| matrix(r, i + k as usize)).collect();
                            red.buffer()?.copy_from_slice(&m);
                            red.start()?;
                            let mut want = m;
                            if nc {
                                comm.reduce_with(&mut want, matrix_op(), root, a)?;
                            } else {
                                comm.reduce_with(&mut want, xor(), root, a)?;
                            }
                            red.wait()?;
                            if r == root {
                                assert_eq!(red.buffer()?, &want[..], "{alg} start {k}");
                            }
                        }
                        Ok(())
                    })
                }
                Any::Allgather(a) => {
                    let (mut send, mut recv) = (vec![0.0f64; n], vec![0.0f64; n * p]);
                    comm.scope(|s| {
                        let mut g = s.allgather_init_with(&mut send, &mut recv, a)?;
                        assert!(g.buffer().is_err(), "buffer of a two-buffer collective");
                        for k in 0..STARTS {
                            let input: Vec<f64> = (0..n).map(|i| float(r, i, k)).collect();
                            g.send_buffer()?.copy_from_slice(&input);
                            g.start()?;
                            let mut want = vec![0.0; n * p];
                            comm.allgather_with(&input, &mut want, a)?;
                            g.wait()?;
                            assert_eq!(bits(g.recv_buffer()?), bits(&want), "{alg} start {k}");
                        }
                        Ok(())
                    })
                }
                Any::Alltoall(a) => {
                    let (mut send, mut recv) = (vec![0.0f64; n * p], vec![0.0f64; n * p]);
                    comm.scope(|s| {
                        let mut g = s.alltoall_init_with(&mut send, &mut recv, a)?;
                        for k in 0..STARTS {
                            let input: Vec<f64> = (0..n * p).map(|i| float(r, i, k)).collect();
                            g.send_buffer()?.copy_from_slice(&input);
                            g.start()?;
                            let mut want = vec![0.0; n * p];
                            comm.alltoall_with(&input, &mut want, a)?;
                            g.wait()?;
                            assert_eq!(bits(g.recv_buffer()?), bits(&want), "{alg} start {k}");
                        }
                        Ok(())
                    })
                }
                Any::ReduceScatter(a) => {
                    let (mut send, mut recv) = (vec![0.0f64; n * p], vec![0.0f64; n]);
                    comm.scope(|s| {
                        let mut g =
                            s.reduce_scatter_block_init_with(&mut send, &mut recv, op::Sum, a)?;
                        for k in 0..STARTS {
                            let input: Vec<f64> = (0..n * p).map(|i| float(r, i, k)).collect();
                            g.send_buffer()?.copy_from_slice(&input);
                            g.start()?;
                            let mut want = vec![0.0; n];
                            comm.reduce_scatter_block_with(&input, &mut want, op::Sum, a)?;
                            g.wait()?;
                            assert_eq!(bits(g.recv_buffer()?), bits(&want), "{alg} start {k}");
                        }
                        Ok(())
                    })
                }
                Any::Barrier(a) => comm.scope(|s| {
                    let mut b = s.barrier_init_with(a)?;
                    for _ in 0..STARTS {
                        b.start()?;
                        while !b.test()? {}
                    }
                    Ok(())
                }),
                _ => Ok(()),
            }
        })
        .unwrap();
    for (r, o) in out.into_iter().enumerate() {
        o.unwrap_or_else(|e| panic!("{alg} p = {p} n = {n} rank {r}: {e}"));
    }
}

const PERSISTENT: [Collective; 7] = [
    Collective::Allreduce,
    Collective::Broadcast,
    Collective::Reduce,
    Collective::Allgather,
    Collective::Alltoall,
    Collective::ReduceScatter,
    Collective::Barrier,
];

fn every_algorithm(p: usize, counts: &[usize]) {
    for c in PERSISTENT {
        for alg in Any::of(c) {
            for &n in counts {
                persistent_matches_blocking(p, alg, n);
            }
        }
    }
}

#[test]
fn every_algorithm_p1_p2_p3() {
    for p in [1, 2, 3] {
        every_algorithm(p, &[0, 1, p + 1, 1000]);
    }
}

#[test]
fn every_algorithm_p5_p8() {
    for p in [5, 8] {
        every_algorithm(p, &[1, p - 1, 999]);
    }
}

#[test]
fn every_algorithm_p17() {
    every_algorithm(17, &[3, 100]);
}

#[test]
fn thousands_of_starts() {
    for p in [1, 2, 3] {
        let out = team(p)
            .run(|comm| -> Result<()> {
                let mut x = [0u64];
                comm.scope(|s| {
                    let mut ar = s.allreduce_init(&mut x, op::Sum)?;
                    for k in 0..3000u64 {
                        ar.buffer()?[0] = k + comm.rank() as u64;
                        ar.start()?;
                        ar.wait()?;
                        let want = p as u64 * k + (p * (p - 1) / 2) as u64;
                        assert_eq!(ar.buffer()?[0], want, "start {k}");
                    }
                    Ok(())
                })
            })
            .unwrap();
        assert!(out.iter().all(Result::is_ok), "{out:?}");
    }
}

#[test]
fn persistent_and_nonblocking_together() {
    let p = 4;
    let out = team(p)
        .run(|comm| -> Result<()> {
            let r = comm.rank() as u64;
            let mut a = vec![r; 10];
            let mut cs: Vec<Vec<u64>> = (0..20).map(|k| vec![r + k; 3]).collect();
            let mut g = vec![0u64; p];
            let mut one = [r];
            comm.scope(|s| {
                let mut pa = s.allreduce_init(&mut a, op::Sum)?;
                let mut pb = s.allgather_init(&mut one, &mut g)?;
                for c in cs.iter_mut() {
                    pa.start()?;
                    pb.start()?;
                    let req = s.iallreduce(c, op::Max)?;
                    req.wait()?;
                    pb.wait()?;
                    pa.wait()?;
                    assert_eq!(pa.buffer()?, vec![(p * (p - 1) / 2) as u64; 10]);
                    pa.buffer()?.fill(r);
                }
                Ok(())
            })?;
            assert_eq!(g, (0..p as u64).collect::<Vec<_>>());
            for (k, c) in cs.iter().enumerate() {
                assert_eq!(c, &vec![p as u64 - 1 + k as u64; 3]);
            }
            Ok(())
        })
        .unwrap();
    assert!(out.iter().all(Result::is_ok), "{out:?}");
}

#[test]
fn setups_that_differ_fail_on_every_rank() {
    type Bad = fn(usize, &corecoll::Comm) -> Result<()>;
    let cases: [(&str, Bad); 4] = [
        ("length", |r, comm| {
            let mut v = vec![0u64; 4 + usize::from(r == 1)];
            comm.scope(|s| s.allreduce_init(&mut v, op::Sum).map(drop))
        }),
        ("op", |r, comm| {
            let mut v = vec![0u64; 4];
            comm.scope(|s| {
                if r == 1 {
                    s.allreduce_init(&mut v, op::Max).map(drop)
                } else {
                    s.allreduce_init(&mut v, op::Sum).map(drop)
                }
            })
        }),
        ("root", |r, comm| {
            let mut v = vec![0u64; 4];
            comm.scope(|s| s.broadcast_init(&mut v, usize::from(r == 1)).map(drop))
        }),
        ("algorithm", |r, comm| {
            let mut v = vec![0u64; 4];
            let alg = if r == 1 {
                Algorithm::Linear
            } else {
                Algorithm::Direct
            };
            comm.scope(|s| s.allreduce_init_with(&mut v, op::Sum, alg).map(drop))
        }),
    ];
    for p in [2, 3, 6] {
        for (what, bad) in cases {
            let out = team(p).run(|comm| bad(comm.rank(), comm)).unwrap();
            for (r, o) in out.into_iter().enumerate() {
                let e = o.expect_err(what);
                assert!(mismatch(e.root_cause()), "{what} p = {p} rank {r}: {e}");
            }
        }
    }
}

#[test]
fn bad_arguments_fail_at_setup() {
    let out = team(3)
        .run(|comm| {
            let mut v = vec![0u64; 4];
            comm.scope(|s| s.broadcast_init(&mut v, 3).map(drop))
        })
        .unwrap();
    for o in out {
        assert!(
            matches!(o, Err(Error::RankOutOfRange { peer: 3, .. })),
            "{o:?}"
        );
    }
    let out = team(3)
        .run(|comm| {
            let (mut v, mut w) = (vec![0u64; 4], vec![0u64; 5]);
            comm.scope(|s| s.allgather_init(&mut v, &mut w).map(drop))
        })
        .unwrap();
    for o in out {
        assert!(matches!(o, Err(Error::InvalidArgument { .. })), "{o:?}");
    }
    // Algorithms of the other collectives at setup, every rank the same: fine.
    let out = team(2)
        .run(|comm| -> Result<()> {
            let (mut a, mut b) = (vec![1u64; 2], vec![0u64; 4]);
            let (mut x, mut y) = ([0u64; 2], [0u64; 2]);
            let (mut s1, mut r1) = ([0u64; 4], [0u64; 4]);
            let (mut s2, mut r2) = ([0u64; 4], [0u64; 2]);
            comm.scope(|s| {
                let mut g = s.allgather_init_with(&mut a, &mut b, Allgather::Ring)?;
                g.start()?;
                g.wait()?;
                let mut bc = s.broadcast_init_with(&mut x, 1, Broadcast::Binomial)?;
                bc.start()?;
                bc.wait()?;
                let mut rd = s.reduce_init_with(&mut y, op::Sum, 0, Reduce::Binomial)?;
                rd.start()?;
                rd.wait()?;
                let mut at = s.alltoall_init_with(&mut s1, &mut r1, Alltoall::Pairwise)?;
                at.start()?;
                at.wait()?;
                let mut rs = s.reduce_scatter_block_init_with(
                    &mut s2,
                    &mut r2,
                    op::Sum,
                    ReduceScatter::Auto,
                )?;
                rs.start()?;
                rs.wait()
            })
        })
        .unwrap();
    assert!(out.iter().all(Result::is_ok), "{out:?}");
}

#[test]
fn forgotten_with_a_start_in_flight() {
    for p in [1, 2, 5] {
        let out = team(p)
            .run(|comm| -> Result<()> {
                let mut v = vec![comm.rank() as u64; 20_000];
                comm.scope(|s| {
                    let mut ar = s.allreduce_init(&mut v, op::Sum)?;
                    ar.start()?;
                    std::mem::forget(ar);
                    Ok(())
                })?;
                assert!(v.iter().all(|&x| x == (p * (p - 1) / 2) as u64));
                Ok(())
            })
            .unwrap();
        assert!(out.iter().all(Result::is_ok), "{out:?}");
    }
}

#[test]
fn a_rank_that_skips_a_start_fails_the_others_tests() {
    // Short (folded on slots) and long (a request per start): the others poll with `test`
    // alone, which must end in an error once the last rank returns without its start.
    for (p, n) in [(2, 1), (3, 31), (5, 1), (3, 1000)] {
        let out = team(p)
            .run(|comm| -> Result<()> {
                let mut v = vec![1.0f64; n];
                comm.scope(|s| {
                    let mut ar = s.allreduce_init(&mut v, op::Sum)?;
                    if comm.rank() == p - 1 {
                        return Ok(());
                    }
                    ar.start()?;
                    while !ar.test()? {}
                    Ok(())
                })
            })
            .unwrap();
        assert!(out[p - 1].is_ok(), "p = {p}, n = {n}: {out:?}");
        assert!(
            out[..p - 1].iter().all(Result::is_err),
            "p = {p}, n = {n}: {out:?}"
        );
    }
}
