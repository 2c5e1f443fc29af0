//! The collectives of a `Comm` whose ranks span MPI processes, in the three stages of
//! `process::world`: within each process towards its rank 0 (the crate's collectives on the
//! process's own `Comm`), between the processes' leaders (`Bridge::across`: the check, then
//! the leaders' `ProcessComm`), and within each process from its rank 0. Every rank's stage 3
//! waits for its leader, so a failure anywhere in the call reaches every rank of the call.
//!
//! The algorithm a caller chooses (`allreduce_with` and the like) is the one that runs between
//! the processes, where the paper's algorithms (Träff 2021's dual root over `MPI_Sendrecv`)
//! run; within a process the crate's `Auto` runs. The hierarchical choices (`Hierarchical`,
//! `HierarchicalDirect`) are this composition itself and run `Auto` between processes; the
//! shared-memory `Direct` cannot reach another process and is refused on every rank.
//!
//! The op reaches these as `&dyn Op<T>`: the stages call the public collectives of the
//! process's own `Comm` (which would otherwise instantiate these generic methods again with
//! `&O`, `&&O`, … without end); one virtual call per folded block costs nothing measurable.
//!
//! A rank's local stages report errors with the ranks of its process's communicator (thread
//! numbers); the stage between processes names the processes' leaders by their rank.

use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Kind};
use crate::op::Op;
use crate::process::bridge::Bridge;
use crate::process::collectives::pipeline;
use crate::process::leaders::check::Call;
use crate::select::{Algorithm, Barrier, Broadcast, Reduce};
use std::mem::size_of;

/// The algorithm between processes for a caller's allreduce choice.
pub(in crate::process) fn between_allreduce(algorithm: Algorithm) -> Algorithm {
    match algorithm {
        Algorithm::Hierarchical { .. } | Algorithm::HierarchicalDirect => Algorithm::Auto,
        chosen => chosen,
    }
}

impl Bridge {
    /// Fails this rank's process run with `e` (so that none of its threads waits for this
    /// one) and returns it.
    pub(crate) fn fail(&self, e: Error) -> Error {
        self.local.fail(e)
    }

    /// `Comm::allreduce_with` across processes: reduce to each process's rank 0 (in rank
    /// order), allreduce between the leaders with `algorithm`, broadcast from rank 0; in
    /// segments that pipeline through the three stages if the vector is longer than one
    /// (`process::collectives::pipeline`: `Hierarchical { segment: Block::Elements(s) }`'s s elements, else
    /// `hierarchy::AUTO_SEGMENT_BYTES` worth).
    pub(crate) fn allreduce<T>(
        &self,
        buf: &mut [T],
        op: &dyn Op<T>,
        algorithm: Algorithm,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "allreduce";
        let call =
            Call::of::<T>(Kind::Coll(Collective::Allreduce), algorithm.id(), buf.len()).with_op(op);
        let between = between_allreduce(algorithm);
        // Longer than one segment: the stages pipeline (`process::collectives::pipeline`). With one thread
        // per process there are no stages within the processes to overlap with, and the
        // algorithm between them runs on the whole vector; nor where the world's processes share
        // nodes, whose rounds pipeline themselves (its requests do as its blocking calls, so
        // that they combine alike). The segment is the call's block either way, so that
        // processes that ask for different segments fail the check.
        let seg = pipeline::segment_elements(algorithm, size_of::<T>());
        let call = call.in_blocks(seg);
        if buf.len() > seg && self.layout.most_threads() > 1 && !self.layout.on_node() {
            return self.allreduce_pipelined(buf, op, seg, call, between);
        }
        let local = &self.local;
        let before = self.first_stage(OP, &call, || local.reduce_with(buf, op, 0, Reduce::Auto));
        let on_node = matches!(between, Algorithm::Auto | Algorithm::Direct);
        // A request of a world whose processes share nodes combines over MPI in the node
        // stage's grouping (`process::node`), so that it gives the blocking call's bits.
        let grouped = self.grouping().filter(|_| on_node);
        if on_node && self.on_node() {
            // A short one takes the check and the data together through the nodes.
            let (rank, leaders) = (self.rank(), self.layout.leaders());
            self.across_checked(OP, call, before, |pc, call, arrival| {
                if pc.node_fuses_check::<T>(buf.len()) {
                    return pc.node_agree_allreduce((call, arrival), buf, &op, (rank, leaders), OP);
                }
                pc.agree_across(call, arrival, rank, leaders, OP)?;
                pc.allreduce_call(buf, op, between)
            })?;
        } else {
            self.across(OP, call, before, |pc| match grouped {
                Some(starts) => pc.grouped_allreduce(buf, op, starts),
                None => pc.allreduce_call(buf, op, between),
            })?;
        }
        self.note_node_allreduce(on_node, std::mem::size_of_val(buf));
        local.broadcast_with(buf, 0, Broadcast::Auto)
    }

