//! Semantics and bad input: buffers and lengths, disagreements between ranks, calls
//! in a row, results run after run, and the property test.

use super::*;

#[test]
fn allreduce_into_leaves_send_untouched() {
    for p in [1, 4, 7] {
        let out = team(p)
            .run(|comm| -> Result<(Vec<u64>, Vec<u64>), Error> {
                let r = comm.rank();
                let send: Vec<u64> = (0..1001).map(|i| mix(r, i, 24)).collect();
                let mut recv = vec![u64::MAX; 1001];
                comm.allreduce_into(&send, &mut recv, op::BitXor)?;
                Ok((send, recv))
            })
            .unwrap();
        let input = |r: usize, i: usize| mix(r, i, 24);
        let want = reference(p, 1001, &input, &|a, b| a ^ b);
        for (r, res) in out.into_iter().enumerate() {
            let (send, recv) = res.unwrap();
            let mine: Vec<u64> = (0..1001).map(|i| input(r, i)).collect();
            assert_eq!(send, mine, "p = {p}: rank {r}'s send changed");
            assert_eq!(recv, want, "p = {p}: rank {r}'s recv");
        }
    }
}

/// Rank 1 (rank 0 when alone) passes a `recv` one longer than its `send`: it gets
/// `InvalidArgument`; the others, whose calls cannot complete without it, fail with it as
/// the cause.
#[test]
fn allreduce_into_with_mismatched_buffers_fails_everywhere() {
    for p in [1, 2, 5] {
        let bad = 1 % p;
        let out = team(p)
            .run(|comm| {
                let n = 10;
                let send = vec![1u64; n];
                let extra = usize::from(comm.rank() == bad);
                let mut recv = vec![0u64; n + extra];
                comm.allreduce_into(&send, &mut recv, op::Sum)
            })
            .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            let e = res.expect_err("mismatched buffers");
            match e.root_cause() {
                Error::InvalidArgument { rank, op, what } => {
                    assert_eq!((*rank, *op), (bad, "allreduce"));
                    assert!(what.contains("10") && what.contains("11"), "{what}");
                }
                other => panic!("p = {p} rank {r}: {other}"),
            }
            if r == bad {
                assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
            }
        }
    }
}

/// The longest vector `Linear` folds on the communicator's slots (1,032 bytes: 129 `u64`, 64
/// 2×2 matrices of `u32`) and the ones around it, on every rank count, in place and out of
/// place, for a commutative and a non-commutative op: the fold and the schedule over the
/// mailboxes give the sequential fold's bits on either side of the edge.
#[test]
fn linear_on_either_side_of_the_fold_edge() {
    let algs = [Algorithm::Linear, Algorithm::Auto];
    let sums = |r: usize, i: usize| mix(r, i, 31) as i64;
    for team in teams(&all_ps()) {
        check(
            &team,
            &algs,
            &[128, 129, 130],
            &sums,
            &op::Sum,
            &|a: i64, b| a.wrapping_add(b),
            "sum i64",
        );
        let matrices = |r: usize, i: usize| matrix(r, i, 37);
        check_ordered(
            &team,
            &algs,
            &[63, 64, 65],
            &matrices,
            &matrix_op(),
            &matmul,
            "matrices",
        );
        let p = team.size();
        let out = team
            .run(|comm| -> Result<Vec<[u32; 4]>, Error> {
                let send: Vec<[u32; 4]> = (0..64).map(|i| matrices(comm.rank(), i)).collect();
                let mut recv = vec![[0; 4]; 64];
                comm.allreduce_into(&send, &mut recv, matrix_op())?;
                assert_eq!(
                    send,
                    (0..64)
                        .map(|i| matrices(comm.rank(), i))
                        .collect::<Vec<_>>()
                );
                Ok(recv)
            })
            .unwrap();
        let want = reference(p, 64, &matrices, &matmul);
        for (r, res) in out.into_iter().enumerate() {
            assert_eq!(res.unwrap(), want, "allreduce_into, p = {p}, rank {r}");
        }
    }
}

