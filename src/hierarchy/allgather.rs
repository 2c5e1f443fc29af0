//! The hierarchical allgather: gather up the levels to the groups' leaders, allgather among
//! the top leaders, broadcast the whole result down; each stage is one of the crate's flat
//! collectives (`gatherv`, `allgatherv`, `broadcast`) on a cached sub-communicator
//! (docs/hierarchy.md).
//!
//! Groups need not be intervals of ranks (a spread placement interleaves them), so a leader's
//! buffer holds the blocks of the ranks it covers packed in the order they were gathered
//! ([`Plan::packing`]); the top leaders unpack the allgathered blocks by the plan into rank
//! order before the broadcast down.

use super::{Group, Hierarchy, Plan, Top};
use crate::error::Result;
use crate::mailbox::Elem;

impl Plan {
    /// Per level `0..=levels.len()`, per rank, the ranks whose blocks that rank holds when it
    /// takes part at that level, in the order they are packed: at level 0 each rank its own;
    /// a leader at level l + 1 the packings of its group's ranks at level l, in rank order
    /// (empty for a rank not taking part).
    pub(crate) fn packing(&self, p: usize) -> Vec<Vec<Vec<usize>>> {
        let mut cov: Vec<Vec<usize>> = (0..p).map(|r| vec![r]).collect();
        let mut out = vec![cov.clone()];
        for (l, groups) in self.levels.iter().enumerate() {
            let mut leader_of = std::collections::HashMap::new();
            for r in self.alive(l) {
                match leader_of.get(&groups[r]) {
                    None => {
                        leader_of.insert(groups[r], r);
                    }
                    Some(&leader) => {
                        let c = std::mem::take(&mut cov[r]);
                        cov[leader].extend(c);
                    }
                }
            }
            out.push(cov.clone());
        }
        out
    }
}

/// Counts and displacements (in elements) of consecutive blocks of `n` elements per rank of
/// each entry of `ranks`, packed as `packing` says.
fn layout(ranks: &[usize], packing: &[Vec<usize>], n: usize) -> (Vec<usize>, Vec<usize>) {
    let counts: Vec<usize> = ranks.iter().map(|&r| packing[r].len() * n).collect();
    let displs = counts
        .iter()
        .scan(0, |at, &c| {
            let d = *at;
            *at += c;
            Some(d)
        })
        .collect();
    (counts, displs)
}

impl<G: Group> Hierarchy<G> {
    /// The hierarchical allgather of `send` into `recv` (block i from rank i) on `comm` (whose
    /// hierarchy this is), after the call check and the length check of `recv`.
    pub(crate) fn allgather<T>(&self, comm: &G, send: &[T], recv: &mut [T]) -> Result<()>
    where
        T: Elem,
    {
        let plan = &self.plan;
        let (p, n) = (comm.size(), send.len());
        let packing = plan.packing(p);
        // The blocks this rank holds, packed (`packing[level][rank]`).
        let mut mine: Vec<T> = crate::copy::to_vec(send);
        for (l, level) in self.levels.iter().enumerate() {
            let members = plan.members(l, level.number);
            let (counts, displs) = layout(&members, &packing[l], n);
            if level.group.rank() == 0 {
                let total = counts.iter().sum();
                let mut gathered = if total == 0 {
                    Vec::new()
                } else {
                    vec![send[0]; total]
                };
                level
                    .group
                    .gatherv(&mine, &mut gathered, &counts, &displs, 0)?;
                mine = gathered;
            } else {
                level.group.gatherv(&mine, &mut [], &[], &[], 0)?;
            }
        }
        match &self.top {
            Top::Whole => comm.allgather(send, recv)?,
            Top::Leaders(leaders) => {
                let top = plan.alive(plan.levels.len());
                let packing = &packing[plan.levels.len()];
                let (counts, displs) = layout(&top, packing, n);
                // p·n elements, all overwritten by the allgather.
                let mut all = if n == 0 {
                    Vec::new()
                } else {
                    vec![send[0]; p * n]
                };
                leaders.allgatherv(&mine, &mut all, &counts, &displs)?;
                let order = top.iter().flat_map(|&r| packing[r].iter().copied());
                for (k, r) in order.enumerate() {
                    crate::copy::copy_slice(
                        &mut recv[r * n..(r + 1) * n],
                        &all[k * n..(k + 1) * n],
                    );
                }
            }
            Top::None => {}
        }
        for level in self.levels.iter().rev() {
            level.group.stage_broadcast(recv, 0)?;
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::topology::{Pinning, Topology};

    /// Spread on 2 packages × 3 cores, 6 ranks: packages {0, 2, 4} and {1, 3, 5}; the
    /// leaders 0 and 1 hold their packages' blocks in rank order, the top in leader order.
    #[test]
    fn packing_of_interleaved_groups() {
        let t = Topology::synthetic(&[2, 3]).unwrap();
        let plan = Plan::of(&t.place(&Pinning::Spread, 6).unwrap(), false);
        let packing = plan.packing(6);
        assert_eq!(packing.len(), 2);
        assert_eq!(packing[1][0], vec![0, 2, 4]);
        assert_eq!(packing[1][1], vec![1, 3, 5]);
        assert_eq!(plan.representatives(4), vec![4, 0]);
        assert_eq!(plan.position(0, 4), 2);
        assert_eq!(plan.position(1, 1), 1);
        let (counts, displs) = layout(&[0, 1], &packing[1], 2);
        assert_eq!((counts, displs), (vec![6, 6], vec![0, 6]));
    }

    /// Two levels, compact, 16 ranks on 2 × 2 × 4: the package leaders cover their packages.
    #[test]
    fn packing_of_two_levels() {
        let t = Topology::synthetic(&[2, 2, 4]).unwrap();
        let plan = Plan::of(&t.place(&Pinning::Compact, 16).unwrap(), false);
        let packing = plan.packing(16);
        assert_eq!(packing[1][4], (4..8).collect::<Vec<_>>());
        assert_eq!(packing[2][8], (8..16).collect::<Vec<_>>());
        assert_eq!(plan.representatives(13), vec![13, 12, 8]);
        assert_eq!(plan.position(2, 8), 1);
    }
}
