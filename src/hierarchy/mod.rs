//! HAN-style multi-level collectives: a communicator's ranks grouped by where they run (the L3
//! group, then the package), a sub-communicator per group and one of the groups' leaders, and
//! collectives composed from the crate's own flat ones on those communicators.
//!
//! The levels come from `Comm::location` of every rank, which every rank sees alike, so
//! every rank derives the same plan without communicating ([`Plan::of`]). The
//! sub-communicators are made with `Comm::split` (key = rank, so a group's ranks keep their
//! order) the first time a hierarchical collective runs on a communicator, after that call's
//! check, and cached in the rank's `Comm` ([`Hierarchy`]).
//!
//! This module composes; it has no schedules of its own (DESIGN.md: the hierarchy must not
//! duplicate flat algorithms).

mod allgather;
pub(crate) mod alltoall;
mod barrier;
mod broadcast;
pub(crate) mod direct;
mod reduce;

use crate::error::Result;
use crate::mailbox::Elem;
use crate::op::Op;
use crate::select::Block;
use crate::topology::Location;

/// What a hierarchy needs of the communicators it is made of — the whole one, its groups' and
/// its leaders' — all of them communicators of threads of one process (`local::Local`
/// implements it). The `stage_*` collectives run `Auto`'s flat algorithm without a call check
/// of their own (the hierarchical collective checked its call on the whole communicator
/// first); the others are full collectives with their own check.
pub(crate) trait Group: Sized {
    /// This rank's number in the communicator.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// `MPI_Comm_split`: every rank of the communicator calls it.
    fn split(&self, color: Option<usize>, key: usize) -> Result<Option<Self>>;
    /// A flat reduce of `buf` to `root`, without a call check.
    fn stage_reduce<T: Elem, O: Op<T>>(&self, buf: &mut [T], op: &O, root: usize) -> Result<()>;
    /// A flat broadcast of `buf` from `root`, without a call check.
    fn stage_broadcast<T: Elem>(&self, buf: &mut [T], root: usize) -> Result<()>;
    /// A flat allreduce of `buf`, without a call check.
    fn stage_allreduce<T: Elem, O: Op<T>>(&self, buf: &mut [T], op: &O) -> Result<()>;
    /// The communicator's barrier (`Auto`).
    fn barrier(&self) -> Result<()>;
    /// The communicator's allgather (`Auto`).
    fn allgather<T: Elem>(&self, send: &[T], recv: &mut [T]) -> Result<()>;
    /// The communicator's gatherv to `root`.
    fn gatherv<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: usize,
    ) -> Result<()>;
    /// The communicator's allgatherv.
    fn allgatherv<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()>;
}

/// A level of the hierarchy: which group of that level a location belongs to.
type LevelKey = fn(&Location) -> usize;

/// The levels considered, lowest first: the L3 group, then the package. (L3 indices are
/// machine-wide and every L3 group lies in one package, so the levels nest.)
const LEVELS: [LevelKey; 2] = [|l| l.l3, |l| l.package];

/// What the hierarchy of a communicator looks like, derived from the locations alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Per level kept (lowest first), the group of every rank of the communicator: a small
    /// number per distinct group, in order of the groups' first ranks. A rank that takes no
    /// part at a level (it is not the leader of its group at some level below) has the group
    /// of the rank that represents it there, its leader. A level where every group has one
    /// rank, or where there is only one group, is left out (collapsed).
    pub levels: Vec<Vec<usize>>,
    /// Whether the ranks of every group of every level form an interval of ranks, so that
    /// combining within groups and then across the groups' leaders keeps rank order. Always
    /// true for an [`ordered`](Plan::of) plan.
    pub contiguous: bool,
    /// [`Plan::covered`], computed once with the plan.
    covered: Vec<Vec<usize>>,
    /// [`Plan::order`], computed once with the plan.
    order: Vec<usize>,
    /// The inverse of `order`: rank r is at `place[r]` in it.
    place: Vec<usize>,
}

