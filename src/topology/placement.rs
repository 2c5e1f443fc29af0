//! Placements: which leaf of a [`Topology`] each rank of a team runs on, for each
//! [`Pinning`].
//!
//! `Spread` deals the ranks round-robin over the packages and, within each package,
//! round-robin over its L3 groups; the ranks an L3 group receives then spread evenly over its
//! cores. On a machine of one L3 group this is the even spread of rank r onto core ⌊r·n/p⌋.

use super::{Location, Topology};
use crate::error::{Error, Result};

/// How the ranks of a team are placed on the leaves (cores) of its [`Topology`].
///
/// In every placement with pinning, more ranks than its cores wrap around: rank r goes where
/// rank r mod n goes, n being the number of cores the placement uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Pinning {
    /// Rank r on leaf r in topology order (package by package, L3 group by L3 group):
    /// neighbouring ranks share caches.
    #[default]
    Compact,
    /// Ranks dealt round-robin over the packages (rank 0 on package 0, rank 1 on package 1,
    /// …, skipping a package whose cores are all taken), and within a package round-robin
    /// over its L3 groups; the ranks an L3 group receives spread evenly over its cores (the
    /// j-th of k on core ⌊j·m/k⌋ of its m). With one rank per core this uses every core once;
    /// on a machine of one L3 group it is the even spread, rank r on core ⌊r·n/p⌋.
    Spread,
    /// The cores of one package (its logical index, `0..Topology::num_packages()`), in
    /// topology order, rank r on the package's core r.
    Socket(usize),
    /// No pinning: the operating system places the threads, and ranks have no location.
    None,
    /// Rank r on OS index `list[r % list.len()]`; every index must be a PU of the topology (of
    /// the detected one: a core the building thread may use, SMT siblings included). A rank
    /// gets the location of the first leaf with that index (with a synthetic topology,
    /// several leaves wrap onto one real core), or of the core whose sibling it is.
    Cores(Vec<usize>),
}

/// See [`Topology::place`].
pub(super) fn place(
    topo: &Topology,
    pinning: &Pinning,
    ranks: usize,
) -> Result<Vec<Option<Location>>> {
    let leaves = topo.leaves();
    let n = leaves.len();
    Ok(match pinning {
        Pinning::None => vec![None; ranks],
        Pinning::Compact => (0..ranks).map(|r| Some(leaves[r % n])).collect(),
        Pinning::Spread => {
            let order = spread(topo, ranks.min(n));
            let k = order.len();
            (0..ranks).map(|r| Some(leaves[order[r % k]])).collect()
        }
        Pinning::Socket(s) => {
            let mine: Vec<Location> = topo.package_leaves(*s).copied().collect();
            if mine.is_empty() {
                return Err(Error::Pinning(format!(
                    "no package {s} in this topology (it has {} packages)",
                    topo.num_packages()
                )));
            }
            (0..ranks).map(|r| Some(mine[r % mine.len()])).collect()
        }
        Pinning::Cores(list) => {
            if list.is_empty() {
                return Err(Error::Pinning(
                    "Pinning::Cores was given an empty list".into(),
                ));
            }
            let find = |os: usize| topo.location_of_pu(os);
            if let Some(bad) = list.iter().find(|&&c| find(c).is_none()) {
                let mut avail: Vec<usize> = topo.pus.iter().flatten().copied().collect();
                avail.sort_unstable();
                avail.dedup();
                return Err(Error::Pinning(format!(
                    "core {bad} is not in the team's topology, whose cores are those the thread \
                     building the team may run on unless a topology was given (here: {avail:?})"
                )));
            }
            (0..ranks).map(|r| find(list[r % list.len()])).collect()
        }
    })
}

/// See [`Topology::location_of_pu`].
pub(super) fn location_of_pu(topo: &Topology, os: usize) -> Option<Location> {
    // The leaf of that OS index, or else the core that has it as an SMT sibling.
    let leaves = topo.leaves();
    leaves
        .iter()
        .find(|l| l.os_index == os)
        .copied()
        .or_else(|| {
            let core = (0..topo.num_cores()).find(|&c| topo.core_pus(c).contains(&os))?;
            let leaf = leaves.iter().find(|l| l.core == core)?;
            Some(Location {
                os_index: os,
                ..*leaf
            })
        })
}

