//! Loom models of the single-copy hierarchical collectives (`src/hierarchy/direct/`): the
//! allreduce's and the reduce's board arrival and departure with a middle stage, at which each
//! rank waits for the ranks holding its groups' partial results (`Session::mark` and
//! `Session::wait_stage` in `src/comm/board.rs`); the allgather's and the broadcast's copies
//! from a group's holders; and the barrier on shared flags.
//!
//! Under loom the board keeps a cell per (buffer owner, slice of the vector): a rank writes
//! the cells of the slices it reads or writes in each owner's buffers, in both steps. So loom
//! reports a race if a rank could write the result of a slice into a buffer whose partial (or,
//! in place, whose input) another rank is still reading or writing — that is, if the stage
//! did not order the two steps — or touch a buffer outside its owner's publish/return, and a
//! deadlock if a stage wait could last for ever (a panicking holder included).
//!
//! The last model checks the hierarchical barrier on shared flags
//! (`src/hierarchy/direct/barrier.rs`): every rank's write before a barrier is ordered before
//! every rank's read after it.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_hierarchy`
//! (what CI runs: the in-place allreduce, reduce, allgather and flag-barrier models capped at
//! one preemption, `loom_common::model_capped`); add `CORECOLL_LOOM_DEEP=1` to run those at
//! two as well.
#![cfg(loom)]

mod loom_common;

use corecoll::loom_api::{
    allgather_hierarchical_direct, allreduce_hierarchical_direct, barrier_hierarchical_direct,
    broadcast_hierarchical_direct, reduce_hierarchical_direct,
};
use corecoll::{op, Error};
use loom_common::{input, model_capped, spmd, total};

/// Three ranks in groups {0, 1} and {2}, in place, one element per slice: rank 0 holds its
/// group's partials of slices 0 and 1, rank 1 of slice 2, rank 2 all of its own group's.
#[test]
fn three_ranks_two_groups_in_place() {
    model_capped(|| {
        spmd(3, |comm| {
            let mut v = input(comm.rank(), 3);
            let groups = [vec![0, 1], vec![2]];
            allreduce_hierarchical_direct(&comm, None, &mut v, op::Sum, &groups).expect("call");
            assert_eq!(v, total(3, 3));
        });
    });
}

/// Two ranks in two groups, two calls: out of place, then in place (the stage words and
/// slots are rewritten for the second call while the peer may still finish the first).
#[test]
fn two_groups_two_calls() {
    loom::model(|| {
        spmd(2, |comm| {
            let r = comm.rank();
            let groups = [vec![0], vec![1]];
            let send = input(r, 2);
            let mut out = vec![0; 2];
            allreduce_hierarchical_direct(&comm, Some(&send), &mut out, op::Sum, &groups)
                .expect("out of place");
            assert_eq!(out, total(2, 2));
            assert_eq!(send, input(r, 2));
            let mut v = input(r, 2);
            allreduce_hierarchical_direct(&comm, None, &mut v, op::Sum, &groups).expect("in place");
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
    const QUIET: &str = "expected by the model";
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
        let quiet = message.is_some_and(|m| m.starts_with(QUIET));
        if !quiet {
            default(info);
        }
    }));
    // No preemptions, only the orders of the blocking points: loom runs every model thread
    // on one OS thread, whose panic count they share, so a peer that holds a parker mutex
    // when rank 1 starts to unwind and releases it while rank 1 is still unwinding poisons
    // that mutex in loom's std-based implementation (parking_lot's, used outside loom, does
    // not poison). With preemptions loom finds that artifact, not a fault of the protocol.
    // The same failure on real threads is tested in `hierarchy::direct::tests`.
    let mut model = loom::model::Builder::new();
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
                allreduce_hierarchical_direct(&comm, None, &mut v, bomb, &groups)
            }));
            match r {
                1 => assert!(res.is_err(), "rank 1 unwinds"),
                _ => assert!(matches!(res, Ok(Err(Error::Aborted { .. }))), "{res:?}"),
            }
        });
    });
}

