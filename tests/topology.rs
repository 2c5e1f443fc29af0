//! Topologies: synthetic machines (2×3, 3×5, 4×4, 2×2×4 and an uneven one) — their leaves,
//! levels and OS indices wrapped onto the real cores; the placements (compact, spread,
//! socket:N, a core list, and their errors) on them and, as a property, on any shape;
//! `Comm::location` on every rank of a team built on a synthetic machine with a spread
//! placement, also after `split`; the sysfs reader on fake sysfs trees; the flat fallback;
//! the lstopo-like rendering; and detection of this machine (through hwloc with the feature
//! `hwloc`, which CI runs).

mod common;

use common::available_cores;
use corecoll::{Error, Location, Pinning, Source, Team, Topology};
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// Per package, per L3 group, the number of cores: what a topology's leaves say.
fn shape_of(t: &Topology) -> Vec<Vec<usize>> {
    let mut shape: Vec<Vec<usize>> = vec![Vec::new(); t.num_packages()];
    let mut last_l3 = None;
    for leaf in t.leaves() {
        if last_l3 != Some(leaf.l3) {
            last_l3 = Some(leaf.l3);
            shape[leaf.package].push(0);
        }
        *shape[leaf.package].last_mut().unwrap() += 1;
    }
    shape
}

/// The checks every synthetic topology of shape `groups` passes.
fn check_synthetic(t: &Topology, groups: &[Vec<usize>]) {
    let n: usize = groups.iter().flatten().sum();
    assert_eq!(t.source(), Source::Synthetic);
    assert_eq!(t.num_packages(), groups.len());
    assert_eq!(t.num_numa_nodes(), groups.len());
    assert_eq!(
        t.num_l3_groups(),
        groups.iter().map(Vec::len).sum::<usize>()
    );
    assert_eq!(t.num_cores(), n);
    assert_eq!(t.leaves().len(), n);
    assert_eq!(shape_of(t), groups);
    let real = available_cores();
    for (i, leaf) in t.leaves().iter().enumerate() {
        assert_eq!(leaf.core, i);
        assert_eq!(leaf.numa, leaf.package);
        // Leaf i wraps onto the (i mod n)-th real core.
        assert_eq!(leaf.os_index, real[i % real.len()], "leaf {i}");
        assert_eq!(t.core_pus(i), [leaf.os_index]);
    }
    // Levels are in topology order and nested: indices never go back.
    for w in t.leaves().windows(2) {
        assert!(w[0].package <= w[1].package && w[0].l3 <= w[1].l3);
        if w[0].l3 == w[1].l3 {
            assert_eq!(w[0].package, w[1].package);
        }
    }
}

#[test]
fn synthetic_shapes() {
    let cases: [(&[usize], Vec<Vec<usize>>); 5] = [
        (&[2, 3], vec![vec![3], vec![3]]),
        (&[3, 5], vec![vec![5]; 3]),
        (&[4, 4], vec![vec![4]; 4]),
        (&[2, 2, 4], vec![vec![4, 4], vec![4, 4]]),
        (&[6], vec![vec![6]]),
    ];
    for (shape, groups) in cases {
        let t = Topology::synthetic(shape).unwrap();
        check_synthetic(&t, &groups);
    }
    let uneven = vec![vec![3, 2], vec![4]];
    let t = Topology::synthetic_groups(uneven.clone()).unwrap();
    check_synthetic(&t, &uneven);
    assert_eq!(t.l3_leaves(1).map(|l| l.core).collect::<Vec<_>>(), [3, 4]);
    assert_eq!(t.package_leaves(1).count(), 4);
}

#[test]
fn malformed_shapes_are_errors() {
    for shape in [&[][..], &[0], &[2, 0], &[1, 2, 3, 4]] {
        let e = Topology::synthetic(shape).unwrap_err();
        assert!(matches!(e, Error::Topology(_)), "{shape:?}: {e}");
    }
    for groups in [vec![], vec![vec![]], vec![vec![2], vec![0]]] {
        assert!(Topology::synthetic_groups(groups).is_err());
    }
    assert!(Topology::flat(0).is_err());
}

