//! The checks of results: every collective of the `Comm`, at every count of the suite, against
//! the sequential references of `cases`. Each check is one run; a rank reports its first
//! problem, and stops at its first failed call (which fails the rest of the run anyway), but
//! goes on through wrong answers so that every rank makes the same calls.

use crate::cases::{first_wrong, fold, hash, inputs, mix, reduction, Affine, Case};
use crate::{vector, Outcome, RunFails, Suite};
use corecoll::algorithm::{Broadcast, Gather, Reduce, Scatter};
use corecoll::{op, Algorithm, Comm, Error};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Whether every rank passes the same `h` (an allreduce of `h` and `!h` with `Max`: the
/// maximum and the complement of the minimum).
fn same_everywhere(comm: &Comm, h: u64) -> corecoll::Result<bool> {
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

/// The allreduce algorithms a caller may choose between processes. Every algorithm but the
/// shared-memory ones (`Direct`, and the hierarchies, which the hybrid world itself is).
fn algorithms() -> Vec<Algorithm> {
    Algorithm::ALL
        .into_iter()
        .filter(|a| !a.needs_shared_memory())
        .collect()
}

/// Every check of results.
pub fn check_all(s: &mut Suite<'_>) {
    let p = s.ctx.size();
    let big = *s.ctx.allreduce_counts().iter().max().expect("counts");
    let full_u64 = reduction::<u64>(p, big);
    let full_f64 = reduction::<f64>(p, big);
    let full_aff = reduction::<Affine>(p, big);
    for alg in algorithms() {
        allreduce(s, alg, &full_u64);
        allreduce(s, alg, &full_f64);
        // MPI's own collective takes built-in ops only (refused between processes).
        if !matches!(alg, Algorithm::Ring { .. }) && alg != Algorithm::Native {
            allreduce(s, alg, &full_aff);
        }
    }
    // Refusals (every rank's call an error).
    s.check_fails(
        "allreduce ring with a non-commutative op is refused",
        RunFails::Either,
        None,
        |_, _| true,
        |comm| {
            let mut v = inputs::<Affine>(comm.rank(), 5);
            Outcome::Called(comm.allreduce_with(
                &mut v,
                Affine::op(),
                Algorithm::Ring {
                    block: corecoll::Block::Auto,
                },
            ))
        },
    );
    if s.ctx.hybrid {
        s.check_fails(
            "allreduce direct (shared memory only) is refused between processes",
            RunFails::Either,
            None,
            |_, e| matches!(e, Error::Unsupported { .. } | Error::Aborted { .. }),
            |comm| {
                let mut v = inputs::<u64>(comm.rank(), 5);
                Outcome::Called(comm.allreduce_with(&mut v, op::Sum, Algorithm::Direct))
            },
        );
        let n = 5;
        s.check_fails(
            "gather direct (shared memory only) is refused between processes",
            RunFails::Either,
            None,
            |_, e| matches!(e, Error::Unsupported { .. } | Error::Aborted { .. }),
            |comm| {
                let send = inputs::<u64>(comm.rank(), n);
                let mut recv = vec![GAP; if comm.rank() == 0 { p * n } else { 0 }];
                Outcome::Called(comm.gather_with(&send, &mut recv, 0, Gather::Direct))
            },
        );
        s.check_fails(
            "scatter direct (shared memory only) is refused between processes",
            RunFails::Either,
            None,
            |_, e| matches!(e, Error::Unsupported { .. } | Error::Aborted { .. }),
            |comm| {
                let send = inputs::<u64>(comm.rank(), if comm.rank() == 0 { p * n } else { 0 });
                let mut recv = vec![GAP; n];
                Outcome::Called(comm.scatter_with(&send, &mut recv, 0, Scatter::Direct))
            },
        );
    } else {
        allreduce(s, Algorithm::Direct, &full_u64);
        allreduce(s, Algorithm::Direct, &full_f64);
        allreduce(s, Algorithm::Direct, &full_aff);
    }
    allreduce_into(s, &full_u64);
    allreduce_into(s, &full_aff);

    broadcast::<u64>(s, Broadcast::Auto);
    broadcast::<Affine>(s, Broadcast::Auto);
    broadcast::<Affine>(s, Broadcast::Native);
    reduce(s, &full_u64, Reduce::Auto);
    reduce(s, &full_f64, Reduce::Auto);
    reduce(s, &full_aff, Reduce::Auto);
    reduce(s, &full_u64, Reduce::Native);
    reduce(s, &full_f64, Reduce::Native);
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
    reduce_scatter_block(s, &full_u64);
    reduce_scatter_block(s, &full_f64);
    reduce_scatter_block(s, &full_aff);
    vector::gatherv(s);
    vector::scatterv(s);
    vector::allgatherv(s);
    barrier(s);
}

/// Allreduce of `T` with `alg` at every count: the reference on every rank, the same bits on
/// every rank.
fn allreduce<T: Case>(s: &mut Suite<'_>, alg: Algorithm, full: &[T]) {
    let counts = s.ctx.allreduce_counts();
    s.check(&format!("allreduce {} {}", alg.name(), T::NAME), |comm| {
        let mut problem = None;
        for &n in counts {
            let mut buf = inputs::<T>(comm.rank(), n);
            if let Err(e) = comm.allreduce_with(&mut buf, T::op(), alg) {
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
fn allreduce_into<T: Case>(s: &mut Suite<'_>, full: &[T]) {
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
fn broadcast<T: Case>(s: &mut Suite<'_>, alg: Broadcast) {
    let counts = s.ctx.counts();
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

/// Reduce of `T` to every root at every count with `alg`: the reference at the root, every
/// other rank's buffer unchanged.
fn reduce<T: Case>(s: &mut Suite<'_>, full: &[T], alg: Reduce) {
    let counts = s.ctx.counts();
    let p = s.ctx.size();
    let name = format!("reduce {} {} (every root)", T::NAME, alg.name());
    s.check(&name, |comm| {
        let r = comm.rank();
        let mut problem = None;
        for root in 0..p {
            for &n in counts {
                let mut buf = inputs::<T>(r, n);
                if let Err(e) = comm.reduce_with(&mut buf, T::op(), root, alg) {
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
fn scan<T: Case>(s: &mut Suite<'_>, exclusive: bool) {
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
                (true, _) => (0..n).map(|i| fold(0..r, i)).collect(),
                (false, _) => (0..n).map(|i| fold(0..r + 1, i)).collect(),
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
fn gather(s: &mut Suite<'_>) {
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
fn scatter(s: &mut Suite<'_>) {
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
fn allgather(s: &mut Suite<'_>) {
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
fn alltoall(s: &mut Suite<'_>) {
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
fn reduce_scatter_block<T: Case>(s: &mut Suite<'_>, full: &[T]) {
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
fn barrier(s: &mut Suite<'_>) {
    let p = s.ctx.size();
    let arrived = AtomicUsize::new(0);
    // The threads that share the counter: this process's (the whole team in `--local` mode).
    let threads = if s.ctx.hybrid {
        s.ctx.threads(s.process)
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
