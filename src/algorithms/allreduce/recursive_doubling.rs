//! The recursive-doubling (butterfly) allreduce, for any number of ranks.
//!
//! With p a power of two, the ranks run log₂ p rounds; in round k each rank exchanges its whole
//! current vector with the rank whose id differs in bit k, and both combine what they got with
//! what they had. After round k every rank holds the combination over its aligned group of 2^(k+1)
//! ids, so after the last round everyone holds the full result: log₂ p rounds of the whole
//! vector, latency-optimal for short vectors. This is the course report's "Butterfly-Allreduce"
//! (`/work/shared/papers/004_051d64547ad248ed.txt`, §2.4, Algorithm 2).
//!
//! Any other p uses the remainder handling of Thakur, Rabenseifner and Gropp, "Optimization of
//! collective communication operations in MPICH" (IJHPCA 19(1), 2005) rather than the
//! report's: with p' the largest power of two ≤ p and rem = p − p', each even rank 2i < 2·rem
//! first hands its vector to rank 2i+1 and sits out (*fold-in*); the p' ranks left are renumbered
//! 0..p'−1 in rank order and run the butterfly; at the end each rank 2i+1 hands the result back
//! to rank 2i (*fold-out*): ⌊log₂ p⌋ + 2 rounds, and the core stays a clean hypercube.
//!
//! Rank order for non-commutative ops: the renumbering keeps every new id standing for a
//! contiguous, increasing range of original ranks (a folded pair {2i, 2i+1} or a single rank),
//! and each butterfly group is an aligned range of new ids, so the partner with the lower new id
//! always holds the lower ranks' combination and goes on the left. Both partners of a round then
//! evaluate the same `lower ⊙ upper` (one through `fold_right`, the other through `fold_left`),
//! so all ranks end with the same bits, floating point included.
//!
//! Each round is one `Transport::exchange_reduce`: the round's outgoing data must stay
//! untouched while the incoming data is combined into `buf` straight from the partner's
//! published memory, so a long vector is copied to a scratch buffer (allocated once per call)
//! first; a short one goes eagerly, copied into the mailbox when posted, and needs none.
//!
//! The fold-in / fold-out helpers ([`Fold`]) and the ordered [`combine`] are shared with the
//! Rabenseifner schedule.

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Recursive-doubling allreduce of `buf` under `op` (any op, any p; rank order kept).
pub(crate) fn recursive_doubling<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    tag: Tag,
) -> Result<()> {
    let p = t.size();
    if p == 1 {
        return Ok(());
    }
    if p == 2 {
        // One exchange, nothing to fold: the shortest path for the latency-bound case.
        let (r, peer) = (t.rank(), 1 - t.rank());
        let mut combine = |acc: &mut [T], inc: &[T]| combine(op, peer < r, acc, inc);
        return t.exchange_reduce(peer, buf, &mut Vec::new(), tag, &mut combine);
    }
    let fold = Fold::new(p);
    if let Some(id) = fold.fold_in(t, buf, op, tag)? {
        // Allocated only if a message is too long for the transport to copy it anyway.
        let mut scratch = Vec::new();
        let mut mask = 1;
        while mask < fold.p2 {
            let peer_id = id ^ mask;
            let peer = fold.rank_of(peer_id);
            t.exchange_reduce(peer, buf, &mut scratch, tag, &mut |acc, inc| {
                combine(op, peer_id < id, acc, inc)
            })?;
            mask <<= 1;
        }
    }
    fold.fold_out(t, buf, tag)
}

/// Combines `inc` (a peer's data) into `acc` (ours) keeping rank order: the peer's data on the
/// left if it stands for lower ranks (`peer_lower`), on the right otherwise.
#[inline]
pub(crate) fn combine<T, O: Op<T>>(op: &O, peer_lower: bool, acc: &mut [T], inc: &[T]) {
    if peer_lower {
        op.fold_left(inc, acc);
    } else {
        op.fold_right(acc, inc);
    }
}

/// How p ranks map onto the power-of-two core of a butterfly (Thakur, Rabenseifner, Gropp
/// 2005): the first `2·rem` ranks pair up, the odd rank of each pair taking part for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fold {
    /// The largest power of two ≤ `p`: how many ranks run the core.
    pub p2: usize,
    /// `p − p2`: how many even ranks sit out.
    pub rem: usize,
}

impl Fold {
    /// The fold of `p ≥ 1` ranks.
    pub(super) fn new(p: usize) -> Fold {
        assert!(p >= 1, "a communicator has at least one rank");
        let p2 = 1usize << p.ilog2();
        Fold { p2, rem: p - p2 }
    }

