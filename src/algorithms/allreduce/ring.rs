//! The ring allreduce: a ring reduce-scatter followed by a ring allgather, segmented.
//!
//! The vector is cut into p chunks of nearly equal size ([`chunk`]). In the reduce-scatter,
//! step s = 0, …, p−2, rank r sends its partial result of chunk (r − s) mod p to r + 1 and
//! combines the chunk (r − s − 1) mod p that arrives from r − 1 into its own; afterwards rank r
//! holds the complete chunk (r + 1) mod p. In the allgather, step s = 0, …, p−2, rank r
//! passes chunk (r + 1 − s) mod p on to r + 1 and stores the chunk (r − s) mod p that arrives
//! from r − 1. This is the Ring-Allreduce of the course report on five Send/Recv allreduce
//! algorithms (`/work/shared/papers/004_051d64547ad248ed.txt`, §2.5, after Gibiansky 2017 and
//! Horovod), whose cost it gives as 2(p−1)(α + β·n/p) + ((p−1)/p)·n·γ: every rank sends and
//! receives 2(p−1)/p of the vector and combines (p−1)/p of it, with every link busy in every
//! step. Its rounding error grows like O(p·u) (p−1 additions in a row per element), as for
//! the star and the chain, against O(log p · u) for the butterflies (the report's §3).
//!
//! Each chunk transfer can be cut further into pieces of at most `block` elements
//! ([`piece`]), as the report suggests for long vectors; each piece is one message that the
//! transport reads and combines straight from the sender's memory. The pieces do not
//! pipeline: a rank exchanges piece i with both neighbours before piece i + 1, and step s + 1
//! starts once step s has ended, so k pieces per chunk make 2(p − 1)·k steps (the simulator's
//! count, `tests/sim.rs`) and only add start-up costs. `Block::Auto` therefore sends each
//! chunk whole (`select::Algorithm::block_elements` gives the argument and measurements).
//!
//! Chunk c is combined in the order x_c, x_{c+1}, …, x_{c−1} (indices mod p): a rotation of
//! the rank order, so the ring is for commutative ops only (`comm::allreduce` refuses the
//! others before calling it). Each chunk's final value is computed on exactly one rank and
//! the allgather copies those bits, so all ranks end with bit-identical results.
//!
//! Every rank must cut the vector the same way, or a rank would read one step's piece as
//! another's: the schedule relies on `comm::allreduce` having checked, before it starts, that
//! all ranks pass the same length (and algorithm and element type).

use super::elements;
use crate::algorithms::blocks::split_pair;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;
use std::ops::Range;

/// Ring allreduce of `buf` under the commutative `op`, chunk transfers cut into pieces of at
/// most `block` elements.
pub(crate) fn ring<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    block: usize,
    tag: Tag,
) -> Result<()> {
    debug_assert!(op.is_commutative(), "the ring reorders operands");
    let (p, r, n) = (t.size(), t.rank(), buf.len());
    if p == 1 {
        return Ok(());
    }
    // `(r + p − k) mod p` without underflow.
    let back = |k: usize| (r + p - k % p) % p;
    for s in 0..p - 1 {
        let (out, inc) = (chunk(n, p, back(s)), chunk(n, p, back(s + 1)));
        transfer(t, buf, out, inc, block, tag, Some(op))?;
    }
    for s in 0..p - 1 {
        let (out, inc) = (chunk(n, p, (r + 1 + p - s) % p), chunk(n, p, back(s)));
        transfer(t, buf, out, inc, block, tag, None::<&O>)?;
    }
    Ok(())
}

