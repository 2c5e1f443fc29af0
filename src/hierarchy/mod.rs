//! HAN-style multi-level collectives: a communicator's ranks grouped by where they run (the L3
//! group, then the package), a sub-communicator per group and one of the groups' leaders, and
//! collectives composed from the crate's own flat ones on those communicators.
//!
//! The levels come from [`Comm::location`] of every rank, which every rank sees alike, so
//! every rank derives the same plan without communicating ([`Plan::of`]). The
//! sub-communicators are made with [`Comm::split`] (key = rank, so a group's ranks keep their
//! order) the first time a hierarchical collective runs on a communicator, after that call's
//! check, and cached in the rank's `Comm` ([`Hierarchy`]).
//!
//! This module composes; it has no schedules of its own (DESIGN.md: the hierarchy must not
//! duplicate flat algorithms).

use crate::comm::Comm;
use crate::error::Result;
use crate::op::Op;
use crate::select::Algorithm;
use crate::topology::Location;

/// A level of the hierarchy: which group of that level a location belongs to.
type LevelKey = fn(&Location) -> usize;

/// The levels considered, lowest first: the L3 group, then the package. (L3 indices are
/// machine-wide and every L3 group lies in one package, so the levels nest.)
const LEVELS: [LevelKey; 2] = [|l| l.l3, |l| l.package];

/// What the hierarchy of a communicator looks like, derived from the locations alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Per level kept (lowest first), the group of every rank of the communicator (a small
    /// number per distinct group, in order of the groups' first ranks). A level where every
    /// group has one rank, or where there is only one group, is left out (collapsed).
    pub levels: Vec<Vec<usize>>,
    /// Whether the ranks of every group of every level form an interval of ranks, so that
    /// combining within groups and then across the groups' leaders keeps rank order.
    pub contiguous: bool,
}

impl Plan {
    /// The plan for ranks at `locations` (one per rank). If any rank has no location (an
    /// unpinned team), the hierarchy is flat: no levels, one group of everyone.
    pub(crate) fn of(locations: &[Option<Location>]) -> Plan {
        let Some(locs) = locations.iter().copied().collect::<Option<Vec<Location>>>() else {
            return Plan {
                levels: Vec::new(),
                contiguous: true,
            };
        };
        let mut contiguous = true;
        let mut levels = Vec::new();
        // The ranks still taking part at the current level: the leaders of the level below.
        let mut alive: Vec<usize> = (0..locs.len()).collect();
        for key in LEVELS {
            contiguous &= intervals(&locs, key);
            let groups = group_numbers(&locs, key);
            let distinct = alive
                .iter()
                .map(|&r| groups[r])
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            if distinct == alive.len() {
                // Every group of this level has one rank left: nothing to combine here.
                continue;
            }
            if distinct == 1 {
                // One group: the ranks left are the top, and the levels above collapse too.
                break;
            }
            // The leaders (lowest rank of each group) go on.
            let mut seen = std::collections::BTreeSet::new();
            alive.retain(|&r| seen.insert(groups[r]));
            levels.push(groups);
        }
        Plan { levels, contiguous }
    }
}

/// Per rank, its group under `key`, numbered in order of the groups' first ranks.
fn group_numbers(locs: &[Location], key: LevelKey) -> Vec<usize> {
    let mut numbers = std::collections::HashMap::new();
    locs.iter()
        .map(|l| {
            let next = numbers.len();
            *numbers.entry(key(l)).or_insert(next)
        })
        .collect()
}

/// Whether the ranks of every group under `key` form an interval.
fn intervals(locs: &[Location], key: LevelKey) -> bool {
    let mut closed = std::collections::HashSet::new();
    let mut prev = None;
    for l in locs {
        let k = key(l);
        if prev != Some(k) {
            if !closed.insert(k) {
                return false;
            }
            prev = Some(k);
        }
    }
    true
}

/// One level of a rank's hierarchy: its group there (for a rank that leads its groups on
/// every level below).
#[derive(Debug)]
struct Level {
    /// The ranks of this rank's group, in rank order; its rank 0 is the group's leader.
    group: Comm,
}

/// Where the top of the hierarchy (the allreduce among the highest leaders) runs for a rank.
#[derive(Debug)]
enum Top {
    /// On the communicator itself (no level kept: the hierarchy is flat).
    Whole,
    /// On the communicator of the highest level's leaders, of which this rank is one.
    Leaders(Comm),
    /// This rank leads no group at some level: it takes no part in the top.
    None,
}

/// One rank's cached hierarchy of a communicator.
#[derive(Debug)]
pub(crate) struct Hierarchy {
    /// The groups this rank is in, lowest level first, up to the first level where it is not
    /// the leader (every level, for a rank that leads everywhere).
    levels: Vec<Level>,
    /// Where the top runs for this rank.
    top: Top,
    /// [`Plan::contiguous`].
    contiguous: bool,
}

