//! The single-copy hierarchical broadcast (`Broadcast::HierarchicalDirect`): the shared-memory
//! direct broadcast (`algorithms::broadcast::direct`) with its reads split at the top level of
//! the plan, so that each byte of the root's vector crosses once into each other group instead
//! of once per reader there.
//!
//! The flat direct broadcast has every rank copy the whole vector from the root's buffer: on a
//! machine of L groups, each of the p − n ranks outside the root's group (of n) pulls all S
//! bytes across a group boundary. This schedule keeps its single board session (one arrival,
//! one departure) and adds one wait in the middle, in the manner of XHC's hierarchical
//! single-copy broadcast in Open MPI (there a tree of leaders per level, each member copying
//! from its leader's buffer behind published progress flags; here one level, and the
//! cross-group reads themselves spread over the group's ranks). What was learned from it is
//! the design as its sources document it; no code was taken.
//!
//! Short vectors, where a session's synchronisations cost more than the data, go down a
//! binomial tree over the ranks in group order (see [`SINGLE_COPY_MIN`] for the switch).
//!
//! # Schedule
//!
//! The groups are the plan's top-level groups ([`Plan::covered`]), each in rank order.
//!
//! 1. **Arrive** on the board: every rank publishes its `buf` as output, the root also as
//!    input (as the flat direct broadcast does), and every rank checks every call (length,
//!    element type, who is the root), so that a mismatch fails every rank before any buffer
//!    is touched.
//! 2. **The root's group**: each of its other ranks copies the whole vector straight from the
//!    root's buffer.
//! 3. **Every other group** G, of g ranks: the vector is cut into g parts
//!    (`block_start(n, g, k)`); G's k-th rank (in rank order) copies part k from the root's
//!    buffer into its own `buf` and marks stage 1. Then it copies every other part j from G's
//!    j-th rank's `buf` as soon as that rank has marked (looking at the parts in the order
//!    after its own, so that the members look at different holders first). It never waits
//!    for a mark: while no holder of a part left has marked, it copies the next chunk of the
//!    first part left from the root's buffer instead, and takes only the rest of that part
//!    from its holder later.
//! 4. **Leave** the board (phase 2: everyone is done with everyone's buffers). A peer that
//!    failed (an unwinding rank stores a failed `done`) makes phase 2 fail on every rank.
//!
//! **Why poll instead of waiting.** The first version waited for each holder's mark
//! (`Session::wait_stage`). With more ranks than cores a holder is often descheduled when its
//! peers finish their own parts, and each wait can then cost a scheduler hand-over; taking
//! chunks from the root meanwhile keeps every rank busy, so no rank depends on a peer's
//! progress except through phase 1 and phase 2. When the group's ranks run together (a core
//! each), each reads about its own part from the root and the rest from its peers.
//!
//! **Why no races.** The root's buffer is only read during the session (nobody writes it
//! until the root's phase 2, which waits for every reader). A rank of the root's group writes
//! only its own buffer, which nobody else touches. A rank x of another group writes only its
//! own buffer: its own part k before its mark, the other parts (from the root or from their
//! holders) after it; of x's buffer, the other ranks of x's group read part k only, and only
//! after acquiring x's mark (`Session::has_reached`), so after x wrote it, and x never writes
//! part k again during the call. Every buffer is given back by phase 2, after every rank's
//! last access to it.
//!
//! **Traffic**, for a vector of S bytes, p ranks in L groups, the root's of n: both this and
//! the flat broadcast write (p − 1)S and read as much. What crosses a group boundary is
//! (p − n)S for the flat one (every reader outside the root's group reads the root's buffer)
//! and (L − 1)S here when the groups' ranks keep pace (each other group reads each byte of the
//! root's buffer once, in g parts over its g ranks; a lagging holder's part is read from the
//! root by its peers instead, up to the flat volume); the rest of the reads stay inside the
//! groups. On 2 × 2 with the root's group of 2, that is S against 2S; on 2 × 2 × 2 (two top
//! groups of 4), S against 4S. The price is one mark per rank and a poll per part; and that a
//! peer's part is read just after the peer wrote it (from its cache, not a clean shared
//! line), which on a machine without real packages costs more than the flat reads of the
//! root's buffer (measured slower than the flat direct broadcast from 64 KiB to 1 MiB on a
//! described 2 × 2 on 2 cores; see [`SINGLE_COPY_MIN`], and the figures in
//! `docs/results/2026-11-29-figures-behind-the-code.md`).

