//! The gather, scatter and allgather reference suite, against blocks built here.
//!
//! **The matrix** (`matrix_*`, split by rank count so that the harness runs them in
//! parallel): every collective × every algorithm × p ∈ 1..=17 (every root) ∪ {31, 32, 33}
//! (roots 0, 1, p/2 and p − 1) × block count ∈ {0, 1, 2, 7, 1000}, for `u64`, all calls of one
//! p in a row on one team. Every rank's block is its own, so a block put in the wrong place
//! shows; the root's buffers of scatter and gather are checked too (scatter's send unchanged).
//! Non-root ranks pass an empty buffer where MPI ignores it.
//!
//! **Long blocks** (`long_blocks`): blocks of 65 537 elements at p ∈ {2, 3} and of
//! ⌈65 537 / p⌉ at p ∈ {5, 16, 17, 33}, for `u64` and a two-word struct ([`Pair`]).
//!
//! **Bad input**: a root out of range; a buffer of the wrong length on one rank (the root's
//! for gather and scatter, any rank's for allgather); different roots, block lengths and
//! algorithms on different ranks. Each fails on every rank with the expected root cause,
//! without a hang (every team times out after 30 s). For the shared-memory `Direct` gather
//! and scatter besides: `Direct` on some ranks against each message-passing choice, another
//! element type on one rank (the root's buffers stay untouched), and a rank that panics
//! instead of calling (every other rank returns an error caused by the panic, and the next
//! direct calls on the same team succeed).
//!
//! **The `v` forms** (`v_forms_*`): gatherv, scatterv and allgatherv at p ∈ 1..=17 ∪
//! {31, 32, 33} (roots as in the matrix) over the layouts of [`layouts`]: regular blocks,
//! zeros among the counts, a triangular pattern, all empty, long blocks, blocks in reverse
//! order with gaps between them (untouched gaps are checked), and for scatterv overlapping send
//! blocks. allgatherv's displacements differ by rank. Bad input: counts or displacements of the
//! wrong length, blocks out of bounds or overlapping, a rank whose length differs from its
//! count, a root out of range, different roots, `gather` against `gatherv`.
//!
//! Budget: well under 40 s of wall time for the whole file in a debug build on a busy 2-core
//! machine.

mod common;

use common::{
    bad_layouts, check_fails, invalid, mismatch, out_of_range, place, team, Layout, Pair, Value,
};
use corecoll::algorithm::{Allgather, Gather, Scatter};
use corecoll::{Comm, Error};
use std::sync::Mutex;

/// Gather algorithms.
const GATHERS: [Gather; 4] = [
    Gather::Auto,
    Gather::Linear,
    Gather::Binomial,
    Gather::Direct,
];

/// Scatter algorithms.
const SCATTERS: [Scatter; 4] = [
    Scatter::Auto,
    Scatter::Linear,
    Scatter::Binomial,
    Scatter::Direct,
];

/// Allgather algorithms.
const ALLGATHERS: [Allgather; 5] = [
    Allgather::Auto,
    Allgather::Ring,
    Allgather::RecursiveDoubling,
    Allgather::Bruck,
    Allgather::Direct,
];

/// Block counts of the matrix.
const COUNTS: [usize; 5] = [0, 1, 2, 7, 1000];

/// The long count (an odd number just past 2¹⁶).
const LONG: usize = 65_537;

