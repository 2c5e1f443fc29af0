//! Hierarchical collectives in the simulator: the compositions of `crate::hierarchy` (group
//! stage, leaders' stage, group stage), and a reduce-scatter/allgather allreduce that the
//! runtime does not run, traced from the crate's flat schedules on sub-communicators
//! and replayed on a [`Machine`].
//!
//! **How.** The ranks are grouped level by level as they are placed ([`Grouping`]): with
//! `Sockets`, the ranks of a socket, then the socket leaders of a node, then the node leaders
//! at the top; with `Nodes`, the ranks of a node, then the node leaders. A level whose groups
//! have one rank each is left out, as `hierarchy::Plan` leaves it out. Each stage is a flat
//! schedule on g ranks: it is recorded once for the g ranks of a group (all groups of a level
//! have the same shape), its peers renamed to the ranks of each group (`Trace::append_mapped`),
//! and appended to those ranks' traces. The whole, every rank's stages in stage order, is
//! replayed at once with the machine's costs and its shared links, so stages of different
//! groups overlap wherever their ranks are free, and a leader's stages follow one another
//! without a barrier between them. Each stage's calls carry their own sequence number in their
//! tags, so a composition whose stages went out of step would be a mismatch, not a wrong time.
//!
//! **Reduce-scatter / allgather** ([`Composition::ReduceScatterAllgather`], the "2D"
//! allreduce of HAN, NCCL and Horovod). The leader compositions put the whole vector through
//! every group's leader; this one leaves no rank special. Each group of the lowest level
//! reduce-scatters the vector so that its rank i holds piece i; at each level above, the
//! ranks that hold the same piece in the groups of one group of that level reduce-scatter
//! that piece further (with `Sockets`: the socket's pieces of m/c, then the node's of m/(s·c)
//! between the ranks of the same core index on its sockets); at the top, every rank takes
//! part in one of the g concurrent allreduces among the ranks holding its piece in the other
//! groups (g = the ranks of a top-level group, all of a node's ranks when the top is the
//! nodes); then allgathers go back down the levels in reverse. So a node's link carries g
//! concurrent inter-node allreduces of m/g instead of one of m: the lanes decide how many
//! overlap. Each rank's stages follow one another in that order.
//!
//! **Uneven vectors.** The crate's reduce-scatter is `MPI_Reduce_scatter_block` (g equal
//! blocks; it has no `v` form), so each level's vector of m elements is padded to
//! g·⌈m/g⌉: every piece has ⌈m/g⌉ elements, the last groups' pieces partly padding. A
//! runtime would fill the pad with copies of any element of the vector and drop the pad's
//! results, which works for any op; the model charges the pad's < g elements per level as
//! data (β and γ), a negligible excess once m ≫ g. For m < g every piece is one element, so
//! the time is that of g one-element pieces: correct for what padding would do, and
//! no better than the leader compositions, which should be used there. m = 0 is g empty
//! pieces (the schedules still send their messages).
//!
//! **Blocks.** A stage's `Block::Auto` is chosen by the costs of the level its group spans;
//! the leaders' stage by the network's.
//!
//! **Where this differs from what `crate::hierarchy` runs.** The runtime groups a
//! communicator by L3 group and package of one machine (a node's level is the hybrid runtime's
//! MPI processes, `process`), and its stages run `Auto`'s choice on each sub-communicator,
//! shared-memory algorithms included; here the levels are the machine's sockets and nodes and
//! every stage runs the message-passing algorithm the [`Composition`] names. The allreduce's
//! segments pipeline through the stages in the runtime's order (reduce segment t, allreduce
//! t − 1, broadcast t − 2); the broadcast is not segmented, as in the runtime.

use super::machine::Machine;
use super::{predict, record, Case, Prediction};
use crate::error::{Error, Result};
use crate::select::Any;
use crate::select::{Algorithm, Allgather, Broadcast, Reduce, ReduceScatter};
use crate::transport::sim::Trace;

