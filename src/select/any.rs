//! An algorithm of any collective ([`Any`]): the collective together with its algorithm, for
//! code that handles every collective alike (the simulator, the benchmark).

use super::flat::Flat;
use super::{
    Algorithm, Allgather, Alltoall, Barrier, Broadcast, Gather, Reduce, ReduceScatter, Scan,
    Scatter,
};
use crate::collective::Collective;
use std::fmt;

/// One algorithm of one of the collectives of [`Collective`]: `Any::Allreduce(Algorithm::Ring
/// { .. })`, `Any::Barrier(Barrier::Tree)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Any {
    /// An allreduce algorithm.
    Allreduce(Algorithm),
    /// A broadcast algorithm.
    Broadcast(Broadcast),
    /// A reduce algorithm.
    Reduce(Reduce),
    /// A scan (and exscan) algorithm.
    Scan(Scan),
    /// A gather algorithm.
    Gather(Gather),
    /// A scatter algorithm.
    Scatter(Scatter),
    /// An allgather algorithm.
    Allgather(Allgather),
    /// An all-to-all algorithm.
    Alltoall(Alltoall),
    /// A reduce-scatter algorithm.
    ReduceScatter(ReduceScatter),
    /// A barrier algorithm.
    Barrier(Barrier),
}

impl Any {
    /// The collective.
    pub fn collective(&self) -> Collective {
        match self {
            Any::Allreduce(_) => Collective::Allreduce,
            Any::Broadcast(_) => Collective::Broadcast,
            Any::Reduce(_) => Collective::Reduce,
            Any::Scan(_) => Collective::Scan,
            Any::Gather(_) => Collective::Gather,
            Any::Scatter(_) => Collective::Scatter,
            Any::Allgather(_) => Collective::Allgather,
            Any::Alltoall(_) => Collective::Alltoall,
            Any::ReduceScatter(_) => Collective::ReduceScatter,
            Any::Barrier(_) => Collective::Barrier,
        }
    }

    /// The algorithm's name (`dual-root`), as its enum's `name` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Any::Allreduce(a) => a.name(),
            Any::Broadcast(a) => a.name(),
            Any::Reduce(a) => a.name(),
            Any::Scan(a) => a.name(),
            Any::Gather(a) => a.name(),
            Any::Scatter(a) => a.name(),
            Any::Allgather(a) => a.name(),
            Any::Alltoall(a) => a.name(),
            Any::ReduceScatter(a) => a.name(),
            Any::Barrier(a) => a.name(),
        }
    }

    /// Every algorithm of `collective` (blocks `Auto`), `Auto` first.
    pub fn of(collective: Collective) -> Vec<Any> {
        match collective {
            Collective::Allreduce => Algorithm::ALL.map(Any::Allreduce).to_vec(),
            Collective::Broadcast => Broadcast::ALL.map(Any::Broadcast).to_vec(),
            Collective::Reduce => Reduce::ALL.map(Any::Reduce).to_vec(),
            Collective::Scan => Scan::ALL.map(Any::Scan).to_vec(),
            Collective::Gather => Gather::ALL.map(Any::Gather).to_vec(),
            Collective::Scatter => Scatter::ALL.map(Any::Scatter).to_vec(),
            Collective::Allgather => Allgather::ALL.map(Any::Allgather).to_vec(),
            Collective::Alltoall => Alltoall::ALL.map(Any::Alltoall).to_vec(),
            Collective::ReduceScatter => ReduceScatter::ALL.map(Any::ReduceScatter).to_vec(),
            Collective::Barrier => Barrier::ALL.map(Any::Barrier).to_vec(),
        }
    }

    /// Every algorithm of every collective, in the order of [`Collective::ALL`].
    pub fn all() -> Vec<Any> {
        Collective::ALL.into_iter().flat_map(Any::of).collect()
    }

    /// The algorithm of `collective` called `name` (blocks `Auto`), if there is one.
    pub fn named(collective: Collective, name: &str) -> Option<Any> {
        Any::of(collective).into_iter().find(|a| a.name() == name)
    }

    /// Whether it is a schedule over a transport (not `Auto`, not MPI's own collective, not a
    /// single-copy or hierarchical algorithm): what runs alike between threads, between MPI
    /// processes and in the simulator.
    pub fn is_schedule(&self) -> bool {
        fn schedule<S>(flat: Option<Flat<S>>) -> bool {
            matches!(flat, Some(Flat::Schedule(_)))
        }
        match *self {
            Any::Allreduce(a) => schedule(a.flat()),
            Any::Broadcast(a) => schedule(a.flat()),
            Any::Reduce(a) => schedule(a.flat()),
            Any::Scan(a) => a.schedule().is_some(),
            Any::Gather(a) => schedule(a.flat()),
            Any::Scatter(a) => schedule(a.flat()),
            Any::Allgather(a) => schedule(a.flat()),
            Any::Alltoall(a) => schedule(a.flat()),
            Any::ReduceScatter(a) => schedule(a.flat()),
            Any::Barrier(a) => a.schedule().is_some(),
        }
    }
}

impl fmt::Display for Any {
    /// `allreduce/dual-root`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.collective(), self.name())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Any;
    use crate::collective::Collective;

    #[test]
    fn every_algorithm_once_by_name() {
        let all = Any::all();
        for a in &all {
            assert_eq!(Any::named(a.collective(), a.name()), Some(*a), "{a}");
        }
        for c in Collective::ALL {
            assert_eq!(Any::of(c)[0].name(), "auto");
            assert!(!Any::of(c)[0].is_schedule());
        }
        assert_eq!(
            Any::Allreduce(crate::select::Algorithm::Linear).to_string(),
            "allreduce/linear"
        );
        assert!(all.iter().any(Any::is_schedule));
    }
}
