//! The one list of the crate's collectives: [`Collective`]. The message tags, the decision
//! tables, the simulator and the benchmark all name a collective by it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A collective operation of [`Comm`](crate::Comm), as `Auto`'s tables, the simulator, the
/// benchmark and error messages name it. A collective and its `v` form (`gather` and
/// `gatherv`, …) are one entry; so are `scan` and `exscan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Collective {
    /// `Comm::allreduce`.
    Allreduce,
    /// `Comm::broadcast`.
    Broadcast,
    /// `Comm::reduce`.
    Reduce,
    /// `Comm::scan` and `Comm::exscan`.
    Scan,
    /// `Comm::gather` and `Comm::gatherv`.
    Gather,
    /// `Comm::scatter` and `Comm::scatterv`.
    Scatter,
    /// `Comm::allgather` and `Comm::allgatherv`.
    Allgather,
    /// `Comm::alltoall` and `Comm::alltoallv`.
    Alltoall,
    /// `Comm::reduce_scatter_block`.
    ReduceScatter,
    /// `Comm::barrier`.
    Barrier,
}

impl Collective {
    /// Every collective, in the order of the enum.
    pub const ALL: [Collective; 10] = [
        Collective::Allreduce,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::Scan,
        Collective::Gather,
        Collective::Scatter,
        Collective::Allgather,
        Collective::Alltoall,
        Collective::ReduceScatter,
        Collective::Barrier,
    ];

    /// The name, as the benchmark's `--collective`, the decision tables and the environment
    /// variables spell it: `allreduce`, …, `reduce-scatter`, `barrier`.
    pub fn name(self) -> &'static str {
        match self {
            Collective::Allreduce => "allreduce",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::Scan => "scan",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
            Collective::Allgather => "allgather",
            Collective::Alltoall => "alltoall",
            Collective::ReduceScatter => "reduce-scatter",
            Collective::Barrier => "barrier",
        }
    }

    /// The collective's place in [`Collective::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The collective called `name` ([`Collective::name`]'s spelling).
    pub fn from_name(name: &str) -> Option<Collective> {
        Collective::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The environment variable that overrides this collective's decision tables:
    /// `CORECOLL_` and the name in capitals, `-` as `_` (`CORECOLL_ALLREDUCE`, …,
    /// `CORECOLL_REDUCE_SCATTER`).
    pub fn env_var(self) -> &'static str {
        match self {
            Collective::Allreduce => "CORECOLL_ALLREDUCE",
            Collective::Broadcast => "CORECOLL_BROADCAST",
            Collective::Reduce => "CORECOLL_REDUCE",
            Collective::Scan => "CORECOLL_SCAN",
            Collective::Gather => "CORECOLL_GATHER",
            Collective::Scatter => "CORECOLL_SCATTER",
            Collective::Allgather => "CORECOLL_ALLGATHER",
            Collective::Alltoall => "CORECOLL_ALLTOALL",
            Collective::ReduceScatter => "CORECOLL_REDUCE_SCATTER",
            Collective::Barrier => "CORECOLL_BARRIER",
        }
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Collective {
    type Err = String;

    /// Parses [`Collective::name`]'s spelling.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Collective::from_name(s).ok_or_else(|| {
            let names: Vec<&str> = Collective::ALL.iter().map(|c| c.name()).collect();
            format!("unknown collective {s:?}; one of {}", names.join(", "))
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Collective;

    #[test]
    fn names_round_trip() {
        for (i, c) in Collective::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(c.name().parse::<Collective>(), Ok(c));
            let var = format!("CORECOLL_{}", c.name().to_uppercase().replace('-', "_"));
            assert_eq!(c.env_var(), var);
        }
        assert!("allgatherv".parse::<Collective>().is_err());
    }
}
