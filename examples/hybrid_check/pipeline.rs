//! The checks of the segmented (stage-pipelined) allreduce between processes
//! (`src/process/collectives/pipeline.rs`): `Algorithm::Hierarchical { segment: Block::Elements(s) }` for
//! small s at counts that give one segment, two, many and a ragged last one; the default
//! segment on a vector longer than it; processes that would cut differently (an error
//! everywhere); and a panic of the op on process 1's leader in the local stage of a later
//! segment (an error on every rank of every process, never a hang). On a plain team
//! (`--local`) the same calls run the shared-memory hierarchy, whose results are checked
//! alike.

use crate::cases::{first_wrong, hash, inputs, reduction, Affine, Case};
use crate::collectives::{allreduce_op, note, same_everywhere};
use crate::suite::{Outcome, RunFails, Suite};
use corecoll::{op, Algorithm, Block, Error};
use std::cell::Cell;

/// The start of the message of the panic the check causes on purpose (filtered from the log
/// by `failures`' hook, which is installed before these checks run).
pub const INTENTIONAL: &str = "the intentional panic of a failure check";

/// The segments checked, in elements.
const SEGMENTS: [usize; 3] = [1, 7, 64];

/// Elements of the default path's check: more than the default segment (1 MiB of `u64`).
const LONG: usize = 200_000;

/// The segmented allreduce's algorithm with segments of `s` elements.
fn segmented(s: usize) -> Algorithm {
    Algorithm::Hierarchical {
        segment: Block::Elements(s),
    }
}

/// Every check of the segmented path.
pub fn check_all(s: &Suite<'_>) {
    let p = s.ctx.size();
    let most = 10 * SEGMENTS[SEGMENTS.len() - 1] + 3;
    let full_u64 = reduction::<u64>(p, most.max(LONG));
    let full_aff = reduction::<Affine>(p, most);
    for seg in SEGMENTS {
        allreduce(s, seg, &full_u64);
        allreduce(s, seg, &full_aff);
    }
    let want = &full_u64[..LONG];
    // The blocking stage (the crate's schedules) and the immediate one (MPI_Iallreduce).
    for alg in [Algorithm::Auto, Algorithm::Native] {
        let name = format!(
            "allreduce {} u64 sum, {LONG} elements (the default segment)",
            alg.name()
        );
        s.check(&name, |comm| {
            let mut buf = inputs::<u64>(comm.rank(), LONG);
            if let Err(e) = comm.allreduce_with(&mut buf, op::Sum, alg) {
                return Some(e.to_string());
            }
            let mut problem = first_wrong(&buf, want);
            match same_everywhere(comm, hash(&buf)) {
                Err(e) => return Some(format!("comparing the results: {e}")),
                Ok(false) => note(&mut problem, Some("the results differ".to_string())),
                Ok(true) => {}
            }
            problem
        });
    }
    failures(s);
}

/// Segmented allreduce of `T` in segments of `seg`: at counts 0, 1, seg, seg + 1 and
/// 10·seg + 3, the reference on every rank, the same bits on every rank.
fn allreduce<T: Case>(s: &Suite<'_>, seg: usize, full: &[T]) {
    let alg = segmented(seg);
    let name = format!("allreduce in segments of {seg} {}", T::NAME);
    allreduce_op(
        s,
        &name,
        alg,
        T::op(),
        full,
        &[0, 1, seg, seg + 1, 10 * seg + 3],
    );
}

thread_local! {
    /// Whether this thread is the one whose op panics (set by each rank at the start of the
    /// check's closure: the team's threads outlive runs).
    static VICTIM: Cell<bool> = const { Cell::new(false) };
}

/// An input that makes the op panic on the victim's thread.
const MAGIC: u64 = 0x5eed_dead_5eed_dead;

/// A sum that panics on the victim's thread when an operand is [`MAGIC`].
fn panicking_sum(a: &u64, b: &u64) -> u64 {
    if (*a == MAGIC || *b == MAGIC) && VICTIM.with(Cell::get) {
        panic!("{INTENTIONAL} (the op, in a later segment)");
    }
    a.wrapping_add(*b)
}

/// The failure checks of the segmented path (between processes only).
fn failures(s: &Suite<'_>) {
    let two = s.ctx.processes() >= 2;
    // With one thread in every process nothing pipelines: the vector is not cut at all.
    let cut = (0..s.ctx.processes()).any(|q| s.ctx.threads(q) > 1);
    let name = "failure: process 1 cuts into other segments (allreduce)";
    if s.ctx.hybrid && two && cut {
        let first1 = s.ctx.offset(1);
        let end1 = first1 + s.ctx.threads(1);
        s.check_fails(
            name,
            RunFails::Either,
            None,
            |_, _| true,
            |comm| {
                let r = comm.rank();
                let seg = if (first1..end1).contains(&r) { 8 } else { 7 };
                let mut v = inputs::<u64>(r, 100);
                Outcome::Called(comm.allreduce_with(&mut v, op::Sum, segmented(seg)))
            },
        );
    } else {
        s.skip(name, "needs two processes, one with two threads");
    }

    // Process 1's leader panics in the op while it reduces segment 2 within its process (an
    // operand from its thread 1 is MAGIC there), after the check of segment 0: its process's
    // other threads fail with it, its leader goes on with the stage between processes, and
    // the closing agreement fails every other process.
    let name = "failure: process 1's leader panics in the op at a later segment";
    if !(s.ctx.hybrid && two && s.ctx.threads(1) >= 2) {
        s.skip(name, "needs two MPI processes, the second with two threads");
        return;
    }
    let (leader, marked) = (s.ctx.offset(1), s.ctx.offset(1) + 1);
    let first1 = s.ctx.offset(1);
    let end1 = first1 + s.ctx.threads(1);
    let seg = 7;
    s.check_fails(
        name,
        RunFails::Everywhere,
        Some(leader),
        |r, e| {
            (first1..end1).contains(&r)
                || matches!(e, Error::ProcessFailed { .. } | Error::Aborted { .. })
        },
        |comm| {
            let r = comm.rank();
            VICTIM.with(|v| v.set(r == leader));
            let mut v = inputs::<u64>(r, 10 * seg + 3);
            if r == marked {
                v[2 * seg] = MAGIC;
            }
            let op = op::commutative(panicking_sum as fn(&u64, &u64) -> u64);
            let result = comm.allreduce_with(&mut v, op, segmented(seg));
            VICTIM.with(|v| v.set(false));
            Outcome::Called(result)
        },
    );
}
