//! Checks that every pipelined tree schedule (the pipelined tree, the dual root, the two-tree)
//! must pass, written once: rank order for a non-commutative op at every block size,
//! bit-identical float sums on every rank, and a length mismatch failing everywhere. The
//! schedules run over the shared-memory transport of ranks without a team
//! (`shm::testing`); tests/allreduce.rs runs them through the public API.

use crate::error::Result;
use crate::op::{non_commutative, Op};
use crate::shm::testing::spmd;
use crate::shm::Member;

/// Rank counts of the checks: 1 to 17 and the oversubscribed 31, 32, 33.
pub(super) const PS: [usize; 20] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31, 32, 33,
];

/// Element counts for blocks of `block`: empty, one, just under, at and over one block, and
/// several blocks with a remainder.
fn counts(block: usize) -> Vec<usize> {
    let mut c = vec![0, 1, block - 1, block, block + 1, 5 * block + 2];
    c.sort_unstable();
    c.dedup();
    c
}

/// Rank r contributes the span (r, r + 1) at every element; spans only combine when
/// adjacent (the op panics otherwise), so the result is (0, p) exactly when every
/// combination was in rank order.
pub(super) fn span_op() -> impl Op<(u32, u32)> {
    non_commutative(|a: &(u32, u32), b: &(u32, u32)| {
        assert_eq!(a.1, b.0, "operands out of rank order");
        (a.0, b.1)
    })
}

/// A schedule under test, called as `schedule(transport, buf, op, block, tag)` for each
/// element type the checks use.
pub(super) trait Schedule: Sync {
    /// Runs the schedule on spans.
    fn spans(&self, m: &Member, buf: &mut [(u32, u32)], block: usize) -> Result<()>;
    /// Runs the schedule on `f64` sums.
    fn f64_sum(&self, m: &Member, buf: &mut [f64], block: usize) -> Result<()>;
    /// Runs the schedule on `u64` sums.
    fn u64_sum(&self, m: &Member, buf: &mut [u64], block: usize) -> Result<()>;
}

/// Implements [`Schedule`] for a unit struct `$name` by calling the generic schedule `$f`.
macro_rules! schedule {
    ($name:ident, $f:path) => {
        /// The schedule under test.
        struct $name;
        impl $crate::algorithms::allreduce::testkit::Schedule for $name {
            fn spans(
                &self,
                m: &$crate::shm::Member,
                buf: &mut [(u32, u32)],
                block: usize,
            ) -> $crate::error::Result<()> {
                let op = $crate::algorithms::allreduce::testkit::span_op();
                $f(
                    &$crate::transport::shm::ShmTransport::coll(m, "test"),
                    buf,
                    &op,
                    block,
                    $crate::mailbox::Tag::P2P,
                )
            }
            fn f64_sum(
                &self,
                m: &$crate::shm::Member,
                buf: &mut [f64],
                block: usize,
            ) -> $crate::error::Result<()> {
                let op = $crate::op::Sum;
                $f(
                    &$crate::transport::shm::ShmTransport::coll(m, "test"),
                    buf,
                    &op,
                    block,
                    $crate::mailbox::Tag::P2P,
                )
            }
            fn u64_sum(
                &self,
                m: &$crate::shm::Member,
                buf: &mut [u64],
                block: usize,
            ) -> $crate::error::Result<()> {
                let op = $crate::op::Sum;
                $f(
                    &$crate::transport::shm::ShmTransport::coll(m, "test"),
                    buf,
                    &op,
                    block,
                    $crate::mailbox::Tag::P2P,
                )
            }
        }
    };
}
pub(super) use schedule;

