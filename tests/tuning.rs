//! `Auto` by decision tables: every algorithm a rule may name runs through `Auto` with the
//! right result, the program's rules are what a team decides, and a profile's tables are used.

use corecoll::op::{non_commutative, Sum};
use corecoll::tuning::{Origin, Table};
use corecoll::Collective;
use corecoll::{Profile, Team};

/// Runs `c` with `Auto` on `team` (each rank's input: rank · 1000 + i over `n` elements, or
/// p blocks of `n` for the blocked collectives) and compares every rank's output with the
/// sequential reference; returns what `Auto` chose (`Comm::auto_choice`), the same on every
/// rank.
fn run_and_check(team: &Team, c: Collective, n: usize) -> Option<&'static str> {
    let p = team.size();
    let input =
        |r: usize, len: usize| -> Vec<u64> { (0..len).map(|i| (r * 1000 + i) as u64).collect() };
    let sum = |len: usize| -> Vec<u64> {
        (0..len)
            .map(|i| (0..p).map(|r| (r * 1000 + i) as u64).sum())
            .collect()
    };
    let out = team
        .run(
            |comm| -> corecoll::Result<(Vec<u64>, Option<&'static str>)> {
                let r = comm.rank();
                let out: corecoll::Result<Vec<u64>> = match c {
                    Collective::Allreduce => {
                        let mut b = input(r, n);
                        comm.allreduce(&mut b, Sum)?;
                        Ok(b)
                    }
                    Collective::Broadcast => {
                        let mut b = if r == 1 % p { input(7, n) } else { vec![0; n] };
                        comm.broadcast(&mut b, 1 % p)?;
                        Ok(b)
                    }
                    Collective::Reduce => {
                        let mut b = input(r, n);
                        comm.reduce(&mut b, Sum, 0)?;
                        Ok(if r == 0 { b } else { sum(n) })
                    }
                    Collective::Scan => {
                        let mut b = input(r, n);
                        comm.scan(&mut b, Sum)?;
                        Ok(b)
                    }
                    Collective::Gather => {
                        let mut recv = vec![0; if r == 0 { n * p } else { 0 }];
                        comm.gather(&input(r, n), &mut recv, 0)?;
                        Ok(recv)
                    }
                    Collective::Scatter => {
                        let send = if r == 0 {
                            (0..p).flat_map(|q| input(q, n)).collect()
                        } else {
                            vec![]
                        };
                        let mut recv = vec![0; n];
                        comm.scatter(&send, &mut recv, 0)?;
                        Ok(recv)
                    }
                    Collective::Allgather => {
                        let mut recv = vec![0; n * p];
                        comm.allgather(&input(r, n), &mut recv)?;
                        Ok(recv)
                    }
                    Collective::Alltoall => {
                        // Block q of rank r's send: r · 1000 + q · n + i.
                        let mut recv = vec![0; n * p];
                        comm.alltoall(&input(r, n * p), &mut recv)?;
                        Ok(recv)
                    }
                    Collective::ReduceScatter => {
                        let mut recv = vec![0; n];
                        comm.reduce_scatter_block(&input(r, n * p), &mut recv, Sum)?;
                        Ok(recv)
                    }
                    Collective::Barrier => {
                        comm.barrier()?;
                        Ok(vec![])
                    }
                    _ => unreachable!("a new collective"),
                };
                Ok((out?, corecoll::unstable::auto_choice(comm)))
            },
        )
        .unwrap();
    let mut chose = Vec::new();
    for (r, got) in out.into_iter().enumerate() {
        let (got, choice) = got.unwrap_or_else(|e| panic!("{c} rank {r}: {e}"));
        chose.push(choice);
        let want: Vec<u64> = match c {
            Collective::Allreduce | Collective::Reduce => sum(n),
            Collective::Broadcast => input(7, n),
            Collective::Scan => (0..n)
                .map(|i| (0..=r).map(|q| (q * 1000 + i) as u64).sum())
                .collect(),
            Collective::Gather if r == 0 => (0..p).flat_map(|q| input(q, n)).collect(),
            Collective::Gather | Collective::Barrier => vec![],
            Collective::Scatter => input(r, n),
            Collective::Allgather => (0..p).flat_map(|q| input(q, n)).collect(),
            Collective::Alltoall => (0..p)
                .flat_map(|q| (0..n).map(move |i| (q * 1000 + r * n + i) as u64))
                .collect(),
            Collective::ReduceScatter => sum(n * p)[r * n..(r + 1) * n].to_vec(),
            _ => unreachable!(),
        };
        assert_eq!(got, want, "{c} rank {r} of {p}, {n} elements");
    }
    assert!(chose.iter().all(|&x| x == chose[0]), "{c}: {chose:?}");
    chose[0]
}

/// Every algorithm a rule may name, forced through `Auto` by the program's rules, decides as
/// asked and gives the reference result, over several rank counts and lengths.
#[test]
fn every_ruled_algorithm_runs_through_auto() {
    for p in [1, 2, 3, 5] {
        for c in Collective::ALL {
            for alg in c.algorithms() {
                let team = Team::builder()
                    .ranks(p)
                    .algorithm_rules(c, alg)
                    .build()
                    .unwrap();
                let d = team.decide(c, p, 64, true).unwrap();
                assert_eq!((d.algorithm, d.origin), (alg, Origin::Program), "{c} p={p}");
                for n in [0, 1, 3, 37] {
                    let chose = run_and_check(&team, c, n);
                    // What ran is what the rule named (a call with nothing to move may
                    // return before choosing).
                    if p > 1 && (n > 0 || c == Collective::Barrier) {
                        assert_eq!(chose, Some(alg), "{c} p={p} n={n}");
                    }
                }
            }
        }
    }
}