/// The hierarchical flag barrier: three ranks in groups {0, 1} (leader 0) and {2} (a leader
/// alone), two barriers in a row. Before barrier k each rank writes its loom cell of barrier k
/// and counts itself on a relaxed counter; after it each rank reads every rank's cell of
/// barrier k and the counter. A barrier that let anyone out before everyone arrived would
/// let a read race with (or miss) a write: loom reports the race, or the assertion fails.
#[test]
fn flag_barrier_three_ranks_two_groups() {
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::sync::Arc;

    const P: usize = 3;
    const ROUNDS: usize = 2;
    struct Cells {
        slots: [[UnsafeCell<usize>; P]; ROUNDS],
        arrived: AtomicUsize,
    }
    // SAFETY: the cells are accessed only through loom's `with`/`with_mut`, which check that
    // the barrier orders every write before every read; that is the property under test.
    unsafe impl Sync for Cells {}

    model_capped(|| {
        let cells = Arc::new(Cells {
            slots: std::array::from_fn(|_| std::array::from_fn(|_| UnsafeCell::new(0))),
            arrived: AtomicUsize::new(0),
        });
        spmd(P, move |comm| {
            let r = comm.rank();
            let groups = [vec![0, 1], vec![2]];
            for k in 0..ROUNDS {
                // SAFETY: write access checked by loom.
                cells.slots[k][r].with_mut(|v| unsafe { *v = k + 1 });
                cells.arrived.fetch_add(1, Relaxed);
                barrier_hierarchical_direct(&comm, &groups).expect("barrier");
                for s in 0..P {
                    // SAFETY: read access checked by loom.
                    let v = cells.slots[k][s].with(|v| unsafe { *v });
                    assert_eq!(v, k + 1, "rank {s}'s write before barrier {k}");
                }
                assert!(cells.arrived.load(Relaxed) >= P * (k + 1));
            }
        });
    });
}

/// The single-copy allgather (`src/hierarchy/direct/allgather.rs`) on three ranks in groups
/// {0, 1} and {2}, one element per block: rank 0 holds block 2 for its group and rank 1 reads
/// it from rank 0's receive buffer after rank 0's stage; rank 2 holds blocks 0 and 1 for
/// itself. The model records each block copy as a write of that block of the writer's buffer
/// and a read of the source's (`Session::touch_part`, `Session::read_part`), so a read of the
/// held block before rank 0's mark, or of any buffer after its owner took it back, is a race.
#[test]
fn allgather_three_ranks_two_groups() {
    model_capped(|| {
        spmd(3, |comm| {
            let r = comm.rank();
            let groups = [vec![0, 1], vec![2]];
            let send = [10 * (r as u64 + 1)];
            let mut recv = [0u64; 3];
            allgather_hierarchical_direct(&comm, &send, &mut recv, &groups).expect("call");
            assert_eq!(recv, [10, 20, 30]);
        });
    });
}

// ---- The single-copy hierarchical broadcast (`src/hierarchy/direct/broadcast.rs`) ----
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
    loom::model(|| {
        spmd(3, |comm| {
            let mut v = input(comm.rank(), 3);
            let groups = [vec![0, 1], vec![2]];
            broadcast_hierarchical_direct(&comm, &mut v, 2, &groups).expect("call");
            assert_eq!(v, input(2, 3));
        });
    });
}

/// The same groups from root 0: rank 1 copies straight from the root, rank 2 (alone in its
/// group) copies all of it.
#[test]
fn broadcast_root_in_the_larger_group() {
    loom::model(|| {
        spmd(3, |comm| {
            let mut v = input(comm.rank(), 3);
            let groups = [vec![0, 1], vec![2]];
            broadcast_hierarchical_direct(&comm, &mut v, 0, &groups).expect("call");
            assert_eq!(v, input(0, 3));
        });
    });
}

/// Two calls on two ranks in two groups, from root 0 and then root 1: the slots and stage
/// words are rewritten for the second call while the peer may still finish the first.
#[test]
fn broadcast_two_calls() {
    loom::model(|| {
        spmd(2, |comm| {
            let r = comm.rank();
            let groups = [vec![0], vec![1]];
            let mut v = input(r, 2);
            broadcast_hierarchical_direct(&comm, &mut v, 0, &groups).expect("first");
            assert_eq!(v, input(0, 2));
            let mut w = input(r, 2);
            broadcast_hierarchical_direct(&comm, &mut w, 1, &groups).expect("second");
            assert_eq!(w, input(1, 2));
        });
    });
}

/// The single-copy hierarchical reduce (`src/hierarchy/direct/reduce.rs`) of three ranks in
/// groups {0, 1} and {2}, one element per slice, to `root`: the root gets the sum, the other
/// ranks' buffers are unchanged. Rank 0 holds its group's partial of slice 2, rank 2 its own
/// group's of slices 0 and 1; a non-root holder keeps them in a compact buffer, the root in
/// its own buffer.
fn reduce_to(root: usize) {
    model_capped(move || {
        spmd(3, move |comm| {
            let r = comm.rank();
            let mut v = input(r, 3);
            let groups = [vec![0, 1], vec![2]];
            reduce_hierarchical_direct(&comm, &mut v, op::Sum, root, &groups).expect("call");
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
