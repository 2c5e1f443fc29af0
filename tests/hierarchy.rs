//! `Algorithm::Hierarchical` and `Algorithm::HierarchicalDirect`: the allreduce over the L3 groups and packages of synthetic
//! machines, under compact placements (groups are intervals of ranks: the hierarchical path,
//! which keeps rank order) and spread ones (groups interleave: a non-commutative op falls back
//! to the flat algorithm), with as many ranks as cores, fewer, and more (wrapping). Integer
//! sums are exact, float sums bit-identical on every rank and within the rounding bound, the
//! non-commutative ops exactly the rank-order fold; a second call on the same communicator
//! (the cached hierarchy) gives the same; a rank that chooses another algorithm makes every
//! rank fail. `Auto` takes the single-copy hierarchy only on a team with a core per rank.

mod common;

use common::{check_fails, matmul, matrix, matrix_op, mismatch, mix, placed_team, span_op};
use corecoll::algorithm::{Barrier, Broadcast};
use corecoll::{op, Algorithm, Block, Comm, Pinning, Team, Topology, Wait};
use std::time::Duration;

const H: Algorithm = Algorithm::Hierarchical {
    segment: Block::Auto,
};

/// The single-copy hierarchical allreduce.
const HD: Algorithm = Algorithm::HierarchicalDirect;

/// Element counts: empty, one, odd, long (past the eager limit, so the flat stages switch
/// algorithm).
const COUNTS: [usize; 4] = [0, 1, 7, 10_000];

/// The machines and placements tested, with a description for messages.
fn teams() -> Vec<(String, Team)> {
    let shapes: [(&[usize], &[usize]); 4] = [
        (&[2, 3], &[6, 5, 8]),
        (&[3, 5], &[15, 4]),
        (&[4, 4], &[16, 10]),
        (&[2, 2, 4], &[16, 7, 3]),
    ];
    let mut out = Vec::new();
    for (shape, sizes) in shapes {
        for &p in sizes {
            for pinning in [Pinning::Compact, Pinning::Spread] {
                let t = Topology::synthetic(shape).unwrap();
                out.push((
                    format!("{shape:?} {pinning:?} p = {p}"),
                    placed_team(t, pinning, p),
                ));
            }
        }
    }
    for p in [9, 6] {
        for pinning in [Pinning::Compact, Pinning::Spread] {
            let t = Topology::synthetic_groups(vec![vec![3, 2], vec![4]]).unwrap();
            out.push((
                format!("[[3, 2], [4]] {pinning:?} p = {p}"),
                placed_team(t, pinning, p),
            ));
        }
    }
    let t = Topology::synthetic(&[2, 2, 2]).unwrap();
    out.push((
        "[2, 2, 2] unpinned p = 8".into(),
        placed_team(t, Pinning::None, 8),
    ));
    out
}

