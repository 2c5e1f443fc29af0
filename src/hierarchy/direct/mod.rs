//! The single-copy hierarchical collectives (the `HierarchicalDirect` variants): the
//! shared-memory direct collectives of `algorithms` with their work split at the plan's top
//! level ([`Plan::covered`](super::Plan::covered)), so that what crosses between groups
//! (packages, else L3 groups) is read there once per group, not once per rank. They keep the
//! flat direct algorithms' one board session per call and add waits on the board's stage
//! words in between (`comm::board`), in the manner of XHC in Open MPI.
//!
//! Short vectors, where a board session's synchronisations cost more than the data, go by the
//! flat latency-bound schedules over the ranks in *group order* ([`Plan::order`]
//! (super::Plan::order), through `transport::Permuted`): the groups' ranks are neighbours
//! there, so a binomial tree or recursive doubling combines within groups in its first rounds
//! and crosses between them in its last (or, for a broadcast, first) ones only.

mod allgather;
mod allreduce;
mod barrier;
mod broadcast;
mod reduce;

pub(crate) use allgather::allgather;
#[cfg(loom)]
pub(crate) use allgather::single_copy as single_copy_allgather;
pub(crate) use allreduce::allreduce;
#[cfg(loom)]
pub(crate) use barrier::barrier_over;
pub(crate) use barrier::{barrier, Flags};
pub(crate) use broadcast::broadcast;
#[cfg(loom)]
pub(crate) use broadcast::single_copy as broadcast_single_copy;
pub(crate) use reduce::reduce;
#[cfg(loom)]
pub(crate) use reduce::reduce_groups;

use crate::algorithms::blocks::block_start;

/// The ranks outside `group` (of `p`), in order: the slices or blocks whose partials or copies
/// that group holds for the others.
pub(crate) fn foreign(group: &[usize], p: usize) -> Vec<usize> {
    (0..p).filter(|r| !group.contains(r)).collect()
}

/// The rank of `group` that holds that group's part for rank `r` (a rank outside the group):
/// the group's foreign ranks ([`foreign`]) are cut into `group.len()` runs, the k-th going to
/// the group's k-th rank.
pub(crate) fn holder(group: &[usize], p: usize, r: usize) -> usize {
    let g = group.len();
    // r's place among the foreign ranks: r less the group's ranks below it.
    let at = r - group.iter().filter(|&&x| x < r).count();
    let k = (0..g)
        .rfind(|&k| block_start(p - g, g, k) <= at)
        .expect("block_start(_, g, 0) = 0");
    group[k]
}

/// The run of `group`'s foreign ranks that its `k`-th rank holds ([`holder`]).
pub(crate) fn held(group: &[usize], p: usize, k: usize) -> Vec<usize> {
    let foreign = foreign(group, p);
    let g = group.len();
    crate::copy::to_vec(
        &foreign[block_start(foreign.len(), g, k)..block_start(foreign.len(), g, k + 1)],
    )
}

/// The group of `groups` that `me` is in, and `me`'s position in it.
pub(crate) fn group_of(groups: &[Vec<usize>], me: usize) -> (&[usize], usize) {
    groups
        .iter()
        .find_map(|g| g.iter().position(|&r| r == me).map(|k| (&g[..], k)))
        .expect("every rank is in a group")
}

/// What the single-copy hierarchies' unit tests share.
#[cfg(all(test, not(loom)))]
pub(crate) mod testing {
    use crate::topology::Topology;
    use crate::{Pinning, Team};
    use std::time::Duration;

    /// A described machine of `shape` with `p` ranks placed by `pinning`, whose waits time
    /// out.
    pub(crate) fn team_placed(shape: &[usize], p: usize, pinning: Pinning) -> Team {
        Team::builder()
            .ranks(p)
            .topology(Topology::synthetic(shape).unwrap())
            .pinning(pinning)
            .timeout(Duration::from_secs(45))
            .build()
            .unwrap()
    }

    /// [`team_placed`], compactly.
    pub(crate) fn team(shape: &[usize], p: usize) -> Team {
        team_placed(shape, p, Pinning::Compact)
    }

    /// Row-major 2×2 product with wrapping arithmetic: associative, not commutative.
    pub(crate) fn matmul(x: [u32; 4], y: [u32; 4]) -> [u32; 4] {
        let f = |a: u32, b: u32, c: u32, d: u32| a.wrapping_mul(b).wrapping_add(c.wrapping_mul(d));
        [
            f(x[0], y[0], x[1], y[2]),
            f(x[0], y[1], x[1], y[3]),
            f(x[2], y[0], x[3], y[2]),
            f(x[2], y[1], x[3], y[3]),
        ]
    }

    /// Rank r's element i for the matrix product.
    pub(crate) fn matrix(r: usize, i: usize) -> [u32; 4] {
        let (r, i) = (r as u32, i as u32);
        [r + 1, i % 5 + 1, r.wrapping_mul(7) ^ i, 1]
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{held, holder};

    /// Each group's foreign ranks go to its ranks in runs, every one to exactly one rank, and
    /// `held` lists the same runs.
    #[test]
    fn holders_split_the_foreign_ranks_in_runs() {
        for p in 2..20 {
            for g in 1..p {
                for offset in [0, p - g] {
                    let group: Vec<usize> = (offset..offset + g).collect();
                    let holders: Vec<usize> = (0..p)
                        .filter(|r| !group.contains(r))
                        .map(|r| holder(&group, p, r))
                        .collect();
                    assert_eq!(holders.len(), p - g);
                    assert!(holders.windows(2).all(|w| w[0] <= w[1]), "p = {p}, g = {g}");
                    assert_eq!(holders.first(), Some(&offset));
                    if p - g >= g {
                        assert_eq!(holders.last(), Some(&(offset + g - 1)), "p = {p}, g = {g}");
                    }
                    for (k, &x) in group.iter().enumerate() {
                        for r in held(&group, p, k) {
                            assert_eq!(holder(&group, p, r), x, "p = {p}, g = {g}, r = {r}");
                        }
                    }
                }
            }
        }
    }
}
