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
//! use corecoll::algorithm::Any;
//! use corecoll::sim::{self, Model, Case};
//! use corecoll::{Algorithm, Block};
//!
//! // The dual-root allreduce of 1 000 000 ints on the 1 152 ranks of Träff's 36 × 32 machine.
//! let alg = Algorithm::DualRoot { block: Block::Elements(16_000) };
//! let case = Case::new(Any::Allreduce(alg), 1152, 1_000_000);
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
use crate::select::{Algorithm, Any, Costs, Flat};
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

/// Every algorithm the simulator can run: the schedules over a transport
/// ([`Any::is_schedule`]), of every collective.
pub fn algorithms() -> Vec<Any> {
    Any::all().into_iter().filter(Any::is_schedule).collect()
}

/// Why the simulator cannot run `algorithm`, if it cannot.
fn unsimulable(algorithm: &Any) -> Option<&'static str> {
    if algorithm.is_schedule() {
        None
    } else if algorithm.name() == "auto" {
        Some("`Auto` chooses by the machine it runs on; simulate each algorithm instead")
    } else if algorithm.name() == "native" {
        Some("it is MPI's own collective")
    } else {
        // What runs on the communicator rather than on one transport: the shared-memory
        // algorithms, and the hierarchical ones (sub-communicators per level).
        Some(
            "it reads other ranks' memory or runs on a hierarchy of sub-communicators, not on \
             one transport, and the model has neither",
        )
    }
}

/// One simulated call: which collective and algorithm, on how many ranks, how much data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// The collective and its algorithm.
    pub algorithm: Any,
    /// Ranks (at least 1).
    pub ranks: usize,
    /// Elements, as the collective's count argument: per rank (allreduce, reduce, scan), from
    /// the root (broadcast), from or to each rank (gather, scatter, allgather, all-to-all), of
    /// the result per rank (reduce-scatter); ignored by the barrier.
    pub count: usize,
    /// Bytes per element (4 for the paper's `MPI_INT`).
    pub elem_bytes: usize,
    /// Root of the rooted collectives.
    pub root: usize,
    /// Whether the op is commutative.
    pub commutative: bool,
}

impl Case {
    /// `algorithm` of `count` 4-byte elements on `ranks` ranks, root 0, a commutative op.
    pub fn new(algorithm: Any, ranks: usize, count: usize) -> Case {
        Case {
            algorithm,
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
    if let Some(why) = unsimulable(&case.algorithm) {
        return Err(Error::Simulation {
            what: format!("cannot simulate {}: {why}", case.algorithm),
        });
    }
    check_root(case.root, p)?;
    if !case.commutative && matches!(case.algorithm, Any::Allreduce(Algorithm::Ring { .. })) {
        return Err(Error::Unsupported {
            rank: 0,
            op: "simulate",
            what: "the ring allreduce reorders operands and cannot honour a non-commutative op"
                .into(),
        });
    }
    let (n, e) = (case.count, case.elem_bytes);
    let block = match case.algorithm {
        Any::Allreduce(a) if a.has_block() => a.block_elements(p, n, e, costs),
        Any::Broadcast(a) => a.block_elements(p, n, e, costs),
        Any::Reduce(a) => a.block_elements(p, n, e, costs),
        Any::Scan(a) => a.block_elements(p, n, e, costs),
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
    let kind = Kind::Coll(case.algorithm.collective());
    let tag = |variant: u8| Tag {
        kind,
        variant,
        seq,
        op: 0,
    };
    let one = || vec![Unit; n];
    let all = || vec![Unit; p.saturating_mul(n)];
    match case.algorithm {
        Any::Allreduce(a) => {
            let s = scheduled(a.flat())?;
            algorithms::allreduce::run(t, &mut one(), &op, s, block, tag(a.id()))
        }
        Any::Broadcast(a) => {
            let s = scheduled(a.flat())?;
            algorithms::broadcast::run(t, &mut one(), root, s, block, tag(a.id()))
        }
        Any::Reduce(a) => {
            let s = scheduled(a.flat())?;
            algorithms::reduce::run(t, &mut one(), &op, root, s, block, tag(a.id()))
        }
        Any::Scan(a) => {
            let s = scheduled(a.schedule().map(Flat::Schedule))?;
            algorithms::scan::run(t, &mut one(), &op, s, block, false, tag(a.id()))
        }
        Any::Gather(a) => {
            let s = scheduled(a.flat())?;
            gather::run_gather(t, &one(), &mut all(), root, s, tag(a.id()))
        }
        Any::Scatter(a) => {
            let s = scheduled(a.flat())?;
            gather::run_scatter(t, &all(), &mut one(), root, s, tag(a.id()))
        }
        Any::Allgather(a) => {
            let s = scheduled(a.flat())?;
            gather::run_allgather(t, &one(), &mut all(), s, tag(a.id()))
        }
        Any::Alltoall(a) => {
            let s = scheduled(a.flat())?;
            alltoall::run(t, &all(), &mut all(), s, tag(a.id()))
        }
        Any::ReduceScatter(a) => {
            let s = scheduled(a.flat())?;
            reduce_scatter::run(t, &all(), &mut one(), &op, s, tag(a.id()))
        }
        Any::Barrier(a) => {
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
