//! The simulator's hierarchical machine: `nodes × sockets × cores` ranks, a cost per level of
//! distance, and a link per node that the node's ranks share.
//!
//! The flat [`Model`] makes every pair of ranks equally far and lets only the two
//! ends of a message contend. A cluster is neither: two ranks of one socket talk through a
//! shared cache, two sockets of a node through the coherence interconnect, two nodes through a
//! network adapter that all ranks of a node share. [`Machine`] models exactly that much:
//!
//! - **Placement:** compact, as `mpirun --map-by core` places ranks: rank r runs on node
//!   r / (sockets·cores), socket (r / cores) mod sockets, core r mod cores.
//! - **Distance:** a transfer of m bytes costs α + βm of the level that separates its two ranks:
//!   [`Machine::socket`] (one socket), [`Machine::node`] (two sockets of one node) or
//!   [`Machine::network`] (two nodes).
//! - **The shared link:** every node has a link to the network, `lanes` transfers wide in each
//!   direction (1, the default: one network adapter that moves one message at a time). A
//!   transfer between nodes needs, besides the two ranks' ports, a free lane of its source
//!   node's outgoing link and one of its destination node's incoming link, and holds them for
//!   its whole α + βm. So p/N ranks of a node that all send off the node at once take turns,
//!   as on a real adapter whose bandwidth they share; within a node, nothing is shared but
//!   the ports. The engine keeps the lanes' free times: O(lanes) per transfer.
//!
//! What it still leaves out: contention inside a node (memory bandwidth, the socket
//! interconnect), the network's topology beyond the adapters (a full-bisection switch is
//! assumed), and a lane's overlap of one message's latency with the next one's bytes.

use super::engine::{self, Hier};
use super::{predict, record, Case, Model, Ports, Prediction};
use crate::error::{Error, Result};
#[cfg(feature = "unstable")]
use crate::profile::{Level, Profile};
use crate::select::Costs;

/// The α-β costs of one level of a [`Machine`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Start-up time per message, ns.
    pub alpha_ns: f64,
    /// Transfer time per byte, ns.
    pub beta_ns: f64,
}

impl Link {
    /// The costs `Block::Auto` chooses blocks by.
    pub(crate) fn costs(self) -> Costs {
        Costs::new(self.alpha_ns, self.beta_ns)
    }
}

/// A cluster of `nodes` nodes of `sockets` sockets of `cores` cores, a rank per core, placed
/// compactly (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// Nodes (at least 1).
    pub nodes: usize,
    /// Sockets per node (at least 1).
    pub sockets: usize,
    /// Cores (ranks) per socket (at least 1).
    pub cores: usize,
    /// Between two ranks of one socket.
    pub socket: Link,
    /// Between two ranks of one node on different sockets.
    pub node: Link,
    /// Between two ranks of different nodes.
    pub network: Link,
    /// Transfers a node's link carries at once in each direction (at least 1).
    pub lanes: usize,
    /// Reduction time per byte combined, ns.
    pub gamma_ns: f64,
    /// The ports of every rank.
    pub ports: Ports,
}

impl Machine {
    /// The flat `model` as a machine: one node of one socket of `ranks` cores, every level
    /// costing the model's α and β. It predicts exactly what [`super::simulate`] does.
    pub fn flat(model: &Model, ranks: usize) -> Machine {
        let link = Link {
            alpha_ns: model.alpha_ns,
            beta_ns: model.beta_ns,
        };
        Machine {
            nodes: 1,
            sockets: 1,
            cores: ranks,
            socket: link,
            node: link,
            network: link,
            lanes: 1,
            gamma_ns: model.gamma_ns,
            ports: model.ports,
        }
    }

