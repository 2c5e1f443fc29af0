//! Which algorithm a collective runs: the user's choice, or `Auto`'s.
//!
//! `Auto` is provisional until the measured decision tables of the tuning work: short vectors
//! go by recursive doubling (⌈log₂ p⌉ rounds, latency-bound), long ones by Rabenseifner
//! (reduce-scatter + allgather, 2·(p−1)/p of the data per rank) or — commutative ops only — the
//! ring. The switch point is the eager limit: below it every message is one cell copy.

use crate::mailbox::EAGER_MAX;

/// An allreduce algorithm (see `Comm::allreduce_with`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Algorithm {
    /// Let the library choose by rank count, size and operation.
    #[default]
    Auto,
    /// Star: everything to rank 0, combined there in rank order, sent back.
    Linear,
    /// Chain 0 → 1 → … → p−1 and back, segmented into blocks that pipeline.
    Chain,
    /// Binomial-tree reduce to rank 0, binomial-tree broadcast.
    Binomial,
    /// Butterfly exchange, ⌈log₂ p⌉ rounds; any p (the extra ranks fold in first).
    RecursiveDoubling,
    /// Reduce-scatter by recursive halving, allgather by recursive doubling; any p.
    Rabenseifner,
    /// Ring reduce-scatter and ring allgather, segmented; commutative ops only.
    Ring,
    /// Pipelined reduce to the root of one post-order binary tree, then pipelined broadcast,
    /// in blocks (the baseline of Träff 2021): 2(2h + 2(b − 1)) rounds for b blocks and tree
    /// height h.
    PipelinedTree {
        /// Pipeline block size.
        block: Block,
    },
    /// Träff 2021's doubly-pipelined dual-root algorithm: two post-order binary trees whose
    /// roots exchange, every edge carrying partial results up and final blocks down at once;
    /// (4h − 3 + 3(b − 1)) rounds for b blocks on trees of p = 2^h − 2 ranks.
    DualRoot {
        /// Pipeline block size.
        block: Block,
    },
    /// Sanders, Speck and Träff 2009's two-tree algorithm: two binary trees in which every
    /// rank is interior in at most one, each carrying half of the vector, reduce then
    /// broadcast scheduled on a 2-colouring of the edges.
    TwoTree {
        /// Pipeline block size.
        block: Block,
    },
    /// Shared memory only: each rank reduces its own slice of the vector reading all p
    /// buffers in rank order and writes the result into all p buffers (2pS bytes moved, the
    /// lower bound); two synchronisations.
    Direct,
}

impl Algorithm {
    /// A short name (error messages, benchmarks).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Auto => "auto",
            Algorithm::Linear => "linear",
            Algorithm::Chain => "chain",
            Algorithm::Binomial => "binomial",
            Algorithm::RecursiveDoubling => "recursive-doubling",
            Algorithm::Rabenseifner => "rabenseifner",
            Algorithm::Ring => "ring",
            Algorithm::PipelinedTree { .. } => "pipelined-tree",
            Algorithm::DualRoot { .. } => "dual-root",
            Algorithm::TwoTree { .. } => "two-tree",
            Algorithm::Direct => "direct",
        }
    }

    /// Every algorithm (blocks `Auto`), in id order.
    pub(crate) const ALL: [Algorithm; 11] = [
        Algorithm::Auto,
        Algorithm::Linear,
        Algorithm::Chain,
        Algorithm::Binomial,
        Algorithm::RecursiveDoubling,
        Algorithm::Rabenseifner,
        Algorithm::Ring,
        Algorithm::PipelinedTree { block: Block::Auto },
        Algorithm::DualRoot { block: Block::Auto },
        Algorithm::TwoTree { block: Block::Auto },
        Algorithm::Direct,
    ];

    /// The algorithm with id `id` (blocks `Auto`).
    pub(crate) fn from_id(id: u8) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.id() == id)
    }

    /// A small number carried in message tags, so that ranks that chose different algorithms
    /// get a mismatch error instead of talking past each other.
    pub(crate) fn id(self) -> u8 {
        match self {
            Algorithm::Auto => 0,
            Algorithm::Linear => 1,
            Algorithm::Chain => 2,
            Algorithm::Binomial => 3,
            Algorithm::RecursiveDoubling => 4,
            Algorithm::Rabenseifner => 5,
            Algorithm::Ring => 6,
            Algorithm::PipelinedTree { .. } => 7,
            Algorithm::DualRoot { .. } => 8,
            Algorithm::TwoTree { .. } => 9,
            Algorithm::Direct => 10,
        }
    }

    /// Elements per pipeline block for elements of `elem_size` bytes (every algorithm has
    /// one; those without a `Block` use the automatic size for their segments).
    pub(crate) fn block_elements(self, elem_size: usize) -> usize {
        match self {
            Algorithm::PipelinedTree {
                block: Block::Elements(n),
            }
            | Algorithm::DualRoot {
                block: Block::Elements(n),
            }
            | Algorithm::TwoTree {
                block: Block::Elements(n),
            } => n.max(1),
            _ => auto_block(elem_size),
        }
    }
}

/// Pipeline block size of the segmented algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Block {
    /// Let the library choose.
    #[default]
    Auto,
    /// Blocks of this many elements (at least 1).
    Elements(usize),
}

/// `Auto`'s choice for an allreduce of `bytes` bytes per rank on `p` ranks.
pub(crate) fn choose_allreduce(p: usize, bytes: usize, commutative: bool) -> Algorithm {
    if p <= 2 || bytes <= EAGER_MAX {
        Algorithm::RecursiveDoubling
    } else if commutative {
        Algorithm::Ring
    } else {
        Algorithm::Rabenseifner
    }
}

/// Elements per pipeline block of a segmented algorithm when the user said `Block::Auto`:
/// blocks of about 64 KiB, so that a block is several rendezvous messages' worth of work but
/// the pipeline still has many stages for long vectors.
pub(crate) fn auto_block(elem_size: usize) -> usize {
    ((64 << 10) / elem_size.max(1)).max(1)
}
