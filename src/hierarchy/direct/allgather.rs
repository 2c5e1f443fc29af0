//! The single-copy hierarchical allgather (`Allgather::HierarchicalDirect`): the shared-memory
//! direct allgather (`algorithms::gather::direct`) with its reads split at the top level of
//! the plan, so that each block crosses to another group once, not once per reader there.
//!
//! In the flat direct allgather every rank copies every block straight from its owner's send
//! buffer: on a machine of L groups of n ranks, (p − n) of the p blocks each rank reads come
//! from another group's memory, and each block crosses to every other group n times. Here one
//! rank of each group (the block's *holder* there) copies it across, and the group's other
//! ranks copy it from the holder's receive buffer, inside the group. Each rank still copies
//! each block exactly once into its own receive buffer — nothing is staged in an intermediate
//! buffer, and no byte is copied more often than in the flat algorithm — only the source of
//! the foreign blocks changes. The schedule learned from XHC in Open MPI (hierarchy-aware
//! single-copy collectives in shared memory, where a group's members read what its leader
//! brought across), whose design the Open MPI sources document; the board and the stage word
//! between the two steps are those of the hierarchical allreduce (`super::allreduce`).
//!
//! # Schedule
//!
//! The groups are the plan's top-level groups ([`Plan::covered`]), each in rank order. Block
//! b is rank b's send buffer, and block b of every receive buffer.
//!
//! 1. **Arrive** on the board (all p ranks), publishing `send` as input and `recv` as output,
//!    and check that every rank has the same block length and element type (a mismatch: every
//!    rank returns `Err` without touching a buffer, as the flat direct algorithm does).
//! 2. **Across the groups.** Group G of n ranks cuts the blocks of the ranks outside it (its
//!    *foreign* blocks) into n runs ([`holder`](super::holder), [`held`]): its k-th rank copies each block b
//!    of run k from rank b's `send` into its own `recv` at block b, then marks stage 1.
//! 3. **Within the group.** Every rank copies the blocks of its own group's ranks straight from
//!    their `send`s; then, per other rank h of its group (holders after this rank first, so
//!    that the group's ranks do not all start at the same one), it waits for h's stage 1 and
//!    copies the blocks h holds from h's `recv`. A failed wait (h unwound, or gave up in
//!    phase 1) leaves the result incomplete: the rank finishes failing.
//! 4. **Leave** the board (phase 2: everyone is done with everyone's buffers).
//!
//! **Why no races.** Nobody writes a `send`. Each rank writes only its own `recv`, each block
//! once. Block b of rank h's `recv` is read by anyone else only if h is b's holder in its
//! group, and then only by the other ranks of that group after they acquired h's stage-1
//! mark, which h stores after writing that block (and h never writes it again: its step 3
//! writes its own group's blocks and the blocks other ranks hold). Everyone's buffers stay
//! lent until phase 2, after every reader's last access.
//!
//! **Traffic**, for p ranks of blocks of S bytes in L groups of n: both algorithms read p·S
//! and write p·S bytes per rank. What crosses a group boundary is, in the flat algorithm,
//! every block to every rank outside its group, p(p − n)·S bytes; here every block to each
//! other group once, p(L − 1)·S bytes: n times less (half on 2 packages × 2 cores, a quarter
//! on 2 × 4). The price is the stage-1 synchronisation and the holders' copies standing
//! before their group's reads.
//!
//! **Measured** on the 2-core development machine (described packages, so no boundary's cost
//! to save), the single-copy path is slower than the flat direct allgather from 64 KiB up on
//! 2 × 2 (figures in `docs/results/2026-11-29-figures-behind-the-code.md`). The stage synchronisation is not the cost: with the same waits
//! but the foreign blocks read from their owners' `send`s, it ran about as fast as the flat
//! algorithm. The cost is that a holder's copy was written in this call: the
//! group's readers fetch it from the holder's cache (modified lines), and the holder's next
//! write invalidates their copies, while the flat algorithm's sources, the `send`s, stay
//! clean and shared between calls (as the benchmark never rewrites them). Where the groups are
//! real packages that trade is the point; here it is all cost.
//!
//! # Short blocks
//!
//! Below [`SINGLE_COPY_MIN`] bytes of result the board's synchronisations cost more than the
//! copies: the blocks go by the flat schedule that `select::choose_allgather` picks for that
//! size, over the ranks in group order ([`Plan::order`], through `transport::Permuted`), so
//! that its first rounds stay within groups. Group order puts the result in a permuted order,
//! so it is gathered into a temporary and put back in rank order; when the group order is
//! rank order (compact placements, whose groups are intervals) the schedule runs on the ranks
//! themselves, straight into `recv`.

