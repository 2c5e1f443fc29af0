//! The checks of the collectives with per-rank counts and displacements (alltoallv, gatherv,
//! scatterv, allgatherv), shared by `examples/hybrid_check` and `examples/everywhere`
//! (included by each with `#[path]`): irregular counts (zeros among them), blocks out of rank
//! order, and gaps between the receive blocks that must stay untouched.

use crate::cases::{first_wrong, inputs, Case};
use crate::collectives::{note, val, GAP};
use crate::suite::Suite;

/// The count rank `from` sends rank `to` in the alltoallv at scale `n`: irregular, zero for
/// some pairs.
fn pair_count(from: usize, to: usize, n: usize) -> usize {
    ((3 * from + 5 * to + 1) % 4) * n / 2
}

/// A layout of blocks of `counts` in the order `order`, each after a gap of `gap` elements:
/// the displacements (indexed by block) and the buffer length.
fn layout(counts: &[usize], order: impl Iterator<Item = usize>, gap: usize) -> (Vec<usize>, usize) {
    let mut displs = vec![0; counts.len()];
    let mut at = 0;
    for b in order {
        at += gap;
        displs[b] = at;
        at += counts[b];
    }
    (displs, at + gap)
}

/// Whether every element of `buf` outside the blocks (`counts`, `displs`) is still `GAP`.
fn gaps_untouched(buf: &[u64], counts: &[usize], displs: &[usize]) -> bool {
    let mut inside = vec![false; buf.len()];
    for (c, d) in counts.iter().zip(displs) {
        inside[*d..d + c].iter_mut().for_each(|x| *x = true);
    }
    buf.iter().zip(&inside).all(|(x, &i)| i || *x == GAP)
}

/// Alltoallv of `u64` with irregular counts (zeros among them), the send blocks in reverse
/// order and the receive blocks spaced by gaps that must stay untouched.
pub fn alltoallv(s: &Suite<'_>) {
    let counts = s.ctx.counts();
    let p = s.ctx.size();
    s.check("alltoallv u64 (irregular counts)", |comm| {
        let r = comm.rank();
        let mut problem = None;
        for &n in counts {
            let sc: Vec<usize> = (0..p).map(|j| pair_count(r, j, n)).collect();
            let (sd, slen) = layout(&sc, (0..p).rev(), 0);
            let mut send = vec![GAP; slen];
            for j in 0..p {
                for k in 0..sc[j] {
                    send[sd[j] + k] = val(r, j, k);
                }
            }
            let rc: Vec<usize> = (0..p).map(|i| pair_count(i, r, n)).collect();
            let (rd, rlen) = layout(&rc, 0..p, 2);
            let mut recv = vec![GAP; rlen];
            if let Err(e) = comm.alltoallv(&send, &sc, &sd, &mut recv, &rc, &rd) {
                return Some(format!("n = {n}: {e}"));
            }
            let bad = (0..p).find_map(|i| {
                (0..rc[i])
                    .find(|&k| recv[rd[i] + k] != val(i, r, k))
                    .map(|k| format!("n = {n}: block from {i}, element {k} is wrong"))
            });
            note(&mut problem, bad);
            if !gaps_untouched(&recv, &rc, &rd) {
                note(&mut problem, Some(format!("n = {n}: a gap was written")));
            }
        }
        problem
    });
}

/// Rank `i`'s block length in the v-collectives at scale `n`: irregular, zero for some ranks.
fn v_count(i: usize, n: usize) -> usize {
    ((2 * i + 1) % 3) * n / 2 + usize::from(n > 0 && i % 4 == 3)
}

