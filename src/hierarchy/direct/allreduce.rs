//! The single-copy hierarchical allreduce (`Algorithm::HierarchicalDirect`): the shared-memory
//! direct allreduce (`algorithms::allreduce::direct`) with its reduction split at the top level
//! of the plan, so that each input byte is read inside its own group and only one partial
//! result per group and element crosses between groups.
//!
//! The flat direct algorithm has rank r read slice r of all p inputs: on a machine of L
//! packages, (p − n)/p of what every rank reads comes from another package's memory. The
//! composition of `Algorithm::Hierarchical` avoids that, but moves each vector through three
//! collectives and synchronises at each. This schedule keeps the direct algorithm's single
//! board session (one arrival, one departure) and adds one wait in the middle; it learned
//! from XHC in Open MPI (hierarchy-aware single-copy reductions in shared memory), whose
//! design the Open MPI sources document.
//!
//! # Schedule
//!
//! The groups are the plan's top-level groups ([`Plan::covered`]): for a non-commutative op,
//! those of the ordered plan, which are intervals of ranks, so that combining within each
//! group and then across the groups in order is the rank-order product. The vector is cut
//! into p slices (`block_start(n, p, r)`); rank r owns slice r of the result.
//!
//! 1. **Arrive** on the board (all p ranks, as the flat direct algorithm).
//! 2. **Within the group.** Group G of n ranks folds the slices of the ranks outside it (its
//!    *foreign* slices), which it cuts into n runs: its k-th rank (in rank order) folds each
//!    slice of run k over the group's n inputs, in rank order, and writes that partial result
//!    into its own output at that slice. It then marks stage 1.
//! 3. **Across the groups.** Rank r waits for the rank of every other group that holds that
//!    group's partial of slice r, and then, chunk by chunk, folds in group order the other
//!    groups' partials and, in its own group's place, its own group's inputs (read directly:
//!    no partial is written for a group's own slices), and writes each chunk of the result
//!    into every rank's output.
//! 4. **Leave** the board (phase 2: everyone is done with everyone's buffers).
//!
//! **Why no write races.** Within a call, slice s of rank x's input is read by one rank only:
//! by the holder of s in x's group if s is foreign to that group (step 2, before its mark),
//! else by rank s (step 3). Slice s of a holder's output (its partial) is read only by rank s
//! (step 3), chunk by chunk before rank s writes that chunk. Rank s writes slice s of the
//! outputs only after every holder of slice s has marked stage 1, so every input chunk it
//! overwrites in place has been consumed. Every other slice of every buffer belongs to other
//! ranks.
//!
//! **Traffic**, for p ranks of S bytes in L groups of n: each input is read once, the
//! (L − 1)S of partials are written once and read once, and the p outputs written once:
//! 2pS + 2(L − 1)S bytes, against the flat algorithm's 2pS (1.25× for two groups of two).
//! What crosses a group boundary is the partials and the outputs of other groups; the flat
//! algorithm's reads of other groups' inputs, (p − n)S of them, become (L − 1)S partials.
//!
//! **Results** are bit-identical on every rank (every element is combined once, by one rank,
//! and copied); for a non-commutative op they are the rank-order product. For a commutative
//! op the groups may interleave, so floating-point sums associate by group, not as the
//! sequential left fold.

use super::{group_of, held, holder};
use crate::algorithms::allreduce::direct::open;
use crate::algorithms::blocks::block_start;
use crate::comm::board::{fold_chunk, Session};
use crate::comm::Comm;
use crate::error::Result;
use crate::op::Op;
use crate::transport::{Elem, Tag};
use std::ptr;

/// The stage a rank marks once its partial results are written.
const PARTIALS: u64 = 1;

/// The hierarchical direct allreduce of `send` (or `buf`, in place) into `buf` over `groups`
/// (the plan's top-level groups, at least two, every rank in one, each in rank order and, for
/// a non-commutative op, an interval), after the call check.
pub(crate) fn allreduce<T: Elem, O: Op<T>>(
    comm: &Comm,
    send: Option<&[T]>,
    buf: &mut [T],
    op: &O,
    groups: &[Vec<usize>],
    tag: Tag,
) -> Result<()> {
    let (me, n) = (comm.rank(), buf.len());
    // SAFETY: `send` and `buf` stay borrowed for this whole function and are not used
    // through their references again; the session ends before it returns.
    let Some(session) = (unsafe { open(comm, send, buf, tag, "hierarchical direct")? }) else {
        return Ok(());
    };
    let ok = {
        let s = Schedule {
            session: &session,
            groups,
            p: comm.size(),
            me,
            n,
            out_of_place: send.is_some(),
        };
        // SAFETY: the session passed phase 1 and is open; every published call has `n`
        // elements of `T` (checked just above). Whether a peer works in place matters only
        // to that peer's own accumulator.
        unsafe {
            s.partials(op);
            session.mark(PARTIALS);
            s.results(op)
        }
    };
    session.finish(ok)
}