/// An f64 input with mixed magnitudes and signs, so that the grouping shows in the bits.
fn float(r: usize, i: usize) -> f64 {
    let h = mix(r, i, 11);
    let m = (h >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    m * f64::powi(2.0, (h % 20) as i32 - 10)
}

/// What one rank got from one round of calls: per count, the u64 sum, the f64 sum, the matrix
/// product and the span.
type Got = Vec<(Vec<u64>, Vec<f64>, Vec<[u32; 4]>, Vec<(u32, u32)>)>;

/// One round of `h` allreduces on `comm`, every count up to `max_count` (larger ones are
/// left empty), every op.
fn round_with(comm: &Comm, h: Algorithm, max_count: usize) -> corecoll::Result<Got> {
    let r = comm.rank();
    let mut got = Vec::new();
    for n in COUNTS {
        if n > max_count {
            got.push(Default::default());
            continue;
        }
        let mut u: Vec<u64> = (0..n).map(|i| mix(r, i, 1)).collect();
        comm.allreduce_with(&mut u, op::Sum, h)?;
        let mut f: Vec<f64> = (0..n).map(|i| float(r, i)).collect();
        comm.allreduce_with(&mut f, op::Sum, h)?;
        let mut m: Vec<[u32; 4]> = (0..n).map(|i| matrix(r, i)).collect();
        comm.allreduce_with(&mut m, matrix_op(), h)?;
        let mut s = vec![(r as u32, r as u32 + 1); n.min(7)];
        comm.allreduce_with(&mut s, span_op(), h)?;
        got.push((u, f, m, s));
    }
    Ok(got)
}

/// Checks one round's results on `p` ranks against the sequential references.
fn check(what: &str, p: usize, per_rank: &[Got]) {
    check_up_to(what, p, per_rank, usize::MAX)
}

/// [`check`] for a round of counts up to `max_count`.
fn check_up_to(what: &str, p: usize, per_rank: &[Got], max_count: usize) {
    for (k, &n) in COUNTS.iter().enumerate() {
        if n > max_count {
            continue;
        }
        let u: Vec<u64> = (0..n)
            .map(|i| (0..p).fold(0u64, |a, r| a.wrapping_add(mix(r, i, 1))))
            .collect();
        let f: Vec<f64> = (0..n).map(|i| (0..p).map(|r| float(r, i)).sum()).collect();
        let m: Vec<[u32; 4]> = (0..n)
            .map(|i| (1..p).fold(matrix(0, i), |a, r| matmul(a, matrix(r, i))))
            .collect();
        let s = vec![(0, p as u32); n.min(7)];
        let first = &per_rank[0][k].1;
        for (r, got) in per_rank.iter().enumerate() {
            let (gu, gf, gm, gs) = &got[k];
            assert_eq!(gu, &u, "{what} n = {n}: u64 sum on rank {r}");
            assert_eq!(gm, &m, "{what} n = {n}: matrix product on rank {r}");
            assert_eq!(gs, &s, "{what} n = {n}: span on rank {r}");
            let same = gf.len() == first.len()
                && gf
                    .iter()
                    .zip(first)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                same,
                "{what} n = {n}: f64 sum on rank {r} differs from rank 0"
            );
        }
        for (i, (&x, &w)) in first.iter().zip(&f).enumerate() {
            let scale: f64 = (0..p).map(|r| float(r, i).abs()).sum();
            let bound = 2.0 * p as f64 * f64::EPSILON * scale;
            assert!((x - w).abs() <= bound, "{what} n = {n} [{i}]: {x} vs {w}");
        }
    }
}

/// Every machine, placement and rank count: two rounds of `h` on the same communicator (the
/// second reuses the cached plan and hierarchy), both right and the same.
fn on_synthetic_machines(h: Algorithm) {
    for (what, team) in teams() {
        let what = format!("{}: {what}", h.name());
        let p = team.size();
        let round = |comm: &Comm| round_with(comm, h, usize::MAX);
        let out = team
            .run(|comm| Ok::<_, corecoll::Error>((round(comm)?, round(comm)?)))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let out: Vec<(Got, Got)> = out
            .into_iter()
            .enumerate()
            .map(|(r, res)| res.unwrap_or_else(|e| panic!("{what}, rank {r}: {e}")))
            .collect();
        let (first, second): (Vec<Got>, Vec<Got>) = out.into_iter().unzip();
        check(&format!("{what}, first call"), p, &first);
        check(&format!("{what}, second call"), p, &second);
        for (r, (a, b)) in first.iter().zip(&second).enumerate() {
            for (k, (x, y)) in a.iter().zip(b).enumerate() {
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&x.1),
                    bits(&y.1),
                    "{what}: rank {r}, count {}: f64 sum changed between calls",
                    COUNTS[k]
                );
            }
        }
    }
}

#[test]
fn allreduce_on_synthetic_machines() {
    on_synthetic_machines(H);
}

#[test]
fn direct_allreduce_on_synthetic_machines() {
    on_synthetic_machines(HD);
}

/// Segmented: the stages pipeline over segments of 2 elements (short counts only: thousands
/// of segments would take long on oversubscribed cores), 1 500 and 4 096 elements (a last
/// segment shorter than the others), on machines whose plans keep rank order directly
/// (compact), by runs (compact wrapping around), or not at all (spread, flat for the
/// non-commutative ops).
#[test]
fn segmented_allreduce() {
    let cases: [(&[usize], Pinning, usize); 4] = [
        (&[2, 3], Pinning::Compact, 8),
        (&[2, 2, 4], Pinning::Compact, 16),
        (&[2, 2, 4], Pinning::Spread, 7),
        (&[3, 5], Pinning::Compact, 20),
    ];
    let segments = [(2, 7), (1500, usize::MAX), (4096, usize::MAX)];
    for (shape, pinning, p) in cases {
        let what = format!("{shape:?} {pinning:?} p = {p}");
        let team = placed_team(Topology::synthetic(shape).unwrap(), pinning, p);
        for (seg, max_count) in segments {
            let h = Algorithm::Hierarchical {
                segment: Block::Elements(seg),
            };
            let out = team
                .run(|comm| round_with(comm, h, max_count))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let got: Vec<Got> = out
                .into_iter()
                .enumerate()
                .map(|(r, res)| res.unwrap_or_else(|e| panic!("{what}, rank {r}: {e}")))
                .collect();
            check_up_to(&format!("{what}, segment {seg}"), p, &got, max_count);
        }
    }
}

