//! The persistent short allreduce (shared memory only): every rank publishes its vector in its
//! slots (`shm::Slots`) at each start, and every rank folds all p vectors in rank order,
//! x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1} (`Op::fold_right`, the linear allreduce's order, so the same bits as
//! `Linear` and, at p ≤ 2, as every algorithm), when it completes the start.
//!
//! Set up once (a persistent collective's setup agrees the call), a start costs a copy into the
//! rank's own cache lines and a release store; completion waits for every rank's sequence
//! number and reads their lines: for 8 bytes at p = 2, about one cache-line handoff, with no
//! call check (the setup made it) and no message. p ranks each read all p vectors, so this is
//! for short vectors only (`shm::slots::SLOT_BYTES`).

pub(crate) mod blocking;
#[cfg(all(test, loom))]
mod loom;

use crate::error::Result;
use crate::op::Op;
use crate::shm::{Member, Slots};
use std::mem::{align_of, size_of, size_of_val};

/// Whether a vector of `len` elements of `T` fits the slots.
pub(crate) fn fits<T>(len: usize) -> bool {
    align_of::<T>() <= 8 && len.saturating_mul(size_of::<T>()) <= crate::shm::SLOT_BYTES
}

/// Publishes this rank's `buf` as its contribution to start `k`, and wakes the other ranks
/// that it sees asleep.
///
/// Why not `unpark` them here, as every other writer of the crate does: its fence, which keeps
/// a wake-up from being lost when a rank goes to sleep at the same instant, would hold this
/// rank until its store has reached the other cores, before it can even start to look for
/// theirs. Here the ranks that have long been asleep are woken without a fence, and [`finish`]
/// wakes every rank with one, once this rank has what it waits for (every rank
/// publishes before it waits, so no rank's publication waits for this wake-up): a rank that
/// went to sleep at the very instant of this start sleeps until this rank completes it.
///
/// # Safety
/// `slots` are this communicator's for this persistent allreduce; `buf` fits them
/// ([`fits`]); this rank's start `k − 1` has completed ([`finish`]) and it starts `k` once.
#[inline]
pub(crate) unsafe fn start<T: Copy>(member: &Member, slots: &Slots, k: u64, buf: &[T]) {
    // SAFETY: the caller's contract is `publish`'s.
    unsafe { slots.publish(member.rank(), k, &[(buf.as_ptr().cast(), size_of_val(buf))]) };
    for q in (0..member.size()).filter(|&q| q != member.rank()) {
        member.unpark_sleeping(q);
    }
}

/// The first rank that has not yet published start `k`, if one has not.
#[inline]
pub(crate) fn pending<const B: usize>(slots: &Slots<B>, p: usize, k: u64) -> Option<usize> {
    (0..p).find(|&q| !slots.reached(q, k))
}

/// Leaves the contributions of `ranks` to start `k` in `acc`, combined left to right:
/// x_a ⊙ x_{a+1} ⊙ … for `ranks` = a..b (nonempty).
///
/// # Safety
/// Every rank of `ranks` has reached `k` ([`Slots::reached`]) and the caller publishes its
/// start `k + 1` only after this returns; each contribution holds `acc.len()` elements of `T`,
/// which fit the slots ([`fits`]: aligned to 8 ≥ `align_of::<T>()`).
#[inline]
pub(crate) unsafe fn combine<T: Copy, O: Op<T> + ?Sized>(
    slots: &Slots,
    ranks: std::ops::Range<usize>,
    k: u64,
    acc: &mut [T],
    op: &O,
) {
    // SAFETY: the caller's contract, with the vectors at the contributions' start.
    unsafe { combine_at(slots, ranks, k, 0, acc, op) }
}

/// [`combine`] of vectors that start `at` bytes into each contribution.
///
/// # Safety
/// As [`combine`], with each contribution holding `acc.len()` elements of `T` from byte `at`
/// on, `at` a multiple of 8 and `at + size_of_val(acc) ≤ B`.
#[inline]
unsafe fn combine_at<T: Copy, O: Op<T> + ?Sized, const B: usize>(
    slots: &Slots<B>,
    ranks: std::ops::Range<usize>,
    k: u64,
    at: usize,
    acc: &mut [T],
    op: &O,
) {
    let len = acc.len();
    if !op.pairwise() && ranks.len() > 2 {
        // Every operand of an element at once (`Op::pairwise`; two are combined as they are).
        // SAFETY: as below; the contributions stay whole until this rank's next start, after
        // this function returns, so slices of them may outlive each `read`.
        let operand = |q: usize| unsafe {
            let x = slots.read(ranks.start + q, k, |x| x);
            std::slice::from_raw_parts(x.add(at).cast::<T>(), len)
        };
        op.fold_all(ranks.len(), &operand, acc);
        return;
    }
    // SAFETY: the contributions are whole and stay so meanwhile (the contract), each `len`
    // `T`s at an address aligned for `T` (the slot is aligned to 8 and so is `at`), within
    // the contribution's `B` bytes.
    unsafe {
        slots.read(ranks.start, k, |x| {
            crate::copy::copy_bytes(x.add(at), acc.as_mut_ptr().cast::<u8>(), size_of_val(acc))
        });
        for q in ranks.start + 1..ranks.end {
            slots.read(q, k, |xq| {
                op.fold_right(acc, std::slice::from_raw_parts(xq.add(at).cast::<T>(), len))
            });
        }
    }
}

/// Completes start `k`: waits until every rank has published it (giving up as every wait of
/// the crate does), then leaves x₀ ⊙ … ⊙ x_{p−1} in `buf`.
///
/// # Safety
/// As [`start`], after this rank's `start` of `k` with a `buf` of the same length.
#[inline]
pub(crate) unsafe fn finish<T: Copy, O: Op<T> + ?Sized>(
    member: &Member,
    slots: &Slots,
    k: u64,
    buf: &mut [T],
    op: &O,
) -> Result<()> {
    let p = member.size();
    let waited = member.wait_for("allreduce", &member.wait_start(), || pending(slots, p, k));
    member.unpark_others();
    waited?;
    // SAFETY: every rank has reached `k`, and this rank publishes `k + 1` only after this
    // returns; each contribution holds `buf.len()` elements of `T` (every rank agreed the
    // length at setup).
    unsafe { combine(slots, 0..p, k, buf, op) };
    Ok(())
}
