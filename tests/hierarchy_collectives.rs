//! The hierarchical broadcast, reduce, allgather and barrier, composed (`Broadcast::Hierarchical`,
//! `Reduce::Hierarchical`, `Allgather::Hierarchical`, `Barrier::Hierarchical`) and single-copy
//! (the `HierarchicalDirect` variants), on synthetic machines, under compact placements (groups are intervals of ranks, or not once the
//! placement wraps around the cores) and spread ones (groups interleave), with as many ranks
//! as cores, fewer and more: against sequential references computed here, every root on some
//! machines, integer sums exact, float reductions within the rounding bound and the same bits
//! call after call, non-commutative ops exactly the rank-order fold, the non-roots' buffers of
//! a reduce unchanged; barriers that hold; sub-communicators; and mismatches (root, length,
//! algorithm) that fail every rank instead of hanging.
//!
//! Budget: teams of up to 20 ranks oversubscribe the 2-core machine, so the roots and counts
//! are thinned where the teams are large.

mod common;

use common::{check_fails, matmul, matrix, matrix_op, mismatch, mix, placed_team, span_op};
use corecoll::algorithm::{Allgather, Barrier, Broadcast, Reduce};
use corecoll::{op, Comm, Pinning, Team, Topology};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One family of hierarchical algorithms: the composition or the single-copy one.
#[derive(Clone, Copy, Debug)]
struct H {
    bcast: Broadcast,
    reduce: Reduce,
    allgather: Allgather,
    barrier: Barrier,
}

/// The composition of flat collectives on sub-communicators.
const COMPOSED: H = H {
    bcast: Broadcast::Hierarchical,
    reduce: Reduce::Hierarchical,
    allgather: Allgather::Hierarchical,
    barrier: Barrier::Hierarchical,
};

/// The single-copy forms on the board.
const DIRECT: H = H {
    bcast: Broadcast::HierarchicalDirect,
    reduce: Reduce::HierarchicalDirect,
    allgather: Allgather::HierarchicalDirect,
    barrier: Barrier::HierarchicalDirect,
};

/// Element counts: empty, one, odd, long (past the eager limit, so the flat stages switch
/// algorithm).
const COUNTS: [usize; 4] = [0, 1, 7, 10_000];