/// Gatherv of `u64` to every root at every count: the blocks in reverse rank order with gaps
/// that must stay untouched; the non-roots pass empty `recv`, `counts` and `displs`.
pub fn gatherv(s: &Suite<'_>) {
    let counts = s.ctx.counts();
    let p = s.ctx.size();
    s.check("gatherv u64 (every root, irregular counts)", |comm| {
        let r = comm.rank();
        let mut problem = None;
        for root in 0..p {
            for &n in counts {
                let send = inputs::<u64>(r, v_count(r, n));
                let c: Vec<usize> = (0..p).map(|i| v_count(i, n)).collect();
                let (d, len) = layout(&c, (0..p).rev(), 1);
                let result = if r == root {
                    let mut recv = vec![GAP; len];
                    let result = comm.gatherv(&send, &mut recv, &c, &d, root);
                    if result.is_ok() {
                        let bad = (0..p).find_map(|i| {
                            first_wrong(&recv[d[i]..d[i] + c[i]], &inputs::<u64>(i, c[i]))
                                .map(|w| format!("root {root}, n = {n}, block {i}: {w}"))
                        });
                        note(&mut problem, bad);
                        if !gaps_untouched(&recv, &c, &d) {
                            note(
                                &mut problem,
                                Some(format!("root {root}, n = {n}: a gap was written")),
                            );
                        }
                    }
                    result
                } else {
                    comm.gatherv(&send, &mut [], &[], &[], root)
                };
                if let Err(e) = result {
                    return Some(format!("root {root}, n = {n}: {e}"));
                }
            }
        }
        problem
    });
}

/// Scatterv of `u64` from every root at every count, with overlapping send blocks (block i
/// starts at element i, as MPI allows); the non-roots pass empty `send`, `counts`, `displs`.
pub fn scatterv(s: &Suite<'_>) {
    let counts = s.ctx.counts();
    let p = s.ctx.size();
    s.check("scatterv u64 (every root, overlapping blocks)", |comm| {
        let r = comm.rank();
        let mut problem = None;
        for root in 0..p {
            for &n in counts {
                let c: Vec<usize> = (0..p).map(|i| v_count(i, n)).collect();
                let d: Vec<usize> = (0..p).collect();
                let len = (0..p).map(|i| d[i] + c[i]).max().unwrap_or(0);
                let mut recv = vec![GAP; c[r]];
                let result = if r == root {
                    let send = inputs::<u64>(root, len);
                    comm.scatterv(&send, &c, &d, &mut recv, root)
                } else {
                    comm.scatterv(&[], &[], &[], &mut recv, root)
                };
                if let Err(e) = result {
                    return Some(format!("root {root}, n = {n}: {e}"));
                }
                let want: Vec<u64> = (0..c[r]).map(|k| u64::input(root, r + k)).collect();
                note(
                    &mut problem,
                    first_wrong(&recv, &want).map(|w| format!("root {root}, n = {n}: {w}")),
                );
            }
        }
        problem
    });
}

/// Allgatherv of `u64` at every count, each rank with its own displacements (odd ranks in
/// reverse order, gaps of 1 or 2 that must stay untouched).
pub fn allgatherv(s: &Suite<'_>) {
    let counts = s.ctx.counts();
    let p = s.ctx.size();
    s.check(
        "allgatherv u64 (irregular counts, displacements by rank)",
        |comm| {
            let r = comm.rank();
            let mut problem = None;
            for &n in counts {
                let send = inputs::<u64>(r, v_count(r, n));
                let c: Vec<usize> = (0..p).map(|i| v_count(i, n)).collect();
                let (d, len) = if r % 2 == 1 {
                    layout(&c, (0..p).rev(), 2)
                } else {
                    layout(&c, 0..p, 1)
                };
                let mut recv = vec![GAP; len];
                if let Err(e) = comm.allgatherv(&send, &mut recv, &c, &d) {
                    return Some(format!("n = {n}: {e}"));
                }
                let bad = (0..p).find_map(|i| {
                    first_wrong(&recv[d[i]..d[i] + c[i]], &inputs::<u64>(i, c[i]))
                        .map(|w| format!("n = {n}, block {i}: {w}"))
                });
                note(&mut problem, bad);
                if !gaps_untouched(&recv, &c, &d) {
                    note(&mut problem, Some(format!("n = {n}: a gap was written")));
                }
            }
            problem
        },
    );
}
