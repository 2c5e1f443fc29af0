//! The broadcast reference suite: every algorithm against the root's own data.
//!
//! **Algorithms** ([`ALGORITHMS`]): `Auto`, `Binomial`, `PipelinedTree` with blocks of 1 and
//! 7 elements and `Auto`'s, `ScatterAllgather` and `Direct`.
//!
//! **The matrix** (`matrix_*`, split by rank count so that the harness runs them in
//! parallel): every algorithm × p ∈ 1..=17 (every root) ∪ {31, 32, 33} (roots 0, 1, p/2 and
//! p − 1) × count ∈ {0, 1, 2, p − 1, p + 1, 1000} (deduplicated), for `u64` and for a
//! two-word struct ([`Pair`]), all calls of one p in a row on one team. Every rank starts with
//! data of its own, so a rank that is skipped keeps the wrong values; every rank must end with
//! the root's data, and the root's buffer must be unchanged.
//!
//! **Long vectors** (`long_vectors`): 65 537 elements at p ∈ {2, 3, 5, 7, 16, 17, 33}
//! ([`LONG_PS`]), roots 0, p/2 and p − 1 for `u64` and p − 1 for [`Pair`], every algorithm
//! but one-element blocks, which run it at p ≤ 3 only (65 538 messages per edge on
//! oversubscribed ranks would take seconds per call).
//!
//! **Bad input**: a root out of range on every rank; different roots, lengths and algorithms
//! on different ranks, including a disagreement between two ranks that are not the root; each
//! fails on every rank, the root included, with the expected root cause, without a hang (every
//! team times out after 30 s). p = 1 and count 0 run in the matrix.
//!
//! Budget: well under a minute of wall time for the whole file in a debug build on a busy
//! 2-core machine; time it before adding to it.

mod common;

use common::{team, Pair, Value};
use corecoll::algorithm::Broadcast;
use corecoll::{Block, Comm, Error, Team};

/// Every algorithm the suite runs.
const ALGORITHMS: [Broadcast; 7] = [
    Broadcast::Auto,
    Broadcast::Binomial,
    Broadcast::PipelinedTree { block: Block::Auto },
    Broadcast::PipelinedTree {
        block: Block::Elements(1),
    },
    Broadcast::PipelinedTree {
        block: Block::Elements(7),
    },
    Broadcast::ScatterAllgather,
    Broadcast::Direct,
];

/// The long count (an odd number just past 2¹⁶).
const LONG: usize = 65_537;

/// Rank counts at which [`LONG`] runs.
const LONG_PS: [usize; 7] = [2, 3, 5, 7, 16, 17, 33];

/// The most ranks on which one-element blocks run [`LONG`].
const MAX_P_LONG_BLOCK_1: usize = 3;

