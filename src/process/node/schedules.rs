//! The node stage of the collectives of a team whose processes share a node: every process
//! (its leader thread) exchanges through the node's segment in rounds (`process::node::Rounds`),
//! copying its part into its slot and reading the others' from theirs, a slot's worth
//! ([`SLOT_BYTES`](crate::process::node::SLOT_BYTES)) per round; long vectors take several rounds,
//! each process's next slot filled while the others read the last (two slots per process).
//!
//! Reductions combine in process order, x₀ ⊙ x₁ ⊙ … ⊙ x_{P−1}, each process the whole chunk
//! from the slots by the same code, so every process ends with the same bits and a
//! non-commutative op is honoured; the grouping is the linear schedules' (((x₀ ⊙ x₁) ⊙ x₂) …
//! for allreduce, around the root for reduce), which a hybrid team's requests run over MPI
//! where the blocking calls run here, so that both give the same bits. Copy-in/copy-out through the segment: each byte is copied
//! into a slot once and read by every process that needs it. (Reading the others' buffers in
//! place — `process_vm_readv` — would save the copy in, and is not built.)
//!
//! Every function runs the same rounds on every process for the same arguments, which the
//! check agreed before (itself a round: [`gather_words`]).

use crate::error::Error;
use crate::op::Op;
use crate::process::node::{Halt, Rounds};
use std::mem::{size_of, size_of_val};

/// A wait's watcher: asked now and then, with the process waited for, whether to give up.
pub(crate) type Watch<'w> = &'w mut dyn FnMut(usize) -> Option<Error>;

/// Elements of `T` per round.
fn per_round<T>(r: &Rounds<'_>) -> usize {
    assert!(
        size_of::<T>() <= r.slot_bytes(),
        "an element larger than a slot"
    );
    r.slot_bytes() / size_of::<T>().max(1)
}

/// Copies `src` into this process's slot of round `k`.
fn copy_in<T: Copy>(r: &Rounds<'_>, k: u64, src: &[T]) {
    debug_assert!(size_of_val(src) <= r.slot_bytes());
    // SAFETY: the slot holds `slot_bytes` bytes, aligned for `T` (a multiple of 128 from the
    // segment's page-aligned start), and no one reads it before this process arrives.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), r.mine(k).cast::<T>(), src.len()) };
}

/// Process `q`'s slot of round `k` as `n` elements of `T`.
///
/// # Safety
/// `q` must have arrived at round `k` with `n` elements of `T` there, and this process must not
/// have left round `k`.
unsafe fn slot<'r, T>(r: &'r Rounds<'_>, q: usize, k: u64, n: usize) -> &'r [T] {
    // SAFETY: per the contract; nothing writes the slot before this process leaves round `k`.
    unsafe { std::slice::from_raw_parts(r.slot(q, k).cast::<T>(), n) }
}

/// The `n` words at the start of every process's slot of round `k`, in process order.
///
/// # Safety
/// As [`slot`]'s, for every process: all arrived at round `k` with `n` words there.
unsafe fn words_of_all(r: &Rounds<'_>, k: u64, n: usize) -> Vec<u64> {
    let mut all = Vec::with_capacity(n * r.size());
    for q in 0..r.size() {
        // SAFETY: per the contract.
        all.extend_from_slice(unsafe { slot::<u64>(r, q, k, n) });
    }
    all
}

/// Every process's `mine` (the same length everywhere), in process order: one round. A
/// process whose words it cannot hold (longer than a slot) is a bug of the caller.
pub(crate) fn gather_words(
    r: &Rounds<'_>,
    mine: &[u64],
    watch: Watch<'_>,
) -> Result<Vec<u64>, Halt> {
    let k = r.begin(watch)?;
    copy_in(r, k, mine);
    r.arrive(k);
    r.wait_arrived(k, None, watch)?;
    // SAFETY: every process arrived at round `k` with its words.
    let all = unsafe { words_of_all(r, k, mine.len()) };
    r.leave(k);
    Ok(all)
}

/// Where a round's data starts after `words` words of a check in the same slot.
fn after_words(words: usize) -> usize {
    (words * size_of::<u64>()).div_ceil(128) * 128
}

/// Whether a check of `words` words and `n` elements of `T` fit one slot of `slot_bytes`
/// ([`words_and_allreduce`]).
pub(crate) fn fits_with_words<T>(slot_bytes: usize, words: usize, n: usize) -> bool {
    after_words(words) + n * size_of::<T>() <= slot_bytes
}

