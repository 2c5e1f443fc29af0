//! The single-copy hierarchical collectives (the `HierarchicalDirect` variants): the
//! shared-memory direct collectives of `algorithms` with their work split at the plan's top
//! level ([`Plan::covered`](super::Plan::covered)), so that what crosses between groups
//! (packages, else L3 groups) is read there once per group, not once per rank. They keep the
//! flat direct algorithms' one board session per call and add waits on the board's stage
//! words in between (`shm::board`), in the manner of XHC in Open MPI.
//!
//! Short vectors, where a board session's synchronisations cost more than the data, go by the
//! flat latency-bound schedules over the ranks in *group order* (`Plan::order`
//! (super::Plan::order), through `transport::Permuted`): the groups' ranks are neighbours
//! there, so a binomial tree or recursive doubling combines within groups in its first rounds
//! and crosses between them in its last (or, for a broadcast, first) ones only.

mod allgather;
mod allreduce;
mod broadcast;
#[cfg(all(test, loom))]
mod loom;
mod reduce;

pub(crate) use allgather::allgather;
pub(crate) use allreduce::allreduce;
pub(crate) use broadcast::broadcast;
pub(crate) use reduce::reduce;

pub(crate) use crate::algorithms::groups::{group_of, held, holder};

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

    /// Row-major 2 × 2 product with wrapping arithmetic: associative, not commutative.
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