use super::{group_of, held};
use crate::algorithms::gather::{run_allgather, Allgathering};
use crate::error::Result;
use crate::hierarchy::Plan;
use crate::mailbox::{Elem, Tag};
use crate::select::{self, Flat};
use crate::shm::Member;
use crate::transport::shm::ShmTransport;
use crate::transport::Permuted;

/// The stage a holder marks once the foreign blocks it holds are in its `recv`.
const HELD: u64 = 1;

/// Bytes of the whole result (p blocks, the receive buffer) from which the single-copy path
/// runs; below, the short-block path (module docs). Measured with `corecoll-bench
/// --collective allgather --algorithms direct,hierarchical-direct --time 0.3` (sizes: the
/// whole receive buffer per rank), each path forced at every size, on `--machine 2x2` and
/// `--machine 2x2x2`: the crossover falls as p grows (the short path's rounds grow with p,
/// the board's synchronisations do not), and 32 KiB lies between the two machines'
/// crossovers, never far from the better path on either (figures in
/// `docs/results/2026-11-29-figures-behind-the-code.md`).
pub(crate) const SINGLE_COPY_MIN: usize = 32 << 10;

/// The hierarchical direct allgather of every rank's `send` into `recv` (block i from rank
/// i; `recv` holds p blocks, checked by the caller) over `plan` (with levels), after the call
/// check; `tag` carries the algorithm's variant.
pub(crate) fn allgather<T: Elem>(
    comm: &Member,
    send: &[T],
    recv: &mut [T],
    plan: &Plan,
    tag: Tag,
) -> Result<()> {
    if std::mem::size_of_val(recv) < SINGLE_COPY_MIN {
        short(comm, send, recv, plan, tag)
    } else {
        single_copy(comm, send, recv, plan.covered(), tag)
    }
}

/// The short-block path: `select::choose_allgather`'s flat schedule over the ranks in group
/// order, into `recv` directly if that order is rank order, else through a temporary.
fn short<T: Elem>(comm: &Member, send: &[T], recv: &mut [T], plan: &Plan, tag: Tag) -> Result<()> {
    let t = ShmTransport::coll(comm, "allgather");
    let (order, place) = plan.order();
    let n = send.len();
    // `Direct` (the board in rank order) does not apply over a permutation: Bruck's instead.
    let schedule = match select::choose_allgather(comm.size(), std::mem::size_of_val(send)) {
        Flat::Schedule(s) => s,
        Flat::Direct => Allgathering::Bruck,
    };
    if order.iter().enumerate().all(|(v, &r)| v == r) {
        return run_allgather(&t, send, recv, schedule, tag);
    }
    let perm = Permuted::new(&t, order, place);
    // Block v of `tmp` is rank order[v]'s.
    let mut tmp = crate::copy::to_vec(recv);
    run_allgather(&perm, send, &mut tmp, schedule, tag)?;
    if n > 0 {
        for (v, block) in tmp.chunks_exact(n).enumerate() {
            crate::copy::copy_slice(&mut recv[order[v] * n..(order[v] + 1) * n], block);
        }
    }
    Ok(())
}

