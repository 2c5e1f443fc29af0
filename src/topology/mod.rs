//! The machine's topology: which cores there are, how they group into L3 caches, NUMA nodes
//! and packages (sockets), and where a team's ranks go ([`Pinning`]).
//!
//! A [`Topology`] is a list of leaves, one per core, each the core's first processing unit
//! (PU) that the process may run on: SMT siblings are not used as ranks unless asked for
//! ([`Topology::with_smt_siblings`]). Each leaf is a [`Location`]: the logical indices of its
//! package, NUMA node, L3 group and core (as hwloc's `L#` numbers, from 0 in topology order)
//! and the operating-system index of the PU (hwloc's `P#`), which is what a rank placed there
//! is pinned to. Leaves are in topology order: package by package, within a package L3 group
//! by L3 group, within a group core by core.
//!
//! Where a topology comes from ([`Source`]): hwloc2 with the cargo feature `hwloc`
//! (`hwloc.rs`), otherwise Linux sysfs (`sysfs.rs`), otherwise a single flat level of the
//! cores the process may use; or a described machine ([`Topology::synthetic`], in
//! `synthetic.rs`) whose cores wrap onto the real ones, so that the hierarchy is exercised on
//! any machine. `placement.rs` turns a [`Pinning`] into a location per rank and `render.rs`
//! prints the tree as `lstopo-no-graphics` would. This part describes and places; it never
//! pins a thread (the team does, in `team/affinity.rs`).

#[cfg(feature = "hwloc")]
pub(crate) mod hwloc;
mod placement;
mod render;
mod synthetic;
mod sysfs;

pub use placement::Pinning;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

/// Where a [`Topology`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Source {
    /// hwloc2's discovery (cargo feature `hwloc`).
    Hwloc,
    /// Linux sysfs: `/sys/devices/system/cpu` and `/sys/devices/system/node`.
    Sysfs,
    /// A described machine ([`Topology::synthetic`], [`Topology::synthetic_groups`]).
    Synthetic,
    /// One flat level of cores, nothing known about their grouping ([`Topology::flat`], or
    /// what [`Topology::detect`] falls back to).
    Flat,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Source::Hwloc => "hwloc",
            Source::Sysfs => "sysfs",
            Source::Synthetic => "synthetic",
            Source::Flat => "flat",
        })
    }
}

/// Where a rank runs (or a leaf of a [`Topology`] is): logical indices at each level of the
/// machine, counted machine-wide from 0 in topology order (hwloc's `L#`), and the
/// operating-system index of the processing unit it is pinned to (hwloc's `P#`).
///
/// Two locations with the same `l3` share an L3 cache; the same `package`, a socket; the same
/// `numa`, a memory controller. The indices are positions in the topology the team was built
/// with; with a synthetic topology they are the described machine's, while `os_index` is the
/// real core the rank was wrapped onto.
///
/// More levels (a die, an L2 cluster) may be added as fields, so the struct is
/// `#[non_exhaustive]`: locations come from a [`Topology`], not from literals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub struct Location {
    /// Logical index of the package (socket), `0..Topology::num_packages()`.
    pub package: usize,
    /// Logical index of the NUMA node, `0..Topology::num_numa_nodes()`.
    pub numa: usize,
    /// Logical index of the L3 group (the cores that share one L3 cache), machine-wide,
    /// `0..Topology::num_l3_groups()`.
    pub l3: usize,
    /// Logical index of the core, machine-wide, `0..Topology::num_cores()`.
    pub core: usize,
    /// Operating-system index of the processing unit: what a rank placed here is pinned to.
    pub os_index: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "package {}, NUMA node {}, L3 {}, core {} (P#{})",
            self.package, self.numa, self.l3, self.core, self.os_index
        )
    }
}

/// One L3 group of a topology.
#[derive(Debug, Clone, PartialEq, Eq)]
struct L3Group {
    /// Size of the cache in bytes, where known.
    bytes: Option<u64>,
    /// Whether the group is a real (or described) L3 cache; `false` when nothing was known
    /// about the package's caches and the group stands for the whole package.
    cache: bool,
}

