//! The results as files, groups and text: the run's description ([`RunInfo`]), the grouping
//! of records into comparable sets ([`groups`]), the "% of limit" column, the CSV and JSON
//! files (`files.rs`), the printed table, summary, table against the peers and hierarchy's
//! overhead (`table.rs`, `summary.rs`, `peers.rs`, `hierarchy.rs`, over the text grids of `grid.rs`), and the checks over a run
//! (`checks/`).

pub mod checks;
mod files;
pub mod grid;
mod hierarchy;
mod peers;
mod summary;
mod table;
#[cfg(test)]
mod testing;

pub use files::{create_parent, default_dir, read_json, write_csv, write_json};
pub use hierarchy::{hierarchy_ratios, is_hierarchical, print_hierarchy, HierRatio, HIER_GOAL};
pub use peers::{peer_family, peers_markdown, print_peers};
pub use summary::{print_summary, summary_markdown};
pub use table::{best, by_size, print_table};

use crate::domain::Machine;
use crate::record::{Record, Source};
use serde::{Deserialize, Serialize};

/// What the JSON file says about the run besides its records: the command and a description of
/// the machine, with no date or host name, so that two runs on one machine compare equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The command line.
    pub command: String,
    /// The version of corecoll and of this benchmark (one for the whole workspace).
    pub version: String,
    /// Cores available to the process (one per core: SMT siblings are not counted).
    pub cores: usize,
    /// Sockets (packages) those cores are on, from `Topology::detect` (1 when the machine
    /// does not say).
    #[serde(default)]
    pub sockets: usize,
    /// The CPU model from /proc/cpuinfo, empty where it is not readable.
    #[serde(default)]
    pub cpu: String,
    /// Operating system and architecture, e.g. `linux x86_64`.
    #[serde(default)]
    pub os: String,
    /// `release` or `debug` (a debug build's times say little).
    #[serde(default)]
    pub build: String,
    /// What the binary was built with that changes what it measures: the cargo feature `mpi`
    /// (the MPI baseline rows) and `openmp` when the build script compiled the OpenMP peer,
    /// comma-separated.
    #[serde(default)]
    pub features: String,
    /// The machine the ranks were placed on: `detected`, or the described machine of
    /// `--machine`, e.g. `2x2x4 (synthetic: 2 packages, 4 L3 groups, 16 cores)`, whose cores
    /// wrap onto the `cores` real ones. Empty in result files without the field.
    #[serde(default)]
    pub machine: String,
}

impl RunInfo {
    /// The description of this run of this process on this machine, the ranks placed on
    /// `machine` (the described one of `--machine`) or, without one, on the detected machine.
    pub fn of_this_run(machine: Option<&Machine>) -> RunInfo {
        RunInfo {
            command: std::env::args().collect::<Vec<_>>().join(" "),
            version: env!("CARGO_PKG_VERSION").into(),
            cores: crate::placement::available_cores().len(),
            sockets: crate::placement::sockets().len(),
            cpu: this_cpu(),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            build: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .into(),
            features: [
                (cfg!(feature = "mpi"), "mpi"),
                (cfg!(corecoll_openmp), "openmp"),
            ]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, name)| *name)
            .collect::<Vec<_>>()
            .join(","),
            machine: machine.map_or_else(|| "detected".into(), |m| m.describe()),
        }
    }

    /// The line that heads the printed results and the markdown summary, e.g. `machine:
    /// 2x2x4 (synthetic: 2 packages, 4 L3 groups, 16 cores) on 2 cores, 1 socket`.
    pub fn header(&self) -> String {
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let real = format!(
            "{}, {}",
            plural(self.cores, "core"),
            plural(self.sockets, "socket")
        );
        match self.machine.as_str() {
            "" | "detected" => format!("machine: detected, {real}"),
            m => format!("machine: {m} on {real}"),
        }
    }
}

/// This machine's CPU model, from /proc/cpuinfo; empty where it is not readable.
pub fn this_cpu() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| cpu_model(&s))
        .unwrap_or_default()
}

