//! Discovery through hwloc2 (cargo feature `hwloc`), and the process's one hwloc handle,
//! which `team/affinity.rs` also binds threads with.
//!
//! hwloc's tree is read level by level rather than walked: the PUs (with their OS and logical
//! indices), then each Core, Package and L3Cache object's cpuset. NUMA nodes are memory
//! children in hwloc 2, outside the main tree (hwloc2's depth functions do not reach their
//! virtual depth), so a PU's NUMA node is read from its nodeset instead: the nodes near it,
//! by OS index, of which the lowest is taken.

use super::{Discovered, PuRecord};
use hwloc2::{ObjectType, TopologyObject};
use std::collections::HashMap;
use std::sync::OnceLock;

/// hwloc's "no OS index" (`HWLOC_UNKNOWN_INDEX`).
const UNKNOWN_INDEX: u32 = u32::MAX;

/// Core keys of PUs that no Core object covers start here, clear of the Core objects' logical
/// indices.
const LONE_PU_KEYS: usize = 1 << 40;

/// The process's hwloc topology, loaded on first use; `None` if hwloc could not load one.
///
/// A lock rather than the `sync` shim's: it guards a library handle (hwloc2's binding calls
/// take `&mut`), not a part of the communication protocol, and the feature is not built under
/// loom.
fn handle() -> Option<&'static parking_lot::Mutex<hwloc2::Topology>> {
    static HANDLE: OnceLock<Option<parking_lot::Mutex<hwloc2::Topology>>> = OnceLock::new();
    HANDLE
        .get_or_init(|| hwloc2::Topology::new().map(parking_lot::Mutex::new))
        .as_ref()
}

/// Runs `f` on the process's hwloc topology (under its lock); `None` if hwloc has none.
pub(crate) fn with_handle<R>(f: impl FnOnce(&mut hwloc2::Topology) -> R) -> Option<R> {
    handle().map(|h| f(&mut h.lock()))
}

/// The PUs of an object, as OS indices.
fn cpus(obj: &TopologyObject) -> Vec<usize> {
    obj.cpuset()
        .map(|set| set.into_iter().map(|c| c as usize).collect())
        .unwrap_or_default()
}

/// An object's OS index, or its logical index where hwloc has none.
fn os_or_logical(obj: &TopologyObject) -> usize {
    match obj.os_index() {
        UNKNOWN_INDEX => obj.logical_index() as usize,
        os => os as usize,
    }
}

/// Reads the machine through hwloc; `None` if hwloc has no topology or no PU.
pub(super) fn discover() -> Option<Discovered> {
    with_handle(|topo| {
        let mut found = Discovered::default();
        let pu_depth = topo.depth_for_type(&ObjectType::PU).ok()?;
        let mut by_os: HashMap<usize, PuRecord> = HashMap::new();
        for pu in topo.objects_at_depth(pu_depth) {
            let os = pu.os_index() as usize;
            let order = pu.logical_index() as usize;
            // The NUMA nodes near a PU: its nodeset, indexed by the nodes' OS indices.
            let numa = pu
                .nodeset()
                .map(|set| set.first())
                .and_then(|first| usize::try_from(first).ok())
                .unwrap_or(0);
            by_os.insert(
                os,
                PuRecord {
                    os,
                    order,
                    package: 0,
                    numa,
                    l3: None,
                    core: LONE_PU_KEYS + order,
                },
            );
        }
        // Only types whose objects sit at one depth (`Ok`); a type hwloc does not report
        // leaves the PUs' defaults.
        let mut each = |ty: ObjectType, set: &mut dyn FnMut(&TopologyObject, &mut PuRecord)| {
            if let Ok(depth) = topo.depth_for_type(&ty) {
                for obj in topo.objects_at_depth(depth) {
                    for cpu in cpus(obj) {
                        if let Some(rec) = by_os.get_mut(&cpu) {
                            set(obj, rec);
                        }
                    }
                }
            }
        };
        each(ObjectType::Core, &mut |obj, rec| {
            rec.core = obj.logical_index() as usize
        });
        each(ObjectType::Package, &mut |obj, rec| {
            rec.package = os_or_logical(obj)
        });
        each(ObjectType::L3Cache, &mut |obj, rec| {
            let key = obj.logical_index() as usize;
            rec.l3 = Some(key);
            if let Some(attr) = obj.cache_attributes() {
                found.l3_bytes.insert(key, attr.size());
            }
        });
        found.pus = by_os.into_values().collect();
        found.pus.sort_by_key(|p| p.order);
        (!found.pus.is_empty()).then_some(found)
    })
    .flatten()
}
