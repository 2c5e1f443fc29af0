//! The cost-model simulator (`corecoll::sim`) against the step counts of the literature, and
//! every simulable schedule against the simulator's own consistency checks (each message
//! matched, lengths and tags agreeing on both ends, nobody left waiting).
//!
//! The counts are those of the α-β model with bidirectional ports (Träff 2021, §1.2;
//! Sanders, Speck and Träff 2009 for the two-tree algorithm): a step is one transfer per
//! direction and rank, and `rounds` is the number of steps on the critical path. Vectors of
//! b·B − 1 elements in blocks of B make b blocks (the schedules cut ⌊n/B⌋ + 1 blocks, the last
//! one short); `b_blocks_exact` shows what a block size that divides n costs.

use corecoll::algorithm::Any;
use corecoll::algorithm::{Allgather, Alltoall, Barrier, Broadcast, Gather, Scatter};
use corecoll::sim::{self, Case, Model, Ports};
use corecoll::{Algorithm, Block, Error};

const B: usize = 8;

fn steps(collective: Any, p: usize, n: usize) -> u64 {
    let case = Case::new(collective, p, n);
    sim::simulate(&case, &Model::steps(Ports::Bidirectional))
        .unwrap_or_else(|e| panic!("{} p={p} n={n}: {e}", collective.name()))
        .rounds
}

/// Träff 2021's dual-root algorithm on p = 2^h − 2 ranks (two trees of 2^(h−1) − 1 ranks,
/// H = h − 2 edges deep): the first block reaches the last leaf after 4H + 1 steps (2H up a
/// tree, one exchange between the roots, 2H down) and every further block takes 3 more.
///
/// The paper writes 4h − 3 + 3(b − 1), 4 more: its 2(h − 1) steps from the leaves to a root
/// count the h − 1 levels of a tree at two exchanges each, but the leaves' level has no
/// children to exchange with. Checked by hand for h = 3 (p = 6, two trees of a root and two
/// leaves): right child, left child, dual, right child, left child — 5 steps for one block,
/// where the paper's formula gives 9.
#[test]
fn dual_root_takes_4h_plus_1_then_3_per_block() {
    for h in 3..=10usize {
        let p = (1 << h) - 2;
        for b in [1usize, 2, 3, 7, 16, 40] {
            let alg = Algorithm::DualRoot {
                block: Block::Elements(B),
            };
            let got = steps(Any::Allreduce(alg), p, b * B - 1);
            let paper = 4 * h - 3 + 3 * (b - 1);
            assert_eq!(got as usize, paper - 4, "p={p} h={h} b={b}");
            assert_eq!(got as usize, 4 * (h - 2) + 1 + 3 * (b - 1));
        }
    }
}

/// The pipelined reduce-then-broadcast on one tree of height h (p = 2^(h+1) − 1):
/// 2(2h + 2(b − 1)) steps, exactly Träff 2021's count.
#[test]
fn pipelined_tree_takes_2_times_2h_plus_2_per_block() {
    for h in 1..=9usize {
        let p = (1 << (h + 1)) - 1;
        for b in [1usize, 2, 5, 16, 33] {
            let alg = Algorithm::PipelinedTree {
                block: Block::Elements(B),
            };
            let got = steps(Any::Allreduce(alg), p, b * B - 1);
            assert_eq!(got as usize, 2 * (2 * h + 2 * (b - 1)), "p={p} h={h} b={b}");
        }
    }
}

/// The two-tree algorithm (Sanders, Speck and Träff 2009), reduce then broadcast, with b blocks
/// per half: each phase D + 2(b − 1) + 1 steps, D = 2⌊log₂(p − 1)⌋ the largest edge delay of
/// the 2-coloured trees, 2D + 4b − 2 in all — for every p from 3 to 70 and some larger.
/// (Each rank builds both trees, O(p): larger p cost seconds in a debug build.)
#[test]
fn two_tree_takes_2d_plus_4b_minus_2() {
    let ps = (3..=70usize).chain([127, 128, 129, 130, 255, 256, 257, 1152]);
    for p in ps {
        let d = 2 * (p - 1).ilog2() as usize;
        for b in [1usize, 4, 9] {
            let alg = Algorithm::TwoTree {
                block: Block::Elements(B),
            };
            // Two halves of b·B − 1 elements each.
            let got = steps(Any::Allreduce(alg), p, 2 * (b * B - 1));
            assert_eq!(got as usize, 2 * d + 4 * b - 2, "p={p} b={b}");
        }
    }
}