/// Ranks that name different segment sizes fail, every one of them.
#[test]
fn segment_mismatch_fails_everywhere() {
    let t = Topology::synthetic(&[2, 3]).unwrap();
    let team = placed_team(t, Pinning::Compact, 6);
    let out = team.run(|comm| {
        let segment = Block::Elements(if comm.rank() == 4 { 100 } else { 200 });
        let mut v = vec![1u64; 1000];
        comm.allreduce_with(&mut v, op::Sum, Algorithm::Hierarchical { segment })
    });
    for (r, res) in out.unwrap().into_iter().enumerate() {
        assert!(res.is_err(), "rank {r} passed a mismatched call");
    }
}

/// On sub-communicators (every other rank of a spread and a compact team): the hierarchy
/// follows the members' own locations.
#[test]
fn allreduce_on_a_split_communicator() {
    for (h, pinning) in [H, HD]
        .into_iter()
        .flat_map(|h| [(h, Pinning::Compact), (h, Pinning::Spread)])
    {
        let t = Topology::synthetic(&[2, 2, 3]).unwrap();
        let team = placed_team(t, pinning.clone(), 12);
        let out = team
            .run(|comm| {
                let sub = comm.split(Some(comm.rank() % 2), comm.rank())?.unwrap();
                let q = sub.size();
                let mut m: Vec<[u32; 4]> = (0..5).map(|i| matrix(sub.rank(), i)).collect();
                sub.allreduce_with(&mut m, matrix_op(), h)?;
                let want: Vec<[u32; 4]> = (0..5)
                    .map(|i| (1..q).fold(matrix(0, i), |a, r| matmul(a, matrix(r, i))))
                    .collect();
                let mut u = vec![comm.rank() as u64; 3];
                sub.allreduce_with(&mut u, op::Sum, h)?;
                let parity = comm.rank() % 2;
                let sum: u64 = (0..12).filter(|r| r % 2 == parity).map(|r| r as u64).sum();
                Ok::<_, corecoll::Error>(m == want && u == vec![sum; 3])
            })
            .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            assert!(
                res.unwrap(),
                "{} {pinning:?}: rank {r} got a wrong result",
                h.name()
            );
        }
    }
}

/// One rank asks for a hierarchical allreduce while the others ask for `Direct` or the other
/// hierarchical one (or the reverse): every rank fails with a mismatch, none hangs, whether or not the hierarchy was built before.
#[test]
fn a_rank_with_another_algorithm_fails_everyone() {
    for (shape, p) in [(&[2, 2, 4][..], 16), (&[2, 3][..], 5)] {
        for odd in [0, p / 2, p - 1] {
            for cached in [false, true] {
                for (mine, theirs) in [
                    (H, Algorithm::Direct),
                    (Algorithm::Direct, H),
                    (HD, Algorithm::Direct),
                    (Algorithm::Direct, HD),
                    (HD, H),
                ] {
                    let team =
                        placed_team(Topology::synthetic(shape).unwrap(), Pinning::Compact, p);
                    let what = format!(
                        "{shape:?} p = {p}: rank {odd} {} and the others {} (cached: {cached})",
                        mine.name(),
                        theirs.name()
                    );
                    check_fails(
                        &team,
                        &what,
                        &|comm| {
                            let mut v = vec![1u64; 100];
                            if cached {
                                comm.allreduce_with(&mut v, op::Sum, mine)?;
                            }
                            let alg = if comm.rank() == odd { mine } else { theirs };
                            comm.allreduce_with(&mut v, op::Sum, alg)
                        },
                        mismatch,
                    );
                }
            }
        }
    }
}

