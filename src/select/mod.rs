//! Which algorithm a collective runs: the user's choice, or `Auto`'s.
//!
//! `Auto` asks the team's decision tables first (module `tuning`: overrides from the
//! environment and the program, then measured tables, docs/tuning.md); the `choose_*` rules
//! here decide only what no table covers, and inside the hierarchical algorithms' stages
//! where a table's shared-memory choice would not apply. Whether `Auto` goes hierarchical on a
//! team spanning several L3 groups or packages is [`prefer_hierarchy`]'s rule.
//! `Block::Auto` comes from the pipelining lemma ([`lemma_block`](block::lemma_block)) with α
//! and β of the team's calibration profile (module `profile`), whose built-in defaults are
//! the [`Costs`] here.
//!
//! The public enums, one per collective, are here; the rest is by theme: `ids` gives every
//! algorithm its name and the id carried in tags, `block` holds [`Block`], [`Costs`] and
//! the pipelining lemma with each algorithm's step counts, and `choose` holds `Auto`'s fixed
//! rules.

mod any;
mod block;
mod choose;
mod flat;
mod ids;

pub use any::Any;
pub use block::Block;
pub(crate) use block::Costs;
// Only the tests use these outside `block` (here and in `algorithms::allreduce::ring`).
#[cfg(all(test, not(loom)))]
pub(crate) use block::lemma_block;
#[cfg(any(test, feature = "unstable"))]
pub use block::{MAX_AUTO_BLOCK, MAX_AUTO_DIRECT_BLOCK};
pub(crate) use choose::{
    choose_allgather, choose_allreduce, choose_alltoall, choose_barrier, choose_broadcast,
    choose_gather, choose_reduce, choose_reduce_scatter, choose_scan, choose_scatter,
    prefer_hierarchy,
};
pub(crate) use flat::{Decision, Flat};
pub(crate) use ids::Choice;
#[cfg(feature = "mpi")]
pub(crate) use ids::{name_of, names_of};

/// An allreduce algorithm (see `Comm::allreduce_with`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Algorithm {
    /// Let the library choose by rank count, size and operation.
    #[default]
    Auto,
    /// Star: everything to rank 0, combined there in rank order, sent back.
    Linear,
    /// Chain 0 → 1 → … → p−1 and back, segmented into blocks that pipeline: 2(p − 2 + b)
    /// steps for b blocks (the simulator's count, `tests/sim.rs`).
    Chain {
        /// Pipeline block size.
        block: Block,
    },
    /// Binomial-tree reduce to rank 0, binomial-tree broadcast.
    Binomial,
    /// Butterfly exchange, ⌈log₂ p⌉ rounds; any p (the extra ranks fold in first).
    RecursiveDoubling,
    /// Reduce-scatter by recursive halving, allgather by recursive doubling; any p.
    Rabenseifner,
    /// Ring reduce-scatter and ring allgather; commutative ops only. Each of the 2(p − 1)
    /// steps moves a chunk of about n/p elements in pieces of at most `block`, one after
    /// another and in lockstep around the ring: k pieces per chunk make 2(p − 1)k steps. The
    /// pieces do not pipeline, so a smaller piece only adds messages, and `Block::Auto` sends
    /// each chunk whole.
    Ring {
        /// Largest piece of a chunk transfer.
        block: Block,
    },
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
    /// Hierarchical (HAN-style): reduce within each L3 group of ranks (by
    /// [`Comm::location`](crate::Comm::location)) to its lowest rank, reduce those leaders
    /// within each package, allreduce among the package leaders with `Auto`'s flat choice,
    /// and broadcast back down, in segments that pipeline through the stages; levels with one
    /// group or single-rank groups are skipped. For a non-commutative op the groups are cut
    /// into runs of consecutive ranks, which keeps rank order on any placement (one that
    /// interleaves rank by rank then has nothing to group and runs `Auto`'s flat choice).
    /// Within one process [`Algorithm::HierarchicalDirect`] does the same work with fewer
    /// copies and synchronisations; this composition is the form whose top stage can leave
    /// the shared memory.
    Hierarchical {
        /// Segment size: the vector goes through the stages in segments of this many
        /// elements (`Block::Auto`: 1 MiB worth), so that the stages pipeline.
        segment: Block,
    },
    /// Shared memory only, hierarchical and single-copy: [`Algorithm::Direct`] with its
    /// reduction split at the top level of the hierarchy (packages, else L3 groups). Each rank
    /// folds a run of slices over its own group's buffers into a partial result; then rank r
    /// folds the groups' partials of slice r and writes the result into all p buffers. One
    /// wait between the direct algorithm's two synchronisations; each input byte is read
    /// within its group, and one partial per group and element crosses between groups. For a
    /// non-commutative op the groups are cut into runs of consecutive ranks as for
    /// `Hierarchical`; with nothing to group it runs `Auto`'s flat choice. `Auto` picks it
    /// for long vectors on a team with a core per rank that spans several L3 groups or
    /// packages (docs/hierarchy.md).
    HierarchicalDirect,
    /// MPI's own collective (`MPI_Allreduce`) between the processes of a hybrid team, for the
    /// element types and ops MPI has built in (another type or op is
    /// [`Error::Unsupported`](crate::Error::Unsupported) there). Among the threads of one
    /// process, where there is no MPI, it runs `Auto`.
    Native,
}

