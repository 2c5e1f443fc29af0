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
//! The groups are the plan's top-level groups (`Plan::covered`): for a non-commutative op,
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
//! 2pS + 2(L − 1)S bytes, against the flat algorithm's 2pS (a quarter more for two groups of two).
//! What crosses a group boundary is the partials and the outputs of other groups; the flat
//! algorithm's reads of other groups' inputs, (p − n)S of them, become (L − 1)S partials.
//!
//! **Shared with the reduce.** The two steps ([`Schedule`]) serve the single-copy hierarchical
//! reduce (`super::reduce`) too, with two parameters ([`Outputs`]): where the result goes (all
//! p outputs here, the root's buffer only there) and where the partials live (at their slices
//! of each holder's output here; there, the root's in its own buffer and every other holder's
//! in a compact buffer it publishes as its output, since a non-root's buffer is input only).
//!
//! **Results** are bit-identical on every rank (every element is combined once, by one rank,
//! and copied); for a non-commutative op they are the rank-order product. For a commutative
//! op the groups may interleave, so floating-point sums associate by group, not as the
//! sequential left fold.

use super::{group_of, held, holder};
use crate::algorithms::allreduce::direct::open;
use crate::algorithms::blocks::block_start;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::shm::Member;
use crate::shm::{fold_chunk, Session};
use std::ptr;

/// The stage a rank marks once its partial results are written.
const PARTIALS: u64 = 1;

/// The hierarchical direct allreduce of `send` (or `buf`, in place) into `buf` over `groups`
/// (the plan's top-level groups, at least two, every rank in one, each in rank order and, for
/// a non-commutative op, an interval), after the call check.
pub(crate) fn allreduce<T: Elem, O: Op<T>>(
    comm: &Member,
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
    let s = Schedule {
        session: &session,
        groups,
        p: comm.size(),
        me,
        n,
        outputs: Outputs::Every {
            out_of_place: send.is_some(),
        },
    };
    // SAFETY: the session passed phase 1 and is open; every published call has `n` elements
    // of `T` (checked by `open`), its input and output as `Outputs::Every` says. Whether a
    // peer works in place matters only to that peer's own accumulator.
    let ok = unsafe { s.run(op) };
    session.finish(ok)
}

/// What a call produces, which also says where its partial results live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outputs {
    /// An allreduce: the result goes into every rank's output. Each holder writes its
    /// partials into its own output at their slices (whose final contents only the result's
    /// writer, later, gives them). `out_of_place`: every rank's input is not its output
    /// (only this rank's own flag is used: it decides where this rank may accumulate).
    Every { out_of_place: bool },
    /// A reduce to this root, in place: the result goes into the root's buffer only, which
    /// is its input and output. The root writes its partials into its own buffer at their
    /// slices, as the in-place allreduce does. Every other rank's buffer is input only: it
    /// publishes as its output a *compact* partials buffer, the partials of its run of slices
    /// ([`held`]) one after the other, in slice order (empty if it holds none).
    Root(usize),
}

/// One rank's view of a call: the two steps of the module docs over `groups`, with the
/// results going where `outputs` says.
pub(super) struct Schedule<'s, 'a> {
    pub(super) session: &'s Session<'a>,
    pub(super) groups: &'s [Vec<usize>],
    pub(super) p: usize,
    /// This rank.
    pub(super) me: usize,
    /// Elements of the vector.
    pub(super) n: usize,
    pub(super) outputs: Outputs,
}

impl Schedule<'_, '_> {
    /// Both steps: this rank's partials, the mark, and its slice of the result; false if a
    /// holder this rank waited for failed before writing its partial.
    ///
    /// # Safety
    ///
    /// The session passed phase 1 and is open; every call has `n` elements of `T` and its
    /// input and output where `outputs` says (for `Outputs::Root`, every non-root rank's
    /// output a compact partials buffer of [`Schedule::compact_len`] elements).
    pub(super) unsafe fn run<T: Elem, O: Op<T>>(&self, op: &O) -> bool {
        // SAFETY: forwarded contract.
        unsafe {
            self.partials(op);
            self.session.mark(PARTIALS);
            self.results(op)
        }
    }

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

    /// Elements of slice `s`.
    fn slice_len(&self, s: usize) -> usize {
        let (lo, hi) = self.elements(s, s + 1);
        hi - lo
    }

    /// Whether `rank` keeps its partials in a compact buffer (not at their slices of its
    /// output).
    fn compact(&self, rank: usize) -> bool {
        matches!(self.outputs, Outputs::Root(root) if root != rank)
    }

    /// Elements of the compact partials buffer of the `k`-th rank of `group`: the lengths of
    /// the slices it holds. What a non-root rank of a reduce publishes as its output.
    pub(super) fn compact_len(group: &[usize], k: usize, n: usize, p: usize) -> usize {
        held(group, p, k)
            .iter()
            .map(|&s| block_start(n, p, s + 1) - block_start(n, p, s))
            .sum()
    }

