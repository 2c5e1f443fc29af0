//! Which schedule a chosen algorithm runs: the split between the public algorithm enums (one
//! per collective, with `Auto`, the single-copy and the hierarchical choices) and the
//! schedules of `algorithms`, which know nothing of choices.
//!
//! A *flat* algorithm is one that runs on the communicator itself: a schedule over the
//! transport ([`Flat::Schedule`]) or the single-copy collective on shared memory
//! ([`Flat::Direct`]). `Auto`'s decisions are flat ([`Decision`]); the hierarchical choices
//! compose flat ones on sub-communicators. Scan and barrier have schedules only.

use super::ids::Choice;
use super::{
    Algorithm, Allgather, Alltoall, Barrier, Block, Broadcast, Gather, Reduce, ReduceScatter, Scan,
    Scatter,
};
use crate::algorithms::gather::{Allgathering, Gathering, Scattering};
use crate::algorithms::{allreduce, alltoall, barrier, broadcast, reduce, reduce_scatter, scan};

/// A flat algorithm: a schedule of `algorithms` over the transport, or single copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flat<S> {
    /// A schedule over the transport: the same code between threads, between MPI processes
    /// and in the simulator.
    Schedule(S),
    /// The single-copy collective through the shared address space (threads only).
    Direct,
}

/// What `Auto` decides for a collective: a flat algorithm (or, for scan and barrier, a
/// schedule), which converts to and from the collective's public enum, whose ids the decision
/// tables, the tags and the call check carry.
pub(crate) trait Decision: Copy {
    /// The collective's public algorithm enum.
    type Alg: Choice;
    /// The decision that `alg` is, if it is flat.
    fn of(alg: Self::Alg) -> Option<Self>;
    /// The public value of this decision (blocks `Auto`).
    fn alg(self) -> Self::Alg;
}

/// Implements [`Decision`] for `Flat<$s>` of the public enum `$alg`, given the public value of
/// each schedule (blocks `Auto`) and the schedule of each public flat value.
macro_rules! flat_decision {
    ($alg:ident, $s:ty, $(($pat:pat, $sched:path, $val:expr)),* $(,)?) => {
        impl $alg {
            /// The flat algorithm this is: its schedule, or `Direct`; `None` for `Auto`, MPI's
            /// own collective and the hierarchical ones.
            pub(crate) fn flat(self) -> Option<Flat<$s>> {
                match self {
                    $alg::Direct => Some(Flat::Direct),
                    $($pat => Some(Flat::Schedule($sched)),)*
                    _ => None,
                }
            }
        }

        impl Decision for Flat<$s> {
            type Alg = $alg;
            fn of(alg: $alg) -> Option<Self> {
                alg.flat()
            }
            fn alg(self) -> $alg {
                match self {
                    Flat::Direct => $alg::Direct,
                    $(Flat::Schedule($sched) => $val,)*
                }
            }
        }
    };
}

flat_decision!(
    Algorithm,
    allreduce::Schedule,
    (
        Algorithm::Linear,
        allreduce::Schedule::Linear,
        Algorithm::Linear
    ),
    (
        Algorithm::Chain { .. },
        allreduce::Schedule::Chain,
        Algorithm::Chain { block: Block::Auto }
    ),
    (
        Algorithm::Binomial,
        allreduce::Schedule::Binomial,
        Algorithm::Binomial
    ),
    (
        Algorithm::RecursiveDoubling,
        allreduce::Schedule::RecursiveDoubling,
        Algorithm::RecursiveDoubling
    ),
    (
        Algorithm::Rabenseifner,
        allreduce::Schedule::Rabenseifner,
        Algorithm::Rabenseifner
    ),
    (
        Algorithm::Ring { .. },
        allreduce::Schedule::Ring,
        Algorithm::Ring { block: Block::Auto }
    ),
    (
        Algorithm::PipelinedTree { .. },
        allreduce::Schedule::PipelinedTree,
        Algorithm::PipelinedTree { block: Block::Auto }
    ),
    (
        Algorithm::DualRoot { .. },
        allreduce::Schedule::DualRoot,
        Algorithm::DualRoot { block: Block::Auto }
    ),
    (
        Algorithm::TwoTree { .. },
        allreduce::Schedule::TwoTree,
        Algorithm::TwoTree { block: Block::Auto }
    ),
);

flat_decision!(
    Broadcast,
    broadcast::Schedule,
    (
        Broadcast::Binomial,
        broadcast::Schedule::Binomial,
        Broadcast::Binomial
    ),
    (
        Broadcast::PipelinedTree { .. },
        broadcast::Schedule::PipelinedTree,
        Broadcast::PipelinedTree { block: Block::Auto }
    ),
    (
        Broadcast::ScatterAllgather,
        broadcast::Schedule::ScatterAllgather,
        Broadcast::ScatterAllgather
    ),
);