use super::group_of;
use crate::algorithms::blocks::block_start;
use crate::algorithms::broadcast::direct::open;
use crate::error::Result;
use crate::hierarchy::Plan;
use crate::mailbox::{Elem, Tag};
use crate::shm::Member;
use crate::shm::Session;
use crate::transport::shm::ShmTransport;
use crate::transport::Permuted;
use std::mem::size_of;
use std::ptr;

/// Bytes from which the single-copy schedule runs; shorter vectors go down a binomial tree
/// over the ranks in group order. Measured on a 2-core machine shared with other builds
/// (`corecoll-bench --collective broadcast --algorithms
/// auto,binomial,direct,hierarchical,hierarchical-direct --sizes
/// 8,1KiB,2KiB,4KiB,16KiB,64KiB,1MiB,8MiB --time 0.3`, `--machine 2x2` and `2x2x2`, so 4 and
/// 8 ranks oversubscribe the cores): in group order the tree matched the best flat
/// algorithm at 8 B and 1 KiB (its messages are eager), and the single copy did better than
/// the tree from 2 KiB on, close to the flat direct broadcast, where the tree's messages go by
/// rendezvous: the flat `Auto`'s switch at `EAGER_MAX` (figures in
/// `docs/results/2026-11-29-figures-behind-the-code.md`).
pub(crate) const SINGLE_COPY_MIN: usize = crate::mailbox::EAGER_MAX + 1;

/// Bytes copied per chunk: the flat direct broadcast's, so that the readers of one buffer,
/// which start together, stream through it at about the same place.
const CHUNK_BYTES: usize = 16 << 10;

/// The stage a rank outside the root's group marks once it has copied its part from the root.
const PART: u64 = 1;

/// The hierarchical direct broadcast of `buf` from `root` over `plan` (with levels), after
/// the call check; `tag` carries the algorithm's variant. Short vectors go down a binomial
/// tree over the ranks in group order, longer ones by [`single_copy`] over the plan's
/// top-level groups.
pub(crate) fn broadcast<T: Elem>(
    comm: &Member,
    buf: &mut [T],
    root: usize,
    plan: &Plan,
    tag: Tag,
) -> Result<()> {
    if std::mem::size_of_val(buf) < SINGLE_COPY_MIN {
        let t = ShmTransport::coll(comm, "broadcast");
        let (order, place) = plan.order();
        let perm = Permuted::new(&t, order, place);
        return crate::algorithms::broadcast::run(
            &perm,
            buf,
            place[root],
            crate::algorithms::broadcast::Schedule::Binomial,
            0,
            tag,
        );
    }
    single_copy(comm, buf, root, plan.covered(), tag)
}

/// The single-copy schedule (module docs) of `buf` from `root` over `groups` (every rank in
/// exactly one, each in rank order), after the call check (`root` is a rank of `comm`). It
/// checks the published calls itself, so a mismatch of length, type or root fails every rank.
pub(crate) fn single_copy<T: Elem>(
    comm: &Member,
    buf: &mut [T],
    root: usize,
    groups: &[Vec<usize>],
    tag: Tag,
) -> Result<()> {
    let (p, me, n) = (comm.size(), comm.rank(), buf.len());
    debug_assert!(root < p);
    if p == 1 {
        return Ok(());
    }
    // From here until the session ends, `buf` is touched only through `out` (by this rank,
    // and by its peers as the schedule says), never through the reference.
    let out: *mut T = buf.as_mut_ptr();
    // SAFETY: `out` covers the `n` elements of `buf`, borrowed for this whole function and not
    // used through the reference while the session lasts, which ends before it returns;
    // `root < p` (the caller's promise).
    let session = unsafe { open(comm, out, n, root, tag, "hierarchical direct broadcast")? };
    if me == root {
        return session.finish(true);
    }
    let (group, k) = group_of(groups, me);
    // SAFETY: the session passed phase 1 and is open; every call has `n` elements of `T`, the
    // root's has a non-null input (all checked just above), and `out` is this rank's output.
    unsafe {
        if group.contains(&root) {
            #[cfg(loom)]
            session.touch(root);
            copy::<T>(session.call(root).input.cast(), out, 0, n);
        } else {
            parts(&session, group, k, root, out, n);
        }
    }
    // A peer that failed makes phase 2 fail here too.
    session.finish(true)
}

