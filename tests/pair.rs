//! Two ranks: the short collectives send their data in the same hop as the call check
//! (`src/comm/pair.rs`), and the exchange-shaped ones skip the check. These tests aim at what
//! that changes: a disagreement must still fail both ranks, whether the data that went out
//! early was eager (already in the mailbox) or rendezvous-sized (its sender blocked until the
//! other rank reads it, or fails), and whichever rank is the root.

mod common;

use common::{check_fails, mismatch, team};
use corecoll::algorithm::{
    Allgather, Alltoall, Broadcast, Gather, Reduce, ReduceScatter, Scan, Scatter,
};
use corecoll::{op, Comm, Error, Team};

/// Element counts: eager (8 B … 1 KiB) and rendezvous-sized.
const LENS: [usize; 3] = [1, 100, 5000];

/// Runs `f` on both ranks of `team` and checks that both fail with a mismatch at the root
/// (no panic, no timeout).
#[track_caller]
fn both_fail(team: &Team, what: &str, f: impl Fn(&Comm) -> corecoll::Result<()> + Sync) {
    check_fails(team, what, &f, mismatch);
}

/// A length that differs on one rank (`odd`), for every collective with an early send.
#[test]
fn different_lengths_fail_both_ranks() {
    let team = team(2);
    for n in LENS {
        for odd in 0..2 {
            for root in 0..2 {
                let len = |comm: &Comm| if comm.rank() == odd { n + 1 } else { n };
                let what = format!("n = {n}, rank {odd} longer, root {root}");
                both_fail(&team, &format!("broadcast, {what}"), |comm| {
                    let mut v = vec![1u64; len(comm)];
                    comm.broadcast_with(&mut v, root, Broadcast::Binomial)
                });
                both_fail(&team, &format!("reduce, {what}"), |comm| {
                    let mut v = vec![1u64; len(comm)];
                    comm.reduce_with(&mut v, op::Sum, root, Reduce::Binomial)
                });
                both_fail(&team, &format!("gather, {what}"), |comm| {
                    let send = vec![1u64; len(comm)];
                    let mut recv = vec![0u64; 2 * send.len()];
                    comm.gather_with(&send, &mut recv, root, Gather::Linear)
                });
                both_fail(&team, &format!("scatter, {what}"), |comm| {
                    let mut recv = vec![0u64; len(comm)];
                    let send = vec![1u64; 2 * recv.len()];
                    comm.scatter_with(&send, &mut recv, root, Scatter::Binomial)
                });
            }
            let what = format!("n = {n}, rank {odd} longer");
            both_fail(&team, &format!("scan, {what}"), |comm| {
                let mut v = vec![1u64; len_of(comm, odd, n)];
                comm.scan_with(&mut v, op::Sum, Scan::RecursiveDoubling)
            });
            both_fail(&team, &format!("exscan, {what}"), |comm| {
                let mut v = vec![1u64; len_of(comm, odd, n)];
                comm.exscan_with(&mut v, op::Sum, Scan::RecursiveDoubling)
            });
            for alg in [
                Allgather::Ring,
                Allgather::RecursiveDoubling,
                Allgather::Bruck,
            ] {
                both_fail(&team, &format!("allgather {alg:?}, {what}"), |comm| {
                    let send = vec![1u64; len_of(comm, odd, n)];
                    let mut recv = vec![0u64; 2 * send.len()];
                    comm.allgather_with(&send, &mut recv, alg)
                });
            }
            for alg in [Alltoall::Pairwise, Alltoall::Bruck] {
                both_fail(&team, &format!("alltoall {alg:?}, {what}"), |comm| {
                    let send = vec![1u64; 2 * len_of(comm, odd, n)];
                    let mut recv = vec![0u64; send.len()];
                    comm.alltoall_with(&send, &mut recv, alg)
                });
            }
            for alg in [ReduceScatter::Ring, ReduceScatter::RecursiveHalving] {
                both_fail(&team, &format!("reduce_scatter {alg:?}, {what}"), |comm| {
                    let mut recv = vec![0u64; len_of(comm, odd, n)];
                    let send = vec![1u64; 2 * recv.len()];
                    comm.reduce_scatter_block_with(&send, &mut recv, op::Sum, alg)
                });
            }
        }
    }
}

/// `n + 1` on rank `odd`, `n` elsewhere.
fn len_of(comm: &Comm, odd: usize, n: usize) -> usize {
    if comm.rank() == odd {
        n + 1
    } else {
        n
    }
}

