//! The stage between the processes of a hybrid team through the shared memory of the nodes
//! they run on, with MPI only between nodes: the hierarchy's node level (as HAN's, Luo et al.
//! 2020, where shared memory serves a node's processes and MPI the nodes' leaders).
//!
//! **Setup** ([`node_stage`], with the team, collective over the world): each process finds the
//! processes of its node (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`; the environment variable
//! `CORECOLL_NODE_SIZE=k` makes believe nodes of k consecutive processes instead, to exercise
//! the stage between nodes on one machine). The node stage is used when every node holds
//! consecutive processes (their numbers in the world, so that combining node by node keeps the
//! processes' order) and some node holds two or more. The first process of each node makes its
//! node's segment, sends its name to the node's others, which map it, and once every process of
//! the node has (an allreduce of whether each could) removes its name from `/dev/shm`; a node of
//! one process maps private memory instead. The segment's pages are reserved when it is made
//! (`process::node::segment`), so a `/dev/shm` too small for it (a container's 64 MiB, say),
//! missing or not writable is found here, not by a `SIGBUS` in a collective. A node whose
//! processes cannot all map its segment: with [`NodeShm::Auto`] it falls back to nodes of one
//! process each (MPI between its processes; the other nodes keep their segments), and the
//! process that could not says so in one warning line (the bytes needed, what `/dev/shm` has,
//! how to make room); with [`NodeShm::Require`] the team's build fails on every process;
//! [`NodeShm::Off`] makes no segment at all. (The processes take the strictest choice any of them passed: off, then
//! require, then auto.) With several nodes, the nodes' first processes (the node leaders) get a
//! communicator of their own, over which the stage between nodes runs.
//!
//! **What runs there** (`stage`). The call check of every blocking collective of the world: the
//! node's processes gather their words in a round; with several nodes, the leaders gather every
//! node's over MPI (one allreduce) and hand them to their node in a second round; every process
//! then reads the same outcome from the same words, as `check` does. It is also the barrier.
//! Allreduce, reduce, broadcast and allgather whose algorithm between processes is `Auto` or
//! `Direct` (the node's own): on one node, rounds through the segment; on several, a stage
//! within each node, the leaders' stage over MPI, and a stage within each node again (a short
//! allreduce takes its check along: `stage`). Everything else runs its stage between processes
//! over MPI after the check. Non-blocking collectives keep their own leaders' communicators
//! (`shadows`) and MPI, combining in the node stage's grouping
//! (`algorithms::allreduce::grouped_linear`).
//!
//! **Grouping.** A reduction combines the processes' vectors in process order, grouped by node:
//! each node's left to right, then the nodes' results left to right — one node, ((x₀ ⊙ x₁) ⊙
//! x₂) ⊙ …, the linear schedules' grouping. Between nodes the leaders run the linear allreduce,
//! which keeps that grouping, unless the op is exact (integers, min, max: any grouping gives the
//! same bits), where they run MPI's own choice.
//!
//! **Point-to-point.** The segment of a node of several processes also holds a ring per
//! ordered pair of its ranks (`process::node::mail`), and messages between threads of different
//! processes of the node go through them instead of MPI (`process::p2p::node`); messages to other
//! nodes go over MPI.
//!
//! **Failures.** A process whose run failed arrives at the check saying so, and every process
//! fails the call, as over MPI. A process that disappears (killed, exited) is seen by the waits
//! for it — its process id no longer exists — which fail with `ProcessFailed` and poison the
//! node's segment, so that every later wait of the node's processes stops too; a panic inside
//! the node stage (the user's op) poisons it as it unwinds. In the check, a leader that could not
//! hear from its node says so between nodes (its node's processes as failed), so that every
//! process of every node fails the call. After the check, with several nodes, a node that
//! fails leaves the leaders' MPI stage waiting for its leader: that leader ends the job
//! (`MPI_Abort`), as MPI's own stage does when a process panics in it. On one node, the other
//! processes fail their call with `ProcessFailed` and go on; the segment is then unusable for
//! the rest of the team's life.

use crate::error::{Error, Result};
use crate::process::node::folds::NodeFolds;
use crate::process::node::mail::{self, NodeMail};
use crate::process::node::schedules as sched;
use crate::process::node::{cma, gone, NodeMemory, Segment};
use crate::process::ProcessComm;
use crate::NodeShm;
use ::mpi::collective::SystemOperation;
use ::mpi::topology::{Color, Communicator, SimpleCommunicator};
use ::mpi::traits::*;
use std::sync::Arc;