/// The check's words and a short allreduce in one round: every process's `words` in process
/// order, as [`gather_words`]; and, if `agreed` finds them agreed, `buf` := x₀ ⊙ x₁ ⊙ … over
/// the processes' `buf`s (which must fit the slot with the words: [`fits_with_words`]).
pub(crate) fn words_and_allreduce<T: Copy>(
    r: &Rounds<'_>,
    words: &[u64],
    buf: &mut [T],
    op: &dyn Op<T>,
    agreed: &dyn Fn(&[u64]) -> bool,
    watch: Watch<'_>,
) -> Result<Vec<u64>, Halt> {
    assert!(fits_with_words::<T>(r.slot_bytes(), words.len(), buf.len()));
    let off = after_words(words.len());
    let k = r.begin(watch)?;
    copy_in(r, k, words);
    let n = buf.len();
    if size_of::<T>() != 0 {
        // SAFETY: the data fits the slot after the words (asserted), at an offset that keeps
        // the slot's alignment (a multiple of 128); no one reads it before this arrives.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), r.mine(k).add(off).cast::<T>(), n) };
    }
    r.arrive(k);
    r.wait_arrived(k, None, watch)?;
    // SAFETY: every process arrived at round `k` with its words.
    let all = unsafe { words_of_all(r, k, words.len()) };
    if agreed(&all) && size_of::<T>() != 0 {
        // SAFETY: every process arrived with its `n` elements after its words (they agreed on
        // the call, so on `n` and `T`).
        let data =
            |q: usize| unsafe { std::slice::from_raw_parts(r.slot(q, k).add(off).cast::<T>(), n) };
        fold_in_order(r, buf, op, data);
    }
    r.leave(k);
    Ok(all)
}

/// Process 0's `words` and, if `agreed` finds them agreed, its `buf` after them, handed to
/// every process in one round: the second round of a check (and a short allreduce) whose
/// words process 0 gathered from further away (the other nodes). `words` must hold as many
/// words on every process, and process 0's words and `buf` fit one slot
/// ([`fits_with_words`]).
pub(crate) fn words_then_data<T: Copy>(
    r: &Rounds<'_>,
    words: &mut [u64],
    buf: &mut [T],
    agreed: &dyn Fn(&[u64]) -> bool,
    watch: Watch<'_>,
) -> Result<(), Halt> {
    assert!(fits_with_words::<T>(r.slot_bytes(), words.len(), buf.len()));
    let off = after_words(words.len());
    let n = buf.len();
    let k = r.begin(watch)?;
    if r.me() == 0 {
        copy_in(r, k, words);
        if agreed(words) && size_of::<T>() != 0 {
            // SAFETY: the data fits the slot after the words (asserted), at an offset that
            // keeps the slot's alignment; no one reads it before this process arrives.
            unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), r.mine(k).add(off).cast(), n) };
        }
        r.arrive(k);
    } else {
        r.wait_arrived(k, Some(0), watch)?;
        // SAFETY: process 0 arrived at round `k` with its words.
        words.copy_from_slice(unsafe { slot::<u64>(r, 0, k, words.len()) });
        if agreed(words) && size_of::<T>() != 0 {
            // SAFETY: process 0 found the same words agreed, so wrote its `n` elements (the
            // agreed call's) after them.
            let data = unsafe { std::slice::from_raw_parts(r.slot(0, k).add(off).cast(), n) };
            buf.copy_from_slice(data);
        }
    }
    r.leave(k);
    Ok(())
}

/// `buf` (holding this process's operand) := x₀ ⊙ x₁ ⊙ … ⊙ x_{P−1} from `x(q)`, by the same
/// steps on every process, so with the same bits: ((x₀ ⊙ x₁) ⊙ x₂) ⊙ …. Process 1 starts with
/// x₀ ⊙ its own operand in place (`fold_left`), the others from a copy of x₀.
fn fold_in_order<'x, T: Copy + 'x>(
    r: &Rounds<'_>,
    buf: &mut [T],
    op: &dyn Op<T>,
    x: impl Fn(usize) -> &'x [T],
) {
    let me = r.me();
    let from = match me {
        0 => 1,
        1 => {
            op.fold_left(x(0), buf);
            2
        }
        _ => {
            buf.copy_from_slice(x(0));
            1
        }
    };
    for q in from..r.size() {
        op.fold_right(buf, x(q));
    }
}