impl Hierarchy {
    /// Builds `comm`'s hierarchy: every rank of `comm` must call this at the same point (it
    /// splits `comm`, and the leaders' communicators below it).
    pub(crate) fn build(comm: &Comm) -> Result<Hierarchy> {
        let plan = comm.hierarchy_plan();
        let mut levels = Vec::new();
        // The communicator being split at the current level (`None`: `comm` itself; then the
        // previous level's leaders), and the rank in `comm` of each of its members.
        let mut current: Option<Comm> = None;
        let mut members: Vec<usize> = (0..comm.size()).collect();
        let mut leads_all = true;
        for groups in &plan.levels {
            let on = current.as_ref().unwrap_or(comm);
            let group = on
                .split(Some(groups[members[on.rank()]]), on.rank())?
                .expect("a rank that passes a color gets a communicator");
            let leaders = on.split((group.rank() == 0).then_some(0), on.rank())?;
            let mut seen = std::collections::BTreeSet::new();
            members.retain(|&r| seen.insert(groups[r]));
            levels.push(Level { group });
            match leaders {
                Some(l) => current = Some(l),
                None => {
                    leads_all = false;
                    break;
                }
            }
        }
        let top = match current {
            _ if !leads_all => Top::None,
            Some(l) => Top::Leaders(l),
            None => Top::Whole,
        };
        Ok(Hierarchy {
            levels,
            top,
            contiguous: plan.contiguous,
        })
    }

    /// Whether every group is an interval of ranks ([`Plan::contiguous`]).
    pub(crate) fn contiguous(&self) -> bool {
        self.contiguous
    }

    /// The hierarchical allreduce of `buf` on `comm` (whose hierarchy this is): reduce up the
    /// levels to the leaders, allreduce among the highest leaders with `Auto`'s choice,
    /// broadcast back down. Keeps rank order only if [`Hierarchy::contiguous`]. (`op` goes by
    /// value to the top allreduce, the very instantiation that called this one, so that the
    /// types do not recurse through `&O`.)
    pub(crate) fn allreduce<T, O>(&self, comm: &Comm, buf: &mut [T], op: O) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
        O: Op<T>,
    {
        for level in &self.levels {
            level.group.reduce(buf, &op, 0)?;
        }
        match &self.top {
            Top::Whole => comm.allreduce_with(buf, op, Algorithm::Auto)?,
            Top::Leaders(leaders) => leaders.allreduce_with(buf, op, Algorithm::Auto)?,
            Top::None => {}
        }
        for level in self.levels.iter().rev() {
            level.group.broadcast(buf, 0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{Pinning, Topology};

    fn plan(t: &Topology, pinning: Pinning, ranks: usize) -> Plan {
        Plan::of(&t.place(&pinning, ranks).unwrap())
    }

    #[test]
    fn plans_of_synthetic_machines() {
        // 2 packages of one L3 group of 3 cores: the L3 level is the package level.
        let t = Topology::synthetic(&[2, 3]).unwrap();
        let p = plan(&t, Pinning::Compact, 6);
        assert_eq!(p.levels, vec![vec![0, 0, 0, 1, 1, 1]]);
        assert!(p.contiguous);
        let p = plan(&t, Pinning::Spread, 6);
        assert_eq!(p.levels, vec![vec![0, 1, 0, 1, 0, 1]]);
        assert!(!p.contiguous);
        // Two levels.
        let t = Topology::synthetic(&[2, 2, 2]).unwrap();
        let p = plan(&t, Pinning::Compact, 8);
        assert_eq!(
            p.levels,
            vec![vec![0, 0, 1, 1, 2, 2, 3, 3], vec![0, 0, 0, 0, 1, 1, 1, 1]]
        );
        // One rank per L3 group: the L3 level collapses.
        let p = plan(&t, Pinning::Spread, 4);
        assert_eq!(p.levels, vec![vec![0, 1, 0, 1]]);
        // One group: flat.
        let p = plan(&t, Pinning::Compact, 2);
        assert!(p.levels.is_empty());
        // Unpinned: flat.
        let p = plan(&t, Pinning::None, 8);
        assert!(p.levels.is_empty() && p.contiguous);
    }

    #[test]
    fn contiguity_of_uneven_and_wrapped_placements() {
        let t = Topology::synthetic_groups(vec![vec![3, 2], vec![4]]).unwrap();
        let p = plan(&t, Pinning::Compact, 9);
        assert_eq!(
            p.levels,
            vec![
                vec![0, 0, 0, 1, 1, 2, 2, 2, 2],
                vec![0, 0, 0, 0, 0, 1, 1, 1, 1]
            ]
        );
        assert!(p.contiguous);
        // More ranks than cores: compact wraps around, and the groups interleave.
        let t = Topology::synthetic(&[2, 3]).unwrap();
        assert!(!plan(&t, Pinning::Compact, 8).contiguous);
    }

    /// Each rank's levels and top on 2 packages × 2 L3 groups × 4 cores, compact: every rank
    /// in an L3 group of 4; the L3 leaders (0, 4, 8, 12) in packages of 2; the package leaders
    /// (0, 8) at the top.
    #[test]
    fn built_communicators() {
        let team = crate::Team::builder()
            .ranks(16)
            .topology(Topology::synthetic(&[2, 2, 4]).unwrap())
            .pinning(Pinning::Compact)
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .unwrap();
        let out = team
            .run(|comm| {
                let h = Hierarchy::build(comm)?;
                let sizes: Vec<_> = h.levels.iter().map(|l| l.group.size()).collect();
                let top = match &h.top {
                    Top::Whole => Some(usize::MAX),
                    Top::Leaders(l) => Some(l.size()),
                    Top::None => None,
                };
                Ok::<_, crate::Error>((sizes, top, h.contiguous))
            })
            .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            let (sizes, top, contiguous) = res.unwrap();
            let want = match r {
                0 | 8 => (vec![4, 2], Some(2)),
                4 | 12 => (vec![4, 2], None),
                _ => (vec![4], None),
            };
            assert_eq!((sizes, top), want, "rank {r}");
            assert!(contiguous);
        }
    }
}