/// `(package, l3, core)` of each rank under `pinning`.
fn places(t: &Topology, pinning: &Pinning, p: usize) -> Vec<(usize, usize, usize)> {
    t.place(pinning, p)
        .unwrap()
        .into_iter()
        .map(|l| {
            let l = l.expect("a pinned placement locates every rank");
            (l.package, l.l3, l.core)
        })
        .collect()
}

#[test]
fn compact_follows_topology_order_and_wraps() {
    let t = Topology::synthetic(&[2, 3]).unwrap();
    let cores: Vec<usize> = places(&t, &Pinning::Compact, 8)
        .iter()
        .map(|x| x.2)
        .collect();
    assert_eq!(cores, [0, 1, 2, 3, 4, 5, 0, 1]);
}

#[test]
fn spread_alternates_packages() {
    // 2×3: packages alternate, and each package's cores fill in order (one L3 group each,
    // three ranks on three cores).
    let t = Topology::synthetic(&[2, 3]).unwrap();
    let got = places(&t, &Pinning::Spread, 6);
    assert_eq!(
        got.iter().map(|x| x.0).collect::<Vec<_>>(),
        [0, 1, 0, 1, 0, 1]
    );
    assert_eq!(
        got.iter().map(|x| x.2).collect::<Vec<_>>(),
        [0, 3, 1, 4, 2, 5]
    );
    // Two ranks on 2×3: one per package, each on its package's first core.
    assert_eq!(places(&t, &Pinning::Spread, 2), [(0, 0, 0), (1, 1, 3)]);
    // 3×5 with 4 ranks: packages 0, 1, 2, 0.
    let t = Topology::synthetic(&[3, 5]).unwrap();
    let got = places(&t, &Pinning::Spread, 4);
    assert_eq!(got.iter().map(|x| x.0).collect::<Vec<_>>(), [0, 1, 2, 0]);
    // 4×4, 8 ranks: two per package, on cores 0 and 2 of each (an even spread in a group).
    let t = Topology::synthetic(&[4, 4]).unwrap();
    let got = places(&t, &Pinning::Spread, 8);
    assert_eq!(
        got.iter().map(|x| x.2).collect::<Vec<_>>(),
        [0, 4, 8, 12, 2, 6, 10, 14]
    );
    // 2×2×4, 4 ranks: packages alternate and, within a package, its L3 groups do.
    let t = Topology::synthetic(&[2, 2, 4]).unwrap();
    let got = places(&t, &Pinning::Spread, 4);
    assert_eq!(got.iter().map(|x| x.1).collect::<Vec<_>>(), [0, 2, 1, 3]);
    // More ranks than cores wrap: rank r goes where rank r mod 16 goes.
    let all = places(&t, &Pinning::Spread, 16);
    let more = places(&t, &Pinning::Spread, 40);
    for (r, x) in more.iter().enumerate() {
        assert_eq!(*x, all[r % 16]);
    }
    // Uneven: the small package is full after one round.
    let t = Topology::synthetic_groups(vec![vec![1], vec![2, 2]]).unwrap();
    let got = places(&t, &Pinning::Spread, 5);
    assert_eq!(got.iter().map(|x| x.0).collect::<Vec<_>>(), [0, 1, 1, 1, 1]);
    assert_eq!(got.iter().map(|x| x.1).collect::<Vec<_>>(), [0, 1, 2, 1, 2]);
}

