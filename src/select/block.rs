//! Pipeline blocks: [`Block`], the cost constants [`Costs`], the pipelining lemma
//! ([`lemma_block`]) and each algorithm's `block_elements`, which feeds the lemma its step
//! counts.
//!
//! Apart from the enums because it is the cost model's side of the selection: what
//! `Block::Auto` means for every segmented algorithm, in one place next to the lemma.

use super::{Algorithm, Broadcast, Reduce, Scan};

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
    /// ([`lemma_block`]) with this algorithm's step counts, and for the ring a whole chunk up
    /// to the cache cap (`ring_piece`). Algorithms without a pipeline get the cache cap
    /// ([`MAX_AUTO_BLOCK`]) as their segment size.
    pub(crate) fn block_elements(
        self,
        p: usize,
        n: usize,
        elem_size: usize,
        costs: Costs,
    ) -> usize {
        let (block, a, c, per) = match self {
            // 2(2H + 2(b − 1)) = (4H − 4) + 4b steps on a tree of height H (Träff 2021's
            // count, with h the tree's height; the simulator finds exactly this, `tests/sim.rs`).
            Algorithm::PipelinedTree { block } => {
                (block, (4 * tree_height(p)).saturating_sub(4), 4, 1)
            }
            // 4H + 1 + 3(b − 1) = (4H − 2) + 3b steps on two trees of height H ≥ 1, as the
            // simulator counts (`tests/sim.rs`): 4 fewer than Träff 2021's 4h − 3 + 3(b − 1) for
            // p = 2^h − 2 (H = h − 2), whose 2(h − 1) steps from the leaves to a root count the
            // leaves' level as if it had children. Two single-rank trees (p ≤ 3) gain nothing
            // from pipelining.
            Algorithm::DualRoot { block } => {
                let h = tree_height(p.div_ceil(2));
                (block, if h == 0 { 0 } else { 4 * h - 2 }, 3, 1)
            }
            // Reduce then broadcast over both trees, each phase D + 2(b/2 − 1) + 1 steps for
            // b blocks in all (b/2 per tree, so b is even) with D = 2⌊log₂(p − 1)⌋:
            // (2D − 2) + 2b steps.
            Algorithm::TwoTree { block } => {
                (block, (4 * tree_height(p - 1)).saturating_sub(2), 2, 2)
            }
            // A path of p − 1 edges, reduce then broadcast: 2(p − 2 + b) steps, as the
            // simulator counts (`tests/sim.rs`).
            Algorithm::Chain { block } => (block, 2 * p.saturating_sub(2), 2, 1),
            Algorithm::Ring { block } => return ring_piece(block, p, n, elem_size),
            _ => (Block::Auto, 0, 1, 1),
        };
        // The dual root's roots copy a received block into a side buffer before folding it;
        // every other pipeline folds straight from the sender's buffer.
        let side = matches!(self, Algorithm::DualRoot { .. });
        let cap = if a == 0 && !side {
            MAX_AUTO_DIRECT_BLOCK
        } else {
            MAX_AUTO_BLOCK
        };
        pipeline_block(block, (a, c, per), n, elem_size, costs, cap)
    }
}

/// Elements per piece of the ring's chunk transfers: the user's `Block::Elements` (at least
/// 1), or for `Block::Auto` a whole chunk, ⌈n/p⌉ elements, up to the cap
/// [`MAX_AUTO_DIRECT_BLOCK`] (`elem_size` bytes an element).
///
/// The ring does not pipeline its pieces. Step s + 1 sends what step s received, but a rank
/// exchanges piece i of a step with both neighbours before piece i + 1, and every rank does
/// the same, so the ring moves in lockstep: k pieces per chunk of m = ⌈n/p⌉ elements make
/// 2(p − 1)k steps of α + βm/k, that is 2(p − 1)(kα + βm) — the lemma's pipeline with nothing
/// to fill (a = 0), which one piece per chunk minimises on messages alone (the simulator
/// counts exactly these steps, `tests/sim.rs`). Each piece is folded straight from the
/// sender's buffer, so the cap is the one for such pipelines.
///
/// Whole chunks up to [`MAX_AUTO_DIRECT_BLOCK`] measured ahead of smaller pieces with the
/// long copies in pieces (`crate::copy`); while a long copy was one `memcpy`, slow here above
/// the L2, 512 KiB pieces had been ahead (docs/results/2026-11-25-block-auto-interleaved.md).
fn ring_piece(block: Block, p: usize, n: usize, elem_size: usize) -> usize {
    match block {
        Block::Elements(b) => b.max(1),
        Block::Auto => n
            .div_ceil(p.max(1))
            .clamp(1, (MAX_AUTO_DIRECT_BLOCK / elem_size.max(1)).max(1)),
    }
}

