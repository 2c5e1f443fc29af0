//! The topology as a short text tree in the manner of hwloc's `lstopo-no-graphics`:
//!
//! ```text
//! Machine (sysfs): 1 package, 1 NUMA node, 1 L3 group, 2 cores
//!   Package L#0 (P#0)
//!     NUMANode L#0 (P#0)
//!     L3 L#0 (32MB)
//!       Core L#0 + PU L#0 (P#0)
//!       Core L#1 + PU L#1 (P#1)
//! ```
//!
//! `{}` condenses each L3 group of more than [`RUN`] cores to its first and last cores and
//! one line for those between; `{:#}` prints every core. `L#` numbers are logical indices
//! (machine-wide, from 0), `P#` operating-system indices.

use super::{Location, Source, Topology};
use std::fmt::{self, Write};

/// The longest run of cores printed in full in the condensed form.
const RUN: usize = 4;

/// `1 package` / `2 packages`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A cache size as lstopo prints it: `32MB`, `1024KB`.
fn bytes(b: u64) -> String {
    if b >= 1 << 30 && b.is_multiple_of(1 << 30) {
        format!("{}GB", b >> 30)
    } else if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{}MB", b >> 20)
    } else if b.is_multiple_of(1 << 10) {
        format!("{}KB", b >> 10)
    } else {
        format!("{b}B")
    }
}