#[test]
fn socket_gets_only_its_package() {
    let t = Topology::synthetic_groups(vec![vec![3, 2], vec![4]]).unwrap();
    let got = places(&t, &Pinning::Socket(1), 6);
    assert!(got.iter().all(|x| x.0 == 1));
    assert_eq!(
        got.iter().map(|x| x.2).collect::<Vec<_>>(),
        [5, 6, 7, 8, 5, 6]
    );
    let got = places(&t, &Pinning::Socket(0), 5);
    assert_eq!(got.iter().map(|x| x.2).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    let e = t.place(&Pinning::Socket(2), 1).unwrap_err();
    assert!(
        matches!(&e, Error::Pinning(m) if m.contains("no package 2")),
        "{e}"
    );
}

#[test]
fn core_lists_and_no_pinning() {
    let t = Topology::synthetic(&[2, 2]).unwrap();
    let (first, last) = (t.leaves()[0].os_index, t.leaves()[3].os_index);
    let got = t.place(&Pinning::Cores(vec![last, first]), 3).unwrap();
    let os: Vec<usize> = got.iter().map(|l| l.unwrap().os_index).collect();
    assert_eq!(os, [last, first, last]);
    // The first leaf with that OS index.
    let first_leaf = |os: usize| t.leaves().iter().find(|l| l.os_index == os).copied();
    assert_eq!(got[0], first_leaf(last));
    let e = t.place(&Pinning::Cores(vec![100_000]), 1).unwrap_err();
    assert!(
        matches!(&e, Error::Pinning(m) if m.contains("100000")),
        "{e}"
    );
    assert!(t.place(&Pinning::Cores(vec![]), 1).is_err());
    assert_eq!(t.place(&Pinning::None, 3).unwrap(), vec![None; 3]);
}

/// A team on a synthetic 2×2×4 machine with a spread placement: every rank sees every rank's
/// location (the placement's), pinned to the real core its leaf wraps onto; after splitting
/// by package and then by L3 group, each sub-communicator's ranks keep their locations.
#[test]
fn comm_location_on_a_synthetic_team_and_after_split() {
    let t = Topology::synthetic(&[2, 2, 4]).unwrap();
    let p = 8;
    let want = t.place(&Pinning::Spread, p).unwrap();
    let team = Team::builder()
        .ranks(p)
        .topology(t.clone())
        .pinning(Pinning::Spread)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    assert_eq!(team.locations(), want);
    assert_eq!(team.topology(), &t);
    let cores: Vec<Option<usize>> = want.iter().map(|l| l.map(|l| l.os_index)).collect();
    assert_eq!(team.cores(), cores);
    type Seen = (
        Vec<Option<Location>>,
        Vec<(usize, Location)>,
        Vec<(usize, Location)>,
    );
    let out = team
        .run(|comm| -> corecoll::Result<Seen> {
            let world: Vec<Option<Location>> =
                (0..=comm.size()).map(|r| comm.location(r)).collect();
            let me = comm.location(comm.rank()).unwrap();
            assert_eq!(comm.topology().num_l3_groups(), 4);
            let by_package = comm.split(Some(me.package), comm.rank())?.unwrap();
            let pkg: Vec<(usize, Location)> = (0..by_package.size())
                .map(|r| {
                    (
                        by_package.team_rank(r).unwrap(),
                        by_package.location(r).unwrap(),
                    )
                })
                .collect();
            let by_l3 = by_package.split(Some(me.l3), 0)?.unwrap();
            let l3: Vec<(usize, Location)> = (0..by_l3.size())
                .map(|r| (by_l3.team_rank(r).unwrap(), by_l3.location(r).unwrap()))
                .collect();
            by_l3.barrier()?;
            Ok((world, pkg, l3))
        })
        .unwrap();
    for (r, seen) in out.into_iter().enumerate() {
        let (world, pkg, l3) = seen.unwrap();
        assert_eq!(world[..p], want[..], "rank {r}");
        assert_eq!(
            world[p], None,
            "rank {r}: a rank out of range has no location"
        );
        let me = want[r].unwrap();
        // Spread interleaves the packages: package 0 holds the even team ranks.
        let pkg_ranks: Vec<usize> = pkg.iter().map(|x| x.0).collect();
        let expect: Vec<usize> = (0..p).filter(|q| q % 2 == me.package).collect();
        assert_eq!(pkg_ranks, expect, "rank {r}");
        for (team_rank, loc) in pkg.iter().chain(&l3) {
            assert_eq!(Some(*loc), want[*team_rank]);
            assert_eq!(loc.package, me.package);
        }
        assert_eq!(l3.len(), 2);
        assert!(l3.iter().all(|x| x.1.l3 == me.l3));
    }
    // Unpinned ranks have no location.
    let loose = Team::builder()
        .ranks(2)
        .topology(t)
        .pinning(Pinning::None)
        .build()
        .unwrap();
    assert_eq!(loose.run(|c| c.location(c.rank())).unwrap(), [None, None]);
}

/// Writes `contents` to `root/rel`, making the directories.
fn put(root: &Path, rel: &str, contents: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("{contents}\n")).unwrap();
}