/// Step 3 for the `k`-th rank of `group` (which does not hold the root): its part from the
/// root, the mark, then the other parts, each from its holder once the holder has marked;
/// while none of the parts left has a holder ready, a chunk of one of them from the root.
///
/// # Safety
///
/// The session passed phase 1 and is open; every call has `n` elements of `T`, the root's
/// with a non-null input; `out` is this rank's published output.
unsafe fn parts<T: Elem>(
    session: &Session<'_>,
    group: &[usize],
    k: usize,
    root: usize,
    out: *mut T,
    n: usize,
) {
    let g = group.len();
    let start = |j: usize| block_start(n, g, j);
    let from_root: *const T = session.call(root).input.cast();
    // Under loom: this rank reads the root's buffer (its own cell there), and writes part k
    // of its own buffer, which each member y of the group reads later (cell y of this rank's).
    #[cfg(loom)]
    {
        session.touch(root);
        for &y in group {
            session.touch_part(group[k], y);
        }
    }
    // SAFETY: the root's input is valid for `n` elements and only read during the session;
    // part k of this rank's output is read by nobody before the mark below.
    unsafe { copy::<T>(from_root, out, start(k), start(k + 1)) };
    session.mark(PART);
    // The parts still to copy, in the order after this rank's own (so that the members look
    // at different holders first), with where each one's uncopied rest begins.
    let mut left: Vec<(usize, usize)> = (1..g)
        .map(|i| (k + i) % g)
        .map(|j| (j, start(j)))
        .filter(|&(j, at)| at < start(j + 1))
        .collect();
    let chunk = (CHUNK_BYTES / size_of::<T>().max(1)).max(1);
    while !left.is_empty() {
        let before = left.len();
        left.retain(|&(j, at)| {
            let holder = group[j];
            if !session.has_reached(holder, PART) {
                return true;
            }
            #[cfg(loom)]
            session.touch_part(holder, group[k]);
            // SAFETY: the holder wrote part j of its output before its mark, acquired just
            // now, and writes it no more during the call; others only read it. Part j of this
            // rank's output is touched by this rank only.
            unsafe { copy::<T>(session.call(holder).output.cast(), out, at, start(j + 1)) };
            false
        });
        if left.len() == before {
            // No holder is ready (descheduled, slow, or failed): rather than wait, take the
            // next chunk of the first part left from the root.
            let (j, at) = &mut left[0];
            let to = (*at + chunk).min(start(*j + 1));
            // SAFETY: as for this rank's own part; these elements of its output are its own.
            unsafe { copy::<T>(from_root, out, *at, to) };
            *at = to;
            if to == start(*j + 1) {
                left.remove(0);
            }
        }
    }
}