    /// `nodes × sockets × cores` with the costs of a calibrated profile's levels
    /// ([`Profile::resolve`](crate::Profile::resolve)): within a socket its `l3` level, across sockets its `machine`
    /// level, across nodes its `mpi` level (measured on one node: a stand-in for a network;
    /// set [`Machine::network`] to the real one's). One lane, bidirectional ports, and the γ
    /// of floating-point or integer sums.
    #[cfg(feature = "unstable")]
    pub(crate) fn from_profile(
        profile: &Profile,
        (nodes, sockets, cores): (usize, usize, usize),
        float: bool,
    ) -> Machine {
        let link = |level| {
            let r = profile.resolve(level);
            Link {
                alpha_ns: r.alpha_ns,
                beta_ns: r.beta_ns,
            }
        };
        Machine {
            nodes,
            sockets,
            cores,
            socket: link(Level::L3),
            node: link(Level::Machine),
            network: link(Level::Mpi),
            lanes: 1,
            gamma_ns: profile.gamma_ns(float),
            ports: Ports::Bidirectional,
        }
    }

    /// The number of ranks: nodes · sockets · cores.
    pub fn ranks(&self) -> usize {
        self.nodes
            .saturating_mul(self.sockets)
            .saturating_mul(self.cores)
    }

    /// The costs between ranks `a` and `b`: the level that separates them.
    pub fn link_between(&self, a: usize, b: usize) -> Link {
        [self.socket, self.node, self.network]
            [engine::level_between(self.cores, self.sockets, a, b)]
    }

    /// The costs of the widest level the machine's ranks span: what a flat schedule placed on
    /// it chooses its `Block::Auto` blocks by (its slowest messages).
    pub fn widest(&self) -> Link {
        self.link_between(0, self.ranks().saturating_sub(1))
    }

    /// `Err` unless every count is at least 1.
    pub(crate) fn check(&self) -> Result<()> {
        let bad = [
            ("nodes", self.nodes),
            ("sockets", self.sockets),
            ("cores", self.cores),
            ("lanes", self.lanes),
        ]
        .into_iter()
        .find(|&(_, n)| n == 0);
        match bad {
            Some((what, _)) => Err(Error::Simulation {
                what: format!("a machine needs at least one of its {what}, not 0"),
            }),
            None => Ok(()),
        }
    }

    /// The engine's parameters for elements of `elem_bytes`: the real costs, or (`steps`) every
    /// transfer one unit and reductions free, on the same machine.
    pub(crate) fn params(&self, elem_bytes: usize, steps: bool) -> engine::Params {
        let level = |l: Link| {
            if steps {
                (1.0, 0.0)
            } else {
                (l.alpha_ns, l.beta_ns)
            }
        };
        let socket = level(self.socket);
        engine::Params {
            alpha: socket.0,
            beta: socket.1,
            gamma: if steps { 0.0 } else { self.gamma_ns },
            elem_bytes: elem_bytes as u64,
            bidirectional: self.ports == Ports::Bidirectional,
            machine: Some(Hier {
                cores: self.cores,
                sockets: self.sockets,
                levels: [socket, level(self.node), level(self.network)],
                lanes: self.lanes,
            }),
        }
    }
}

/// Simulates the flat schedule of `case` placed on `machine` (compactly: rank r on node
/// r / (sockets·cores)), with `Block::Auto` blocks chosen by [`Machine::widest`].
///
/// Errors: those of [`super::simulate`], and [`Error::Simulation`] for a machine with a zero
/// count or whose ranks are not `case.ranks`.
pub fn simulate_on(case: &Case, machine: &Machine) -> Result<Prediction> {
    machine.check()?;
    if machine.ranks() != case.ranks {
        return Err(Error::Simulation {
            what: format!(
                "the case has {} ranks but the machine {} × {} × {} = {}",
                case.ranks,
                machine.nodes,
                machine.sockets,
                machine.cores,
                machine.ranks()
            ),
        });
    }
    let (traces, block) = record(case, machine.widest().costs(), 1)?;
    predict(
        &traces,
        machine.params(case.elem_bytes, false),
        machine.params(case.elem_bytes, true),
        block,
    )
}