flat_decision!(
    Reduce,
    reduce::Schedule,
    (
        Reduce::Binomial,
        reduce::Schedule::Binomial,
        Reduce::Binomial
    ),
    (Reduce::Linear, reduce::Schedule::Linear, Reduce::Linear),
    (
        Reduce::PipelinedTree { .. },
        reduce::Schedule::PipelinedTree,
        Reduce::PipelinedTree { block: Block::Auto }
    ),
);

flat_decision!(
    Gather,
    Gathering,
    (Gather::Linear, Gathering::Linear, Gather::Linear),
    (Gather::Binomial, Gathering::Binomial, Gather::Binomial),
);

flat_decision!(
    Scatter,
    Scattering,
    (Scatter::Linear, Scattering::Linear, Scatter::Linear),
    (Scatter::Binomial, Scattering::Binomial, Scatter::Binomial),
);

flat_decision!(
    Allgather,
    Allgathering,
    (Allgather::Ring, Allgathering::Ring, Allgather::Ring),
    (
        Allgather::RecursiveDoubling,
        Allgathering::RecursiveDoubling,
        Allgather::RecursiveDoubling
    ),
    (Allgather::Bruck, Allgathering::Bruck, Allgather::Bruck),
);

flat_decision!(
    Alltoall,
    alltoall::Schedule,
    (
        Alltoall::Pairwise,
        alltoall::Schedule::Pairwise,
        Alltoall::Pairwise
    ),
    (Alltoall::Bruck, alltoall::Schedule::Bruck, Alltoall::Bruck),
);

flat_decision!(
    ReduceScatter,
    reduce_scatter::Schedule,
    (
        ReduceScatter::Ring,
        reduce_scatter::Schedule::Ring,
        ReduceScatter::Ring
    ),
    (
        ReduceScatter::RecursiveHalving,
        reduce_scatter::Schedule::RecursiveHalving,
        ReduceScatter::RecursiveHalving
    ),
);

impl Scan {
    /// The schedule this is; `None` for `Auto`.
    pub(crate) fn schedule(self) -> Option<scan::Schedule> {
        match self {
            Scan::Auto => None,
            Scan::RecursiveDoubling => Some(scan::Schedule::RecursiveDoubling),
            Scan::PipelinedTree { .. } => Some(scan::Schedule::PipelinedTree),
        }
    }
}

impl Decision for scan::Schedule {
    type Alg = Scan;
    fn of(alg: Scan) -> Option<Self> {
        alg.schedule()
    }
    fn alg(self) -> Scan {
        match self {
            scan::Schedule::RecursiveDoubling => Scan::RecursiveDoubling,
            scan::Schedule::PipelinedTree => Scan::PipelinedTree { block: Block::Auto },
        }
    }
}

impl Barrier {
    /// The schedule this is; `None` for `Auto` and the hierarchical ones.
    pub(crate) fn schedule(self) -> Option<barrier::Schedule> {
        match self {
            Barrier::Dissemination => Some(barrier::Schedule::Dissemination),
            Barrier::Tree => Some(barrier::Schedule::Tree),
            Barrier::Auto | Barrier::Hierarchical | Barrier::HierarchicalDirect => None,
        }
    }
}

impl Decision for barrier::Schedule {
    type Alg = Barrier;
    fn of(alg: Barrier) -> Option<Self> {
        alg.schedule()
    }
    fn alg(self) -> Barrier {
        match self {
            barrier::Schedule::Dissemination => Barrier::Dissemination,
            barrier::Schedule::Tree => Barrier::Tree,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Decision, Flat};
    use crate::select::{Algorithm, Allgather, Alltoall, Barrier, Broadcast, Gather};
    use crate::select::{Reduce, ReduceScatter, Scan, Scatter};

    /// Every flat public value round-trips through its decision (blocks aside: the ids
    /// agree); `Auto` has none.
    macro_rules! round_trip {
        ($ty:ident, $of:ident) => {
            for a in $ty::ALL {
                if let Some(d) = a.$of() {
                    assert_eq!(d.alg().id(), a.id(), "{a:?}");
                }
            }
            assert!($ty::Auto.$of().is_none());
        };
    }

    #[test]
    fn decisions_round_trip() {
        round_trip!(Algorithm, flat);
        round_trip!(Broadcast, flat);
        round_trip!(Reduce, flat);
        round_trip!(Gather, flat);
        round_trip!(Scatter, flat);
        round_trip!(Allgather, flat);
        round_trip!(Alltoall, flat);
        round_trip!(ReduceScatter, flat);
        round_trip!(Scan, schedule);
        round_trip!(Barrier, schedule);
        assert_eq!(Algorithm::Native.flat(), None);
        assert_eq!(Algorithm::HierarchicalDirect.flat(), None);
        assert_eq!(Algorithm::Direct.flat(), Some(Flat::Direct));
    }
}