/// The ring: p − 1 steps of reduce-scatter and p − 1 of allgather, each rank sending
/// 2(p − 1)/p of the vector.
#[test]
fn ring_takes_2_p_minus_1_steps() {
    for p in (2..=40).chain([64, 100, 333]) {
        let n = p * 10;
        let case = Case::new(Any::Allreduce(Algorithm::Ring { block: Block::Auto }), p, n);
        let out = sim::simulate(&case, &Model::steps(Ports::Bidirectional)).unwrap();
        assert_eq!(out.rounds as usize, 2 * (p - 1), "p={p}");
        assert_eq!(out.max_bytes_sent as usize, 2 * (p - 1) * 10 * 4, "p={p}");
    }
}

/// The classic latency counts: recursive doubling ⌈log₂ p⌉ exchanges on a power of two and 2
/// more (fold in, hand back) otherwise; binomial reduce then broadcast 2⌈log₂ p⌉; chain
/// 2(p − 2 + b); the dissemination barrier ⌈log₂ p⌉.
#[test]
fn classic_counts() {
    for p in 2..=70usize {
        let lg = p.next_power_of_two().ilog2() as u64;
        let fold = if p.is_power_of_two() { 0 } else { 2 };
        let rd = steps(Any::Allreduce(Algorithm::RecursiveDoubling), p, 5);
        assert_eq!(rd, p.ilog2() as u64 + fold, "recursive doubling p={p}");
        let bin = steps(Any::Allreduce(Algorithm::Binomial), p, 5);
        assert_eq!(bin, 2 * lg, "binomial p={p}");
        let bar = steps(Any::Barrier(Barrier::Dissemination), p, 0);
        assert_eq!(bar, lg, "dissemination p={p}");
    }
}

/// With unidirectional ports an exchange costs two steps: recursive doubling on 2^k ranks
/// takes 2k, the dual-root algorithm's dual exchange on two ranks 2 per block.
#[test]
fn unidirectional_ports_serialise_exchanges() {
    let one = Model::steps(Ports::Unidirectional);
    for k in 1..=8 {
        let case = Case::new(Any::Allreduce(Algorithm::RecursiveDoubling), 1 << k, 3);
        assert_eq!(sim::simulate(&case, &one).unwrap().rounds, 2 * k as u64);
    }
    let alg = Algorithm::DualRoot {
        block: Block::Elements(B),
    };
    let case = Case::new(Any::Allreduce(alg), 2, 5 * B - 1);
    assert_eq!(sim::simulate(&case, &one).unwrap().rounds, 10);
}

/// Time, not only steps: with blocks of B that divide n the schedules add an empty last block
/// (so that ranks of different lengths meet a mismatch), which costs one more pipeline stage of
/// α per step on the critical path. The dual root then takes exactly
/// (4H + 1 + 3(b − 1))(α + βm/b) + 3α, and the pipelined tree 2(2h + 2(b − 1))(α + βm/b) + 4α.
#[test]
fn b_blocks_exact() {
    let model = Model {
        alpha_ns: 2.0,
        beta_ns: 0.5,
        gamma_ns: 0.0,
        ports: Ports::Bidirectional,
    };
    let step = 2.0 + 0.5 * (B * 4) as f64;
    for h in 3..=7usize {
        for b in [1usize, 3, 8] {
            let dual = Algorithm::DualRoot {
                block: Block::Elements(B),
            };
            let case = Case::new(Any::Allreduce(dual), (1 << h) - 2, b * B);
            let t = sim::simulate(&case, &model).unwrap().time_ns;
            let n = (4 * (h - 2) + 1 + 3 * (b - 1)) as f64;
            assert_eq!(t, n * step + 3.0 * 2.0, "dual root h={h} b={b}");
            let tree = Algorithm::PipelinedTree {
                block: Block::Elements(B),
            };
            let case = Case::new(Any::Allreduce(tree), (1 << h) - 1, b * B);
            let t = sim::simulate(&case, &model).unwrap().time_ns;
            let n = (2 * (2 * (h - 1) + 2 * (b - 1))) as f64;
            assert_eq!(t, n * step + 4.0 * 2.0, "pipelined tree h={h} b={b}");
        }
    }
}

