//! The single-copy hierarchical reduce (`Reduce::HierarchicalDirect`): the hierarchical direct
//! allreduce (`super::allreduce`) with one output, the root's buffer — as the flat direct
//! reduce (`algorithms::reduce::direct`) is the flat direct allreduce with one output.
//!
//! MPI semantics: only the root's buffer changes; it is the root's input and its output (in
//! place). Every other rank's buffer is input only and is left as it was.
//!
//! # Two paths
//!
//! Vectors of at most [`DIRECT_MIN`] bytes (on ranks with a core each) go by a binomial tree over the ranks in group
//! order ([`Plan::order`], through `transport::Permuted`): its first rounds combine within
//! groups and only its last ones cross between them; ⌈log₂ p⌉ message latencies beat a board
//! session's three synchronisations (arrival, the middle stage, departure) while the data is
//! short. Longer vectors go by the single-copy schedule below.
//!
//! # Schedule (long vectors)
//!
//! The groups are the plan's top-level groups ([`Plan::covered`]; for a non-commutative op
//! those of the ordered plan, intervals of ranks in rank order). The vector is cut into p
//! slices; rank r computes slice r of the result. One board session:
//!
//! 1. **Arrive.** Every rank publishes its buffer as its input. The root publishes it as its
//!    output too; every other rank publishes as its output a *compact partials buffer* from
//!    its scratch pool (`Comm::scratch`): room for the partials of exactly the slices it
//!    holds (`held`), one after the other in slice order — (p − n)/n slices of the vector
//!    for a group of n, not the whole vector, and nothing for a rank that holds none. A reader
//!    of a partial finds it at the sum of the lengths of the holder's slices below it, which it
//!    computes from the groups as the holder did.
//! 2. **Partials** (shared with the allreduce: `allreduce::Schedule`). Each group folds its
//!    foreign slices (those of ranks outside it) over its members' inputs in rank order, its
//!    k-th member the k-th run of them, and writes each partial into its compact buffer — or,
//!    on the root, into its own buffer at that slice. Then it marks stage 1.
//! 3. **Results** (shared too). Rank r waits for the holder of slice r in every other group,
//!    then folds chunk by chunk, in group order, those groups' partials and, in its own
//!    group's place, its group's inputs, and writes slice r of the result into the root's
//!    buffer only.
//! 4. **Leave** the board (phase 2).
//!
//! **Why no races.** Non-root buffers are only read. A compact buffer is written by its owner
//! in step 2 and read in step 3 by the rank whose slice it holds, after that rank acquired the
//! owner's stage-1 mark. That leaves the root's buffer; take its slice s:
//! - If s is foreign to the root's group G, the root's input at s is read by one rank only,
//!   the holder h of s in G, in step 2; if h is the root, it then writes its partial there
//!   (the allreduce's in-place accumulation: `Session::fold_own` keeps the root's own operand
//!   until it is folded). Rank s, outside G, waits for h's mark before it reads that partial
//!   (or, if h is not the root, the root's untouched input is no longer read by anyone) and
//!   writes the result over slice s, chunk by chunk after reading all operands of the chunk.
//! - If s is a slice of a rank of G, nobody computes a partial of it: the root's input at s is
//!   read only by rank s, in step 3, into its own accumulator before it writes the chunk.
//!
//! Either way, the root's input at s is consumed before rank s overwrites it, and only rank s
//! touches slice s after the stage. Every rank waits in phase 2 until all are done, so no rank
//! returns (and frees or reuses its compact buffer or input) while a peer still reads it; the
//! compact buffer outlives the session (it is declared before it, so it is dropped after it
//! also when unwinding).
//!
//! **Traffic**, for p ranks of S bytes in L groups: each input read once (pS), the (L − 1)S of
//! partials written and read once, the root's S written once: (p + 1)S + 2(L − 1)S, against
//! the flat direct reduce's (p + 1)S. What crosses a group boundary is the partials and the
//! result slices written into the root's buffer, instead of the flat reduce's reads of the
//! other groups' inputs.
//!
//! **Results** are the rank-order product for a non-commutative op (its groups are intervals
//! combined in order); every element is combined once, by one rank.
//!
//! Learned from: XHC in Open MPI (hierarchical single-copy reductions over shared memory,
//! where each level's leaders reduce their members' buffers in place and expose the partial
//! results to the level above) and the flat direct reduce of this crate; the short path is
//! HAN's observation that small messages want a latency-bound tree, not a pipeline.

