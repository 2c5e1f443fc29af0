//! The scatter–allgather broadcast of van de Geijn: about 2βm for long vectors, whatever p.
//!
//! From Barnett, Gupta, Payne, Shuler, van de Geijn and Watts, "Interprocessor Collective
//! Communication Library (InterCom)" (SHPCC 1994), the long-vector broadcast built from a
//! scatter and an allgather (the "van de Geijn" broadcast): the root cuts the vector into p
//! nearly equal pieces, scatters them (piece j to relative rank j), and the ranks then
//! allgather the pieces. The binomial tree moves the whole vector ⌈log₂ p⌉ times along its
//! longest path; here every rank receives at most about m in the scatter and (p − 1)m/p in
//! the allgather.
//!
//! **Pieces.** Relative rank v = (r − root) mod p owns piece v: elements
//! [`piece_start`]`(v) .. piece_start(v + 1)`, the first n mod p pieces one element longer
//! than the others (pieces are empty when n < p).
//!
//! **Scatter** (binomial, as the binomial broadcast's tree): relative rank v receives from
//! its parent the pieces of its subtree `v .. end(v)`, one contiguous run of elements, and
//! sends each child c the pieces `c .. end(c)`, largest subtree first.
//!
//! **Allgather** (ring): in step s = 0 … p − 2, relative rank v sends piece (v − s) mod p to
//! v + 1 and receives piece (v − s − 1) mod p from v − 1. After p − 1 steps every rank has
//! every piece. The root has them all from the start, so the edge p − 1 → 0 is left out: the
//! root only sends and its buffer is only read, the last rank only receives, and the ring
//! becomes a chain, in which a `sendrecv` (send posted before the receive is waited for)
//! cannot deadlock.
//!
//! Every message of both phases is sent even when empty, so a rank whose length differs
//! meets a mismatch somewhere, and its failure stops the whole run.

use crate::algorithms::binomial_tree::{absolute, children, parent, relative, subtree_end};
use crate::algorithms::blocks::{block_start as piece_start, split_pair};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;

/// Scatter–allgather broadcast of `buf` from `root`.
pub(super) fn scatter_allgather<Tr: Transport, T: Elem>(
    t: &Tr,
    buf: &mut [T],
    root: usize,
    tag: Tag,
) -> Result<()> {
    let p = t.size();
    if p <= 1 {
        return Ok(());
    }
    let n = buf.len();
    let v = relative(t.rank(), root, p);
    let pieces = |a: usize, b: usize| piece_start(n, p, a)..piece_start(n, p, b);

    // Scatter: this rank's subtree's pieces from the parent, then the children's on.
    if let Some(q) = parent(v) {
        let mine = pieces(v, subtree_end(v, p));
        t.recv(absolute(q, root, p), tag, &mut buf[mine])?;
    }
    for c in children(v, p).rev() {
        let theirs = pieces(c, subtree_end(c, p));
        t.send(absolute(c, root, p), tag, &buf[theirs])?;
    }

    // Ring allgather over the relative ranks, without the edge into the root.
    let (next, prev) = (absolute(v + 1, root, p), absolute(v + p - 1, root, p));
    for s in 0..p - 1 {
        let out = (v + p - s) % p;
        let inc = (v + 2 * p - s - 1) % p;
        let (send, recv) = split_pair(buf, pieces(out, out + 1), pieces(inc, inc + 1));
        match v {
            0 => t.send(next, tag, send)?,
            _ if v == p - 1 => t.recv(prev, tag, recv)?,
            _ => t.sendrecv(next, send, prev, recv, tag)?,
        }
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::piece_start;

    /// The pieces tile the vector and differ in length by at most one, longer ones first.
    #[test]
    fn pieces_tile_the_vector() {
        for n in 0..60 {
            for parts in 1..20 {
                assert_eq!(piece_start(n, parts, 0), 0);
                assert_eq!(piece_start(n, parts, parts), n);
                let lens: Vec<usize> = (0..parts)
                    .map(|j| piece_start(n, parts, j + 1) - piece_start(n, parts, j))
                    .collect();
                assert!(lens.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
            }
        }
    }
}
