//! The ring reduce-scatter: p − 1 steps, each passing one partially reduced block to the
//! right neighbour.
//!
//! This is the first half of the ring allreduce (Patarasuk and Yuan, "Bandwidth optimal
//! all-reduce algorithms for clusters of workstations", JPDC 69(2), 2009; the course report's
//! Ring-Allreduce, `/work/shared/papers/004_051d64547ad248ed.txt`, §2.5, and
//! `algorithms::allreduce::ring`), with the blocks of `MPI_Reduce_scatter_block` as its
//! chunks. In step s = 0, …, p − 2 rank r sends its partial of block (r − 1 − s) mod p to
//! r + 1 and receives the partial of block (r − 2 − s) mod p from r − 1, into which it
//! combines its own input. Block b thus starts at rank b + 1, travels b + 1, b + 2, …, and
//! is complete when it reaches its owner b in the last step: (p − 1)(α + βn) + (p − 1)nγ for
//! blocks of n elements, every link busy in every step.
//!
//! **Commutative ops** run that plain ring: the incoming partial goes on the left, so block b
//! is the left fold of x_{b+1}, x_{b+2}, …, x_{p−1}, x₀, …, x_b, a rotation of the rank
//! order.
//!
//! **Non-commutative ops.** The path of block b (b < p − 1) wraps from rank p − 1 to rank 0,
//! so its operands arrive rotated. Such a partial travels as two from the wrap on: the
//! suffix S = x_{b+1} ⊙ … ⊙ x_{p−1}, complete when it leaves rank p − 1 and then carried
//! along unchanged, and the prefix P = x₀ ⊙ … ⊙ x_r, which rank 0 starts with its own input
//! and each rank r < b extends on the right (`P ⊙ x_r`). The owner computes
//! (P ⊙ x_b) ⊙ S, the rank order. Before the wrap a partial is a suffix alone, grown on the
//! right (`S ⊙ x_r`); block p − 1 never wraps (it starts at rank 0: a prefix alone), and
//! block 0 reaches its owner just after the wrap (x₀ ⊙ S). The messages after the wrap are
//! 2n elements instead of n: about half of them, so about 1.5 times the commutative ring's
//! traffic, in as many steps. The owner reads the two partials straight from the sender's
//! message into its output, with no intermediate copy.
//!
//! Each block's result is computed on one rank only (its owner), so there is nothing to keep
//! identical between ranks. The schedule ends with the closing barrier (`super::close`).

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Ring reduce-scatter of every rank's `send` (p blocks of `recv.len()` elements) under
/// `op`: block `t.rank()` of the rank-order reduction lands in `recv`.
pub(crate) fn ring<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    op: &O,
    tag: Tag,
) -> Result<()> {
    let (p, r, n) = (t.size(), t.rank(), recv.len());
    debug_assert_eq!(send.len(), p * n);
    if p == 1 {
        crate::copy::copy_slice(&mut *recv, send);
        return Ok(());
    }
    let ordered = !op.is_commutative();
    let (right, left) = ((r + 1) % p, (r + p - 1) % p);
    let own = |b: usize| &send[b * n..(b + 1) * n];
    let len = |b: usize, holder: usize| message_len(ordered, p, n, b, holder);
    // Two buffers of the widest message, alternating: the partial being sent (`cur`) and the
    // one being received (`nxt`). Their initial contents are never read (p ≥ 2, so `send`
    // has at least 2n elements).
    let width = if ordered { 2 * n } else { n };
    let mut cur: Vec<T> = crate::copy::to_vec(&send[..width]);
    let mut nxt: Vec<T> = cur.clone();
    for s in 0..p - 1 {
        // Indices mod p without underflow (s ≤ p − 2).
        let b_out = (r + 2 * p - 1 - s) % p;
        let b_in = (r + 2 * p - 2 - s) % p;
        // In step 0 the partial is this rank's own input (it starts block r − 1's path).
        let out: &[T] = if s == 0 {
            own(b_out)
        } else {
            &cur[..len(b_out, r)]
        };
        let wide = len(b_in, left) == 2 * n;
        if s == p - 2 {
            // The last step: the incoming block is this rank's own, b_in == r.
            crate::copy::copy_slice(&mut *recv, own(r));
            if !ordered {
                t.sendrecv_reduce(right, out, left, recv, tag, &mut |acc, inc| {
                    op.fold_left(inc, acc)
                })?;
            } else if wide {
                // [P, S] from rank r − 1: (P ⊙ x_r) ⊙ S, read from the message into `recv`.
                t.sendrecv_reduce(right, out, left, &mut nxt[..2 * n], tag, &mut |_, inc| {
                    debug_assert_eq!(inc.len(), 2 * n);
                    let (prefix, suffix) = inc.split_at(n);
                    op.fold_left(prefix, recv);
                    op.fold_right(recv, suffix);
                })?;
            } else if r == 0 {
                // The complete suffix from rank p − 1: x₀ ⊙ S.
                t.sendrecv_reduce(right, out, left, recv, tag, &mut |acc, inc| {
                    op.fold_right(acc, inc)
                })?;
            } else {
                // r = p − 1: the prefix x₀ ⊙ … ⊙ x_{p−2} from rank p − 2.
                t.sendrecv_reduce(right, out, left, recv, tag, &mut |acc, inc| {
                    op.fold_left(inc, acc)
                })?;
            }
            break;
        }
        crate::copy::copy_slice(&mut nxt[..n], own(b_in));
        if !ordered || r > b_in {
            // A suffix (or the commutative partial) grows on the right: S ⊙ x_r.
            t.sendrecv_reduce(right, out, left, &mut nxt[..n], tag, &mut |acc, inc| {
                op.fold_left(inc, acc)
            })?;
        } else if r == 0 {
            // The wrap: the complete suffix arrives and travels on behind the new prefix x₀.
            t.sendrecv(right, out, left, &mut nxt[n..2 * n], tag)?;
        } else if wide {
            // [P, S]: the prefix grows on the right (P ⊙ x_r), the suffix is carried along.
            t.sendrecv_reduce(right, out, left, &mut nxt[..2 * n], tag, &mut |acc, inc| {
                debug_assert_eq!(inc.len(), 2 * n);
                let (acc_prefix, acc_suffix) = acc.split_at_mut(n);
                let (prefix, suffix) = inc.split_at(n);
                op.fold_left(prefix, acc_prefix);
                crate::copy::copy_slice(&mut *acc_suffix, suffix);
            })?;
        } else {
            // Block p − 1: a prefix alone, P ⊙ x_r.
            t.sendrecv_reduce(right, out, left, &mut nxt[..n], tag, &mut |acc, inc| {
                op.fold_left(inc, acc)
            })?;
        }
        std::mem::swap(&mut cur, &mut nxt);
    }
    super::close(t, tag)
}