/// The machine as a list of leaves with their package, NUMA node, L3 group and core.
///
/// There is one leaf per core: the core's first processing unit (PU) that the process may run
/// on. SMT siblings are not used as ranks unless asked for
/// ([`Topology::with_smt_siblings`]), since two ranks on one core's hardware threads compete
/// for its caches and pipelines. Each leaf is a [`Location`]: logical indices of its package,
/// NUMA node, L3 group and core (hwloc's `L#`) and the OS index of its PU (hwloc's `P#`).
/// Leaves are in topology order: package by package (by OS index), within a package L3
/// group by L3 group, within a group core by core.
///
/// A topology is detected ([`Topology::detect`]: hwloc2 with the cargo feature `hwloc`,
/// otherwise Linux sysfs, otherwise a flat list of the available cores), read from a sysfs
/// tree ([`Topology::from_sysfs`]) or described ([`Topology::synthetic`],
/// [`Topology::synthetic_groups`], [`Topology::flat`]; the leaves of a described machine
/// wrap onto the real cores). [`Topology::place`] turns a [`Pinning`] into a location per
/// rank, which is what a [`crate::Team`] built on the topology pins its ranks by and what
/// [`crate::Comm::location`] returns. `Display` prints the tree as hwloc's
/// `lstopo-no-graphics` would, condensed (`{:#}`: every core). `docs/topology.md` has the
/// details.
///
/// ```
/// use corecoll::{Pinning, Topology};
///
/// // Two sockets of two L3 groups of four cores, whatever this machine has.
/// let t = Topology::synthetic(&[2, 2, 4]).unwrap();
/// assert_eq!((t.num_packages(), t.num_l3_groups(), t.num_cores()), (2, 4, 16));
/// // Spread alternates the sockets.
/// let places = t.place(&Pinning::Spread, 4).unwrap();
/// let packages: Vec<usize> = places.iter().map(|l| l.unwrap().package).collect();
/// assert_eq!(packages, [0, 1, 0, 1]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Where it came from.
    source: Source,
    /// The leaves, in topology order.
    leaves: Vec<Location>,
    /// Per logical core: the OS indices of its PUs that the process may use, the leaf's first.
    pus: Vec<Vec<usize>>,
    /// Per logical package: its OS index (`physical_package_id`).
    package_os: Vec<usize>,
    /// Per logical NUMA node: its OS index.
    numa_os: Vec<usize>,
    /// Per logical L3 group.
    l3: Vec<L3Group>,
    /// A short description of a synthetic shape, for the rendering (empty otherwise).
    shape: String,
}

/// One processing unit as a discovery back end reports it, before grouping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PuRecord {
    /// Operating-system index.
    pub os: usize,
    /// Position in the back end's own order (hwloc's logical index, sysfs's OS index): groups
    /// and cores are ordered by their first PU in this order.
    pub order: usize,
    /// OS index of the package.
    pub package: usize,
    /// OS index of the NUMA node.
    pub numa: usize,
    /// A key naming the L3 cache, the same for every PU that shares it; `None`: none known.
    pub l3: Option<usize>,
    /// A key naming the core, the same for the SMT siblings of one core.
    pub core: usize,
}

/// What a discovery back end found: every PU of the machine, and the L3 sizes by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Discovered {
    /// Every PU the back end reported, allowed or not.
    pub pus: Vec<PuRecord>,
    /// Size in bytes of each L3 cache, by the key of [`PuRecord::l3`], where known.
    pub l3_bytes: HashMap<usize, u64>,
}

impl Topology {
    /// The topology of this machine, restricted to the cores the calling thread may run on.
    ///
    /// With the cargo feature `hwloc`, hwloc2's discovery; otherwise (or if hwloc fails)
    /// Linux sysfs (`/sys/devices/system/cpu/cpu*/topology`, `cache/index*` and
    /// `/sys/devices/system/node/node*/cpulist`); if neither says anything, one flat level of
    /// the available cores ([`Source::Flat`]). The machine is read once per process; each call
    /// then only asks which cores the calling thread may use, so that it is cheap enough for
    /// every [`crate::TeamBuilder::build`].
    pub fn detect() -> Topology {
        let avail = available_cores();
        let found = MACHINE.get_or_init(discover);
        found
            .as_ref()
            .and_then(|(source, d)| Topology::from_discovered(*source, d, Some(&avail)))
            .unwrap_or_else(|| Topology::flat_on(avail))
    }