/// `buf` (holding this process's operand, x_me) := x₀ ⊙ (… ⊙ (x_{me−1} ⊙ x_me)) ⊙ x_{me+1} ⊙ …
/// ⊙ x_{P−1} from `x(q)`: the grouping of the linear reduce to this process
/// (`algorithms::reduce::linear`), so that a reduce through the node and a linear one over MPI
/// give the same bits; no copy.
fn fold_around<'x, T: Copy + 'x>(
    r: &Rounds<'_>,
    buf: &mut [T],
    op: &dyn Op<T>,
    x: impl Fn(usize) -> &'x [T],
) {
    let me = r.me();
    for q in (0..me).rev() {
        op.fold_left(x(q), buf);
    }
    for q in me + 1..r.size() {
        op.fold_right(buf, x(q));
    }
}

/// `buf` := x₀ ⊙ x₁ ⊙ … over the processes' `buf`s (with `to_all`: on every process; else on
/// `root` only, the others' `buf` unchanged).
fn reduce_rounds<T: Copy>(
    r: &Rounds<'_>,
    buf: &mut [T],
    op: &dyn Op<T>,
    root: Option<usize>,
    watch: Watch<'_>,
) -> Result<(), Halt> {
    if size_of::<T>() == 0 {
        return Ok(());
    }
    let me = r.me();
    let computes = root.is_none_or(|q| q == me);
    for chunk in buf.chunks_mut(per_round::<T>(r)) {
        let k = r.begin(watch)?;
        copy_in(r, k, chunk);
        r.arrive(k);
        if computes {
            r.wait_arrived(k, None, watch)?;
            let n = chunk.len();
            // SAFETY: every process arrived at round `k` with its chunk of `n` elements.
            let x = |q: usize| unsafe { slot::<T>(r, q, k, n) };
            match root {
                None => fold_in_order(r, chunk, op, x),
                Some(_) => fold_around(r, chunk, op, x),
            }
        }
        r.leave(k);
    }
    Ok(())
}

/// Allreduce over the node's processes, in process order.
pub(crate) fn allreduce<T: Copy>(
    r: &Rounds<'_>,
    buf: &mut [T],
    op: &dyn Op<T>,
    watch: Watch<'_>,
) -> Result<(), Halt> {
    reduce_rounds(r, buf, op, None, watch)
}

/// Reduce to process `root`, in process order; the others' `buf` is left as it was.
pub(crate) fn reduce<T: Copy>(
    r: &Rounds<'_>,
    buf: &mut [T],
    op: &dyn Op<T>,
    root: usize,
    watch: Watch<'_>,
) -> Result<(), Halt> {
    reduce_rounds(r, buf, op, Some(root), watch)
}

/// Broadcast of `root`'s `buf`.
pub(crate) fn broadcast<T: Copy>(
    r: &Rounds<'_>,
    buf: &mut [T],
    root: usize,
    watch: Watch<'_>,
) -> Result<(), Halt> {
    if size_of::<T>() == 0 {
        return Ok(());
    }
    for chunk in buf.chunks_mut(per_round::<T>(r)) {
        let k = r.begin(watch)?;
        if r.me() == root {
            copy_in(r, k, chunk);
            r.arrive(k);
        } else {
            r.wait_arrived(k, Some(root), watch)?;
            // SAFETY: the root arrived at round `k` with this chunk.
            chunk.copy_from_slice(unsafe { slot::<T>(r, root, k, chunk.len()) });
        }
        r.leave(k);
    }
    Ok(())
}

/// Allgather: process q's `send` lands at `recv[q·n..(q + 1)·n]` on every process (`n` =
/// `send.len()`, the same everywhere; `recv` holds `P · n`).
pub(crate) fn allgather<T: Copy>(
    r: &Rounds<'_>,
    send: &[T],
    recv: &mut [T],
    watch: Watch<'_>,
) -> Result<(), Halt> {
    let n = send.len();
    debug_assert_eq!(recv.len(), n * r.size());
    if size_of::<T>() == 0 {
        return Ok(());
    }
    let step = per_round::<T>(r);
    for start in (0..n).step_by(step.max(1)) {
        let len = step.min(n - start);
        let k = r.begin(watch)?;
        copy_in(r, k, &send[start..start + len]);
        r.arrive(k);
        r.wait_arrived(k, None, watch)?;
        for q in 0..r.size() {
            // SAFETY: every process arrived at round `k` with its `len` elements.
            let got = unsafe { slot::<T>(r, q, k, len) };
            recv[q * n + start..q * n + start + len].copy_from_slice(got);
        }
        r.leave(k);
    }
    Ok(())
}

pub(crate) mod single;
#[cfg(all(test, not(loom)))]
mod tests;