    /// Where the partial of slice `s` (foreign to `group`) starts: in the output of the rank
    /// of `group` that holds it, at the slice itself or, in a compact buffer, after the
    /// slices of that rank's run below `s`.
    fn partial<T>(&self, group: &[usize], s: usize) -> *mut T {
        let h = holder(group, self.p, s);
        let at = if self.compact(h) {
            let k = group
                .iter()
                .position(|&r| r == h)
                .expect("the holder is in the group");
            held(group, self.p, k)
                .iter()
                .take_while(|&&t| t < s)
                .map(|&t| self.slice_len(t))
                .sum()
        } else {
            self.elements(s, s + 1).0
        };
        // SAFETY: the offset stays in bounds: the holder's output has `n` elements, or (compact) the
        // lengths of its run's slices, of which `at` is the sum of those before `s`; both
        // are at most its length.
        unsafe { self.output::<T>(h).add(at) }
    }

    /// Step 2: this rank's run of its group's foreign slices, each folded over the group's
    /// inputs in rank order into this rank's output (at the slice, or compact).
    ///
    /// # Safety
    ///
    /// As for [`Schedule::run`].
    unsafe fn partials<T: Elem, O: Op<T>>(&self, op: &O) {
        let (group, k) = group_of(self.groups, self.me);
        let run = held(group, self.p, k);
        let chunk = fold_chunk::<T>();
        let mut scratch: Vec<T> = Vec::new();
        let out_of_place = match self.outputs {
            Outputs::Every { out_of_place } => out_of_place,
            Outputs::Root(_) => false,
        };
        let compact = self.compact(self.me);
        for &slice in &run {
            let (lo, hi) = self.elements(slice, slice + 1);
            let dest = self.partial::<T>(group, slice);
            #[cfg(loom)]
            for &owner in group {
                self.session.touch_part(owner, slice);
            }
            let mut start = lo;
            while start < hi {
                let len = chunk.min(hi - start);
                // SAFETY: for the whole chunk, by phase 1 every buffer is valid for its
                // published length; until stage 1 only this rank reads these elements of
                // its group's inputs or touches its partial of them (module docs), and
                // nobody writes the inputs meanwhile. `dest + (start − lo)` is within the
                // partial of `slice` (`start + len ≤ hi`).
                unsafe {
                    let to = dest.add(start - lo);
                    if compact {
                        // A buffer of this rank's own, never an input: accumulate there.
                        let acc = std::slice::from_raw_parts_mut(to, len);
                        let x = |r: usize| {
                            std::slice::from_raw_parts(self.input::<T>(r).add(start), len)
                        };
                        crate::copy::copy_slice(&mut *acc, x(group[0]));
                        for &r in &group[1..] {
                            op.fold_right(acc, x(r));
                        }
                    } else {
                        // At the slice of this rank's own output, which `fold_own` uses as
                        // the accumulator where that loses no operand.
                        let acc = self.session.fold_own(
                            group,
                            k,
                            out_of_place,
                            start,
                            len,
                            &mut scratch,
                            op,
                        );
                        if acc != to.cast_const() {
                            ptr::copy_nonoverlapping(acc, to, len);
                        }
                    }
                }
                start += len;
            }
        }
    }

    /// The output this rank accumulates slice `me` of the result in (its own for
    /// `Outputs::Every`, the root's for `Outputs::Root`), and which operand of the fold
    /// (numbered as in [`Schedule::results`]) that output already holds at slice `me`, if any
    /// the fold still needs: this rank's own input, in place; the root's input, when `me` is
    /// in the root's group; the root's partial, when the root holds slice `me` for its group.
    fn home(&self, mine: &[usize]) -> (usize, Option<usize>) {
        // The operand number of input `r` of this rank's own group, and of group `g`'s partial.
        let mine_at = self
            .groups
            .iter()
            .position(|g| g[0] == mine[0])
            .expect("my group");
        let input_at = |r: usize| mine_at + mine.iter().position(|&x| x == r).expect("in mine");
        let group_at = |g: usize| if g < mine_at { g } else { g + mine.len() - 1 };
        match self.outputs {
            Outputs::Every { out_of_place: true } => (self.me, None),
            Outputs::Every {
                out_of_place: false,
            } => (self.me, Some(input_at(self.me))),
            Outputs::Root(root) if mine.contains(&root) => (root, Some(input_at(root))),
            Outputs::Root(root) => {
                let (g, _) = self
                    .groups
                    .iter()
                    .enumerate()
                    .find(|(_, g)| g.contains(&root))
                    .expect("the root is in a group");
                let held = holder(&self.groups[g], self.p, self.me) == root;
                (root, held.then(|| group_at(g)))
            }
        }
    }

