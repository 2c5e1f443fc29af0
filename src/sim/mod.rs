//! The cost-model simulator: runs the crate's own schedules for any number of ranks in one
//! thread and predicts their time under the α-β-γ model.
//!
//! A collective is simulated in two passes. First every rank's schedule — the very code that
//! runs between threads and between MPI processes — runs alone against a recording transport
//! on a zero-sized element type (`transport::sim`), which writes down its messages and
//! reductions and moves no data; then the traces are replayed against each other (`engine`):
//! the k-th send on an edge meets the k-th receive, a transfer of m bytes takes α + βm once
//! both ends are posted and both ranks' ports are free, a reduction of m bytes γm. Memory is
//! the traces, O(messages): trees and butterflies reach 10⁴ ranks and more; the ring's
//! 2(p − 1) steps per rank make its traces grow as p².
//!
//! The model is the one of Träff 2021 (`/work/shared/papers/000_0c86cefcaf7b0d0a.txt`, §1.2):
//! uniform links, linear cost, bidirectional (telephone-like) ports, in which that paper counts
//! 4h − 3 + 3(b − 1) steps for the dual-root algorithm; with [`Ports::Unidirectional`] a rank
//! sends or receives, not both. What it leaves out: local copies, contention beyond the two
//! ends of a message, hierarchy (every pair of ranks is equally far), eager sends (a send
//! waits for its receive). `tests/sim.rs` checks the paper's step counts exactly.
//!
//! **Hierarchy.** [`Machine`] places the ranks on `nodes × sockets × cores` with an α and β
//! per level and a link per node that the node's inter-node messages share
//! ([`simulate_on`] runs a flat schedule on it); [`simulate_hierarchical`] runs the
//! compositions of `crate::hierarchy` (group stage, leaders' stage, group stage) and the
//! reduce-scatter/allgather allreduce on it, each stage the crate's flat schedule traced on
//! its sub-communicator. `tests/sim_hier.rs` checks
//! both against times computed by hand.
//!
//! ```
//! use corecoll::sim::{self, Collective, Model, Case};
//! use corecoll::{Algorithm, Block};
//!
//! // The dual-root allreduce of 1 000 000 ints on the 1 152 ranks of Träff's 36 × 32 machine.
//! let alg = Algorithm::DualRoot { block: Block::Elements(16_000) };
//! let case = Case::new(Collective::Allreduce(alg), 1152, 1_000_000);
//! let model = Model { alpha_ns: 2000.0, beta_ns: 0.1, gamma_ns: 0.05, ..Model::default() };
//! let predicted = sim::simulate(&case, &model).unwrap();
//! assert!(predicted.time_ns > 3.0 * 0.1 * 4e6); // at least 3βm
//! assert_eq!(predicted.block, 16_000);
//! ```

mod compose;
mod engine;
mod machine;

pub use compose::{simulate_hierarchical, Composition, Grouping, HierCase};
pub use machine::{simulate_on, Link, Machine};

use crate::algorithms;
use crate::error::{Error, Result};
use crate::mailbox::{Kind, Tag};
use crate::profile::{Level, Profile};
use crate::select::{
    Algorithm, Allgather, Alltoall, Barrier, Broadcast, Costs, Flat, Gather, Reduce, ReduceScatter,
    Scan, Scatter,
};
use crate::transport::sim::{SimOp, SimTransport, Trace, Unit};

/// Whether a rank can send and receive at the same time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ports {
    /// Telephone-like: one send and one receive at once (Träff 2021's model); an exchange
    /// costs one step.
    #[default]
    Bidirectional,
    /// One transfer at a time per rank, in either direction; an exchange costs two steps.
    Unidirectional,
}

/// The α-β-γ cost model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    /// Start-up time per message, ns.
    pub alpha_ns: f64,
    /// Transfer time per byte, ns.
    pub beta_ns: f64,
    /// Reduction time per byte combined, ns.
    pub gamma_ns: f64,
    /// The ports of every rank.
    pub ports: Ports,
}

impl Default for Model {
    /// A rank per core on the development machine: the built-in constants of a profile that
    /// measured nothing ([`Profile::default`] at [`Level::L3`]), bidirectional.
    fn default() -> Model {
        Model::from_profile(&Profile::default(), Level::L3, true)
    }
}

impl Model {
    /// The model of one level of a calibrated machine (`corecoll-bench --calibrate`): its α and
    /// β (or its fallback's, [`Profile::resolve`]) and the γ of floating-point or integer sums,
    /// bidirectional.
    pub fn from_profile(profile: &Profile, level: Level, float: bool) -> Model {
        let r = profile.resolve(level);
        Model {
            alpha_ns: r.alpha_ns,
            beta_ns: r.beta_ns,
            gamma_ns: profile.gamma_ns(float),
            ports: Ports::Bidirectional,
        }
    }

