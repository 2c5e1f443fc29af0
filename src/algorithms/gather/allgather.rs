//! Allgather schedules: every rank's block of `n` elements ends up at every rank, in rank
//! order, in a buffer of p·n elements.
//!
//! **Ring** (the ring of the table of collectives, `/work/shared/papers/001_ce9166afca5d064a.txt`;
//! MPICH's `MPIR_Allgather_intra_ring`): in step s = 0 … p − 2, rank r passes block
//! (r − s) mod p to r + 1 and receives block (r − s − 1) mod p from r − 1. p − 1 steps of one
//! block each: (p − 1)·n elements in and out of every rank, the bandwidth lower bound.
//!
//! **Recursive doubling** (the butterfly; MPICH's `MPIR_Allgather_intra_recursive_doubling`,
//! which needs a power of two): in round k rank r exchanges with r xor 2ᵏ the 2ᵏ blocks it
//! holds, `r & !(2ᵏ − 1) ..` + 2ᵏ, doubling them. For any other p this uses the fold of
//! `algorithms::allreduce::recursive_doubling`: with q the largest power of two ≤ p and
//! e = p − q, rank q + i (i < e) first sends its block to rank i and waits; the q ranks then
//! run the butterfly, where rank i stands for block i and, if i < e, block q + i. A range of
//! 2ᵏ partners `b .. b + 2ᵏ` then stands for two contiguous ranges of blocks, `b .. b + 2ᵏ` and
//! `q + min(b, e) .. q + min(b + 2ᵏ, e)` (maybe empty), so each round is two exchanges (one
//! when p is a power of two).
//! Finally rank i sends the whole result to rank q + i. ⌊log₂ p⌋ rounds, plus two for the fold.
//!
//! **Bruck** (Bruck, Ho, Kipnis, Upfal, Weathersby, "Efficient algorithms for all-to-all
//! communications in multiport message-passing systems", IEEE TPDS 8(11), 1997, the
//! concatenation algorithm): rank r keeps a scratch buffer whose block j is rank (r + j) mod p's.
//! In round k (distance d = 2ᵏ) it sends its first min(d, p − d) blocks to r − d and receives
//! as many from r + d, appending them at block d; after ⌈log₂ p⌉ rounds it holds all p blocks,
//! rotated by r, and a local rotation puts them in rank order. Any p, no fold.

use super::span;
use crate::algorithms::blocks::split_pair;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;

/// Ring allgather of every rank's `send` (n elements) into `recv` (p·n).
pub(crate) fn ring<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    tag: Tag,
) -> Result<()> {
    let (p, r, n) = (t.size(), t.rank(), send.len());
    crate::copy::copy_slice(&mut recv[span(r..r + 1, n)], send);
    let (right, left) = ((r + 1) % p, (r + p - 1) % p);
    for s in 0..p.saturating_sub(1) {
        let out = (r + p - s) % p;
        let inc = (r + 2 * p - s - 1) % p;
        let (o, i) = split_pair(recv, span(out..out + 1, n), span(inc..inc + 1, n));
        t.sendrecv(right, o, left, i, tag)?;
    }
    Ok(())
}

/// Recursive-doubling allgather of every rank's `send` (n elements) into `recv` (p·n), with
/// the fold for p not a power of two.
pub(crate) fn recursive_doubling<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    tag: Tag,
) -> Result<()> {
    let (p, r, n) = (t.size(), t.rank(), send.len());
    let q = 1usize << (usize::BITS - 1 - p.leading_zeros());
    let e = p - q;
    crate::copy::copy_slice(&mut recv[span(r..r + 1, n)], send);
    if r >= q {
        // Folded out: hand the block to partner r − q, get everything back from it.
        t.send(r - q, tag, send)?;
        return t.recv(r - q, tag, recv);
    }
    if r < e {
        t.recv(q + r, tag, &mut recv[span(q + r..q + r + 1, n)])?;
    }
    // The blocks of partner range b .. b + d: the main range and its folded-in extras.
    let ranges = |b: usize, d: usize| [b..b + d, q + b.min(e)..q + (b + d).min(e)];
    let mut d = 1;
    while d < q {
        let peer = r ^ d;
        let (mine, theirs) = (ranges(r & !(d - 1), d), ranges(peer & !(d - 1), d));
        // Without folded ranks (p a power of two) the second range is always empty: skip it.
        let parts = if e == 0 { 1 } else { 2 };
        for (m, th) in mine.into_iter().zip(theirs).take(parts) {
            let (o, i) = split_pair(recv, span(m, n), span(th, n));
            t.sendrecv(peer, o, peer, i, tag)?;
        }
        d *= 2;
    }
    if r < e {
        t.send(q + r, tag, recv)?;
    }
    Ok(())
}

/// Bruck's allgather of every rank's `send` (n elements) into `recv` (p·n).
pub(crate) fn bruck<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    tag: Tag,
) -> Result<()> {
    let (p, r, n) = (t.size(), t.rank(), send.len());
    // Block j of `tmp` is rank (r + j) mod p's; the first `have` are in place.
    let mut tmp = Vec::with_capacity(p * n);
    crate::copy::extend(&mut tmp, send);
    if let Some(&x) = send.first() {
        tmp.resize(p * n, x);
    }
    let mut have = 1;
    while have < p {
        let m = have.min(p - have);
        let (to, from) = ((r + p - have) % p, (r + have) % p);
        let (o, i) = split_pair(&mut tmp, span(0..m, n), span(have..have + m, n));
        t.sendrecv(to, o, from, i, tag)?;
        have += m;
    }
    // Rotate: block j of `tmp` is block (r + j) mod p of the result.
    let head = (p - r) * n;
    crate::copy::copy_slice(&mut recv[r * n..], &tmp[..head]);
    crate::copy::copy_slice(&mut recv[..r * n], &tmp[head..]);
    Ok(())
}