    /// The new id of rank `r` in the core, or `None` if it sits out (an even rank < 2·rem).
    pub(super) fn id_of(&self, r: usize) -> Option<usize> {
        if r < 2 * self.rem {
            (!r.is_multiple_of(2)).then_some(r / 2)
        } else {
            Some(r - self.rem)
        }
    }

    /// The rank that has new id `id` (the inverse of [`Fold::id_of`]).
    pub(super) fn rank_of(&self, id: usize) -> usize {
        if id < self.rem {
            2 * id + 1
        } else {
            id + self.rem
        }
    }

    /// The fold-in step: an even rank 2i < 2·rem sends its vector to 2i+1, which combines it on
    /// the left. Returns this rank's new id, or `None` if it sits out until the fold-out.
    pub(super) fn fold_in<Tr: Transport, T: Elem, O: Op<T>>(
        &self,
        t: &Tr,
        buf: &mut [T],
        op: &O,
        tag: Tag,
    ) -> Result<Option<usize>> {
        let r = t.rank();
        if r < 2 * self.rem {
            if r.is_multiple_of(2) {
                t.send(r + 1, tag, buf)?;
            } else {
                t.recv_reduce(r - 1, tag, buf, &mut |acc, inc| op.fold_left(inc, acc))?;
            }
        }
        Ok(self.id_of(r))
    }

    /// The fold-out step: an odd rank 2i+1 < 2·rem sends the result to 2i.
    pub(super) fn fold_out<Tr: Transport, T: Elem>(
        &self,
        t: &Tr,
        buf: &mut [T],
        tag: Tag,
    ) -> Result<()> {
        let r = t.rank();
        if r < 2 * self.rem {
            if r.is_multiple_of(2) {
                t.recv(r + 1, tag, buf)?;
            } else {
                t.send(r - 1, tag, buf)?;
            }
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
pub(super) mod tests {
    use super::*;
    use crate::op::{self, Sum};
    use crate::shm::testing::spmd;
    use crate::shm::Member;
    use crate::transport::shm::ShmTransport;

    /// The schedules that fold the ranks to a power of two and checks of this module cover.
    #[derive(Clone, Copy, Debug)]
    pub(in crate::algorithms::allreduce) enum Schedule {
        RecursiveDoubling,
        Rabenseifner,
    }

    impl Schedule {
        /// Runs the schedule on `m`'s ranks over the shared-memory transport.
        fn run<T: Elem, O: Op<T>>(self, m: &Member, buf: &mut [T], op: &O) -> Result<()> {
            let t = ShmTransport::coll(m, "test");
            match self {
                Schedule::RecursiveDoubling => recursive_doubling(&t, buf, op, Tag::P2P),
                Schedule::Rabenseifner => {
                    super::super::rabenseifner::rabenseifner(&t, buf, op, Tag::P2P)
                }
            }
        }
    }

    /// Rank counts the schedules are checked on (more than the cores there are).
    pub(in crate::algorithms::allreduce) const PS: &[usize] =
        &[1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 33];

    /// Vector lengths checked for `p` ranks.
    fn counts(p: usize) -> Vec<usize> {
        let mut c = vec![0, 1, 2, p - 1, p, p + 1, 2 * p + 3, 37, 10_000];
        c.sort_unstable();
        c.dedup();
        c
    }

    /// Rank `r`'s `u64` input.
    fn input_u64(r: usize, n: usize) -> Vec<u64> {
        (0..n)
            .map(|i| {
                (r as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64).rotate_left(29)
            })
            .collect()
    }

    /// Rank `r`'s `f64` input: magnitudes far apart, so that the summation order shows in the
    /// bits.
    fn input_f64(r: usize, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| ((r * 7 + i * 13) % 17) as f64 * 10f64.powi((r % 5) as i32 * 3 - 6) + 0.1)
            .collect()
    }

    /// The combination both schedules compute for `p` ranks' `f64` sums, modelled sequentially:
    /// the pairs fold in, then adjacent new ids combine pairwise, level by level.
    fn model_f64(p: usize, n: usize) -> Vec<f64> {
        let fold = Fold::new(p);
        let mut level: Vec<Vec<f64>> = (0..fold.p2)
            .map(|id| {
                let r = fold.rank_of(id);
                let mut v = input_f64(r, n);
                if r < 2 * fold.rem {
                    let lower = input_f64(r - 1, n);
                    // x₂ᵢ ⊙ x₂ᵢ₊₁ (IEEE addition is commutative bit for bit).
                    for (a, b) in v.iter_mut().zip(lower) {
                        *a += b;
                    }
                }
                v
            })
            .collect();
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|pair| pair[0].iter().zip(&pair[1]).map(|(a, b)| a + b).collect())
                .collect();
        }
        level.pop().unwrap()
    }