/// A list of indices in the kernel's range form: `0-3,8`.
fn ranges(list: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < list.len() {
        let mut j = i;
        while j + 1 < list.len() && list[j + 1] == list[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j == i {
            let _ = write!(out, "{}", list[i]);
        } else {
            let _ = write!(out, "{}-{}", list[i], list[j]);
        }
        i = j + 1;
    }
    out
}

impl Topology {
    /// The header line: source, counts and, for a synthetic machine, its shape.
    fn header(&self) -> String {
        let what = match self.source {
            Source::Synthetic => format!("synthetic {}", self.shape),
            other => other.to_string(),
        };
        let mut s = format!("Machine ({what}): ");
        if self.source != Source::Flat {
            let _ = write!(
                s,
                "{}, {}, ",
                count(self.num_packages(), "package"),
                count(self.num_numa_nodes(), "NUMA node")
            );
            // Only groups that are caches; the stand-ins for packages say nothing.
            let caches = self.l3.iter().filter(|g| g.cache).count();
            if caches > 0 {
                let _ = write!(s, "{}, ", count(caches, "L3 group"));
            }
        }
        s.push_str(&count(self.num_cores(), "core"));
        let pus: usize = self.pus.iter().map(Vec::len).sum();
        if pus != self.num_cores() {
            let _ = write!(s, ", {}", count(pus, "PU"));
        }
        if self.leaves.len() != self.num_cores() {
            let _ = write!(s, ", {} leaves", self.leaves.len());
        }
        if self.source == Source::Flat {
            s.push_str("; grouping unknown");
        }
        s
    }

    /// The lines of one core (its PUs numbered from `pu`), at `indent`.
    fn core_lines(&self, out: &mut String, indent: &str, core: usize, pu: usize) {
        match self.core_pus(core) {
            [one] => {
                let _ = writeln!(out, "{indent}Core L#{core} + PU L#{pu} (P#{one})");
            }
            many => {
                let _ = writeln!(out, "{indent}Core L#{core}");
                for (i, os) in many.iter().enumerate() {
                    let _ = writeln!(out, "{indent}  PU L#{} (P#{os})", pu + i);
                }
            }
        }
    }

    /// The lines of a run of cores (one L3 group's), condensed unless `full`.
    fn cores_lines(&self, out: &mut String, indent: &str, cores: &[usize], full: bool) {
        // Logical index of each core's first PU.
        let first_pu = |core: usize| -> usize { self.pus[..core].iter().map(Vec::len).sum() };
        if full || cores.len() <= RUN {
            for &c in cores {
                self.core_lines(out, indent, c, first_pu(c));
            }
            return;
        }
        let (first, middle, last) = (
            &cores[..2],
            &cores[2..cores.len() - 1],
            cores[cores.len() - 1],
        );
        for &c in first {
            self.core_lines(out, indent, c, first_pu(c));
        }
        let os: Vec<usize> = middle
            .iter()
            .flat_map(|&c| self.core_pus(c).iter().copied())
            .collect();
        let mut sorted = os.clone();
        sorted.sort_unstable();
        sorted.dedup();
        let _ = writeln!(
            out,
            "{indent}... {} (Core L#{}-{}, PUs P#{})",
            count(middle.len(), "more core"),
            middle[0],
            middle[middle.len() - 1],
            ranges(&sorted),
        );
        self.core_lines(out, indent, last, first_pu(last));
    }

    /// The whole tree, condensed unless `full`.
    fn tree(&self, full: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.header());
        // Distinct cores in leaf order (leaves repeat a core after `with_smt_siblings`).
        let mut cores: Vec<&Location> = Vec::new();
        for leaf in &self.leaves {
            if cores.last().is_none_or(|c| c.core != leaf.core) {
                cores.push(leaf);
            }
        }
        if self.source == Source::Flat {
            let ids: Vec<usize> = cores.iter().map(|c| c.core).collect();
            self.cores_lines(&mut out, "  ", &ids, full);
            return out;
        }
        for package in 0..self.num_packages() {
            let mine: Vec<&&Location> = cores.iter().filter(|c| c.package == package).collect();
            let _ = writeln!(
                out,
                "  Package L#{package} (P#{})",
                self.package_os[package]
            );
            let mut numa: Vec<usize> = mine.iter().map(|c| c.numa).collect();
            numa.sort_unstable();
            numa.dedup();
            for &n in &numa {
                let _ = write!(out, "    NUMANode L#{n} (P#{}", self.numa_os[n]);
                if numa.len() > 1 {
                    let of: Vec<usize> = mine
                        .iter()
                        .filter(|c| c.numa == n)
                        .map(|c| c.core)
                        .collect();
                    let _ = write!(out, ", cores L#{}", ranges(&of));
                }
                let _ = writeln!(out, ")");
            }
            let mut groups: Vec<usize> = mine.iter().map(|c| c.l3).collect();
            groups.dedup();
            for g in groups {
                let ids: Vec<usize> = mine.iter().filter(|c| c.l3 == g).map(|c| c.core).collect();
                if self.l3[g].cache {
                    let size = self.l3[g]
                        .bytes
                        .map_or(String::new(), |b| format!(" ({})", bytes(b)));
                    let _ = writeln!(out, "    L3 L#{g}{size}");
                    self.cores_lines(&mut out, "      ", &ids, full);
                } else {
                    self.cores_lines(&mut out, "    ", &ids, full);
                }
            }
        }
        out
    }
}

/// The tree as `lstopo-no-graphics` prints it, briefly: a header line (source and counts),
/// then packages, their NUMA nodes, L3 groups and cores with their PUs (`L#`: logical index,
/// `P#`: OS index). `{}` condenses an L3 group of more than four cores to its first two, one
/// line for those between and its last; `{:#}` lists every core.
impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tree(f.alternate()))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(ranges(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(ranges(&[5]), "5");
        assert_eq!(bytes(32 << 20), "32MB");
        assert_eq!(bytes(1536 << 10), "1536KB");
        assert_eq!(bytes(3 << 30), "3GB");
        assert_eq!(count(1, "core"), "1 core");
        assert_eq!(count(3, "core"), "3 cores");
    }

    #[test]
    fn condensed_and_full() {
        let t = Topology::synthetic(&[1, 1, 10]).unwrap();
        let short = t.to_string();
        assert!(short.contains("Core L#0 + PU L#0"), "{short}");
        assert!(short.contains("... 7 more cores (Core L#2-8"), "{short}");
        assert!(short.contains("Core L#9 + PU L#9"), "{short}");
        assert!(!short.contains("Core L#5 "), "{short}");
        let full = format!("{t:#}");
        assert!(full.contains("Core L#5 + PU L#5"), "{full}");
    }
}
