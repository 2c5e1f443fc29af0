//! Gather and scatter, linear and binomial, any p and any root.
//!
//! **Linear** (the star of the table of collectives,
//! `/work/shared/papers/001_ce9166afca5d064a.txt`): every rank sends its block straight to the
//! root, or the root sends every rank its block; p − 1 messages through the root, one round
//! each.
//!
//! **Binomial** (the binomial tree as in MPICH's `MPIR_Gather_intra_binomial` and
//! `MPIR_Scatter_intra_binomial`): on relative ranks v = (r − root) mod p, the subtree of v is
//! the contiguous range `v .. v + lowbit(v)` (cut at p), so the blocks of a subtree are
//! contiguous in relative order and travel as one message. In the gather, each rank collects
//! its children's subtrees (smallest child first, since small subtrees finish first) behind
//! its own block and sends the whole range to its parent; the scatter runs the same tree the
//! other way, largest subtree first. ⌈log₂ p⌉ rounds; each block crosses at most ⌈log₂ p⌉
//! edges. The root's buffer is in absolute order, so relative block j is absolute block
//! (j + root) mod p: the root works in a scratch buffer in relative order and copies it to or
//! from its buffer in two pieces, split where the relative order wraps past p.

use super::span;
use crate::algorithms::binomial_tree::{self as binomial, absolute, relative};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;

/// Linear gather of every rank's `send` into `recv` (p·n elements) on `root`; `recv` is not
/// used elsewhere.
pub(crate) fn gather_linear<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    root: usize,
    tag: Tag,
) -> Result<()> {
    let (p, me, n) = (t.size(), t.rank(), send.len());
    if me != root {
        return t.send(root, tag, send);
    }
    for i in 0..p {
        if i == me {
            crate::copy::copy_slice(&mut recv[span(i..i + 1, n)], send);
        } else {
            t.recv(i, tag, &mut recv[span(i..i + 1, n)])?;
        }
    }
    Ok(())
}

/// Linear scatter of `send` (p·n elements, used on `root` only) into every rank's `recv`.
pub(crate) fn scatter_linear<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    root: usize,
    tag: Tag,
) -> Result<()> {
    let (p, me, n) = (t.size(), t.rank(), recv.len());
    if me != root {
        return t.recv(root, tag, recv);
    }
    for i in 0..p {
        if i == me {
            crate::copy::copy_slice(&mut *recv, &send[span(i..i + 1, n)]);
        } else {
            t.send(i, tag, &send[span(i..i + 1, n)])?;
        }
    }
    Ok(())
}

/// Copies `rel`, p blocks of `n` in relative order from `root`, into `abs` in absolute order.
fn rotate_out<T: Copy>(rel: &[T], abs: &mut [T], root: usize, p: usize, n: usize) {
    let head = (p - root) * n;
    crate::copy::copy_slice(&mut abs[root * n..], &rel[..head]);
    crate::copy::copy_slice(&mut abs[..root * n], &rel[head..]);
}

/// Binomial-tree gather of every rank's `send` into `recv` (p·n elements) on `root`.
pub(crate) fn gather_binomial<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    root: usize,
    tag: Tag,
) -> Result<()> {
    let (p, n) = (t.size(), send.len());
    let v = relative(t.rank(), root, p);
    let end = binomial::subtree_end(v, p);
    let parent = binomial::parent(v).map(|q| absolute(q, root, p));
    if end == v + 1 {
        // A leaf (or the root of one rank): its subtree is its own block.
        return match parent {
            Some(q) => t.send(q, tag, send),
            None => {
                crate::copy::copy_slice(&mut *recv, send);
                Ok(())
            }
        };
    }
    // Blocks v..end in relative order, own block first (the rest is overwritten; it starts as
    // copies of the first element, if there is one).
    let mut tmp = Vec::with_capacity((end - v) * n);
    crate::copy::extend(&mut tmp, send);
    if let Some(&x) = send.first() {
        tmp.resize((end - v) * n, x);
    }
    for c in binomial::children(v, p) {
        let sub = binomial::subtree_end(c, p);
        t.recv(absolute(c, root, p), tag, &mut tmp[span(c - v..sub - v, n)])?;
    }
    match parent {
        Some(q) => t.send(q, tag, &tmp),
        None => {
            rotate_out(&tmp, recv, root, p, n);
            Ok(())
        }
    }
}

/// Binomial-tree scatter of `send` (p·n elements, used on `root` only) into every rank's
/// `recv`.
pub(crate) fn scatter_binomial<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    root: usize,
    tag: Tag,
) -> Result<()> {
    let (p, n) = (t.size(), recv.len());
    let v = relative(t.rank(), root, p);
    let end = binomial::subtree_end(v, p);
    let parent = binomial::parent(v).map(|q| absolute(q, root, p));
    if end == v + 1 {
        return match parent {
            Some(q) => t.recv(q, tag, recv),
            None => {
                crate::copy::copy_slice(&mut *recv, send);
                Ok(())
            }
        };
    }
    // Blocks v..end in relative order: the root's buffer rotated, or the parent's message.
    let tmp = match parent {
        None => {
            let mut tmp = Vec::with_capacity(p * n);
            crate::copy::extend(&mut tmp, &send[root * n..]);
            crate::copy::extend(&mut tmp, &send[..root * n]);
            tmp
        }
        Some(q) => {
            let mut tmp = vec![];
            if let Some(&x) = recv.first() {
                tmp.resize((end - v) * n, x);
            }
            t.recv(q, tag, &mut tmp)?;
            tmp
        }
    };
    for c in binomial::children(v, p).rev() {
        let sub = binomial::subtree_end(c, p);
        t.send(absolute(c, root, p), tag, &tmp[span(c - v..sub - v, n)])?;
    }
    crate::copy::copy_slice(&mut *recv, &tmp[..n]);
    Ok(())
}
