//! The timing half of the simulator: replays the p recorded traces against each other under
//! the α-β-γ model, as a discrete-event simulation in one thread.
//!
//! **Matching.** Messages on one directed edge are matched in order, the k-th send with the
//! k-th receive (the transports deliver in order per edge); a pair whose lengths or tags differ
//! is a schedule bug and an `Err`.
//!
//! **Blocking and time.** A rank runs its steps in order. A call posts all its messages at the
//! rank's current time and ends when the last of them has been transferred; a reduction of e
//! elements adds γ·e·(element size). A transfer starts when both its send and its receive are
//! posted and both ranks' ports are free, and takes α + β·bytes — a send is done when the data
//! has arrived (rendezvous), as the shared-memory transport's single-copy sends are and as
//! Träff's round model counts a step. Ports:
//! - *bidirectional* (telephone-like): a rank sends one message and receives one at the same
//!   time, so a `sendrecv` costs one step;
//! - *unidirectional*: a rank does one transfer at a time, so a `sendrecv` costs two.
//!
//! Transfers compete for ports in order of the time they became ready (ties by posting
//! order), a greedy list schedule: deterministic, and exact for the lock-step schedules whose
//! step counts the tests check. Time only moves forward — a transfer's end is at or after the
//! ready time of any transfer it makes ready — so the event order is sound.
//!
//! **A hierarchical machine** (`Params::machine`, `sim::Machine`): a transfer costs the α and
//! β of the level between its ranks (socket, node, network), and one between nodes also needs
//! a lane of its source node's outgoing link and one of its destination node's incoming link,
//! the earliest free of each, held for the whole transfer. Without one, every pair costs the
//! flat α + β·bytes and the replay is exactly the flat one.
//!
//! **Deadlock.** If no transfer is ready while some rank has not finished, its trace waits
//! for a message nobody sends: an `Err` naming the rank and the edge.

use crate::error::{Error, Result};
use crate::mailbox::Tag;
use crate::transport::sim::{Msg, Step, Trace};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// The model's constants, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Params {
    /// Per message.
    pub alpha: f64,
    /// Per byte transferred.
    pub beta: f64,
    /// Per byte reduced.
    pub gamma: f64,
    /// Bytes per element.
    pub elem_bytes: u64,
    /// Whether a rank may send and receive at the same time.
    pub bidirectional: bool,
    /// The hierarchical machine the ranks are placed on, or `None` for the flat one, where
    /// every pair costs `alpha` + `beta`·bytes.
    pub machine: Option<Hier>,
}

/// A hierarchical machine for the replay: ranks placed compactly, `cores` per socket and
/// `sockets` per node; α and β per level; `lanes` concurrent transfers per node and direction
/// on the node's shared link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Hier {
    /// Ranks per socket (at least 1).
    pub cores: usize,
    /// Sockets per node (at least 1).
    pub sockets: usize,
    /// (α, β) within a socket, across the sockets of a node, across nodes.
    pub levels: [(f64, f64); 3],
    /// Inter-node transfers a node's link carries at once in each direction (at least 1).
    pub lanes: usize,
}

impl Hier {
    /// The level of a transfer from `s` to `d`: 0 within a socket, 1 within a node, 2 across.
    fn level(&self, s: usize, d: usize) -> usize {
        level_between(self.cores, self.sockets, s, d)
    }
}

/// The level separating ranks `a` and `b` placed compactly, `cores` per socket and `sockets`
/// per node: 0 within a socket, 1 within a node, 2 across nodes.
pub(crate) fn level_between(cores: usize, sockets: usize, a: usize, b: usize) -> usize {
    let node = cores * sockets;
    if a / node != b / node {
        2
    } else if a / cores != b / cores {
        1
    } else {
        0
    }
}

/// What the replay found.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Outcome {
    /// When each rank finished, ns.
    pub finish: Vec<f64>,
    /// Bytes each rank sent.
    pub sent: Vec<u64>,
    /// Bytes each rank received.
    pub received: Vec<u64>,
    /// Elements each rank reduced.
    pub reduced: Vec<u64>,
    /// Messages transferred in all.
    pub messages: u64,
}

