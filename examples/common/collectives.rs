//! The checks of results shared by `examples/hybrid_check` and `examples/everywhere` (included
//! by each with `#[path]`): the collectives of the `Comm`, at the counts of the suite, against
//! the sequential references of `cases`. Each check is one run; a rank reports its first
//! problem, and stops at its first failed call (which fails the rest of the run anyway), but
//! goes on through wrong answers so that every rank makes the same calls.

use crate::cases::{first_wrong, fold, hash, inputs, mix, Affine, Case};
use crate::suite::Suite;
use crate::vector;
use corecoll::algorithm::{Broadcast, Reduce};
use corecoll::op::Op;
use corecoll::{op, Algorithm, Block, Comm};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Whether every rank passes the same `h` (an allreduce of `h` and `!h` with `Max`: the
/// maximum and the complement of the minimum).
pub fn same_everywhere(comm: &Comm, h: u64) -> corecoll::Result<bool> {
    let mut m = [h, !h];
    comm.allreduce(&mut m, op::Max)?;
    Ok(m[0] == !m[1])
}

/// Keeps the first problem.
pub fn note(problem: &mut Option<String>, why: Option<String>) {
    if problem.is_none() {
        *problem = why;
    }
}

/// A sentinel for receive-buffer gaps that must stay untouched.
pub const GAP: u64 = 0xdead_beef_dead_beef;

/// An allreduce algorithm's name, with its block where one is given.
pub fn label(alg: Algorithm) -> String {
    match alg {
        Algorithm::Chain {
            block: Block::Elements(b),
        }
        | Algorithm::PipelinedTree {
            block: Block::Elements(b),
        }
        | Algorithm::DualRoot {
            block: Block::Elements(b),
        }
        | Algorithm::TwoTree {
            block: Block::Elements(b),
        } => format!("{} (blocks of {b})", alg.name()),
        Algorithm::Hierarchical {
            segment: Block::Elements(s),
        } => format!("{} (segments of {s})", alg.name()),
        _ => alg.name().to_string(),
    }
}

/// Every collective but allreduce, broadcast and reduce, with `Auto`, on the types that make
/// sense for each: scan and exscan, gather, scatter, allgather, alltoall, reduce_scatter_block,
/// the `v` forms, and barrier. `full_*` are the reductions over every rank, at least as long as
/// the largest count times the number of ranks.
pub fn others(s: &Suite<'_>, full_u64: &[u64], full_f64: &[f64], full_aff: &[Affine]) {
    scan::<u64>(s, false);
    scan::<f64>(s, false);
    scan::<Affine>(s, false);
    scan::<u64>(s, true);
    scan::<f64>(s, true);
    scan::<Affine>(s, true);
    gather(s);
    scatter(s);
    allgather(s);
    alltoall(s);
    vector::alltoallv(s);
    reduce_scatter_block(s, full_u64);
    reduce_scatter_block(s, full_f64);
    reduce_scatter_block(s, full_aff);
    vector::gatherv(s);
    vector::scatterv(s);
    vector::allgatherv(s);
    barrier(s);
}

/// Allreduce of `T` with the type's own op and `alg` at the suite's allreduce counts.
pub fn allreduce<T: Case>(s: &Suite<'_>, alg: Algorithm, full: &[T]) {
    let name = format!("allreduce {} {}", label(alg), T::NAME);
    allreduce_op(s, &name, alg, T::op(), full, s.ctx.allreduce_counts());
}

/// Check `name`: allreduce of `T` with `op` and `alg` at every count of `counts`, the
/// reference `full` (at least as long as the largest count) on every rank, and the same bits
/// on every rank.
pub fn allreduce_op<T: Case, O: Op<T> + Copy>(
    s: &Suite<'_>,
    name: &str,
    alg: Algorithm,
    op: O,
    full: &[T],
    counts: &[usize],
) {
    s.check(name, |comm| {
        let mut problem = None;
        for &n in counts {
            let mut buf = inputs::<T>(comm.rank(), n);
            if let Err(e) = comm.allreduce_with(&mut buf, op, alg) {
                return Some(format!("n = {n}: {e}"));
            }
            note(
                &mut problem,
                first_wrong(&buf, &full[..n]).map(|w| format!("n = {n}: {w}")),
            );
            match same_everywhere(comm, hash(&buf)) {
                Err(e) => return Some(format!("n = {n}, comparing the results: {e}")),
                Ok(false) => note(
                    &mut problem,
                    Some(format!("n = {n}: the results differ between ranks")),
                ),
                Ok(true) => {}
            }
        }
        problem
    });
}

/// `allreduce_into` of `T` at every count: `send` unchanged, the reference in `recv`.
pub fn allreduce_into<T: Case>(s: &Suite<'_>, full: &[T]) {
    let counts = s.ctx.allreduce_counts();
    s.check(&format!("allreduce_into {}", T::NAME), |comm| {
        let mut problem = None;
        for &n in counts {
            let send = inputs::<T>(comm.rank(), n);
            let mut recv = inputs::<T>(comm.rank() + 1000, n);
            if let Err(e) = comm.allreduce_into(&send, &mut recv, T::op()) {
                return Some(format!("n = {n}: {e}"));
            }
            if send != inputs::<T>(comm.rank(), n) {
                note(&mut problem, Some(format!("n = {n}: send changed")));
            }
            note(
                &mut problem,
                first_wrong(&recv, &full[..n]).map(|w| format!("n = {n}: {w}")),
            );
        }
        problem
    });
}

/// Broadcast of `T` from every root at every count, with `alg`.
pub fn broadcast<T: Case>(s: &Suite<'_>, alg: Broadcast) {
    let counts = s.ctx.rooted_counts();
    let p = s.ctx.size();
    let name = format!("broadcast {} {} (every root)", T::TYPE, alg.name());
    s.check(&name, |comm| {
        let mut problem = None;
        for root in 0..p {
            for &n in counts {
                let mut buf = inputs::<T>(comm.rank(), n);
                if let Err(e) = comm.broadcast_with(&mut buf, root, alg) {
                    return Some(format!("root {root}, n = {n}: {e}"));
                }
                note(
                    &mut problem,
                    first_wrong(&buf, &inputs::<T>(root, n))
                        .map(|w| format!("root {root}, n = {n}: {w}")),
                );
            }
        }
        problem
    });
}

/// Reduce of `T` with the type's own op to every root at every count with `alg`.
pub fn reduce<T: Case>(s: &Suite<'_>, full: &[T], alg: Reduce) {
    let name = format!("reduce {} {} (every root)", T::NAME, alg.name());
    reduce_op(s, &name, alg, T::op(), full);
}

/// Check `name`: reduce of `T` with `op` to every root at every count with `alg`, the
/// reference `full` at the root, every other rank's buffer unchanged.
pub fn reduce_op<T: Case, O: Op<T> + Copy>(
    s: &Suite<'_>,
    name: &str,
    alg: Reduce,
    op: O,
    full: &[T],
) {
    let counts = s.ctx.rooted_counts();
    let p = s.ctx.size();
    s.check(name, |comm| {
        let r = comm.rank();
        let mut problem = None;
        for root in 0..p {
            for &n in counts {
                let mut buf = inputs::<T>(r, n);
                if let Err(e) = comm.reduce_with(&mut buf, op, root, alg) {
                    return Some(format!("root {root}, n = {n}: {e}"));
                }
                let why = if r == root {
                    first_wrong(&buf, &full[..n])
                } else {
                    (buf != inputs::<T>(r, n)).then(|| "a non-root's buffer changed".to_string())
                };
                note(
                    &mut problem,
                    why.map(|w| format!("root {root}, n = {n}: {w}")),
                );
            }
        }
        problem
    });
}

/// Inclusive (`scan`) or exclusive (`exscan`) prefix reduction of `T` at every count: rank r
/// holds x₀ ⊙ … ⊙ x_r (x_{r−1} for exscan; rank 0's buffer unchanged).
pub fn scan<T: Case>(s: &Suite<'_>, exclusive: bool) {
    let counts = s.ctx.counts();
    let name = if exclusive { "exscan" } else { "scan" };
    s.check(&format!("{name} {}", T::NAME), |comm| {
        let r = comm.rank();
        let mut problem = None;
        for &n in counts {
            let mut buf = inputs::<T>(r, n);
            let result = if exclusive {
                comm.exscan(&mut buf, T::op())
            } else {
                comm.scan(&mut buf, T::op())
            };
            if let Err(e) = result {
                return Some(format!("n = {n}: {e}"));
            }
            let want: Vec<T> = match (exclusive, r) {
                (true, 0) => inputs(0, n),
                (true, _) => fold(0..r, n),
                (false, _) => fold(0..r + 1, n),
            };
            note(
                &mut problem,
                first_wrong(&buf, &want).map(|w| format!("n = {n}: {w}")),
            );
        }
        problem
    });
}

/// Element k of the block rank `from` sends rank `to` (for the all-to-alls and scatters).
pub fn val(from: usize, to: usize, k: usize) -> u64 {
    mix(from, (to << 24) | k, 5)
}

/// Gather of `u64` to every root at every count; the non-roots pass an empty `recv`.
pub fn gather(s: &Suite<'_>) {
    let counts = s.ctx.counts();
    let p = s.ctx.size();
    s.check("gather u64 (every root)", |comm| {
        let r = comm.rank();
        let mut problem = None;
        for root in 0..p {
            for &n in counts {
                let send = inputs::<u64>(r, n);
                let mut recv = vec![GAP; if r == root { p * n } else { 0 }];
                if let Err(e) = comm.gather(&send, &mut recv, root) {
                    return Some(format!("root {root}, n = {n}: {e}"));
                }
                if r == root {
                    let want: Vec<u64> = (0..p).flat_map(|q| inputs::<u64>(q, n)).collect();
                    note(
                        &mut problem,
                        first_wrong(&recv, &want).map(|w| format!("root {root}, n = {n}: {w}")),
                    );
                }
            }
        }
        problem
    });
}

/// Scatter of `u64` from every root at every count; the non-roots pass an empty `send`.
pub fn scatter(s: &Suite<'_>) {
    let counts = s.ctx.counts();
    let p = s.ctx.size();
    s.check("scatter u64 (every root)", |comm| {
        let r = comm.rank();
        let mut problem = None;
        for root in 0..p {
            for &n in counts {
                let send: Vec<u64> = if r == root {
                    (0..p)
                        .flat_map(|q| (0..n).map(move |k| val(root, q, k)))
                        .collect()
                } else {
                    Vec::new()
                };
                let mut recv = vec![GAP; n];
                if let Err(e) = comm.scatter(&send, &mut recv, root) {
                    return Some(format!("root {root}, n = {n}: {e}"));
                }
                let want: Vec<u64> = (0..n).map(|k| val(root, r, k)).collect();
                note(
                    &mut problem,
                    first_wrong(&recv, &want).map(|w| format!("root {root}, n = {n}: {w}")),
                );
            }
        }
        problem
    });
}

/// Allgather of `u64` at every count.
pub fn allgather(s: &Suite<'_>) {
    let counts = s.ctx.counts();
    let p = s.ctx.size();
    s.check("allgather u64", |comm| {
        let mut problem = None;
        for &n in counts {
            let send = inputs::<u64>(comm.rank(), n);
            let mut recv = vec![GAP; p * n];
            if let Err(e) = comm.allgather(&send, &mut recv) {
                return Some(format!("n = {n}: {e}"));
            }
            let want: Vec<u64> = (0..p).flat_map(|q| inputs::<u64>(q, n)).collect();
            note(
                &mut problem,
                first_wrong(&recv, &want).map(|w| format!("n = {n}: {w}")),
            );
        }
        problem
    });
}

/// Alltoall of `u64` at every count.
pub fn alltoall(s: &Suite<'_>) {
    let counts = s.ctx.counts();
    let p = s.ctx.size();
    s.check("alltoall u64", |comm| {
        let r = comm.rank();
        let mut problem = None;
        for &n in counts {
            let send: Vec<u64> = (0..p)
                .flat_map(|j| (0..n).map(move |k| val(r, j, k)))
                .collect();
            let mut recv = vec![GAP; p * n];
            if let Err(e) = comm.alltoall(&send, &mut recv) {
                return Some(format!("n = {n}: {e}"));
            }
            let want: Vec<u64> = (0..p)
                .flat_map(|i| (0..n).map(move |k| val(i, r, k)))
                .collect();
            note(
                &mut problem,
                first_wrong(&recv, &want).map(|w| format!("n = {n}: {w}")),
            );
        }
        problem
    });
}

/// Reduce_scatter_block of `T` at every count: rank r holds block r of the reduction.
pub fn reduce_scatter_block<T: Case>(s: &Suite<'_>, full: &[T]) {
    let counts = s.ctx.counts();
    let p = s.ctx.size();
    s.check(&format!("reduce_scatter_block {}", T::NAME), |comm| {
        let r = comm.rank();
        let mut problem = None;
        for &n in counts {
            let send = inputs::<T>(r, p * n);
            let mut recv = inputs::<T>(r + 1000, n);
            if let Err(e) = comm.reduce_scatter_block(&send, &mut recv, T::op()) {
                return Some(format!("n = {n}: {e}"));
            }
            note(
                &mut problem,
                first_wrong(&recv, &full[r * n..(r + 1) * n]).map(|w| format!("n = {n}: {w}")),
            );
        }
        problem
    });
}

/// Barrier: within each process no rank leaves before all of its threads arrived (a counter
/// they share), and no rank leaves before the last rank of the world, which arrives 150 ms
/// late, does (timed from a first barrier).
pub fn barrier(s: &Suite<'_>) {
    let p = s.ctx.size();
    let arrived = AtomicUsize::new(0);
    // The threads that share the counter: this process's (the whole team in `--local` mode).
    let threads = if s.ctx.hybrid {
        s.ctx.threads(s.process())
    } else {
        p
    };
    let late = Duration::from_millis(150);
    s.check("barrier", |comm| {
        let r = comm.rank();
        let mut problem = None;
        for round in 1..=5 {
            arrived.fetch_add(1, Ordering::SeqCst);
            if let Err(e) = comm.barrier() {
                return Some(format!("round {round}: {e}"));
            }
            let seen = arrived.load(Ordering::SeqCst);
            if seen < round * threads {
                note(
                    &mut problem,
                    Some(format!(
                        "round {round}: left after {seen} arrivals of {}",
                        round * threads
                    )),
                );
            }
            // Nobody counts the next round before everybody has read this one.
            if let Err(e) = comm.barrier() {
                return Some(format!("round {round}: {e}"));
            }
        }
        let t0 = Instant::now();
        if r == p - 1 {
            std::thread::sleep(late);
        }
        if let Err(e) = comm.barrier() {
            return Some(format!("the late barrier: {e}"));
        }
        let waited = t0.elapsed();
        if r != p - 1 && waited < late / 3 {
            note(
                &mut problem,
                Some(format!(
                    "left the barrier after {waited:?}, before the late rank arrived"
                )),
            );
        }
        problem
    });
}