/// The CPU model named in the text of /proc/cpuinfo: the first `model name` (x86), else
/// `Processor` or `cpu model` (some Arm and MIPS kernels); empty when none is there.
fn cpu_model(cpuinfo: &str) -> String {
    for key in ["model name", "Processor", "cpu model"] {
        let found = cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        });
        if let Some(model) = found {
            return model;
        }
    }
    String::new()
}

/// What makes records comparable: every field that says what was run, except the size and the
/// algorithm. The table and the summary have one section per key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupKey {
    /// The collective.
    pub collective: String,
    /// `all`, `socket N` or `processes`.
    pub scope: String,
    /// The placement.
    pub placement: String,
    /// Ranks.
    pub ranks: usize,
    /// Element type.
    pub dtype: String,
    /// Reduction op (`-` for none).
    pub op: String,
    /// `warm` or `cold`.
    pub cache: String,
}

impl GroupKey {
    /// The key of `r`.
    pub fn of(r: &Record) -> GroupKey {
        GroupKey {
            collective: r.collective.clone(),
            scope: r.scope.clone(),
            placement: r.placement.clone(),
            ranks: r.ranks,
            dtype: r.dtype.clone(),
            op: r.op.clone(),
            cache: r.cache.clone(),
        }
    }

    /// Whether `self` and `other` differ at most in scope and placement.
    fn same_run_but_where(&self, other: &GroupKey) -> bool {
        (
            &self.collective,
            self.ranks,
            &self.dtype,
            &self.op,
            &self.cache,
        ) == (
            &other.collective,
            other.ranks,
            &other.dtype,
            &other.op,
            &other.cache,
        )
    }

    /// The heading line of the group, e.g. `allreduce · f64 sum · 2 ranks · all, compact ·
    /// warm`.
    pub fn heading(&self) -> String {
        let what = if self.op == "-" {
            self.dtype.clone()
        } else {
            format!("{} {}", self.dtype, self.op)
        };
        let ranks = if self.ranks == 1 { "rank" } else { "ranks" };
        format!(
            "{} · {what} · {} {ranks} · {}, {} · {}",
            self.collective, self.ranks, self.scope, self.placement, self.cache
        )
    }
}

/// A set of comparable records: their key and their indices in the record slice, ordered by
/// size and, within a size, as the records came.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// What the records have in common.
    pub key: GroupKey,
    /// Indices into the records.
    pub rows: Vec<usize>,
}

/// The groups of `records`, in order of first appearance.
///
/// A record belongs to the group of its [`GroupKey`], with one exception: a record of the MPI
/// library (source `mpi`) whose key no record of this binary's own threads has joins the group
/// that differs from it only in scope and placement (the one of scope `all` if there are
/// several), since MPI's processes are placed by `mpirun` and its rows are there to be compared
/// with the threads' rows. Without such a group it forms its own.
pub fn groups(records: &[Record]) -> Vec<Group> {
    fn add(out: &mut Vec<Group>, key: GroupKey, i: usize) {
        match out.iter_mut().find(|g| g.key == key) {
            Some(g) => g.rows.push(i),
            None => out.push(Group { key, rows: vec![i] }),
        }
    }
    let mut out: Vec<Group> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        if r.source != Source::Mpi {
            add(&mut out, GroupKey::of(r), i);
        }
    }
    let threads = out.len();
    for (i, r) in records.iter().enumerate() {
        if r.source != Source::Mpi {
            continue;
        }
        let own = GroupKey::of(r);
        let host = out[..threads]
            .iter()
            .position(|g| g.key == own)
            .or_else(|| {
                let similar = |g: &&Group| g.key.same_run_but_where(&own);
                let all = out[..threads]
                    .iter()
                    .position(|g| similar(&g) && g.key.scope == "all");
                all.or_else(|| out[..threads].iter().position(|g| similar(&g)))
            });
        match host {
            Some(h) => out[h].rows.push(i),
            None => add(&mut out, own, i),
        }
    }
    for g in &mut out {
        // Stable: within a size the records keep their order.
        g.rows.sort_by_key(|&i| records[i].bytes);
    }
    out
}

