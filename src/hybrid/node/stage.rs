//! The node stage's calls on the world's leaders' communicator (`ProcessComm`): the rounds
//! through this node's segment, and between nodes the leaders' MPI stage (module docs of
//! `hybrid::node`).

use super::NodeStage;
use crate::algorithms::node as sched;
use crate::error::{Error, Result};
use crate::hybrid::check::{as_failed, words_of, Arrival, Call, N};
use crate::hybrid::{AbortOnUnwind, ProcessComm};
use crate::op::Op;
use crate::select::{Algorithm, Broadcast};
use crate::shm::node::{process_exists, Halt, Rounds, SLOT_BYTES, SPINS};
use ::mpi::traits::*;

impl ProcessComm {
    /// The node stage, if the stage between processes runs through the nodes' shared memory.
    pub(crate) fn node(&self) -> Option<&NodeStage> {
        self.node.as_ref()
    }

    /// Whether the stage between processes runs through the shared memory of one node that
    /// holds every process (where reduce and allgather run there too).
    pub(crate) fn node_whole(&self) -> bool {
        self.node().is_some_and(NodeStage::whole)
    }

    /// The node leaders' communicator, on a node's leader if there are several nodes.
    pub(crate) fn node_leaders(&self) -> Option<&ProcessComm> {
        self.node()?.leaders.as_deref()
    }

