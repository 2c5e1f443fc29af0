//! The hierarchical reduce: reduce up the levels to the groups' leaders, reduce among the top
//! leaders to the root's top representative, which hands the result to the root if they
//! differ; each stage is the crate's flat reduce on a cached sub-communicator
//! (docs/hierarchy.md).

use super::{Group, Hierarchy, Top};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

impl<G: Group> Hierarchy<G> {
    /// The hierarchical reduce of `buf` with `op` to `root` on `comm` (whose hierarchy this
    /// is), after the call check. `t` is `comm`'s collective transport and `tag` the call's
    /// own tag (with its variant), for the one message of the hand-off from the root's top
    /// representative to the root.
    ///
    /// Keeps rank order only if [`Hierarchy::contiguous`] (the caller picks the ordered plan
    /// for a non-commutative op). As in MPI, only the root's `buf` changes: a leader that is
    /// not the root reduces into a scratch copy.
    pub(crate) fn reduce<T, O, Tr>(
        &self,
        comm: &G,
        t: &Tr,
        buf: &mut [T],
        op: &O,
        root: usize,
        tag: Tag,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
        Tr: Transport,
    {
        let plan = &self.plan;
        let me = comm.rank();
        let top = *plan
            .representatives(root)
            .last()
            .expect("the root is its own representative");
        let leads = self.levels.first().is_some_and(|l| l.group.rank() == 0);
        let mut scratch: Vec<T>;
        let work: &mut [T] = if leads && me != root {
            scratch = crate::copy::to_vec(buf);
            &mut scratch
        } else {
            &mut *buf
        };
        for level in &self.levels {
            level.group.stage_reduce(work, op, 0)?;
        }
        match &self.top {
            Top::Whole => return comm.stage_reduce(work, op, root),
            Top::Leaders(leaders) => {
                let at = plan.position(plan.levels.len(), top);
                leaders.stage_reduce(work, op, at)?;
            }
            Top::None => {}
        }
        if top != root {
            if me == top {
                t.send(root, tag, &*work)?;
            } else if me == root {
                t.recv(top, tag, work)?;
            }
        }
        Ok(())
    }
}
