//! Loom models of the single-copy hierarchical collectives: the allreduce's and the reduce's
//! board arrival and departure with a middle stage, at which each rank waits for the ranks
//! holding its groups' partial results (`Session::mark` and `Session::wait_stage` of the
//! board, `src/shm/README.md`); the allgather's and the broadcast's copies from a group's
//! holders.
//!
//! Under loom the board keeps a cell per (buffer owner, slice of the vector): a rank writes
//! the cells of the slices it reads or writes in each owner's buffers, in both steps. So loom
//! reports a race if a rank could write the result of a slice into a buffer whose partial (or,
//! in place, whose input) another rank is still reading or writing — that is, if the stage
//! did not order the two steps — or touch a buffer outside its owner's publish/return, and a
//! deadlock if a stage wait could last for ever (a panicking holder included).
//!
//! The in-place allreduce, the reduce and the allgather models run at one preemption
//! (`model_capped`); `CORECOLL_LOOM_DEEP=1` runs them at `LOOM_MAX_PREEMPTIONS` as well.

use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::Kind;
use crate::op::{self, Op};
use crate::shm::loom_world::{input, spmd, total};
use crate::shm::Member;
use crate::sync::loom_support::{model_capped, quiet_panics, QUIET};

/// The groups of most models: {0, 1} and {2}.
fn two_groups() -> [Vec<usize>; 2] {
    [vec![0, 1], vec![2]]
}

/// `Algorithm::HierarchicalDirect` on `comm` over `groups`, out of place if `send` is given,
/// without the call check: the board's own protocol with its middle stage.
fn allreduce<O: Op<u64>>(
    comm: &Member,
    send: Option<&[u64]>,
    buf: &mut [u64],
    op: O,
    groups: &[Vec<usize>],
) -> Result<()> {
    comm.enter("allreduce")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Allreduce));
    super::allreduce(comm, send, buf, &op, groups, tag)
}

/// `Allgather::HierarchicalDirect`'s single-copy path on `comm` over `groups`, without the
/// call check or the short-block path: the board's own protocol with the holders' stage
/// between the two copies.
fn allgather(comm: &Member, send: &[u64], recv: &mut [u64], groups: &[Vec<usize>]) -> Result<()> {
    comm.enter("allgather")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Allgather));
    super::allgather::single_copy(comm, send, recv, groups, tag)
}

/// The single-copy schedule of `Broadcast::HierarchicalDirect` on `comm` from `root` over
/// `groups`, whatever the length and without the call check.
fn broadcast(comm: &Member, buf: &mut [u64], root: usize, groups: &[Vec<usize>]) -> Result<()> {
    comm.enter("broadcast")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Broadcast));
    super::broadcast::single_copy(comm, buf, root, groups, tag)
}

/// `Reduce::HierarchicalDirect`'s single-copy schedule on `comm` over `groups` to `root`,
/// whatever the length, without the call check: the root's buffer the only output and every
/// other rank's partials in a compact buffer from its scratch pool.
fn reduce(comm: &Member, buf: &mut [u64], root: usize, groups: &[Vec<usize>]) -> Result<()> {
    comm.enter("reduce")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Reduce));
    super::reduce::reduce_groups(comm, buf, &op::Sum, root, groups, tag)
}

/// Three ranks in groups {0, 1} and {2}, in place, one element per slice: rank 0 holds its
/// group's partials of slices 0 and 1, rank 1 of slice 2, rank 2 all of its own group's.
#[test]
fn three_ranks_two_groups_in_place() {
    model_capped(|| {
        spmd(3, |comm| {
            let mut v = input(comm.rank(), 3);
            allreduce(&comm, None, &mut v, op::Sum, &two_groups()).expect("call");
            assert_eq!(v, total(3, 3));
        });
    });
}

/// Two ranks in two groups, two calls: out of place, then in place (the stage words and
/// slots are rewritten for the second call while the peer may still finish the first).
#[test]
fn two_groups_two_calls() {
    ::loom::model(|| {
        spmd(2, |comm| {
            let r = comm.rank();
            let groups = [vec![0], vec![1]];
            let send = input(r, 2);
            let mut out = vec![0; 2];
            allreduce(&comm, Some(&send), &mut out, op::Sum, &groups).expect("out of place");
            assert_eq!(out, total(2, 2));
            assert_eq!(send, input(r, 2));
            let mut v = input(r, 2);
            allreduce(&comm, None, &mut v, op::Sum, &groups).expect("in place");
            assert_eq!(v, total(2, 2));
        });
    });
}

