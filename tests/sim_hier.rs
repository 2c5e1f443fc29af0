//! The simulator's hierarchical machine (`sim::Machine`: levels of cost, a shared link per
//! node) and its hierarchical compositions (`sim::simulate_hierarchical`), against times and
//! counts computed by hand here. Costs are distinct powers of two per level and per byte, so
//! a sum of terms identifies which transfers were paid and how often.

use corecoll::algorithm::Any;
use corecoll::algorithm::{Allgather, Alltoall, Broadcast, Reduce, ReduceScatter};
use corecoll::sim::{self, Case, Composition, Grouping, HierCase, Link, Machine, Model, Ports};
use corecoll::{Algorithm, Block, Error};

const SOCKET: Link = Link {
    alpha_ns: 1.0,
    beta_ns: 0.0625,
};
const NODE: Link = Link {
    alpha_ns: 16.0,
    beta_ns: 0.5,
};
const NET: Link = Link {
    alpha_ns: 256.0,
    beta_ns: 4.0,
};
const GAMMA: f64 = 0.25;

fn machine(nodes: usize, sockets: usize, cores: usize, lanes: usize) -> Machine {
    Machine {
        nodes,
        sockets,
        cores,
        socket: SOCKET,
        node: NODE,
        network: NET,
        lanes,
        gamma_ns: GAMMA,
        ports: Ports::Bidirectional,
    }
}

/// α + βm of `l` for m bytes.
fn t(l: Link, bytes: usize) -> f64 {
    l.alpha_ns + l.beta_ns * bytes as f64
}

/// A sample of the simulable schedules (blocks given, so that they do not depend on costs).
fn sample() -> Vec<Any> {
    let block = Block::Elements(5);
    vec![
        Any::Allreduce(Algorithm::RecursiveDoubling),
        Any::Allreduce(Algorithm::Rabenseifner),
        Any::Allreduce(Algorithm::Ring { block }),
        Any::Allreduce(Algorithm::DualRoot { block }),
        Any::Allreduce(Algorithm::TwoTree { block }),
        Any::Broadcast(Broadcast::Binomial),
        Any::Broadcast(Broadcast::PipelinedTree { block }),
        Any::Reduce(Reduce::PipelinedTree { block }),
        Any::Alltoall(Alltoall::Pairwise),
    ]
}

/// One node of one socket whose level costs are the flat model's predicts exactly the flat
/// simulation, whatever the other levels cost, with either kind of ports.
#[test]
fn one_socket_is_the_flat_model() {
    for ports in [Ports::Bidirectional, Ports::Unidirectional] {
        let model = Model {
            alpha_ns: 3.0,
            beta_ns: 0.5,
            gamma_ns: 0.25,
            ports,
        };
        for c in sample() {
            for p in [1, 2, 5, 8, 13] {
                let case = Case::new(c, p, 37);
                let flat = sim::simulate(&case, &model).unwrap();
                let mut m = Machine::flat(&model, p);
                assert_eq!(sim::simulate_on(&case, &m).unwrap(), flat, "{}", c.name());
                // The other levels are never used on one socket.
                (m.node, m.network, m.lanes) = (NODE, NET, 3);
                assert_eq!(sim::simulate_on(&case, &m).unwrap(), flat, "{}", c.name());
            }
        }
    }
}

/// Every level costing the same and one socket per node: within a node the ranks talk as in
/// the flat model; a schedule with no two messages leaving a node at once (the chain of a
/// pipelined broadcast, one block) is not slowed by the link either.
#[test]
fn same_costs_and_no_sharing_is_flat() {
    let model = Model {
        alpha_ns: 3.0,
        beta_ns: 0.5,
        gamma_ns: 0.25,
        ports: Ports::Bidirectional,
    };
    let link = Link {
        alpha_ns: 3.0,
        beta_ns: 0.5,
    };
    let c = Any::Broadcast(Broadcast::Binomial);
    let case = Case::new(c, 8, 100);
    let flat = sim::simulate(&case, &model).unwrap();
    // 8 nodes of one rank: every message crosses, none shares a link.
    let m = Machine {
        socket: link,
        node: link,
        network: link,
        ..machine(8, 1, 1, 1)
    };
    assert_eq!(sim::simulate_on(&case, &m).unwrap(), flat);
}

