//! Barrier across processes: the threads' agreement, the leaders' check (and a flat barrier
//! between them if one is named), then the release within each process.

use crate::error::Result;
use crate::process::bridge::Bridge;
use crate::process::leaders::check::Call;
use crate::select::Barrier;

impl Bridge {
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