/// A fake sysfs: 2 packages × 2 L3 groups × 2 cores × 2 SMT threads, numbered as Linux does
/// (CPUs 0–7 the first threads, 8–15 their siblings: CPU c and c + 8 share a core), with
/// L1d/L2 caches beside the L3, two NUMA nodes, and an offline CPU 16.
fn two_socket_tree(root: &Path) {
    for cpu in 0..16 {
        let core = cpu % 8;
        let package = core / 4;
        let group = core / 2;
        let dir = format!("cpu/cpu{cpu}");
        put(
            root,
            &format!("{dir}/topology/physical_package_id"),
            &package.to_string(),
        );
        put(
            root,
            &format!("{dir}/topology/core_id"),
            &(core % 4).to_string(),
        );
        put(
            root,
            &format!("{dir}/topology/thread_siblings_list"),
            &format!("{core},{}", core + 8),
        );
        let l3 = format!(
            "{}-{},{}-{}",
            2 * group,
            2 * group + 1,
            2 * group + 8,
            2 * group + 9
        );
        for (i, level, ty, size, shared) in [
            (0, 1, "Data", "32K", format!("{core},{}", core + 8)),
            (1, 1, "Instruction", "32K", format!("{core},{}", core + 8)),
            (2, 2, "Unified", "1024K", format!("{core},{}", core + 8)),
            (3, 3, "Unified", "16384K", l3.clone()),
        ] {
            let idx = format!("{dir}/cache/index{i}");
            put(root, &format!("{idx}/level"), &level.to_string());
            put(root, &format!("{idx}/type"), ty);
            put(root, &format!("{idx}/size"), size);
            put(root, &format!("{idx}/shared_cpu_list"), &shared);
        }
    }
    put(root, "cpu/cpu16/online", "0");
    put(root, "cpu/online", "0-15");
    put(root, "node/node0/cpulist", "0-3,8-11");
    put(root, "node/node1/cpulist", "4-7,12-15");
}

#[test]
fn sysfs_reader_on_a_fake_two_socket_tree() {
    let dir = tempfile::tempdir().unwrap();
    two_socket_tree(dir.path());
    let t = Topology::from_sysfs(dir.path()).unwrap();
    assert_eq!(t.source(), Source::Sysfs);
    assert_eq!(
        (
            t.num_packages(),
            t.num_numa_nodes(),
            t.num_l3_groups(),
            t.num_cores()
        ),
        (2, 2, 4, 8)
    );
    assert_eq!(shape_of(&t), [vec![2, 2], vec![2, 2]]);
    // One leaf per core, its first thread; the sibling is kept beside it.
    let os: Vec<usize> = t.leaves().iter().map(|l| l.os_index).collect();
    assert_eq!(os, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(t.core_pus(5), [5, 13]);
    assert!(t.leaves().iter().all(|l| l.numa == l.package));
    assert_eq!(t.l3_bytes(3), Some(16 << 20));
    assert_eq!(t.package_os_index(1), Some(1));
    let smt = t.with_smt_siblings();
    assert_eq!(smt.leaves().len(), 16);
    assert_eq!(smt.leaves()[3].core, 1);
    assert_eq!(smt.leaves()[3].os_index, 9);
    // Spread over the fake machine: packages alternate, then the L3 groups within them.
    let l3s: Vec<usize> = t
        .place(&Pinning::Spread, 4)
        .unwrap()
        .iter()
        .map(|l| l.unwrap().l3)
        .collect();
    assert_eq!(l3s, [0, 2, 1, 3]);
    // A core list may name an SMT sibling: the rank gets that core's location on it.
    let sibling = t.place(&Pinning::Cores(vec![13]), 1).unwrap()[0].unwrap();
    assert_eq!((sibling.core, sibling.os_index), (5, 13));
    let text = t.to_string();
    for line in [
        "Machine (sysfs): 2 packages, 2 NUMA nodes, 4 L3 groups, 8 cores, 16 PUs",
        "  Package L#1 (P#1)",
        "    NUMANode L#1 (P#1)",
        "    L3 L#3 (16MB)",
        "      Core L#0",
        "        PU L#1 (P#8)",
        "      Core L#7",
        "        PU L#15 (P#15)",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in\n{text}"
        );
    }
}