/// `Hierarchical` and `HierarchicalDirect` are listed and named.
#[test]
fn listed_and_named() {
    assert!(Algorithm::ALL.contains(&H));
    assert_eq!(H.name(), "hierarchical");
    assert_eq!(Algorithm::from_name("hierarchical"), Some(H));
    assert!(Algorithm::ALL.contains(&HD));
    assert_eq!(HD.name(), "hierarchical-direct");
    assert_eq!(Algorithm::from_name("hierarchical-direct"), Some(HD));
}

/// A described 2 × 2 machine with 4 ranks and the given waiting policy (which decides
/// whether `Auto` counts on a core per rank).
fn waiting_team(wait: Wait) -> Team {
    Team::builder()
        .ranks(4)
        .topology(Topology::synthetic(&[2, 2]).unwrap())
        .wait(wait)
        .timeout(Duration::from_secs(45))
        .build()
        .unwrap()
}

/// What `Auto` chose on every rank, found by the call check: rank 0 calls `Auto`, the others
/// name `named`; all succeed (with the right result, checked by `call`) exactly when `Auto`
/// chose `named` on rank 0.
fn auto_agrees(team: &Team, call: &(dyn Fn(&Comm, bool) -> corecoll::Result<()> + Sync)) -> bool {
    let out = team.run(|comm| call(comm, comm.rank() == 0)).unwrap();
    let ok = out.iter().filter(|r| r.is_ok()).count();
    assert!(
        ok == 0 || ok == out.len(),
        "some ranks failed, some did not: {out:?}"
    );
    for e in out.iter().filter_map(|r| r.as_ref().err()) {
        assert!(mismatch(e.root_cause()), "unexpected {e}");
    }
    ok == out.len()
}

/// `Auto`'s rule for a team with a core per rank (docs/hierarchy.md, "When `Auto` goes
/// hierarchical"): across groups, the single-copy hierarchy for an allreduce or broadcast
/// longer than the eager limit, and the flag barrier; not below the limit, and never on a
/// team that shares its cores. `Wait::Active` makes this 2-core machine count as having a
/// core per rank, so the rule runs here.
#[test]
fn auto_goes_hierarchical_only_with_a_core_per_rank() {
    let long = 4 * corecoll::unstable::EAGER_MAX / 8; // u64 elements, 4× the eager limit
    let short = 8;
    for (wait, dedicated) in [(Wait::Active, true), (Wait::Passive, false)] {
        let team = waiting_team(wait);
        for (n, hierarchical) in [(long, dedicated), (short, false)] {
            let allreduce = |comm: &Comm, auto: bool| {
                let mut v: Vec<u64> = (0..n).map(|i| mix(comm.rank(), i, 3)).collect();
                let alg = if auto { Algorithm::Auto } else { HD };
                comm.allreduce_with(&mut v, op::Sum, alg)?;
                let want: Vec<u64> = (0..n)
                    .map(|i| (0..4).fold(0u64, |a, r| a.wrapping_add(mix(r, i, 3))))
                    .collect();
                assert_eq!(v, want);
                Ok(())
            };
            assert_eq!(
                auto_agrees(&team, &allreduce),
                hierarchical,
                "allreduce of {n} u64, {wait:?}"
            );
            for root in [0, 3] {
                let broadcast = |comm: &Comm, auto: bool| {
                    let mut v: Vec<u64> = if comm.rank() == root {
                        (0..n).map(|i| mix(root, i, 5)).collect()
                    } else {
                        vec![0; n]
                    };
                    let alg = if auto {
                        Broadcast::Auto
                    } else {
                        Broadcast::HierarchicalDirect
                    };
                    comm.broadcast_with(&mut v, root, alg)?;
                    assert!(v.iter().enumerate().all(|(i, &x)| x == mix(root, i, 5)));
                    Ok(())
                };
                assert_eq!(
                    auto_agrees(&team, &broadcast),
                    hierarchical,
                    "broadcast of {n} u64 from {root}, {wait:?}"
                );
            }
        }
        let barrier = |comm: &Comm, auto: bool| {
            comm.barrier_with(if auto {
                Barrier::Auto
            } else {
                Barrier::HierarchicalDirect
            })
        };
        assert_eq!(auto_agrees(&team, &barrier), dedicated, "barrier, {wait:?}");
    }
}