/// Copies elements `lo..hi` of `src` into the same elements of `dst`, in chunks of
/// [`CHUNK_BYTES`].
///
/// # Safety
///
/// `src` must be valid for reads and `dst` for writes of elements `lo..hi`, nobody may write
/// those of `src` or access those of `dst` meanwhile, and the two must not overlap.
unsafe fn copy<T>(src: *const T, dst: *mut T, lo: usize, hi: usize) {
    let chunk = (CHUNK_BYTES / size_of::<T>().max(1)).max(1);
    let mut start = lo;
    while start < hi {
        let len = chunk.min(hi - start);
        // SAFETY: by the caller's promise.
        unsafe { ptr::copy_nonoverlapping(src.add(start), dst.add(start), len) };
        start += len;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::team;
    use super::{broadcast, single_copy};
    use crate::mailbox::Kind;
    use crate::Comm;

    /// The single-copy schedule as `Comm::broadcast_with` would run it after the call check,
    /// over the plain plan's groups, whatever the length (`through_plan`: the plan-taking
    /// entry instead, with its switch to the tree).
    fn call(comm: &Comm, buf: &mut [u64], root: usize, through_plan: bool) -> crate::Result<()> {
        comm.local().enter("broadcast")?;
        let tag = comm
            .local()
            .next_tag(Kind::Coll(crate::Collective::Broadcast));
        let plan = comm.local().hierarchy_plan(false);
        assert!(
            plan.covered().len() >= 2,
            "the test machines have several groups"
        );
        if through_plan {
            broadcast(comm.local().member(), buf, root, plan, tag)
        } else {
            single_copy(comm.local().member(), buf, root, plan.covered(), tag)
        }
    }

    fn value(r: usize, i: usize) -> u64 {
        (r as u64 + 1) << 40 | i as u64
    }

    /// Several roots (in the larger group and not, first and last of a group), uneven groups
    /// (5, 5, 1; and 5, 3 with the first group not an interval), counts 0, 1, fewer than a
    /// group's ranks, not a multiple of them, large: the root's vector on every rank.
    #[test]
    fn every_rank_gets_the_roots_vector() {
        let cases: [(&[usize], usize, &[usize]); 3] = [
            (&[3, 5], 11, &[0, 4, 7, 10]),
            (&[2, 3], 8, &[0, 3, 5, 7]),
            (&[2, 2, 2], 8, &[1, 6]),
        ];
        for (shape, p, roots) in cases {
            for &root in roots {
                for n in [0, 1, 3, 13, 70_001] {
                    for through_plan in [false, true] {
                        let out = team(shape, p)
                            .run(|comm| {
                                let r = comm.rank();
                                let mut v: Vec<u64> = (0..n).map(|i| value(r, i)).collect();
                                call(comm, &mut v, root, through_plan)?;
                                Ok::<_, crate::Error>(v)
                            })
                            .unwrap();
                        let want: Vec<u64> = (0..n).map(|i| value(root, i)).collect();
                        for (r, v) in out.into_iter().enumerate() {
                            assert_eq!(
                                v.unwrap(),
                                want,
                                "{shape:?} p = {p} root = {root} n = {n} plan = {through_plan}: rank {r}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The plan's groups on the compact 8 ranks of 2 × 3 are not intervals.
    #[test]
    fn the_wrapped_placement_has_groups_that_are_not_intervals() {
        let groups = team(&[2, 3], 8)
            .run(|comm| comm.local().hierarchy_plan(false).covered().to_vec())
            .unwrap();
        assert_eq!(groups[0], vec![vec![0, 1, 2, 6, 7], vec![3, 4, 5]]);
    }

    /// One rank passes another length (in the root's group and not, the root itself): every
    /// rank returns `Err`, none hangs, and no non-root's buffer is touched.
    #[test]
    fn a_length_mismatch_fails_every_rank() {
        for odd in [0, 2, 5] {
            let p = 6;
            let root = 1;
            let out = team(&[2, 3], p)
                .run(|comm| {
                    let r = comm.rank();
                    let n = if r == odd { 999 } else { 1_000 };
                    let mut v: Vec<u64> = (0..n).map(|i| value(r, i)).collect();
                    let res = call(comm, &mut v, root, false);
                    let untouched = v.iter().enumerate().all(|(i, &x)| x == value(r, i));
                    (res.is_err(), untouched)
                })
                .unwrap();
            assert_eq!(out, vec![(true, true); p], "rank {odd} odd");
        }
    }
}
