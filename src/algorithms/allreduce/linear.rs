//! The linear (star) allreduce: every rank sends its vector to rank 0, which combines them in
//! rank order and sends the result back. 2(p−1) messages of the whole vector through rank 0:
//! the baseline of the course report's five algorithms, and the obviously correct one.
//!
//! `grouped` is the same star with rank 0 combining group by group: the grouping of a
//! hierarchy whose groups first reduce in rank order among themselves and whose groups' first
//! ranks then run the linear allreduce (the processes of a node through its shared memory, the
//! nodes' leaders over MPI: `process::node`), written over point-to-point alone so that a
//! request gives the hierarchy's bits.

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Linear allreduce of `buf` under `op` (any op: rank 0 combines in rank order).
pub(crate) fn linear<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    if r == 0 {
        // acc = x₀ ⊙ x₁ ⊙ … in order: each incoming vector is the right operand, read where
        // its sender published it (the linear reduce's root, at rank 0).
        crate::algorithms::reduce::combine_at_root(t, buf, op, 0, tag)?;
        for dest in 1..p {
            t.send(dest, tag, buf)?;
        }
    } else {
        t.send(0, tag, buf)?;
        t.recv(0, tag, buf)?;
    }
    Ok(())
}

/// Linear allreduce of `buf` under `op` grouped by `starts` (group g is the ranks
/// `starts[g]..starts[g + 1]`; `starts` runs from 0 to p): rank 0 folds each group's vectors
/// left to right, G_g = ((x_a ⊙ x_{a+1}) ⊙ …), and the groups' results left to right,
/// ((G₀ ⊙ G₁) ⊙ G₂) ⊙ …, then sends the result back. With one group it is [`linear`].
#[cfg(any(all(test, not(loom)), feature = "mpi"))]
pub(crate) fn grouped<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    starts: &[usize],
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    assert!(
        starts.len() >= 2 && starts[0] == 0 && starts[starts.len() - 1] == p,
        "groups that cover the ranks"
    );
    if r != 0 {
        t.send(0, tag, buf)?;
        return t.recv(0, tag, buf);
    }
    let right = &mut |acc: &mut [T], inc: &[T]| op.fold_right(acc, inc);
    for src in 1..starts[1] {
        t.recv_reduce(src, tag, buf, right)?;
    }
    if starts.len() > 2 {
        let mut part = crate::copy::to_vec(buf);
        for g in starts.windows(2).skip(1) {
            t.recv(g[0], tag, &mut part)?;
            for src in g[0] + 1..g[1] {
                t.recv_reduce(src, tag, &mut part, right)?;
            }
            op.fold_right(buf, &part);
        }
    }
    for dest in 1..p {
        t.send(dest, tag, buf)?;
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::algorithms::allreduce::testkit::span_op;
    use crate::op::Sum;
    use crate::shm::testing::spmd;
    use crate::transport::shm::ShmTransport;

    /// Groups of `p` ranks: one, all of one rank, and blocks of 2 and 3 (the last shorter).
    fn groupings(p: usize) -> Vec<Vec<usize>> {
        let blocks = |k: usize| {
            let mut s: Vec<usize> = (0..p).step_by(k).collect();
            s.push(p);
            s
        };
        vec![vec![0, p], blocks(1), blocks(2), blocks(3)]
    }

    /// The grouped sum computed sequentially.
    fn reference(xs: &[f64], starts: &[usize]) -> f64 {
        let group = |g: &[usize]| xs[g[0] + 1..g[1]].iter().fold(xs[g[0]], |a, b| a + b);
        let mut parts = starts.windows(2).map(group);
        let first = parts.next().expect("a group");
        parts.fold(first, |a, b| a + b)
    }

    #[test]
    fn grouped_linear_keeps_rank_order_and_the_groups_bits() {
        for p in [1usize, 2, 3, 4, 5, 7, 8, 17] {
            let xs: Vec<f64> = (0..p)
                .map(|r| 1.0 / (r as f64 + 3.0) * 1e16f64.powi((r % 3) as i32))
                .collect();
            for starts in groupings(p) {
                for n in [0usize, 1, 3, 100] {
                    let spans = spmd(p, |member| {
                        let r = member.rank() as u32;
                        let mut v = vec![(r, r + 1); n];
                        let t = ShmTransport::coll(member, "test");
                        grouped(&t, &mut v, &span_op(), &starts, Tag::P2P).map(|()| v)
                    });
                    for v in spans {
                        assert!(v.expect("ok").iter().all(|&s| s == (0, p as u32)));
                    }
                    let sums = spmd(p, |member| {
                        let mut v = vec![xs[member.rank()]; n];
                        let t = ShmTransport::coll(member, "test");
                        grouped(&t, &mut v, &Sum, &starts, Tag::P2P).map(|()| v)
                    });
                    let want = reference(&xs, &starts);
                    for v in sums {
                        assert!(v.expect("ok").iter().all(|x| x.to_bits() == want.to_bits()));
                    }
                }
            }
        }
    }
}