/// Runs an allreduce in which rank `long` passes `extra` more elements than the others'
/// `n`; every rank must return an error, and the run's first failure must be a mismatch.
fn lengths_differ(team: &Team, alg: Algorithm, n: usize, long: usize, extra: usize) {
    let p = team.size();
    let out = team
        .run(|comm| {
            let len = if comm.rank() == long { n + extra } else { n };
            let mut v = vec![comm.rank() as u64; len];
            comm.allreduce_with(&mut v, op::Sum, alg)
        })
        .unwrap();
    for (r, res) in out.into_iter().enumerate() {
        let e = res.expect_err(&format!(
            "{alg:?} p = {p}: rank {r} succeeded though rank {long} passed {} elements and \
             the others {n}",
            n + extra
        ));
        assert!(
            matches!(e.root_cause(), Error::Mismatch { .. }),
            "{alg:?} p = {p} n = {n} rank {r}: {e}"
        );
    }
}

#[test]
fn different_lengths_on_different_ranks_fail_everywhere() {
    for team in teams(&[2, 3, 5, 8, 33]) {
        let p = team.size();
        let cases = [
            (0, p - 1, 1),
            (1, 0, 1),
            (2, p - 1, 7),
            (p + 1, 1, 1),
            (1001, p / 2, p),
            // Segmented: one block per chunk against a block and one element.
            (p * BLOCK_U64, 0, 1),
            (p * BLOCK_U64, p - 1, 1),
            // One block per chunk against almost two.
            (p * BLOCK_U64, 1, p * (BLOCK_U64 - 1)),
            // The longest vector `Linear` folds against one element more, which it sends
            // through the mailboxes: the folding ranks learn of the other call while they wait.
            (129, p - 1, 1),
            (129, 0, 1),
        ];
        for alg in algorithms() {
            for (n, long, extra) in cases {
                lengths_differ(&team, alg, n, long, extra);
            }
        }
    }
}

/// Rank 1 picks another algorithm, or the same with another block size, than the others:
/// every rank fails, with a mismatch as the first failure. (`Auto` is left out: it
/// legitimately agrees with the algorithm it picks; so is `Hierarchical`, which on these
/// teams, one group each, is `Auto`'s flat choice. tests/hierarchy.rs checks its mismatches
/// on machines with several groups.)
#[test]
fn different_algorithms_on_different_ranks_fail_everywhere() {
    let explicit: Vec<Algorithm> = algorithms()
        .into_iter()
        .filter(|&a| a != Algorithm::Auto && !matches!(a, Algorithm::Hierarchical { .. }))
        .collect();
    for team in teams(&[2, 3, 5, 17]) {
        let p = team.size();
        for a in &explicit {
            for b in &explicit {
                if a == b {
                    continue;
                }
                // Long vectors; and short ones, which `Linear` folds on slots, where one of
                // the two is `Linear`.
                let short = *a == Algorithm::Linear || *b == Algorithm::Linear;
                for n in [2 * BLOCK_U64 + 3, 3]
                    .into_iter()
                    .take(1 + usize::from(short))
                {
                    let out = team
                        .run(|comm| {
                            let alg = if comm.rank() == 1 { *b } else { *a };
                            let mut v = vec![comm.rank() as u64; n];
                            comm.allreduce_with(&mut v, op::Sum, alg)
                        })
                        .unwrap();
                    for (r, res) in out.into_iter().enumerate() {
                        let e = res.expect_err(&format!(
                            "{a:?} against {b:?}, p = {p}, n = {n}, rank {r}"
                        ));
                        assert!(
                            matches!(e.root_cause(), Error::Mismatch { .. }),
                            "{a:?} against {b:?}, p = {p}, n = {n}, rank {r}: {e}"
                        );
                    }
                }
            }
        }
    }
}