impl Plan {
    /// The plan for ranks at `locations` (one per rank). If any rank has no location (an
    /// unpinned team), the hierarchy is flat: no levels, one group of everyone.
    ///
    /// With `ordered`, every group is cut into its runs of consecutive ranks (consecutive
    /// among the ranks taking part at that level), so that every group is an interval and
    /// combining up the levels keeps rank order for a non-commutative op. A placement that
    /// interleaves the groups rank by rank (spread) then has runs of one rank and the plan is
    /// flat: no grouping can keep the order there.
    pub(crate) fn of(locations: &[Option<Location>], ordered: bool) -> Plan {
        let Some(locs) = locations.iter().copied().collect::<Option<Vec<Location>>>() else {
            let all: Vec<usize> = (0..locations.len()).collect();
            return Plan {
                levels: Vec::new(),
                contiguous: true,
                covered: vec![all.clone()],
                order: all.clone(),
                place: all,
            };
        };
        let p = locs.len();
        let mut contiguous = true;
        let mut levels = Vec::new();
        // The ranks still taking part at the current level: the leaders of the level below.
        let mut alive: Vec<usize> = (0..p).collect();
        // The rank that represents each rank at the current level (itself, or its leader).
        let mut rep: Vec<usize> = (0..p).collect();
        for key in LEVELS {
            let mut groups = group_numbers(&locs, key);
            if ordered {
                groups = runs(&alive, &groups, p);
            } else {
                contiguous &= intervals(&locs, key);
            }
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
            // Every rank's group is its representative's; the leaders (lowest rank of each
            // group) go on and represent their groups above.
            let per_rank: Vec<usize> = rep.iter().map(|&r| groups[r]).collect();
            let mut leader_of = std::collections::HashMap::new();
            for &r in &alive {
                leader_of.entry(groups[r]).or_insert(r);
            }
            alive.retain(|&r| leader_of[&groups[r]] == r);
            for r in rep.iter_mut() {
                *r = leader_of[&groups[*r]];
            }
            levels.push(per_rank);
        }
        let mut plan = Plan {
            levels,
            contiguous,
            covered: Vec::new(),
            order: Vec::new(),
            place: vec![0; p],
        };
        plan.covered = plan.top_groups(p);
        plan.order = plan.covered.concat();
        for (v, &r) in plan.order.iter().enumerate() {
            plan.place[r] = v;
        }
        plan
    }

    /// The ranks taking part at `level` (0: every rank; `levels.len()`: the top leaders), in
    /// rank order.
    #[allow(dead_code)]
    pub(crate) fn alive(&self, level: usize) -> Vec<usize> {
        let p = self.levels.first().map_or(0, Vec::len);
        let mut alive: Vec<usize> = (0..p).collect();
        for groups in &self.levels[..level.min(self.levels.len())] {
            let mut seen = std::collections::BTreeSet::new();
            alive.retain(|&r| seen.insert(groups[r]));
        }
        alive
    }

    /// The ranks of group `group` at `level` (those taking part there), in rank order: the
    /// group's rank 0, its leader, first. They are the ranks of that group's communicator.
    #[allow(dead_code)]
    pub(crate) fn members(&self, level: usize, group: usize) -> Vec<usize> {
        let groups = &self.levels[level];
        self.alive(level)
            .into_iter()
            .filter(|&r| groups[r] == group)
            .collect()
    }

    /// The ranks each rank represents at the top: per top leader (in rank order), the ranks
    /// whose data it holds after the reduction up the levels, in rank order. With no levels,
    /// one entry: every rank.
    pub(crate) fn covered(&self) -> &[Vec<usize>] {
        &self.covered
    }

    /// The ranks in *group order*: the groups of [`Plan::covered`] one after the other, each
    /// in rank order; and its inverse (rank r is at `place[r]`). For a plan whose groups are
    /// intervals (an ordered plan, or a compact placement) this is rank order itself. The
    /// hierarchical direct collectives run their short-vector schedules over it
    /// (`transport::Permuted`).
    pub(crate) fn order(&self) -> (&[usize], &[usize]) {
        (&self.order, &self.place)
    }

    /// [`Plan::covered`] computed from the levels, for `p` ranks.
    fn top_groups(&self, p: usize) -> Vec<Vec<usize>> {
        let top = if self.levels.is_empty() {
            vec![0]
        } else {
            self.alive(self.levels.len())
        };
        let last = self.levels.last();
        top.iter()
            .map(|&leader| {
                (0..p)
                    .filter(|&r| last.is_none_or(|g| g[r] == g[leader]))
                    .collect()
            })
            .collect()
    }
}

