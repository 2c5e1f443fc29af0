//! [`Level`]: the levels of the machine a message crosses (an L3 group, a package, the machine,
//! MPI, shared cores), their fallbacks and built-in constants, and the level a group of ranks
//! spans.

use crate::select::Costs;
use crate::topology::Location;
use serde::{Deserialize, Serialize};

/// A level of the machine that a message crosses, from the nearest to the farthest, and the
/// case of shared cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Two ranks, each on a core of its own, that share an L3 cache (one L3 group).
    L3,
    /// Two ranks on cores of one package (socket) but of different L3 groups.
    Package,
    /// Two ranks on cores of different packages of one machine.
    Machine,
    /// Two MPI processes (on one node here; over whatever transport MPI picks).
    Mpi,
    /// Ranks that share cores (more ranks than cores, or a passive wait policy): a message
    /// usually waits for its peer to be scheduled.
    Oversubscribed,
}

impl Level {
    /// Every level, in the order of the enum (and of the JSON).
    pub const ALL: [Level; 5] = [
        Level::L3,
        Level::Package,
        Level::Machine,
        Level::Mpi,
        Level::Oversubscribed,
    ];

    /// The level's name, as in the JSON: `l3`, `package`, `machine`, `mpi`, `oversubscribed`.
    pub fn name(self) -> &'static str {
        match self {
            Level::L3 => "l3",
            Level::Package => "package",
            Level::Machine => "machine",
            Level::Mpi => "mpi",
            Level::Oversubscribed => "oversubscribed",
        }
    }

    /// The levels this one falls back to when it is not measured, nearest first (see the
    /// [module documentation](super)).
    pub fn fallbacks(self) -> &'static [Level] {
        match self {
            Level::L3 => &[Level::Package, Level::Machine],
            Level::Package => &[Level::Machine, Level::L3],
            Level::Machine => &[Level::Package, Level::L3],
            Level::Mpi | Level::Oversubscribed => &[],
        }
    }

    /// The built-in constants of this level, used when neither it nor a fallback is measured.
    pub(crate) fn default_costs(self) -> Costs {
        match self {
            Level::L3 | Level::Package | Level::Machine => Costs::DEDICATED,
            Level::Mpi => Costs::MPI,
            Level::Oversubscribed => Costs::OVERSUBSCRIBED,
        }
    }

    /// The widest level a group of ranks with a core each spans, from their locations: `L3`
    /// if all share one L3 group (or there is at most one rank), `Package` if all share one
    /// package, else `Machine`. A rank whose location is unknown (not pinned) might be
    /// anywhere, so it makes the answer `Machine`.
    pub fn spanned(mut locations: impl Iterator<Item = Option<Location>>) -> Level {
        let Some(first) = locations.next() else {
            return Level::L3;
        };
        let Some(first) = first else {
            return Level::Machine;
        };
        let mut level = Level::L3;
        for loc in locations {
            match loc {
                None => return Level::Machine,
                Some(l) if l.package != first.package => return Level::Machine,
                Some(l) if l.l3 != first.l3 => level = Level::Package,
                Some(_) => {}
            }
        }
        level
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
