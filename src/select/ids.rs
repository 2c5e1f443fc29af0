//! Names and ids of the algorithms: the `algorithm_ids!` bookkeeping (`ALL`, `name`,
//! `from_name`, `id`, `from_id`) and its table for every collective's enum, with the
//! [`Choice`] trait the call check uses.
//!
//! Apart from the enums because the ids are part of the wire format (they travel in tags
//! and are compared between ranks): keeping every collective's list in one file makes them
//! easy to check against each other and hard to renumber by accident.

use super::{
    Algorithm, Allgather, Alltoall, Barrier, Block, Broadcast, Fanout, Gather, Reduce,
    ReduceScatter, Scan, Scatter,
};
use crate::algorithms::check::Call;
#[cfg(feature = "mpi")]
use crate::collective::Collective;
use crate::mailbox::type_fingerprint;

/// Implements the bookkeeping of a per-collective algorithm enum: `ALL`, `name`, `id` and
/// `from_id`, from a list of (variant pattern, value with blocks `Auto`, name, id).
macro_rules! algorithm_ids {
    ($ty:ident, $n:literal, $(($pat:pat, $val:expr, $name:literal, $id:literal)),* $(,)?) => {
        impl $ty {
            /// Every algorithm (blocks `Auto`), `Auto` first, in id order.
            pub const ALL: [$ty; $n] = [$($val),*];

            /// A short name (error messages, benchmarks).
            pub fn name(self) -> &'static str {
                match self {
                    $($pat => $name,)*
                }
            }

            /// The algorithm called `name` (as [`name`](Self::name) spells it; blocks `Auto`),
            /// if there is one.
            pub fn from_name(name: &str) -> Option<$ty> {
                $ty::ALL.into_iter().find(|a| a.name() == name)
            }

            /// The id carried in tags and compared by the call check.
            #[allow(dead_code)]
            pub(crate) fn id(self) -> u8 {
                match self {
                    $($pat => $id,)*
                }
            }

            /// The algorithm with id `id` (blocks `Auto`): a `match`, since `Auto` looks its
            /// decision up by id on every call (a search of `ALL` cost a tenth of an 8-byte
            /// allreduce at p = 2).
            #[allow(dead_code)]
            pub(crate) fn from_id(id: u8) -> Option<$ty> {
                match id {
                    $($id => Some($val),)*
                    _ => None,
                }
            }
        }

        impl Choice for $ty {
            fn id(self) -> u8 {
                $ty::id(self)
            }
            fn name_of(id: u8) -> Option<&'static str> {
                $ty::from_id(id).map($ty::name)
            }
        }
    };
}

impl Call {
    /// A call of collective `op` with algorithm `alg` on `len` elements of `T` per rank, with
    /// no root and no pipeline block (see [`Call::at`], [`Call::in_blocks`]).
    pub(crate) fn of<T: 'static, A: Choice>(op: &'static str, alg: A, len: usize) -> Call {
        crate::mailbox::names::note::<T>();
        Call {
            op,
            alg: alg.id(),
            name_of: A::name_of,
            len,
            root: None,
            block: 0,
            elem: type_fingerprint::<T>(),
            combine: None,
        }
    }
}

/// The name of algorithm `id` of `collective` (blocks `Auto`), if there is one: for messages
/// that carry a collective and an algorithm id.
#[cfg(feature = "mpi")]
pub(crate) fn name_of(collective: Collective, id: u8) -> Option<&'static str> {
    names_of(collective)(id)
}