/// A tree with neither caches nor NUMA nodes, cores known only by `core_id`, and the package
/// id −1 that some platforms report: one package, one group standing for it, one NUMA node.
#[test]
fn sysfs_reader_on_a_sparse_tree() {
    let dir = tempfile::tempdir().unwrap();
    for cpu in 0..4 {
        put(
            dir.path(),
            &format!("cpu/cpu{cpu}/topology/physical_package_id"),
            "-1",
        );
        put(
            dir.path(),
            &format!("cpu/cpu{cpu}/topology/core_id"),
            &(cpu / 2).to_string(),
        );
    }
    let t = Topology::from_sysfs(dir.path()).unwrap();
    assert_eq!(
        (
            t.num_packages(),
            t.num_numa_nodes(),
            t.num_l3_groups(),
            t.num_cores()
        ),
        (1, 1, 1, 2)
    );
    assert_eq!(t.core_pus(1), [2, 3]);
    assert_eq!(t.l3_bytes(0), None);
    let text = t.to_string();
    assert!(!text.contains("L3"), "{text}");
    assert!(text.contains("Core L#1\n"), "{text}");
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(Topology::from_sysfs(empty.path()), None);
    assert_eq!(Topology::from_sysfs(&empty.path().join("missing")), None);
}

#[test]
fn flat_topologies() {
    let real = available_cores();
    let t = Topology::flat(3).unwrap();
    assert_eq!(t.source(), Source::Flat);
    assert_eq!(
        (t.num_packages(), t.num_l3_groups(), t.num_cores()),
        (1, 1, 3)
    );
    let os: Vec<usize> = t.leaves().iter().map(|l| l.os_index).collect();
    assert_eq!(os, (0..3).map(|i| real[i % real.len()]).collect::<Vec<_>>());
    let text = t.to_string();
    assert!(
        text.starts_with("Machine (flat): 3 cores; grouping unknown"),
        "{text}"
    );
    assert!(text.contains("grouping unknown"), "{text}");
    assert!(!text.contains("Package"), "{text}");
    assert!(text.contains("  Core L#2 + PU L#2"), "{text}");
}

#[test]
fn rendering_of_a_synthetic_machine() {
    let t = Topology::synthetic(&[2, 2, 4]).unwrap();
    let text = t.to_string();
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        "Machine (synthetic 2x2x4): 2 packages, 2 NUMA nodes, 4 L3 groups, 16 cores"
    );
    let real = available_cores();
    for line in [
        "  Package L#0 (P#0)".to_string(),
        "  Package L#1 (P#1)".to_string(),
        "    NUMANode L#1 (P#1)".to_string(),
        "    L3 L#3".to_string(),
        format!("      Core L#9 + PU L#9 (P#{})", real[9 % real.len()]),
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in\n{text}"
        );
    }
    // A long run of cores is condensed; `{:#}` prints them all.
    let big = Topology::synthetic(&[1, 1, 12]).unwrap();
    let short = big.to_string();
    assert!(
        short.contains("      ... 9 more cores (Core L#2-10, PUs P#"),
        "{short}"
    );
    assert!(format!("{big:#}").contains("Core L#6 + PU L#6"));
    assert!(short.lines().count() < format!("{big:#}").lines().count());
}

/// What this machine looks like, whichever way it was found.
#[test]
fn detect_finds_every_available_core_once() {
    let t = Topology::detect();
    let real = available_cores();
    assert!(t.num_packages() >= 1 && t.num_cores() >= 1);
    let mut pus: Vec<usize> = (0..t.num_cores())
        .flat_map(|c| t.core_pus(c).to_vec())
        .collect();
    pus.sort_unstable();
    assert_eq!(pus, real, "every available PU in exactly one core\n{t}");
    let leaves: BTreeSet<usize> = t.leaves().iter().map(|l| l.os_index).collect();
    assert_eq!(leaves.len(), t.num_cores(), "one leaf per core");
    #[cfg(not(feature = "hwloc"))]
    if Path::new("/sys/devices/system/cpu/cpu0/topology/physical_package_id").exists() {
        assert_eq!(t.source(), Source::Sysfs);
    }
}