/// The leaf (index into `topo.leaves()`) of each of `k ≤ leaves` ranks under `Spread`.
fn spread(topo: &Topology, k: usize) -> Vec<usize> {
    // The tree: per package, per L3 group of it, its leaf indices in topology order.
    let mut tree: Vec<Vec<Vec<usize>>> = vec![Vec::new(); topo.num_packages()];
    let mut group_of: Vec<(usize, usize)> = vec![(0, 0); topo.num_l3_groups()];
    let mut seen = vec![false; topo.num_l3_groups()];
    for (i, leaf) in topo.leaves().iter().enumerate() {
        if !seen[leaf.l3] {
            seen[leaf.l3] = true;
            group_of[leaf.l3] = (leaf.package, tree[leaf.package].len());
            tree[leaf.package].push(Vec::new());
        }
        let (p, g) = group_of[leaf.l3];
        tree[p][g].push(i);
    }
    tree.retain(|groups| !groups.is_empty());

    // Deal: (package, group, ordinal within the group) of each rank.
    let mut taken: Vec<Vec<usize>> = tree.iter().map(|gs| vec![0; gs.len()]).collect();
    let mut free: Vec<usize> = tree
        .iter()
        .map(|gs| gs.iter().map(Vec::len).sum())
        .collect();
    let mut next_group = vec![0; tree.len()];
    let mut package = 0;
    let mut dealt = Vec::with_capacity(k);
    for _ in 0..k {
        while free[package] == 0 {
            package = (package + 1) % tree.len();
        }
        let groups = &tree[package];
        let mut g = next_group[package];
        while taken[package][g] == groups[g].len() {
            g = (g + 1) % groups.len();
        }
        dealt.push((package, g, taken[package][g]));
        taken[package][g] += 1;
        free[package] -= 1;
        next_group[package] = (g + 1) % groups.len();
        package = (package + 1) % tree.len();
    }
    // Within a group of m cores that received c ranks, ordinal j goes to core ⌊j·m/c⌋.
    dealt
        .into_iter()
        .map(|(p, g, j)| {
            let cores = &tree[p][g];
            cores[j * cores.len() / taken[p][g]]
        })
        .collect()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn packages(t: &Topology, pinning: &Pinning, p: usize) -> Vec<usize> {
        t.place(pinning, p)
            .unwrap()
            .into_iter()
            .map(|l| l.unwrap().package)
            .collect()
    }

    #[test]
    fn spread_deals_packages_then_groups_then_spreads_in_a_group() {
        let t = Topology::synthetic(&[2, 2, 4]).unwrap();
        let places = t.place(&Pinning::Spread, 4).unwrap();
        let got: Vec<(usize, usize, usize)> = places
            .iter()
            .map(|l| l.map(|l| (l.package, l.l3, l.core)).unwrap())
            .collect();
        // Package 0 group 0, package 1 group 2, package 0 group 1, package 1 group 3.
        assert_eq!(got, [(0, 0, 0), (1, 2, 8), (0, 1, 4), (1, 3, 12)]);
        // Eight ranks: two per group, on cores 0 and 2 of each.
        let cores: Vec<usize> = t
            .place(&Pinning::Spread, 8)
            .unwrap()
            .iter()
            .map(|l| l.unwrap().core)
            .collect();
        assert_eq!(cores, [0, 8, 4, 12, 2, 10, 6, 14]);
    }

    #[test]
    fn spread_on_one_group_is_the_even_spread() {
        let t = Topology::synthetic(&[8]).unwrap();
        let cores: Vec<usize> = t
            .place(&Pinning::Spread, 3)
            .unwrap()
            .iter()
            .map(|l| l.unwrap().core)
            .collect();
        assert_eq!(cores, [0, 8 / 3, 2 * 8 / 3]);
    }

    #[test]
    fn spread_skips_full_packages() {
        // Package 0: one core; package 1: three.
        let t = Topology::synthetic_groups(vec![vec![1], vec![3]]).unwrap();
        assert_eq!(packages(&t, &Pinning::Spread, 4), [0, 1, 1, 1]);
        assert_eq!(packages(&t, &Pinning::Spread, 5), [0, 1, 1, 1, 0]);
    }
}