/// γ: the dual root's roots combine three blocks per round and its inner ranks two, so the
/// reductions a rank does never exceed 3m; the busiest rank of the pipelined tree reduces 2m.
#[test]
fn reductions_are_counted() {
    let model = Model::default();
    let n = 10_000;
    let dual = Algorithm::DualRoot {
        block: Block::Elements(100),
    };
    let out = sim::simulate(&Case::new(Any::Allreduce(dual), 30, n), &model).unwrap();
    assert_eq!(out.max_bytes_reduced, 3 * 4 * n as u64);
    let tree = Algorithm::PipelinedTree {
        block: Block::Elements(100),
    };
    let out = sim::simulate(&Case::new(Any::Allreduce(tree), 31, n), &model).unwrap();
    assert_eq!(out.max_bytes_reduced, 2 * 4 * n as u64);
}

/// Ten thousand ranks and more: the tree algorithms' traces are O(p(log p + b)).
#[test]
fn ten_thousand_ranks() {
    let p = (1 << 14) - 2;
    let alg = Algorithm::DualRoot {
        block: Block::Elements(B),
    };
    assert_eq!(steps(Any::Allreduce(alg), p, 4 * B - 1), 4 * 12 + 1 + 9);
    let case = Case::new(Any::Allreduce(Algorithm::Rabenseifner), 10_000, 1 << 16);
    let out = sim::simulate(&case, &Model::default()).unwrap();
    // ⌊log₂ p⌋ = 13 halving and 13 doubling steps, and the 1 808 ranks above 2^13 folded in
    // before and handed the result after.
    assert_eq!(out.rounds, 2 * 13 + 2);
}

/// Every algorithm the simulator can run completes with every message matched, on rank
/// counts from 1 to 33, several counts (0, 1, fewer than p, odd, larger) and roots, for a
/// commutative and a non-commutative op.
#[test]
fn every_schedule_is_consistent() {
    for c in sim::algorithms() {
        for p in [1usize, 2, 3, 4, 5, 7, 8, 12, 16, 17, 33] {
            for n in [0usize, 1, 3, 17, 100] {
                for root in [0, p / 2, p - 1] {
                    for commutative in [true, false] {
                        let case = Case {
                            root,
                            commutative,
                            ..Case::new(c, p, n)
                        };
                        match sim::simulate(&case, &Model::default()) {
                            Ok(out) => assert!(out.time_ns >= 0.0),
                            Err(Error::Unsupported { .. })
                                if !commutative
                                    && matches!(c, Any::Allreduce(Algorithm::Ring { .. })) => {}
                            Err(e) => panic!("{} p={p} n={n} root={root}: {e}", c.name()),
                        }
                    }
                }
            }
        }
    }
}

/// What the simulator cannot run is an error that says why.
#[test]
fn refusals() {
    let model = Model::default();
    for c in [
        Any::Allreduce(Algorithm::Auto),
        Any::Allreduce(Algorithm::Direct),
        Any::Allreduce(Algorithm::Native),
        Any::Broadcast(Broadcast::Direct),
        Any::Allgather(Allgather::Direct),
        Any::Alltoall(Alltoall::Direct),
        Any::Gather(Gather::Direct),
        Any::Scatter(Scatter::Direct),
    ] {
        let e = sim::simulate(&Case::new(c, 4, 10), &model).unwrap_err();
        assert!(matches!(e, Error::Simulation { .. }), "{}: {e}", c.name());
    }
    let case = Case {
        root: 4,
        ..Case::new(Any::Gather(Gather::Linear), 4, 10)
    };
    assert!(matches!(
        sim::simulate(&case, &model),
        Err(Error::RankOutOfRange { peer: 4, .. })
    ));
    let e = sim::simulate(&Case::new(Any::Scatter(Scatter::Linear), 0, 1), &model);
    assert!(matches!(e, Err(Error::ZeroRanks)));
    let case = Case {
        commutative: false,
        ..Case::new(
            Any::Allreduce(Algorithm::Ring { block: Block::Auto }),
            4,
            10,
        )
    };
    assert!(matches!(
        sim::simulate(&case, &model),
        Err(Error::Unsupported { .. })
    ));
}

