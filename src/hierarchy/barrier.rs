//! The hierarchical barrier: a barrier in each group up the levels, one among the top leaders,
//! and one in each group on the way down; each is the crate's flat barrier on a cached
//! sub-communicator (docs/hierarchy.md).
//!
//! **Holding.** A rank leaves only after the barrier of its lowest group on the way down,
//! which its leader enters only after the top barrier, which the top leaders pass only after
//! every group's barrier on the way up, which needs every rank. So no rank leaves before every
//! rank has entered.
//!
//! **Mixed algorithms.** The caller (`Comm::barrier_with`) runs the one-hop call check on the
//! whole communicator first: rank r posts to r + 1 and first waits for r − 1, as
//! dissemination's first round does and as the tree barrier's first messages do on every ring
//! edge but 0 → 1 (`algorithms::barrier`), under another tag variant. A mix of algorithms has
//! at least two ring edges between ranks of different algorithms, one of them not 0 → 1,
//! whose receiver meets a foreign tag in its first receive and fails the run; no rank can pass
//! meanwhile, since neither a hierarchical barrier nor a flat one completes without every
//! rank taking part in it.

use super::{Group, Hierarchy, Top};
use crate::error::Result;

impl<G: Group> Hierarchy<G> {
    /// The hierarchical barrier on `comm` (whose hierarchy this is), after the call check.
    pub(crate) fn barrier(&self, comm: &G) -> Result<()> {
        for level in &self.levels {
            level.group.barrier()?;
        }
        match &self.top {
            Top::Whole => comm.barrier()?,
            Top::Leaders(leaders) => leaders.barrier()?,
            Top::None => {}
        }
        for level in self.levels.iter().rev() {
            level.group.barrier()?;
        }
        Ok(())
    }
}