impl Algorithm {
    /// Whether the algorithm needs the ranks to share one address space (the single-copy and
    /// hierarchical ones): on a hybrid team the stage between the processes refuses `Direct`
    /// and runs `Auto` for the hierarchical ones; benchmarks and checks between processes
    /// leave them out.
    pub fn needs_shared_memory(self) -> bool {
        matches!(
            self,
            Algorithm::Direct | Algorithm::Hierarchical { .. } | Algorithm::HierarchicalDirect
        )
    }
}

/// A broadcast algorithm (see `Comm::broadcast_with`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Broadcast {
    /// Let the library choose by rank count and size.
    #[default]
    Auto,
    /// Binomial tree from the root: ⌈log₂ p⌉ rounds of the whole vector.
    Binomial,
    /// Pipelined broadcast down a binary tree, in blocks.
    PipelinedTree {
        /// Pipeline block size.
        block: Block,
    },
    /// Scatter of the vector from the root (binomial), then an allgather of the pieces:
    /// about 2βm for long vectors (van de Geijn).
    ScatterAllgather,
    /// Shared memory only: every rank copies from the root's published buffer, in chunks.
    Direct,
    /// Hierarchical (HAN-style): up the root's own groups to the top leaders, among the
    /// leaders, then down every other group (docs/hierarchy.md).
    Hierarchical,
    /// Shared memory only: the single-copy broadcast split at the plan's top level, so that
    /// one rank per group reads the root's buffer and the others copy from it; short vectors
    /// go down a binomial tree over the ranks in group order (docs/hierarchy.md).
    HierarchicalDirect,
    /// MPI's own collective (`MPI_Bcast`, of any element type as bytes) between the processes of
    /// a hybrid team. Among the threads of one process, where there is no MPI, it runs `Auto`.
    Native,
}

impl Broadcast {
    /// Whether the algorithm needs the ranks to share one address space (the single-copy and
    /// hierarchical ones): on a hybrid team the stage between the processes refuses `Direct`
    /// and runs `Auto` for the hierarchical ones; benchmarks and checks between processes
    /// leave them out.
    pub fn needs_shared_memory(self) -> bool {
        matches!(
            self,
            Broadcast::Direct | Broadcast::Hierarchical | Broadcast::HierarchicalDirect
        )
    }
}