/// Rules cover ranges: each range's algorithm decides there; a size no rule covers goes to
/// the tables; bad rules fail the build with a clear error.
#[test]
fn rules_by_range_and_their_errors() {
    let team = Team::builder()
        .ranks(4)
        .algorithm_rules(Collective::Allreduce, "linear:0-64;chain:65-1KiB")
        .build()
        .unwrap();
    let at = |bytes| team.decide(Collective::Allreduce, 4, bytes, true).unwrap();
    assert_eq!(at(64).algorithm, "linear");
    assert_eq!(at(65).algorithm, "chain");
    assert_eq!(at(1024).algorithm, "chain");
    assert!(matches!(at(1025).origin, Origin::BuiltIn { .. }));
    for n in [0, 8, 9, 128, 129, 1000] {
        run_and_check(&team, Collective::Allreduce, n);
    }
    let e = Team::builder()
        .ranks(2)
        .algorithm_rules(Collective::Allreduce, "hierarchical")
        .build()
        .unwrap_err();
    assert!(matches!(e, corecoll::Error::Tuning { .. }), "{e}");
    assert!(e.to_string().contains("algorithm_rules(allreduce)"), "{e}");
}

/// A non-commutative allreduce passes over a rule naming the ring and keeps rank order.
#[test]
fn noncommutative_ops_pass_over_the_ring() {
    for p in [2, 3, 6] {
        let team = Team::builder()
            .ranks(p)
            .algorithm_rules(Collective::Allreduce, "ring")
            .build()
            .unwrap();
        assert_eq!(
            team.decide(Collective::Allreduce, p, 64, true)
                .unwrap()
                .algorithm,
            "ring"
        );
        let d = team.decide(Collective::Allreduce, p, 64, false).unwrap();
        assert_ne!(d.algorithm, "ring");
        // Associative, not commutative: the first operand's left half, the last one's right.
        let op = non_commutative(|a: &(u32, u32), b: &(u32, u32)| (a.0, b.1));
        for n in [1, 5, 100] {
            let inputs: Vec<Vec<(u32, u32)>> = (0..p)
                .map(|r| {
                    (0..n)
                        .map(|i| ((r * 31 + i) as u32, (r * 7 + i) as u32))
                        .collect()
                })
                .collect();
            let want: Vec<(u32, u32)> = (0..n)
                .map(|i| (inputs[0][i].0, inputs[p - 1][i].1))
                .collect();
            let out = team
                .run(|comm| {
                    let mut b = inputs[comm.rank()].clone();
                    comm.allreduce(&mut b, op).map(|()| b)
                })
                .unwrap();
            for got in out {
                assert_eq!(got.unwrap(), want, "p={p} n={n}");
            }
        }
    }
}

/// A profile's tables decide for their collective, the nearest by rank count.
#[test]
fn profile_tables_decide() {
    let mut profile = Profile::default();
    for (ranks, rules) in [(2, "binomial:0-100;direct:101-max"), (16, "pipelined-tree")] {
        profile.tables.push(Table {
            collective: Collective::Reduce,
            ranks,
            oversubscribed: false,
            rules: rules.into(),
            noncommutative: None,
            measured: "a test".into(),
        });
    }
    let team = Team::builder()
        .ranks(3)
        .profile(profile.clone())
        .build()
        .unwrap();
    let d = team.decide(Collective::Reduce, 3, 8, true).unwrap();
    assert_eq!(d.algorithm, "binomial");
    assert!(matches!(d.origin, Origin::Profile { ranks: 2, .. }));
    assert_eq!(
        team.decide(Collective::Reduce, 3, 101, true)
            .unwrap()
            .algorithm,
        "direct"
    );
    // 12 ranks: nearer 16 than 2 whatever the regime.
    assert_eq!(
        team.decide(Collective::Reduce, 12, 8, true)
            .unwrap()
            .algorithm,
        "pipelined-tree"
    );
    // The broadcast has no table in the profile: the built-in ones.
    assert!(matches!(
        team.decide(Collective::Broadcast, 3, 8, true)
            .unwrap()
            .origin,
        Origin::BuiltIn { .. }
    ));
    run_and_check(&team, Collective::Reduce, 5);
    run_and_check(&team, Collective::Reduce, 500);
    // Through JSON and back, and a bad table refused at load.
    let back = Profile::from_json(&profile.to_json()).unwrap();
    assert_eq!(back, profile);
    let bad = profile.to_json().replace("pipelined-tree", "ring");
    let e = Profile::from_json(&bad).unwrap_err();
    assert!(e.to_string().contains("not a reduce algorithm"), "{e}");
}

/// `Comm::auto_choice` tells what the last call's `Auto` chose, and nothing after a call that
/// named its algorithm or for an earlier call's choice.
#[test]
fn auto_choice_is_the_last_calls() {
    let team = Team::builder()
        .ranks(3)
        .algorithm_rules(Collective::Allreduce, "chain:0-64;binomial:65-max")
        .build()
        .unwrap();
    let got = team
        .run(|comm| {
            let mut v = vec![1u64; 8]; // 64 bytes
            comm.allreduce(&mut v, Sum).unwrap();
            let first = corecoll::unstable::auto_choice(comm);
            let mut w = vec![1u64; 9];
            comm.allreduce(&mut w, Sum).unwrap();
            let second = corecoll::unstable::auto_choice(comm);
            comm.allreduce_with(&mut w, Sum, corecoll::Algorithm::Linear)
                .unwrap();
            (first, second, corecoll::unstable::auto_choice(comm))
        })
        .unwrap();
    for g in got {
        assert_eq!(g, (Some("chain"), Some("binomial"), None));
    }
}
