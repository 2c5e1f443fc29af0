//! Which algorithm a collective runs: the user's choice, or `Auto`'s.
//!
//! `Auto` asks the team's decision tables first (`crate::tuning`: overrides from the
//! environment and the program, then measured tables, docs/tuning.md); the `choose_*` rules
//! here decide only what no table covers, and inside the hierarchical algorithms' stages
//! where a table's shared-memory choice would not apply. Whether `Auto` goes hierarchical on a
//! team spanning several L3 groups or packages is [`prefer_hierarchy`]'s rule.
//! `Block::Auto` comes from the pipelining lemma ([`lemma_block`]) with α and β of the team's
//! calibration profile (`crate::profile`), whose built-in defaults are the [`Costs`] here.

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
    /// MPI's own collective between MPI processes (`MPI_Allreduce`), for the element types and ops
    /// MPI has built in (see `hybrid::ProcessComm`'s docs; another type or op is
    /// [`Error::Unsupported`](crate::Error::Unsupported) there). Between threads, where there is
    /// no MPI, it runs `Auto`.
    Native,
}

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

            /// The algorithm with id `id` (blocks `Auto`).
            #[allow(dead_code)]
            pub(crate) fn from_id(id: u8) -> Option<$ty> {
                $ty::ALL.into_iter().find(|a| a.id() == id)
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

/// What the call check (`comm::agree`) needs of any collective's algorithm enum.
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

impl Algorithm {
    /// Whether the algorithm needs the ranks to share one address space (the shared-memory
    /// and hierarchical ones): refused between MPI processes (`hybrid::ProcessComm`), and left
    /// out of benchmarks and checks between them.
    pub fn needs_shared_memory(self) -> bool {
        matches!(
            self,
            Algorithm::Direct | Algorithm::Hierarchical { .. } | Algorithm::HierarchicalDirect
        )
    }
}

impl Algorithm {
    /// Whether the algorithm cuts the vector into pipeline blocks or pieces (and so uses
    /// [`Algorithm::block_elements`]).
    pub(crate) fn has_block(self) -> bool {
        matches!(
            self,
            Algorithm::Chain { .. }
                | Algorithm::Ring { .. }
                | Algorithm::PipelinedTree { .. }
                | Algorithm::DualRoot { .. }
                | Algorithm::TwoTree { .. }
        )
    }

    /// Elements per pipeline block (or ring piece) for `n` elements of `elem_size` bytes on
    /// `p` ranks: the user's `Block::Elements`, or for `Block::Auto` the pipelining lemma
    /// ([`lemma_block`]) with this algorithm's step counts, and for the ring a whole chunk
    /// (`ring_piece`). Algorithms without a pipeline get the cache cap ([`MAX_AUTO_BLOCK`])
    /// as their segment size.
    pub(crate) fn block_elements(
        self,
        p: usize,
        n: usize,
        elem_size: usize,
        costs: Costs,
    ) -> usize {
        let (block, a, c) = match self {
            // 2(2H + 2(b − 1)) = (4H − 4) + 4b steps on a tree of height H (Träff 2021's
            // count, with h the tree's height; the simulator finds exactly this, `tests/sim.rs`).
            Algorithm::PipelinedTree { block } => {
                (block, (4 * tree_height(p)).saturating_sub(4), 4)
            }
            // 4H + 1 + 3(b − 1) = (4H − 2) + 3b steps on two trees of height H ≥ 1, as the
            // simulator counts (`tests/sim.rs`): 4 fewer than Träff 2021's 4h − 3 + 3(b − 1) for
            // p = 2^h − 2 (H = h − 2), whose 2(h − 1) steps from the leaves to a root count the
            // leaves' level as if it had children. Two single-rank trees (p ≤ 3) gain nothing
            // from pipelining.
            Algorithm::DualRoot { block } => {
                let h = tree_height(p.div_ceil(2));
                (block, if h == 0 { 0 } else { 4 * h - 2 }, 3)
            }
            // Reduce then broadcast over both trees, each phase D + 2(b/2 − 1) + 1 steps for
            // b blocks in all (b/2 per tree) with D = 2⌊log₂(p − 1)⌋: (2D − 2) + 2b steps.
            Algorithm::TwoTree { block } => (block, (4 * tree_height(p - 1)).saturating_sub(2), 2),
            // A path of p − 1 edges, reduce then broadcast: 2(p − 2 + b) steps, as the
            // simulator counts (`tests/sim.rs`).
            Algorithm::Chain { block } => (block, 2 * p.saturating_sub(2), 2),
            Algorithm::Ring { block } => return ring_piece(block, p, n),
            _ => (Block::Auto, 0, 1),
        };
        pipeline_block(block, a, c, n, elem_size, costs)
    }
}

/// Elements per piece of the ring's chunk transfers: the user's `Block::Elements` (at least
/// 1), or for `Block::Auto` a whole chunk, ⌈n/p⌉ elements: one piece per step.
///
/// The ring does not pipeline its pieces. Step s + 1 sends what step s received, but a rank
/// exchanges piece i of a step with both neighbours before piece i + 1, and every rank does
/// the same, so the ring moves in lockstep: k pieces per chunk of m = ⌈n/p⌉ elements make
/// 2(p − 1)k steps of α + βm/k, that is 2(p − 1)(kα + βm) — the lemma's pipeline with nothing
/// to fill (a = 0), which one piece per chunk minimises (the simulator counts exactly these
/// steps, `tests/sim.rs`). Nor does the cache argue for the cap ([`MAX_AUTO_BLOCK`]) that the
/// pipelines' blocks get: a step reads and combines every element of its chunk once, and
/// the next step sends the whole chunk on, so smaller pieces bring no reuse, only messages.
/// Measured (`corecoll-bench --algorithms ring:128KiB,ring:512KiB,ring:16MiB`, medians, on
/// the 2-core development machine shared with other work): on 2 ranks one piece took
/// 53–65 µs at 2 MiB per rank against 72–76 µs in 128 KiB pieces, and 278–292 µs at 8 MiB
/// against 276–338 µs; on 8 oversubscribed ranks, where every piece waits for context
/// switches, 7.7–11.5 ms at 8 MiB against 20–25 ms (and 43–58 ms in 16 KiB pieces).
fn ring_piece(block: Block, p: usize, n: usize) -> usize {
    match block {
        Block::Elements(b) => b.max(1),
        Block::Auto => n.div_ceil(p.max(1)).max(1),
    }
}

/// Height ⌊log₂ n⌋ of a balanced binary tree of `n ≥ 1` ranks (0 for `n ≤ 1`).
fn tree_height(n: usize) -> usize {
    n.max(1).ilog2() as usize
}

/// Elements per block for a pipeline of `a + c·b` steps: the user's `Block::Elements` (at
/// least 1), or for `Block::Auto` the pipelining lemma ([`lemma_block`]).
fn pipeline_block(block: Block, a: usize, c: usize, n: usize, elem: usize, costs: Costs) -> usize {
    match block {
        Block::Elements(b) => b.max(1),
        Block::Auto => lemma_block(a, c, n, elem, costs),
    }
}

/// The largest block `Block::Auto` picks: 512 KiB. The lemma counts messages only; a cap keeps
/// the block being combined (and the root's side buffer) inside the L2 cache (1 MiB per core
/// on the machine measured), so long vectors are not streamed through memory twice. Measured
/// (docs/tuning.md, the block sweeps): with 128 KiB `Block::Auto` lost up to 1.9× to blocks of
/// 256 KiB – 1 MiB on 8 MiB vectors at p = 2 and p = 8.
pub(crate) const MAX_AUTO_BLOCK: usize = 512 << 10;

/// The cost constants of the pipelining lemma: start-up time per message (α) and time per
/// byte (β) of a single-copy transfer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Costs {
    /// Nanoseconds per message.
    pub alpha_ns: f64,
    /// Nanoseconds per byte.
    pub beta_ns: f64,
}