/// One allreduce of each kind on `comm`, `k` choosing algorithms so that consecutive calls use
/// different ones, asserting every result. `id(i)` is the value communicator rank i stands
/// for (its team rank), so that a result in another order than the communicator's shows.
fn several_in_a_row(comm: &Comm, k: usize, id: &dyn Fn(usize) -> u32) -> Result<(), Error> {
    let (r, p) = (comm.rank(), comm.size());
    let (all, ord) = (algorithms(), ordered());
    let alg = |j: usize| all[(k + j) % all.len()];
    let ordered = |j: usize| ord[(k + j) % ord.len()];
    // Spans in communicator rank order.
    let mut spans = vec![(r as u32, r as u32 + 1); 37];
    comm.allreduce_with(&mut spans, span_op(), ordered(0))?;
    assert!(spans.iter().all(|&s| s == (0, p as u32)), "spans {spans:?}");
    // Matrices of the ids, in communicator rank order.
    let mat = |q: usize, i: usize| matrix(id(q) as usize, i, 25);
    let mut m: Vec<[u32; 4]> = (0..301).map(|i| mat(r, i)).collect();
    comm.allreduce_with(&mut m, matrix_op(), ordered(1))?;
    assert_eq!(m, reference(p, 301, &mat, &matmul), "matrices");
    // A sum, a maximum and a long xor.
    let mut s = vec![u64::from(id(r)); 3];
    comm.allreduce_with(&mut s, op::Sum, alg(2))?;
    let want: u64 = (0..p).map(|q| u64::from(id(q))).sum();
    assert_eq!(s, vec![want; 3], "sum of ids");
    let mut mx = [f64::from(id(r)), -f64::from(id(r))];
    comm.allreduce_with(&mut mx, op::Max, alg(3))?;
    let hi = (0..p).map(id).max().unwrap();
    let lo = (0..p).map(id).min().unwrap();
    assert_eq!(mx, [f64::from(hi), -f64::from(lo)], "max of ids");
    let x = |q: usize, i: usize| mix(id(q) as usize, i, 26);
    let mut v: Vec<u64> = (0..3 * BLOCK_U64 + 5).map(|i| x(r, i)).collect();
    // The next algorithm from the fifth on that runs so long a vector (see `feasible`).
    let long = (4..)
        .map(alg)
        .find(|&a| !feasible(a, p, &[v.len()]).is_empty())
        .unwrap();
    comm.allreduce_with(&mut v, op::BitXor, long)?;
    assert_eq!(v, reference(p, v.len(), &x, &|a, b| a ^ b), "xor");
    Ok(())
}

#[test]
fn several_in_a_row_on_one_communicator() {
    for team in teams(&[1, 3, 8]) {
        team.run(|comm| {
            for k in 0..algorithms().len() {
                several_in_a_row(comm, k, &|q| q as u32).unwrap();
            }
        })
        .unwrap();
    }
}

/// Colours r mod 3 interleave the sub-communicators' members; with reversed keys their rank
/// order is the reverse of the team order. Allreduces alternate between the world and the
/// sub-communicator, and the order of the non-commutative ops must be the sub-communicator's.
#[test]
fn several_in_a_row_on_split_sub_communicators() {
    for team in teams(&[5, 9, 17]) {
        let p = team.size();
        for reversed in [false, true] {
            let out = team
                .run(|world| -> Result<(u32, u32), Error> {
                    let r = world.rank();
                    let key = if reversed { p - r } else { r };
                    let sub = world.split(Some(r % 3), key)?.expect("a colour");
                    // The sub-communicator's ranks, in its order, as team ranks: the colour's
                    // members sorted by key.
                    let mut members: Vec<usize> = (0..p).filter(|q| q % 3 == r % 3).collect();
                    if reversed {
                        members.reverse();
                    }
                    assert_eq!(sub.size(), members.len());
                    let id = |i: usize| members[i] as u32;
                    for k in 0..3 {
                        several_in_a_row(&sub, k, &id)?;
                        several_in_a_row(world, k + 1, &|q| q as u32)?;
                    }
                    // The first and last member in the sub-communicator's order.
                    let ends = |i: usize| (id(i), id(i));
                    let mut e = vec![ends(sub.rank())];
                    let first_last =
                        op::non_commutative(|a: &(u32, u32), b: &(u32, u32)| (a.0, b.1));
                    sub.allreduce_with(
                        &mut e,
                        first_last,
                        Algorithm::Chain { block: Block::Auto },
                    )?;
                    Ok(e[0])
                })
                .unwrap();
            for (r, res) in out.into_iter().enumerate() {
                let mut members: Vec<u32> =
                    (0..p as u32).filter(|q| *q as usize % 3 == r % 3).collect();
                if reversed {
                    members.reverse();
                }
                let want = (members[0], *members.last().unwrap());
                assert_eq!(
                    res.unwrap(),
                    want,
                    "p = {p}, reversed = {reversed}, rank {r}"
                );
            }
        }
    }
}