/// p = 4 on 2 nodes of 2 ranks, recursive doubling: the first exchange stays in the nodes,
/// the second crosses with two messages each way. With one lane they take turns (two
/// transfers), with two they go at once (one).
#[test]
fn shared_link_serialises_crossing_messages() {
    let n = 100;
    let m = 4 * n;
    let case = Case::new(Any::Allreduce(Algorithm::RecursiveDoubling), 4, n);
    let reduce = GAMMA * m as f64;
    let within = t(SOCKET, m) + reduce;
    let one = sim::simulate_on(&case, &machine(2, 1, 2, 1)).unwrap();
    assert_eq!(one.time_ns, within + 2.0 * t(NET, m) + reduce);
    assert_eq!(one.rounds, 3);
    let two = sim::simulate_on(&case, &machine(2, 1, 2, 2)).unwrap();
    assert_eq!(two.time_ns, within + t(NET, m) + reduce);
    assert_eq!(two.rounds, 2);
    // The same 4 ranks as 1 node of 2 sockets: the second exchange crosses sockets, which
    // share nothing.
    let sockets = sim::simulate_on(&case, &machine(1, 2, 2, 1)).unwrap();
    assert_eq!(sockets.time_ns, within + t(NODE, m) + reduce);
    // 4 nodes of one rank: each node sends one message, nothing to share.
    let nodes = sim::simulate_on(&case, &machine(4, 1, 1, 1)).unwrap();
    assert_eq!(nodes.time_ns, 2.0 * (t(NET, m) + reduce));
}

/// The pairwise all-to-all on 2 nodes of 3 ranks, one element to each rank: 9 messages leave
/// each node, and with one lane each holds the link for a whole α + βm, so the time is at
/// least 9 of those; with a lane per rank it is shorter and moves the same.
#[test]
fn shared_link_bounds_the_pairwise_alltoall() {
    let case = Case::new(Any::Alltoall(Alltoall::Pairwise), 6, 1);
    let one = sim::simulate_on(&case, &machine(2, 1, 3, 1)).unwrap();
    // 3 × 3 messages leave each node.
    assert!(one.time_ns >= 9.0 * t(NET, 4), "{}", one.time_ns);
    assert_eq!(one.messages, 30);
    let wide = sim::simulate_on(&case, &machine(2, 1, 3, 3)).unwrap();
    assert!(wide.time_ns < one.time_ns);
    assert_eq!(
        (wide.messages, wide.total_bytes),
        (one.messages, one.total_bytes)
    );
}

fn allreduce(reduce: Reduce, top: Algorithm, broadcast: Broadcast) -> Composition {
    Composition::Allreduce {
        reduce,
        top,
        broadcast,
    }
}

/// The binomial/recursive-doubling/binomial allreduce: each stage's time by hand, summed.
/// The binomial reduce hands each child an empty message before its data (the parent is
/// ready): α of the level, then α + βm, then γm at the parent.
#[test]
fn hierarchical_allreduce_is_its_stages() {
    let n = 64;
    let m = 4 * n;
    let red = GAMMA * m as f64;
    let c = allreduce(
        Reduce::Binomial,
        Algorithm::RecursiveDoubling,
        Broadcast::Binomial,
    );
    // 2 nodes × 2 cores: reduce in the node, exchange across, broadcast in the node.
    let out = sim::simulate_hierarchical(&HierCase::new(c, n), &machine(2, 1, 2, 1)).unwrap();
    let ready = SOCKET.alpha_ns;
    assert_eq!(
        out.time_ns,
        ready + 2.0 * t(SOCKET, m) + t(NET, m) + 2.0 * red
    );
    assert_eq!(out.rounds, 4);
    // 2 nodes × 2 sockets × 2 cores, by sockets: socket, node, network, node, socket.
    let mach = machine(2, 2, 2, 1);
    let out = sim::simulate_hierarchical(&HierCase::new(c, n), &mach).unwrap();
    let ready = SOCKET.alpha_ns + NODE.alpha_ns;
    let want = ready + 2.0 * t(SOCKET, m) + 2.0 * t(NODE, m) + t(NET, m) + 3.0 * red;
    assert_eq!(out.time_ns, want);
    assert_eq!(out.rounds, 7);
    // By nodes: a binomial tree of 4 in each node (2 levels: socket then node distance).
    let case = HierCase {
        grouping: Grouping::Nodes,
        ..HierCase::new(c, n)
    };
    let out = sim::simulate_hierarchical(&case, &mach).unwrap();
    // Binomial reduce to 0 of 4: 1→0 and 3→2 (socket), then 2→0 (node); broadcast mirrored.
    let want = ready + 2.0 * (t(SOCKET, m) + t(NODE, m)) + t(NET, m) + 3.0 * red;
    assert_eq!(out.time_ns, want);
    // 4 nodes of 1 socket of 2 cores: the top is recursive doubling on 4 node leaders, one
    // message per node and direction at a time: 2 exchanges.
    let out = sim::simulate_hierarchical(&HierCase::new(c, n), &machine(4, 1, 2, 1)).unwrap();
    assert_eq!(
        out.time_ns,
        SOCKET.alpha_ns + 2.0 * t(SOCKET, m) + 2.0 * t(NET, m) + 3.0 * red
    );
}

