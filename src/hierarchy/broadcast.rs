//! The hierarchical broadcast: the root's data goes up the root's own chain of groups to the
//! top leaders, among the top leaders, then down every other group; each stage is the crate's
//! flat broadcast on a cached sub-communicator (docs/hierarchy.md).

use super::{Group, Hierarchy, Plan, Top};
use crate::error::Result;
use crate::mailbox::Elem;

impl Plan {
    /// The ranks that represent `root` at each level: entry `l` (for `l` in
    /// `0..=levels.len()`) takes part at level `l` and holds the root's data (or its group's
    /// partial result) there; entry 0 is `root` itself, the last is its top leader. The same
    /// on every rank.
    pub(crate) fn representatives(&self, root: usize) -> Vec<usize> {
        let mut reps = vec![root];
        for (l, groups) in self.levels.iter().enumerate() {
            let leader = self.members(l, groups[root])[0];
            reps.push(leader);
        }
        reps
    }

    /// Whether the root's group at `level` broadcasts on the way up: its representative there
    /// is not the group's leader, so the group broadcasts from it (and not again on the way
    /// down). `reps` is [`Plan::representatives`] of the root.
    pub(crate) fn broadcasts_up(reps: &[usize], level: usize) -> bool {
        reps[level] != reps[level + 1]
    }

    /// `rank`'s position among the ranks taking part at `level` in its group there, which is
    /// its rank in that group's communicator (for `level == levels.len()`: in the top
    /// leaders' communicator).
    pub(crate) fn position(&self, level: usize, rank: usize) -> usize {
        let ranks = match self.levels.get(level) {
            Some(groups) => self.members(level, groups[rank]),
            None => self.alive(level),
        };
        ranks
            .iter()
            .position(|&r| r == rank)
            .expect("the rank takes part at that level")
    }
}

impl<G: Group> Hierarchy<G> {
    /// The hierarchical broadcast of `buf` from `root` on `comm` (whose hierarchy this is),
    /// after the call check. Every rank decides its stages from the plan and the root alone:
    ///
    /// 1. up: at each level, the root's group broadcasts from the root's representative if
    ///    that is not the group's leader (then every rank of that group has the data);
    /// 2. the top leaders broadcast from the root's top representative;
    /// 3. down: every group that did not broadcast on the way up broadcasts from its leader.
    ///
    /// Every stage is `Auto`'s flat broadcast on the group's communicator.
    pub(crate) fn broadcast<T>(&self, comm: &G, buf: &mut [T], root: usize) -> Result<()>
    where
        T: Elem,
    {
        let plan = &self.plan;
        let reps = plan.representatives(root);
        // Whether this rank's group at level l is the root's and broadcast on the way up.
        let done_up = |l: usize, number: usize| {
            number == plan.levels[l][root] && Plan::broadcasts_up(&reps, l)
        };
        for (l, level) in self.levels.iter().enumerate() {
            if done_up(l, level.number) {
                let from = plan.position(l, reps[l]);
                level.group.stage_broadcast(buf, from)?;
            }
        }
        match &self.top {
            Top::Whole => comm.stage_broadcast(buf, root)?,
            Top::Leaders(leaders) => {
                let from = plan.position(plan.levels.len(), reps[plan.levels.len()]);
                leaders.stage_broadcast(buf, from)?;
            }
            Top::None => {}
        }
        for (l, level) in self.levels.iter().enumerate().rev() {
            if !done_up(l, level.number) {
                level.group.stage_broadcast(buf, 0)?;
            }
        }
        Ok(())
    }
}