/// The single-copy path over `groups` (at least one, each in rank order, together every rank
/// once): one board session, holders copying the foreign blocks across, every rank copying
/// its group's blocks and the held ones (module docs). `recv` holds p blocks of
/// `send.len()` elements (checked by the caller).
pub(crate) fn single_copy<T: Elem>(
    comm: &Member,
    send: &[T],
    recv: &mut [T],
    groups: &[Vec<usize>],
    tag: Tag,
) -> Result<()> {
    let (p, me, n) = (comm.size(), comm.rank(), send.len());
    debug_assert_eq!(recv.len(), p * n);
    // From here until the session ends, `recv` is touched only through `out`: by this rank,
    // and by the ranks of its group reading the blocks it holds.
    let out: *mut T = recv.as_mut_ptr();
    // SAFETY: `send` (borrowed shared for this whole function) is valid for reads of n
    // elements and nobody writes it; `out` covers the p·n elements of `recv`, borrowed
    // exclusively for this whole function and used only through `out` while the session
    // lasts (by this rank, and by peers as the module docs prescribe). The session ends
    // (finished, rejected, withdrawn, or dropped while unwinding) before this function
    // returns. `Comm` is not `Sync`, so this thread is the only one acting as this rank, and
    // its previous call on the board ended before that call returned.
    let session = unsafe {
        comm.shared().board.open(
            comm,
            tag,
            send.as_ptr(),
            out,
            n,
            "allgather",
            "hierarchical direct allgather of blocks",
        )?
    };

    let (group, k) = group_of(groups, me);
    let input = |r: usize| session.call(r).input.cast::<T>();
    let output = |r: usize| session.call(r).output.cast::<T>().cast_const();
    // Every copy below is `ptr::copy_nonoverlapping` of block b (n elements) into block b of
    // this rank's `recv`, and sound for the same reasons (the SAFETY comments refer here): the
    // session passed phase 1 and is open; every rank published an input of n elements of `T`
    // and an output of p·n (checked just above; the output by each caller). The source is a
    // published `send`, which nobody writes during the call, or block b of a holder's `recv`,
    // which that holder wrote before the stage-1 mark this rank acquired and never writes
    // again (module docs). Block b of this rank's `recv` is written by this rank only, once,
    // and read by no one else unless this rank holds it, and then only after the mark stored
    // after this write. Source and destination are distinct buffers (another rank's, or this
    // rank's `send`, a distinct borrow from `recv`), so they do not overlap.
    let dst = |b: usize| out.wrapping_add(b * n);

    // Step 2: the foreign blocks this rank holds for its group.
    for b in held(group, p, k) {
        #[cfg(loom)]
        {
            session.read_part(b, b);
            session.touch_part(me, b);
        }
        // SAFETY: a published `send` into block b of `recv` (see above).
        unsafe { crate::copy::copy_elems(input(b), dst(b), n) };
    }
    session.mark(HELD);

    // Step 3: the own group's blocks from their owners' `send`s...
    for &x in group {
        #[cfg(loom)]
        {
            session.read_part(x, x);
            if x != me {
                session.touch_part(me, x);
            }
        }
        // SAFETY: a published `send` into block x of `recv` (see above).
        unsafe { crate::copy::copy_elems(input(x), dst(x), n) };
    }
    // ... and the foreign ones from their holders' `recv`s, starting after this rank.
    let g = group.len();
    let mut ok = true;
    for j in 1..g {
        let kh = (k + j) % g;
        let run = held(group, p, kh);
        if run.is_empty() {
            continue;
        }
        let h = group[kh];
        if !session.wait_stage(h, HELD) {
            ok = false;
            break;
        }
        for b in run {
            #[cfg(loom)]
            {
                session.read_part(h, b);
                session.touch_part(me, b);
            }
            // SAFETY: block b of holder h's `recv`, after its mark, into block b of this
            // rank's (see above).
            unsafe { crate::copy::copy_elems(output(h).add(b * n), dst(b), n) };
        }
    }
    session.finish(ok)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::team_placed as team;
    use super::{allgather, single_copy, SINGLE_COPY_MIN};
    use crate::mailbox::Kind;
    use crate::{Comm, Pinning, Team};
    use std::time::Duration;

    /// Element i of rank r's block: recognisable by rank and place.
    fn value(r: usize, i: usize) -> u64 {
        ((r as u64) << 32) | i as u64
    }

    /// The single-copy path over the plan's groups (`direct`), or the whole algorithm as
    /// `Comm::allgather_with` runs it after the call check (short path below the threshold).
    fn call(comm: &Comm, send: &[u64], recv: &mut [u64], direct: bool) -> crate::Result<()> {
        comm.local().enter("allgather")?;
        let tag = comm
            .local()
            .next_tag(Kind::Coll(crate::Collective::Allgather));
        let plan = comm.local().hierarchy_plan(false);
        assert!(
            plan.covered().len() >= 2,
            "the test machines have several groups"
        );
        if direct {
            single_copy(comm.local().member(), send, recv, plan.covered(), tag)
        } else {
            allgather(comm.local().member(), send, recv, plan, tag)
        }
    }

    /// Uneven groups (`[3, 5]` with 11 ranks: groups of 5, 5 and 1), groups that are not
    /// intervals (`[2, 3]` with 8 ranks on 6 cores, compact, and spread placements), counts 0,
    /// 1, 7 and one past the threshold: every rank gets every block in rank order, by both
    /// paths, and its `send` is untouched.
    #[test]
    fn uneven_and_interleaved_groups() {
        let large = SINGLE_COPY_MIN / 8 / 4 + 3;
        let machines = [
            (&[3, 5][..], 11, Pinning::Compact),
            (&[2, 3][..], 8, Pinning::Compact),
            (&[2, 3][..], 5, Pinning::Spread),
            (&[2, 2, 2][..], 8, Pinning::Spread),
        ];
        for (shape, p, pinning) in machines {
            for n in [0, 1, 7, large] {
                let out = team(shape, p, pinning.clone())
                    .run(|comm| {
                        let r = comm.rank();
                        let send: Vec<u64> = (0..n).map(|i| value(r, i)).collect();
                        let mut direct = vec![u64::MAX; p * n];
                        call(comm, &send, &mut direct, true)?;
                        let mut whole = vec![u64::MAX; p * n];
                        call(comm, &send, &mut whole, false)?;
                        let unchanged = send.iter().enumerate().all(|(i, &x)| x == value(r, i));
                        Ok::<_, crate::Error>((direct, whole, unchanged))
                    })
                    .unwrap();
                let want: Vec<u64> = (0..p)
                    .flat_map(|r| (0..n).map(move |i| value(r, i)))
                    .collect();
                for (r, res) in out.into_iter().enumerate() {
                    let (direct, whole, unchanged) = res.unwrap();
                    let at = format!("{shape:?} {pinning:?} p = {p} n = {n}: rank {r}");
                    assert_eq!(direct, want, "{at}, single copy");
                    assert_eq!(whole, want, "{at}, dispatched");
                    assert!(unchanged, "{at}: send changed");
                }
            }
        }
    }

    /// Explicit groups that are neither intervals nor of equal size, on a team without a
    /// described machine: the holders' runs and the waits do not depend on the plan.
    #[test]
    fn explicit_groups() {
        let p = 7;
        let groups = [vec![0, 3, 5], vec![1, 6], vec![2], vec![4]];
        let n = 3;
        let out = Team::builder()
            .ranks(p)
            .timeout(Duration::from_secs(45))
            .build()
            .unwrap()
            .run(|comm| {
                comm.local().enter("allgather")?;
                let tag = comm
                    .local()
                    .next_tag(Kind::Coll(crate::Collective::Allgather));
                let send: Vec<u64> = (0..n).map(|i| value(comm.rank(), i)).collect();
                let mut recv = vec![0; p * n];
                single_copy(comm.local().member(), &send, &mut recv, &groups, tag)?;
                Ok::<_, crate::Error>(recv)
            })
            .unwrap();
        let want: Vec<u64> = (0..p)
            .flat_map(|r| (0..n).map(move |i| value(r, i)))
            .collect();
        for res in out {
            assert_eq!(res.unwrap(), want);
        }
    }

    /// A rank whose block has another length: every rank returns `Err` and no receive buffer
    /// is touched.
    #[test]
    fn another_length_fails_every_rank() {
        for bad in [0, 3, 5] {
            let p = 6;
            let out = team(&[2, 3], p, Pinning::Compact)
                .run(|comm| {
                    let r = comm.rank();
                    let n = if r == bad { 4 } else { 5 };
                    let send = vec![7u64; n];
                    let mut recv = vec![1u64; p * n];
                    let res = call(comm, &send, &mut recv, true);
                    (res.is_err(), recv.iter().all(|&x| x == 1))
                })
                .unwrap();
            assert_eq!(out, vec![(true, true); p], "rank {bad} differs");
        }
    }
}
