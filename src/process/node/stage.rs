//! The node stage's calls on the world's leaders' communicator (`ProcessComm`): the rounds
//! through this node's segment, and between nodes the leaders' MPI stage (module docs of
//! `process::node`).

use super::setup::NodeStage;
use crate::algorithms::gather;
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Kind};
use crate::op::Op;
use crate::process::collectives::gather::common::V_FORM;
use crate::process::leaders::check::{as_failed, rows_alike, words_of, Arrival, Call, N};
use crate::process::node::schedules as sched;
use crate::process::node::{cma, gone, Halt, Rounds, SLOT_BYTES, SPINS};
use crate::process::ProcessComm;
use crate::select::{Algorithm, Broadcast};
use ::mpi::traits::*;

/// The leaders' allreduce between nodes for `op` on `T`: the linear one, which keeps the node
/// stage's grouping, or MPI's choice where any grouping gives the same bits (module docs).
fn between_nodes<T: 'static, O: Op<T>>(op: &O) -> Algorithm {
    if crate::process::leaders::native::exact::<T, O>(op) {
        Algorithm::Auto
    } else {
        Algorithm::Linear
    }
}

impl ProcessComm {
    /// The node stage, if the stage between processes runs through the nodes' shared memory.
    pub(crate) fn node(&self) -> Option<&NodeStage> {
        self.node.as_ref()
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
        self.on_node_watching(op, &mut || {}, f)
    }