/// Height ⌊log₂ n⌋ of a balanced binary tree of `n ≥ 1` ranks (0 for `n ≤ 1`).
fn tree_height(n: usize) -> usize {
    n.max(1).ilog2() as usize
}

/// Elements per block for a pipeline of `a + c·b` steps whose block count comes in multiples
/// of `per`: the user's `Block::Elements` (at least 1), or for `Block::Auto` the pipelining
/// lemma ([`lemma_block`]) with blocks of at most `cap` bytes.
fn pipeline_block(
    block: Block,
    (a, c, per): (usize, usize, usize),
    n: usize,
    elem: usize,
    costs: Costs,
    cap: usize,
) -> usize {
    match block {
        Block::Elements(b) => b.max(1),
        Block::Auto => lemma_block(a, c, per, n, elem, costs, cap),
    }
}

/// [`pipeline_block`] for the pipelined trees of the rooted collectives and the scan, which
/// always have something to fill on two ranks or more: capped at [`MAX_AUTO_BLOCK`].
fn tree_block(
    block: Block,
    steps: (usize, usize, usize),
    n: usize,
    elem: usize,
    costs: Costs,
) -> usize {
    pipeline_block(block, steps, n, elem, costs, MAX_AUTO_BLOCK)
}

/// The largest block `Block::Auto` picks for a pipeline with something to fill (the lemma's
/// a > 0) and for the dual root's side buffer: 512 KiB ([`MAX_AUTO_DIRECT_BLOCK`] for the
/// others). The lemma counts messages only; a cap keeps
/// the block being combined (and the root's side buffer) inside the L2 cache (1 MiB per core
/// on the machine measured), so long vectors are not streamed through memory twice. Measured
/// (docs/tuning.md, the block sweeps): a smaller cap lost to blocks of 256 KiB – 1 MiB on
/// 8 MiB vectors at p = 2 and p = 8, and on 8 ranks over 2 cores blocks of 256–512 KiB beat
/// 1 MiB ones in every pipeline (figures in `docs/results/2026-11-29-figures-behind-the-code.md`).
pub const MAX_AUTO_BLOCK: usize = 512 << 10;

/// The largest block `Block::Auto` picks where a pipeline has nothing to fill (the lemma's
/// a = 0: the ring's pieces at every p, the chain, the pipelined tree and the two-tree on two
/// ranks, the pipelined tree on three) and the receiver folds each block straight from the
/// sender's buffer (not the dual root, whose roots copy the block into a side buffer first):
/// 2 MiB. There the lemma wants one block of the whole vector (or chunk): blocks cost a
/// handshake each and overlap nothing, and no side buffer has to stay in the L2.
///
/// Measured with the long copies in pieces (`crate::copy`; interleaved rounds, the better of
/// two passes, docs/tuning.md): on 2 ranks at 8 MiB the ring and the two-tree ran faster with
/// 2–4 MiB pieces than with 512 KiB ones; at 32 MiB, 2 MiB blocks were close to the best
/// block of each of these pipelines, where whole 16 MiB blocks and 4 MiB ones lost more. The
/// dual root keeps [`MAX_AUTO_BLOCK`]: its larger blocks lost to 512 KiB ones (figures in
/// `docs/results/2026-11-29-figures-behind-the-code.md`).
pub const MAX_AUTO_DIRECT_BLOCK: usize = 2 << 20;

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
    /// The constants α (ns per message) and β (ns per byte).
    pub(crate) const fn new(alpha_ns: f64, beta_ns: f64) -> Costs {
        Costs { alpha_ns, beta_ns }
    }

    /// A rank per core: the one-way latency and the per-byte cost of the mailboxes on the
    /// development machine (docs/benchmarks.md, the latency check).
    pub(crate) const DEDICATED: Costs = Costs::new(100.0, 0.07);
    /// More ranks than cores: a pipeline step waits for the next rank to be scheduled among
    /// the others sharing its core, so the start-up cost that matters is a hop of a busy
    /// pipeline, not a ping-pong between two threads (docs/calibration.md). These are what
    /// `corecoll-bench --calibrate` fits to its busy pipeline (8 ranks on 2 cores) on the
    /// development machine; constants fitted by hand to block sweeps, when a long copy was one
    /// slow `memcpy`, made `Block::Auto` cut the 1 MiB two-tree and pipelined tree on 8 ranks
    /// into too many blocks (docs/tuning.md; figures in `docs/results/2026-11-29-figures-behind-the-code.md`).
    pub(crate) const OVERSUBSCRIBED: Costs = Costs::new(12_000.0, 0.02);
    /// Between MPI processes: an estimate for Open MPI's shared-memory transport on one node
    /// (a copy through a shared segment or a single-copy kernel transfer), larger than the
    /// mailboxes' [`Costs::DEDICATED`]; what a
    /// profile without a measured `mpi` level gives (`profile::Level::Mpi`).
    pub(crate) const MPI: Costs = Costs::new(1000.0, 0.1);
}