    /// The model that counts steps: α = 1, β = γ = 0, so that a schedule's predicted time is
    /// the number of transfers on its critical path.
    pub fn steps(ports: Ports) -> Model {
        Model {
            alpha_ns: 1.0,
            beta_ns: 0.0,
            gamma_ns: 0.0,
            ports,
        }
    }
}

/// A collective and the algorithm to simulate (not `Auto`, and none of the shared-memory
/// ones: they read other ranks' memory instead of sending messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Collective {
    /// `Comm::allreduce_with`: `count` elements per rank.
    Allreduce(Algorithm),
    /// `Comm::broadcast_with`: `count` elements from the root.
    Broadcast(Broadcast),
    /// `Comm::reduce_with`: `count` elements per rank, to the root.
    Reduce(Reduce),
    /// `Comm::scan_with`: `count` elements per rank.
    Scan(Scan),
    /// `Comm::gather_with`: `count` elements from each rank.
    Gather(Gather),
    /// `Comm::scatter_with`: `count` elements to each rank.
    Scatter(Scatter),
    /// `Comm::allgather_with`: `count` elements from each rank.
    Allgather(Allgather),
    /// `Comm::alltoall_with`: `count` elements from each rank to each rank.
    Alltoall(Alltoall),
    /// `Comm::reduce_scatter_block_with`: `count` elements of the result per rank.
    ReduceScatter(ReduceScatter),
    /// `Comm::barrier_with` (`count` is ignored).
    Barrier(Barrier),
}

impl Collective {
    /// Which collective it is (without the algorithm).
    pub fn kind(&self) -> crate::tuning::Collective {
        use crate::tuning::Collective as K;
        match self {
            Collective::Allreduce(_) => K::Allreduce,
            Collective::Broadcast(_) => K::Broadcast,
            Collective::Reduce(_) => K::Reduce,
            Collective::Scan(_) => K::Scan,
            Collective::Gather(_) => K::Gather,
            Collective::Scatter(_) => K::Scatter,
            Collective::Allgather(_) => K::Allgather,
            Collective::Alltoall(_) => K::Alltoall,
            Collective::ReduceScatter(_) => K::ReduceScatter,
            Collective::Barrier(_) => K::Barrier,
        }
    }

    /// The collective's name and the algorithm's, as the benchmark spells them
    /// (`("allreduce", "dual-root")`).
    pub fn parts(&self) -> (&'static str, &'static str) {
        let algorithm = match self {
            Collective::Allreduce(a) => a.name(),
            Collective::Broadcast(a) => a.name(),
            Collective::Reduce(a) => a.name(),
            Collective::Scan(a) => a.name(),
            Collective::Gather(a) => a.name(),
            Collective::Scatter(a) => a.name(),
            Collective::Allgather(a) => a.name(),
            Collective::Alltoall(a) => a.name(),
            Collective::ReduceScatter(a) => a.name(),
            Collective::Barrier(a) => a.name(),
        };
        (self.kind().name(), algorithm)
    }

    /// [`Collective::parts`] joined: `allreduce/dual-root`.
    pub fn name(&self) -> String {
        let (c, a) = self.parts();
        format!("{c}/{a}")
    }

    /// Every algorithm of every collective that the simulator can run (blocks `Auto`).
    pub fn all() -> Vec<Collective> {
        let mut v = Vec::new();
        v.extend(Algorithm::ALL.map(Collective::Allreduce));
        v.extend(Broadcast::ALL.map(Collective::Broadcast));
        v.extend(Reduce::ALL.map(Collective::Reduce));
        v.extend(Scan::ALL.map(Collective::Scan));
        v.extend(Gather::ALL.map(Collective::Gather));
        v.extend(Scatter::ALL.map(Collective::Scatter));
        v.extend(Allgather::ALL.map(Collective::Allgather));
        v.extend(Alltoall::ALL.map(Collective::Alltoall));
        v.extend(ReduceScatter::ALL.map(Collective::ReduceScatter));
        v.extend(Barrier::ALL.map(Collective::Barrier));
        v.retain(|c| c.simulable().is_ok());
        v
    }