    /// [`ProcessComm::on_node`] with `meanwhile` run now and then while it waits for another
    /// process (as often as the wait asks its watcher).
    fn on_node_watching<R>(
        &self,
        op: &'static str,
        meanwhile: &mut dyn FnMut(),
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
            meanwhile();
            // This process's immediate collectives (a request's, the last checks of a run on
            // the shadows) may be what the process waited for is waiting for.
            crate::process::mpi::nudge(&self.comm);
            gone(&rounds, q).then(|| failed(q))
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
    /// `meanwhile` runs now and then while the node's round waits for another process.
    pub(crate) fn node_rows(
        &self,
        mine: &[u64],
        op: &'static str,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<Vec<u64>> {
        let stage = self.node().expect("a node stage");
        let gathered = self.on_node_watching(op, meanwhile, |r, w| sched::gather_words(r, mine, w));
        if stage.nodes.whole() {
            return gathered;
        }
        let mut rows = vec![0u64; mine.len() * self.size];
        if let Some(between) = &stage.leaders {
            self.rows_between_nodes(between, mine, gathered.as_deref().ok(), &mut rows);
        }
        gathered?;
        self.on_node(op, |r, w| sched::broadcast(r, &mut rows, 0, w))?;
        Ok(rows)
    }

    /// Whether the check and an allreduce of `n` elements of `T` go together through the node
    /// ([`ProcessComm::node_agree_allreduce`]): they fit a slot (with several nodes, every
    /// process's words and the result too), and the allreduce does not copy once instead.
    pub(crate) fn node_fuses_check<T>(&self, n: usize) -> bool {
        let Some(stage) = self.node() else {
            return false;
        };
        let fits = |words| sched::fits_with_words::<T>(SLOT_BYTES, words, n);
        !stage.nodes.single_copy(n * std::mem::size_of::<T>())
            && fits(N)
            && (stage.nodes.whole() || fits(N * self.size))
    }

    /// The check of `call` (with `arrival`) and the allreduce of `buf` together through the
    /// nodes: the check's outcome, and `buf` reduced if it passed. On one node, one round;
    /// on several, a round that gathers the node's words and reduces its data, the leaders'
    /// allreduce of every node's words and, if they agree, of the nodes' data over MPI, and
    /// a round that hands both back to the node (where the separate check and allreduce take
    /// four rounds).
    pub(crate) fn node_agree_allreduce<T, O>(
        &self,
        (call, arrival): (&Call, Arrival),
        buf: &mut [T],
        op: &O,
        (rank, leaders): (usize, &[usize]),
        name: &'static str,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        let stage = self.node().expect("a node stage");
        let mine = words_of(call, arrival);
        let agreed = |rows: &[u64]| self.outcome_of_rows(rows, rank, leaders, name).is_ok();
        if stage.nodes.whole() {
            let rows = self.on_node(name, |r, w| {
                sched::words_and_allreduce(r, &mine, buf, op, &agreed, w)
            })?;
            return self.outcome_of_rows(&rows, rank, leaders, name);
        }
        // A leader whose op panics ends the job: the other leaders would wait for it in MPI.
        let _abort = stage.leaders.is_some().then(|| self.abort_on_unwind(name));
        let gathered = self.on_node(name, |r, w| {
            sched::words_and_allreduce(r, &mine, buf, op, &rows_alike, w)
        });
        let mut rows = vec![0u64; N * self.size];
        if let Some(between) = &stage.leaders {
            self.rows_between_nodes(between, &mine, gathered.as_deref().ok(), &mut rows);
            if gathered.is_ok() && agreed(&rows) {
                let alg = between_nodes::<T, O>(op);
                if let Err(e) = between.allreduce_call(buf, op as &dyn Op<T>, alg) {
                    self.end_job(name, e);
                }
            }
        }
        gathered?;
        self.on_node(name, |r, w| {
            sched::words_then_data(r, &mut rows, buf, &agreed, w)
        })?;
        self.outcome_of_rows(&rows, rank, leaders, name)
    }

    /// On a node's leader: every process's check words into `rows` over the leaders'
    /// communicator `between`, from this node's (`ours`; `None` if the leader could not hear
    /// from its node, whose processes then count as failed, `mine` standing for their call).
    fn rows_between_nodes(
        &self,
        between: &ProcessComm,
        mine: &[u64],
        ours: Option<&[u64]>,
        rows: &mut [u64],
    ) {
        let stage = self.node().expect("a node stage");
        let count = stage.processes();
        let failed;
        let ours = match ours {
            Some(ours) => ours,
            None => {
                failed = as_failed(mine).repeat(count);
                &failed
            }
        };
        let at = stage.process(0) * mine.len();
        rows.fill(0);
        rows[at..at + ours.len()].copy_from_slice(ours);
        let send = rows.to_vec();
        between.max_words(&send, rows);
    }

    /// Ends the MPI job (`MPI_Abort`) after `e` on a node's leader that cannot finish `op`
    /// with the other nodes' leaders, which wait for it in MPI.
    fn end_job(&self, op: &'static str, e: Error) -> ! {
        eprintln!(
            "corecoll: {e}; process {} leads its node between nodes and cannot finish {op} \
             with the other nodes: aborting the MPI job (MPI_Abort)",
            self.rank
        );
        self.comm.abort(70)
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
        let _abort = self.abort_on_unwind(op);
        if let Err(e) = self.on_node(op, |r, w| before(r, &mut *buf, w)) {
            self.end_job(op, e);
        }
        between(leaders, &mut *buf)?;
        if let Err(e) = self.on_node(op, |r, w| after(r, buf, w)) {
            self.end_job(op, e);
        }
        Ok(())
    }

    /// Allreduce between the processes through the nodes: on one node, rounds through its
    /// segment; on several, a reduce to each node's leader, the leaders' linear allreduce
    /// (MPI's choice for an exact op) and a broadcast within each node.
    pub(crate) fn node_allreduce<T, O>(&self, buf: &mut [T], op: &O) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        const OP: &str = "allreduce";
        let stage = self.node().expect("a node stage");
        if stage.nodes.single_copy(std::mem::size_of_val(buf)) {
            let rank = self.rank;
            return self.on_node(OP, |r, w| {
                let read = |q: usize, at: u64, into: &mut [u8]| {
                    cma::read(r.pid(q), at, into).map_err(|e| match e.raw_os_error() {
                        Some(libc::ESRCH) => Error::ProcessFailed {
                            rank,
                            op: OP,
                            process: stage.process(q),
                        },
                        _ => Error::Unsupported {
                            rank,
                            op: OP,
                            what: format!(
                                "reading process {}'s memory (process_vm_readv) failed: {e}",
                                stage.process(q)
                            ),
                        },
                    })
                };
                sched::single::allreduce(r, buf, op, &read, w)
            });
        }
        if stage.nodes.whole() {
            return self.on_node(OP, |r, w| sched::allreduce(r, buf, op, w));
        }
        self.reduce_across_nodes(OP, buf, op, true)
    }

