//! Where the ranks run: the machine's sockets (from Linux sysfs) and the `Pinning` of a
//! `--placement`. This is the bench's own small reading of sysfs until the crate's topology
//! part (hwloc2 with a sysfs fallback) takes its place.

use crate::cli::Placement;
use corecoll::Pinning;

/// The cores this process may run on, ascending.
pub fn available_cores() -> Vec<usize> {
    let mut ids: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        ids = (0..n).collect();
    }
    ids
}

/// The available cores grouped by socket (`physical_package_id`), sockets in ascending id
/// order; one group of every core when sysfs does not say.
pub fn sockets() -> Vec<(usize, Vec<usize>)> {
    let mut by: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for core in available_cores() {
        let path = format!("/sys/devices/system/cpu/cpu{core}/topology/physical_package_id");
        let socket = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        by.entry(socket).or_default().push(core);
    }
    by.into_iter().collect()
}

/// The pinning of `placement` and the rank count it suggests (its number of cores).
pub fn pinning(placement: &Placement) -> Result<(Pinning, usize), String> {
    let all = available_cores();
    Ok(match placement {
        Placement::Compact => (Pinning::Compact, all.len()),
        Placement::Unpinned => (Pinning::None, all.len()),
        Placement::Spread => {
            // Round-robin over the sockets: socket 0's first core, socket 1's first, …
            let socks = sockets();
            let mut order = Vec::with_capacity(all.len());
            let longest = socks.iter().map(|(_, c)| c.len()).max().unwrap_or(0);
            for i in 0..longest {
                order.extend(socks.iter().filter_map(|(_, c)| c.get(i)));
            }
            (Pinning::Cores(order), all.len())
        }
        Placement::Socket(n) => {
            let socks = sockets();
            let cores = socks
                .iter()
                .find(|(id, _)| id == n)
                .map(|(_, c)| c.clone())
                .ok_or_else(|| {
                    let ids: Vec<String> = socks.iter().map(|(id, _)| id.to_string()).collect();
                    format!("no socket {n} here (sockets: {})", ids.join(", "))
                })?;
            let k = cores.len();
            (Pinning::Cores(cores), k)
        }
        Placement::Cores(list) => {
            if let Some(c) = list.iter().find(|c| !all.contains(c)) {
                return Err(format!(
                    "core {c} is not available to this process (available: {all:?})"
                ));
            }
            (Pinning::Cores(list.clone()), list.len())
        }
    })
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
        let (pin, n) = pinning(&Placement::Spread).unwrap();
        assert_eq!(n, all.len());
        match pin {
            Pinning::Cores(mut c) => {
                c.sort_unstable();
                assert_eq!(c, all);
            }
            other => panic!("spread gave {other:?}"),
        }
        let first = sockets()[0].0;
        assert!(pinning(&Placement::Socket(first)).unwrap().1 >= 1);
        assert!(pinning(&Placement::Socket(usize::MAX)).is_err());
        assert_eq!(pinning(&Placement::Cores(vec![all[0]])).unwrap().1, 1);
        assert!(pinning(&Placement::Cores(vec![usize::MAX])).is_err());
    }
}