/// A transfer whose both ends are posted, waiting for ports.
#[derive(Debug, Clone, Copy)]
struct Ready {
    /// When both ends were posted.
    at: f64,
    /// Posting order, to break ties deterministically.
    seq: u64,
    src: u32,
    dst: u32,
    bytes: u64,
}

impl PartialEq for Ready {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.total_cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

/// The posted, unmatched messages of one directed edge: (post time, message).
#[derive(Default)]
struct Edge {
    sends: VecDeque<(f64, Msg)>,
    recvs: VecDeque<(f64, Msg)>,
}

/// The replay's state.
struct Replay<'a> {
    traces: &'a [Trace],
    params: Params,
    /// Next step of each rank.
    pc: Vec<usize>,
    /// Each rank's time: when its current call was posted, or when it finished.
    clock: Vec<f64>,
    /// Messages of the current call not yet transferred.
    pending: Vec<u32>,
    /// The latest end among the current call's transfers.
    call_end: Vec<f64>,
    /// When each rank's send port (or only port) is free.
    out_free: Vec<f64>,
    /// When each rank's receive port is free (unused when unidirectional).
    in_free: Vec<f64>,
    /// Per node, when each lane of its link is free for messages leaving the node
    /// (`lanes` entries per node; empty on a flat machine).
    link_out: Vec<f64>,
    /// The same for messages entering the node.
    link_in: Vec<f64>,
    edges: HashMap<(u32, u32), Edge>,
    ready: BinaryHeap<Ready>,
    seq: u64,
    out: Outcome,
}

/// Replays `traces` (one per rank) under `params`.
pub(crate) fn replay(traces: &[Trace], params: Params) -> Result<Outcome> {
    let p = traces.len();
    let lanes = params.machine.map_or(0, |h| {
        let node = h.cores * h.sockets;
        p.div_ceil(node) * h.lanes
    });
    let mut r = Replay {
        traces,
        params,
        pc: vec![0; p],
        clock: vec![0.0; p],
        pending: vec![0; p],
        call_end: vec![0.0; p],
        out_free: vec![0.0; p],
        in_free: vec![0.0; p],
        link_out: vec![0.0; lanes],
        link_in: vec![0.0; lanes],
        edges: HashMap::new(),
        ready: BinaryHeap::new(),
        seq: 0,
        out: Outcome {
            finish: vec![f64::NAN; p],
            sent: vec![0; p],
            received: vec![0; p],
            reduced: vec![0; p],
            messages: 0,
        },
    };
    for rank in 0..p {
        r.advance(rank)?;
    }
    while let Some(t) = r.ready.pop() {
        r.transfer(t)?;
    }
    if let Some(stuck) = (0..p).find(|&x| r.out.finish[x].is_nan()) {
        return Err(r.deadlock(stuck));
    }
    Ok(r.out)
}