impl Costs {
    /// A rank per core, measured on the development machine (docs/benchmarks.md): an 8-byte
    /// message takes about 100 ns one way, a 1 MiB one 73 µs (0.07 ns per byte).
    pub(crate) const DEDICATED: Costs = Costs {
        alpha_ns: 100.0,
        beta_ns: 0.07,
    };
    /// More ranks than cores: a pipeline step waits for the next rank to be scheduled among
    /// the others sharing its core, so the start-up cost that matters is a hop of a busy
    /// pipeline, not a ping-pong between two threads (1.6 µs on one core, docs/calibration.md).
    /// 20 µs fits the block sweeps of docs/tuning.md at p = 8 on 2 cores, where the best fixed
    /// block gave a pipeline of 1 to 2 blocks up to 1 MiB (the chain: (α = 15–30 µs by the
    /// lemma's b* = √(aβm/(cα)))), and the cap decided at 8 MiB.
    pub(crate) const OVERSUBSCRIBED: Costs = Costs {
        alpha_ns: 20_000.0,
        beta_ns: 0.07,
    };
    /// Between MPI processes: an estimate for Open MPI's shared-memory transport on one node,
    /// about 1 µs per message and 0.1 ns per byte (a copy through a shared segment or a
    /// single-copy kernel transfer), larger than the mailboxes' [`Costs::DEDICATED`]; what a
    /// profile without a measured `mpi` level gives (`profile::Level::Mpi`).
    pub(crate) const MPI: Costs = Costs {
        alpha_ns: 1000.0,
        beta_ns: 0.1,
    };
}