/// The most bytes of point-to-point rings a node's segment holds (one ring per ordered pair
/// of ranks, `process::node::mail`; only the pages of the pairs that talk are ever allocated):
/// about 180 ranks on a node. With more, point-to-point between its processes stays MPI's.
const MAX_RING_BYTES: usize = 1 << 30;

/// Bytes of the broadcast segment name.
const NAME: usize = 256;

/// How the world's processes share nodes, the same on every process and known to every rank
/// (`Layout::nodes`), whose stages within the process depend on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Nodes {
    /// The first process of every node, and the number of processes at the end.
    pub(super) starts: Vec<usize>,
    /// Whether every process of the world asked for one copy (`CORECOLL_NODE_CMA=1`) and may
    /// read its node's others' memory (cross-memory attach, probed at setup): a long
    /// allreduce on one node then copies once (`process::node::schedules::single`). Off by default:
    /// where measured, the kernel's copy was slower than two through the segment
    /// (docs/hybrid.md, "Processes that share a node").
    cma: bool,
}

impl Nodes {
    /// Whether every process of the world shares one node.
    pub(crate) fn whole(&self) -> bool {
        self.starts.len() == 2
    }

    /// The first process of every node, and the number of processes at the end.
    pub(crate) fn starts(&self) -> &[usize] {
        &self.starts
    }

    /// Whether an allreduce of `bytes` bytes per process runs with one copy (see `cma`).
    pub(crate) fn single_copy(&self, bytes: usize) -> bool {
        self.cma && self.whole() && bytes >= SINGLE_COPY_BYTES
    }

    /// The node of process `q` of the world, and `q`'s place among its processes.
    pub(super) fn locate(&self, q: usize) -> (usize, usize) {
        let j = self.starts.partition_point(|&s| s <= q) - 1;
        (j, q - self.starts[j])
    }
}

/// The node stage of the world's processes: this process's node's shared memory, and how the
/// nodes divide the world.
#[derive(Debug)]
pub(crate) struct NodeStage {
    /// This process's node's segment, mapped.
    pub(super) memory: NodeMemory,
    /// The nodes.
    pub(super) nodes: Nodes,
    /// This process's node.
    pub(super) node: usize,
    /// The node leaders' communicator, on the node's first process, if there are several nodes.
    pub(super) leaders: Option<Box<ProcessComm>>,
    /// Point-to-point between the node's processes through the segment (`process::p2p::node`).
    mail: Option<Arc<NodeMail>>,
    /// The persistent short allreduces' share of the segment (`process::node::fold`).
    folds: Arc<NodeFolds>,
}

impl NodeStage {
    /// How the world's processes share nodes.
    pub(crate) fn nodes(&self) -> &Nodes {
        &self.nodes
    }

    /// Point-to-point between the node's processes through the segment, if it has several.
    pub(crate) fn mail(&self) -> Option<&Arc<NodeMail>> {
        self.mail.as_ref()
    }

    /// The persistent short allreduces' share of the segment.
    pub(crate) fn folds(&self) -> &Arc<NodeFolds> {
        &self.folds
    }

    /// The world's number of this node's process `q`.
    pub(super) fn process(&self, q: usize) -> usize {
        self.nodes.starts[self.node] + q
    }

    /// Number of processes of this node.
    pub(super) fn processes(&self) -> usize {
        self.nodes.starts[self.node + 1] - self.nodes.starts[self.node]
    }
}

/// Bytes per process from which an allreduce on one node copies once where asked and the
/// kernel allows it: below, the copy-in/copy-out rounds' one round with the check wins even
/// against a fast kernel copy (three rounds and a system call per process read).
const SINGLE_COPY_BYTES: usize = 64 << 10;

/// `v` reduced with `op` over `comm`'s processes.
fn all<C: Communicator>(comm: &C, v: u64, op: SystemOperation) -> u64 {
    let mut out = 0u64;
    comm.all_reduce_into(&v, &mut out, op);
    out
}

