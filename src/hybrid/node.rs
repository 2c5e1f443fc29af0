//! The stage between the processes of a hybrid team when they all share one node: through the
//! node's shared segment (`shm::node`, `algorithms::node`) instead of MPI.
//!
//! **Setup** ([`node_memory`], with the team, collective over the world): when every process
//! of the world is on this node (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`; the environment
//! variable `CORECOLL_NODE_SIZE=k` makes believe nodes of k processes, to exercise the path
//! between nodes on one machine) and there are at least two, process 0 makes the segment,
//! broadcasts its name, the others map it, and once all have (an allreduce of whether each
//! could) process 0 removes its name from `/dev/shm`. If any process cannot map it, none uses
//! it, and the stage between processes stays MPI's.
//!
//! **What runs there.** The call check of every blocking collective of the world (its words
//! gathered in one round, the same outcome on every process as `check`'s), which is also the
//! barrier; allreduce, reduce, broadcast and allgather whose algorithm between processes is
//! `Auto` or `Direct` (the node's own). Every other collective runs its stage between processes
//! over MPI as before, after the check through the segment. Non-blocking collectives keep their
//! own leaders' communicators (`shadows`) and MPI. Between several nodes nothing changes yet:
//! the whole stage is MPI's.
//!
//! **Failures.** A process whose run failed arrives at the check saying so, and every process
//! fails the call, as over MPI. A process that disappears (killed, exited) is seen by the
//! waits for it — its process id no longer exists — which fail with `ProcessFailed` and poison
//! the segment, so that every later wait of every process stops too; a panic inside the node
//! stage (the user's op) poisons it as it unwinds. Where MPI's own stage would end the job
//! (`MPI_Abort` on such a panic), the node's lets the other processes fail their call with
//! `ProcessFailed` and go on; the segment is then unusable for the rest of the team's life.

use super::check::{words_of, Arrival, Call, N};
use super::ProcessComm;
use crate::algorithms::node as sched;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::shm::node::{Halt, NodeMemory, Rounds, Segment, SLOT_BYTES, SPINS};
use ::mpi::collective::SystemOperation;
use ::mpi::topology::Communicator;
use ::mpi::traits::*;

/// Bytes of the broadcast segment name.
const NAME: usize = 256;

/// The node's shared memory for the world's stage between processes, if they all share one
/// node (module docs); collective over `comm`'s processes, whose processes on this node
/// `node` holds.
pub(crate) fn node_memory<C: Communicator, N: Communicator>(
    comm: &C,
    node: &N,
) -> Option<NodeMemory> {
    let (rank, size) = (comm.rank() as usize, comm.size() as usize);
    let faked = std::env::var("CORECOLL_NODE_SIZE")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&k| k > 0);
    let mine =
        u8::from(node.size() as usize == size && size >= 2 && faked.is_none_or(|k| k >= size));
    let mut all = 0u8;
    comm.all_reduce_into(&mine, &mut all, SystemOperation::min());
    if all == 0 {
        return None;
    }
    let bytes = NodeMemory::bytes(size);
    let root = comm.process_at_rank(0);
    let mut name = [0u8; NAME];
    let mut made = None;
    if rank == 0 {
        if let Ok((segment, n)) = Segment::create(bytes) {
            name[..n.len()].copy_from_slice(n.as_bytes());
            made = Some((segment, n));
        }
    }
    root.broadcast_into(&mut name[..]);
    let text = std::str::from_utf8(&name)
        .ok()
        .map(|s| s.trim_end_matches('\0'))
        .filter(|s| !s.is_empty());
    let segment = match (made, text) {
        (Some((segment, _)), _) => Some(segment),
        (None, Some(n)) if rank != 0 => Segment::open(n, bytes).ok(),
        _ => None,
    };
    let ok = u8::from(segment.is_some());
    let mut everywhere = 0u8;
    comm.all_reduce_into(&ok, &mut everywhere, SystemOperation::min());
    // Every process has mapped the segment (or failed to) before the allreduce completes.
    if let (0, Some(n)) = (rank, text) {
        let _ = Segment::unlink(n);
    }
    (everywhere == 1).then(|| NodeMemory::new(segment.expect("mapped"), size, rank))
}