/// The pipelined-tree reduce pipelines to every root (it used not to below p − 1: 2, 3, 6 and
/// 7 steps per block at roots 62, 61, 0 and 31 of 63 ranks). With b blocks it takes
/// U + D + 2(b − 1) steps on p ≥ 3 ranks and 2 + (b − 1) on two, at every root (all of them
/// up to p = 63, a sample of them on larger p), where U (block
/// 0 up to the root) and D (the acknowledgements back down) follow the tree's shape as
/// `algorithms/reduce/pipelined_tree.rs` describes; on p = 2^(h+1) − 1 ranks at the roots 0,
/// (p − 1)/2 and p − 1 that is 4h + 2(b − 1), and at any root it is within 2 steps of root
/// p − 1. The pipelined-tree broadcast, which relabels the ranks, costs the same at every
/// root: 2h + 2(b − 1) on p = 2^(h+1) − 1. And neither schedule deadlocks or mismatches at any
/// root for p up to 40.
#[test]
fn pipelined_tree_reduce_pipelines_to_every_root() {
    use corecoll::algorithm::Reduce;
    /// Steps until the top of a post-order tree of `n ≥ 1` ranks has block 0.
    fn up(n: usize) -> usize {
        let (l, r) = (n / 2, n - 1 - n / 2);
        match (l, r) {
            (0, _) => 0,
            (_, 0) => up(l) + 1,
            _ => (up(r) + 1).max(up(l)) + 1,
        }
    }
    /// Steps of the acknowledgements from the top of such a tree to its last leaf.
    fn down(n: usize) -> usize {
        let (l, r) = (n / 2, n - 1 - n / 2);
        match (l, r) {
            (0, _) => 0,
            (_, 0) => down(l) + 1,
            _ => (down(l) + 1).max(down(r) + 2),
        }
    }
    /// The reference count at `root` of `p ≥ 3` ranks for one block: the root's parts hold
    /// n₁ ≤ n₂ of the other ranks (the halves of p − 1 at either end, the ranks on either side
    /// of it otherwise), the smaller received first and acknowledged last.
    fn one_block(p: usize, root: usize) -> u64 {
        let n1 = if root == 0 || root == p - 1 {
            (p - 1) / 2
        } else {
            root.min(p - 1 - root)
        };
        let n2 = p - 1 - n1;
        let (u, d) = if n1 == 0 {
            (up(n2) + 1, down(n2) + 1)
        } else {
            (
                (up(n1) + 1).max(up(n2)) + 1,
                (down(n2) + 1).max(down(n1) + 2),
            )
        };
        (u + d) as u64
    }
    let reduce = Any::Reduce(Reduce::PipelinedTree {
        block: Block::Elements(B),
    });
    let broadcast = Any::Broadcast(Broadcast::PipelinedTree {
        block: Block::Elements(B),
    });
    let at = |c: Any, p: usize, root: usize, b: usize| {
        let case = Case {
            root,
            ..Case::new(c, p, b * B - 1)
        };
        sim::simulate(&case, &Model::steps(Ports::Bidirectional))
            .unwrap_or_else(|e| panic!("{} p={p} root={root} b={b}: {e}", c.name()))
            .rounds
    };
    for p in [2usize, 3, 7, 15, 40, 63, 100, 255, 1000] {
        let roots: Vec<usize> = if p <= 63 {
            (0..p).collect()
        } else {
            [0, 1, 2, p / 3, p / 2 - 1, p / 2, p - 3, p - 2, p - 1].into()
        };
        let top = if p == 2 { 2 } else { one_block(p, p - 1) };
        for root in roots {
            for b in [1u64, 2, 7, 15] {
                let got = at(reduce, p, root, b as usize);
                let want = if p == 2 {
                    2 + (b - 1)
                } else {
                    one_block(p, root) + 2 * (b - 1)
                };
                assert_eq!(got, want, "reduce p={p} root={root} b={b}");
                assert!(
                    got <= top + 2 + 2 * (b - 1),
                    "reduce p={p} root={root} b={b}"
                );
                if (p + 1).is_power_of_two() {
                    let h = (p + 1).ilog2() as u64 - 1;
                    if [0, (p - 1) / 2, p - 1].contains(&root) {
                        assert_eq!(got, 4 * h + 2 * (b - 1), "reduce p={p} root={root} b={b}");
                    }
                    let got = at(broadcast, p, root, b as usize);
                    assert_eq!(
                        got,
                        2 * h + 2 * (b - 1),
                        "broadcast p={p} root={root} b={b}"
                    );
                }
            }
        }
    }
    // Every root of every p to 40, a few counts and blocks, either op: no deadlock, no
    // mismatch (the simulator's errors), for both schedules.
    for p in 1..=40usize {
        for root in 0..p {
            for (n, block) in [(0usize, 1usize), (1, 1), (5, 1), (17, 3), (40, 8)] {
                for commutative in [true, false] {
                    for c in [
                        Any::Reduce(Reduce::PipelinedTree {
                            block: Block::Elements(block),
                        }),
                        Any::Broadcast(Broadcast::PipelinedTree {
                            block: Block::Elements(block),
                        }),
                    ] {
                        let case = Case {
                            root,
                            commutative,
                            ..Case::new(c, p, n)
                        };
                        if let Err(e) = sim::simulate(&case, &Model::default()) {
                            panic!("{} p={p} root={root} n={n}: {e}", c.name());
                        }
                    }
                }
            }
        }
    }
}