/// A reduce algorithm (see `Comm::reduce_with`). All of them keep rank order for a
/// non-commutative op, whatever the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Reduce {
    /// Let the library choose by rank count and size.
    #[default]
    Auto,
    /// Binomial tree towards the root: ⌈log₂ p⌉ rounds of the whole vector.
    Binomial,
    /// Pipelined reduce up a post-order binary tree, in blocks.
    PipelinedTree {
        /// Pipeline block size.
        block: Block,
    },
    /// Shared memory only: each rank reduces its slice of all p buffers into the root's.
    Direct,
    /// Hierarchical (HAN-style): reduce up the groups to the top leaders, reduce among them
    /// to the root's top leader, which hands the result to the root. With groups that are not
    /// intervals of ranks and a non-commutative op, groups are cut into runs of consecutive
    /// ranks, and where that leaves nothing to group, `Auto`'s flat choice runs
    /// (docs/hierarchy.md).
    Hierarchical,
    /// Shared memory only: the single-copy reduce split at the plan's top level, so that each
    /// input is read inside its own group and one partial per group crosses to the root;
    /// short vectors go up a binomial tree over the ranks in group order (docs/hierarchy.md).
    HierarchicalDirect,
    /// MPI's own collective between MPI processes (`MPI_Reduce`), for the element types and ops
    /// MPI has built in (on a hybrid team; another type or op is
    /// [`Error::Unsupported`](crate::Error::Unsupported) there). Between threads, where there is
    /// no MPI, it runs `Auto`.
    Native,
    /// Every rank sends its vector to the root, which combines them in rank order: one round
    /// of p − 1 messages into one rank, for short vectors on shared cores.
    Linear,
}

impl Reduce {
    /// Whether the algorithm needs the ranks to share one address space (the single-copy and
    /// hierarchical ones): on a hybrid team the stage between the processes refuses `Direct`
    /// and runs `Auto` for the hierarchical ones; benchmarks and checks between processes
    /// leave them out.
    pub fn needs_shared_memory(self) -> bool {
        matches!(
            self,
            Reduce::Direct | Reduce::Hierarchical | Reduce::HierarchicalDirect
        )
    }
}

/// A scan algorithm, for `Comm::scan_with` and `Comm::exscan_with`. Both keep rank order for a
/// non-commutative op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Scan {
    /// Let the library choose by rank count and size.
    #[default]
    Auto,
    /// Recursive doubling (Hillis–Steele): ⌈log₂ p⌉ rounds of the whole vector; for short
    /// vectors.
    RecursiveDoubling,
    /// The pipelined binary-tree prefix: an up phase reducing subtrees, a down phase sending
    /// each child the prefix of the ranks before its subtree, in blocks; for long vectors.
    PipelinedTree {
        /// Pipeline block size.
        block: Block,
    },
}

/// A gather algorithm, for `Comm::gather_with` (and the fixed choice of `gatherv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Gather {
    /// Let the library choose by rank count and size.
    #[default]
    Auto,
    /// Every rank sends its block straight to the root.
    Linear,
    /// Binomial tree: ⌈log₂ p⌉ rounds, subtrees forward their collected blocks.
    Binomial,
    /// Shared memory only: every rank writes its block straight into the root's published
    /// receive buffer, all at once; two synchronisations.
    Direct,
}

impl Gather {
    /// Whether the algorithm needs the ranks to share one address space (`Direct`): refused
    /// on a team that spans MPI processes (`process`), and left out of the simulator.
    pub fn needs_shared_memory(self) -> bool {
        self == Gather::Direct
    }
}

/// A scatter algorithm, for `Comm::scatter_with` (and the fixed choice of `scatterv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Scatter {
    /// Let the library choose by rank count and size.
    #[default]
    Auto,
    /// The root sends each rank its block.
    Linear,
    /// Binomial tree: ⌈log₂ p⌉ rounds, each subtree receives its ranks' blocks at once.
    Binomial,
    /// Shared memory only: every rank copies its block straight from the root's published
    /// send buffer, all at once; two synchronisations.
    Direct,
}

impl Scatter {
    /// Whether the algorithm needs the ranks to share one address space (`Direct`): refused
    /// on a team that spans MPI processes (`process`), and left out of the simulator.
    pub fn needs_shared_memory(self) -> bool {
        self == Scatter::Direct
    }
}