/// `groups` (per rank) cut into runs: consecutive ranks of `alive` (in rank order) in the same
/// group form one run; runs are numbered in order. Ranks not in `alive` get the run of the
/// nearest alive rank before them (they are represented by it: the ranks a leader represents
/// follow it, for an ordered plan whose groups below are intervals).
fn runs(alive: &[usize], groups: &[usize], p: usize) -> Vec<usize> {
    let mut out = vec![0; p];
    let mut run = 0;
    let mut prev: Option<usize> = None;
    let mut next_alive = alive.iter().peekable();
    for (r, slot) in out.iter_mut().enumerate() {
        if next_alive.peek() == Some(&&r) {
            next_alive.next();
            if prev.is_some_and(|g| g != groups[r]) {
                run += 1;
            }
            prev = Some(groups[r]);
        }
        *slot = run;
    }
    out
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
pub(crate) struct Level<G> {
    /// The ranks of this rank's group, in rank order; its rank 0 is the group's leader.
    pub group: G,
    /// The number of this rank's group at this level ([`Plan::levels`]).
    #[allow(dead_code)]
    pub number: usize,
}

/// Where the top of the hierarchy (the allreduce among the highest leaders) runs for a rank.
#[derive(Debug)]
pub(crate) enum Top<G> {
    /// On the communicator itself (no level kept: the hierarchy is flat).
    Whole,
    /// On the communicator of the highest level's leaders, of which this rank is one.
    Leaders(G),
    /// This rank leads no group at some level: it takes no part in the top.
    None,
}

/// One rank's cached hierarchy of a communicator.
#[derive(Debug)]
pub(crate) struct Hierarchy<G> {
    /// The groups this rank is in, lowest level first, up to the first level where it is not
    /// the leader (every level, for a rank that leads everywhere).
    pub levels: Vec<Level<G>>,
    /// Where the top runs for this rank.
    pub top: Top<G>,
    /// The plan this hierarchy was built from (the same on every rank).
    pub plan: Plan,
}

impl<G: Group> Hierarchy<G> {
    /// Builds `comm`'s hierarchy over `plan` (its plan, with levels): every rank of `comm`
    /// must call this at the same point (it splits `comm`, and the leaders' communicators
    /// below it).
    pub(crate) fn build(comm: &G, plan: Plan) -> Result<Hierarchy<G>> {
        let mut levels = Vec::new();
        // The communicator being split at the current level (`None`: `comm` itself; then the
        // previous level's leaders), and the rank in `comm` of each of its members.
        let mut current: Option<G> = None;
        let mut members: Vec<usize> = (0..comm.size()).collect();
        let mut leads_all = true;
        for groups in &plan.levels {
            let on = current.as_ref().unwrap_or(comm);
            let number = groups[members[on.rank()]];
            let group = on
                .split(Some(number), on.rank())?
                .expect("a rank that passes a color gets a communicator");
            let leaders = on.split((group.rank() == 0).then_some(0), on.rank())?;
            let mut seen = std::collections::BTreeSet::new();
            members.retain(|&r| seen.insert(groups[r]));
            levels.push(Level { group, number });
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
        Ok(Hierarchy { levels, top, plan })
    }

    /// Whether every group is an interval of ranks ([`Plan::contiguous`]).
    pub(crate) fn contiguous(&self) -> bool {
        self.plan.contiguous
    }

    /// The hierarchical allreduce of `buf` (whose hierarchy this is), in segments of
    /// `segment` elements that pipeline through the stages as in HAN: at step t, reduce
    /// segment t up the levels, allreduce segment t − 1 among the top leaders, broadcast
    /// segment t − 2 back down. Every communicator sees its calls in the same order on all of
    /// its ranks (the order of one global sequence of steps), so the blocking stages cannot
    /// wait on each other in a cycle. Keeps rank order if [`Hierarchy::contiguous`].
    pub(crate) fn allreduce<T, O>(&self, buf: &mut [T], op: &O, segment: usize) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        let n = buf.len();
        let seg = segment.max(1);
        let k = n.div_ceil(seg).max(1);
        let range = |s: usize| s * seg..((s + 1) * seg).min(n);
        for step in 0..k + 2 {
            if step < k {
                let part = &mut buf[range(step)];
                for level in &self.levels {
                    level.group.stage_reduce(part, op, 0)?;
                }
            }
            if (1..=k).contains(&step) {
                let part = &mut buf[range(step - 1)];
                match &self.top {
                    Top::Whole => unreachable!("a hierarchy without levels is not run"),
                    Top::Leaders(leaders) => leaders.stage_allreduce(part, op)?,
                    Top::None => {}
                }
            }
            if (2..k + 2).contains(&step) {
                let part = &mut buf[range(step - 2)];
                for level in self.levels.iter().rev() {
                    level.group.stage_broadcast(part, 0)?;
                }
            }
        }
        Ok(())
    }
}

/// `Block::Auto`'s segment of the hierarchical allreduce, in bytes (see
/// [`segment_elements`]): the best of 64 KiB, 256 KiB, 1 MiB and unsegmented measured on the
/// development machine (`corecoll-bench --machine 2x2 --algorithms
/// hierarchical,hierarchical:256KiB,hierarchical:1MiB,hierarchical:64MiB`, when
/// `hierarchical`'s `Block::Auto` was 64 KiB; 1 and 8 MiB vectors: 1 MiB segments tied with
/// none, 64 KiB ones were several times slower, every stage's synchronisation being a context
/// switch on oversubscribed cores). Vectors longer than this still pipeline. The hybrid
/// allreduce between MPI processes (`process::collectives::pipeline`) cuts with it too: there,
/// on 2 processes × 2 threads, 1 MiB segments beat the uncut vector from 8 MB per rank up,
/// 4 MiB ones gained less and 256 KiB ones lost (docs/hybrid.md, "Stage pipelining"; figures
/// in `docs/results/2026-11-29-figures-behind-the-code.md`).
pub(crate) const AUTO_SEGMENT_BYTES: usize = 1 << 20;

/// Elements per segment of a hierarchical collective on elements of `elem_size` bytes: the
/// user's `Block::Elements` (at least 1), or [`AUTO_SEGMENT_BYTES`] worth.
pub(crate) fn segment_elements(segment: Block, elem_size: usize) -> usize {
    match segment {
        Block::Elements(e) => e.max(1),
        Block::Auto => (AUTO_SEGMENT_BYTES / elem_size.max(1)).max(1),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::topology::{Pinning, Topology};

    fn plan(t: &Topology, pinning: Pinning, ranks: usize) -> Plan {
        Plan::of(&t.place(&pinning, ranks).unwrap(), false)
    }

    fn ordered(t: &Topology, pinning: Pinning, ranks: usize) -> Plan {
        Plan::of(&t.place(&pinning, ranks).unwrap(), true)
    }

    /// Cut into runs, every group is an interval; a placement interleaved rank by rank has
    /// nothing left to group; the members, leaders and covered ranks follow the groups.
    #[test]
    fn ordered_plans_cut_groups_into_runs() {
        let t = Topology::synthetic(&[2, 3]).unwrap();
        // Compact, no wrap: the same as the plain plan.
        assert_eq!(
            ordered(&t, Pinning::Compact, 6),
            plan(&t, Pinning::Compact, 6)
        );
        // Spread: runs of one rank, flat.
        assert!(ordered(&t, Pinning::Spread, 6).levels.is_empty());
        // Compact with wrap-around: 8 ranks on 6 cores, 0-2 | 3-5 | 6-7 (package 0 again).
        let p = plan(&t, Pinning::Compact, 8);
        assert_eq!(p.levels, vec![vec![0, 0, 0, 1, 1, 1, 0, 0]]);
        assert!(!p.contiguous);
        let o = ordered(&t, Pinning::Compact, 8);
        assert_eq!(o.levels, vec![vec![0, 0, 0, 1, 1, 1, 2, 2]]);
        assert!(o.contiguous);
        assert_eq!(o.alive(1), vec![0, 3, 6]);
        assert_eq!(o.members(0, 2), vec![6, 7]);
        assert_eq!(o.covered(), vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7]]);
        assert_eq!(p.covered(), vec![vec![0, 1, 2, 6, 7], vec![3, 4, 5]]);
        // Two levels, 2 packages × 2 L3 × 2 cores, 12 ranks wrapped: L3 groups
        // 0-1 | 2-3 | 4-5 | 6-7 | 8-9 (= L3 0) | 10-11 (= L3 1).
        let t = Topology::synthetic(&[2, 2, 2]).unwrap();
        let o = ordered(&t, Pinning::Compact, 12);
        assert_eq!(o.levels[0], vec![0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
        // The L3 leaders 0, 2, 4, 6, 8, 10 are in packages 0, 0, 1, 1, 0, 0: three runs.
        assert_eq!(o.levels[1], vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
        assert_eq!(o.alive(2), vec![0, 4, 8]);
        for (i, c) in o.covered().iter().enumerate() {
            assert_eq!(c, &(4 * i..4 * i + 4).collect::<Vec<_>>());
        }
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
                let local = comm.local();
                let h = Hierarchy::build(local, local.hierarchy_plan(false).clone())?;
                let sizes: Vec<_> = h.levels.iter().map(|l| l.group.size()).collect();
                let top = match &h.top {
                    Top::Whole => Some(usize::MAX),
                    Top::Leaders(l) => Some(l.size()),
                    Top::None => None,
                };
                Ok::<_, crate::Error>((sizes, top, h.contiguous()))
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