use super::allreduce::{Outputs, Schedule};
use super::group_of;
use crate::error::Result;
use crate::hierarchy::Plan;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::shm::Member;
use crate::transport::shm::ShmTransport;
use crate::transport::Permuted;

/// Bytes per rank up to which the reduce goes by the binomial tree in group order when every
/// rank has a core of its own; longer vectors, and every vector when the ranks outnumber the
/// cores, take the single-copy schedule — the flat `Auto`'s rule (`select::choose_reduce`).
///
/// Measured with `corecoll-bench --machine 2x2` and `--machine 2x2x2 --collective reduce
/// --algorithms auto,binomial,direct,hierarchical,hierarchical-direct --sizes
/// 8,1KiB,4KiB,16KiB,64KiB,1MiB,8MiB --time 0.3` (f64 sums, root 0) on the 2-core test
/// machine, so with 4 and 8 ranks oversubscribed, while other builds ran: oversubscribed, the
/// board session never lost to the tree in group order by more than the noise, and won at
/// 8 ranks, as the flat direct reduce beats the flat tree there (figures in
/// `docs/results/2026-11-29-figures-behind-the-code.md`). With a core per rank (not measurable
/// there) the tree's eager rounds should win while messages ride inline in the mailbox cells,
/// as the flat tree does below `EAGER_MAX`; a machine with more cores should confirm the
/// value.
pub(crate) const DIRECT_MIN: usize = crate::mailbox::EAGER_MAX;

/// Whether a reduce of `bytes` per rank takes the single-copy schedule ([`DIRECT_MIN`]).
fn single_copy(bytes: usize, oversubscribed: bool) -> bool {
    oversubscribed || bytes > DIRECT_MIN
}

/// The hierarchical direct reduce of `buf` with `op` to `root` over `plan` (with levels; the
/// ordered plan for a non-commutative op, whose group order is rank order), after the call
/// check; `tag` carries the algorithm's variant.
pub(crate) fn reduce<T: Elem, O: Op<T>>(
    comm: &Member,
    buf: &mut [T],
    op: &O,
    root: usize,
    plan: &Plan,
    tag: Tag,
) -> Result<()> {
    // Every rank decides alike: the call check compared lengths and element types, and the
    // wait policy is the team's.
    let oversubscribed = comm.run().ranks.policy.oversubscribed;
    if single_copy(std::mem::size_of_val(buf), oversubscribed) {
        reduce_groups(comm, buf, op, root, plan.covered(), tag)
    } else {
        reduce_tree(comm, buf, op, root, plan, tag)
    }
}

/// The short-vector path: a binomial tree over the ranks in group order.
fn reduce_tree<T: Elem, O: Op<T>>(
    comm: &Member,
    buf: &mut [T],
    op: &O,
    root: usize,
    plan: &Plan,
    tag: Tag,
) -> Result<()> {
    let t = ShmTransport::coll(comm, "reduce");
    let (order, place) = plan.order();
    let perm = Permuted::new(&t, order, place);
    let binomial = crate::algorithms::reduce::Schedule::Binomial;
    crate::algorithms::reduce::run(&perm, buf, op, place[root], binomial, 0, tag)
}

