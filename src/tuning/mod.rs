//! Decision tables: which algorithm `Auto` runs, by collective, rank count and size, read off
//! measurements rather than picked by hand.
//!
//! A [`Table`] says, for one collective measured on `ranks` ranks with or without
//! oversubscribed cores, which algorithm was fastest over each range of sizes, as [`Rules`] in
//! the syntax of oneCCL's `CCL_ALLREDUCE` variable: `recursive-doubling:0-4095;direct:4096-max`
//! (a name alone covers every size). `corecoll-bench --tune` derives the tables from a sweep's
//! measurements (docs/tuning.md) and stores them in a calibration profile
//! ([`Profile::tables`](crate::Profile::tables)); the crate carries the tables measured on the
//! development machine ([`builtin`]), which apply where a profile has none.
//!
//! **Size.** A rule's sizes are bytes per rank as the benchmark counts them: the largest
//! buffer a rank passes — the vector of allreduce, broadcast, reduce and scan, all p blocks of
//! gather, scatter, allgather, alltoall and reduce-scatter (the root's for the rooted ones); 0
//! for the barrier.
//!
//! **Who decides.** For a call with `Auto`, the first of these that covers the call's size
//! gives the algorithm ([`Tuning::decide`]):
//!
//! 1. the environment: `CORECOLL_ALLREDUCE`, `CORECOLL_BROADCAST`, … (`Collective::env_var`),
//!    read when the team is built; the person running the program overrides the program;
//! 2. the program: [`TeamBuilder::algorithm_rules`](crate::TeamBuilder::algorithm_rules);
//! 3. the profile's tables for the collective, if it has any, else the built-in ones: of
//!    those the nearest to the communicator — fewest doublings of p apart, a table of the
//!    other regime (oversubscribed or not) counting one doubling farther — and in it, for a
//!    non-commutative allreduce, the rules among the algorithms that keep rank order;
//! 4. the crate's fixed rules (`select::choose_*`), for anything left uncovered.
//!
//! An override naming an algorithm that cannot serve the call (the ring for a non-commutative
//! allreduce) is passed over for that call, as a range it does not cover is.
//!
//! **What tables can name.** The flat algorithms only: not `auto`, not `native` (MPI's, which
//! between threads is `Auto`), and not the hierarchical ones, which `Auto` takes by the
//! hierarchy rule (`select::prefer_hierarchy`) on a team that spans several L3 groups or
//! packages, a decision no table measured on this one-L3 machine could make. The tables apply
//! between threads; between the MPI processes of a hybrid team `Auto` keeps its own rules,
//! which weigh MPI's costs.
//!
//! Like `Block::Auto`, the choice depends only on what every rank of the call shares (the
//! team, the communicator's size, the call's size), so all ranks make the same one.
//!
//! **Files.** `rules` holds the rule syntax ([`Rules`], `parse_size`), `table` the
//! serialised tables and the built-in ones ([`Table`], [`builtin`]), `decide` the decision
//! procedure ([`Tuning`]); [`Collective`] and the link to the algorithm enums are here.

mod decide;
pub(crate) mod rules;
mod table;

pub use decide::{Decision, Origin, Tuning};
pub use rules::{Rule, Rules};
pub use table::{builtin, Table};

use crate::collective::Collective;

impl Collective {
    /// The algorithms a rule may name for this collective: the flat ones (module docs).
    pub fn algorithms(self) -> Vec<&'static str> {
        use crate::select::*;
        let names: Vec<&'static str> = match self {
            Collective::Allreduce => Algorithm::ALL.iter().map(|a| a.name()).collect(),
            Collective::Broadcast => Broadcast::ALL.iter().map(|a| a.name()).collect(),
            Collective::Reduce => Reduce::ALL.iter().map(|a| a.name()).collect(),
            Collective::Scan => Scan::ALL.iter().map(|a| a.name()).collect(),
            Collective::Gather => Gather::ALL.iter().map(|a| a.name()).collect(),
            Collective::Scatter => Scatter::ALL.iter().map(|a| a.name()).collect(),
            Collective::Allgather => Allgather::ALL.iter().map(|a| a.name()).collect(),
            Collective::Alltoall => Alltoall::ALL.iter().map(|a| a.name()).collect(),
            Collective::ReduceScatter => ReduceScatter::ALL.iter().map(|a| a.name()).collect(),
            Collective::Barrier => Barrier::ALL.iter().map(|a| a.name()).collect(),
        };
        names
            .into_iter()
            .filter(|n| {
                !matches!(
                    *n,
                    "auto" | "native" | "hierarchical" | "hierarchical-direct" | "ring-leaders"
                )
            })
            .collect()
    }

    /// Whether `algorithm` can serve a call whose op is `commutative` or not: every one but
    /// the allreduce's ring keeps rank order.
    pub fn admits(self, algorithm: &str, commutative: bool) -> bool {
        commutative || !(self == Collective::Allreduce && algorithm == "ring")
    }
}

/// The algorithm enums a decision names, by [`Collective::algorithms`]' names.
pub(crate) trait Named: Sized + crate::select::Choice {
    /// The algorithm called `name` (blocks `Auto`).
    fn named(name: &str) -> Option<Self>;
    /// The algorithm with id `id` (blocks `Auto`).
    fn with_id(id: u8) -> Option<Self>;
}

macro_rules! named {
    ($($ty:ident),*) => {
        $(impl Named for crate::select::$ty {
            fn named(name: &str) -> Option<Self> {
                crate::select::$ty::from_name(name)
            }
            fn with_id(id: u8) -> Option<Self> {
                crate::select::$ty::from_id(id)
            }
        })*
    };
}

named!(
    Algorithm,
    Broadcast,
    Reduce,
    Scan,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    ReduceScatter,
    Barrier
);

#[cfg(all(test, not(loom)))]
mod tests;