/// Element `i` of rank `r`'s block in call `call` (so that a stale block from an earlier
/// call shows too).
fn data<T: Value>(call: u64, r: usize, i: usize) -> T {
    let x = (r as u64 + 1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add((i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9))
        .wrapping_add(call.wrapping_mul(0x94d0_49bb_1331_11eb));
    T::from_word(x ^ (x >> 29))
}

/// Rank `r`'s block of `n` elements in call `call`.
fn block<T: Value>(call: u64, r: usize, n: usize) -> Vec<T> {
    (0..n).map(|i| data(call, r, i)).collect()
}

/// Every rank's block, in rank order.
fn all_blocks<T: Value>(call: u64, p: usize, n: usize) -> Vec<T> {
    (0..p).flat_map(|r| block(call, r, n)).collect()
}

/// The roots the matrix uses at `p`.
fn roots(p: usize) -> Vec<usize> {
    if p <= 17 {
        (0..p).collect()
    } else {
        let mut r = vec![0, 1, p / 2, p - 1];
        r.dedup();
        r
    }
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

/// Runs every collective and algorithm at every root in `roots` and count in `counts` on
/// `comm`, checking the results.
fn sweep<T: Value>(comm: &Comm, roots: &[usize], counts: &[usize]) -> Result<(), String> {
    let (p, me) = (comm.size(), comm.rank());
    let ty = std::any::type_name::<T>();
    let mut call = 0u64;
    for &n in counts {
        for &root in roots {
            for alg in GATHERS {
                call += 1;
                let what =
                    format!("gather {alg:?}, p = {p}, root {root}, n = {n}, {ty}, rank {me}");
                let send: Vec<T> = block(call, me, n);
                let mut recv: Vec<T> = if me == root {
                    block(0, p + 1, p * n)
                } else {
                    vec![]
                };
                comm.gather_with(&send, &mut recv, root, alg)
                    .map_err(|e| format!("{what}: {e}"))?;
                if me == root {
                    same(&what, &recv, &all_blocks(call, p, n))?;
                }
            }
            for alg in SCATTERS {
                call += 1;
                let what =
                    format!("scatter {alg:?}, p = {p}, root {root}, n = {n}, {ty}, rank {me}");
                let send: Vec<T> = if me == root {
                    all_blocks(call, p, n)
                } else {
                    vec![]
                };
                let mut recv: Vec<T> = block(0, p + 1, n);
                comm.scatter_with(&send, &mut recv, root, alg)
                    .map_err(|e| format!("{what}: {e}"))?;
                same(&what, &recv, &block(call, me, n))?;
                if me == root {
                    same(&format!("{what}, send"), &send, &all_blocks(call, p, n))?;
                }
            }
        }
        for alg in ALLGATHERS {
            call += 1;
            let what = format!("allgather {alg:?}, p = {p}, n = {n}, {ty}, rank {me}");
            let send: Vec<T> = block(call, me, n);
            let mut recv: Vec<T> = block(0, p + 1, p * n);
            comm.allgather_with(&send, &mut recv, alg)
                .map_err(|e| format!("{what}: {e}"))?;
            same(&what, &recv, &all_blocks(call, p, n))?;
        }
    }
    Ok(())
}

/// The matrix at each of `ps`, one team per p.
fn matrix(ps: &[usize]) {
    for &p in ps {
        let out = team(p)
            .run(|comm| sweep::<u64>(comm, &roots(p), &COUNTS))
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

#[test]
fn long_blocks() {
    for p in [2, 3, 5, 16, 17, 33] {
        let n = if p <= 3 { LONG } else { LONG.div_ceil(p) };
        let out = team(p)
            .run(|comm| {
                sweep::<u64>(comm, &[0, p - 1], &[n])?;
                sweep::<Pair>(comm, &[p / 2], &[n])
            })
            .unwrap_or_else(|e| panic!("p = {p}: {e}"));
        for res in out {
            res.unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The layouts of the `v` forms at `p`; `shift` varies the gaps (allgatherv's displacements
/// differ by rank). Blocks never overlap, except in the last layout when `overlap`.
fn layouts(p: usize, shift: usize, overlap: bool) -> Vec<Layout> {
    let fwd: Vec<usize> = (0..p).collect();
    let rev: Vec<usize> = (0..p).rev().collect();
    let mut l = vec![
        place(vec![3; p], &fwd, 0),
        place(
            (0..p).map(|i| [0, 2, 0, 5][i % 4]).collect(),
            &rev,
            2 + shift,
        ),
        place((0..p).collect(), &fwd, shift),
        place((0..p).map(|i| p - i).collect(), &rev, 1),
        place(vec![0; p], &fwd, shift),
        place((0..p).map(|i| 1000 + i).collect(), &rev, 3 + shift),
    ];
    if overlap {
        // Every block starts at 0: scatterv may send overlapping blocks.
        let counts: Vec<usize> = (0..p).map(|i| i % 4).collect();
        l.push(Layout {
            len: 3,
            counts,
            displs: vec![0; p],
        });
    }
    l
}

/// Runs gatherv, scatterv and allgatherv over every layout and root in `roots`, checking the
/// results (gaps included).
fn sweep_v(comm: &Comm, roots: &[usize]) -> Result<(), String> {
    let (p, me) = (comm.size(), comm.rank());
    let mut call = 1_000_000u64;
    let sentinel = |len: usize| -> Vec<u64> { block(0, p + 1, len) };
    for (k, l) in layouts(p, 0, false).into_iter().enumerate() {
        for &root in roots {
            call += 1;
            let what = format!("gatherv, p = {p}, root {root}, layout {k}: {l:?}, rank {me}");
            let send: Vec<u64> = block(call, me, l.counts[me]);
            let mut recv = if me == root { sentinel(l.len) } else { vec![] };
            let (c, d) = if me == root {
                (&l.counts[..], &l.displs[..])
            } else {
                (&[][..], &[][..])
            };
            comm.gatherv(&send, &mut recv, c, d, root)
                .map_err(|e| format!("{what}: {e}"))?;
            if me == root {
                let mut want = sentinel(l.len);
                for i in 0..p {
                    let at = l.displs[i];
                    want[at..at + l.counts[i]].copy_from_slice(&block(call, i, l.counts[i]));
                }
                same(&what, &recv, &want)?;
            }
        }
    }
    for (k, l) in layouts(p, 0, true).into_iter().enumerate() {
        for &root in roots {
            call += 1;
            let what = format!("scatterv, p = {p}, root {root}, layout {k}: {l:?}, rank {me}");
            let whole: Vec<u64> = block(call, p + 3, l.len);
            let send = if me == root { whole.clone() } else { vec![] };
            let mut recv = sentinel(l.counts[me]);
            let (c, d) = if me == root {
                (&l.counts[..], &l.displs[..])
            } else {
                (&[][..], &[][..])
            };
            comm.scatterv(&send, c, d, &mut recv, root)
                .map_err(|e| format!("{what}: {e}"))?;
            let at = l.displs[me];
            same(&what, &recv, &whole[at..at + l.counts[me]])?;
        }
    }
    for (k, l) in layouts(p, me % 3, false).into_iter().enumerate() {
        call += 1;
        let what = format!("allgatherv, p = {p}, layout {k}: {l:?}, rank {me}");
        let send: Vec<u64> = block(call, me, l.counts[me]);
        let mut recv = sentinel(l.len);
        comm.allgatherv(&send, &mut recv, &l.counts, &l.displs)
            .map_err(|e| format!("{what}: {e}"))?;
        let mut want = sentinel(l.len);
        for i in 0..p {
            let at = l.displs[i];
            want[at..at + l.counts[i]].copy_from_slice(&block(call, i, l.counts[i]));
        }
        same(&what, &recv, &want)?;
    }
    Ok(())
}

/// The `v` forms at each of `ps`, one team per p.
fn v_forms(ps: &[usize]) {
    for &p in ps {
        let out = team(p)
            .run(|comm| sweep_v(comm, &roots(p)))
            .unwrap_or_else(|e| panic!("p = {p}: {e}"));
        for res in out {
            res.unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn v_forms_p_1_to_12() {
    v_forms(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
}

#[test]
fn v_forms_p_13_to_17_and_31_to_33() {
    v_forms(&[13, 14, 15, 16, 17, 31, 32, 33]);
}

#[path = "gather/bad_input.rs"]
mod bad_input;