/// The single-copy schedule of the module docs over `groups` (every rank in one, each in
/// rank order and, for a non-commutative op, an interval), whatever the length, after the
/// call check (which makes every rank pass the same `root`, length and element type: a rank
/// that disagrees never arrives on the board, so nobody passes phase 1).
pub(crate) fn reduce_groups<T: Elem, O: Op<T>>(
    comm: &Member,
    buf: &mut [T],
    op: &O,
    root: usize,
    groups: &[Vec<usize>],
    tag: Tag,
) -> Result<()> {
    let (p, me, n) = (comm.size(), comm.rank(), buf.len());
    if p == 1 {
        return Ok(());
    }
    let (group, k) = group_of(groups, me);
    // The compact partials buffer (module docs); declared before the session, so that it is
    // dropped after it — after every peer is done with it — also when unwinding.
    let mut partials = comm.scratch::<T>(if me == root {
        0
    } else {
        Schedule::compact_len(group, k, n, p)
    });
    // From here until the session ends, `buf` is touched only through `input` (read by every
    // rank, written on the root only), never through the reference.
    let input: *mut T = buf.as_mut_ptr();
    let output: *mut T = if me == root {
        input
    } else {
        partials.as_mut_ptr().cast()
    };
    // SAFETY: `input` covers the `n` elements of `buf` and `output` either the same or the
    // compact buffer (as long as `compact_len` says, which is what the peers will compute),
    // both borrowed exclusively for this whole function and not used through a reference
    // until the session ends (finished, withdrawn, or dropped while unwinding, which waits as
    // finishing does) before they are released. `Comm` is not `Sync`, so this thread is the
    // only one acting as this rank, and its previous call on the board ended before it
    // returned.
    let session = unsafe {
        comm.shared().board.open(
            comm,
            tag,
            input.cast_const(),
            output,
            n,
            "reduce",
            "hierarchical direct reduce",
        )?
    };
    let s = Schedule {
        session: &session,
        groups,
        p,
        me,
        n,
        outputs: Outputs::Root(root),
    };
    // SAFETY: the session passed phase 1 and is open; every published call has `n` elements
    // of `T` (checked just above), and, as every rank passed the same `root` and `groups`,
    // each input is its rank's buffer and each output the root's buffer or a compact buffer
    // of `compact_len` elements, as `Outputs::Root` requires.
    let ok = unsafe { s.run(op) };
    session.finish(ok)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::{matmul, matrix, team};
    use super::{reduce_groups, reduce_tree};
    use crate::mailbox::Kind;
    use crate::op::{self, Op};
    use crate::topology::Topology;
    use crate::{Comm, Pinning, Team};
    use std::sync::Mutex;
    use std::time::Duration;

    /// The single-copy schedule as `Comm::reduce_with` runs it after the call check (ordered
    /// groups), whatever the length.
    fn call<T: crate::mailbox::Elem>(
        comm: &Comm,
        buf: &mut [T],
        op: impl Op<T>,
        root: usize,
    ) -> crate::Result<()> {
        comm.local().enter("reduce")?;
        let tag = comm.local().next_tag(Kind::Coll(crate::Collective::Reduce));
        let groups = comm.local().hierarchy_plan(true).covered();
        assert!(groups.len() >= 2, "the test machines have several groups");
        reduce_groups(comm.local().member(), buf, &op, root, groups, tag)
    }

    /// Every root, on uneven groups (`[3, 5]` with 11 ranks: 5 | 5 | 1; `[2, 3]` with 8 ranks
    /// placed compactly, wrapping: 3 | 3 | 2), for counts 0, 1, below p and large: the rank-order
    /// product on the root, every other buffer unchanged. Two calls per root in a row, so
    /// that the compact buffers come back from the pool.
    #[test]
    fn every_root_gets_the_rank_order_product_and_the_others_keep_their_input() {
        for (shape, p) in [(&[3, 5][..], 11), (&[2, 3][..], 8)] {
            for n in [0, 1, 5, 9_000] {
                let out = team(shape, p)
                    .run(|comm| {
                        let r = comm.rank();
                        let mine: Vec<[u32; 4]> = (0..n).map(|i| matrix(r, i)).collect();
                        let m = op::non_commutative(|a: &[u32; 4], b: &[u32; 4]| matmul(*a, *b));
                        let mut results = Vec::new();
                        for root in 0..p {
                            for _ in 0..2 {
                                let mut v = mine.clone();
                                call(comm, &mut v, m, root)?;
                                results.push((root, v));
                            }
                        }
                        Ok::<_, crate::Error>(results)
                    })
                    .unwrap();
                let want: Vec<[u32; 4]> = (0..n)
                    .map(|i| (1..p).fold(matrix(0, i), |a, r| matmul(a, matrix(r, i))))
                    .collect();
                for (r, res) in out.into_iter().enumerate() {
                    let mine: Vec<[u32; 4]> = (0..n).map(|i| matrix(r, i)).collect();
                    for (root, v) in res.unwrap() {
                        let ctx = format!("{shape:?} p = {p} n = {n} root {root}: rank {r}");
                        if r == root {
                            assert!(v == want, "{ctx}: wrong result");
                        } else {
                            assert!(v == mine, "{ctx}: a non-root's buffer changed");
                        }
                    }
                }
            }
        }
    }

    /// The short path, the tree in group order, on a spread placement (groups are not
    /// intervals, the unordered plan) with a commutative op and on the ordered plan with the
    /// matrix product: the same results, at every root; the others' buffers unchanged.
    #[test]
    fn the_tree_in_group_order_reduces_to_every_root() {
        let p = 8;
        let out = Team::builder()
            .ranks(p)
            .topology(Topology::synthetic(&[2, 2, 2]).unwrap())
            .pinning(Pinning::Spread)
            .timeout(Duration::from_secs(45))
            .build()
            .unwrap()
            .run(|comm| {
                let r = comm.rank();
                let mine: Vec<[u32; 4]> = (0..3).map(|i| matrix(r, i)).collect();
                let m = op::non_commutative(|a: &[u32; 4], b: &[u32; 4]| matmul(*a, *b));
                let mut results = Vec::new();
                for root in 0..p {
                    comm.local().enter("reduce")?;
                    let tag = comm.local().next_tag(Kind::Coll(crate::Collective::Reduce));
                    let mut v = mine.clone();
                    reduce_tree(
                        comm.local().member(),
                        &mut v,
                        &m,
                        root,
                        comm.local().hierarchy_plan(true),
                        tag,
                    )?;
                    comm.local().enter("reduce")?;
                    let tag = comm.local().next_tag(Kind::Coll(crate::Collective::Reduce));
                    let mut s: Vec<u64> = vec![r as u64 + 1; 5];
                    reduce_tree(
                        comm.local().member(),
                        &mut s,
                        &op::Sum,
                        root,
                        comm.local().hierarchy_plan(false),
                        tag,
                    )?;
                    results.push((root, v, s));
                }
                Ok::<_, crate::Error>(results)
            })
            .unwrap();
        let want: Vec<[u32; 4]> = (0..3)
            .map(|i| (1..p).fold(matrix(0, i), |a, r| matmul(a, matrix(r, i))))
            .collect();
        let sum = (p * (p + 1) / 2) as u64;
        for (r, res) in out.into_iter().enumerate() {
            let mine: Vec<[u32; 4]> = (0..3).map(|i| matrix(r, i)).collect();
            for (root, v, s) in res.unwrap() {
                if r == root {
                    assert_eq!((v, s), (want.clone(), vec![sum; 5]), "root {root}");
                } else {
                    assert_eq!((v, s), (mine.clone(), vec![r as u64 + 1; 5]), "rank {r}");
                }
            }
        }
    }

    /// An operator that panics on one rank while it folds its group's partial (a non-root
    /// holder, the root, a rank holding partials for the root's slice): every other rank
    /// returns `Err`, none hangs.
    #[test]
    fn a_panicking_operator_fails_the_call_everywhere() {
        for (bad, root) in [(0, 4), (1, 1), (4, 0), (3, 5)] {
            let p = 6;
            let errs = Mutex::new(Vec::new());
            let res = team(&[2, 3], p).run(|comm| {
                let r = comm.rank();
                let bomb = op::non_commutative(move |a: &u64, b: &u64| {
                    assert!(r != bad, "planned panic");
                    a + b
                });
                let mut v: Vec<u64> = (0..30_000).map(|i| i as u64).collect();
                let e = call(comm, &mut v, bomb, root);
                errs.lock().unwrap().push(e.is_err());
            });
            assert!(res.is_err(), "rank {bad}'s panic was not reported");
            assert_eq!(
                errs.into_inner().unwrap(),
                vec![true; p - 1],
                "rank {bad}, root {root}"
            );
        }
    }
}
