//! Which rank of a group holds what for the ranks outside it: the combinatorics of the
//! single-copy hierarchical collectives (each group's ranks share the work for the others in
//! runs) and of the barrier on shared flags.

use super::blocks::block_start;

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