/// How the ranks are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grouping {
    /// Three levels: the ranks of a socket, the sockets' leaders of a node, the nodes'
    /// leaders.
    #[default]
    Sockets,
    /// Two levels: the ranks of a node, the nodes' leaders (HAN's usual split).
    Nodes,
}

/// A hierarchical collective and the flat algorithm of each of its stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Composition {
    /// Reduce up the groups to their leaders (rank 0 of each group) with `reduce`, allreduce
    /// among the top leaders with `top`, broadcast down the groups with `broadcast`: the
    /// runtime's `Algorithm::Hierarchical`.
    Allreduce {
        /// The groups' reduce.
        reduce: Reduce,
        /// The top leaders' allreduce.
        top: Algorithm,
        /// The groups' broadcast.
        broadcast: Broadcast,
    },
    /// The allreduce for long vectors that no leader carries whole (HAN's, NCCL's and
    /// Horovod's hierarchical allreduce): a reduce-scatter with `scatter` in every group of the
    /// lowest level, leaving piece i of the vector at the group's rank i, then in every group
    /// of the next level on those pieces (rank i of each group taking part with its piece),
    /// and so up; `g` concurrent allreduces with `top` at the top, the i-th among the i-th
    /// ranks of all top-level groups, each on its piece; then allgathers with `gather` back
    /// down the levels. Each level pads its vector to a multiple of its group size (module
    /// docs, "Uneven vectors").
    ReduceScatterAllgather {
        /// The groups' reduce-scatter.
        scatter: ReduceScatter,
        /// The concurrent allreduces across the top level.
        top: Algorithm,
        /// The groups' allgather.
        gather: Allgather,
    },
    /// Up the root's own groups (from the root, where it is not its group's leader), among
    /// the top leaders from the root's, then down every other group from its leader: the
    /// runtime's `Broadcast::Hierarchical`.
    Broadcast {
        /// The groups' broadcast.
        groups: Broadcast,
        /// The top leaders' broadcast.
        top: Broadcast,
    },
}

impl Composition {
    /// The collective's name, as the benchmark spells it.
    pub fn collective(&self) -> &'static str {
        match self {
            Composition::Allreduce { .. } | Composition::ReduceScatterAllgather { .. } => {
                "allreduce"
            }
            Composition::Broadcast { .. } => "broadcast",
        }
    }

    /// The stages' algorithms joined by `/`, bottom to top to bottom: `binomial/ring/binomial`
    /// (reduce/top/broadcast), `rs-ring/two-tree/ag-ring` (reduce-scatter/top/allgather, the
    /// group stages marked `rs-` and `ag-`) or `binomial/pipelined-tree` (groups/top).
    pub fn stages(&self) -> String {
        match self {
            Composition::Allreduce {
                reduce,
                top,
                broadcast,
            } => format!("{}/{}/{}", reduce.name(), top.name(), broadcast.name()),
            Composition::ReduceScatterAllgather {
                scatter,
                top,
                gather,
            } => format!("rs-{}/{}/ag-{}", scatter.name(), top.name(), gather.name()),
            Composition::Broadcast { groups, top } => format!("{}/{}", groups.name(), top.name()),
        }
    }

    /// The composition of `collective` (`allreduce` or `broadcast`) that [`Composition::stages`]
    /// spells `stages`, if every name is one of that stage's algorithms.
    pub fn parse(collective: &str, stages: &str) -> Option<Composition> {
        let parts: Vec<&str> = stages.split('/').map(str::trim).collect();
        match (collective, parts.as_slice()) {
            ("allreduce", [r, t, b]) if r.starts_with("rs-") || b.starts_with("ag-") => {
                Some(Composition::ReduceScatterAllgather {
                    scatter: ReduceScatter::from_name(r.strip_prefix("rs-")?)?,
                    top: Algorithm::from_name(t)?,
                    gather: Allgather::from_name(b.strip_prefix("ag-")?)?,
                })
            }
            ("allreduce", [r, t, b]) => Some(Composition::Allreduce {
                reduce: Reduce::from_name(r)?,
                top: Algorithm::from_name(t)?,
                broadcast: Broadcast::from_name(b)?,
            }),
            ("broadcast", [g, t]) => Some(Composition::Broadcast {
                groups: Broadcast::from_name(g)?,
                top: Broadcast::from_name(t)?,
            }),
            _ => None,
        }
    }
}