    /// `Ok` if the simulator can run it; else why not.
    fn simulable(&self) -> std::result::Result<(), &'static str> {
        if self.parts().1 == "auto" {
            return Err(
                "`Auto` chooses by the machine it runs on; simulate each algorithm instead",
            );
        }
        let native = matches!(
            self,
            Collective::Allreduce(Algorithm::Native)
                | Collective::Broadcast(Broadcast::Native)
                | Collective::Reduce(Reduce::Native)
        );
        if native {
            return Err("it is MPI's own collective");
        }
        // What runs on the communicator rather than on one transport: the shared-memory
        // algorithms, and the hierarchical ones (sub-communicators per level).
        let on_comm = match *self {
            Collective::Allreduce(a) => a.needs_shared_memory(),
            Collective::Broadcast(a) => a.needs_shared_memory(),
            Collective::Reduce(a) => a.needs_shared_memory(),
            Collective::Allgather(a) => matches!(
                a,
                Allgather::Direct | Allgather::Hierarchical | Allgather::HierarchicalDirect
            ),
            Collective::Alltoall(a) => {
                matches!(a, Alltoall::Direct | Alltoall::RingLeaders { .. })
            }
            Collective::ReduceScatter(a) => a == ReduceScatter::Direct,
            Collective::Barrier(a) => {
                matches!(a, Barrier::Hierarchical | Barrier::HierarchicalDirect)
            }
            Collective::Gather(a) => a.needs_shared_memory(),
            Collective::Scatter(a) => a.needs_shared_memory(),
            Collective::Scan(_) => false,
        };
        if on_comm {
            return Err("it reads other ranks' memory or runs on a hierarchy of \
                        sub-communicators, not on one transport, and the model has neither");
        }
        Ok(())
    }
}

/// One simulated call: which collective and algorithm, on how many ranks, how much data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// The collective and its algorithm.
    pub collective: Collective,
    /// Ranks (at least 1).
    pub ranks: usize,
    /// Elements, as the collective's count argument ([`Collective`] says per what).
    pub count: usize,
    /// Bytes per element (4 for the paper's `MPI_INT`).
    pub elem_bytes: usize,
    /// Root of the rooted collectives.
    pub root: usize,
    /// Whether the op is commutative.
    pub commutative: bool,
}

impl Case {
    /// `collective` of `count` 4-byte elements on `ranks` ranks, root 0, a commutative op.
    pub fn new(collective: Collective, ranks: usize, count: usize) -> Case {
        Case {
            collective,
            ranks,
            count,
            elem_bytes: 4,
            root: 0,
            commutative: true,
        }
    }
}

/// What the simulator predicts for a [`Case`].
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// When the last rank finishes, ns.
    pub time_ns: f64,
    /// Transfers on the critical path: the time under [`Model::steps`] with the same ports.
    pub rounds: u64,
    /// Messages sent in all.
    pub messages: u64,
    /// The most bytes any one rank sent.
    pub max_bytes_sent: u64,
    /// The most bytes any one rank received.
    pub max_bytes_received: u64,
    /// Bytes sent by all ranks together.
    pub total_bytes: u64,
    /// The most bytes any one rank combined with the op.
    pub max_bytes_reduced: u64,
    /// The pipeline block (or ring piece) in elements the algorithm ran with (0 if it has
    /// none): the case's own `Block::Elements`, or `Block::Auto`'s choice under the model.
    pub block: usize,
}

/// Simulates `case` under `model`.
///
/// Errors: [`Error::Simulation`] for a collective the simulator cannot run (`Auto`, the
/// shared-memory algorithms, `Native`), [`Error::RankOutOfRange`] for a root outside the ranks,
/// [`Error::ZeroRanks`], and [`Error::Unsupported`] where the real call would refuse (the ring
/// with a non-commutative op).
pub fn simulate(case: &Case, model: &Model) -> Result<Prediction> {
    let costs = Costs::new(model.alpha_ns, model.beta_ns);
    let (traces, block) = record(case, costs, 1)?;
    let params = |m: &Model| engine::Params {
        alpha: m.alpha_ns,
        beta: m.beta_ns,
        gamma: m.gamma_ns,
        elem_bytes: case.elem_bytes as u64,
        bidirectional: m.ports == Ports::Bidirectional,
        machine: None,
    };
    predict(
        &traces,
        params(model),
        params(&Model::steps(model.ports)),
        block,
    )
}

/// Replays `traces` under `params` (the time) and `steps` (the same machine counting steps:
/// α = 1, β = γ = 0): the prediction, with the schedule's `block`.
fn predict(
    traces: &[Trace],
    params: engine::Params,
    steps: engine::Params,
    block: usize,
) -> Result<Prediction> {
    let elem_bytes = params.elem_bytes;
    let out = engine::replay(traces, params)?;
    let steps = engine::replay(traces, steps)?;
    let max = |v: &[u64]| v.iter().copied().max().unwrap_or(0);
    Ok(Prediction {
        time_ns: out.finish.iter().copied().fold(0.0, f64::max),
        rounds: steps.finish.iter().copied().fold(0.0, f64::max) as u64,
        messages: out.messages,
        max_bytes_sent: max(&out.sent),
        max_bytes_received: max(&out.received),
        total_bytes: out.sent.iter().sum(),
        max_bytes_reduced: max(&out.reduced) * elem_bytes,
        block,
    })
}