/// Segments pipeline through the stages: 2 nodes × 2 cores, two segments of m bytes: reduce
/// 0 | reduce 1, top 0 | top 1, bcast 0 | bcast 1, as the runtime orders them. A leader
/// does its stages in that order, one after the other, so they add up: 2 reduces (with their
/// empty ready messages), 2 exchanges, 2 broadcasts.
#[test]
fn segmented_allreduce() {
    let seg = 32;
    let m = 4 * seg;
    let red = GAMMA * m as f64;
    let c = allreduce(
        Reduce::Binomial,
        Algorithm::RecursiveDoubling,
        Broadcast::Binomial,
    );
    let case = HierCase {
        segment: Some(seg),
        ..HierCase::new(c, 2 * seg)
    };
    let out = sim::simulate_hierarchical(&case, &machine(2, 1, 2, 1)).unwrap();
    assert_eq!(
        out.time_ns,
        2.0 * SOCKET.alpha_ns + 4.0 * t(SOCKET, m) + 2.0 * t(NET, m) + 4.0 * red
    );
    // Twice the messages of one segment (2 ready, 2 data, 2 top, 2 broadcast).
    assert_eq!(out.messages, 16);
}

/// What the composition moves: counted by hand per stage.
#[test]
fn composed_counts() {
    let n = 50;
    let m = 4 * n as u64;
    let c = allreduce(
        Reduce::Binomial,
        Algorithm::RecursiveDoubling,
        Broadcast::Binomial,
    );
    // 2 × 2 × 2: 4 socket reduces, 2 node reduces (each an empty ready message and the
    // data), 2 top messages, 2 + 4 broadcasts.
    let out = sim::simulate_hierarchical(&HierCase::new(c, n), &machine(2, 2, 2, 1)).unwrap();
    assert_eq!(out.messages, 2 * 6 + 2 + 6);
    assert_eq!(out.total_bytes, 14 * m);
    // Rank 0 combines three times (socket, node, top) and sends three times (top and two
    // broadcasts); the same for rank 4.
    assert_eq!(out.max_bytes_reduced, 3 * m);
    assert_eq!(out.max_bytes_sent, 3 * m);
    assert_eq!(out.max_bytes_received, 3 * m);
    // On 3 nodes × 4 cores with the ring on top: the groups move 2 · 9 messages of m (and 9
    // empty ones); the ring on 3 moves 2 · 2 pieces of ⌈n/3⌉ per rank.
    let c = allreduce(
        Reduce::Binomial,
        Algorithm::Ring {
            block: Block::Elements(1 << 20),
        },
        Broadcast::Binomial,
    );
    let out = sim::simulate_hierarchical(&HierCase::new(c, 51), &machine(3, 1, 4, 1)).unwrap();
    assert_eq!(out.messages, 3 * 9 + 3 * 4);
    assert_eq!(out.total_bytes, 2 * 9 * 204 + 3 * 4 * 17 * 4);
}