/// The node stage of `comm`'s processes, whose processes on this node `shared` holds and
/// whose process q runs `threads[q]` threads, if it runs (module docs), as `choice` asks;
/// collective over `comm`'s processes. An error (the same on every process) where shared
/// memory is required and a node's segment could not be made.
pub(crate) fn node_stage<C: Communicator>(
    comm: &C,
    shared: &SimpleCommunicator,
    threads: &[usize],
    choice: NodeShm,
) -> Result<Option<NodeStage>> {
    let (rank, size) = (comm.rank() as usize, comm.size() as usize);
    let strictest = all(comm, choice as u64, SystemOperation::max());
    let choice = NodeShm::BY_STRICTNESS[strictest as usize];
    if choice == NodeShm::Off {
        return Ok(None);
    }
    let split = crate::env::node_size().map(|k| {
        comm.split_by_color(Color::with_value((rank / k) as i32))
            .expect("every process has a colour")
    });
    let node = split.as_ref().unwrap_or(shared);
    let mut ranks = vec![0u64; node.size() as usize];
    node.all_gather_into(&(rank as u64), &mut ranks[..]);
    let first = ranks[0] as usize;
    let consecutive = ranks
        .iter()
        .enumerate()
        .all(|(i, &r)| r as usize == first + i);
    let usable = all(comm, u64::from(consecutive), SystemOperation::min()) == 1;
    let largest = all(comm, ranks.len() as u64, SystemOperation::max());
    if !usable || largest < 2 || size < 2 {
        return Ok(None);
    }
    // This node's segment: a file in /dev/shm that its processes share, or, for a node of one
    // process, private memory. A node whose processes cannot share one falls back to nodes of
    // one process each (MPI between them), unless shared memory is required.
    let processes = ranks.len();
    let memory_bytes = |first: usize, processes: usize| {
        let on_node: usize = threads[first..first + processes].iter().sum();
        let rings = processes > 1 && mail::bytes(on_node) <= MAX_RING_BYTES;
        NodeMemory::bytes(processes, on_node, rings)
    };
    let bytes = memory_bytes(first, processes);
    let mapped = if processes == 1 {
        Segment::private(bytes).map_err(|e| Some(e.to_string()))
    } else {
        map_segment(node, bytes)
    };
    let failed = all(comm, u64::from(mapped.is_err()), SystemOperation::max()) == 1;
    let (first, processes, segment) = match mapped {
        Ok(segment) => (first, processes, Some(segment)),
        Err(why) => {
            if let Some(e) = no_segment(choice, bytes, why.as_deref()) {
                return Err(Error::Unsupported {
                    rank: threads[..rank].iter().sum(),
                    op: "TeamBuilder::mpi",
                    what: e,
                });
            }
            (rank, 1, Segment::private(memory_bytes(rank, 1)).ok())
        }
    };
    if failed && choice == NodeShm::Require {
        // Another node's process could not share its segment (its own error says why).
        let e = no_segment(choice, bytes, None).expect("required");
        return Err(Error::Unsupported {
            rank: threads[..rank].iter().sum(),
            op: "TeamBuilder::mpi",
            what: e,
        });
    }
    // (Every process has its memory, or none anywhere: the stage between processes is MPI's.)
    let ready = all(comm, u64::from(segment.is_some()), SystemOperation::min()) == 1;
    let largest = all(comm, processes as u64, SystemOperation::max());
    let (Some(segment), true, true) = (segment, ready, largest >= 2) else {
        return Ok(None);
    };
    let mut firsts = vec![0u64; size];
    comm.all_gather_into(&(first as u64), &mut firsts[..]);
    let mut starts: Vec<usize> = firsts.iter().map(|&f| f as usize).collect();
    starts.dedup();
    starts.push(size);
    let me = rank - first;
    // The point-to-point rings of the node's ranks too, if it has several processes and not so
    // many ranks that their rings would crowd the address space (the same on the whole node).
    let base: usize = threads[..first].iter().sum();
    let on_node: usize = threads[first..first + processes].iter().sum();
    let rings = processes > 1 && mail::bytes(on_node) <= MAX_RING_BYTES;
    let leaders = (starts.len() > 2).then(|| {
        let colour = if me == 0 {
            Color::with_value(0)
        } else {
            Color::undefined()
        };
        comm.split_by_color(colour).map(|c| {
            let pc = ProcessComm::new(&c).expect("the world's MPI passed the same check");
            Box::new(pc)
        })
    });
    let memory = NodeMemory::new(segment, processes, on_node, me);
    let mine = (threads[..rank].iter().sum(), threads[rank]);
    let mail = rings.then(|| Arc::new(memory.mail(base, mine)));
    let folds = Arc::new(memory.folds());
    let cma = crate::env::node_cma() && probe_cma(&memory);
    let cma = all(comm, u64::from(cma), SystemOperation::min()) == 1;
    Ok(Some(NodeStage {
        memory,
        node: starts.partition_point(|&s| s <= rank) - 1,
        nodes: Nodes { starts, cma },
        leaders: leaders.flatten(),
        mail,
        folds,
    }))
}

