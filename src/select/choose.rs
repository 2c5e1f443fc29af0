//! `Auto`'s fixed rules (`choose_*`, [`prefer_hierarchy`]): what runs where no decision
//! table covers a call, and inside the hierarchical algorithms' stages.
//!
//! Apart from the enums because these are hand-made, measured fallbacks that the tuning
//! work's tables (module `tuning`) override; they change with measurements, the enums do not.

use super::Flat::{self, Direct, Schedule};
use crate::algorithms::gather::{Allgathering, Gathering, Scattering};
use crate::algorithms::{allreduce, alltoall, barrier, broadcast, reduce, reduce_scatter, scan};
use crate::mailbox::EAGER_MAX;

/// `Auto`'s choice for an allreduce of `bytes` bytes per rank on `p` ranks: recursive
/// doubling while every message is an eager copy (⌈log₂ p⌉ exchanges, and at p = 2 no
/// separate agreement round), the shared-memory direct algorithm above that (two
/// synchronisations, every byte read and written once: the traffic lower bound). Both keep
/// rank order, so commutativity does not matter. The switch point is measured
/// (docs/benchmarks.md, `benches/allreduce.rs`).
pub(crate) fn choose_allreduce(
    _p: usize,
    bytes: usize,
    _commutative: bool,
) -> Flat<allreduce::Schedule> {
    if bytes <= EAGER_MAX {
        Schedule(allreduce::Schedule::RecursiveDoubling)
    } else {
        Direct
    }
}

/// Whether `Auto`'s allreduce (and broadcast) of `bytes` per rank goes hierarchical on a communicator whose
/// ranks span several L3 groups or packages (the caller checks that the plan has levels):
/// on a team with a core per rank, above the eager limit, where the hierarchy saves what it
/// is for, the bytes crossing between groups (the flat direct algorithm reads every other
/// rank's slice wherever it lives; the hierarchy crosses once per group). Not on an
/// oversubscribed team: there every synchronisation waits for a context switch, and on the
/// 2-core development machine (synthetic 2 × 2, 4 ranks) the single-copy hierarchy
/// (`HierarchicalDirect`, the one `Auto` picks) measured slower than the flat direct
/// algorithm from 64 KiB to 8 MiB, the composition slower still (docs/hierarchy.md). Short
/// vectors
/// stay flat: three stages of latency against ⌈log₂ p⌉ rounds of recursive doubling. The
/// dedicated-core case is not measured here (no machine with more than one L3 group): the
/// rule follows HAN's design, and the tuning work's measured tables are to replace it.
pub(crate) fn prefer_hierarchy(bytes: usize, oversubscribed: bool) -> bool {
    !oversubscribed && bytes > EAGER_MAX
}

/// `Auto`'s broadcast: the binomial tree while messages are eager, `Direct` above
/// (provisional: the decision tables of the tuning work replace it).
pub(crate) fn choose_broadcast(_p: usize, bytes: usize) -> Flat<broadcast::Schedule> {
    if bytes <= EAGER_MAX {
        Schedule(broadcast::Schedule::Binomial)
    } else {
        Direct
    }
}

/// `Auto`'s reduce, measured (docs/benchmarks.md, `benches/collectives.rs`): with a core per
/// rank, the binomial tree while messages are eager (at p = 2 one message in the check's hop)
/// and `Direct` above; with more ranks than cores, `Direct` at every size (its two board
/// synchronisations cost less than the tree's rounds of waiting for descheduled ranks, even
/// for 8 B at p = 8 on 2 cores) (figures in `docs/results/2026-11-29-figures-behind-the-code.md`).
pub(crate) fn choose_reduce(
    _p: usize,
    bytes: usize,
    oversubscribed: bool,
) -> Flat<reduce::Schedule> {
    if bytes <= EAGER_MAX && !oversubscribed {
        Schedule(reduce::Schedule::Binomial)
    } else {
        Direct
    }
}

/// `Auto`'s scan (and exclusive scan): recursive doubling at every size. Measured
/// (docs/benchmarks.md) at p = 2 and at p = 8 on 2 cores, it beats the pipelined tree
/// everywhere, by several times from 2 KiB: ⌈log₂ p⌉ single-copy rounds against the tree's two
/// phases of blocks. The pipelined tree stays selectable for machines with many cores, where
/// its 2βm bandwidth term would show for long vectors (not measured here).
pub(crate) fn choose_scan(_p: usize, _bytes: usize) -> scan::Schedule {
    scan::Schedule::RecursiveDoubling
}

// --- Gather, scatter and allgather (`Comm::gather`, `scatter`, `allgather`): `Auto`'s choices.

/// `Auto`'s gather: linear at every size. Measured (docs/benchmarks.md), linear and binomial
/// are equal at p = 2, and at p = 8 on 2 cores linear is as fast or faster everywhere (one
/// round of messages into the root instead of ⌈log₂ p⌉ rounds, each
/// waiting for a descheduled rank; and each block copied once instead of up to ⌈log₂ p⌉
/// times for long ones).
pub(crate) fn choose_gather(_p: usize, _bytes: usize) -> Flat<Gathering> {
    Schedule(Gathering::Linear)
}