    /// Runs `f` on this process's rounds of the node, with a watcher that fails a wait for a
    /// process that no longer exists; a wait given up poisons the segment (module docs).
    /// Errors name processes of the world.
    fn on_node<R>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Rounds<'_>, sched::Watch<'_>) -> std::result::Result<R, Halt>,
    ) -> Result<R> {
        let stage = self.node().expect("a node stage");
        // Where the node's threads outnumber its cores (the leaders' waits are polite), a
        // waiter yields at once: spinning would hold the core of the process it waits for.
        let rounds = stage
            .memory
            .rounds()
            .spinning(if self.polite.get() { 0 } else { SPINS });
        let rank = self.rank;
        let failed = |q: usize| Error::ProcessFailed {
            rank,
            op,
            process: stage.process(q),
        };
        let mut watch = |q: usize| {
            // This process's immediate collectives (a request's, the last checks of a run on
            // the shadows) may be what the process waited for is waiting for.
            crate::transport::mpi::nudge(&self.comm);
            let pid = rounds.pid(q);
            (pid != 0 && !process_exists(pid)).then(|| failed(q))
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
            Halt::Poisoned(q) => failed(q),
            Halt::By(e) => {
                rounds.poison();
                e
            }
        })
    }

    /// Every process's check words, in process order, through the nodes: a round within the
    /// node, and with several nodes the leaders' allreduce of every node's words and a second
    /// round that hands them to the node (module docs).
    pub(crate) fn node_rows(&self, mine: &[u64], op: &'static str) -> Result<Vec<u64>> {
        let stage = self.node().expect("a node stage");
        let gathered = self.on_node(op, |r, w| sched::gather_words(r, mine, w));
        if stage.whole() {
            return gathered;
        }
        let mut rows = vec![0u64; mine.len() * self.size];
        if let Some(leaders) = &stage.leaders {
            // A node this leader could not hear from is failed everywhere.
            let ours = match &gathered {
                Ok(ours) => ours.clone(),
                Err(_) => {
                    let n = stage.starts[stage.node + 1] - stage.starts[stage.node];
                    as_failed(mine).repeat(n)
                }
            };
            let at = stage.process(0) * mine.len();
            rows[at..at + ours.len()].copy_from_slice(&ours);
            let send = rows.clone();
            leaders.max_words(&send, &mut rows);
        }
        gathered?;
        self.on_node(op, |r, w| sched::broadcast(r, &mut rows, 0, w))?;
        Ok(rows)
    }

    /// Whether the check and an allreduce of `n` elements of `T` fit one round of the node
    /// ([`ProcessComm::node_agree_allreduce`]).
    pub(crate) fn node_fits_with_check<T>(n: usize) -> bool {
        sched::fits_with_words::<T>(SLOT_BYTES, N, n)
    }

    /// The check of `call` (with `arrival`) and the allreduce of `buf` in one round through
    /// the node, which must hold every process ([`ProcessComm::node_whole`]): the check's
    /// outcome, and `buf` reduced if it passed.
    pub(crate) fn node_agree_allreduce<T: Copy, O: Op<T>>(
        &self,
        (call, arrival): (&Call, Arrival),
        buf: &mut [T],
        op: &O,
        (rank, leaders): (usize, &[usize]),
        name: &'static str,
    ) -> Result<()> {
        debug_assert!(self.node_whole());
        let mine = words_of(call, arrival);
        let agreed = |rows: &[u64]| self.outcome_of_rows(rows, rank, leaders, name).is_ok();
        let rows = self.on_node(name, |r, w| {
            sched::words_and_allreduce(r, &mine, buf, op, &agreed, w)
        })?;
        self.outcome_of_rows(&rows, rank, leaders, name)
    }

    /// The data stage of a collective `op` on `buf` through the nodes after its check, which
    /// every process agreed: `before` on the node's rounds, the leaders' stage `between`
    /// (several nodes only), and `after` on the rounds again. A leader whose node fails (or
    /// whose op panics) ends the job, as MPI's own stage does: the other nodes' leaders wait
    /// for it in MPI.
    fn through_nodes<T>(
        &self,
        op: &'static str,
        buf: &mut [T],
        before: impl FnOnce(&Rounds<'_>, &mut [T], sched::Watch<'_>) -> std::result::Result<(), Halt>,
        between: impl FnOnce(&ProcessComm, &mut [T]) -> Result<()>,
        after: impl FnOnce(&Rounds<'_>, &mut [T], sched::Watch<'_>) -> std::result::Result<(), Halt>,
    ) -> Result<()> {
        let stage = self.node().expect("a node stage");
        let Some(leaders) = &stage.leaders else {
            self.on_node(op, |r, w| before(r, &mut *buf, w))?;
            return self.on_node(op, |r, w| after(r, buf, w));
        };
        let _abort = AbortOnUnwind {
            comm: &self.comm,
            rank: self.rank,
            op,
        };
        let ended = |e: Error| -> ! {
            eprintln!(
                "corecoll: {e}; process {} leads its node between nodes and cannot finish \
                 {op} with the other nodes: aborting the MPI job (MPI_Abort)",
                self.rank
            );
            self.comm.abort(70)
        };
        if let Err(e) = self.on_node(op, |r, w| before(r, &mut *buf, w)) {
            ended(e);
        }
        between(leaders, &mut *buf)?;
        if let Err(e) = self.on_node(op, |r, w| after(r, buf, w)) {
            ended(e);
        }
        Ok(())
    }

    /// Allreduce between the processes through the nodes: on one node, rounds through its
    /// segment; on several, a reduce to each node's leader, the leaders' linear allreduce
    /// (MPI's choice for an exact op) and a broadcast within each node.
    pub(crate) fn node_allreduce<T, O>(&self, buf: &mut [T], op: &O) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
        O: Op<T>,
    {
        const OP: &str = "allreduce";
        if self.node_whole() {
            return self.on_node(OP, |r, w| sched::allreduce(r, buf, op, w));
        }
        let between = if crate::hybrid::native::exact::<T, O>(op) {
            Algorithm::Auto
        } else {
            Algorithm::Linear
        };
        self.through_nodes(
            OP,
            buf,
            |r, b, w| sched::reduce(r, b, op, 0, w),
            // As `&dyn`: the leaders' `allreduce_call` is the generic caller of this one.
            |leaders, b| leaders.allreduce_call(b, op as &dyn Op<T>, between),
            |r, b, w| sched::broadcast(r, b, 0, w),
        )
    }

    /// Reduce to process `root` through the node, which holds every process.
    pub(crate) fn node_reduce<T: Copy, O: Op<T>>(
        &self,
        buf: &mut [T],
        op: &O,
        root: usize,
    ) -> Result<()> {
        debug_assert!(self.node_whole());
        self.on_node("reduce", |r, w| sched::reduce(r, buf, op, root, w))
    }

    /// Broadcast from process `root` through the nodes: on several nodes, within the root's
    /// node from the root (if it is not the node's leader), between the nodes' leaders over
    /// MPI, and within every node that has not had it from its leader.
    pub(crate) fn node_broadcast<T>(&self, buf: &mut [T], root: usize) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        const OP: &str = "broadcast";
        let stage = self.node().expect("a node stage");
        if stage.whole() {
            return self.on_node(OP, |r, w| sched::broadcast(r, buf, root, w));
        }
        let (j, at) = stage.locate(root);
        // The root's node has the data everywhere after a round from a root that is not its
        // leader; every other node (and that one, if the root leads it) after a round from
        // its leader.
        let first = j == stage.node && at != 0;
        self.through_nodes(
            OP,
            buf,
            |r, b, w| {
                if first {
                    sched::broadcast(r, b, at, w)
                } else {
                    Ok(())
                }
            },
            |leaders, b| leaders.broadcast_call(b, j, Broadcast::Auto),
            |r, b, w| {
                if first {
                    Ok(())
                } else {
                    sched::broadcast(r, b, 0, w)
                }
            },
        )
    }

    /// Allgather between the processes through the node, which holds every process.
    pub(crate) fn node_allgather<T: Copy>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        debug_assert!(self.node_whole());
        self.on_node("allgather", |r, w| sched::allgather(r, send, recv, w))
    }
}