/// With the feature `hwloc`: detection goes through hwloc and agrees with sysfs (where the
/// whole machine is available), and teams bind through it.
#[cfg(feature = "hwloc")]
#[test]
fn hwloc_detects_this_machine() {
    let t = Topology::detect();
    assert_eq!(t.source(), Source::Hwloc, "{t}");
    assert!(t.num_packages() >= 1 && t.num_l3_groups() >= 1 && t.num_cores() >= 1);
    eprintln!("{t}");
    if let Some(s) = Topology::from_sysfs(Path::new("/sys/devices/system")) {
        let os =
            |t: &Topology| -> BTreeSet<usize> { t.leaves().iter().map(|l| l.os_index).collect() };
        if os(&s) == os(&t) {
            assert_eq!(
                (
                    s.num_packages(),
                    s.num_numa_nodes(),
                    s.num_l3_groups(),
                    s.num_cores()
                ),
                (
                    t.num_packages(),
                    t.num_numa_nodes(),
                    t.num_l3_groups(),
                    t.num_cores()
                )
            );
            assert_eq!(s.leaves(), t.leaves());
        }
    }
    let team = Team::builder().pinning(Pinning::Spread).build().unwrap();
    #[cfg(target_os = "linux")]
    {
        let masks = team.run(|_| current_mask()).unwrap();
        for (r, mask) in masks.iter().enumerate() {
            assert_eq!(mask, &vec![team.cores()[r].unwrap()], "rank {r}");
        }
    }
}

/// The calling thread's affinity mask, ascending.
#[cfg(all(feature = "hwloc", target_os = "linux"))]
fn current_mask() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data for which all-zero is valid; sched_getaffinity writes at
    // most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let rc = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        assert_eq!(rc, 0);
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Shapes of 1–4 packages of 1–3 L3 groups of 1–5 cores.
fn shapes() -> impl Strategy<Value = Vec<Vec<usize>>> {
    proptest::collection::vec(proptest::collection::vec(1usize..=5, 1..=3), 1..=4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// On any shape: compact is the topology order; spread gives distinct cores to up to n
    /// ranks (all of them to n), deals the packages round-robin (a package with a free core
    /// is never two ranks behind another) and wraps after n; socket:N stays in package N and
    /// covers it; a core list is followed.
    #[test]
    fn placements_on_any_shape(groups in shapes(), extra in 0usize..7) {
        let t = Topology::synthetic_groups(groups.clone()).unwrap();
        let n = t.leaves().len();
        let p = n + extra;
        let compact = t.place(&Pinning::Compact, p).unwrap();
        for (r, l) in compact.iter().enumerate() {
            prop_assert_eq!(l.unwrap(), t.leaves()[r % n]);
        }
        let spread: Vec<Location> = t.place(&Pinning::Spread, p).unwrap().into_iter().map(Option::unwrap).collect();
        let first: BTreeSet<usize> = spread[..n].iter().map(|l| l.core).collect();
        prop_assert_eq!(first.len(), n, "spread's first n ranks cover every core");
        for r in n..p {
            prop_assert_eq!(spread[r], spread[r - n]);
        }
        let size: Vec<usize> = groups.iter().map(|g| g.iter().sum()).collect();
        for k in 1..=n {
            let fewer: Vec<Location> = t.place(&Pinning::Spread, k).unwrap().into_iter().map(Option::unwrap).collect();
            let distinct: BTreeSet<usize> = fewer.iter().map(|l| l.core).collect();
            prop_assert_eq!(distinct.len(), k);
            let mut count = vec![0usize; groups.len()];
            for l in &fewer {
                count[l.package] += 1;
            }
            let most = *count.iter().max().unwrap();
            for (q, &c) in count.iter().enumerate() {
                prop_assert!(c == size[q] || c + 1 >= most, "k = {}, counts {:?}", k, count);
            }
        }
        for (s, &len) in size.iter().enumerate() {
            let mine = t.place(&Pinning::Socket(s), len).unwrap();
            let cores: BTreeSet<usize> = mine.iter().map(|l| l.unwrap().core).collect();
            let want: BTreeSet<usize> = t.package_leaves(s).map(|l| l.core).collect();
            prop_assert_eq!(cores, want);
        }
        prop_assert!(t.place(&Pinning::Socket(groups.len()), 1).is_err());
        let list = vec![t.leaves()[n - 1].os_index, t.leaves()[0].os_index];
        let listed = t.place(&Pinning::Cores(list.clone()), p).unwrap();
        for (r, l) in listed.iter().enumerate() {
            prop_assert_eq!(l.unwrap().os_index, list[r % 2]);
        }
    }
}