/// One rank's view of a call.
struct Schedule<'s, 'a> {
    session: &'s Session<'a>,
    groups: &'s [Vec<usize>],
    p: usize,
    me: usize,
    /// Elements of the vector.
    n: usize,
    out_of_place: bool,
}

impl Schedule<'_, '_> {
    fn input<T>(&self, rank: usize) -> *const T {
        self.session.call(rank).input.cast()
    }

    fn output<T>(&self, rank: usize) -> *mut T {
        self.session.call(rank).output.cast()
    }

    /// The elements of slices `from .. to` (of p).
    fn elements(&self, from: usize, to: usize) -> (usize, usize) {
        (
            block_start(self.n, self.p, from),
            block_start(self.n, self.p, to),
        )
    }

    /// Step 2: this rank's run of its group's foreign slices, each folded over the group's
    /// inputs in rank order into this rank's own output.
    ///
    /// # Safety
    ///
    /// The session passed phase 1 and is open; every call has `n` elements of `T`.
    unsafe fn partials<T: Elem, O: Op<T>>(&self, op: &O) {
        let (group, k) = group_of(self.groups, self.me);
        let run = held(group, self.p, k);
        let chunk = fold_chunk::<T>();
        let mut scratch: Vec<T> = Vec::new();
        let mine = self.output::<T>(self.me);
        for &slice in &run {
            let (lo, hi) = self.elements(slice, slice + 1);
            #[cfg(loom)]
            for &owner in group {
                self.session.touch_part(owner, slice);
            }
            let mut start = lo;
            while start < hi {
                let len = chunk.min(hi - start);
                // SAFETY (the whole chunk): by phase 1 every buffer is valid for `n`
                // elements; until stage 1 only this rank reads these elements of its group's
                // inputs or touches them in its own output (module docs), and nobody writes
                // the inputs meanwhile.
                unsafe {
                    let acc = self.session.fold_own(
                        group,
                        k,
                        self.out_of_place,
                        start,
                        len,
                        &mut scratch,
                        op,
                    );
                    if acc != mine.add(start).cast_const() {
                        ptr::copy_nonoverlapping(acc, mine.add(start), len);
                    }
                }
                start += len;
            }
        }
    }

    /// Step 3: slice `me` of the result, in group order from the other groups' partials and
    /// this rank's own group's inputs, into every output. False if a holder failed before
    /// writing its partial.
    ///
    /// # Safety
    ///
    /// As for [`Schedule::partials`], which this rank has run and marked.
    unsafe fn results<T: Elem, O: Op<T>>(&self, op: &O) -> bool {
        let (lo, hi) = self.elements(self.me, self.me + 1);
        if lo == hi {
            return true;
        }
        let (mine, _) = group_of(self.groups, self.me);
        // Per group, in order: the holder of its partial, or `None` for this rank's own group.
        let sources: Vec<Option<usize>> = self
            .groups
            .iter()
            .map(|g| (g[0] != mine[0]).then(|| holder(g, self.p, self.me)))
            .collect();
        for &h in sources.iter().flatten() {
            if !self.session.wait_stage(h, PARTIALS) {
                return false;
            }
        }
        #[cfg(loom)]
        for owner in 0..self.p {
            self.session.touch(owner);
        }
        let chunk = fold_chunk::<T>();
        let mut acc: Vec<T> = Vec::new();
        let mut start = lo;
        while start < hi {
            let len = chunk.min(hi - start);
            // SAFETY (the whole chunk): every holder marked stage 1 after writing its partial
            // of these elements into its output (acquired by `wait_stage`); from then on only
            // this rank reads or writes elements `lo..hi` of any buffer, and of its own
            // group's inputs only this rank ever reads them (module docs). Every operand is
            // read into `acc`, a buffer of this rank's own, before any output chunk is
            // written.
            unsafe {
                let output =
                    |h: usize| std::slice::from_raw_parts(self.output::<T>(h).add(start), len);
                let input =
                    |r: usize| std::slice::from_raw_parts(self.input::<T>(r).add(start), len);
                acc.clear();
                for &source in &sources {
                    let operands: &mut dyn Iterator<Item = &[T]> = match source {
                        Some(h) => &mut std::iter::once(output(h)),
                        None => &mut mine.iter().map(|&r| input(r)),
                    };
                    for x in operands {
                        if acc.is_empty() {
                            acc.extend_from_slice(x);
                        } else {
                            op.fold_right(&mut acc, x);
                        }
                    }
                }
                for j in 0..self.p {
                    ptr::copy_nonoverlapping(acc.as_ptr(), self.output::<T>(j).add(start), len);
                }
            }
            start += len;
        }
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::allreduce;
    use crate::op::{self, Op};
    use crate::topology::Topology;
    use crate::transport::Kind;
    use crate::{Comm, Pinning, Team};
    use std::sync::Mutex;
    use std::time::Duration;

    /// A described machine of `shape` with `p` ranks placed compactly, whose waits time out.
    fn team(shape: &[usize], p: usize) -> Team {
        Team::builder()
            .ranks(p)
            .topology(Topology::synthetic(shape).unwrap())
            .pinning(Pinning::Compact)
            .timeout(Duration::from_secs(45))
            .build()
            .unwrap()
    }

    /// The algorithm as `Comm::allreduce_with` runs it after the call check (ordered groups),
    /// with `send` out of place when given.
    fn call<T: Copy + Send + Sync + 'static>(
        comm: &Comm,
        send: Option<&[T]>,
        buf: &mut [T],
        op: impl Op<T>,
    ) -> crate::Result<()> {
        comm.enter("allreduce")?;
        let tag = comm.next_tag(Kind::Allreduce);
        let groups = comm.hierarchy_plan(true).covered();
        assert!(groups.len() >= 2, "the test machines have several groups");
        allreduce(comm, send, buf, &op, groups, tag)
    }

