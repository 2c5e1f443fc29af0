//! Which core each rank runs on, and pinning the current thread (core_affinity), plus saving
//! and restoring the calling thread's whole affinity mask around a run (libc on Linux, where
//! core_affinity can only set single cores).

use crate::error::{Error, Result};

/// How the ranks of a team are placed on the cores the process may use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Pinning {
    /// Rank r on the r-th available core (wrapping around when there are more ranks than
    /// cores): neighbouring ranks share caches.
    #[default]
    Compact,
    /// Ranks spread evenly over the available cores (rank r on core ⌊r·n/p⌋ when p ≤ n), so
    /// that on a machine whose cores are numbered socket by socket the ranks spread over the
    /// sockets; wraps like `Compact` when there are more ranks than cores.
    Spread,
    /// No pinning: the operating system places the threads.
    None,
    /// Rank r on core `list[r % list.len()]` (operating-system core ids).
    Cores(Vec<usize>),
}

/// The cores the calling thread may run on, ascending.
pub(crate) fn available_cores() -> Vec<usize> {
    let mut ids: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The core of each of `ranks` ranks under `pinning`, or `None` per rank for no pinning.
pub(crate) fn plan(pinning: &Pinning, ranks: usize, cores: &[usize]) -> Result<Vec<Option<usize>>> {
    let n = cores.len();
    if n == 0 && !matches!(pinning, Pinning::None) {
        // Nothing known about the cores (an unusual platform): run unpinned.
        return Ok(vec![None; ranks]);
    }
    Ok(match pinning {
        Pinning::None => vec![None; ranks],
        Pinning::Compact => (0..ranks).map(|r| Some(cores[r % n])).collect(),
        Pinning::Spread => (0..ranks)
            .map(|r| {
                Some(if ranks <= n {
                    cores[r * n / ranks]
                } else {
                    cores[r % n]
                })
            })
            .collect(),
        Pinning::Cores(list) => {
            if list.is_empty() {
                return Err(Error::Pinning(
                    "Pinning::Cores was given an empty list".into(),
                ));
            }
            if let Some(bad) = list.iter().find(|c| !cores.contains(c)) {
                return Err(Error::Pinning(format!(
                    "core {bad} is not one the thread building the team may run on (available: {cores:?})"
                )));
            }
            (0..ranks).map(|r| Some(list[r % list.len()])).collect()
        }
    })
}

/// Pins the current thread to `core` (best effort: an operating system that refuses leaves
/// the thread where it was).
pub(crate) fn pin_current(core: usize) {
    let _ = core_affinity::set_for_current(core_affinity::CoreId { id: core });
}

/// The calling thread's affinity mask, to be given back by [`restore`].
pub(crate) struct SavedMask {
    #[cfg(target_os = "linux")]
    set: Option<libc::cpu_set_t>,
}

/// Saves the calling thread's affinity mask.
pub(crate) fn save() -> SavedMask {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: cpu_set_t is plain data for which all-zero is a valid (empty) set;
        // sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let ok = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
            SavedMask {
                set: (ok == 0).then_some(set),
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    SavedMask {}
}

/// Gives the calling thread back the mask saved by [`save`].
pub(crate) fn restore(saved: SavedMask) {
    #[cfg(target_os = "linux")]
    if let Some(set) = saved.set {
        // SAFETY: `set` is a mask obtained from sched_getaffinity for this process.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = saved;
}
