//! Discovery from Linux sysfs, the fallback when hwloc is not built in (or fails).
//!
//! Read under a root directory (`/sys/devices/system` on a live system; a fake tree in the
//! tests), for every `cpu/cpuN` that is online:
//!
//! - `topology/physical_package_id`: the package (a negative id, as some platforms report,
//!   counts as package 0); a CPU without it is skipped;
//! - `topology/core_cpus_list` (or the older `thread_siblings_list`): the core, named by its
//!   lowest CPU; without either, `(package, die_id, core_id)`;
//! - `cache/index*/level`, `type` and `shared_cpu_list`: the L3 group (the unified or data
//!   cache of level 3, named by its lowest CPU) and its `size`;
//!
//! and for every `node/nodeN/cpulist`, the NUMA node of its CPUs (node 0 without them).

use super::{Discovered, PuRecord, Source, Topology};
use std::collections::HashMap;
use std::path::Path;

/// Where sysfs describes the CPUs and NUMA nodes on a live system.
pub(super) const ROOT: &str = "/sys/devices/system";

/// Core keys made from `core_id` start here, clear of the CPU numbers that name cores found
/// through their sibling lists.
const CORE_ID_KEYS: usize = 1 << 40;

impl Topology {
    /// The machine that the sysfs tree under `root` (`/sys/devices/system` on a live Linux
    /// system) describes, every CPU of it (not restricted to those the calling thread may
    /// use): see `docs/topology.md` for the files read. `None` if no CPU there has a readable
    /// `topology/physical_package_id`.
    pub fn from_sysfs(root: &Path) -> Option<Topology> {
        Topology::from_discovered(Source::Sysfs, &discover(root)?, None)
    }
}

/// Reads the tree under `root`; `None` if it describes no CPU.
pub(super) fn discover(root: &Path) -> Option<Discovered> {
    let numa = numa_of_cpus(root);
    let mut found = Discovered::default();
    let mut core_ids: HashMap<(usize, usize, usize), usize> = HashMap::new();
    for (os, dir) in numbered(&root.join("cpu"), "cpu") {
        if read(&dir.join("online")).is_some_and(|s| s == "0") {
            continue;
        }
        let topo = dir.join("topology");
        let Some(package) = read(&topo.join("physical_package_id"))
            .and_then(|s| s.parse::<i64>().ok())
            .map(|id| usize::try_from(id).unwrap_or(0))
        else {
            continue;
        };
        let siblings = read(&topo.join("core_cpus_list"))
            .or_else(|| read(&topo.join("thread_siblings_list")))
            .and_then(|s| parse_list(&s))
            .and_then(|l| l.first().copied());
        let core = siblings.unwrap_or_else(|| {
            let id = |name: &str| {
                read(&topo.join(name))
                    .and_then(|s| s.parse::<i64>().ok())
                    .map_or(0, |v| usize::try_from(v).unwrap_or(0))
            };
            let key = (package, id("die_id"), id("core_id"));
            let next = CORE_ID_KEYS + core_ids.len();
            *core_ids.entry(key).or_insert(next)
        });
        let l3 = l3_of(&dir.join("cache"));
        if let Some((key, Some(bytes))) = l3 {
            found.l3_bytes.insert(key, bytes);
        }
        found.pus.push(PuRecord {
            os,
            order: os,
            package,
            numa: numa.get(&os).copied().unwrap_or(0),
            l3: l3.map(|(key, _)| key),
            core,
        });
    }
    (!found.pus.is_empty()).then_some(found)
}

/// The L3 cache of a CPU from its `cache` directory: its key (lowest CPU sharing it) and size.
fn l3_of(cache: &Path) -> Option<(usize, Option<u64>)> {
    numbered(cache, "index").into_iter().find_map(|(_, index)| {
        if read(&index.join("level"))? != "3" {
            return None;
        }
        if read(&index.join("type")).is_some_and(|t| t == "Instruction") {
            return None;
        }
        let shared = parse_list(&read(&index.join("shared_cpu_list"))?)?;
        let size = read(&index.join("size")).and_then(|s| parse_size(&s));
        Some((*shared.first()?, size))
    })
}

/// CPU → NUMA node, from `node/nodeN/cpulist`.
fn numa_of_cpus(root: &Path) -> HashMap<usize, usize> {
    let mut of = HashMap::new();
    for (node, dir) in numbered(&root.join("node"), "node") {
        if let Some(cpus) = read(&dir.join("cpulist")).and_then(|s| parse_list(&s)) {
            for cpu in cpus {
                of.insert(cpu, node);
            }
        }
    }
    of
}

/// The entries `PREFIXN` of `dir` (N a number), by ascending N.
fn numbered(dir: &Path, prefix: &str) -> Vec<(usize, std::path::PathBuf)> {
    let mut out: Vec<(usize, std::path::PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let n = e.file_name().to_str()?.strip_prefix(prefix)?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    out.sort_by_key(|(n, _)| *n);
    out
}

/// A file's contents, trimmed; `None` if it cannot be read.
fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// A kernel CPU list (`0-3,8,10-11`), ascending; `None` if malformed or empty.
pub(super) fn parse_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi): (usize, usize) = (lo.parse().ok()?, hi.parse().ok()?);
                if lo > hi {
                    return None;
                }
                out.extend(lo..=hi);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// A sysfs cache size (`32768K`, `1M`, `512`) in bytes.
fn parse_size(s: &str) -> Option<u64> {
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KB" | "KiB" => 10,
        "M" | "MB" | "MiB" => 20,
        "G" | "GB" | "GiB" => 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn lists_and_sizes() {
        assert_eq!(
            parse_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_list("5"), Some(vec![5]));
        assert_eq!(parse_list(""), None);
        assert_eq!(parse_list("3-1"), None);
        assert_eq!(parse_list("a"), None);
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("1X"), None);
    }

    #[test]
    fn this_machine_if_linux() {
        if let Some(t) = Topology::from_sysfs(Path::new(ROOT)) {
            assert!(t.num_cores() >= 1 && t.num_packages() >= 1);
        }
    }
}