/// Different roots, and a two-rank path against the general one (another algorithm), fail
/// both ranks.
#[test]
fn different_roots_and_algorithms_fail_both_ranks() {
    let team = team(2);
    for n in LENS {
        both_fail(&team, &format!("broadcast roots, n = {n}"), |comm| {
            let mut v = vec![1u64; n];
            comm.broadcast_with(&mut v, comm.rank(), Broadcast::Binomial)
        });
        both_fail(&team, &format!("reduce roots, n = {n}"), |comm| {
            let mut v = vec![1u64; n];
            comm.reduce_with(&mut v, op::Sum, 1 - comm.rank(), Reduce::Binomial)
        });
        both_fail(&team, &format!("broadcast algorithms, n = {n}"), |comm| {
            let mut v = vec![1u64; n];
            let alg = [Broadcast::Binomial, Broadcast::Direct][comm.rank()];
            comm.broadcast_with(&mut v, 0, alg)
        });
        both_fail(&team, &format!("reduce algorithms, n = {n}"), |comm| {
            let mut v = vec![1u64; n];
            let alg = [
                Reduce::PipelinedTree {
                    block: corecoll::Block::Auto,
                },
                Reduce::Binomial,
            ][comm.rank()];
            comm.reduce_with(&mut v, op::Sum, 1, alg)
        });
        both_fail(&team, &format!("scan against exscan, n = {n}"), |comm| {
            let mut v = vec![1u64; n];
            if comm.rank() == 0 {
                comm.scan_with(&mut v, op::Sum, Scan::RecursiveDoubling)
            } else {
                comm.exscan_with(&mut v, op::Sum, Scan::RecursiveDoubling)
            }
        });
        both_fail(
            &team,
            &format!("allgather direct against ring, n = {n}"),
            |comm| {
                let send = vec![1u64; n];
                let mut recv = vec![0u64; 2 * n];
                let alg = [Allgather::Direct, Allgather::Ring][comm.rank()];
                comm.allgather_with(&send, &mut recv, alg)
            },
        );
        both_fail(
            &team,
            &format!("alltoall bruck against pairwise, n = {n}"),
            |comm| {
                let send = vec![1u64; 2 * n];
                let mut recv = vec![0u64; 2 * n];
                let alg = [Alltoall::Bruck, Alltoall::Pairwise][comm.rank()];
                comm.alltoall_with(&send, &mut recv, alg)
            },
        );
        both_fail(
            &team,
            &format!("reduce_scatter ring against direct, n = {n}"),
            |comm| {
                let send = vec![1u64; 2 * n];
                let mut recv = vec![0u64; n];
                let alg = [ReduceScatter::Ring, ReduceScatter::Direct][comm.rank()];
                comm.reduce_scatter_block_with(&send, &mut recv, op::Sum, alg)
            },
        );
        both_fail(
            &team,
            &format!("gather against scatter's types, n = {n}"),
            |comm| {
                if comm.rank() == 0 {
                    let send = vec![1u64; n];
                    let mut recv = vec![0u64; 2 * n];
                    comm.gather_with(&send, &mut recv, 0, Gather::Linear)
                } else {
                    let send = vec![1u32; n];
                    let mut recv = vec![0u32; 2 * n];
                    comm.gather_with(&send, &mut recv, 0, Gather::Linear)
                }
            },
        );
    }
}

/// The two-rank paths give the general schedules' results, for both roots, eager and
/// rendezvous sizes, with a non-commutative op (rank order).
#[test]
fn two_rank_results() {
    let team = team(2);
    let m = common::matrix_op();
    for n in LENS {
        for root in 0..2 {
            let out = team
                .run(|comm| {
                    let r = comm.rank();
                    let x: Vec<[u32; 4]> = (0..n).map(|i| common::matrix(r, i)).collect();
                    let mut b = x.clone();
                    comm.broadcast_with(&mut b, root, Broadcast::Binomial)?;
                    let mut red = x.clone();
                    comm.reduce_with(&mut red, m, root, Reduce::Binomial)?;
                    let mut sc = x.clone();
                    comm.scan_with(&mut sc, m, Scan::RecursiveDoubling)?;
                    let mut ex = x.clone();
                    comm.exscan_with(&mut ex, m, Scan::RecursiveDoubling)?;
                    let mut g = vec![[0u32; 4]; 2 * n];
                    comm.gather_with(&x, &mut g, root, Gather::Binomial)?;
                    let mut s = vec![[0u32; 4]; n / 2];
                    comm.scatter_with(&x[..2 * (n / 2)], &mut s, root, Scatter::Linear)?;
                    Ok::<_, Error>((x, b, red, sc, ex, g, s))
                })
                .unwrap();
            let out: Vec<_> = out.into_iter().map(Result::unwrap).collect();
            let (x0, x1) = (out[0].0.clone(), out[1].0.clone());
            let x = |r: usize| if r == 0 { x0.clone() } else { x1.clone() };
            let prod: Vec<[u32; 4]> = (0..n).map(|i| common::matmul(x(0)[i], x(1)[i])).collect();
            for (r, (xr, b, red, sc, ex, g, s)) in out.iter().enumerate() {
                assert_eq!(b, &x(root), "broadcast, root {root}, rank {r}");
                let want_red = if r == root { &prod } else { xr };
                assert_eq!(red, want_red, "reduce, root {root}, rank {r}");
                assert_eq!(sc, if r == 0 { xr } else { &prod }, "scan, rank {r}");
                assert_eq!(ex, if r == 0 { xr } else { &x0 }, "exscan, rank {r}");
                if r == root {
                    let want: Vec<_> = x(0).into_iter().chain(x(1)).collect();
                    assert_eq!(g, &want, "gather, root {root}");
                }
                let half = n / 2;
                assert_eq!(
                    s[..],
                    x(root)[r * half..(r + 1) * half],
                    "scatter, root {root}, rank {r}"
                );
            }
        }
    }
}
