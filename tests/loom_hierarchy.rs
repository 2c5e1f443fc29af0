//! Loom models of the single-copy hierarchical allreduce and reduce
//! (`src/hierarchy/direct/`): the board's arrival and departure with a middle stage, at which
//! each rank waits for the ranks holding its groups' partial results (`Session::mark` and
//! `Session::wait_stage` in `src/comm/board.rs`).
//!
//! Under loom the board keeps a cell per (buffer owner, slice of the vector): a rank writes
//! the cells of the slices it reads or writes in each owner's buffers, in both steps. So loom
//! reports a race if a rank could write the result of a slice into a buffer whose partial (or,
//! in place, whose input) another rank is still reading or writing — that is, if the stage
//! did not order the two steps — or touch a buffer outside its owner's publish/return, and a
//! deadlock if a stage wait could last for ever (a panicking holder included).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --test loom_hierarchy`
#![cfg(loom)]

mod loom_common;

use corecoll::loom_api::allreduce_hierarchical_direct;
use corecoll::{op, Error};
use loom_common::{input, spmd, total};

/// Three ranks in groups {0, 1} and {2}, in place, one element per slice: rank 0 holds its
/// group's partials of slices 0 and 1, rank 1 of slice 2, rank 2 all of its own group's.
#[test]
fn three_ranks_two_groups_in_place() {
    loom::model(|| {
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

/// The single-copy hierarchical reduce (`src/hierarchy/direct/reduce.rs`) of three ranks in
/// groups {0, 1} and {2}, one element per slice, to `root`: the root gets the sum, the other
/// ranks' buffers are unchanged. Rank 0 holds its group's partial of slice 2, rank 2 its own
/// group's of slices 0 and 1; a non-root holder keeps them in a compact buffer, the root in
/// its own buffer.
fn reduce_to(root: usize) {
    use corecoll::loom_api::reduce_hierarchical_direct;
    loom::model(move || {
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
