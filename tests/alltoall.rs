//! The alltoall and alltoallv reference suite, against blocks built here.
//!
//! **The matrix** (`matrix_*`, split by rank count so that the harness runs them in
//! parallel): every algorithm (`Auto` too) × p ∈ 1..=17 ∪ {31, 32, 33} × block count
//! ∈ {0, 1, 3, 7}, for `u64` and a two-word struct ([`Pair`]), all calls of one p in a row on one
//! team. Every block is distinct per (call, sender, receiver), so a block put in the wrong
//! place, or a stale one, shows; the send buffer is checked unchanged. p = 33 oversubscribes
//! the machine's cores.
//!
//! **Long blocks** (`long_blocks`): blocks of 4099 elements at p ∈ {2, 3, 8, 17}, both types.
//!
//! **alltoallv** (`v_form_*`): at p ∈ 1..=17 ∪ {31, 32, 33}, the count patterns of [`count`]
//! (regular, zeros among irregular counts, triangular, all empty, long blocks above the eager
//! size) × the placements of [`layouts`] (packed in order; reversed with gaps that differ by
//! rank; overlapping send blocks and rotated receive blocks), for `u64` and [`Pair`]. Gaps
//! are checked untouched.
//!
//! **Bad input**: a send length that is not a multiple of p; a receive length other than the
//! send length; another block length, algorithm or element type on one rank; for alltoallv,
//! a count disagreeing between a sender and its receiver (eager and rendezvous sizes, more and
//! fewer), counts or displacements of the wrong length, blocks out of bounds or overlapping
//! in the receive buffer, a rank's count for itself differing between send and receive, and
//! `alltoall` against `alltoallv`. Each fails on every rank with the expected root cause,
//! without a hang (every team times out after 30 s).

mod common;

use common::{bad_layouts, check_fails, invalid, mismatch, mix, place, team, Layout, Pair, Value};
use corecoll::algorithm::Alltoall;
use corecoll::unstable::EAGER_MAX;
use corecoll::Comm;

/// Every algorithm.
const ALGORITHMS: [Alltoall; 4] = [
    Alltoall::Auto,
    Alltoall::Pairwise,
    Alltoall::Bruck,
    Alltoall::Direct,
];

/// Block counts of the matrix.
const COUNTS: [usize; 4] = [0, 1, 3, 7];

/// The long block count (odd, past the eager size for either type).
const LONG: usize = 4099;

/// The rank counts of the suites: 1..=17 ∪ {31, 32, 33}.
const PS: [usize; 20] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31, 32, 33,
];

/// Element `k` of the block rank `from` sends rank `to` in call `call`.
fn data<T: Value>(call: u64, from: usize, to: usize, k: usize) -> T {
    T::from_word(mix(from, to.wrapping_mul(1_000_003).wrapping_add(k), call))
}

/// A value no call sends (what receive buffers start as).
fn sentinel<T: Value>(len: usize) -> Vec<T> {
    (0..len)
        .map(|i| T::from_word(mix(usize::MAX, i, 7)))
        .collect()
}

/// Compares `got` with `want`, naming the first difference.
fn same<T: Value>(what: &str, got: &[T], want: &[T]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, want {}",
            got.len(),
            want.len()
        ));
    }
    match (0..got.len()).find(|&i| got[i] != want[i]) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: first difference at {i}: got {:?}, want {:?}",
            got[i], want[i]
        )),
    }
}

/// Runs every algorithm at every block count in `counts` on `comm`, checking the results
/// against the blocks computed here.
fn sweep<T: Value>(comm: &Comm, counts: &[usize]) -> Result<(), String> {
    let (p, me) = (comm.size(), comm.rank());
    let ty = std::any::type_name::<T>();
    let mut call = 0u64;
    for &n in counts {
        for alg in ALGORITHMS {
            call += 1;
            let what = format!("alltoall {alg:?}, p = {p}, n = {n}, {ty}, rank {me}");
            let send: Vec<T> = (0..p * n)
                .map(|x| data(call, me, x / n.max(1), x % n.max(1)))
                .collect();
            let mut recv = sentinel::<T>(p * n);
            comm.alltoall_with(&send, &mut recv, alg)
                .map_err(|e| format!("{what}: {e}"))?;
            let want: Vec<T> = (0..p * n)
                .map(|x| data(call, x / n.max(1), me, x % n.max(1)))
                .collect();
            same(&what, &recv, &want)?;
            let sent: Vec<T> = (0..p * n)
                .map(|x| data(call, me, x / n.max(1), x % n.max(1)))
                .collect();
            same(&format!("{what}, send"), &send, &sent)?;
        }
    }
    Ok(())
}