/// One ring step: sends `buf[out]` to the right neighbour while receiving the left
/// neighbour's `buf[inc]`, piece by piece, and combines it into `buf[inc]` (`op` given, the
/// incoming piece as the left operand) or stores it there. `out` and `inc` must not overlap.
fn transfer<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    out: Range<usize>,
    inc: Range<usize>,
    block: usize,
    tag: Tag,
    op: Option<&O>,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    let (right, left) = ((r + 1) % p, (r + p - 1) % p);
    let mut combine = |acc: &mut [T], incoming: &[T]| {
        if let Some(op) = op {
            op.fold_left(incoming, acc);
        }
    };
    // The two chunks may differ in length by one element, and so in piece count: the left
    // neighbour cuts `inc` exactly as this rank does, and the right one `out`.
    let (k_out, k_inc) = (pieces(out.len(), block), pieces(inc.len(), block));
    for i in 0..k_out.max(k_inc) {
        let send = (i < k_out).then(|| piece(&out, block, i));
        let recv = (i < k_inc).then(|| piece(&inc, block, i));
        match (send, recv) {
            (Some(s), Some(g)) => {
                let (data, acc) = split_pair(buf, s, g);
                match op {
                    Some(_) => t.sendrecv_reduce(right, data, left, acc, tag, &mut combine)?,
                    None => t.sendrecv(right, data, left, acc, tag)?,
                }
            }
            (Some(s), None) => t.send(right, tag, &buf[s])?,
            (None, Some(g)) => match op {
                Some(_) => t.recv_reduce(left, tag, &mut buf[g], &mut combine)?,
                None => t.recv(left, tag, &mut buf[g])?,
            },
            (None, None) => unreachable!("i < max(k_out, k_inc)"),
        }
    }
    Ok(())
}

/// Chunk `c` of `n` elements cut into `p` nearly equal chunks (the partition Rabenseifner's
/// blocks use too).
pub(crate) fn chunk(n: usize, p: usize, c: usize) -> Range<usize> {
    elements(n, p, c..c + 1)
}

/// Number of pieces of at most `block` elements a transfer of `len` elements takes: at least
/// one, so that an empty transfer is still a message.
pub(crate) fn pieces(len: usize, block: usize) -> usize {
    len.div_ceil(block.max(1)).max(1)
}

/// Piece `i` of `range`: `block` elements at a time from the start, the last piece shorter.
fn piece(range: &Range<usize>, block: usize, i: usize) -> Range<usize> {
    let block = block.max(1);
    let start = (range.start + i * block).min(range.end);
    start..(start + block).min(range.end)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::op::Sum;
    use crate::shm::testing::spmd;
    use crate::transport::shm::ShmTransport;
    use proptest::prelude::*;

    /// Pieces of 1, 3, 7 and 8192 elements on 1 to 8 ranks and counts from empty to many
    /// pieces per chunk (fewer elements than ranks, odd, chunks of unequal length, a multiple
    /// of the piece): integer sums exactly equal to the sequential sum, and float sums (of
    /// small integers, so exact in any order) equal to it and bit-identical on every rank.
    /// tests/allreduce/blocks.rs passes pieces through the public API.
    #[test]
    fn pieces_match_the_sequential_reference() {
        let x = |r: usize, i: usize| ((r * 7919 + i * 104_729) % 1000) as u64;
        for p in [1usize, 2, 3, 5, 8] {
            for block in [1usize, 3, 7, 8192] {
                for n in [0usize, 1, p - 1, p + 1, 7 * p, 7 * p + 3, 1001, 20_011] {
                    let want: Vec<u64> = (0..n).map(|i| (0..p).map(|r| x(r, i)).sum()).collect();
                    let out = spmd(p, |member| {
                        let (t, r) = (ShmTransport::coll(member, "test"), member.rank());
                        let mut u: Vec<u64> = (0..n).map(|i| x(r, i)).collect();
                        ring(&t, &mut u, &Sum, block, Tag::P2P)?;
                        let mut f: Vec<f64> = (0..n).map(|i| x(r, i) as f64 - 500.0).collect();
                        ring(&t, &mut f, &Sum, block, Tag::P2P)?;
                        crate::Result::Ok((u, f))
                    });
                    let want_f: Vec<f64> =
                        want.iter().map(|&s| s as f64 - 500.0 * p as f64).collect();
                    for res in out {
                        let (u, f) = res.unwrap();
                        assert_eq!(u, want, "p={p} n={n} block={block}");
                        assert_eq!(f, want_f, "p={p} n={n} block={block}");
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn pieces_partition_a_chunk(start in 0usize..1000, len in 0usize..3000, block in 1usize..400) {
            let range = start..start + len;
            let k = pieces(len, block);
            prop_assert!(k >= 1);
            let mut next = start;
            for i in 0..k {
                let pc = piece(&range, block, i);
                prop_assert_eq!(pc.start, next);
                prop_assert!(pc.len() <= block);
                prop_assert!(len == 0 || !pc.is_empty(), "only an empty chunk has an empty piece");
                next = pc.end;
            }
            prop_assert_eq!(next, range.end);
        }
    }
}