/// The same algorithm, rank count and inputs give the same bits run after run (and on every
/// rank), for float sums whose rounding depends on the order of additions.
#[test]
fn deterministic_across_runs() {
    let input = |r: usize, i: usize| float(r, i, 27);
    for team in teams(&[3, 17]) {
        let p = team.size();
        let algs = algorithms();
        // Long vectors on 3 ranks; 17 oversubscribed ranks repeat the short one.
        let lens: &[usize] = if p <= 3 { &[1000, LONG] } else { &[1000] };
        let cases = cases(p, &algs, lens, &input, &|a, b| a + b);
        for &alg in &algs {
            let first = run_cases(&team, alg, &cases, &op::Sum);
            let second = run_cases(&team, alg, &cases, &op::Sum);
            for ((case, a), (_, b)) in first.iter().zip(&second) {
                for r in 0..p {
                    assert!(
                        same_vec(&a[r], &a[0]),
                        "{alg:?} p = {p}: rank {r} vs rank 0"
                    );
                    assert!(
                        same_vec(&a[r], &b[r]),
                        "{alg:?} p = {p} n = {}: rank {r} differs between runs",
                        case.n
                    );
                }
            }
        }
    }
}

/// The algorithm variants the property test draws from: those of [`algorithms`], one entry
/// per variant whatever its block (the block is drawn separately).
fn variants() -> Vec<Algorithm> {
    let mut v = algorithms();
    v.dedup_by_key(|a| a.name());
    v
}

/// `alg` with pipeline block `block` if it takes one (the block is ignored otherwise).
fn with_block(alg: Algorithm, block: Block) -> Algorithm {
    match alg {
        Algorithm::Chain { .. } => Algorithm::Chain { block },
        Algorithm::Ring { .. } => Algorithm::Ring { block },
        Algorithm::PipelinedTree { .. } => Algorithm::PipelinedTree { block },
        Algorithm::DualRoot { .. } => Algorithm::DualRoot { block },
        Algorithm::TwoTree { .. } => Algorithm::TwoTree { block },
        other => other,
    }
}

/// A pipeline block: `Auto` or 1 to 64 elements.
fn any_block() -> impl Strategy<Value = Block> {
    prop_oneof![1 => Just(Block::Auto), 3 => (1usize..=64).prop_map(Block::Elements)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(PROPTEST_CASES))]

    /// Matrix products in rank order for random rank counts, lengths, algorithms, blocks and
    /// inputs, in place (`allreduce_with`) or, one time in four, out of place
    /// (`allreduce_into`, which has no algorithm argument and runs `Auto`); the ring refuses
    /// on every rank.
    #[test]
    fn non_commutative_any_p_count_block_algorithm(
        p in 1usize..=33,
        n in 0usize..=3000,
        variant in prop::sample::select(variants()),
        block in any_block(),
        into in prop::bool::weighted(0.25),
        salt in any::<u64>(),
    ) {
        let alg = if into { Algorithm::Auto } else { with_block(variant, block) };
        let input = |r: usize, i: usize| matrix(r, i, salt);
        let out = team(p).run(|comm| {
            let mine: Vec<[u32; 4]> = (0..n).map(|i| input(comm.rank(), i)).collect();
            if into {
                let mut recv = vec![[u32::MAX; 4]; n];
                comm.allreduce_into(&mine, &mut recv, matrix_op())?;
                assert_eq!(mine, (0..n).map(|i| input(comm.rank(), i)).collect::<Vec<_>>());
                Ok(recv)
            } else {
                let mut v = mine;
                comm.allreduce_with(&mut v, matrix_op(), alg).map(|()| v)
            }
        })
        .unwrap();
        let want = reference(p, n, &input, &matmul);
        for (r, res) in out.into_iter().enumerate() {
            match (keeps_order(alg), res) {
                (false, Err(e)) => prop_assert!(
                    matches!(e.root_cause(), Error::Unsupported { .. }),
                    "rank {}: {}", r, e
                ),
                (false, Ok(_)) => prop_assert!(false, "rank {}: {:?} accepted", r, alg),
                (true, Err(e)) => prop_assert!(false, "{:?}, rank {}: {}", alg, r, e),
                (true, Ok(v)) => prop_assert_eq!(v, want.clone(), "{:?}, rank {}", alg, r),
            }
        }
    }
}