/// Rank 1's operator panics while it folds its group's partial of slice 0 (groups {0} and
/// {1, 2}, in place; rank 1 holds the partial rank 0 waits for): rank 0 returns `Err` instead
/// of waiting for ever, rank 2 too, and rank 1's unwinding waits until nobody touches its
/// buffer.
#[test]
fn a_panicking_holder() {
    quiet_panics();
    // No preemptions, only the orders of the blocking points: loom runs every model thread
    // on one OS thread, whose panic count they share, so a peer that holds a parker mutex
    // when rank 1 starts to unwind and releases it while rank 1 is still unwinding poisons
    // that mutex in loom's std-based implementation (parking_lot's, used outside loom, does
    // not poison). With preemptions loom finds that artifact, not a fault of the protocol.
    // The same failure on real threads is tested by the unit tests of the hierarchical
    // allreduce (`a_panicking_operator_fails_the_call_everywhere`).
    let mut model = ::loom::model::Builder::new();
    model.preemption_bound = Some(0);
    model.check(|| {
        spmd(3, |comm| {
            let r = comm.rank();
            let bomb = op::non_commutative(move |a: &u64, b: &u64| {
                if r == 1 {
                    panic!("{}", QUIET);
                }
                a + b
            });
            let groups = [vec![0], vec![1, 2]];
            let mut v = input(r, 3);
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                allreduce(&comm, None, &mut v, bomb, &groups)
            }));
            match r {
                1 => assert!(res.is_err(), "rank 1 unwinds"),
                _ => assert!(matches!(res, Ok(Err(Error::Aborted { .. }))), "{res:?}"),
            }
        });
    });
}

/// The single-copy allgather on three ranks in groups {0, 1} and {2}, one element per block:
/// rank 0 holds block 2 for its group and rank 1 reads it from rank 0's receive buffer after
/// rank 0's stage; rank 2 holds blocks 0 and 1 for itself. The model records each block copy
/// as a write of that block of the writer's buffer and a read of the source's
/// (`Session::touch_part`, `Session::read_part`), so a read of the held block before rank 0's
/// mark, or of any buffer after its owner took it back, is a race.
#[test]
fn allgather_three_ranks_two_groups() {
    model_capped(|| {
        spmd(3, |comm| {
            let r = comm.rank();
            let send = [10 * (r as u64 + 1)];
            let mut recv = [0u64; 3];
            allgather(&comm, &send, &mut recv, &two_groups()).expect("call");
            assert_eq!(recv, [10, 20, 30]);
        });
    });
}

// ---- The single-copy hierarchical broadcast ----
//
// Under loom the broadcast records its accesses in the board's cells: a reader of the root's
// buffer writes its own cell there; a rank outside the root's group writes, before its mark,
// the cells of its own buffer belonging to every member of its group (its part, which they
// read later), and, after waiting for a member's mark, its own cell in that member's buffer.
// So loom reports a race if a rank could copy a member's part before that member wrote it
// (a missing or misplaced stage wait), or touch a buffer outside its owner's publish/return.

/// Three ranks in groups {0, 1} and {2}, three elements, from root 2: group {0, 1} splits
/// the vector (rank 0 copies part 0 from the root, rank 1 part 1, then each the other's part
/// from its peer once it has marked, or chunks of it from the root meanwhile).
#[test]
fn broadcast_split_group() {
    ::loom::model(|| {
        spmd(3, |comm| {
            let mut v = input(comm.rank(), 3);
            broadcast(&comm, &mut v, 2, &two_groups()).expect("call");
            assert_eq!(v, input(2, 3));
        });
    });
}

/// The same groups from root 0: rank 1 copies straight from the root, rank 2 (alone in its
/// group) copies all of it.
#[test]
fn broadcast_root_in_the_larger_group() {
    ::loom::model(|| {
        spmd(3, |comm| {
            let mut v = input(comm.rank(), 3);
            broadcast(&comm, &mut v, 0, &two_groups()).expect("call");
            assert_eq!(v, input(0, 3));
        });
    });
}

/// Two calls on two ranks in two groups, from root 0 and then root 1: the slots and stage
/// words are rewritten for the second call while the peer may still finish the first.
#[test]
fn broadcast_two_calls() {
    ::loom::model(|| {
        spmd(2, |comm| {
            let r = comm.rank();
            let groups = [vec![0], vec![1]];
            let mut v = input(r, 2);
            broadcast(&comm, &mut v, 0, &groups).expect("first");
            assert_eq!(v, input(0, 2));
            let mut w = input(r, 2);
            broadcast(&comm, &mut w, 1, &groups).expect("second");
            assert_eq!(w, input(1, 2));
        });
    });
}

/// The single-copy hierarchical reduce of three ranks in groups {0, 1} and {2}, one element
/// per slice, to `root`: the root gets the sum, the other ranks' buffers are unchanged. Rank
/// 0 holds its group's partial of slice 2, rank 2 its own group's of slices 0 and 1; a
/// non-root holder keeps them in a compact buffer, the root in its own buffer.
fn reduce_to(root: usize) {
    model_capped(move || {
        spmd(3, move |comm| {
            let r = comm.rank();
            let mut v = input(r, 3);
            reduce(&comm, &mut v, root, &two_groups()).expect("call");
            if r == root {
                assert_eq!(v, total(3, 3));
            } else {
                assert_eq!(v, input(r, 3));
            }
        });
    });
}

/// Root 1 holds no partial: ranks 0 and 2 both keep theirs in compact buffers, and rank 1
/// writes slice 1 over its own input, which only it reads.
#[test]
fn reduce_to_a_root_without_partials() {
    reduce_to(1);
}

/// Root 2 writes its group's partials of slices 0 and 1 into its own buffer; ranks 0 and 1
/// read them after its mark and then overwrite them with the result.
#[test]
fn reduce_to_a_root_holding_partials() {
    reduce_to(2);
}