    /// The reduction of `buf` across several nodes: a reduce to each node's leader, the
    /// leaders' allreduce over MPI and, where `back`, a broadcast from the leader in the node.
    fn reduce_across_nodes<T, O>(
        &self,
        name: &'static str,
        buf: &mut [T],
        op: &O,
        back: bool,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        let between = between_nodes::<T, O>(op);
        self.through_nodes(
            name,
            buf,
            |r, b, w| sched::reduce(r, b, op, 0, w),
            // As `&dyn`: the leaders' `allreduce_call` is the generic caller of this one.
            |leaders, b| leaders.allreduce_call(b, op as &dyn Op<T>, between),
            |r, b, w| {
                if back {
                    sched::broadcast(r, b, 0, w)
                } else {
                    Ok(())
                }
            },
        )
    }

    /// Reduce to process `root` through the nodes: on several, a reduce to each node's
    /// leader, the leaders' allreduce (as in [`ProcessComm::node_allreduce`], so that a
    /// request combining in the same grouping over MPI gives the same bits), and a round from
    /// the root's node's leader to the root. The other processes' `buf` ends as scratch there
    /// (the hybrid reduce hands its leaders a copy).
    pub(crate) fn node_reduce<T, O>(&self, buf: &mut [T], op: &O, root: usize) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        const OP: &str = "reduce";
        let stage = self.node().expect("a node stage");
        if stage.nodes.whole() {
            return self.on_node(OP, |r, w| sched::reduce(r, buf, op, root, w));
        }
        let (j, at) = stage.nodes.locate(root);
        self.reduce_across_nodes(OP, buf, op, j == stage.node && at != 0)
    }

    /// Broadcast from process `root` through the nodes: on several nodes, within the root's
    /// node from the root (if it is not the node's leader), between the nodes' leaders over
    /// MPI, and within every node that has not had it from its leader.
    pub(crate) fn node_broadcast<T>(&self, buf: &mut [T], root: usize) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "broadcast";
        let stage = self.node().expect("a node stage");
        if stage.nodes.whole() {
            return self.on_node(OP, |r, w| sched::broadcast(r, buf, root, w));
        }
        let (j, at) = stage.nodes.locate(root);
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

    /// Allgather between the processes through the nodes: on several, within each node (its
    /// processes' blocks in place), between the nodes' leaders over MPI (each node's blocks,
    /// `MPI_Allgatherv`'s shape), and from each leader to its node.
    pub(crate) fn node_allgather<T: Elem>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        const OP: &str = "allgather";
        let stage = self.node().expect("a node stage");
        if stage.nodes.whole() {
            return self.on_node(OP, |r, w| sched::allgather(r, send, recv, w));
        }
        let b = send.len();
        let ours = stage.process(0) * b..(stage.process(0) + stage.processes()) * b;
        let (counts, displs): (Vec<usize>, Vec<usize>) = stage
            .nodes
            .starts
            .windows(2)
            .map(|w| ((w[1] - w[0]) * b, w[0] * b))
            .unzip();
        let kind = Kind::Coll(Collective::Allgather);
        self.through_nodes(
            OP,
            recv,
            |r, recv, w| sched::allgather(r, send, &mut recv[ours.clone()], w),
            |leaders, recv| {
                let mine = recv[ours.clone()].to_vec();
                let bytes = std::mem::size_of_val(recv);
                leaders.agreed(OP, kind, V_FORM, bytes, |t, tag| {
                    gather::allgatherv(t, &mine, recv, &counts, &displs, tag)
                })
            },
            |r, recv, w| sched::broadcast(r, recv, 0, w),
        )
    }
}