/// One simulated hierarchical call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HierCase {
    /// The composition and its stages' algorithms.
    pub composition: Composition,
    /// How the ranks are grouped.
    pub grouping: Grouping,
    /// Elements per rank (the broadcast: from the root).
    pub count: usize,
    /// Bytes per element.
    pub elem_bytes: usize,
    /// The broadcast's root.
    pub root: usize,
    /// Whether the op is commutative.
    pub commutative: bool,
    /// The allreduce's segment in elements (`None`: the whole vector at once).
    pub segment: Option<usize>,
}

impl HierCase {
    /// `composition` of `count` 4-byte elements grouped by sockets, root 0, a commutative op,
    /// unsegmented.
    pub fn new(composition: Composition, count: usize) -> HierCase {
        HierCase {
            composition,
            grouping: Grouping::Sockets,
            count,
            elem_bytes: 4,
            root: 0,
            commutative: true,
            segment: None,
        }
    }
}

/// The levels of a grouping on a machine: per level kept, lowest first, the size of its groups
/// and the distance between the ranks taking part there (the product of the sizes below).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Levels {
    /// (group size, stride) per level below the top.
    groups: Vec<(usize, usize)>,
    /// (size, stride) of the top leaders.
    top: (usize, usize),
}

impl Levels {
    fn of(machine: &Machine, grouping: Grouping) -> Levels {
        let sizes = match grouping {
            Grouping::Sockets => vec![machine.cores, machine.sockets, machine.nodes],
            Grouping::Nodes => vec![machine.cores * machine.sockets, machine.nodes],
        };
        let mut kept = Vec::new();
        let mut stride = 1;
        for g in sizes.into_iter().filter(|&g| g > 1) {
            kept.push((g, stride));
            stride *= g;
        }
        let top = kept.pop().unwrap_or((1, 1));
        Levels { groups: kept, top }
    }
}

/// The traces of a composition under construction: one per rank, and the stage counter that
/// numbers the stages' tags.
struct Builder<'a> {
    machine: &'a Machine,
    case: &'a HierCase,
    traces: Vec<Trace>,
    seq: u64,
    /// The top stage's block of the first segment.
    top_block: Option<usize>,
}

impl Builder<'_> {
    /// Appends the stage `algorithm` of `count` elements (root `root` in the group) to the
    /// groups of `size` ranks `stride` apart whose first ranks are `bases`.
    fn stage(
        &mut self,
        algorithm: Any,
        (size, stride): (usize, usize),
        bases: impl Iterator<Item = usize>,
        count: usize,
        root: usize,
        top: bool,
    ) -> Result<()> {
        self.seq += 1;
        let case = Case {
            algorithm,
            ranks: size,
            count,
            elem_bytes: self.case.elem_bytes,
            root,
            commutative: self.case.commutative,
        };
        let costs = self.machine.link_between(0, (size - 1) * stride).costs();
        let (local, block) = record(&case, costs, self.seq)?;
        if top && self.top_block.is_none() {
            self.top_block = Some(block);
        }
        for base in bases {
            for (j, t) in local.iter().enumerate() {
                self.traces[base + j * stride]
                    .append_mapped(t, |peer| (base + peer as usize * stride) as u32);
            }
        }
        Ok(())
    }
}

/// The first ranks of the groups of a level whose groups are `size` ranks `stride` apart,
/// out of `p`.
fn bases(p: usize, (size, stride): (usize, usize)) -> impl Iterator<Item = usize> {
    (0..p).step_by(size * stride)
}