    /// `Comm::broadcast_with` across processes: the root's process first brings the data to
    /// its rank 0 (a broadcast of its own from the root, if the root is not that rank), the
    /// leaders broadcast with `algorithm`, and every other process broadcasts from its rank 0
    /// (the root's waits for its leader instead: a barrier).
    pub(crate) fn broadcast<T>(
        &self,
        buf: &mut [T],
        root: usize,
        algorithm: Broadcast,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "broadcast";
        let (q, l) = self.layout.locate(root);
        let home = q == self.layout.process();
        let call =
            Call::of::<T>(Kind::Coll(Collective::Broadcast), algorithm.id(), buf.len()).at(root);
        let local = &self.local;
        let before = self.first_stage(OP, &call, || {
            if home && l != 0 {
                local.broadcast_with(buf, l, Broadcast::Auto)
            } else {
                Ok(())
            }
        });
        let between = match algorithm {
            Broadcast::Hierarchical | Broadcast::HierarchicalDirect => Broadcast::Auto,
            chosen => chosen,
        };
        self.across(OP, call, before, |pc| pc.broadcast_call(buf, q, between))?;
        self.note_node(matches!(between, Broadcast::Auto | Broadcast::Direct));
        if home && l != 0 {
            local.barrier_with(Barrier::Auto)
        } else {
            local.broadcast_with(buf, 0, Broadcast::Auto)
        }
    }

    /// `Comm::reduce_with` across processes: reduce to each process's rank 0 (in rank order;
    /// on a copy where that rank is not the root, whose buffer stays unchanged), reduce
    /// between the leaders to the root's process with `algorithm`, and there hand the result
    /// to the root if it is not rank 0 (a scatterv of one block); the others wait for their
    /// leader (a barrier).
    pub(crate) fn reduce<T>(
        &self,
        buf: &mut [T],
        op: &dyn Op<T>,
        root: usize,
        algorithm: Reduce,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "reduce";
        let (q, l) = self.layout.locate(root);
        let home = q == self.layout.process();
        let call = Call::of::<T>(Kind::Coll(Collective::Reduce), algorithm.id(), buf.len())
            .at(root)
            .with_op(op);
        let local = &self.local;
        let between = match algorithm {
            Reduce::Hierarchical | Reduce::HierarchicalDirect => Reduce::Auto,
            chosen => chosen,
        };
        // As in `allreduce`: a request combines in the node stage's grouping (on several
        // nodes the leaders allreduce, so a request does too, grouped by node).
        let node = matches!(between, Reduce::Auto | Reduce::Direct);
        let request = node && self.layout.on_node() && !self.on_node();
        let grouped = self.grouping().filter(|_| node && !self.layout.one_node());
        let between = if request { Reduce::Linear } else { between };
        // The leader reduces into a copy unless it is the root itself.
        let mut copy = (self.is_leader() && self.rank() != root).then(|| crate::copy::to_vec(buf));
        {
            let part: &mut [T] = match copy.as_deref_mut() {
                Some(c) => c,
                None => &mut *buf,
            };
            let before =
                self.first_stage(OP, &call, || local.reduce_with(part, op, 0, Reduce::Auto));
            self.across(OP, call, before, |pc| match grouped {
                Some(starts) => pc.grouped_allreduce(part, op, starts),
                None => pc.reduce_call(part, op, q, between),
            })?;
            self.note_node(node);
        }
        if !(home && l != 0) {
            return local.barrier_with(Barrier::Auto);
        }
        let t = self.layout.threads(q);
        let mut counts = vec![0; t];
        counts[l] = buf.len();
        let displs = vec![0; t];
        let me = local.rank();
        let (send, recv): (&[T], &mut [T]) = match (&copy, me == l) {
            (Some(c), _) => (c, &mut []),
            (None, true) => (&[], buf),
            (None, false) => (&[], &mut []),
        };
        local.scatterv(send, &counts, &displs, recv, 0)
    }

    /// `Comm::barrier_with` across processes: the threads' agreement on the call (a
    /// dissemination among them, so it is also their barrier), the leaders' check (an
    /// allreduce, which no process leaves before every process has entered it) and, for a
    /// flat algorithm, that algorithm's barrier between the processes, then a barrier within
    /// each process (the release). The hierarchical algorithms are this composition itself.
    pub(crate) fn barrier(&self, algorithm: Barrier) -> Result<()> {
        const OP: &str = "barrier";
        let call = Call::barrier_with(algorithm.id());
        let before = self.first_stage(OP, &call, || Ok(()));
        self.across(OP, call, before, |pc| match algorithm {
            Barrier::Dissemination | Barrier::Tree => pc.barrier_call(algorithm),
            Barrier::Auto | Barrier::Hierarchical | Barrier::HierarchicalDirect => Ok(()),
        })?;
        self.note_node(true);
        self.local.barrier_with(Barrier::Auto)
    }
}

impl Bridge {
    /// `Comm::location` of a rank of the world: known for this process's threads only.
    pub(crate) fn local_location(&self, rank: usize) -> Option<crate::topology::Location> {
        if rank >= self.size() {
            return None;
        }
        let (q, l) = self.layout.locate(rank);
        (q == self.layout.process())
            .then(|| self.local.location(l))
            .flatten()
    }
}