/// The lookup of `collective`'s algorithm names by id, for a call check's messages; an id's top
/// bit (which the process layer sets on the `v` forms and on exscan) is ignored.
#[cfg(feature = "mpi")]
pub(crate) fn names_of(collective: Collective) -> fn(u8) -> Option<&'static str> {
    fn low<C: Choice>(id: u8) -> Option<&'static str> {
        C::name_of(id & 0x7f)
    }
    match collective {
        Collective::Allreduce => low::<Algorithm>,
        Collective::Broadcast => low::<Broadcast>,
        Collective::Reduce => low::<Reduce>,
        Collective::Scan => low::<Scan>,
        Collective::Gather => low::<Gather>,
        Collective::Scatter => low::<Scatter>,
        Collective::Allgather => low::<Allgather>,
        Collective::Alltoall => low::<Alltoall>,
        Collective::ReduceScatter => low::<ReduceScatter>,
        Collective::Barrier => low::<Barrier>,
    }
}

/// What the call check (`algorithms::check`) needs of any collective's algorithm enum.
pub(crate) trait Choice: Copy {
    /// The algorithm's id (tag variant, compared between ranks).
    fn id(self) -> u8;
    /// The name of the algorithm with id `id`, for error messages.
    fn name_of(id: u8) -> Option<&'static str>;
}

algorithm_ids!(
    Algorithm,
    14,
    (Algorithm::Auto, Algorithm::Auto, "auto", 0),
    (Algorithm::Linear, Algorithm::Linear, "linear", 1),
    (
        Algorithm::Chain { .. },
        Algorithm::Chain { block: Block::Auto },
        "chain",
        2
    ),
    (Algorithm::Binomial, Algorithm::Binomial, "binomial", 3),
    (
        Algorithm::RecursiveDoubling,
        Algorithm::RecursiveDoubling,
        "recursive-doubling",
        4
    ),
    (
        Algorithm::Rabenseifner,
        Algorithm::Rabenseifner,
        "rabenseifner",
        5
    ),
    (
        Algorithm::Ring { .. },
        Algorithm::Ring { block: Block::Auto },
        "ring",
        6
    ),
    (
        Algorithm::PipelinedTree { .. },
        Algorithm::PipelinedTree { block: Block::Auto },
        "pipelined-tree",
        7
    ),
    (
        Algorithm::DualRoot { .. },
        Algorithm::DualRoot { block: Block::Auto },
        "dual-root",
        8
    ),
    (
        Algorithm::TwoTree { .. },
        Algorithm::TwoTree { block: Block::Auto },
        "two-tree",
        9
    ),
    (Algorithm::Direct, Algorithm::Direct, "direct", 10),
    (
        Algorithm::Hierarchical { .. },
        Algorithm::Hierarchical {
            segment: Block::Auto
        },
        "hierarchical",
        11
    ),
    (
        Algorithm::HierarchicalDirect,
        Algorithm::HierarchicalDirect,
        "hierarchical-direct",
        12
    ),
    (Algorithm::Native, Algorithm::Native, "native", 13),
);

algorithm_ids!(
    Broadcast,
    8,
    (Broadcast::Auto, Broadcast::Auto, "auto", 0),
    (Broadcast::Binomial, Broadcast::Binomial, "binomial", 1),
    (
        Broadcast::PipelinedTree { .. },
        Broadcast::PipelinedTree { block: Block::Auto },
        "pipelined-tree",
        2
    ),
    (
        Broadcast::ScatterAllgather,
        Broadcast::ScatterAllgather,
        "scatter-allgather",
        3
    ),
    (Broadcast::Direct, Broadcast::Direct, "direct", 4),
    (
        Broadcast::Hierarchical,
        Broadcast::Hierarchical,
        "hierarchical",
        5
    ),
    (
        Broadcast::HierarchicalDirect,
        Broadcast::HierarchicalDirect,
        "hierarchical-direct",
        6
    ),
    (Broadcast::Native, Broadcast::Native, "native", 7),
);

