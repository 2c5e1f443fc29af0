//! Where the ranks run: the machine as the library's [`Topology::detect`] sees it (sockets are
//! its packages, cores its leaves: one per core the process may use, SMT siblings left out)
//! and the `Pinning` of a `--placement`.

use crate::domain::Placement;
use corecoll::{Pinning, Topology};

/// The cores (OS indices) this process may run on, one per core, ascending.
pub fn available_cores() -> Vec<usize> {
    let mut ids: Vec<usize> = Topology::detect()
        .leaves()
        .iter()
        .map(|l| l.os_index)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The available cores grouped by socket: each package's logical index (`socket:N`'s N) and
/// its cores' OS indices in topology order; one group of every core when the machine's
/// grouping is unknown.
pub fn sockets() -> Vec<(usize, Vec<usize>)> {
    sockets_of(&Topology::detect())
}

/// [`sockets`] of topology `t`.
pub fn sockets_of(t: &Topology) -> Vec<(usize, Vec<usize>)> {
    (0..t.num_packages())
        .map(|p| (p, t.package_leaves(p).map(|l| l.os_index).collect()))
        .filter(|(_, cores): &(usize, Vec<usize>)| !cores.is_empty())
        .collect()
}

/// The pinning of `placement` and the rank count it suggests (its number of cores).
pub fn pinning(placement: &Placement) -> Result<(Pinning, usize), String> {
    pinning_on(&Topology::detect(), placement)
}

/// [`pinning`] on topology `t`.
pub fn pinning_on(t: &Topology, placement: &Placement) -> Result<(Pinning, usize), String> {
    let all = t.leaves().len();
    Ok(match placement {
        Placement::Compact => (Pinning::Compact, all),
        Placement::Unpinned => (Pinning::None, all),
        // Round-robin over the sockets (and their L3 groups): the library's spread.
        Placement::Spread => (Pinning::Spread, all),
        Placement::Socket(n) => {
            let k = t.package_leaves(*n).count();
            if k == 0 {
                let ids: Vec<String> = sockets_of(t).iter().map(|(id, _)| id.to_string()).collect();
                return Err(format!("no socket {n} here (sockets: {})", ids.join(", ")));
            }
            (Pinning::Socket(*n), k)
        }
        Placement::Cores(list) => {
            let avail: Vec<usize> = t.leaves().iter().map(|l| l.os_index).collect();
            if let Some(c) = list.iter().find(|c| !avail.contains(c)) {
                return Err(format!(
                    "core {c} is not available to this process (available: {avail:?})"
                ));
            }
            (Pinning::Cores(list.clone()), list.len())
        }
    })
}

/// The part of described machine `t` made of its cores `list` (logical core numbers, in
/// topology order: how `cores:LIST` reads with `--machine`): the same packages and L3 groups,
/// each with only the listed cores, those without any left out. A core listed twice counts
/// once.
pub fn sub_machine(t: &Topology, list: &[usize]) -> Result<Topology, String> {
    let n = t.leaves().len();
    if let Some(c) = list.iter().find(|&&c| c >= n) {
        return Err(format!(
            "core {c} is not a core of the described machine (cores 0-{})",
            n.saturating_sub(1)
        ));
    }
    let mut packages: Vec<Vec<usize>> = Vec::new();
    for p in 0..t.num_packages() {
        let mut groups: Vec<usize> = Vec::new();
        let mut last_l3 = None;
        for leaf in t.package_leaves(p) {
            if !list.contains(&leaf.core) {
                continue;
            }
            if last_l3 == Some(leaf.l3) {
                *groups.last_mut().expect("a group was started") += 1;
            } else {
                groups.push(1);
                last_l3 = Some(leaf.l3);
            }
        }
        if !groups.is_empty() {
            packages.push(groups);
        }
    }
    Topology::synthetic_groups(packages).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_cover_the_available_cores() {
        let all = available_cores();
        let mut from_sockets: Vec<usize> = sockets().into_iter().flat_map(|(_, c)| c).collect();
        from_sockets.sort_unstable();
        assert_eq!(from_sockets, all);
    }

    #[test]
    fn placements_pin() {
        let all = available_cores();
        assert_eq!(pinning(&Placement::Compact).unwrap().1, all.len());
        assert_eq!(
            pinning(&Placement::Spread).unwrap(),
            (Pinning::Spread, all.len())
        );
        let first = sockets()[0].0;
        assert!(pinning(&Placement::Socket(first)).unwrap().1 >= 1);
        assert!(pinning(&Placement::Socket(usize::MAX)).is_err());
        assert_eq!(pinning(&Placement::Cores(vec![all[0]])).unwrap().1, 1);
        let e = pinning(&Placement::Cores(vec![usize::MAX])).unwrap_err();
        assert!(e.contains("not available"), "{e}");
    }

    #[test]
    fn sockets_and_placements_on_a_described_two_socket_machine() {
        let t = Topology::synthetic_groups(vec![vec![3], vec![2]]).unwrap();
        let socks = sockets_of(&t);
        assert_eq!(
            socks
                .iter()
                .map(|(id, c)| (*id, c.len()))
                .collect::<Vec<_>>(),
            [(0, 3), (1, 2)]
        );
        assert_eq!(
            pinning_on(&t, &Placement::Socket(1)).unwrap(),
            (Pinning::Socket(1), 2)
        );
        let e = pinning_on(&t, &Placement::Socket(2)).unwrap_err();
        assert_eq!(e, "no socket 2 here (sockets: 0, 1)");
        assert_eq!(pinning_on(&t, &Placement::Spread).unwrap().1, 5);
    }

    #[test]
    fn a_core_list_cuts_a_described_machine() {
        let t = Topology::synthetic(&[2, 2, 2]).unwrap();
        // Cores 0, 1 (group 0), 3 (group 1) of package 0; 6 (group 3) of package 1.
        let sub = sub_machine(&t, &[0, 1, 3, 6, 6]).unwrap();
        assert_eq!(
            (sub.num_packages(), sub.num_l3_groups(), sub.num_cores()),
            (2, 3, 4)
        );
        let e = sub_machine(&t, &[8]).unwrap_err();
        assert!(e.contains("cores 0-7"), "{e}");
    }
}
