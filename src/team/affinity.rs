//! Pinning the current thread to one core (by its OS index: hwloc2's binding with the feature
//! `hwloc`, core_affinity otherwise), plus saving and restoring the calling thread's whole
//! affinity mask around a run (libc on Linux, where core_affinity can only set single cores).
//! Where each rank goes is the topology's business (`topology::Pinning`); binding is the
//! team's.

/// Pins the current thread to the processing unit of OS index `core` (best effort: an
/// operating system that refuses leaves the thread where it was).
pub(crate) fn pin_current(core: usize) {
    #[cfg(feature = "hwloc")]
    {
        let bound = crate::topology::hwloc::with_handle(|topo| {
            let Ok(id) = u32::try_from(core) else {
                return false;
            };
            topo.set_cpubind(
                hwloc2::CpuSet::from(id),
                hwloc2::CpuBindFlags::CPUBIND_THREAD,
            )
            .is_ok()
        });
        if bound == Some(true) {
            return;
        }
    }
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

/// The processing unit (OS index) the calling thread may run on if its affinity mask holds
/// exactly one, else `None` (several, or the mask cannot be read).
pub(crate) fn single_pu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        let saved = save();
        let set = saved.set?;
        // SAFETY: `set` is a cpu_set_t that sched_getaffinity filled; CPU_ISSET reads only
        // indices below CPU_SETSIZE.
        let mut on =
            (0..libc::CPU_SETSIZE as usize).filter(|&i| unsafe { libc::CPU_ISSET(i, &set) });
        let first = on.next()?;
        on.next().is_none().then_some(first)
    }
    #[cfg(not(target_os = "linux"))]
    None
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