impl Replay<'_> {
    /// Runs rank `x`'s steps from its current one until it posts a call that must wait, or
    /// finishes.
    fn advance(&mut self, x: usize) -> Result<()> {
        let trace = &self.traces[x];
        while let Some(&step) = trace.steps.get(self.pc[x]) {
            self.pc[x] += 1;
            match step {
                Step::Reduce { elems } => {
                    self.out.reduced[x] += elems;
                    self.clock[x] += self.params.gamma * (elems * self.params.elem_bytes) as f64;
                }
                Step::Comm {
                    start,
                    sends,
                    recvs,
                } => {
                    if sends + recvs == 0 {
                        continue;
                    }
                    self.pending[x] = sends + recvs;
                    self.call_end[x] = self.clock[x];
                    let (s, r) = trace.messages(start, sends, recvs);
                    for &m in s {
                        self.post(x, m, true)?;
                    }
                    for &m in r {
                        self.post(x, m, false)?;
                    }
                    return Ok(());
                }
            }
        }
        self.out.finish[x] = self.clock[x];
        Ok(())
    }

    /// Posts message `m` of rank `x` (a send if `send`), matching it with the other end if
    /// that is posted.
    fn post(&mut self, x: usize, m: Msg, send: bool) -> Result<()> {
        let me = x as u32;
        let (src, dst) = if send { (me, m.peer) } else { (m.peer, me) };
        if m.peer as usize >= self.traces.len() {
            return Err(Error::RankOutOfRange {
                rank: x,
                op: "simulated schedule",
                peer: m.peer as usize,
                size: self.traces.len(),
            });
        }
        let now = self.clock[x];
        let edge = self.edges.entry((src, dst)).or_default();
        let (mine, theirs) = if send {
            (&mut edge.sends, &mut edge.recvs)
        } else {
            (&mut edge.recvs, &mut edge.sends)
        };
        let Some((then, other)) = theirs.pop_front() else {
            mine.push_back((now, m));
            return Ok(());
        };
        if other.elems != m.elems || other.tag != m.tag {
            let (s, r) = if send { (m, other) } else { (other, m) };
            return Err(Error::Mismatch {
                rank: dst as usize,
                peer: src as usize,
                op: "simulated schedule",
                expected: format!("{} elements of {}", r.elems, Tag::describe(r.tag)),
                found: format!("{} elements of {}", s.elems, Tag::describe(s.tag)),
            });
        }
        self.seq += 1;
        self.ready.push(Ready {
            at: now.max(then),
            seq: self.seq,
            src,
            dst,
            bytes: m.elems * self.params.elem_bytes,
        });
        Ok(())
    }

    /// Carries out a ready transfer: waits for the ports, takes α + β·bytes, and ends the
    /// calls it completes.
    fn transfer(&mut self, t: Ready) -> Result<()> {
        let (s, d) = (t.src as usize, t.dst as usize);
        let mut start = if self.params.bidirectional {
            t.at.max(self.out_free[s]).max(self.in_free[d])
        } else {
            t.at.max(self.out_free[s]).max(self.out_free[d])
        };
        let (alpha, beta) = match self.params.machine {
            None => (self.params.alpha, self.params.beta),
            Some(h) => {
                let level = h.level(s, d);
                if level == 2 {
                    // The earliest free lane of the source node's outgoing link and of the
                    // destination node's incoming one: O(lanes) per transfer.
                    let node = h.cores * h.sockets;
                    let (o, i) = (
                        earliest(&self.link_out, s / node, h.lanes),
                        earliest(&self.link_in, d / node, h.lanes),
                    );
                    start = start.max(self.link_out[o]).max(self.link_in[i]);
                    let (a, b) = h.levels[2];
                    let end = start + a + b * t.bytes as f64;
                    self.link_out[o] = end;
                    self.link_in[i] = end;
                }
                h.levels[level]
            }
        };
        let end = start + alpha + beta * t.bytes as f64;
        self.out_free[s] = end;
        if self.params.bidirectional {
            self.in_free[d] = end;
        } else {
            self.out_free[d] = end;
        }
        self.out.messages += 1;
        self.out.sent[s] += t.bytes;
        self.out.received[d] += t.bytes;
        for x in [s, d] {
            self.call_end[x] = self.call_end[x].max(end);
            self.pending[x] -= 1;
            if self.pending[x] == 0 {
                self.clock[x] = self.call_end[x];
                self.advance(x)?;
            }
        }
        Ok(())
    }

    /// The error for rank `x`, which waits forever: one of its posted messages that nobody
    /// matches.
    fn deadlock(&self, x: usize) -> Error {
        let me = x as u32;
        let waits = self
            .edges
            .iter()
            .find_map(|(&(s, d), e)| {
                if s == me && !e.sends.is_empty() {
                    Some(format!("its send to rank {d} is never matched"))
                } else if d == me && !e.recvs.is_empty() {
                    Some(format!("its receive from rank {s} is never matched"))
                } else {
                    None
                }
            })
            .unwrap_or_else(|| "it waits".to_string());
        Error::Simulation {
            what: format!(
                "rank {x} cannot finish its schedule (step {} of {}): {waits}",
                self.pc[x],
                self.traces[x].steps.len()
            ),
        }
    }
}