    /// [`Topology::detect`] restricted instead to the cores the process's threads may be placed
    /// on (`process_cores`), whatever the calling thread's own affinity: the machine of a team
    /// whose ranks are the program's threads, which its runtime places (OpenMP binds the
    /// initial thread to one core before the program's first line when `OMP_PROC_BIND` is
    /// set).
    pub(crate) fn detect_process() -> Topology {
        let cores = process_cores();
        let found = MACHINE.get_or_init(discover);
        found
            .as_ref()
            .and_then(|(source, d)| Topology::from_discovered(*source, d, Some(&cores)))
            .unwrap_or_else(|| Topology::flat_on(cores))
    }

    /// `n` cores on one level, nothing known about their grouping ([`Source::Flat`]): one
    /// package, one NUMA node, one group. Leaf i runs on the i-th core the calling thread may
    /// use, wrapping around when there are more leaves than cores. `n` must be at least 1.
    pub fn flat(n: usize) -> crate::Result<Topology> {
        if n == 0 {
            return Err(crate::Error::Topology(
                "a topology needs at least one core".into(),
            ));
        }
        let avail = available_cores();
        Ok(Topology::flat_on(
            (0..n).map(|i| avail[i % avail.len()]).collect(),
        ))
    }

    /// A flat topology over the given OS indices (which must not be empty).
    fn flat_on(os: Vec<usize>) -> Topology {
        let leaves: Vec<Location> = os
            .iter()
            .enumerate()
            .map(|(i, &os_index)| Location {
                package: 0,
                numa: 0,
                l3: 0,
                core: i,
                os_index,
            })
            .collect();
        Topology {
            source: Source::Flat,
            pus: os.iter().map(|&o| vec![o]).collect(),
            leaves,
            package_os: vec![0],
            numa_os: vec![0],
            l3: vec![L3Group {
                bytes: None,
                cache: false,
            }],
            shape: String::new(),
        }
    }

    /// Groups a back end's PUs into a topology, keeping only the PUs in `allowed` (all when
    /// `None`). `None` when no PU is left.
    pub(crate) fn from_discovered(
        source: Source,
        found: &Discovered,
        allowed: Option<&[usize]>,
    ) -> Option<Topology> {
        let allowed: Option<BTreeSet<usize>> = allowed.map(|a| a.iter().copied().collect());
        let mut pus: Vec<&PuRecord> = found
            .pus
            .iter()
            .filter(|p| allowed.as_ref().is_none_or(|a| a.contains(&p.os)))
            .collect();
        if pus.is_empty() {
            return None;
        }
        pus.sort_by_key(|p| (p.order, p.os));
        // The first position (in back-end order) of each L3 key and core key, per package:
        // groups and cores are ordered by where they start.
        let mut l3_first: HashMap<(usize, Option<usize>), usize> = HashMap::new();
        let mut core_first: HashMap<(usize, usize), usize> = HashMap::new();
        for p in &pus {
            l3_first.entry((p.package, p.l3)).or_insert(p.order);
            core_first.entry((p.package, p.core)).or_insert(p.order);
        }
        // Cores in topology order: (package OS index, L3 start, core start) → its PUs.
        let mut cores: BTreeMap<(usize, usize, usize), Vec<&PuRecord>> = BTreeMap::new();
        for p in &pus {
            let key = (
                p.package,
                l3_first[&(p.package, p.l3)],
                core_first[&(p.package, p.core)],
            );
            cores.entry(key).or_default().push(p);
        }
        let package_os: Vec<usize> = cores
            .keys()
            .map(|k| k.0)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let numa_os: Vec<usize> = pus
            .iter()
            .map(|p| p.numa)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut topo = Topology {
            source,
            leaves: Vec::with_capacity(cores.len()),
            pus: Vec::with_capacity(cores.len()),
            package_os,
            numa_os,
            l3: Vec::new(),
            shape: String::new(),
        };
        let mut last_group = None;
        for ((package, l3_start, _), core_pus) in cores {
            let first = core_pus[0];
            if last_group != Some((package, l3_start)) {
                last_group = Some((package, l3_start));
                topo.l3.push(L3Group {
                    bytes: first.l3.and_then(|k| found.l3_bytes.get(&k).copied()),
                    cache: first.l3.is_some(),
                });
            }
            topo.leaves.push(Location {
                package: topo.package_os.binary_search(&package).unwrap_or(0),
                numa: topo.numa_os.binary_search(&first.numa).unwrap_or(0),
                l3: topo.l3.len() - 1,
                core: topo.pus.len(),
                os_index: first.os,
            });
            topo.pus.push(core_pus.iter().map(|p| p.os).collect());
        }
        Some(topo)
    }