/// Fills each record's `limit_pct`: the median of the `limit` row of its group (see
/// [`groups`]) and size, over the record's median, × 100. The limit row itself gets 100.
/// Records without a limit row, or where either median is not a positive number (a failed
/// cell), get `None`.
pub fn fill_limit_pct(records: &mut [Record]) {
    for g in groups(records) {
        for &i in &g.rows {
            let r = &records[i];
            let limit = g
                .rows
                .iter()
                .map(|&j| &records[j])
                .find(|l| l.algorithm == "limit" && l.bytes == r.bytes);
            let pct = limit.and_then(|l| {
                let ok = |t: f64| t.is_finite() && t > 0.0;
                (ok(l.median_us) && ok(r.median_us)).then(|| l.median_us / r.median_us * 100.0)
            });
            records[i].limit_pct = pct;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::testing::rec;

    #[test]
    fn cpu_model_from_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: X\nmodel name\t: Fast CPU 3000\n";
        assert_eq!(cpu_model(x86), "Fast CPU 3000");
        let arm = "Processor\t: ARMv7 rev 4 (v7l)\nprocessor\t: 0\n";
        assert_eq!(cpu_model(arm), "ARMv7 rev 4 (v7l)");
        assert_eq!(cpu_model("processor : 0\n"), "");
        let info = RunInfo::of_this_run(None);
        assert!(info.cores >= 1 && info.sockets >= 1);
        assert!(info.header().starts_with("machine: detected, "));
        let m = crate::domain::parse_machine("2x2x4").unwrap();
        let info = RunInfo {
            cores: 2,
            sockets: 1,
            ..RunInfo::of_this_run(Some(&m))
        };
        assert_eq!(
            info.header(),
            "machine: 2x2x4 (synthetic: 2 packages, 4 L3 groups, 16 cores) on 2 cores, 1 socket"
        );
    }

    #[test]
    fn limit_pct_within_groups() {
        let mut v = vec![
            rec("limit", 8, 1.0),
            rec("ring", 8, 4.0),
            rec("ring", 64, 4.0), // no limit at 64 B
            rec("direct", 8, 2.0),
            rec("limit", 8, 3.0), // another group: 4 ranks
            rec("ring", 8, 6.0),
            rec("ring", 8, 0.5), // another group: cold
            rec("ring", 8, f64::NAN),
            rec("mpi", 8, 10.0), // processes: joins the 2-rank group
        ];
        for r in &mut v[4..6] {
            r.ranks = 4;
        }
        v[6].cache = "cold".into();
        v[8].scope = "processes".into();
        v[8].placement = "mpirun".into();
        v[1].limit_pct = Some(1.0); // overwritten
        fill_limit_pct(&mut v);
        let pct: Vec<Option<f64>> = v.iter().map(|r| r.limit_pct).collect();
        assert_eq!(
            pct,
            [
                Some(100.0),
                Some(25.0),
                None,
                Some(50.0),
                Some(100.0),
                Some(50.0),
                None,
                None,
                Some(10.0)
            ]
        );
        let mut failed_limit = vec![rec("limit", 8, f64::NAN), rec("ring", 8, 1.0)];
        fill_limit_pct(&mut failed_limit);
        assert_eq!(failed_limit[0].limit_pct, None);
        assert_eq!(failed_limit[1].limit_pct, None);
    }

    #[test]
    fn groups_by_key_then_size() {
        let mut v = vec![
            rec("ring", 64, 1.0),
            rec("limit", 64, 1.0),
            rec("ring", 8, 1.0),
            rec("ring", 8, 1.0),
            rec("mpi", 8, 1.0),
            rec("mpi", 8, 1.0),
        ];
        v[3].scope = "socket 0".into();
        v[4].scope = "processes".into();
        v[5].scope = "processes".into();
        v[5].ranks = 3;
        let g = groups(&v);
        assert_eq!(g.len(), 3);
        // The MPI row with 2 ranks joins scope `all`, not `socket 0`; the 3-rank one has no
        // group of threads to join.
        assert_eq!(g[0].rows, vec![2, 4, 0, 1]);
        assert_eq!(
            (g[1].key.scope.as_str(), g[1].rows.clone()),
            ("socket 0", vec![3])
        );
        assert_eq!(
            (g[2].key.scope.as_str(), g[2].rows.clone()),
            ("processes", vec![5])
        );
        assert_eq!(
            g[0].key.heading(),
            "allreduce · f64 sum · 2 ranks · all, compact · warm"
        );
    }
}