/// The chain and the ring with explicit blocks. The chain is a pipeline of 2(p − 2 + b) steps
/// for b blocks (the (a, c) = (2(p − 2), 2) that `Block::Auto`'s lemma uses). The ring moves
/// chunks of at most ⌈n/p⌉ elements in pieces of at most B, in lockstep around the ring and
/// without pipelining across its steps: 2(p − 1)·k steps for k = ⌈⌈n/p⌉ / B⌉ pieces (at least
/// one, an empty transfer being still a message), so its block only adds messages, and
/// `Block::Auto` sends each chunk in one piece: 2(p − 1) steps.
#[test]
fn chain_and_ring_steps_with_explicit_blocks() {
    for p in 2..=20usize {
        for b in [1usize, 2, 3, 7, 16] {
            let chain = Algorithm::Chain {
                block: Block::Elements(B),
            };
            let got = steps(Any::Allreduce(chain), p, b * B - 1);
            assert_eq!(got as usize, 2 * (p - 2 + b), "chain p={p} b={b}");
        }
    }
    let model = Model::steps(Ports::Bidirectional);
    // The last count makes chunks of 160 KB of 4-byte elements, more than the pipelines' cache
    // cap of 128 KiB: `Auto` still sends them whole, 2(p − 1) steps.
    for p in [2usize, 3, 4, 5, 8, 13] {
        for n in [
            0usize,
            1,
            p - 1,
            p + 1,
            5 * p,
            17 * p + 3,
            300 * p + 1,
            40_000 * p + 1,
        ] {
            let m = n.div_ceil(p);
            // (No more than a thousand pieces per chunk: the traces grow as p²k.)
            for block in [1usize, 3, 7, 1000].into_iter().filter(|&b| m / b <= 1000) {
                let ring = Algorithm::Ring {
                    block: Block::Elements(block),
                };
                let got = steps(Any::Allreduce(ring), p, n);
                let k = m.div_ceil(block).max(1);
                assert_eq!(got as usize, 2 * (p - 1) * k, "ring p={p} n={n} B={block}");
            }
            let auto = Algorithm::Ring { block: Block::Auto };
            let out = sim::simulate(&Case::new(Any::Allreduce(auto), p, n), &model).unwrap();
            let k = m.div_ceil(out.block).max(1);
            assert_eq!(
                out.rounds as usize,
                2 * (p - 1) * k,
                "ring auto p={p} n={n}"
            );
        }
    }
}