    /// The same machine with every PU of every core as a leaf (SMT siblings included), in
    /// topology order; siblings share their `core` index. By default a topology has one leaf
    /// per core, since two ranks on one core's hardware threads compete for its caches and
    /// pipelines.
    pub fn with_smt_siblings(&self) -> Topology {
        let mut out = self.clone();
        out.leaves = self
            .leaves
            .iter()
            .flat_map(|leaf| {
                self.pus[leaf.core]
                    .iter()
                    .map(move |&os_index| Location { os_index, ..*leaf })
            })
            .collect();
        out
    }

    /// Where the topology came from.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The leaves (one per core, or per PU after [`Topology::with_smt_siblings`]) in topology
    /// order.
    pub fn leaves(&self) -> &[Location] {
        &self.leaves
    }

    /// Number of packages (sockets).
    pub fn num_packages(&self) -> usize {
        self.package_os.len()
    }

    /// Number of NUMA nodes.
    pub fn num_numa_nodes(&self) -> usize {
        self.numa_os.len()
    }

    /// Number of L3 groups (one per package where no L3 cache is known).
    pub fn num_l3_groups(&self) -> usize {
        self.l3.len()
    }

    /// Number of cores.
    pub fn num_cores(&self) -> usize {
        self.pus.len()
    }

    /// The leaves of package `package` (logical index), in topology order.
    pub fn package_leaves(&self, package: usize) -> impl Iterator<Item = &Location> + '_ {
        self.leaves.iter().filter(move |l| l.package == package)
    }

    /// The leaves of L3 group `l3` (logical index), in topology order.
    pub fn l3_leaves(&self, l3: usize) -> impl Iterator<Item = &Location> + '_ {
        self.leaves.iter().filter(move |l| l.l3 == l3)
    }

    /// The OS index of package `package` (its `physical_package_id`), if there is one.
    pub fn package_os_index(&self, package: usize) -> Option<usize> {
        self.package_os.get(package).copied()
    }

    /// The OS index of NUMA node `numa`, if there is one.
    pub fn numa_os_index(&self, numa: usize) -> Option<usize> {
        self.numa_os.get(numa).copied()
    }

    /// Size in bytes of L3 group `l3`'s cache, where known.
    pub fn l3_bytes(&self, l3: usize) -> Option<u64> {
        self.l3.get(l3).and_then(|g| g.bytes)
    }

    /// The OS indices of the PUs of core `core` that the process may use (its SMT siblings),
    /// the leaf's first.
    pub fn core_pus(&self, core: usize) -> &[usize] {
        self.pus.get(core).map_or(&[], Vec::as_slice)
    }

    /// Where each of `ranks` ranks goes under `pinning` (`None` per rank for
    /// [`Pinning::None`]); see [`Pinning`] for the rules. Fails for a package or a core that
    /// is not in this topology, or an empty core list.
    pub fn place(&self, pinning: &Pinning, ranks: usize) -> crate::Result<Vec<Option<Location>>> {
        placement::place(self, pinning, ranks)
    }

    /// The location of the processing unit of OS index `os`: the leaf with that index, or the
    /// leaf of the core that has it as an SMT sibling (with the sibling's index); `None` for
    /// one outside the topology.
    pub(crate) fn location_of_pu(&self, os: usize) -> Option<Location> {
        placement::location_of_pu(self, os)
    }
}

/// The machine as discovered, once per process.
static MACHINE: OnceLock<Option<(Source, Discovered)>> = OnceLock::new();