/// `Auto`'s scatter, measured (docs/benchmarks.md): linear, except for rendezvous-sized blocks
/// up to 16 KiB with more ranks than cores, where the root's p − 1 rendezvous sends, each
/// waiting for its receiver to be scheduled, cost more than the binomial tree's ⌈log₂ p⌉
/// rounds (at p = 8 on 2 cores) (figures in `docs/results/2026-11-29-figures-behind-the-code.md`). At p = 2 the two are one message.
pub(crate) fn choose_scatter(_p: usize, bytes: usize, oversubscribed: bool) -> Flat<Scattering> {
    if oversubscribed && bytes > EAGER_MAX && bytes <= 16 << 10 {
        Schedule(Scattering::Binomial)
    } else {
        Schedule(Scattering::Linear)
    }
}

/// `Auto`'s allgather for blocks of `bytes` bytes per rank on `p` ranks (provisional): while
/// the whole result (p blocks) is eager, recursive doubling on a power of two and Bruck
/// otherwise (⌈log₂ p⌉ rounds, no fold); above, `Direct`, which moves each block once into
/// each rank straight from its owner's buffer.
pub(crate) fn choose_allgather(p: usize, bytes: usize) -> Flat<Allgathering> {
    if bytes.saturating_mul(p) > EAGER_MAX {
        Direct
    } else if p.is_power_of_two() {
        Schedule(Allgathering::RecursiveDoubling)
    } else {
        Schedule(Allgathering::Bruck)
    }
}

/// `Auto`'s all-to-all, measured (docs/benchmarks.md). With a core per rank: at p = 2 the
/// pairwise exchange at every size (one exchange, no rotation copies; faster than `Direct`
/// from 2 to 32 KiB, equal above); for more ranks Bruck while the whole send buffer
/// is eager (⌈log₂ p⌉ rounds), `Direct` above. With more ranks than cores:
/// `Direct` for blocks below 256 KiB (one synchronisation instead of rounds of waiting for
/// descheduled ranks), the pairwise exchange from 256 KiB, where its steps stream one peer at
/// a time (figures in `docs/results/2026-11-29-figures-behind-the-code.md`).
pub(crate) fn choose_alltoall(
    p: usize,
    bytes: usize,
    oversubscribed: bool,
) -> Flat<alltoall::Schedule> {
    if oversubscribed {
        if bytes < 256 << 10 {
            Direct
        } else {
            Schedule(alltoall::Schedule::Pairwise)
        }
    } else if p == 2 {
        Schedule(alltoall::Schedule::Pairwise)
    } else if bytes.saturating_mul(p) > EAGER_MAX {
        Direct
    } else {
        Schedule(alltoall::Schedule::Bruck)
    }
}

/// `Auto`'s reduce-scatter, measured (docs/benchmarks.md). With a core per rank, while the
/// whole send buffer is eager: the ring at p = 2 (one exchange, no layout permutation) and
/// recursive halving above (⌊log₂ p⌋ rounds); `Direct` for longer buffers, and at every size
/// with more ranks than cores (faster than recursive halving even for 8 B at p = 8 on 2
/// cores) (figures in `docs/results/2026-11-29-figures-behind-the-code.md`). Every choice keeps rank order, so commutativity does not matter.
pub(crate) fn choose_reduce_scatter(
    p: usize,
    bytes: usize,
    _commutative: bool,
    oversubscribed: bool,
) -> Flat<reduce_scatter::Schedule> {
    if oversubscribed || bytes.saturating_mul(p) > EAGER_MAX {
        Direct
    } else if p == 2 {
        Schedule(reduce_scatter::Schedule::Ring)
    } else {
        Schedule(reduce_scatter::Schedule::RecursiveHalving)
    }
}

/// `Auto`'s barrier on `p` ranks: dissemination, whether or not the team is
/// `oversubscribed`. The tree sends about 2.5p messages instead of p⌈log₂ p⌉, which was
/// expected to pay where each message may cost a context switch; measured (the
/// `barrier_p2`/`barrier_p8` groups of `benches/collectives.rs`, and p ∈ {3, 4, 6, 16, 33}
/// the same way, on the shared 2-core development machine under heavy load, so rough), it
/// does not: dissemination was faster at every p, about twice at p = 2 (one latency against
/// two) and up to p = 16 (figures in `docs/results/2026-11-29-figures-behind-the-code.md`). Every dissemination round
/// advances all ranks at once, while the tree's 2⌈log₂ p⌉ dependent hops each wait for one
/// rank to be scheduled. The parameters stay for the decision tables of the tuning work.
pub(crate) fn choose_barrier(_p: usize, _oversubscribed: bool) -> barrier::Schedule {
    barrier::Schedule::Dissemination
}
