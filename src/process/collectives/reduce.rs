//! Reduce across processes: within each process to its leader, between the leaders to the
//! root's process, and there to the root.

use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{Elem, Kind};
use crate::op::Op;
use crate::process::bridge::Bridge;
use crate::process::leaders::check::Call;
use crate::select::{Barrier, Reduce};

impl Bridge {
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
}