algorithm_ids!(
    Reduce,
    8,
    (Reduce::Auto, Reduce::Auto, "auto", 0),
    (Reduce::Binomial, Reduce::Binomial, "binomial", 1),
    (
        Reduce::PipelinedTree { .. },
        Reduce::PipelinedTree { block: Block::Auto },
        "pipelined-tree",
        2
    ),
    (Reduce::Direct, Reduce::Direct, "direct", 3),
    (
        Reduce::Hierarchical,
        Reduce::Hierarchical,
        "hierarchical",
        4
    ),
    (
        Reduce::HierarchicalDirect,
        Reduce::HierarchicalDirect,
        "hierarchical-direct",
        5
    ),
    (Reduce::Native, Reduce::Native, "native", 6),
    (Reduce::Linear, Reduce::Linear, "linear", 7),
);

algorithm_ids!(
    Scan,
    3,
    (Scan::Auto, Scan::Auto, "auto", 0),
    (
        Scan::RecursiveDoubling,
        Scan::RecursiveDoubling,
        "recursive-doubling",
        1
    ),
    (
        Scan::PipelinedTree { .. },
        Scan::PipelinedTree { block: Block::Auto },
        "pipelined-tree",
        2
    ),
);

algorithm_ids!(
    Gather,
    4,
    (Gather::Auto, Gather::Auto, "auto", 0),
    (Gather::Linear, Gather::Linear, "linear", 1),
    (Gather::Binomial, Gather::Binomial, "binomial", 2),
    (Gather::Direct, Gather::Direct, "direct", 3),
);

algorithm_ids!(
    Scatter,
    4,
    (Scatter::Auto, Scatter::Auto, "auto", 0),
    (Scatter::Linear, Scatter::Linear, "linear", 1),
    (Scatter::Binomial, Scatter::Binomial, "binomial", 2),
    (Scatter::Direct, Scatter::Direct, "direct", 3),
);

algorithm_ids!(
    Allgather,
    7,
    (Allgather::Auto, Allgather::Auto, "auto", 0),
    (Allgather::Ring, Allgather::Ring, "ring", 1),
    (
        Allgather::RecursiveDoubling,
        Allgather::RecursiveDoubling,
        "recursive-doubling",
        2
    ),
    (Allgather::Bruck, Allgather::Bruck, "bruck", 3),
    (Allgather::Direct, Allgather::Direct, "direct", 4),
    (
        Allgather::Hierarchical,
        Allgather::Hierarchical,
        "hierarchical",
        5
    ),
    (
        Allgather::HierarchicalDirect,
        Allgather::HierarchicalDirect,
        "hierarchical-direct",
        6
    ),
);

algorithm_ids!(
    Alltoall,
    5,
    (Alltoall::Auto, Alltoall::Auto, "auto", 0),
    (Alltoall::Pairwise, Alltoall::Pairwise, "pairwise", 1),
    (Alltoall::Bruck, Alltoall::Bruck, "bruck", 2),
    (Alltoall::Direct, Alltoall::Direct, "direct", 3),
    (
        Alltoall::RingLeaders { .. },
        Alltoall::RingLeaders {
            fanout: Fanout::Auto
        },
        "ring-leaders",
        4
    ),
);

algorithm_ids!(
    ReduceScatter,
    4,
    (ReduceScatter::Auto, ReduceScatter::Auto, "auto", 0),
    (ReduceScatter::Ring, ReduceScatter::Ring, "ring", 1),
    (
        ReduceScatter::RecursiveHalving,
        ReduceScatter::RecursiveHalving,
        "recursive-halving",
        2
    ),
    (ReduceScatter::Direct, ReduceScatter::Direct, "direct", 3),
);

algorithm_ids!(
    Barrier,
    5,
    (Barrier::Auto, Barrier::Auto, "auto", 0),
    (
        Barrier::Dissemination,
        Barrier::Dissemination,
        "dissemination",
        1
    ),
    (Barrier::Tree, Barrier::Tree, "tree", 2),
    (
        Barrier::Hierarchical,
        Barrier::Hierarchical,
        "hierarchical",
        3
    ),
    (
        Barrier::HierarchicalDirect,
        Barrier::HierarchicalDirect,
        "hierarchical-direct",
        4
    ),
);