/// Elements of the message that carries block `b`'s partial from rank `holder` (which has
/// combined its own input into it; `holder ≠ b`): n, or 2n for a partial of the ordered ring
/// that has wrapped and carries a prefix and a suffix (module docs).
fn message_len(ordered: bool, p: usize, n: usize, b: usize, holder: usize) -> usize {
    if ordered && holder < b && b < p - 1 {
        2 * n
    } else {
        n
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::message_len;

    /// The ordered ring's bookkeeping, played sequentially on spans of ranks: every partial is
    /// the prefix and suffix the module docs describe, and every owner ends with 0..p.
    #[test]
    fn partials_are_prefixes_and_suffixes() {
        for p in 2..40 {
            for b in 0..p {
                // (prefix, suffix) spans of ranks, as half-open ranges; None when absent.
                type Span = Option<(usize, usize)>;
                let start = (b + 1) % p;
                let mut state: (Span, Span) = if start == 0 {
                    (Some((0, 1)), None)
                } else {
                    (None, Some((start, start + 1)))
                };
                let mut holder = start;
                loop {
                    let len = usize::from(state.0.is_some()) + usize::from(state.1.is_some());
                    assert_eq!(message_len(true, p, 1, b, holder), len, "p={p} b={b}");
                    holder = (holder + 1) % p;
                    if holder == b {
                        break;
                    }
                    state = match state {
                        (None, Some((lo, hi))) if holder == hi => (None, Some((lo, hi + 1))),
                        (None, Some((lo, hi))) if holder == 0 => {
                            assert_eq!(hi, p);
                            (Some((0, 1)), Some((lo, hi)))
                        }
                        (Some((0, hi)), s) if holder == hi => (Some((0, hi + 1)), s),
                        other => panic!("p={p} b={b} holder={holder}: {other:?}"),
                    };
                }
                // The owner's operands: x₀ ⊙ S, P ⊙ x_{p−1}, or P ⊙ x_b ⊙ S; all of 0..p.
                match state {
                    (None, Some(s)) => assert_eq!((b, s), (0, (1, p))),
                    (Some(pre), None) => assert_eq!((b, pre), (p - 1, (0, p - 1))),
                    (Some(pre), Some(s)) => assert_eq!((pre, s), ((0, b), (b + 1, p))),
                    other => panic!("p={p} b={b}: {other:?}"),
                }
            }
        }
    }
}