/// The pipelining lemma (Träff 2021, §1.2): a pipeline of `a + c·b` steps of α + βm/b each
/// over b blocks of an m-byte vector takes (a + cb)(α + βm/b), least at b* = √(aβm / (cα)).
/// Returns the block size in elements for b* blocks of `n` elements of `elem_size` bytes,
/// capped at [`MAX_AUTO_BLOCK`] bytes and at least one element. With `a = 0` (nothing to fill)
/// one block would do, so the cap decides.
///
/// The block never divides a non-empty `n` (one element more if it would): the schedules cut
/// n elements into ⌊n/B⌋ + 1 blocks, the last one short and, when B divides n, empty
/// ([`crate::algorithms::blocks::pipeline_blocks`]) — an empty block still costs a pipeline
/// stage of α per step (3α for the dual root), which the simulator showed `Auto` paying on
/// every vector short enough for one block.
pub(crate) fn lemma_block(a: usize, c: usize, n: usize, elem_size: usize, costs: Costs) -> usize {
    let elem = elem_size.max(1);
    let cap = (MAX_AUTO_BLOCK / elem).max(1);
    let m = (n * elem) as f64;
    let blocks = (a as f64 * costs.beta_ns * m / (c.max(1) as f64 * costs.alpha_ns)).sqrt();
    let block = if blocks < 1.0 {
        n.clamp(1, cap)
    } else {
        ((n as f64 / blocks).ceil() as usize).clamp(1, cap)
    };
    if n > 0 && n.is_multiple_of(block) {
        block + 1
    } else {
        block
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

/// `Auto`'s choice for an allreduce of `bytes` bytes per rank on `p` ranks: recursive
/// doubling while every message is an eager copy (⌈log₂ p⌉ exchanges, and at p = 2 no
/// separate agreement round), the shared-memory direct algorithm above that (two
/// synchronisations, every byte read and written once: the traffic lower bound). Both keep
/// rank order, so commutativity does not matter. The switch point is measured
/// (docs/benchmarks.md, `benches/allreduce.rs`).
pub(crate) fn choose_allreduce(_p: usize, bytes: usize, _commutative: bool) -> Algorithm {
    if bytes <= EAGER_MAX {
        Algorithm::RecursiveDoubling
    } else {
        Algorithm::Direct
    }
}

/// Whether `Auto`'s allreduce (and broadcast) of `bytes` per rank goes hierarchical on a communicator whose
/// ranks span several L3 groups or packages (the caller checks that the plan has levels):
/// on a team with a core per rank, above the eager limit, where the hierarchy saves what it
/// is for, the bytes crossing between groups (the flat direct algorithm reads every other
/// rank's slice wherever it lives; the hierarchy crosses once per group). Not on an
/// oversubscribed team: there every synchronisation waits for a context switch, and on the
/// 2-core development machine (synthetic 2 × 2, 4 ranks) the single-copy hierarchy
/// (`HierarchicalDirect`, the one `Auto` picks) measured 1.14–1.20× the flat direct algorithm
/// from 64 KiB to 8 MiB, the composition 1.6–2.3× (docs/hierarchy.md). Short vectors
/// stay flat: three stages of latency against ⌈log₂ p⌉ rounds of recursive doubling. The
/// dedicated-core case is not measured here (no machine with more than one L3 group): the
/// rule follows HAN's design, and the tuning work's measured tables are to replace it.
pub(crate) fn prefer_hierarchy(bytes: usize, oversubscribed: bool) -> bool {
    !oversubscribed && bytes > EAGER_MAX
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
    /// MPI's own collective between MPI processes (`MPI_Bcast`, of any element type as bytes), (see `hybrid::ProcessComm`'s docs). Between threads, where there is
    /// no MPI, it runs `Auto`.
    Native,
}

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

impl Broadcast {
    /// Whether the algorithm needs the ranks to share one address space (the shared-memory
    /// and hierarchical ones): refused between MPI processes (`hybrid::ProcessComm`), and left
    /// out of benchmarks and checks between them.
    pub fn needs_shared_memory(self) -> bool {
        matches!(
            self,
            Broadcast::Direct | Broadcast::Hierarchical | Broadcast::HierarchicalDirect
        )
    }
}

impl Broadcast {
    /// Elements per pipeline block of `n` elements of `elem_size` bytes on `p` ranks (0 for
    /// the algorithms without one): the pipelined tree's broadcast half of
    /// [`Algorithm::PipelinedTree`]'s steps, 2h + 2(b − 1).
    pub(crate) fn block_elements(
        self,
        p: usize,
        n: usize,
        elem_size: usize,
        costs: Costs,
    ) -> usize {
        match self {
            Broadcast::PipelinedTree { block } => {
                pipeline_block(block, 2 * tree_height(p), 2, n, elem_size, costs)
            }
            _ => 0,
        }
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
    /// MPI has built in (see `hybrid::ProcessComm`'s docs; another type or op is
    /// [`Error::Unsupported`](crate::Error::Unsupported) there). Between threads, where there is
    /// no MPI, it runs `Auto`.
    Native,
}

algorithm_ids!(
    Reduce,
    7,
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
);

impl Reduce {
    /// Whether the algorithm needs the ranks to share one address space (the shared-memory
    /// and hierarchical ones): refused between MPI processes (`hybrid::ProcessComm`), and left
    /// out of benchmarks and checks between them.
    pub fn needs_shared_memory(self) -> bool {
        matches!(
            self,
            Reduce::Direct | Reduce::Hierarchical | Reduce::HierarchicalDirect
        )
    }
}

impl Reduce {
    /// Elements per pipeline block (0 for the algorithms without one): the reduce half of
    /// [`Algorithm::PipelinedTree`]'s steps, 2h + 2(b − 1) at every root (the root is the top
    /// of the schedule, h = ⌊log₂ p⌋ give or take one level; the acknowledgements back down
    /// are empty messages, the same for every b, so they do not move the optimum).
    pub(crate) fn block_elements(
        self,
        p: usize,
        n: usize,
        elem_size: usize,
        costs: Costs,
    ) -> usize {
        match self {
            Reduce::PipelinedTree { block } => {
                pipeline_block(block, 2 * tree_height(p), 2, n, elem_size, costs)
            }
            _ => 0,
        }
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
}

algorithm_ids!(
    Gather,
    3,
    (Gather::Auto, Gather::Auto, "auto", 0),
    (Gather::Linear, Gather::Linear, "linear", 1),
    (Gather::Binomial, Gather::Binomial, "binomial", 2),
);

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
}

algorithm_ids!(
    Scatter,
    3,
    (Scatter::Auto, Scatter::Auto, "auto", 0),
    (Scatter::Linear, Scatter::Linear, "linear", 1),
    (Scatter::Binomial, Scatter::Binomial, "binomial", 2),
);

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

/// `Auto`'s broadcast: the binomial tree while messages are eager, `Direct` above
/// (provisional: the decision tables of the tuning work replace it).
pub(crate) fn choose_broadcast(_p: usize, bytes: usize) -> Broadcast {
    if bytes <= EAGER_MAX {
        Broadcast::Binomial
    } else {
        Broadcast::Direct
    }
}

/// `Auto`'s reduce, measured (docs/benchmarks.md, `benches/collectives.rs`): with a core per
/// rank, the binomial tree while messages are eager (at p = 2 one message in the check's hop)
/// and `Direct` above; with more ranks than cores, `Direct` at every size (its two board
/// synchronisations cost less than the tree's rounds of waiting for descheduled ranks: 16 µs
/// against 20 µs for 8 B at p = 8 on 2 cores).
pub(crate) fn choose_reduce(_p: usize, bytes: usize, oversubscribed: bool) -> Reduce {
    if bytes <= EAGER_MAX && !oversubscribed {
        Reduce::Binomial
    } else {
        Reduce::Direct
    }
}

// ---- Scan: block size and `Auto`'s choice (the scan work) ----

impl Scan {
    /// Elements per pipeline block of `n` elements of `elem_size` bytes on `p` ranks (0 for
    /// the algorithms without one). The pipelined tree runs its up phase and then its down
    /// phase, each about 2h + 2(b − 1) steps on a tree of height h in b blocks (two children
    /// per node), so the lemma gets a = 4h, c = 4.
    pub(crate) fn block_elements(
        self,
        p: usize,
        n: usize,
        elem_size: usize,
        costs: Costs,
    ) -> usize {
        match self {
            Scan::PipelinedTree { block } => {
                pipeline_block(block, 4 * tree_height(p), 4, n, elem_size, costs)
            }
            _ => 0,
        }
    }
}

/// `Auto`'s scan (and exclusive scan): recursive doubling at every size. Measured
/// (docs/benchmarks.md) at p = 2 and at p = 8 on 2 cores, it beats the pipelined tree
/// everywhere, by 2–11× from 2 KiB: ⌈log₂ p⌉ single-copy rounds against the tree's two
/// phases of blocks. The pipelined tree stays selectable for machines with many cores, where
/// its 2βm bandwidth term would show for long vectors (not measured here).
pub(crate) fn choose_scan(_p: usize, _bytes: usize) -> Scan {
    Scan::RecursiveDoubling
}

// --- Gather, scatter and allgather (`Comm::gather`, `scatter`, `allgather`): `Auto`'s choices.

/// `Auto`'s gather: linear at every size. Measured (docs/benchmarks.md), linear and binomial
/// are equal at p = 2, and at p = 8 on 2 cores linear is as fast or faster everywhere (14 µs
/// against 21 µs for 8 B: one round of messages into the root instead of ⌈log₂ p⌉ rounds, each
/// waiting for a descheduled rank; and each block copied once instead of up to ⌈log₂ p⌉
/// times for long ones).
pub(crate) fn choose_gather(_p: usize, _bytes: usize) -> Gather {
    Gather::Linear
}

/// `Auto`'s scatter, measured (docs/benchmarks.md): linear, except for rendezvous-sized blocks
/// up to 16 KiB with more ranks than cores, where the root's p − 1 rendezvous sends, each
/// waiting for its receiver to be scheduled, cost more than the binomial tree's ⌈log₂ p⌉
/// rounds (45 µs against 29 µs for 2 KiB at p = 8 on 2 cores). At p = 2 the two are one
/// message.
pub(crate) fn choose_scatter(_p: usize, bytes: usize, oversubscribed: bool) -> Scatter {
    if oversubscribed && bytes > EAGER_MAX && bytes <= 16 << 10 {
        Scatter::Binomial
    } else {
        Scatter::Linear
    }
}

/// `Auto`'s allgather for blocks of `bytes` bytes per rank on `p` ranks (provisional): while
/// the whole result (p blocks) is eager, recursive doubling on a power of two and Bruck
/// otherwise (⌈log₂ p⌉ rounds, no fold); above, `Direct`, which moves each block once into
/// each rank straight from its owner's buffer.
pub(crate) fn choose_allgather(p: usize, bytes: usize) -> Allgather {
    if bytes.saturating_mul(p) > EAGER_MAX {
        Allgather::Direct
    } else if p.is_power_of_two() {
        Allgather::RecursiveDoubling
    } else {
        Allgather::Bruck
    }
}

// --- All-to-all, reduce-scatter and barrier (`Comm::alltoall`, `reduce_scatter_block`,
// `barrier_with`): the algorithm enums and `Auto`'s choices.

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

/// `Auto`'s all-to-all, measured (docs/benchmarks.md). With a core per rank: at p = 2 the
/// pairwise exchange at every size (one exchange, no rotation copies; up to 1.6× faster than
/// `Direct` from 2 to 32 KiB, equal above); for more ranks Bruck while the whole send buffer
/// is eager (⌈log₂ p⌉ rounds), `Direct` above. With more ranks than cores:
/// `Direct` for blocks below 256 KiB (one synchronisation instead of rounds of waiting for
/// descheduled ranks: 16 µs against 17–30 µs for 8 B at p = 8 on 2 cores), the pairwise
/// exchange from 256 KiB, where its steps stream one peer at a time (1.6 ms against 1.8 ms
/// at 512 KiB).
pub(crate) fn choose_alltoall(p: usize, bytes: usize, oversubscribed: bool) -> Alltoall {
    if oversubscribed {
        if bytes < 256 << 10 {
            Alltoall::Direct
        } else {
            Alltoall::Pairwise
        }
    } else if p == 2 {
        Alltoall::Pairwise
    } else if bytes.saturating_mul(p) > EAGER_MAX {
        Alltoall::Direct
    } else {
        Alltoall::Bruck
    }
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

/// `Auto`'s reduce-scatter, measured (docs/benchmarks.md). With a core per rank, while the
/// whole send buffer is eager: the ring at p = 2 (one exchange, no layout permutation) and
/// recursive halving above (⌊log₂ p⌋ rounds); `Direct` for longer buffers, and at every size
/// with more ranks than cores (16 µs against 28 µs for recursive halving for 8 B at p = 8 on
/// 2 cores). Every choice keeps rank order, so commutativity does not matter.
pub(crate) fn choose_reduce_scatter(
    p: usize,
    bytes: usize,
    _commutative: bool,
    oversubscribed: bool,
) -> ReduceScatter {
    if oversubscribed || bytes.saturating_mul(p) > EAGER_MAX {
        ReduceScatter::Direct
    } else if p == 2 {
        ReduceScatter::Ring
    } else {
        ReduceScatter::RecursiveHalving
    }
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

/// `Auto`'s barrier on `p` ranks: dissemination, whether or not the team is
/// `oversubscribed`. The tree sends about 2.5p messages instead of p⌈log₂ p⌉, which was
/// expected to pay where each message may cost a context switch; measured (the
/// `barrier_p2`/`barrier_p8` groups of `benches/collectives.rs`, and p ∈ {3, 4, 6, 16, 33}
/// the same way, on the shared 2-core development machine under heavy load, so rough), it
/// does not: dissemination took 0.1 µs at p = 2 against the tree's 0.2 µs (one latency
/// against two), and on 2 cores about 6 against 13 µs at p = 4, 20 against 40 µs at p = 8,
/// 50 against 90 µs at p = 16 and 170 against 185 µs at p = 33. Every dissemination round
/// advances all ranks at once, while the tree's 2⌈log₂ p⌉ dependent hops each wait for one
/// rank to be scheduled. The parameters stay for the decision tables of the tuning work.
pub(crate) fn choose_barrier(_p: usize, _oversubscribed: bool) -> Barrier {
    Barrier::Dissemination
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The lemma's block is within 1..=cap, and a longer vector never gets smaller blocks
        /// on the same pipeline.
        #[test]
        fn lemma_block_is_bounded_and_monotone(a in 0usize..200, c in 1usize..5, n in 0usize..1 << 26, e in 1usize..17) {
            for costs in [Costs::DEDICATED, Costs::OVERSUBSCRIBED] {
                let b = lemma_block(a, c, n, e, costs);
                // At most one element over the cap (to keep clear of dividing n).
                prop_assert!(b >= 1 && (b - 1) * e <= MAX_AUTO_BLOCK.max(e));
                prop_assert!(lemma_block(a, c, 2 * n + 1, e, costs) + 1 >= b);
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
        let costs = Costs {
            alpha_ns: 100.0,
            beta_ns: 0.1,
        };
        // a = 10, c = 3, m = 3 MB: b* = √(10 · 0.1 · 3e6 / 300) = 100 blocks of 30 000 bytes,
        // one more so that the last block is not empty.
        assert_eq!(lemma_block(10, 3, 3_000_000, 1, costs), 30_001);
        assert_eq!(lemma_block(10, 3, 3_000_001, 1, costs), 30_001);
        // Nothing to fill: one block, up to the cap.
        assert_eq!(lemma_block(0, 3, 1000, 8, costs), 1001);
        assert_eq!(lemma_block(0, 3, 1 << 20, 8, costs), MAX_AUTO_BLOCK / 8 + 1);
        assert_eq!(
            lemma_block(0, 3, (1 << 20) + 1, 8, costs),
            MAX_AUTO_BLOCK / 8
        );
        assert_eq!(lemma_block(5, 2, 0, 8, costs), 1);
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
    }
}
