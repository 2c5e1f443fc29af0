//! Bruck's all-to-all (Bruck, Ho, Kipnis, Upfal and Weathersby, "Efficient algorithms for
//! all-to-all communications in multiport message-passing systems", IEEE TPDS 8(11), 1997:
//! the index algorithm with radix 2), for any p.
//!
//! Three phases, on a scratch copy `tmp` of p blocks:
//!
//! 1. **Rotation.** Rank r rotates its send buffer up by r blocks: `tmp` block j is send block
//!    (r + j) mod p, the block for the rank j places ahead ([`rotated`]).
//! 2. **Rounds.** For k = 0 … ⌈log₂ p⌉ − 1 (distance d = 2ᵏ), rank r sends to r + d and
//!    receives from r − d (mod p) the blocks whose index j has bit k set ([`moved`]), packed
//!    into one message and unpacked into the same indices. A block at index j thus travels
//!    forward by the sum of the bits of j, that is by j ranks, and keeps its index: once every
//!    bit is done, `tmp` block j on rank r is the block rank (r − j) mod p sent to r.
//! 3. **Inverse rotation.** Receive block i (from rank i) is `tmp` block (r − i) mod p
//!    ([`source`]): the paper's inverse rotation with the reversal of the block order, in
//!    one pass.
//!
//! ⌈log₂ p⌉ messages per rank instead of p − 1, each of about p/2 blocks, so each block is
//! sent about (log₂ p)/2 times and copied twice more locally: worth it while blocks are small
//! and the per-message cost dominates (MPICH uses it for short messages, Thakur, Rabenseifner
//! and Gropp 2005). Every round's message is sent even when it is empty (n = 0).
//!
//! Besides `tmp`, the packing buffer is the only allocation: each round's incoming message
//! lands in the front of `recv`, which is free until phase 3 (a round moves at most ⌊p/2⌋
//! blocks, since at most half the indices below p have a given bit set).

use super::span;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;

/// The send block that lands at index `j` of rank `r`'s scratch buffer after the rotation.
fn rotated(p: usize, r: usize, j: usize) -> usize {
    (r + j) % p
}

/// The indices of the blocks that move in the round of distance `d` (a power of two): those
/// with bit `d` set, in increasing order.
fn moved(p: usize, d: usize) -> impl Iterator<Item = usize> {
    (0..p).filter(move |j| j & d != 0)
}

/// The scratch index that holds, after the rounds, the block rank `i` sent to rank `r`.
fn source(p: usize, r: usize, i: usize) -> usize {
    (r + p - i) % p
}

/// Bruck's all-to-all of `send` (p blocks of n elements) into `recv` (p·n; checked by the
/// caller).
pub(crate) fn bruck<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    let n = send.len() / p;
    debug_assert_eq!(recv.len(), send.len());
    let mut tmp = Vec::with_capacity(p * n);
    for j in 0..p {
        crate::copy::extend(&mut tmp, &send[span(rotated(p, r, j), n)]);
    }
    let mut pack = Vec::with_capacity(p / 2 * n);
    let mut d = 1;
    while d < p {
        pack.clear();
        for j in moved(p, d) {
            crate::copy::extend(&mut pack, &tmp[span(j, n)]);
        }
        let inc = &mut recv[..pack.len()];
        t.sendrecv((r + d) % p, &pack, (r + p - d) % p, inc, tag)?;
        for (k, j) in moved(p, d).enumerate() {
            crate::copy::copy_slice(&mut tmp[span(j, n)], &inc[span(k, n)]);
        }
        d *= 2;
    }
    for i in 0..p {
        crate::copy::copy_slice(&mut recv[span(i, n)], &tmp[span(source(p, r, i), n)]);
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The index bookkeeping, run for all ranks at once on labels (sender, receiver): every
    /// rank ends with block i from rank i, and no round moves more than ⌊p/2⌋ blocks.
    #[test]
    fn index_bookkeeping_delivers_every_block() {
        for p in 1..=70 {
            let mut tmp: Vec<Vec<(usize, usize)>> = (0..p)
                .map(|s| (0..p).map(|j| (s, rotated(p, s, j))).collect())
                .collect();
            let mut d = 1;
            while d < p {
                assert!(moved(p, d).count() <= p / 2, "p = {p}, d = {d}");
                let before = tmp.clone();
                for (r, blocks) in tmp.iter_mut().enumerate() {
                    for j in moved(p, d) {
                        blocks[j] = before[(r + p - d) % p][j];
                    }
                }
                d *= 2;
            }
            for (r, blocks) in tmp.iter().enumerate() {
                for i in 0..p {
                    assert_eq!(
                        blocks[source(p, r, i)],
                        (i, r),
                        "p = {p}, rank {r}, block {i}"
                    );
                }
            }
        }
    }
}
