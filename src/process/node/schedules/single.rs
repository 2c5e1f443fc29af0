//! The node's allreduce with one copy, where the kernel lets a process read another's memory
//! (cross-memory attach: `process::node::cma`): no vector goes through the segment, only each
//! process's address does. In three rounds:
//!
//! 1. every process publishes where its `buf` is;
//! 2. process q reduces its share of the elements (the q-th of P near-equal blocks), reading
//!    the others' operands for it where they are, a piece at a time, and leaves the result in
//!    its own `buf`; once every process has arrived, it reads every other share's result from
//!    that process's `buf` into its own;
//! 3. once every process has arrived here (all reads done), each may return and touch its
//!    `buf` again.
//!
//! Each element is combined by one process instead of by all (the copy-in/copy-out rounds'
//! `fold_in_order`), from the same operands in the same grouping, ((x₀ ⊙ x₁) ⊙ x₂) ⊙ …, so the
//! bits are the same as there: a process's own operand comes in as `x_me` (`fold_left` of the
//! prefix), exactly where the rounds put it. The design is XHC's and the threads' direct
//! allreduce's (read the others' buffers in place, reduce a share, gather the shares) over
//! `process_vm_readv` instead of one address space.

use super::{copy_in, words_of_all, Watch};
use crate::error::Error;
use crate::op::Op;
use crate::process::node::{Halt, Rounds};
use std::mem::size_of;

/// Reads process q's bytes at an address of its own into a buffer here.
pub(crate) type Read<'r> = &'r dyn Fn(usize, u64, &mut [u8]) -> Result<(), Error>;

/// Bytes of the pieces a share is read and combined in (two of them stay in a core's cache).
const PIECE_BYTES: usize = 32 << 10;

/// Elements `lo..hi` of process `q`'s share of `n` among `p`.
fn share(n: usize, p: usize, q: usize) -> std::ops::Range<usize> {
    n * q / p..n * (q + 1) / p
}

/// `v` as its bytes, for the kernel to write.
///
/// # Safety
/// Whatever is written there must be valid `T`s: copies of `T`s of another process running
/// the same call (agreed on `T` by the check).
unsafe fn bytes_mut<T>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: the same memory, as bytes; per the contract for what is written.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}

/// Allreduce of `buf` over the node's processes with one copy (module docs): `read` reaches
/// the other processes' memory. Every process must call it with the same length.
pub(crate) fn allreduce<T: Copy>(
    r: &Rounds<'_>,
    buf: &mut [T],
    op: &dyn Op<T>,
    read: Read<'_>,
    watch: Watch<'_>,
) -> Result<(), Halt> {
    let (n, p, me) = (buf.len(), r.size(), r.me());
    if n == 0 || p == 1 || size_of::<T>() == 0 {
        return Ok(());
    }
    let size = size_of::<T>() as u64;
    // Round 1: where every process's vector is.
    let k = r.begin(watch)?;
    copy_in(r, k, &[buf.as_ptr() as u64]);
    r.arrive(k);
    r.wait_arrived(k, None, watch)?;
    // SAFETY: every process arrived at round `k` with its one word.
    let at = unsafe { words_of_all(r, k, 1) };
    r.leave(k);
    // Process q's elements from `start` into `into`.
    let fetch = |q: usize, start: usize, into: &mut [T]| {
        // SAFETY: the bytes are process q's elements of type `T` (the agreed call's).
        let bytes = unsafe { bytes_mut(into) };
        read(q, at[q] + start as u64 * size, bytes).map_err(Halt::By)
    };
    // This process's share, piece by piece; the others read other elements of `buf`
    // meanwhile, which this process does not write until round 2.
    let mine = share(n, p, me);
    let piece = (PIECE_BYTES / size_of::<T>()).clamp(1, mine.len().max(1));
    let mut acc = buf[..piece.min(n)].to_vec();
    let mut inc = acc.clone();
    for start in mine.clone().step_by(piece) {
        let end = (start + piece).min(mine.end);
        let (acc, inc) = (&mut acc[..end - start], &mut inc[..end - start]);
        let own = &mut buf[start..end];
        if me > 0 {
            fetch(0, start, acc)?;
            for q in 1..me {
                fetch(q, start, inc)?;
                op.fold_right(acc, inc);
            }
            op.fold_left(acc, own);
        }
        for q in me + 1..p {
            fetch(q, start, inc)?;
            op.fold_right(own, inc);
        }
    }
    // Round 2: every share is reduced; read the others' into place.
    let k = r.begin(watch)?;
    r.arrive(k);
    r.wait_arrived(k, None, watch)?;
    for q in (0..p).filter(|&q| q != me) {
        let theirs = share(n, p, q);
        fetch(q, theirs.start, &mut buf[theirs])?;
    }
    r.leave(k);
    // Round 3: no process reads this one's `buf` any more.
    let k = r.begin(watch)?;
    r.arrive(k);
    r.wait_arrived(k, None, watch)?;
    r.leave(k);
    Ok(())
}