    /// Step 3: slice `me` of the result, in group order from the other groups' partials and
    /// this rank's own group's inputs, into every output (`Outputs::Every`) or the root's
    /// (`Outputs::Root`). False if a holder failed before writing its partial.
    ///
    /// The fold accumulates in one of the destinations ([`Schedule::home`]) where that loses
    /// no operand, as `Session::fold_own` does: when that destination holds none of the
    /// operands still needed, or holds the first (fold the others in on the right) or the
    /// second (fold the first in on the left); otherwise in a buffer of this rank's own,
    /// copied out at the end. Every chunk is the left fold of the operands in order.
    ///
    /// # Safety
    ///
    /// As for [`Schedule::run`], whose `partials` this rank has run and marked.
    unsafe fn results<T: Elem, O: Op<T>>(&self, op: &O) -> bool {
        let (lo, hi) = self.elements(self.me, self.me + 1);
        if lo == hi {
            return true;
        }
        let (mine, _) = group_of(self.groups, self.me);
        // The operands in order, each where its element `lo` is: per group, the partial of
        // its holder of slice `me`, or, for this rank's own group, its members' inputs.
        let mut operands: Vec<*const T> = Vec::new();
        let mut holders = Vec::new();
        for g in self.groups {
            if g[0] == mine[0] {
                // SAFETY: the offset stays in bounds: every input has `n > lo` elements.
                operands.extend(mine.iter().map(|&r| unsafe { self.input::<T>(r).add(lo) }));
            } else {
                holders.push(holder(g, self.p, self.me));
                operands.push(self.partial::<T>(g, self.me).cast_const());
            }
        }
        for &h in &holders {
            if !self.session.wait_stage(h, PARTIALS) {
                return false;
            }
        }
        #[cfg(loom)]
        for owner in 0..self.p {
            self.session.touch(owner);
        }
        let (home, held) = self.home(mine);
        let others = match self.outputs {
            Outputs::Every { .. } => 0..self.p,
            Outputs::Root(_) => 0..0,
        };
        let chunk = fold_chunk::<T>();
        let mut acc: Vec<T> = Vec::new();
        let mut start = lo;
        while start < hi {
            let len = chunk.min(hi - start);
            // SAFETY: for the whole chunk, every holder marked stage 1 after writing its partial
            // of these elements (acquired by `wait_stage`); from then on only this rank reads
            // or writes elements `lo..hi` of any input or output and the partials of slice
            // `me`, and of its own group's inputs only this rank ever reads them (module
            // docs). The destination chunk is borrowed mutably only while no operand slice
            // of the same memory exists (operand `held` is never read through one then), and
            // every operand is folded before any other output chunk is written.
            unsafe {
                let x = |i: usize| std::slice::from_raw_parts(operands[i].add(start - lo), len);
                let dest = self.output::<T>(home).add(start);
                match held {
                    None | Some(0) | Some(1) => {
                        let a = std::slice::from_raw_parts_mut(dest, len);
                        let first = match held {
                            None => {
                                crate::copy::copy_slice(&mut *a, x(0));
                                1
                            }
                            Some(0) => 1,
                            _ => {
                                op.fold_left(x(0), a);
                                2
                            }
                        };
                        for i in first..operands.len() {
                            op.fold_right(a, x(i));
                        }
                    }
                    Some(_) => {
                        acc.clear();
                        crate::copy::extend(&mut acc, x(0));
                        for i in 1..operands.len() {
                            op.fold_right(&mut acc, x(i));
                        }
                        ptr::copy_nonoverlapping(acc.as_ptr(), dest, len);
                    }
                }
                for j in others.clone().filter(|&j| j != home) {
                    ptr::copy_nonoverlapping(
                        dest.cast_const(),
                        self.output::<T>(j).add(start),
                        len,
                    );
                }
            }
            start += len;
        }
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::{matmul, matrix, team};
    use super::allreduce;
    use crate::mailbox::Kind;
    use crate::op::{self, Op};
    use crate::Comm;
    use std::sync::Mutex;

    /// The algorithm as `Comm::allreduce_with` runs it after the call check (ordered groups),
    /// with `send` out of place when given.
    fn call<T: crate::mailbox::Elem>(
        comm: &Comm,
        send: Option<&[T]>,
        buf: &mut [T],
        op: impl Op<T>,
    ) -> crate::Result<()> {
        comm.local().enter("allreduce")?;
        let tag = comm
            .local()
            .next_tag(Kind::Coll(crate::Collective::Allreduce));
        let groups = comm.local().hierarchy_plan(true).covered();
        assert!(groups.len() >= 2, "the test machines have several groups");
        allreduce(comm.local().member(), send, buf, &op, groups, tag)
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
