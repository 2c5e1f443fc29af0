//! Explicit blocks through the public API reach the schedule: `Algorithm::Chain`'s blocks and
//! `Algorithm::Ring`'s pieces of 1, 3 and 7 elements (and the ring's automatic one), on 1 to
//! 8 ranks and counts from empty to thousands of blocks, against the sequential sum; the
//! chain with a non-commutative op in rank order too. The schedules' own unit tests call them
//! directly (`src/algorithms/allreduce/`).

use super::*;

/// A non-commutative op on spans: (a, b) ⊙ (b, c) = (a, c), and a panic for spans out of
/// rank order.
fn span_op() -> impl op::Op<(u32, u32)> + Copy {
    op::non_commutative(|a: &(u32, u32), b: &(u32, u32)| {
        assert_eq!(a.1, b.0, "operands out of rank order");
        (a.0, b.1)
    })
}

#[test]
fn chain_explicit_blocks_match_the_sequential_reference() {
    for p in [1usize, 2, 3, 5, 8] {
        for b in [1usize, 3, 7] {
            let alg = Algorithm::Chain {
                block: Block::Elements(b),
            };
            for n in [0usize, 1, p + 1, 7 * b, 7 * b + 3, 1001, 20_011] {
                let want: Vec<u64> = (0..n)
                    .map(|i| (0..p).map(|r| (r * 1000 + i) as u64).sum())
                    .collect();
                let out = team(p)
                    .run(|comm| {
                        let r = comm.rank();
                        let mut u: Vec<u64> = (0..n).map(|i| (r * 1000 + i) as u64).collect();
                        comm.allreduce_with(&mut u, op::Sum, alg)?;
                        let r = r as u32;
                        let mut s = vec![(r, r + 1); n.min(100)];
                        comm.allreduce_with(&mut s, span_op(), alg)?;
                        Ok::<_, Error>((u, s))
                    })
                    .unwrap();
                for res in out {
                    let (u, s) = res.unwrap();
                    assert_eq!(u, want, "p={p} b={b} n={n}");
                    assert_eq!(s, vec![(0, p as u32); n.min(100)], "p={p} b={b} n={n}");
                }
            }
        }
    }
}

#[test]
fn ring_explicit_pieces_match_the_sequential_reference() {
    let x = |r: usize, i: usize| ((r * 7919 + i * 104_729) % 1000) as u64;
    for p in [1usize, 2, 3, 5, 8] {
        for block in [
            Block::Elements(1),
            Block::Elements(3),
            Block::Elements(7),
            Block::Auto,
        ] {
            for n in [0usize, 1, p - 1, p + 1, 7 * p, 7 * p + 3, 1001, 20_011] {
                let want: Vec<u64> = (0..n).map(|i| (0..p).map(|r| x(r, i)).sum()).collect();
                let alg = Algorithm::Ring { block };
                let out = team(p)
                    .run(|comm| {
                        let r = comm.rank();
                        let mut u: Vec<u64> = (0..n).map(|i| x(r, i)).collect();
                        comm.allreduce_with(&mut u, op::Sum, alg)?;
                        let mut f: Vec<f64> = (0..n).map(|i| x(r, i) as f64 - 500.0).collect();
                        comm.allreduce_with(&mut f, op::Sum, alg)?;
                        Ok::<_, Error>((u, f))
                    })
                    .unwrap();
                let want_f: Vec<f64> = want.iter().map(|&s| s as f64 - 500.0 * p as f64).collect();
                for res in out {
                    let (u, f) = res.unwrap();
                    assert_eq!(u, want, "p={p} n={n} {block:?}");
                    assert_eq!(f, want_f, "p={p} n={n} {block:?}");
                }
            }
        }
    }
}