/// Non-commutative spans come out as (0, p) for every p, block size and count.
pub(super) fn spans_in_rank_order(s: &dyn Schedule) {
    for p in PS {
        for block in [1usize, 4, 64] {
            for n in counts(block) {
                let out = spmd(p, |m| {
                    let r = m.rank() as u32;
                    let mut v = vec![(r, r + 1); n];
                    s.spans(m, &mut v, block).map(|()| v)
                });
                for v in out {
                    let want = vec![(0, p as u32); n];
                    assert_eq!(v.unwrap(), want, "p={p} block={block} n={n}");
                }
            }
        }
    }
}

/// Float sums are bit-identical on every rank (and integer sums exact), with tiny, small and
/// long blocks. With `same_bits_any_block`, the schedule's order of combination does not depend
/// on the block size, so all block sizes give the same bits too.
pub(super) fn sums_bit_identical(s: &dyn Schedule, same_bits_any_block: bool) {
    let x = |r: usize, i: usize| ((r * 7919 + i * 104_729) % 1000) as f64 / 7.0 - 50.0;
    for p in PS {
        for n in [0usize, 1, 2, p + 1, 9, 1001, 8192 * 2 + 7] {
            let want_u: Vec<u64> = (0..n)
                .map(|i| (0..p).map(|r| (r * 1000 + i) as u64).sum())
                .collect();
            // Tiny blocks, but not thousands of steps on an oversubscribed machine.
            let (tiny, small) = if n > 2000 { (61, 67) } else { (3, 7) };
            let out = spmd(p, |m| {
                let r = m.rank();
                let floats = || (0..n).map(|i| x(r, i)).collect::<Vec<f64>>();
                let (mut f, mut g, mut h) = (floats(), floats(), floats());
                s.f64_sum(m, &mut f, 8192)?;
                s.f64_sum(m, &mut g, tiny)?;
                s.f64_sum(m, &mut h, small)?;
                let mut w: Vec<u64> = (0..n).map(|i| (r * 1000 + i) as u64).collect();
                s.u64_sum(m, &mut w, 5)?;
                crate::Result::Ok((w, f, g, h))
            });
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let mut first: Option<(Vec<u64>, Vec<u64>, Vec<u64>)> = None;
            for res in out {
                let (w, f, g, h) = res.unwrap();
                assert_eq!(w, want_u, "p={p} n={n}");
                if same_bits_any_block {
                    assert_eq!(bits(&f), bits(&g), "p={p} n={n}");
                    assert_eq!(bits(&f), bits(&h), "p={p} n={n}");
                }
                let mine = (bits(&f), bits(&g), bits(&h));
                match &first {
                    None => first = Some(mine),
                    Some(f0) => assert_eq!(&mine, f0, "p={p} n={n}: ranks differ"),
                }
            }
        }
    }
}

/// A rank with another length gets an error (it, or a peer, sees a mismatch), never a hang —
/// including lengths that differ by whole blocks and lengths whose halves end in blocks of the
/// same length.
pub(super) fn length_mismatch_fails(s: &dyn Schedule) {
    for (p, odd) in [
        (2usize, 0usize),
        (2, 1),
        (3, 0),
        (3, 1),
        (4, 3),
        (5, 2),
        (3, 2),
        (7, 4),
        (9, 8),
        (12, 5),
    ] {
        // 8 against 24 in blocks of 8: a schedule that halves the vector (the two-tree) sees
        // halves of 4 and 12, whose last blocks have the same length.
        for (n, m) in [
            (0usize, 1usize),
            (8, 16),
            (16, 8),
            (8, 0),
            (7, 8),
            (24, 26),
            (8, 24),
            (24, 8),
        ] {
            let out = spmd(p, |member| {
                let len = if member.rank() == odd { m } else { n };
                let mut v = vec![1u64; len];
                s.u64_sum(member, &mut v, 8)
            });
            assert!(out.iter().all(|r| r.is_err()), "p={p} n={n} m={m}: {out:?}");
            let mismatch = |r: &Result<()>| matches!(r, Err(crate::Error::Mismatch { .. }));
            assert!(out.iter().any(mismatch), "p={p} n={n} m={m}: {out:?}");
        }
    }
}