/// An allgather algorithm, for `Comm::allgather_with` (and the fixed choice of
/// `allgatherv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Allgather {
    /// Let the library choose by rank count and size.
    #[default]
    Auto,
    /// Ring: p − 1 steps, each passing one block on; bandwidth-optimal.
    Ring,
    /// Recursive doubling: ⌈log₂ p⌉ rounds exchanging doubling ranges (any p).
    RecursiveDoubling,
    /// Bruck: ⌈log₂ p⌉ rounds for any p, a final rotation; for small blocks.
    Bruck,
    /// Shared memory only: every rank copies every block straight from its owner's buffer.
    Direct,
    /// Hierarchical (HAN-style): gather up the groups to the top leaders, allgather among
    /// them, broadcast back down (docs/hierarchy.md).
    Hierarchical,
    /// Shared memory only: the single-copy allgather split at the plan's top level, so that
    /// each block crosses to another group once and is copied on from there; short blocks
    /// go by a flat schedule over the ranks in group order (docs/hierarchy.md).
    HierarchicalDirect,
}

/// An all-to-all algorithm, for `Comm::alltoall_with` (and the fixed choice of `alltoallv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Alltoall {
    /// Let the library choose by rank count and size.
    #[default]
    Auto,
    /// Pairwise exchange: in step k = 1 … p − 1 rank r sends its block for r + k and receives
    /// from r − k (mod p); p − 1 steps, each block moved once.
    Pairwise,
    /// Bruck: ⌈log₂ p⌉ rounds, each moving about half the blocks; for small blocks.
    Bruck,
    /// Shared memory only: every rank copies its block straight from every peer's buffer.
    Direct,
    /// Hierarchical "RingLeaders": followers hand their blocks to their group's leader, the
    /// leaders exchange with linear-shift partners, `fanout` exchanges at a time, and scatter
    /// to their followers (docs/hierarchy.md).
    RingLeaders {
        /// Exchanges each leader has in flight per round.
        fanout: Fanout,
    },
}

/// How many exchanges a leader of [`Alltoall::RingLeaders`] has in flight per round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fanout {
    /// Let the library choose: min(L − 1, 4) for L leaders.
    #[default]
    Auto,
    /// This many (at least 1; more than the other leaders means all of them at once).
    Exchanges(usize),
}

/// A reduce-scatter algorithm, for `Comm::reduce_scatter_block_with`. All of them keep rank
/// order for a non-commutative op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReduceScatter {
    /// Let the library choose by rank count, size and operation.
    #[default]
    Auto,
    /// Ring: p − 1 steps, each passing one partially reduced block on.
    Ring,
    /// Recursive halving: ⌈log₂ p⌉ rounds exchanging halves of the remaining range.
    RecursiveHalving,
    /// Shared memory only: each rank reduces its block of all p buffers in rank order.
    Direct,
}