/// The hierarchical broadcast from a root that leads nothing: up its group, across the
/// leaders, down the other groups; times and counts by hand.
#[test]
fn hierarchical_broadcast_from_any_root() {
    let n = 10;
    let m = 4 * n;
    let c = Composition::Broadcast {
        groups: Broadcast::Binomial,
        top: Broadcast::Binomial,
    };
    for root in 0..4 {
        let case = HierCase {
            root,
            ..HierCase::new(c, n)
        };
        let out = sim::simulate_hierarchical(&case, &machine(2, 1, 2, 1)).unwrap();
        // Root 3: 3→2 (up), 2→0 (top), 0→1 (down). Root 0: 0→2, then 0→1 and 2→3 at once.
        let up = if root % 2 == 1 { 1.0 } else { 0.0 };
        assert_eq!(out.time_ns, (1.0 + up) * t(SOCKET, m) + t(NET, m), "{root}");
        assert_eq!((out.messages, out.total_bytes), (3, 3 * m as u64), "{root}");
    }
    // 2 × 2 × 2, root 7: 7→6 (socket, up), 6→4 (node, up), 4→0 (top), then 0→2 (node), and
    // 0→1, 2→3, 4→5 (sockets, down; 6's socket went up).
    let case = HierCase {
        root: 7,
        ..HierCase::new(c, n)
    };
    let out = sim::simulate_hierarchical(&case, &machine(2, 2, 2, 1)).unwrap();
    assert_eq!(out.messages, 7);
    assert_eq!(
        out.time_ns,
        2.0 * t(SOCKET, m) + 2.0 * t(NODE, m) + t(NET, m)
    );
}

/// Bad shapes and stages are errors, not panics.
#[test]
fn bad_shapes_are_errors() {
    let case = Case::new(Any::Allreduce(Algorithm::RecursiveDoubling), 4, 8);
    for (nodes, sockets, cores, lanes) in [(0, 1, 4, 1), (1, 0, 4, 1), (4, 1, 0, 1), (2, 1, 2, 0)] {
        let m = machine(nodes, sockets, cores, lanes);
        let e = sim::simulate_on(&case, &m).unwrap_err();
        assert!(matches!(e, Error::Simulation { .. }), "{e}");
        let c = allreduce(
            Reduce::Binomial,
            Algorithm::Ring { block: Block::Auto },
            Broadcast::Binomial,
        );
        let e = sim::simulate_hierarchical(&HierCase::new(c, 8), &m).unwrap_err();
        assert!(matches!(e, Error::Simulation { .. }), "{e}");
    }
    // 4 ranks on 2 × 1 × 3 = 6.
    let e = sim::simulate_on(&case, &machine(2, 1, 3, 1)).unwrap_err();
    assert!(e.to_string().contains("4 ranks"), "{e}");
    // A stage the simulator cannot run, a root outside, a non-commutative ring.
    let c = allreduce(
        Reduce::Auto,
        Algorithm::Ring { block: Block::Auto },
        Broadcast::Binomial,
    );
    let e = sim::simulate_hierarchical(&HierCase::new(c, 8), &machine(2, 1, 2, 1)).unwrap_err();
    assert!(matches!(e, Error::Simulation { .. }), "{e}");
    let c = Composition::Broadcast {
        groups: Broadcast::Binomial,
        top: Broadcast::Binomial,
    };
    let case = HierCase {
        root: 4,
        ..HierCase::new(c, 8)
    };
    let e = sim::simulate_hierarchical(&case, &machine(2, 1, 2, 1)).unwrap_err();
    assert!(matches!(e, Error::RankOutOfRange { peer: 4, .. }), "{e}");
    let c = allreduce(
        Reduce::Binomial,
        Algorithm::Ring { block: Block::Auto },
        Broadcast::Binomial,
    );
    let case = HierCase {
        commutative: false,
        ..HierCase::new(c, 8)
    };
    let e = sim::simulate_hierarchical(&case, &machine(2, 1, 2, 1)).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
}

fn rs_ag(scatter: ReduceScatter, top: Algorithm, gather: Allgather) -> Composition {
    Composition::ReduceScatterAllgather {
        scatter,
        top,
        gather,
    }
}