/// Runs the discovery back ends in turn: hwloc (feature), then sysfs.
fn discover() -> Option<(Source, Discovered)> {
    #[cfg(feature = "hwloc")]
    if let Some(d) = hwloc::discover() {
        return Some((Source::Hwloc, d));
    }
    sysfs::discover(std::path::Path::new(sysfs::ROOT)).map(|d| (Source::Sysfs, d))
}

/// The cores (OS indices) the calling thread may run on, ascending; if the platform does not
/// say, `0..available_parallelism`.
pub(crate) fn available_cores() -> Vec<usize> {
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

/// The cores (OS indices) the process's threads may be placed on, ascending, whatever the
/// calling thread's affinity: the CPUs of the process's cgroup (`cpuset.cpus.effective`, cgroup
/// v2) if it says, else the online CPUs, each intersected with nothing else; where neither can
/// be read, [`available_cores`].
pub(crate) fn process_cores() -> Vec<usize> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|c| {
            let path = c.lines().find_map(|l| l.strip_prefix("0::"))?.to_string();
            std::fs::read_to_string(format!("/sys/fs/cgroup{path}/cpuset.cpus.effective")).ok()
        })
        .filter(|s| !s.trim().is_empty());
    let list = cgroup.or_else(|| std::fs::read_to_string("/sys/devices/system/cpu/online").ok());
    match list.as_deref().and_then(parse_cpu_list) {
        Some(cores) if !cores.is_empty() => cores,
        _ => available_cores(),
    }
}

/// A Linux CPU list (`0-3,8,10-11`), ascending; `None` if it does not parse.
fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cores = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cores.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => cores.push(part.parse().ok()?),
        }
    }
    cores.sort_unstable();
    cores.dedup();
    Some(cores)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list("x"), None);
        assert!(!process_cores().is_empty());
    }

    fn pu(os: usize, package: usize, numa: usize, l3: Option<usize>, core: usize) -> PuRecord {
        PuRecord {
            os,
            order: os,
            package,
            numa,
            l3,
            core,
        }
    }

    /// Two packages numbered 1 and 0 (package 1 holds the lower PUs), SMT pairs (n, n + 4).
    fn machine() -> Discovered {
        let mut pus = Vec::new();
        for os in 0..8 {
            let core = os % 4;
            let package = if core < 2 { 1 } else { 0 };
            pus.push(pu(os, package, package, Some(package), core));
        }
        Discovered {
            pus,
            l3_bytes: HashMap::from([(0, 1 << 20), (1, 2 << 20)]),
        }
    }

    #[test]
    fn grouping_orders_packages_by_os_index_and_keeps_first_pus() {
        let t = Topology::from_discovered(Source::Sysfs, &machine(), None).unwrap();
        assert_eq!(
            (t.num_packages(), t.num_l3_groups(), t.num_cores()),
            (2, 2, 4)
        );
        let os: Vec<usize> = t.leaves().iter().map(|l| l.os_index).collect();
        assert_eq!(os, [2, 3, 0, 1]);
        assert_eq!(t.package_os_index(0), Some(0));
        assert_eq!(t.l3_bytes(0), Some(1 << 20));
        assert_eq!(t.l3_bytes(1), Some(2 << 20));
        assert_eq!(t.core_pus(0), [2, 6]);
        assert_eq!(t.with_smt_siblings().leaves().len(), 8);
    }

    #[test]
    fn restriction_picks_an_allowed_sibling_and_renumbers() {
        let t = Topology::from_discovered(Source::Sysfs, &machine(), Some(&[5, 6])).unwrap();
        assert_eq!(t.num_packages(), 2);
        let leaves: Vec<(usize, usize, usize)> = t
            .leaves()
            .iter()
            .map(|l| (l.package, l.core, l.os_index))
            .collect();
        assert_eq!(leaves, [(0, 0, 6), (1, 1, 5)]);
        assert!(Topology::from_discovered(Source::Sysfs, &machine(), Some(&[99])).is_none());
    }

    #[test]
    fn flat_wraps_and_rejects_zero() {
        let avail = available_cores();
        let t = Topology::flat(avail.len() + 1).unwrap();
        assert_eq!(t.source(), Source::Flat);
        assert_eq!(t.leaves().last().unwrap().os_index, avail[0]);
        assert!(Topology::flat(0).is_err());
    }
}
