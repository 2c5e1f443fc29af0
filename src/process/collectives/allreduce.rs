//! Allreduce across processes: reduce within each process to its leader, allreduce between
//! the leaders, broadcast within each process; pipelined in segments through the stages for
//! long vectors (`pipeline`).

use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{Elem, Kind};
use crate::op::Op;
use crate::process::bridge::Bridge;
use crate::process::collectives::pipeline;
use crate::process::leaders::check::Call;
use crate::select::{Algorithm, Broadcast, Reduce};
use std::mem::size_of;

/// The algorithm between processes for a caller's allreduce choice.
pub(in crate::process) fn between_allreduce(algorithm: Algorithm) -> Algorithm {
    match algorithm {
        Algorithm::Hierarchical { .. } | Algorithm::HierarchicalDirect => Algorithm::Auto,
        chosen => chosen,
    }
}

impl Bridge {
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
}