    /// Checks schedule `alg` against sequential references on every rank count in
    /// [`PS`] and every length of [`counts`]: a non-commutative op that panics on an order
    /// mistake, a wrapping `u64` sum of element-dependent inputs, and an `f64` sum that must be
    /// bit-identical on all ranks, to the tree model and from run to run.
    pub(in crate::algorithms::allreduce) fn check_algorithm(alg: Schedule) {
        for &p in PS {
            for n in counts(p) {
                let expect_u64: Vec<u64> = (0..p).fold(vec![0u64; n], |mut acc, r| {
                    for (a, b) in acc.iter_mut().zip(input_u64(r, n)) {
                        *a = a.wrapping_add(b);
                    }
                    acc
                });
                let expect_f64 = model_f64(p, n);
                let out = spmd(p, |member| {
                    let r = member.rank();
                    let concat = op::non_commutative(|a: &(u32, u32), b: &(u32, u32)| {
                        assert_eq!(a.1, b.0, "order");
                        (a.0, b.1)
                    });
                    let mut spans = vec![(r as u32, r as u32 + 1); n];
                    alg.run(member, &mut spans, &concat)?;
                    assert!(
                        spans.iter().all(|&s| s == (0, p as u32)),
                        "{alg:?} p={p} n={n}: non-commutative result wrong on rank {r}"
                    );
                    let mut ints = input_u64(r, n);
                    alg.run(member, &mut ints, &Sum)?;
                    assert!(
                        ints == expect_u64,
                        "{alg:?} p={p} n={n}: u64 sum wrong on rank {r}"
                    );
                    let mut fs = Vec::new();
                    for _ in 0..2 {
                        let mut f = input_f64(r, n);
                        alg.run(member, &mut f, &Sum)?;
                        fs.push(f.iter().map(|x| x.to_bits()).collect::<Vec<u64>>());
                    }
                    Ok::<_, crate::Error>(fs)
                });
                let model: Vec<u64> = expect_f64.iter().map(|x| x.to_bits()).collect();
                for (r, res) in out.into_iter().enumerate() {
                    let fs = res.unwrap_or_else(|e| panic!("{alg:?} p={p} n={n} rank {r}: {e}"));
                    for f in &fs {
                        assert!(
                            *f == model,
                            "{alg:?} p={p} n={n}: f64 sum on rank {r} differs from the model"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn fold_renumbers_in_rank_order() {
        for p in 1..=200 {
            let fold = Fold::new(p);
            assert!(fold.p2.is_power_of_two() && fold.p2 <= p && p < 2 * fold.p2);
            let ids: Vec<usize> = (0..p).filter_map(|r| fold.id_of(r)).collect();
            assert_eq!(ids, (0..fold.p2).collect::<Vec<_>>(), "p={p}");
            for id in 0..fold.p2 {
                assert_eq!(fold.id_of(fold.rank_of(id)), Some(id), "p={p} id={id}");
            }
            // Every rank that sits out is the lower half of a pair whose upper half takes part.
            for r in (0..p).filter(|&r| fold.id_of(r).is_none()) {
                assert!(
                    r.is_multiple_of(2) && fold.id_of(r + 1).is_some(),
                    "p={p} r={r}"
                );
            }
        }
    }

    #[test]
    fn both_orders_give_the_same_bits() {
        // What the lower partner computes (fold_right) and what the upper one computes
        // (fold_left) for a commutative float sum must agree bit for bit.
        let (lo, hi) = (
            vec![0.1f64, 1e16, -0.0, 3.0],
            vec![0.2f64, 1.0, 0.0, 1e-300],
        );
        let (mut a, mut b) = (lo.clone(), hi.clone());
        combine(&Sum, false, &mut a, &hi);
        combine(&Sum, true, &mut b, &lo);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b));
    }

    /// A rank whose length differs from the others' makes every rank fail, not hang.
    pub(in crate::algorithms::allreduce) fn check_length_mismatch(alg: Schedule) {
        for p in [2, 3, 4, 5, 8] {
            for odd_one in [0, p - 1] {
                let out = spmd(p, |member| {
                    let n = if member.rank() == odd_one { 7 } else { 6 };
                    let mut v = vec![1u64; n];
                    alg.run(member, &mut v, &Sum)
                });
                for (r, res) in out.iter().enumerate() {
                    assert!(
                        res.is_err(),
                        "{alg:?} p={p} odd={odd_one}: rank {r} got {res:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn length_mismatch_is_an_error() {
        check_length_mismatch(Schedule::RecursiveDoubling);
    }

    #[test]
    fn against_references() {
        check_algorithm(Schedule::RecursiveDoubling);
    }
}