/// The pipelining lemma (Träff 2021, §1.2): a pipeline of `a + c·b` steps of α + βm/b each
/// over b blocks of an m-byte vector takes (a + cb)(α + βm/b), least at b* = √(aβm / (cα)).
/// Returns the block size in elements for `n` elements of `elem_size` bytes cut into a whole
/// number of blocks near b*, a multiple of `per` (1, or 2 for the two-tree, which cuts each of
/// its two halves into the same blocks), capped at `cap` bytes ([`MAX_AUTO_BLOCK`] or
/// [`MAX_AUTO_DIRECT_BLOCK`]) and at least one element. With `a = 0` (nothing to fill) one block would do, so the cap decides.
///
/// The count is whole: of the multiples of `per` just below and just above b* (at least
/// `per`), the one with the smaller (a + cb)(α + βm/b); the vector is then cut into that many
/// blocks of near-equal length. Rounding the block n/b* up instead would make
/// ⌈b*⌉ blocks with a short last one: at b* = 1.2 two blocks, the second a fifth of the first,
/// each costing a full pipeline stage. On 8 ranks over 2 cores the chain then lost to one
/// block at 64 KiB, and the two-tree to one block per half at 1 MiB (docs/tuning.md).
///
/// The block never divides a non-empty `n` (one element more if it would): the schedules cut
/// n elements into ⌊n/B⌋ + 1 blocks, the last one short and, when B divides n, empty
/// ([`crate::algorithms::blocks::pipeline_blocks`]) — an empty block still costs a pipeline
/// stage of α per step (3α for the dual root), which the simulator showed `Auto` paying on
/// every vector short enough for one block.
pub(crate) fn lemma_block(
    a: usize,
    c: usize,
    per: usize,
    n: usize,
    elem_size: usize,
    costs: Costs,
    cap: usize,
) -> usize {
    let elem = elem_size.max(1);
    let cap = (cap / elem).max(1);
    let per = per.max(1) as f64;
    let m = (n * elem) as f64;
    let (a, c) = (a as f64, c.max(1) as f64);
    let time = |b: f64| (a + c * b) * (costs.alpha_ns + costs.beta_ns * m / b);
    let best = (a * costs.beta_ns * m / (c * costs.alpha_ns)).sqrt();
    let below = ((best / per).floor() * per).max(per);
    let above = ((best / per).ceil() * per).max(per);
    let blocks = if time(above) < time(below) {
        above
    } else {
        below
    };
    let block = ((n as f64 / blocks).ceil() as usize).clamp(1, cap);
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
                tree_block(block, (2 * tree_height(p), 2, 1), n, elem_size, costs)
            }
            _ => 0,
        }
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
                tree_block(block, (2 * tree_height(p), 2, 1), n, elem_size, costs)
            }
            _ => 0,
        }
    }
}

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
                tree_block(block, (4 * tree_height(p), 4, 1), n, elem_size, costs)
            }
            _ => 0,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    /// `Block::Auto` sends every chunk (of either length) in one piece up to the cache cap,
    /// and a longer one in pieces of the cap; an explicit block is taken as it is (at least 1).
    #[test]
    fn auto_sends_each_chunk_whole_up_to_the_cap() {
        use crate::algorithms::allreduce::{chunk, pieces};
        use crate::select::{Algorithm, Block, Costs, MAX_AUTO_DIRECT_BLOCK};
        let piece =
            |p, n, block| Algorithm::Ring { block }.block_elements(p, n, 8, Costs::DEDICATED);
        let cap = MAX_AUTO_DIRECT_BLOCK / 8;
        for p in [1usize, 2, 3, 8, 33] {
            for n in [
                0usize,
                1,
                5,
                p + 1,
                7 * p - 1,
                p * cap,
                p * cap + 1,
                100 * MAX_AUTO_DIRECT_BLOCK + 3,
            ] {
                let b = piece(p, n, Block::Auto);
                assert!(b >= 1 && b <= cap, "p={p} n={n}: {b}");
                for c in 0..p {
                    let len = chunk(n, p, c).len();
                    assert_eq!(
                        pieces(len, b),
                        len.div_ceil(cap).max(1),
                        "p={p} n={n} c={c}: {b}"
                    );
                }
            }
        }
        assert_eq!(piece(4, 1000, Block::Elements(0)), 1);
        assert_eq!(piece(4, 1000, Block::Elements(9)), 9);
    }
}