/// The reduce-scatter/allgather composition with recursive doubling on top and the ring in
/// the groups: every stage an exchange between two ranks on 2 × 1 × 2 and 2 × 2 × 2, so the
/// time is each stage by hand, summed (no rank starts a stage before its partner finished
/// the one before). Each reduce-scatter ends with its closing barrier, one empty exchange.
/// On top, the g ranks of a node each run an allreduce with their peer on the other node:
/// g crossing exchanges that take ⌈g / lanes⌉ turns on the link.
#[test]
fn reduce_scatter_allgather_is_its_stages() {
    let c = rs_ag(
        ReduceScatter::Ring,
        Algorithm::RecursiveDoubling,
        Allgather::Ring,
    );
    let n = 64;
    let red = |bytes: usize| GAMMA * bytes as f64;
    // 2 nodes × 2 cores: piece q = n/2 at each rank; the same by sockets and by nodes.
    let q = 4 * n / 2;
    for grouping in [Grouping::Sockets, Grouping::Nodes] {
        for (lanes, turns) in [(1, 2.0), (2, 1.0)] {
            let case = HierCase {
                grouping,
                ..HierCase::new(c, n)
            };
            let out = sim::simulate_hierarchical(&case, &machine(2, 1, 2, lanes)).unwrap();
            let rs = t(SOCKET, q) + red(q) + SOCKET.alpha_ns;
            let top = turns * t(NET, q) + red(q);
            let ag = t(SOCKET, q);
            assert_eq!(out.time_ns, rs + top + ag, "{grouping:?} {lanes}");
            // RS: (g − 1)/g · m, the allreduce on m/g, AG: (g − 1)/g · m, in bytes.
            assert_eq!(out.max_bytes_sent, (q + q + q) as u64);
            assert_eq!(out.max_bytes_reduced, (q + q) as u64);
        }
    }
    // 2 × 2 × 2 by sockets: RS in each socket (pieces of n/2), RS between the two sockets'
    // ranks of one core index (n/4), 4 concurrent exchanges across, then the allgathers back.
    let (q1, q2) = (4 * n / 2, 4 * n / 4);
    for (lanes, turns) in [(1, 4.0), (2, 2.0), (4, 1.0)] {
        let out =
            sim::simulate_hierarchical(&HierCase::new(c, n), &machine(2, 2, 2, lanes)).unwrap();
        let rs = t(SOCKET, q1) + red(q1) + SOCKET.alpha_ns + t(NODE, q2) + red(q2) + NODE.alpha_ns;
        let top = turns * t(NET, q2) + red(q2);
        let ag = t(NODE, q2) + t(SOCKET, q1);
        assert_eq!(out.time_ns, rs + top + ag, "{lanes} lanes");
        // (g−1)/g·m per level on the way up and down, m/4 across: 7/4 m in all.
        assert_eq!(out.max_bytes_sent, (7 * 4 * n / 4) as u64);
        assert_eq!(out.max_bytes_received, (7 * 4 * n / 4) as u64);
        // Every rank sends per level 1 piece and 1 barrier message up, 1 down, 1 across.
        assert_eq!(out.messages, 8 * (2 + 2 + 1 + 2));
    }
}

/// By nodes on 2 × 2 × 2 (groups of 4, the ring across both sockets): bytes per rank are the
/// closed form (g − 1)/g · m + m/g + (g − 1)/g · m, and every rank sends the same; the time is
/// at least the three stages' bandwidth terms and the link's 4 crossings in one lane.
#[test]
fn reduce_scatter_allgather_by_nodes_counts() {
    let n = 64;
    let q = 4 * n / 4;
    for scatter in [ReduceScatter::Ring, ReduceScatter::RecursiveHalving] {
        for gather in [
            Allgather::Ring,
            Allgather::RecursiveDoubling,
            Allgather::Bruck,
        ] {
            let case = HierCase {
                grouping: Grouping::Nodes,
                ..HierCase::new(rs_ag(scatter, Algorithm::RecursiveDoubling, gather), n)
            };
            let out = sim::simulate_hierarchical(&case, &machine(2, 2, 2, 1)).unwrap();
            assert_eq!(out.max_bytes_sent, (3 * q + q + 3 * q) as u64);
            assert_eq!(out.total_bytes, 8 * (3 * q + q + 3 * q) as u64);
            assert!(out.time_ns >= 4.0 * t(NET, q), "{}", out.time_ns);
        }
    }
}