/// Rank `r`'s element `i` before the broadcast: different on every rank and element.
fn data<T: Value>(r: usize, i: usize) -> T {
    let x = (r as u64 + 1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add((i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9));
    T::from_word(x ^ (x >> 29))
}

/// Rank `r`'s vector of `n` elements before the broadcast.
fn vector<T: Value>(r: usize, n: usize) -> Vec<T> {
    (0..n).map(|i| data(r, i)).collect()
}

/// The matrix counts for `p` ranks, deduplicated.
fn counts(p: usize) -> Vec<usize> {
    let mut c = vec![0, 1, 2, p - 1, p + 1, 1000];
    c.sort_unstable();
    c.dedup();
    c
}

/// The roots run at `p` ranks: all of them up to 17, a few above.
fn roots(p: usize) -> Vec<usize> {
    if p <= 17 {
        (0..p).collect()
    } else {
        let mut r = vec![0, 1, p / 2, p - 1];
        r.dedup();
        r
    }
}

/// Broadcasts from every root in `roots` and every count in `counts` with every algorithm
/// in `algs`, one call after another on `comm`, checking on every rank that it ends with the
/// root's data (the root: that its buffer is unchanged). Returns the first failure.
fn sweep<T: Value>(
    comm: &Comm,
    algs: &[Broadcast],
    roots: &[usize],
    counts: &[usize],
) -> Result<(), String> {
    let (p, me) = (comm.size(), comm.rank());
    for &alg in algs {
        for &root in roots {
            for &n in counts {
                let what = format!(
                    "{alg:?}, p = {p}, root {root}, n = {n}, {}, rank {me}",
                    std::any::type_name::<T>()
                );
                let mut v: Vec<T> = vector(me, n);
                comm.broadcast_with(&mut v, root, alg)
                    .map_err(|e| format!("{what}: {e}"))?;
                let want: Vec<T> = vector(root, n);
                if v != want {
                    let i = (0..n).find(|&i| v[i] != want[i]).unwrap();
                    return Err(format!(
                        "{what}: first difference at {i}: got {:?}, want {:?}",
                        v[i], want[i]
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Runs [`sweep`] for `u64` and [`Pair`] on a team of each p in `ps` (one team at a time).
fn matrix(ps: &[usize]) {
    for &p in ps {
        let team = team(p);
        let out = team
            .run(|comm| {
                sweep::<u64>(comm, &ALGORITHMS, &roots(p), &counts(p))?;
                sweep::<Pair>(comm, &ALGORITHMS, &roots(p), &counts(p))
            })
            .unwrap_or_else(|e| panic!("p = {p}: {e}"));
        for res in out {
            res.unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn matrix_p_1_to_9() {
    matrix(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
}

#[test]
fn matrix_p_10_to_14() {
    matrix(&[10, 11, 12, 13, 14]);
}

#[test]
fn matrix_p_15_to_17() {
    matrix(&[15, 16, 17]);
}

#[test]
fn matrix_p_31_to_33() {
    matrix(&[31, 32, 33]);
}

/// [`LONG`] elements at [`LONG_PS`]: roots 0, p/2 and p − 1 for `u64`, p − 1 for [`Pair`].
#[test]
fn long_vectors() {
    for p in LONG_PS {
        let algs: Vec<Broadcast> = ALGORITHMS
            .into_iter()
            .filter(|&a| {
                p <= MAX_P_LONG_BLOCK_1
                    || a != Broadcast::PipelinedTree {
                        block: Block::Elements(1),
                    }
            })
            .collect();
        let team = team(p);
        let out = team
            .run(|comm| {
                sweep::<u64>(comm, &algs, &[0, p / 2, p - 1], &[LONG])?;
                sweep::<Pair>(comm, &algs, &[p - 1], &[LONG])
            })
            .unwrap_or_else(|e| panic!("p = {p}: {e}"));
        for res in out {
            res.unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// Runs `call` on every rank of `team` (with the rank's own vector of `len(rank)` elements)
/// and checks that every rank fails, with a root cause that `expected` accepts.
fn check_fails(
    team: &Team,
    what: &str,
    len: &(dyn Fn(usize) -> usize + Sync),
    call: &(dyn Fn(&Comm, &mut [u64]) -> corecoll::Result<()> + Sync),
    expected: fn(&Error) -> bool,
) {
    let p = team.size();
    let out = team
        .run(|comm| {
            let mut v: Vec<u64> = vector(comm.rank(), len(comm.rank()));
            call(comm, &mut v)
        })
        .unwrap_or_else(|e| panic!("{what}, p = {p}: {e}"));
    for (r, res) in out.into_iter().enumerate() {
        let e = res.expect_err(&format!("{what}, p = {p}, rank {r}: no error"));
        assert!(
            expected(e.root_cause()),
            "{what}, p = {p}, rank {r}: unexpected {e}"
        );
    }
}

/// A root that is not a rank fails on every rank, with every algorithm, without a hang.
#[test]
fn root_out_of_range_fails_on_every_rank() {
    for p in [1, 2, 5] {
        let team = team(p);
        for alg in ALGORITHMS {
            for root in [p, p + 7] {
                check_fails(
                    &team,
                    &format!("{alg:?} from root {root}"),
                    &|_| 10,
                    &|comm, v| comm.broadcast_with(v, root, alg),
                    |e| matches!(e, Error::RankOutOfRange { .. }),
                );
            }
        }
    }
}

/// Ranks that name different roots, pass different lengths or choose different algorithms
/// fail on every rank with a mismatch (see also
/// [`disagreement_away_from_the_root_fails_on_every_rank`]).
#[test]
fn disagreements_fail_on_every_rank() {
    let mismatch = |e: &Error| matches!(e, Error::Mismatch { .. });
    for p in [2, 3, 6] {
        let team = team(p);
        for alg in ALGORITHMS {
            let name = format!("{alg:?}");
            // Roots: the last rank names another root than the others.
            check_fails(
                &team,
                &format!("{name}, different roots"),
                &|_| 10,
                &|comm, v| {
                    let root = usize::from(comm.rank() == comm.size() - 1);
                    comm.broadcast_with(v, root, alg)
                },
                mismatch,
            );
            // Roots: every rank names itself.
            check_fails(
                &team,
                &format!("{name}, every rank its own root"),
                &|_| 3,
                &|comm, v| comm.broadcast_with(v, comm.rank(), alg),
                mismatch,
            );
            // Lengths: one rank (the root or not) passes a different length, short or long.
            for (n, m) in [(0, 1), (1000, 999), (5, 0), (LONG, 8)] {
                for odd in [0, p - 1] {
                    check_fails(
                        &team,
                        &format!("{name}, length {m} on rank {odd}, {n} elsewhere"),
                        &|r| if r == odd { m } else { n },
                        &|comm, v| comm.broadcast_with(v, 0, alg),
                        mismatch,
                    );
                }
            }
            // Algorithms: rank 0 chooses another one (than `Auto`'s choice too).
            let other = if matches!(alg, Broadcast::Binomial | Broadcast::Auto) {
                Broadcast::ScatterAllgather
            } else {
                Broadcast::Binomial
            };
            check_fails(
                &team,
                &format!("{name} against {other:?}"),
                &|_| 100,
                &|comm, v| comm.broadcast_with(v, 0, if comm.rank() == 0 { other } else { alg }),
                mismatch,
            );
        }
        // Blocks: the same algorithm with another block on one rank (the root).
        check_fails(
            &team,
            "pipelined tree, blocks 7 and 1",
            &|_| 100,
            &|comm, v| {
                let b = if comm.rank() == 0 { 1 } else { 7 };
                let alg = Broadcast::PipelinedTree {
                    block: Block::Elements(b),
                };
                comm.broadcast_with(v, 0, alg)
            },
            mismatch,
        );
    }
}

/// Broadcasts in a row on one communicator and on a split sub-communicator (whose ranks are
/// not the team's) from every root.
#[test]
fn split_communicators() {
    let team = team(7);
    let out = team
        .run(|comm| {
            let sub = comm
                .split(Some(comm.rank() % 2), 7 - comm.rank())
                .map_err(|e| e.to_string())?
                .expect("every rank has a colour");
            let q = sub.size();
            sweep::<u64>(&sub, &ALGORITHMS, &(0..q).collect::<Vec<_>>(), &[0, 3, 100])?;
            sweep::<u64>(comm, &ALGORITHMS, &[3], &[50])
        })
        .unwrap();
    for res in out {
        res.unwrap_or_else(|e| panic!("{e}"));
    }
}

/// How often each rank returned `Ok` when rank 1 of 3 passes another length than ranks 0
/// (the root) and 2, over `runs` calls with `alg`; panics on a hang, on a wrong result on a
/// rank that returned `Ok`, or if rank 1 does not fail with a mismatch.
fn away_from_the_root(team: &Team, alg: Broadcast, runs: usize) -> Vec<usize> {
    let p = team.size();
    let mut oks = vec![0; p];
    for _ in 0..runs {
        let out = team
            .run(|comm| {
                let n = if comm.rank() == 1 { 9 } else { 8 };
                let mut v: Vec<u64> = vector(comm.rank(), n);
                comm.broadcast_with(&mut v, 0, alg).map(|()| v)
            })
            .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            match res {
                Ok(v) => {
                    assert_eq!(v, vector::<u64>(0, 8), "{alg:?}, rank {r}");
                    oks[r] += 1;
                }
                Err(e) => assert!(
                    matches!(e.root_cause(), Error::Mismatch { .. }),
                    "{alg:?}, rank {r}: {e}"
                ),
            }
        }
        assert_eq!(oks[1], 0, "{alg:?}: the odd rank returned Ok");
    }
    oks
}

/// A rank away from the root with another length: every rank fails, the root included,
/// although the root needs nothing from the others — the agreement of rooted collectives
/// (`algorithms::check::agree`) disseminates the check to every rank before any schedule starts.
#[test]
fn disagreement_away_from_the_root_fails_on_every_rank() {
    let team = team(3);
    for alg in ALGORITHMS {
        let oks = away_from_the_root(&team, alg, 50);
        assert!(oks.iter().all(|&k| k == 0), "{alg:?}: Ok per rank {oks:?}");
    }
}