/// The first ranks of every group of a level (groups of `size` ranks `stride` apart) in which
/// all ranks take part: at each offset 0..stride of each block of size·stride ranks, the
/// reduce-scatter/allgather composition's stages above the lowest.
fn all_bases(p: usize, (size, stride): (usize, usize)) -> impl Iterator<Item = usize> {
    (0..p)
        .step_by(size * stride)
        .flat_map(move |b| (b..b + stride).filter(move |&r| r < p))
}

/// Simulates the hierarchical `case` on `machine` (module docs). `rounds` in the prediction
/// counts steps on the same machine (shared links included); `block` is the leaders' stage's
/// block (of the first segment).
///
/// Errors: [`Error::Simulation`] for a machine with a zero count, a stage algorithm the
/// simulator cannot run or a segment given to the reduce-scatter/allgather composition (it is
/// not segmented), [`Error::RankOutOfRange`] for a root outside the machine, and the errors
/// of each stage's schedule ([`super::simulate`]).
pub fn simulate_hierarchical(case: &HierCase, machine: &Machine) -> Result<Prediction> {
    machine.check()?;
    let p = machine.ranks();
    super::check_root(case.root, p)?;
    let levels = Levels::of(machine, case.grouping);
    let mut b = Builder {
        machine,
        case,
        traces: vec![Trace::default(); p],
        seq: 0,
        top_block: None,
    };
    let n = case.count;
    match case.composition {
        Composition::Allreduce {
            reduce,
            top,
            broadcast,
        } => {
            let seg = case.segment.unwrap_or(n).max(1);
            let k = n.div_ceil(seg).max(1);
            let len = |s: usize| ((s + 1) * seg).min(n) - (s * seg).min(n);
            for step in 0..k + 2 {
                if step < k {
                    for &g in &levels.groups {
                        let c = Any::Reduce(reduce);
                        b.stage(c, g, bases(p, g), len(step), 0, false)?;
                    }
                }
                if (1..=k).contains(&step) {
                    let c = Any::Allreduce(top);
                    b.stage(c, levels.top, bases(p, levels.top), len(step - 1), 0, true)?;
                }
                if (2..k + 2).contains(&step) {
                    for &g in levels.groups.iter().rev() {
                        let c = Any::Broadcast(broadcast);
                        b.stage(c, g, bases(p, g), len(step - 2), 0, false)?;
                    }
                }
            }
        }
        Composition::ReduceScatterAllgather {
            scatter,
            top,
            gather,
        } => {
            if case.segment.is_some() {
                return Err(Error::Simulation {
                    what: format!(
                        "the composition {} is not segmented: give it no segment",
                        case.composition.stages()
                    ),
                });
            }
            // Each level's piece: its vector divided by its group size, rounded up (padding).
            let mut pieces = Vec::with_capacity(levels.groups.len());
            let mut len = n;
            for &(size, _) in &levels.groups {
                len = len.div_ceil(size);
                pieces.push(len);
            }
            let c = Any::ReduceScatter(scatter);
            for (&g, &piece) in levels.groups.iter().zip(&pieces) {
                b.stage(c, g, all_bases(p, g), piece, 0, false)?;
            }
            let t = Any::Allreduce(top);
            b.stage(t, levels.top, all_bases(p, levels.top), len, 0, true)?;
            let c = Any::Allgather(gather);
            for (&g, &piece) in levels.groups.iter().zip(&pieces).rev() {
                b.stage(c, g, all_bases(p, g), piece, 0, false)?;
            }
        }
        Composition::Broadcast { groups, top } => {
            // The root's representative at each level: itself, then its groups' leaders.
            let mut reps = vec![case.root];
            for &(size, stride) in &levels.groups {
                let span = size * stride;
                reps.push(case.root / span * span);
            }
            let c = Any::Broadcast(groups);
            let up: Vec<bool> = (0..levels.groups.len())
                .map(|l| reps[l] != reps[l + 1])
                .collect();
            for (l, &g) in levels.groups.iter().enumerate() {
                if up[l] {
                    let from = (reps[l] - reps[l + 1]) / g.1;
                    b.stage(c, g, std::iter::once(reps[l + 1]), n, from, false)?;
                }
            }
            let (size, stride) = levels.top;
            let from = reps[levels.groups.len()] / stride;
            let t = Any::Broadcast(top);
            b.stage(t, levels.top, bases(p, (size, stride)), n, from, true)?;
            for (l, &g) in levels.groups.iter().enumerate().rev() {
                let skip = up[l].then_some(reps[l + 1]);
                let down = bases(p, g).filter(|&base| Some(base) != skip);
                b.stage(c, g, down, n, 0, false)?;
            }
        }
    }
    predict(
        &b.traces,
        machine.params(case.elem_bytes, false),
        machine.params(case.elem_bytes, true),
        b.top_block.unwrap_or(0),
    )
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn machine(nodes: usize, sockets: usize, cores: usize) -> Machine {
        let mut m = Machine::flat(&super::super::Model::default(), 1);
        (m.nodes, m.sockets, m.cores) = (nodes, sockets, cores);
        m
    }

    /// The reduce-scatter/allgather stages above the lowest take every offset of their
    /// blocks: on 2 × 2 × 2, the node level's groups start at 0, 1, 4, 5 and the top's at
    /// 0..4.
    #[test]
    fn all_bases_cover_every_offset() {
        assert_eq!(all_bases(8, (2, 1)).collect::<Vec<_>>(), [0, 2, 4, 6]);
        assert_eq!(all_bases(8, (2, 2)).collect::<Vec<_>>(), [0, 1, 4, 5]);
        assert_eq!(all_bases(8, (2, 4)).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(all_bases(1, (1, 1)).collect::<Vec<_>>(), [0]);
    }

    /// Levels of one rank per group collapse; the top is the last level kept.
    #[test]
    fn levels_collapse() {
        let l = Levels::of(&machine(36, 2, 16), Grouping::Sockets);
        assert_eq!(l.groups, vec![(16, 1), (2, 16)]);
        assert_eq!(l.top, (36, 32));
        let l = Levels::of(&machine(36, 2, 16), Grouping::Nodes);
        assert_eq!((l.groups, l.top), (vec![(32, 1)], (36, 32)));
        let l = Levels::of(&machine(4, 1, 1), Grouping::Sockets);
        assert_eq!((l.groups, l.top), (vec![], (4, 1)));
        let l = Levels::of(&machine(1, 1, 1), Grouping::Sockets);
        assert_eq!((l.groups, l.top), (vec![], (1, 1)));
        let l = Levels::of(&machine(1, 3, 2), Grouping::Sockets);
        assert_eq!((l.groups, l.top), (vec![(2, 1)], (3, 2)));
    }

    #[test]
    fn names_round_trip() {
        for s in [
            "binomial/ring/pipelined-tree",
            "binomial/dual-root/binomial",
        ] {
            let c = Composition::parse("allreduce", s).unwrap();
            assert_eq!(c.stages(), s);
        }
        let c = Composition::parse("broadcast", "binomial/pipelined-tree").unwrap();
        assert_eq!(c.stages(), "binomial/pipelined-tree");
        for s in [
            "rs-ring/two-tree/ag-ring",
            "rs-recursive-halving/rabenseifner/ag-bruck",
        ] {
            let c = Composition::parse("allreduce", s).unwrap();
            assert!(matches!(c, Composition::ReduceScatterAllgather { .. }));
            assert_eq!((c.stages().as_str(), c.collective()), (s, "allreduce"));
        }
        for bad in [
            "rs-ring/two-tree/ring",
            "ring/two-tree/ag-ring",
            "rs-nope/two-tree/ag-ring",
            "rs-ring/two-tree/ag-binomial",
        ] {
            assert!(Composition::parse("allreduce", bad).is_none(), "{bad}");
        }
        assert!(Composition::parse("allreduce", "binomial/ring").is_none());
        assert!(Composition::parse("broadcast", "binomial/nope").is_none());
    }
}