/// The index in `lanes` of node `node`'s earliest free lane (`per` lanes a node).
fn earliest(lanes: &[f64], node: usize, per: usize) -> usize {
    let first = node * per;
    (first..first + per)
        .min_by(|&a, &b| lanes[a].total_cmp(&lanes[b]))
        .expect("at least one lane")
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::mailbox::Kind;
    use crate::transport::sim::{SimTransport, Unit};
    use crate::transport::Transport;

    const TAG: Tag = Tag {
        kind: Kind::P2p,
        variant: 0,
        seq: 0,
        op: 0,
    };

    fn params(bidirectional: bool) -> Params {
        Params {
            alpha: 10.0,
            beta: 1.0,
            gamma: 0.5,
            elem_bytes: 4,
            bidirectional,
            machine: None,
        }
    }

    /// Records each rank's part with `f(transport)`.
    fn traces(p: usize, f: impl Fn(&SimTransport)) -> Vec<Trace> {
        (0..p)
            .map(|r| {
                let t = SimTransport::new(r, p);
                f(&t);
                t.into_trace()
            })
            .collect()
    }

    /// An exchange is one step with two ports, two without; a reduction after it adds γ.
    #[test]
    fn exchange_costs_one_or_two_transfers() {
        let tr = traces(2, |t| {
            let mut buf = [Unit; 5];
            let peer = 1 - t.rank();
            t.exchange_reduce(peer, &mut buf, &mut Vec::new(), TAG, &mut |_, _| {})
                .unwrap();
        });
        let one = replay(&tr, params(true)).unwrap();
        assert_eq!(one.finish, vec![10.0 + 20.0 + 10.0; 2]);
        assert_eq!(one.messages, 2);
        assert_eq!((one.sent, one.reduced), (vec![20, 20], vec![5, 5]));
        let two = replay(&tr, params(false)).unwrap();
        assert_eq!(two.finish, vec![2.0 * 30.0 + 10.0; 2]);
    }

    /// A chain of sends forwards one step per hop; a rank receiving from two ranks at once
    /// takes their messages one after the other.
    #[test]
    fn hops_add_up_and_ports_serialise() {
        let tr = traces(4, |t| {
            let mut b = [Unit; 1];
            match t.rank() {
                0 => t.send(1, TAG, &b).unwrap(),
                1 => {
                    t.recv(0, TAG, &mut b).unwrap();
                    t.send(2, TAG, &b).unwrap();
                }
                2 => t.recv(1, TAG, &mut b).unwrap(),
                _ => t.send(2, TAG, &b).unwrap(),
            }
            if t.rank() == 2 {
                t.recv(3, TAG, &mut b).unwrap();
            }
        });
        let out = replay(&tr, params(true)).unwrap();
        // 0→1 ends at 14, 1→2 at 28; 3→2 waits for rank 2's receive, posted at 28.
        assert_eq!(out.finish, vec![14.0, 28.0, 42.0, 42.0]);
    }

    /// Lengths that differ on an edge and a message nobody receives are errors.
    #[test]
    fn mismatch_and_deadlock_are_errors() {
        let tr = traces(2, |t| {
            let b = [Unit; 3];
            if t.rank() == 0 {
                t.send(1, TAG, &b).unwrap();
            } else {
                t.recv(0, TAG, &mut [Unit; 2]).unwrap();
            }
        });
        let e = replay(&tr, params(true)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Mismatch {
                    rank: 1,
                    peer: 0,
                    ..
                }
            ),
            "{e}"
        );
        let tr = traces(2, |t| {
            if t.rank() == 0 {
                t.recv(1, TAG, &mut [Unit; 1]).unwrap();
            }
        });
        let e = replay(&tr, params(true)).unwrap_err();
        assert!(e.to_string().contains("rank 0 cannot finish"), "{e}");
        assert!(e.to_string().contains("receive from rank 1"), "{e}");
    }
}