    /// Row-major 2×2 product with wrapping arithmetic: associative, not commutative.
    fn matmul(x: [u32; 4], y: [u32; 4]) -> [u32; 4] {
        let f = |a: u32, b: u32, c: u32, d: u32| a.wrapping_mul(b).wrapping_add(c.wrapping_mul(d));
        [
            f(x[0], y[0], x[1], y[2]),
            f(x[0], y[1], x[1], y[3]),
            f(x[2], y[0], x[3], y[2]),
            f(x[2], y[1], x[3], y[3]),
        ]
    }

    fn matrix(r: usize, i: usize) -> [u32; 4] {
        let (r, i) = (r as u32, i as u32);
        [r + 1, i % 5 + 1, r.wrapping_mul(7) ^ i, 1]
    }

    /// Out of place and in place, on uneven groups, for counts below, at and above p: the
    /// rank-order product on every rank, and `send` untouched.
    #[test]
    fn out_of_place_and_in_place_keep_rank_order() {
        for (shape, p) in [(&[2, 3][..], 6), (&[3, 5][..], 11), (&[2, 2, 2][..], 8)] {
            for n in [0, 1, 5, 13, 9_000] {
                let out = team(shape, p)
                    .run(|comm| {
                        let r = comm.rank();
                        let send: Vec<[u32; 4]> = (0..n).map(|i| matrix(r, i)).collect();
                        let mut recv = vec![[0u32; 4]; n];
                        let m = op::non_commutative(|a: &[u32; 4], b: &[u32; 4]| matmul(*a, *b));
                        call(comm, Some(&send), &mut recv, m)?;
                        let mut inplace = send.clone();
                        call(comm, None, &mut inplace, m)?;
                        let unchanged = send.iter().enumerate().all(|(i, x)| *x == matrix(r, i));
                        Ok::<_, crate::Error>((recv, inplace, unchanged))
                    })
                    .unwrap();
                let want: Vec<[u32; 4]> = (0..n)
                    .map(|i| (1..p).fold(matrix(0, i), |a, r| matmul(a, matrix(r, i))))
                    .collect();
                for (r, res) in out.into_iter().enumerate() {
                    let (recv, inplace, unchanged) = res.unwrap();
                    assert_eq!(
                        recv, want,
                        "{shape:?} p = {p} n = {n}: rank {r} out of place"
                    );
                    assert_eq!(
                        inplace, want,
                        "{shape:?} p = {p} n = {n}: rank {r} in place"
                    );
                    assert!(
                        unchanged,
                        "{shape:?} p = {p} n = {n}: rank {r}'s send changed"
                    );
                }
            }
        }
    }

    /// An operator that panics on one rank while it folds its group's partial: every other
    /// rank returns `Err` (those waiting for that partial included), none hangs.
    #[test]
    fn a_panicking_operator_fails_the_call_everywhere() {
        for bad in [0, 1, 4] {
            let p = 6;
            let errs = Mutex::new(Vec::new());
            let res = team(&[2, 3], p).run(|comm| {
                let r = comm.rank();
                let bomb = op::non_commutative(move |a: &u64, b: &u64| {
                    assert!(r != bad, "planned panic");
                    a + b
                });
                let mut v: Vec<u64> = (0..30_000).map(|i| i as u64).collect();
                let e = call(comm, None, &mut v, bomb);
                errs.lock().unwrap().push(e.is_err());
            });
            assert!(res.is_err(), "rank {bad}'s panic was not reported");
            assert_eq!(errs.into_inner().unwrap(), vec![true; p - 1], "rank {bad}");
        }
    }
}