/// Runs every rank's schedule of `case` against the recording transport: the traces, and the
/// block the schedule ran with (`Block::Auto`'s under `costs`). `seq` is the calls' sequence
/// number in their tags (a composition gives each stage its own).
fn record(case: &Case, costs: Costs, seq: u64) -> Result<(Vec<Trace>, usize)> {
    let p = case.ranks;
    if p == 0 {
        return Err(Error::ZeroRanks);
    }
    if let Err(why) = case.collective.simulable() {
        return Err(Error::Simulation {
            what: format!("cannot simulate {}: {why}", case.collective.name()),
        });
    }
    check_root(case.root, p)?;
    if !case.commutative
        && matches!(
            case.collective,
            Collective::Allreduce(Algorithm::Ring { .. })
        )
    {
        return Err(Error::Unsupported {
            rank: 0,
            op: "simulate",
            what: "the ring allreduce reorders operands and cannot honour a non-commutative op"
                .into(),
        });
    }
    let (n, e) = (case.count, case.elem_bytes);
    let block = match case.collective {
        Collective::Allreduce(a) if a.has_block() => a.block_elements(p, n, e, costs),
        Collective::Broadcast(a) => a.block_elements(p, n, e, costs),
        Collective::Reduce(a) => a.block_elements(p, n, e, costs),
        Collective::Scan(a) => a.block_elements(p, n, e, costs),
        _ => 0,
    };
    let mut traces = Vec::with_capacity(p);
    for rank in 0..p {
        let t = SimTransport::new(rank, p);
        run_rank(&t, case, block, seq)?;
        traces.push(t.into_trace());
    }
    Ok((traces, block))
}

/// Runs rank `t.rank()`'s part of `case` on the recording transport `t`.
fn run_rank(t: &SimTransport, case: &Case, block: usize, seq: u64) -> Result<()> {
    use crate::algorithms::{alltoall, barrier, gather, reduce_scatter};
    let op = SimOp {
        transport: t,
        commutative: case.commutative,
    };
    let (p, n, root) = (case.ranks, case.count, case.root);
    let kind = Kind::Coll(case.collective.kind());
    let tag = |variant: u8| Tag {
        kind,
        variant,
        seq,
        op: 0,
    };
    let one = || vec![Unit; n];
    let all = || vec![Unit; p.saturating_mul(n)];
    match case.collective {
        Collective::Allreduce(a) => {
            let s = scheduled(a.flat())?;
            algorithms::allreduce::run(t, &mut one(), &op, s, block, tag(a.id()))
        }
        Collective::Broadcast(a) => {
            let s = scheduled(a.flat())?;
            algorithms::broadcast::run(t, &mut one(), root, s, block, tag(a.id()))
        }
        Collective::Reduce(a) => {
            let s = scheduled(a.flat())?;
            algorithms::reduce::run(t, &mut one(), &op, root, s, block, tag(a.id()))
        }
        Collective::Scan(a) => {
            let s = scheduled(a.schedule().map(Flat::Schedule))?;
            algorithms::scan::run(t, &mut one(), &op, s, block, false, tag(a.id()))
        }
        Collective::Gather(a) => {
            let s = scheduled(a.flat())?;
            gather::run_gather(t, &one(), &mut all(), root, s, tag(a.id()))
        }
        Collective::Scatter(a) => {
            let s = scheduled(a.flat())?;
            gather::run_scatter(t, &all(), &mut one(), root, s, tag(a.id()))
        }
        Collective::Allgather(a) => {
            let s = scheduled(a.flat())?;
            gather::run_allgather(t, &one(), &mut all(), s, tag(a.id()))
        }
        Collective::Alltoall(a) => {
            let s = scheduled(a.flat())?;
            alltoall::run(t, &all(), &mut all(), s, tag(a.id()))
        }
        Collective::ReduceScatter(a) => {
            let s = scheduled(a.flat())?;
            reduce_scatter::run(t, &all(), &mut one(), &op, s, tag(a.id()))
        }
        Collective::Barrier(a) => {
            let s = scheduled(a.schedule().map(Flat::Schedule))?;
            barrier::run(t, s, tag(a.id()))
        }
    }
}

/// The schedule of a flat choice (`simulate` refused every other before any rank ran).
fn scheduled<S>(flat: Option<Flat<S>>) -> Result<S> {
    match flat {
        Some(Flat::Schedule(s)) => Ok(s),
        _ => Err(Error::Simulation {
            what: "only the schedules over a transport can be simulated".into(),
        }),
    }
}

/// `Err` unless `root` is one of `p` ranks.
pub(crate) fn check_root(root: usize, p: usize) -> Result<()> {
    if root >= p {
        return Err(Error::RankOutOfRange {
            rank: 0,
            op: "simulate",
            peer: root,
            size: p,
        });
    }
    Ok(())
}
