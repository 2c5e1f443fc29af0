//! The blocking short allreduce folded on slots (shared memory only), which is how `Linear`
//! runs a vector that fits them ([`fits`]): each rank publishes in its slot of the
//! communicator's blocking slots (`shm::calls`) the call's number and its descriptor (the call
//! check's words, `check::Call`) followed by its vector, wakes the ranks it sees asleep, waits
//! until every rank has published, compares every rank's number and descriptor with its own,
//! and folds the p vectors in rank order, x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}: `Linear`'s order, so the
//! same bits as the linear schedule and as the persistent fold.
//!
//! Why: where ranks share cores, a short allreduce costs what its ranks' sleeps and wake-ups
//! cost. The linear schedule over the mailboxes waits twice per rank (for the call check's
//! message and for the result) and rank 0 for each of the others in turn; this waits once, for
//! no rank in particular, and its call check travels in the same cache lines as the data.
//! Figures: docs/results/2026-11-29-folded-short-allreduce.md.
//!
//! Agreement: every rank reads every rank's descriptor, so if any two differ every rank finds
//! a difference and fails the run before it reads a vector. A rank whose call of the same
//! number is not this fold (another collective, or an allreduce that does not fold) never
//! publishes; the waiting ranks learn of its call from `shm::calls` and fail the run, which
//! ends that rank's own wait.
//!
//! The slots' double buffering (`shm::slots`) needs a rank's folds numbered 1, 2, … with no
//! gap: the member counts them apart from its other calls (`Member::next_fold`).

use super::{combine_at, pending};
use crate::algorithms::check::{self, Call, WORDS};
use crate::error::{Error, Result};
use crate::mailbox::Tag;
use crate::op::Op;
use crate::shm::calls::CALL_BYTES;
use crate::shm::Member;
use std::cell::Cell;
use std::mem::{align_of, size_of, size_of_val};

/// Words before the vector in a contribution: the call's number, then its descriptor.
const HEAD: usize = 1 + WORDS;

/// Whether a vector of `len` elements of `T` fits the slots after the call's words.
pub(crate) fn fits<T>(len: usize) -> bool {
    align_of::<T>() <= 8 && len.saturating_mul(size_of::<T>()) <= CALL_BYTES - 8 * HEAD
}

/// Rank `member`'s part of the folded allreduce `call` numbered `fold` (`Member::next_fold`'s
/// tag and fold number): `send` (else `buf`) in, x₀ ⊙ … ⊙ x_{p−1} in `buf`. The caller has
/// checked that the vector [`fits`] and, out of place, that `send` is as long as `buf`.
pub(crate) fn allreduce<T: Copy, O: Op<T> + ?Sized>(
    member: &Member,
    fold: (Tag, u64),
    call: &Call,
    send: Option<&[T]>,
    buf: &mut [T],
    op: &O,
) -> Result<()> {
    let (tag, k) = fold;
    let (p, me) = (member.size(), member.rank());
    debug_assert!(fits::<T>(buf.len()) && send.is_none_or(|s| s.len() == buf.len()));
    if p == 1 {
        if let Some(send) = send {
            crate::copy::copy_slice(buf, send);
        }
        return Ok(());
    }
    let words = call.words();
    let mut head = [tag.seq; HEAD];
    head[1..].copy_from_slice(&words);
    let input = send.map_or(buf.as_ptr(), <[T]>::as_ptr);
    let calls = &member.shared().calls;
    let slots = &calls.slots;
    // SAFETY: this rank publishes into its own slot only; the head and the vector fit the
    // half (`fits`) and are readable for their lengths (`send`, when given, is as long as
    // `buf`); folds are numbered without gaps per communicator, and this rank's fold k − 1
    // returned only after every rank had published it.
    unsafe {
        slots.publish(
            me,
            k,
            &[
                (head.as_ptr().cast(), size_of_val(&head)),
                (input.cast(), size_of_val(buf)),
            ],
        )
    };
    // Wake-ups as the persistent start's (`super::start`): the sleepers now, everyone with a
    // fence once this rank has what it waits for.
    for q in (0..p).filter(|&q| q != me) {
        member.unpark_sleeping(q);
    }
    // A rank that has not published, seen entering this call number or a later one through
    // the mailboxes (`shm::calls`: its word read before its slot), and its word.
    let elsewhere = Cell::new(None);
    let waited = member.wait_for("allreduce", &member.wait_start(), || {
        let first = pending(slots, p, k)?;
        for q in first..p {
            if let Some(word) = calls.entered_since(q, tag.seq) {
                if !slots.reached(q, k) {
                    elsewhere.set(Some((q, word)));
                    return None;
                }
            }
        }
        Some(first)
    });
    member.unpark_others();
    waited?;
    let numbered =
        |d: String, seq: u64| format!("{d} (collective call {} on this communicator)", seq + 1);
    if let Some((q, word)) = elsewhere.get() {
        return Err(member.fail(Error::Mismatch {
            rank: me,
            peer: q,
            op: call.op,
            expected: numbered(call.describe_own(), tag.seq),
            found: Tag::describe(word),
        }));
    }
    for q in 0..p {
        // SAFETY: every rank has published fold k (the wait ended without `elsewhere`), and
        // this rank publishes k + 1 only after it returns; the head is the contribution's first
        // `HEAD` words, aligned to 8.
        let theirs = unsafe { slots.read(q, k, |x| x.cast::<[u64; HEAD]>().read()) };
        let their_words: [u64; WORDS] = theirs[1..].try_into().expect("HEAD is 1 + WORDS");
        let e = if theirs[0] != tag.seq {
            Some(Error::Mismatch {
                rank: me,
                peer: q,
                op: call.op,
                expected: numbered(call.describe_own(), tag.seq),
                found: numbered(call.describe(&their_words, false), theirs[0]),
            })
        } else {
            check::difference(call, &words, &their_words, me, q)
        };
        if let Some(e) = e {
            return Err(member.fail(e));
        }
    }
    // SAFETY: every rank has published fold k with this descriptor (so `buf.len()` elements
    // of `T` after the head, which is 8 · HEAD bytes), and this rank publishes k + 1 only after
    // it returns.
    unsafe { combine_at(slots, 0..p, k, size_of_val(&head), buf, op) };
    Ok(())
}