/// Whether this process can read the next process of its node's memory (cross-memory attach):
/// each publishes the address of a word of its own in a round and reads its neighbour's, and a
/// second round keeps every word alive until all have read.
fn probe_cma(memory: &NodeMemory) -> bool {
    const MARK: u64 = 0x6e6f_6465_2d63_6d61;
    let pid = u64::from(std::process::id());
    let word = MARK ^ pid;
    let r = memory.rounds();
    let mut watch = |q: usize| {
        gone(&r, q).then_some(Error::ProcessFailed {
            rank: 0,
            op: "TeamBuilder::mpi",
            process: q,
        })
    };
    let at = std::ptr::addr_of!(word) as u64;
    let Ok(rows) = sched::gather_words(&r, &[at, pid], &mut watch) else {
        return false;
    };
    let q = (r.me() + 1) % r.size();
    let mut got = [0u8; 8];
    let read = cma::read(rows[2 * q + 1] as u32, rows[2 * q], &mut got).is_ok();
    let ok = read && u64::from_ne_bytes(got) == MARK ^ rows[2 * q + 1];
    sched::gather_words(&r, &[0], &mut watch).is_ok() && ok
}

/// What follows where the processes could not all map their node's segment of `bytes` bytes
/// (`why`: this process's reason, if the failure was its own): with `Require`, the error's
/// text; with `Auto`, nothing (one warning line on stderr from a process that failed, and MPI
/// between the processes).
fn no_segment(choice: NodeShm, bytes: usize, why: Option<&str>) -> Option<String> {
    let room = match shm_space() {
        Some((free, size)) => format!("/dev/shm has {free} bytes free of {size}"),
        None => "/dev/shm cannot be examined".to_string(),
    };
    let cause = match why {
        Some(why) => format!(
            "the processes of this node could not share a segment of {bytes} bytes in \
             /dev/shm ({why}; {room})"
        ),
        None => "another process could not map its node's segment in /dev/shm \
                 (its own error names the cause)"
            .to_string(),
    };
    const RAISE: &str = "make /dev/shm larger (`mount -o remount,size=1G /dev/shm` as root, \
                         or a container's --shm-size)";
    match choice {
        NodeShm::Require => Some(format!(
            "{cause}, and shared memory between the processes is required \
             (CORECOLL_NODE_SHM=require or TeamBuilder::node_shm): {RAISE}, or allow MPI \
             instead (auto)"
        )),
        NodeShm::Auto | NodeShm::Off => {
            if why.is_some() {
                eprintln!(
                    "corecoll: warning: {cause}; the processes of this node meet over MPI \
                     instead. To use shared memory, {RAISE}; CORECOLL_NODE_SHM=off chooses \
                     MPI without this warning, =require makes it an error"
                );
            }
            None
        }
    }
}

/// The free and total bytes of the file system at `/dev/shm`, if it can be examined.
fn shm_space() -> Option<(u64, u64)> {
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer for one `statvfs`, filled on success.
    let rc = unsafe { libc::statvfs(c"/dev/shm".as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: `statvfs` succeeded and filled it.
    let st = unsafe { st.assume_init() };
    // (`u64` on 64-bit Linux, whose libc the crate targets.)
    let unit = st.f_frsize;
    Some((st.f_bavail * unit, st.f_blocks * unit))
}

/// This process's node's segment of `bytes` bytes, made by the node's first process and mapped
/// by the others, if every process of the node could map it (collective over the node's
/// processes, `node`); else this process's reason, if it failed itself.
fn map_segment(
    node: &SimpleCommunicator,
    bytes: usize,
) -> std::result::Result<Segment, Option<String>> {
    let first = node.rank() == 0;
    let mut name = [0u8; NAME];
    let mut made = None;
    let mut why = None;
    if first {
        match Segment::create(bytes) {
            Ok((segment, n)) => {
                name[..n.len()].copy_from_slice(n.as_bytes());
                made = Some(segment);
            }
            Err(e) => why = Some(e.to_string()),
        }
    }
    node.process_at_rank(0).broadcast_into(&mut name[..]);
    let text = std::str::from_utf8(&name)
        .ok()
        .map(|s| s.trim_end_matches('\0'))
        .filter(|s| !s.is_empty());
    let segment = match (made, text) {
        (Some(segment), _) => Some(segment),
        (None, Some(n)) if !first => Segment::open(n, bytes)
            .map_err(|e| why = Some(e.to_string()))
            .ok(),
        _ => None,
    };
    let everywhere = all(node, u64::from(segment.is_some()), SystemOperation::min());
    // Every process of the node has mapped the segment (or failed to) before the allreduce
    // completes.
    if let (true, Some(n)) = (first, text) {
        let _ = Segment::unlink(n);
    }
    match segment.filter(|_| everywhere == 1) {
        Some(segment) => Ok(segment),
        None => Err(why),
    }
}