/// Runs `f` on a team of each of `ps` ranks, failing on any rank's error.
fn on_teams(ps: &[usize], f: impl Fn(&Comm) -> Result<(), String> + Sync) {
    for &p in ps {
        let out = team(p).run(&f).unwrap_or_else(|e| panic!("p = {p}: {e}"));
        for res in out {
            res.unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The matrix at each of `ps`.
fn matrix(ps: &[usize]) {
    on_teams(ps, |comm| {
        sweep::<u64>(comm, &COUNTS)?;
        sweep::<Pair>(comm, &COUNTS)
    });
}

#[test]
fn matrix_p_1_to_9() {
    matrix(&PS[..9]);
}

#[test]
fn matrix_p_10_to_14() {
    matrix(&PS[9..14]);
}

#[test]
fn matrix_p_15_to_17() {
    matrix(&PS[14..17]);
}

#[test]
fn matrix_p_31_to_33() {
    matrix(&PS[17..]);
}

#[test]
fn long_blocks() {
    on_teams(&[2, 3, 8, 17], |comm| {
        sweep::<u64>(comm, &[LONG])?;
        sweep::<Pair>(comm, &[LONG])
    });
}

/// The count patterns of alltoallv.
const PATTERNS: usize = 5;

/// Elements rank `from` sends rank `to` in count pattern `pattern`.
fn count(pattern: usize, from: usize, to: usize) -> usize {
    match pattern {
        // Regular.
        0 => 3,
        // Irregular, with zeros.
        1 => [0, 2, 0, 5][(from + 2 * to) % 4],
        // Triangular: from i to j ≥ i, j − i elements, plus (i + j) mod 3.
        2 => to.saturating_sub(from) + (from + to) % 3,
        // All empty.
        3 => 0,
        // Long (past the eager size) and irregular.
        _ => EAGER_MAX / 8 + 20 + (3 * from + to) % 5,
    }
}

/// Number of placements of [`layouts`].
const PLACEMENTS: usize = 3;

/// Rank `r`'s send and receive layouts at `p` for count pattern `pattern` and placement
/// `placement`: packed in rank order; in reverse order with gaps (differing by rank); send
/// blocks overlapping at displacements 0, 1, 2 and receive blocks in rotated order with gaps.
fn layouts(p: usize, r: usize, pattern: usize, placement: usize) -> (Layout, Layout) {
    let sc: Vec<usize> = (0..p).map(|j| count(pattern, r, j)).collect();
    let rc: Vec<usize> = (0..p).map(|i| count(pattern, i, r)).collect();
    match placement {
        0 => (place(sc, 0..p, 0), place(rc, 0..p, 0)),
        1 => (
            place(sc, (0..p).rev(), 1 + r % 2),
            place(rc, (0..p).rev(), 2 + r % 3),
        ),
        _ => {
            let displs: Vec<usize> = (0..p).map(|j| j % 3).collect();
            let len = sc.iter().max().map_or(0, |m| m + 2);
            let send = Layout {
                counts: sc,
                displs,
                len,
            };
            (send, place(rc, (0..p).map(|k| (r + k) % p), 1))
        }
    }
}

/// Rank `r`'s send buffer for alltoallv call `call`, of `len` elements.
fn v_send<T: Value>(call: u64, r: usize, len: usize) -> Vec<T> {
    (0..len).map(|x| data(call, r, usize::MAX, x)).collect()
}

/// Runs alltoallv over every count pattern and placement, checking the receive buffer (gaps
/// included) against the blocks computed here.
fn sweep_v<T: Value>(comm: &Comm) -> Result<(), String> {
    let (p, me) = (comm.size(), comm.rank());
    let ty = std::any::type_name::<T>();
    let mut call = 1_000_000u64;
    for pattern in 0..PATTERNS {
        for placement in 0..PLACEMENTS {
            call += 1;
            let (s, r) = layouts(p, me, pattern, placement);
            let what = format!(
                "alltoallv, {ty}, p = {p}, pattern {pattern}, placement {placement}, rank {me}: \
                 send {s:?}, recv {r:?}"
            );
            let send = v_send::<T>(call, me, s.len);
            let mut recv = sentinel::<T>(r.len);
            comm.alltoallv(&send, &s.counts, &s.displs, &mut recv, &r.counts, &r.displs)
                .map_err(|e| format!("{what}: {e}"))?;
            let mut want = sentinel::<T>(r.len);
            for i in 0..p {
                let (theirs, _) = layouts(p, i, pattern, placement);
                let from = theirs.displs[me];
                let block = &v_send::<T>(call, i, theirs.len)[from..from + theirs.counts[me]];
                want[r.displs[i]..r.displs[i] + r.counts[i]].copy_from_slice(block);
            }
            same(&what, &recv, &want)?;
        }
    }
    Ok(())
}

#[test]
fn v_form_p_1_to_12() {
    on_teams(&PS[..12], |comm| {
        sweep_v::<u64>(comm)?;
        sweep_v::<Pair>(comm)
    });
}

#[test]
fn v_form_p_13_to_17_and_31_to_33() {
    on_teams(&PS[12..], |comm| {
        sweep_v::<u64>(comm)?;
        sweep_v::<Pair>(comm)
    });
}

#[test]
fn wrong_buffer_lengths_fail_on_every_rank() {
    for p in [2, 3, 6] {
        let team = team(p);
        for alg in ALGORITHMS {
            for n in [0usize, 1, 7] {
                for odd in [0, p - 1] {
                    // A send length off by one (so not a multiple of p), with a receive
                    // buffer to match it.
                    for extra in [-1isize, 1] {
                        let Some(bad) = (p * n).checked_add_signed(extra) else {
                            continue;
                        };
                        check_fails(
                            &team,
                            &format!("alltoall {alg:?}, send of {bad} on rank {odd}, n = {n}"),
                            &|comm| {
                                let len = if comm.rank() == odd { bad } else { p * n };
                                let mut recv = vec![0u64; len];
                                let r = comm.alltoall_with(&vec![1u64; len], &mut recv, alg);
                                // The rank with the bad argument fails before touching anything.
                                assert!(comm.rank() != odd || recv.iter().all(|&x| x == 0));
                                r
                            },
                            invalid,
                        );
                    }
                    // A receive length other than the send length.
                    for bad in [p * n + 1, p * (n + 1), (p * n).saturating_sub(p)] {
                        if bad == p * n {
                            continue;
                        }
                        check_fails(
                            &team,
                            &format!("alltoall {alg:?}, recv of {bad} on rank {odd}, n = {n}"),
                            &|comm| {
                                let len = if comm.rank() == odd { bad } else { p * n };
                                let mut recv = vec![0u64; len];
                                let r = comm.alltoall_with(&vec![1u64; p * n], &mut recv, alg);
                                // The rank with the bad argument fails before touching anything.
                                assert!(comm.rank() != odd || recv.iter().all(|&x| x == 0));
                                r
                            },
                            invalid,
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn disagreements_fail_on_every_rank() {
    for p in [2, 3, 6] {
        let team = team(p);
        // Block lengths: one rank passes another, with buffers to match.
        for (n, m) in [(0usize, 1usize), (3, 2), (5, 0), (LONG, 8)] {
            for odd in [0, p - 1] {
                for alg in ALGORITHMS {
                    check_fails(
                        &team,
                        &format!("alltoall {alg:?}, block {m} on rank {odd}, {n} elsewhere"),
                        &|comm| {
                            let k = if comm.rank() == odd { m } else { n };
                            comm.alltoall_with(&vec![1u64; k * p], &mut vec![0; k * p], alg)
                        },
                        mismatch,
                    );
                }
            }
        }
        // Algorithms: rank 0 chooses another one than the rest.
        for a in ALGORITHMS.into_iter().skip(1) {
            for b in ALGORITHMS.into_iter().skip(1).filter(|&b| b != a) {
                check_fails(
                    &team,
                    &format!("alltoall, {a:?} on rank 0, {b:?} elsewhere"),
                    &|comm| {
                        let alg = if comm.rank() == 0 { a } else { b };
                        comm.alltoall_with(&[1u64; 8].repeat(p), &mut vec![0; 8 * p], alg)
                    },
                    mismatch,
                );
            }
        }
        // Element types: the same bytes as u64 on the last rank, as Pair elsewhere.
        for alg in ALGORITHMS {
            check_fails(
                &team,
                &format!("alltoall {alg:?}, another element type on rank {}", p - 1),
                &|comm| {
                    if comm.rank() == p - 1 {
                        comm.alltoall_with(&vec![1u64; 2 * p], &mut vec![0; 2 * p], alg)
                    } else {
                        let x = Pair { a: 1, b: 1 };
                        comm.alltoall_with(&vec![x; p], &mut vec![x; p], alg)
                    }
                },
                mismatch,
            );
        }
    }
}

#[test]
fn v_count_disagreements_fail_on_every_rank() {
    let big = EAGER_MAX / 8;
    for p in [2, 3, 6] {
        let team = team(p);
        // Rank `from` sends `sent` elements to rank `to`, which expects `expected`.
        let (from, to) = (0, 1);
        for (sent, expected) in [
            (3, 2),
            (2, 3),
            (0, 1),
            (1, 0),
            (big, big + 1),
            (big + 1, big),
            (25 * big + 1, 25 * big),
            (25 * big, 25 * big + 1),
        ] {
            check_fails(
                &team,
                &format!(
                    "alltoallv, rank {from} sends {sent} to rank {to}, which expects {expected}"
                ),
                &|comm| {
                    let me = comm.rank();
                    let mut sc = vec![4; p];
                    let mut rc = vec![4; p];
                    if me == from {
                        sc[to] = sent;
                    }
                    if me == to {
                        rc[from] = expected;
                    }
                    let (s, r) = (place(sc, 0..p, 1), place(rc, 0..p, 1));
                    let mut recv = vec![0u64; r.len];
                    comm.alltoallv(
                        &vec![1u64; s.len],
                        &s.counts,
                        &s.displs,
                        &mut recv,
                        &r.counts,
                        &r.displs,
                    )
                },
                mismatch,
            );
        }
    }
}

#[test]
fn bad_v_layouts_fail_on_every_rank() {
    for p in [1, 2, 3, 6] {
        let team = team(p);
        let good = place((0..p).map(|i| i + 1).collect(), 0..p, 1);
        // Layouts that are wrong, and what makes them wrong.
        let bad = bad_layouts(&good);
        // Every rank sends i + 1 elements to rank i (and so receives me + 1 from each).
        let sends = || place((0..p).map(|j| j + 1).collect(), 0..p, 1);
        let recvs = |me: usize| place(vec![me + 1; p], 0..p, 1);
        for (name, l) in &bad {
            for odd in [0, p - 1] {
                // The bad layout as the send layout of rank `odd` (overlap is allowed there).
                if !name.contains("overlapping") {
                    check_fails(
                        &team,
                        &format!("alltoallv, send layout with {name} on rank {odd}"),
                        &|comm| {
                            let me = comm.rank();
                            let s = if me == odd { l.clone() } else { sends() };
                            let r = recvs(me);
                            let mut recv = vec![0u64; r.len];
                            let res = comm.alltoallv(
                                &vec![1u64; s.len],
                                &s.counts,
                                &s.displs,
                                &mut recv,
                                &r.counts,
                                &r.displs,
                            );
                            // The rank with the bad argument fails before touching anything.
                            assert!(comm.rank() != odd || recv.iter().all(|&x| x == 0));
                            res
                        },
                        invalid,
                    );
                }
                // The bad layout as the receive layout of rank `odd`.
                check_fails(
                    &team,
                    &format!("alltoallv, recv layout with {name} on rank {odd}"),
                    &|comm| {
                        let me = comm.rank();
                        let s = sends();
                        let r = if me == odd { l.clone() } else { recvs(me) };
                        let mut recv = vec![0u64; r.len];
                        let res = comm.alltoallv(
                            &vec![1u64; s.len],
                            &s.counts,
                            &s.displs,
                            &mut recv,
                            &r.counts,
                            &r.displs,
                        );
                        // The rank with the bad argument fails before touching anything.
                        assert!(comm.rank() != odd || recv.iter().all(|&x| x == 0));
                        res
                    },
                    invalid,
                );
            }
        }
        // A rank whose count for itself differs between its send and receive layouts.
        for odd in [0, p - 1] {
            check_fails(
                &team,
                &format!("alltoallv, rank {odd} sends itself one more than it expects"),
                &|comm| {
                    let me = comm.rank();
                    let mut s = sends();
                    if me == odd {
                        s.counts[me] += 1;
                        s.len += 1;
                    }
                    let r = recvs(me);
                    comm.alltoallv(
                        &vec![1u64; s.len],
                        &s.counts,
                        &s.displs,
                        &mut vec![0u64; r.len],
                        &r.counts,
                        &r.displs,
                    )
                },
                invalid,
            );
        }
    }
}

#[test]
fn alltoall_against_alltoallv_fails_on_every_rank() {
    for p in [2, 3, 6] {
        let team = team(p);
        let ones = place(vec![1; p], 0..p, 0);
        for alg in ALGORITHMS {
            for odd in [0, p - 1] {
                check_fails(
                    &team,
                    &format!("alltoallv on rank {odd}, alltoall {alg:?} elsewhere"),
                    &|comm| {
                        let mut recv = vec![0u64; p];
                        if comm.rank() == odd {
                            comm.alltoallv(
                                &vec![1u64; p],
                                &ones.counts,
                                &ones.displs,
                                &mut recv,
                                &ones.counts,
                                &ones.displs,
                            )
                        } else {
                            comm.alltoall_with(&vec![1u64; p], &mut recv, alg)
                        }
                    },
                    mismatch,
                );
            }
        }
    }
}