/// Whether process id `pid` still exists.
fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 checks that the process exists (and may be signalled) without
    // signalling it.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

impl ProcessComm {
    /// The node's shared memory, if the stage between processes runs there.
    pub(crate) fn node(&self) -> Option<&NodeMemory> {
        self.node.as_ref()
    }

    /// Runs `f` on this process's rounds of the node, with a watcher that fails a wait for a
    /// process that no longer exists; a wait given up poisons the segment (module docs).
    pub(super) fn on_node<R>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Rounds<'_>, sched::Watch<'_>) -> std::result::Result<R, Halt>,
    ) -> Result<R> {
        let node = self.node().expect("a node stage");
        // Where the node's threads outnumber its cores (the leaders' waits are polite), a
        // waiter yields at once: spinning would hold the core of the process it waits for.
        let rounds = node
            .rounds()
            .spinning(if self.polite.get() { 0 } else { SPINS });
        let rank = self.rank;
        let mut watch = |q: usize| {
            let pid = rounds.pid(q);
            (pid != 0 && !alive(pid)).then_some(Error::ProcessFailed {
                rank,
                op,
                process: q,
            })
        };
        // A panic inside (the user's op) leaves this process's rounds where they are: the
        // others would wait for it for ever.
        struct PoisonOnUnwind<'r, 'a>(&'r Rounds<'a>);
        impl Drop for PoisonOnUnwind<'_, '_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.poison();
                }
            }
        }
        let _guard = PoisonOnUnwind(&rounds);
        f(&rounds, &mut watch).map_err(|halt| match halt {
            Halt::Poisoned(q) => Error::ProcessFailed {
                rank,
                op,
                process: q,
            },
            Halt::By(e) => {
                rounds.poison();
                e
            }
        })
    }

    /// Every process's check words, in process order, through the node.
    pub(super) fn node_rows(&self, mine: &[u64], op: &'static str) -> Result<Vec<u64>> {
        self.on_node(op, |r, w| sched::gather_words(r, mine, w))
    }

    /// Whether the check and an allreduce of `n` elements of `T` fit one round of the node
    /// ([`ProcessComm::node_agree_allreduce`]).
    pub(crate) fn node_fits_with_check<T>(n: usize) -> bool {
        sched::fits_with_words::<T>(SLOT_BYTES, N, n)
    }

    /// The check of `call` (with `arrival`) and the allreduce of `buf` in one round through
    /// the node: the check's outcome, and `buf` reduced if it passed.
    pub(crate) fn node_agree_allreduce<T: Copy, O: Op<T>>(
        &self,
        (call, arrival): (&Call, Arrival),
        buf: &mut [T],
        op: &O,
        (rank, leaders): (usize, &[usize]),
        name: &'static str,
    ) -> Result<()> {
        let mine = words_of(call, arrival);
        let agreed = |rows: &[u64]| self.outcome_of_rows(rows, rank, leaders, name).is_ok();
        let rows = self.on_node(name, |r, w| {
            sched::words_and_allreduce(r, &mine, buf, op, &agreed, w)
        })?;
        self.outcome_of_rows(&rows, rank, leaders, name)
    }

    /// Allreduce between the processes through the node.
    pub(super) fn node_allreduce<T: Copy, O: Op<T>>(&self, buf: &mut [T], op: &O) -> Result<()> {
        self.on_node("allreduce", |r, w| sched::allreduce(r, buf, op, w))
    }

    /// Reduce to process `root` through the node.
    pub(super) fn node_reduce<T: Copy, O: Op<T>>(
        &self,
        buf: &mut [T],
        op: &O,
        root: usize,
    ) -> Result<()> {
        self.on_node("reduce", |r, w| sched::reduce(r, buf, op, root, w))
    }

    /// Broadcast from process `root` through the node.
    pub(super) fn node_broadcast<T: Copy>(&self, buf: &mut [T], root: usize) -> Result<()> {
        self.on_node("broadcast", |r, w| sched::broadcast(r, buf, root, w))
    }

    /// Allgather between the processes through the node.
    pub(super) fn node_allgather<T: Copy>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.on_node("allgather", |r, w| sched::allgather(r, send, recv, w))
    }
}
