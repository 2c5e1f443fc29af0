//! The binomial-tree allreduce: reduce to rank 0 along a binomial tree, then broadcast the
//! result back down the same tree; ⌈log₂ p⌉ rounds each way, any p.
//!
//! This is the "Recursive-Allreduce" of the course report on five Send/Recv allreduce
//! algorithms (`/work/shared/papers/004_051d64547ad248ed.txt`, §2.3, Algorithm 1), and the
//! binomial tree of the classic table of collectives (`001_ce9166afca5d064a.txt`, Broadcast:
//! a rank responsible for a range hands the upper half to another rank). The report walks the
//! rounds from the highest bit down (rank r ≥ 2ᵏ sends to r − 2ᵏ), which gives r a subtree of
//! scattered ranks: fine for a sum, wrong for a non-commutative op. Here the rounds go from
//! the lowest bit up, as in MPICH's binomial reduce: in round k (mask m = 2ᵏ) a rank with bit
//! k set sends its partial result to r − m and is done, and a rank with the bits up to k clear
//! receives from r + m if that rank exists. The tree is then:
//!
//! * the parent of r > 0 is r with its lowest set bit cleared ([`parent`]);
//! * the children of r are r + 2ᵏ for every 2ᵏ below r's lowest set bit (all k for the root)
//!   with r + 2ᵏ < p, received in increasing k ([`children`]);
//! * the subtree of r is the contiguous range r .. min(r + lowbit(r), p) (`subtree_end`).
//!
//! When r receives from child c = r + 2ᵏ it holds x_r ⊙ … ⊙ x_{c−1} and the child holds
//! x_c ⊙ … ⊙ x_{min(c+2ᵏ, p)−1}, the next ranks up: the child's operand goes on the right
//! (`Op::fold_right`), so rank 0 ends with x₀ ⊙ … ⊙ x_{p−1} in rank order for any associative
//! op. The child's vector is combined straight from its published memory (`recv_reduce`: one
//! copy for rendezvous messages). The broadcast sends the result to the children in the
//! reverse order, largest subtree first, so every rank ends with rank 0's bits.
//!
//! Each edge carries one message up (child → parent) and one down (parent → child), of the
//! whole vector — even an empty one, so that a rank with another length meets a mismatch.

use crate::algorithms::binomial_tree::{children, parent};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Binomial-tree allreduce of `buf` under `op` (any op: combination is in rank order).
pub(crate) fn binomial<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    // Reduce: the children's subtrees follow this rank's range in increasing order.
    for c in children(r, p) {
        t.recv_reduce(c, tag, buf, &mut |acc, inc| op.fold_right(acc, inc))?;
    }
    if let Some(q) = parent(r) {
        t.send(q, tag, buf)?;
        t.recv(q, tag, buf)?;
    }
    // Broadcast: largest subtree first.
    for c in children(r, p).rev() {
        t.send(c, tag, buf)?;
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{binomial, children};
    use crate::mailbox::Tag;
    use crate::op::{non_commutative, Sum};
    use crate::shm::testing::spmd;
    use crate::transport::shm::ShmTransport;

    const PS: [usize; 10] = [1, 2, 3, 4, 5, 7, 8, 13, 17, 33];

    #[test]
    fn non_commutative_spans_in_rank_order() {
        let span = non_commutative(|a: &(u32, u32), b: &(u32, u32)| {
            assert_eq!(a.1, b.0, "operands out of rank order");
            (a.0, b.1)
        });
        for p in PS {
            for n in [0usize, 1, 2, p - 1, 2 * p + 1, 200, 5000] {
                let out = spmd(p, |member| {
                    let r = member.rank() as u32;
                    let mut v = vec![(r, r + 1); n];
                    binomial(&ShmTransport::coll(member, "test"), &mut v, &span, Tag::P2P)
                        .map(|()| v)
                });
                for v in out {
                    assert_eq!(v.unwrap(), vec![(0, p as u32); n], "p={p} n={n}");
                }
            }
        }
    }

    /// Integer sums exactly; float sums bit-identical on every rank and equal to the
    /// tree's own order of combination, computed sequentially.
    #[test]
    fn sums_match_the_sequential_reference_on_every_rank() {
        let x = |r: usize, i: usize| ((r * 7919 + i * 104_729) % 1000) as f64 / 7.0 - 50.0;
        // The tree's order: the subtree of r is x_r, then each child's subtree on the right.
        fn tree_sum(r: usize, p: usize, i: usize, x: &dyn Fn(usize, usize) -> f64) -> f64 {
            children(r, p).fold(x(r, i), |s, c| s + tree_sum(c, p, i, x))
        }
        for p in PS {
            for n in [0usize, 1, 2, p - 1, 9, 20_000] {
                let want_u: Vec<u64> = (0..n)
                    .map(|i| (0..p).map(|r| (r * 1000 + i) as u64).sum())
                    .collect();
                let want_f: Vec<f64> = (0..n).map(|i| tree_sum(0, p, i, &x)).collect();
                let out = spmd(p, |member| {
                    let r = member.rank();
                    let mut u: Vec<u64> = (0..n).map(|i| (r * 1000 + i) as u64).collect();
                    binomial(&ShmTransport::coll(member, "test"), &mut u, &Sum, Tag::P2P)?;
                    let mut f: Vec<f64> = (0..n).map(|i| x(r, i)).collect();
                    binomial(&ShmTransport::coll(member, "test"), &mut f, &Sum, Tag::P2P)?;
                    crate::Result::Ok((u, f))
                });
                for res in out {
                    let (u, f) = res.unwrap();
                    assert_eq!(u, want_u, "p={p} n={n}");
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&f), bits(&want_f), "p={p} n={n}");
                }
            }
        }
    }

    #[test]
    fn length_mismatch_is_an_error_not_a_hang() {
        for (p, odd) in [(2usize, 1usize), (3, 2), (5, 4), (6, 0)] {
            for (n, m) in [(0usize, 1usize), (8, 16), (300, 0)] {
                let out = spmd(p, |member| {
                    let len = if member.rank() == odd { m } else { n };
                    let mut v = vec![1u64; len];
                    binomial(&ShmTransport::coll(member, "test"), &mut v, &Sum, Tag::P2P)
                });
                assert!(out.iter().all(|r| r.is_err()), "p={p}: {out:?}");
            }
        }
    }
}