/// A machine shape: regular (`Topology::synthetic`) or uneven (`synthetic_groups`).
#[derive(Clone, Debug)]
enum Shape {
    Regular(&'static [usize]),
    Uneven(Vec<Vec<usize>>),
}

impl Shape {
    fn topology(&self) -> Topology {
        match self {
            Shape::Regular(s) => Topology::synthetic(s).unwrap(),
            Shape::Uneven(g) => Topology::synthetic_groups(g.clone()).unwrap(),
        }
    }
}

/// The machines, rank counts (equal to, below and above the cores) and placements tested,
/// each with whether every root is tried there, and a description.
fn teams() -> Vec<(String, Team, bool)> {
    let shapes: Vec<(Shape, &[usize])> = vec![
        (Shape::Regular(&[2, 3]), &[6, 4, 8]),
        (Shape::Regular(&[3, 5]), &[15, 7]),
        (Shape::Regular(&[4, 4]), &[16, 10]),
        (Shape::Regular(&[2, 2, 4]), &[16, 7, 20]),
        (Shape::Uneven(vec![vec![3, 2], vec![4]]), &[9, 6, 11]),
    ];
    let mut out = Vec::new();
    for (shape, sizes) in shapes {
        for &p in sizes {
            for pinning in [Pinning::Compact, Pinning::Spread] {
                // Every root on the small machines, wrapped and interleaved.
                let every_root = p <= 11 && p != 10;
                out.push((
                    format!("{shape:?} {pinning:?} p = {p}"),
                    placed_team(shape.topology(), pinning, p),
                    every_root,
                ));
            }
        }
    }
    out
}

/// The roots tried on `p` ranks.
fn roots(p: usize, every: bool) -> Vec<usize> {
    if every {
        return (0..p).collect();
    }
    let mut r = vec![0, 1, p / 2, p - 1];
    r.sort_unstable();
    r.dedup();
    r
}

/// An f64 input with mixed magnitudes and signs, so that the grouping shows in the bits.
fn float(r: usize, i: usize) -> f64 {
    let h = mix(r, i, 11);
    let m = (h >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    m * f64::powi(2.0, (h % 20) as i32 - 10)
}

/// Fails with `what` unless `ok`.
fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

/// Hierarchical broadcasts from each of `roots` with every count (the long one from the
/// first and last root only), checked on this rank.
fn broadcasts(comm: &Comm, roots: &[usize], h: H) -> Result<(), String> {
    let r = comm.rank();
    for (k, &root) in roots.iter().enumerate() {
        for n in COUNTS {
            if n > 7 && k != 0 && k != roots.len() - 1 {
                continue;
            }
            let salt = root as u64 + 100;
            let mut buf: Vec<u64> = (0..n)
                .map(|i| if r == root { mix(root, i, salt) } else { !0 })
                .collect();
            comm.broadcast_with(&mut buf, root, h.bcast)
                .map_err(|e| format!("broadcast root {root} n = {n}: {e}"))?;
            let want: Vec<u64> = (0..n).map(|i| mix(root, i, salt)).collect();
            ensure(buf == want, || {
                format!("broadcast root {root} n = {n}: wrong data on rank {r}")
            })?;
        }
        let mut f = [if r == root { 0.1 + root as f64 } else { 0.0 }];
        comm.broadcast_with(&mut f, root, h.bcast)
            .map_err(|e| format!("f64 broadcast root {root}: {e}"))?;
        ensure(f[0].to_bits() == (0.1 + root as f64).to_bits(), || {
            format!("f64 broadcast root {root}: {} on rank {r}", f[0])
        })?;
    }
    Ok(())
}

/// Hierarchical reduces to each of `roots` with every count (the long one to the first and
/// last root only), u64 and f64 sums, the matrix product and the span op, checked on this
/// rank: the result at the root, the other ranks' buffers unchanged.
fn reduces(comm: &Comm, roots: &[usize], h: H) -> Result<(), String> {
    let (r, p) = (comm.rank(), comm.size());
    let big = h.reduce;
    for (k, &root) in roots.iter().enumerate() {
        for n in COUNTS {
            if n > 7 && k != 0 && k != roots.len() - 1 {
                continue;
            }
            let what = |o: &str| format!("{o} reduce root {root} n = {n} on rank {r}");
            // u64 sum.
            let input: Vec<u64> = (0..n).map(|i| mix(r, i, 1)).collect();
            let mut u = input.clone();
            comm.reduce_with(&mut u, op::Sum, root, big)
                .map_err(|e| format!("{}: {e}", what("u64")))?;
            let want: Vec<u64> = if r == root {
                (0..n)
                    .map(|i| (0..p).fold(0u64, |a, q| a.wrapping_add(mix(q, i, 1))))
                    .collect()
            } else {
                input
            };
            ensure(u == want, || what("u64"))?;
            // f64 sum, twice: the same bits, within the rounding bound.
            let input: Vec<f64> = (0..n).map(|i| float(r, i)).collect();
            let (mut f, mut g) = (input.clone(), input.clone());
            comm.reduce_with(&mut f, op::Sum, root, big)
                .map_err(|e| format!("{}: {e}", what("f64")))?;
            comm.reduce_with(&mut g, op::Sum, root, big)
                .map_err(|e| format!("{}: {e}", what("f64")))?;
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            ensure(bits(&f) == bits(&g), || what("f64 (repeat)"))?;
            if r == root {
                for (i, &x) in f.iter().enumerate() {
                    let w: f64 = (0..p).map(|q| float(q, i)).sum();
                    let scale: f64 = (0..p).map(|q| float(q, i).abs()).sum();
                    ensure(
                        (x - w).abs() <= 2.0 * p as f64 * f64::EPSILON * scale,
                        || format!("{}: [{i}] {x} vs {w}", what("f64")),
                    )?;
                }
            } else {
                ensure(bits(&f) == bits(&input), || what("f64 (unchanged)"))?;
            }
            // Non-commutative: the matrix product in rank order.
            let input: Vec<[u32; 4]> = (0..n).map(|i| matrix(r, i)).collect();
            let mut m = input.clone();
            comm.reduce_with(&mut m, matrix_op(), root, big)
                .map_err(|e| format!("{}: {e}", what("matrix")))?;
            let want: Vec<[u32; 4]> = if r == root {
                (0..n)
                    .map(|i| (1..p).fold(matrix(0, i), |a, q| matmul(a, matrix(q, i))))
                    .collect()
            } else {
                input
            };
            ensure(m == want, || what("matrix"))?;
            // The span op panics on operands out of order.
            let input = vec![(r as u32, r as u32 + 1); n.min(7)];
            let mut s = input.clone();
            comm.reduce_with(&mut s, span_op(), root, big)
                .map_err(|e| format!("{}: {e}", what("span")))?;
            let want = if r == root {
                vec![(0, p as u32); n.min(7)]
            } else {
                input
            };
            ensure(s == want, || what("span"))?;
        }
    }
    Ok(())
}

/// Hierarchical allgathers of every count, checked on this rank.
fn allgathers(comm: &Comm, h: H) -> Result<(), String> {
    let (r, p) = (comm.rank(), comm.size());
    for n in COUNTS {
        let send: Vec<u64> = (0..n).map(|i| mix(r, i, 7)).collect();
        let mut recv = vec![!0u64; p * n];
        comm.allgather_with(&send, &mut recv, h.allgather)
            .map_err(|e| format!("allgather n = {n}: {e}"))?;
        let want: Vec<u64> = (0..p)
            .flat_map(|q| (0..n).map(move |i| mix(q, i, 7)))
            .collect();
        ensure(recv == want, || {
            format!("allgather n = {n}: wrong blocks on rank {r}")
        })?;
    }
    Ok(())
}

/// `n` barriers of `alg(k)`, each rank adding one to the shared `counter` before barrier k:
/// after it the counter must be at least p(k + 1) and below p(k + 2).
fn hold(
    comm: &Comm,
    counter: &AtomicUsize,
    n: usize,
    alg: impl Fn(usize) -> Barrier,
) -> Result<(), String> {
    let p = comm.size();
    for k in 0..n {
        counter.fetch_add(1, Ordering::SeqCst);
        comm.barrier_with(alg(k))
            .map_err(|e| format!("barrier {k}: {e}"))?;
        let seen = counter.load(Ordering::SeqCst);
        ensure(seen >= p * (k + 1) && seen < p * (k + 2), || {
            format!(
                "rank {} left barrier {k} ({:?}) with the counter at {seen}",
                comm.rank(),
                alg(k)
            )
        })?;
    }
    Ok(())
}

/// Runs `body` on every rank of `team` and fails the test with the first error.
fn run_checked(what: &str, team: &Team, body: &(dyn Fn(&Comm) -> Result<(), String> + Sync)) {
    let out = team.run(body).unwrap_or_else(|e| panic!("{what}: {e}"));
    for (r, res) in out.into_iter().enumerate() {
        res.unwrap_or_else(|e| panic!("{what}, rank {r}: {e}"));
    }
}

/// Every machine, placement and rank count: broadcasts and reduces from the roots, then
/// allgathers and barriers, all on one communicator (the hierarchy is built once, reused).
#[test]
fn rooted_collectives_on_synthetic_machines() {
    rooted_collectives(COMPOSED);
}

/// The same with the single-copy forms.
#[test]
fn rooted_direct_collectives_on_synthetic_machines() {
    rooted_collectives(DIRECT);
}

fn rooted_collectives(h: H) {
    for (what, team, every) in teams() {
        let roots = roots(team.size(), every);
        run_checked(&format!("{what} {h:?}"), &team, &|comm| {
            broadcasts(comm, &roots, h)?;
            reduces(comm, &roots, h)
        });
    }
}

/// Allgathers (with groups that are not intervals under spread and wrapped placements) and
/// barriers that hold, also alternating with the flat barriers, on every machine.
#[test]
fn allgather_and_barrier_on_synthetic_machines() {
    allgather_and_barrier(COMPOSED);
}

/// The same with the single-copy forms.
#[test]
fn direct_allgather_and_barrier_on_synthetic_machines() {
    allgather_and_barrier(DIRECT);
}

fn allgather_and_barrier(h: H) {
    for (what, team, _) in teams() {
        let counter = AtomicUsize::new(0);
        let cycle = [
            h.barrier,
            Barrier::Dissemination,
            Barrier::Hierarchical,
            Barrier::HierarchicalDirect,
            h.barrier,
            Barrier::Tree,
        ];
        run_checked(&format!("{what} {h:?}"), &team, &|comm| {
            allgathers(comm, h)?;
            hold(comm, &counter, 20, |_| h.barrier)?;
            comm.barrier().map_err(|e| e.to_string())?;
            if comm.rank() == 0 {
                counter.store(0, Ordering::SeqCst);
            }
            comm.barrier().map_err(|e| e.to_string())?;
            hold(comm, &counter, 12, |k| cycle[k % cycle.len()])?;
            allgathers(comm, h)
        });
    }
}

/// On sub-communicators (every other rank, and the halves): each gets the hierarchy of its
/// own members' locations.
#[test]
fn on_split_communicators() {
    for pinning in [Pinning::Compact, Pinning::Spread] {
        let t = Topology::synthetic(&[2, 2, 4]).unwrap();
        let team = placed_team(t, pinning.clone(), 16);
        let counters = [0, 1, 2, 3].map(|_| AtomicUsize::new(0));
        run_checked(&format!("{pinning:?}"), &team, &|comm| {
            for (j, color) in [comm.rank() % 2, 2 + comm.rank() / 8]
                .into_iter()
                .enumerate()
            {
                let sub = comm
                    .split(Some(color), comm.rank())
                    .map_err(|e| e.to_string())?
                    .expect("every rank has a colour");
                let q = sub.size();
                let roots = [0, q / 2 + j, q - 1];
                for h in [COMPOSED, DIRECT] {
                    broadcasts(&sub, &roots, h)?;
                    reduces(&sub, &roots[..2], h)?;
                    allgathers(&sub, h)?;
                    hold(&sub, &counters[color], 10, |_| h.barrier)?;
                    sub.barrier().map_err(|e| e.to_string())?;
                    if sub.rank() == 0 {
                        counters[color].store(0, Ordering::SeqCst);
                    }
                    sub.barrier().map_err(|e| e.to_string())?;
                }
            }
            Ok(())
        });
    }
}

/// The mismatches tried: a rank with another root, another length, or another algorithm,
/// with the hierarchy built by an earlier call or not; every rank must fail, none hang.
#[test]
fn mismatches_fail_every_rank() {
    let cases: [(&[usize], Pinning, usize); 2] = [
        (&[2, 3], Pinning::Compact, 8),
        (&[2, 2, 4], Pinning::Spread, 12),
    ];
    for ((shape, pinning, p), (h, other)) in cases
        .into_iter()
        .flat_map(|c| [(c.clone(), (COMPOSED, DIRECT)), (c, (DIRECT, COMPOSED))])
    {
        let team = placed_team(Topology::synthetic(shape).unwrap(), pinning.clone(), p);
        for odd in [0, p / 2, p - 1] {
            for cached in [false, true] {
                let w = |c: &str| format!("{shape:?} {pinning:?} {h:?}: rank {odd} {c} ({cached})");
                let warm = |comm: &Comm| -> corecoll::Result<()> {
                    if cached {
                        comm.barrier_with(h.barrier)?;
                    }
                    Ok(())
                };
                let root = |comm: &Comm| usize::from(comm.rank() == odd);
                let len = |comm: &Comm| if comm.rank() == odd { 5 } else { 4 };
                check_fails(
                    &team,
                    &w("broadcast root"),
                    &|comm| {
                        warm(comm)?;
                        let mut v = vec![1u64; 4];
                        comm.broadcast_with(&mut v, root(comm), h.bcast)
                    },
                    mismatch,
                );
                check_fails(
                    &team,
                    &w("broadcast length"),
                    &|comm| {
                        warm(comm)?;
                        let mut v = vec![1u64; len(comm)];
                        comm.broadcast_with(&mut v, 0, h.bcast)
                    },
                    mismatch,
                );
                check_fails(
                    &team,
                    &w("broadcast algorithm"),
                    &|comm| {
                        warm(comm)?;
                        let mut v = vec![1u64; 4];
                        let alg = if comm.rank() == odd {
                            if cached {
                                other.bcast
                            } else {
                                Broadcast::Binomial
                            }
                        } else {
                            h.bcast
                        };
                        comm.broadcast_with(&mut v, 1, alg)
                    },
                    mismatch,
                );
                check_fails(
                    &team,
                    &w("reduce root"),
                    &|comm| {
                        warm(comm)?;
                        let mut v = vec![1u64; 4];
                        comm.reduce_with(&mut v, op::Sum, root(comm), h.reduce)
                    },
                    mismatch,
                );
                check_fails(
                    &team,
                    &w("reduce length"),
                    &|comm| {
                        warm(comm)?;
                        let mut v = vec![1u64; len(comm)];
                        comm.reduce_with(&mut v, op::Sum, p - 1, h.reduce)
                    },
                    mismatch,
                );
                check_fails(
                    &team,
                    &w("reduce algorithm"),
                    &|comm| {
                        warm(comm)?;
                        let mut v = vec![1u64; 4];
                        let alg = if comm.rank() == odd {
                            if cached {
                                other.reduce
                            } else {
                                Reduce::Direct
                            }
                        } else {
                            h.reduce
                        };
                        comm.reduce_with(&mut v, op::Sum, 0, alg)
                    },
                    mismatch,
                );
                check_fails(
                    &team,
                    &w("allgather length"),
                    &|comm| {
                        warm(comm)?;
                        let n = len(comm);
                        let mut recv = vec![0u64; n * p];
                        comm.allgather_with(&vec![1u64; n], &mut recv, h.allgather)
                    },
                    mismatch,
                );
                check_fails(
                    &team,
                    &w("allgather algorithm"),
                    &|comm| {
                        warm(comm)?;
                        let mut recv = vec![0u64; 3 * p];
                        let alg = if comm.rank() == odd {
                            if cached {
                                other.allgather
                            } else {
                                Allgather::Ring
                            }
                        } else {
                            h.allgather
                        };
                        comm.allgather_with(&[1u64; 3], &mut recv, alg)
                    },
                    mismatch,
                );
            }
        }
    }
}

/// Ranks mixing a hierarchical barrier with dissemination, the tree or the other hierarchical one (one odd rank in
/// several places, alternating ranks, the reverse): every rank fails, none passes or hangs.
#[test]
fn mixed_barriers_fail_every_rank() {
    let cases: [(&[usize], Pinning, usize); 3] = [
        (&[2, 3], Pinning::Compact, 6),
        (&[2, 3], Pinning::Spread, 8),
        (&[2, 2, 4], Pinning::Compact, 16),
    ];
    for (shape, pinning, p) in cases {
        let team = placed_team(Topology::synthetic(shape).unwrap(), pinning.clone(), p);
        let mut mixes: Vec<Vec<bool>> = [0, 1, p / 2, p - 1]
            .into_iter()
            .flat_map(|odd| {
                [true, false].map(|h| (0..p).map(|r| (r == odd) == h).collect::<Vec<_>>())
            })
            .collect();
        mixes.push((0..p).map(|r| r % 2 == 0).collect());
        mixes.push((0..p).map(|r| r % 2 == 1).collect());
        let pairs = [
            (Barrier::Hierarchical, Barrier::Dissemination),
            (Barrier::Hierarchical, Barrier::Tree),
            (Barrier::HierarchicalDirect, Barrier::Dissemination),
            (Barrier::HierarchicalDirect, Barrier::Tree),
            (Barrier::HierarchicalDirect, Barrier::Hierarchical),
        ];
        for (hier, other) in pairs {
            for mix in &mixes {
                for cached in [false, true] {
                    let what: String = mix.iter().map(|&h| if h { 'H' } else { '-' }).collect();
                    check_fails(
                        &team,
                        &format!("{shape:?} {pinning:?} {what}: {hier:?} vs {other:?} ({cached})"),
                        &|comm| {
                            if cached {
                                comm.barrier_with(hier)?;
                            }
                            comm.barrier()?;
                            let alg = if mix[comm.rank()] { hier } else { other };
                            comm.barrier_with(alg)
                        },
                        mismatch,
                    );
                }
            }
        }
    }
}