/// Uneven vectors are padded to a multiple of the group size at each level; m < g and m = 0
/// run (one-element or empty pieces); a segment is refused; a machine of one node, of one
/// socket or of one rank per node runs the flat allreduce exactly.
#[test]
fn reduce_scatter_allgather_edges() {
    let c = rs_ag(
        ReduceScatter::RecursiveHalving,
        Algorithm::RecursiveDoubling,
        Allgather::Ring,
    );
    // 2 × 1 × 2: pieces of ⌈n/2⌉ elements.
    for (n, piece) in [(7, 4), (1, 1), (0, 0)] {
        let out = sim::simulate_hierarchical(&HierCase::new(c, n), &machine(2, 1, 2, 1)).unwrap();
        assert_eq!(out.max_bytes_sent, 3 * 4 * piece, "{n}");
    }
    // Groups of 3 on 3 nodes (recursive halving's fold), 5 elements: pieces of 2.
    let out = sim::simulate_hierarchical(&HierCase::new(c, 5), &machine(3, 1, 3, 1)).unwrap();
    assert!(out.time_ns.is_finite());
    assert_eq!(out.total_bytes % 8, 0);
    // 2 × 2 × 2 by sockets, 5 elements: 3, then 2.
    let out = sim::simulate_hierarchical(&HierCase::new(c, 5), &machine(2, 2, 2, 2)).unwrap();
    assert_eq!(out.max_bytes_sent, 4 * (3 + 2 + 2 + 2 + 3));
    let case = HierCase {
        segment: Some(4),
        ..HierCase::new(c, 16)
    };
    let e = sim::simulate_hierarchical(&case, &machine(2, 1, 2, 1)).unwrap_err();
    assert!(matches!(e, Error::Simulation { .. }), "{e}");
    // Degenerate machines: the top is the only level, the flat allreduce on it.
    let top = Algorithm::TwoTree { block: Block::Auto };
    let c = rs_ag(ReduceScatter::Ring, top, Allgather::Ring);
    for (nodes, sockets, cores, grouping) in [
        (1, 2, 2, Grouping::Nodes),
        (1, 1, 4, Grouping::Sockets),
        (4, 1, 1, Grouping::Sockets),
        (4, 1, 1, Grouping::Nodes),
    ] {
        let mach = machine(nodes, sockets, cores, 1);
        let case = HierCase {
            grouping,
            ..HierCase::new(c, 1000)
        };
        let flat = Case::new(Any::Allreduce(top), 4, 1000);
        assert_eq!(
            sim::simulate_hierarchical(&case, &mach).unwrap(),
            sim::simulate_on(&flat, &mach).unwrap(),
            "{nodes} × {sockets} × {cores} by {grouping:?}"
        );
    }
    // Stages the simulator cannot run, and the non-commutative ring on top.
    let c = rs_ag(ReduceScatter::Direct, top, Allgather::Ring);
    let e = sim::simulate_hierarchical(&HierCase::new(c, 8), &machine(2, 1, 2, 1)).unwrap_err();
    assert!(matches!(e, Error::Simulation { .. }), "{e}");
    let c = rs_ag(
        ReduceScatter::Ring,
        Algorithm::Ring { block: Block::Auto },
        Allgather::Ring,
    );
    let case = HierCase {
        commutative: false,
        ..HierCase::new(c, 8)
    };
    let e = sim::simulate_hierarchical(&case, &machine(2, 1, 2, 1)).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
}

/// Träff's 36 × 2 × 16 machine, one of each kind, to see that the sizes work together (the
/// flat placement, the three-level composition): the times are finite and the hierarchy
/// sends far fewer messages across nodes than the flat ring.
#[test]
fn traeff_machine_runs() {
    let mach = Machine {
        lanes: 1,
        ..machine(36, 2, 16, 1)
    };
    let c = allreduce(
        Reduce::Binomial,
        Algorithm::RecursiveDoubling,
        Broadcast::Binomial,
    );
    let out = sim::simulate_hierarchical(&HierCase::new(c, 1000), &mach).unwrap();
    assert!(out.time_ns.is_finite());
    // 36 × (31 reduces + 31 broadcasts) in the nodes, recursive doubling on 36 on top.
    assert!(out.messages > 36 * 62);
    let flat = Case::new(Any::Allreduce(Algorithm::RecursiveDoubling), 1152, 1000);
    let flat = sim::simulate_on(&flat, &mach).unwrap();
    assert!(flat.time_ns > out.time_ns);
}