/// A barrier algorithm, for `Comm::barrier_with`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Barrier {
    /// Let the library choose by rank count.
    #[default]
    Auto,
    /// Dissemination: ⌈log₂ p⌉ rounds, in round k rank r signals r + 2ᵏ.
    Dissemination,
    /// Tree: arrivals gathered up a tree to rank 0, the release sent back down.
    Tree,
    /// Hierarchical: a flat barrier in every group up the levels (its leader learns of the
    /// arrivals), one among the top leaders, and one in every group on the way down (the
    /// release), after a one-hop call check on the whole communicator (docs/hierarchy.md).
    Hierarchical,
    /// Shared memory only: arrival flags gathered in each group by its leader, the top
    /// leaders meet on flags, each leader releases its group through one flag
    /// (docs/hierarchy.md).
    HierarchicalDirect,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::mailbox::EAGER_MAX;
    use proptest::prelude::*;

    proptest! {
        /// The lemma's block is within 1..=cap, and a longer vector never gets smaller blocks
        /// on the same pipeline.
        #[test]
        fn lemma_block_is_bounded_and_monotone(a in 0usize..200, c in 1usize..5, n in 0usize..1 << 26, e in 1usize..17) {
            for (costs, cap) in [Costs::DEDICATED, Costs::OVERSUBSCRIBED]
                .into_iter()
                .flat_map(|c| [(c, MAX_AUTO_BLOCK), (c, MAX_AUTO_DIRECT_BLOCK)])
            {
                let b = lemma_block(a, c, 1, n, e, costs, cap);
                // At most one element over the cap (to keep clear of dividing n), and never
                // more than the vector and that element.
                prop_assert!(b >= 1 && (b - 1) * e <= cap.max(e));
                prop_assert!(b <= n + 1);
                prop_assert!(lemma_block(a, c, 1, 2 * n + 1, e, costs, cap) + 1 >= b);
                // No empty last block: ⌊n/B⌋ + 1 blocks are ⌈n/B⌉.
                prop_assert!(n == 0 || crate::algorithms::blocks::pipeline_blocks(n, b) == n.div_ceil(b));
            }
        }
    }

    /// The hierarchy only for long vectors on a team with a core per rank.
    #[test]
    fn hierarchy_rule() {
        assert!(prefer_hierarchy(EAGER_MAX + 1, false));
        assert!(prefer_hierarchy(64 << 20, false));
        assert!(!prefer_hierarchy(EAGER_MAX, false));
        assert!(!prefer_hierarchy(8, false));
        assert!(!prefer_hierarchy(64 << 20, true));
    }

    /// The lemma's optimum: b* = √(aβm/(cα)) blocks.
    #[test]
    fn lemma_block_matches_the_formula() {
        let costs = Costs::new(100.0, 0.1);
        // a = 10, c = 3, m = 3 MB: b* = √(10 · 0.1 · 3e6 / 300) = 100 blocks of 30 000 bytes,
        // one more so that the last block is not empty.
        assert_eq!(
            lemma_block(10, 3, 1, 3_000_000, 1, costs, MAX_AUTO_BLOCK),
            30_001
        );
        assert_eq!(
            lemma_block(10, 3, 1, 3_000_001, 1, costs, MAX_AUTO_BLOCK),
            30_001
        );
        // Nothing to fill: one block, up to the cap.
        assert_eq!(lemma_block(0, 3, 1, 1000, 8, costs, MAX_AUTO_BLOCK), 1001);
        assert_eq!(
            lemma_block(0, 3, 1, 1 << 20, 8, costs, MAX_AUTO_BLOCK),
            MAX_AUTO_BLOCK / 8 + 1
        );
        assert_eq!(
            lemma_block(0, 3, 1, (1 << 20) + 1, 8, costs, MAX_AUTO_BLOCK),
            MAX_AUTO_BLOCK / 8
        );
        assert_eq!(lemma_block(5, 2, 1, 0, 8, costs, MAX_AUTO_BLOCK), 1);
        // β = 0.001, a = 1, c = 3, m = 3 MB: b* = √10 ≈ 3.16, and of 3 and 4 blocks the model
        // takes 3 (11 000 against 11 050 ns): blocks of 1 MB, over the cap.
        let cheap = Costs::new(100.0, 0.001);
        assert_eq!(
            lemma_block(1, 3, 1, 3_000_000, 1, cheap, MAX_AUTO_BLOCK),
            MAX_AUTO_BLOCK
        );
        // Constants of 20 µs and 0.07 ns/B: the pipelined tree on 8 ranks (a = 8, c = 4)
        // would cut 8 MiB of f64 into b* = √(8 · 0.07 · 2²³ / 80 000) ≈ 7.7 blocks; the cap
        // makes 16.
        let busy = Costs::new(20_000.0, 0.07);
        let b = lemma_block(8, 4, 1, 1 << 20, 8, busy, MAX_AUTO_BLOCK);
        assert_eq!(crate::algorithms::blocks::pipeline_blocks(1 << 20, b), 16);
        // A whole number of blocks: the chain on 8 ranks (a = 12, c = 2) has b* ≈ 1.17 for
        // 64 KiB, and one block of the whole vector beats two, the second a sixth as long.
        let n = 8 << 10;
        let b = lemma_block(12, 2, 1, n, 8, busy, MAX_AUTO_BLOCK);
        assert_eq!(
            (b, crate::algorithms::blocks::pipeline_blocks(n, b)),
            (n + 1, 1)
        );
        // Multiples of `per`: b* ≈ 3.3 for the two-tree on 8 ranks (a = 6, c = 2) at 1 MiB,
        // 4 blocks in all by the model at α = 20 µs (2 per half), 2 (1 per half) at 40 µs.
        let n = 1 << 17;
        let per_half = |b: usize| crate::algorithms::blocks::pipeline_blocks(n / 2, b);
        let b = lemma_block(6, 2, 2, n, 8, busy, MAX_AUTO_BLOCK);
        assert_eq!(per_half(b), 2);
        // The built-in constants (12 µs, 0.02 ns/B: α/β = 600 000, above the 393 000 at which
        // the model takes one block per half) give the one per half measured fastest there.
        let b = lemma_block(6, 2, 2, n, 8, Costs::OVERSUBSCRIBED, MAX_AUTO_BLOCK);
        assert_eq!(per_half(b), 1);
        let slow = Costs::new(40_000.0, 0.07);
        assert_eq!(
            per_half(lemma_block(6, 2, 2, n, 8, slow, MAX_AUTO_BLOCK)),
            1
        );
        assert_eq!(lemma_block(6, 2, 2, 0, 8, slow, MAX_AUTO_BLOCK), 1);
    }

    /// Which cap `Block::Auto` meets: [`MAX_AUTO_DIRECT_BLOCK`] where the pipeline has nothing
    /// to fill and folds straight from the sender (two ranks, and the ring everywhere),
    /// [`MAX_AUTO_BLOCK`] for the dual root's side buffer and for every pipeline with a fill.
    #[test]
    fn auto_caps_by_fill_and_side_buffer() {
        // 32 MiB of f64, and a start-up so dear that the lemma wants one block: over both
        // caps in every pipeline.
        let n = 4 << 20;
        let dear = Costs::new(1e12, 0.07);
        let auto = |alg: fn(Block) -> Algorithm, p: usize| {
            alg(Block::Auto).block_elements(p, n, 8, dear) * 8
        };
        let chain = |block| Algorithm::Chain { block };
        let tree = |block| Algorithm::PipelinedTree { block };
        let two = |block| Algorithm::TwoTree { block };
        let dual = |block| Algorithm::DualRoot { block };
        let ring = |block| Algorithm::Ring { block };
        // One element more than the cap where the cap divides the vector (`lemma_block`).
        let near = |b: usize, cap: usize| b == cap || b == cap + 8;
        for alg in [chain, tree, two, ring] {
            assert!(near(auto(alg, 2), MAX_AUTO_DIRECT_BLOCK));
        }
        assert!(near(auto(tree, 3), MAX_AUTO_DIRECT_BLOCK));
        assert!(near(auto(ring, 8), MAX_AUTO_DIRECT_BLOCK));
        assert!(near(auto(dual, 2), MAX_AUTO_BLOCK));
        for alg in [chain, tree, two, dual] {
            assert!(
                near(auto(alg, 8), MAX_AUTO_BLOCK),
                "{}",
                alg(Block::Auto).name()
            );
        }
    }

    /// `Block::Elements` is taken as given; every id round-trips.
    #[test]
    fn explicit_blocks_and_ids() {
        let alg = Algorithm::DualRoot {
            block: Block::Elements(7),
        };
        assert_eq!(alg.block_elements(9, 1000, 8, Costs::DEDICATED), 7);
        let alg = Algorithm::TwoTree {
            block: Block::Elements(0),
        };
        assert_eq!(alg.block_elements(9, 1000, 8, Costs::DEDICATED), 1);
        for a in Algorithm::ALL {
            assert_eq!(Algorithm::from_id(a.id()), Some(a));
        }
        // Every enum's ids round-trip, and an id nobody has is `None`.
        macro_rules! round_trip {
            ($($ty:ident),*) => {$(
                for a in $ty::ALL {
                    assert_eq!($ty::from_id(a.id()), Some(a), "{}", a.name());
                }
                assert_eq!($ty::from_id(0x7f), None);
            )*};
        }
        round_trip!(
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
    }
}
