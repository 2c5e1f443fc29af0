//! Broadcast across processes: to the root process's leader, between the leaders, within each
//! process.

use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{Elem, Kind};
use crate::process::bridge::Bridge;
use crate::process::leaders::check::Call;
use crate::select::{Barrier, Broadcast};

impl Bridge {
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
}
