//! `Comm::allreduce` and its variants: validation and dispatch; the schedules are in
//! `algorithms::allreduce`.

use super::Comm;
use crate::algorithms;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::select::{self, Algorithm};
use crate::transport::{type_fingerprint, Kind, Tag, Transport};

impl Comm {
    /// Combines every rank's `buf` element-wise with `op`, in rank order
    /// (x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}), and leaves the result in `buf` on every rank (in place, as
    /// `MPI_Allreduce` with `MPI_IN_PLACE`). Every rank must pass the same length and op: a
    /// different length or element type is an error on every rank; a different op is not
    /// detected (its result is unspecified, though memory-safe). All
    /// ranks get bit-identical results, and the same algorithm, rank count and inputs give the
    /// same bits run after run.
    pub fn allreduce<T, O>(&self, buf: &mut [T], op: O) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
        O: Op<T>,
    {
        self.allreduce_with(buf, op, Algorithm::Auto)
    }

    /// [`Comm::allreduce`] with a chosen algorithm (every rank must choose the same). An
    /// algorithm that cannot keep a non-commutative op's rank order (`Ring`) returns
    /// [`Error::Unsupported`] instead of a wrong answer.
    pub fn allreduce_with<T, O>(&self, buf: &mut [T], op: O, algorithm: Algorithm) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
        O: Op<T>,
    {
        self.allreduce_impl(None, buf, op, algorithm)
    }

    /// The allreduce behind every entry point: `send` is the input when out of place.
    fn allreduce_impl<T, O>(
        &self,
        send: Option<&[T]>,
        buf: &mut [T],
        op: O,
        algorithm: Algorithm,
    ) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
        O: Op<T>,
    {
        self.enter("allreduce")?;
        let tag = self.next_tag(Kind::Allreduce);
        let alg = match algorithm {
            Algorithm::Auto => select::choose_allreduce(
                self.size(),
                std::mem::size_of_val(buf),
                op.is_commutative(),
            ),
            chosen => chosen,
        };
        if alg == Algorithm::Ring && !op.is_commutative() {
            return Err(self.fail(Error::Unsupported {
                rank: self.rank(),
                op: "allreduce",
                what: format!(
                    "the {} algorithm reorders operands and cannot honour a non-commutative \
                     op; use linear, chain, binomial, recursive-doubling or rabenseifner",
                    alg.name()
                ),
            }));
        }
        let t = self.coll("allreduce");
        // Only the pipelined algorithms and the ring's pieces have a block; the others pass 0
        // (the agreement compares it too) and skip the lemma's arithmetic.
        let block = if alg.has_block() {
            let costs = select::Costs::for_team(self.run().ranks.policy.oversubscribed);
            alg.block_elements(self.size(), buf.len(), std::mem::size_of::<T>(), costs)
        } else {
            0
        };
        // At p = 2, recursive doubling is one exchange of the whole vector, and its message
        // carries what the check compares: the algorithm (tag variant), element type and
        // length, all checked by the receiving mailbox. Every other choice starts with the
        // check's own exchange, whose message has another tag, so either rank's first receive
        // meets the other's first message and a disagreement is an error on both; the check
        // would only double the latency of the shortest allreduce.
        if !(self.size() == 2 && alg == Algorithm::RecursiveDoubling) {
            self.agree_on_call(&t, tag, alg, buf.len(), block, type_fingerprint::<T>())?;
        }
        let tag = tag.with_variant(alg.id());
        match (alg, send) {
            (Algorithm::Direct, _) => {
                algorithms::allreduce::direct::direct(self, send, buf, &op, tag)
            }
            (_, Some(send)) => {
                buf.copy_from_slice(send);
                algorithms::allreduce::run(&t, buf, &op, alg, block, tag)
            }
            (_, None) => algorithms::allreduce::run(&t, buf, &op, alg, block, tag),
        }
    }

    /// Checks that every rank makes the same call — same algorithm (after `Auto`), same
    /// length, same pipeline block, same element type — before any schedule starts. Each rank posts its descriptor to
    /// rank r+1 and reads rank r−1's (one `sendrecv`, which cannot deadlock); if the ranks do
    /// not all agree, some rank differs from its left neighbour and fails the run, which ends
    /// every other rank's call. Without this, ranks that picked different schedules could all
    /// wait to receive first and hang. Costs one message hop per call.
    fn agree_on_call<Tr: Transport>(
        &self,
        t: &Tr,
        tag: Tag,
        alg: Algorithm,
        len: usize,
        block: usize,
        elem_fp: u64,
    ) -> Result<()> {
        let (p, r) = (self.size(), self.rank());
        if p == 1 {
            return Ok(());
        }
        let mine = [
            (len as u64) << 8 | u64::from(alg.id()),
            elem_fp,
            block as u64,
        ];
        let mut left = [0u64; 3];
        t.sendrecv((r + 1) % p, &mine, (r + p - 1) % p, &mut left, tag)?;
        if left != mine {
            let describe = |d: &[u64; 3]| {
                let alg = Algorithm::from_id((d[0] & 0xff) as u8).map_or("?", Algorithm::name);
                format!(
                    "allreduce of {} elements with the {alg} algorithm in blocks of {}",
                    d[0] >> 8,
                    d[2]
                )
            };
            let found = if left[0] == mine[0] && left[2] == mine[2] {
                "the same call with another element type".to_string()
            } else {
                describe(&left)
            };
            return Err(self.fail(Error::Mismatch {
                rank: r,
                peer: (r + p - 1) % p,
                op: "allreduce",
                expected: describe(&mine),
                found,
            }));
        }
        Ok(())
    }

    /// [`Comm::allreduce`] out of place: `send` is left untouched and the result goes to
    /// `recv`, which must have the same length.
    pub fn allreduce_into<T, O>(&self, send: &[T], recv: &mut [T], op: O) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
        O: Op<T>,
    {
        if send.len() != recv.len() {
            self.enter("allreduce")?;
            return Err(self.fail(Error::InvalidArgument {
                rank: self.rank(),
                op: "allreduce",
                what: format!(
                    "send has {} elements but recv has {}",
                    send.len(),
                    recv.len()
                ),
            }));
        }
        self.allreduce_impl(Some(send), recv, op, Algorithm::Auto)
    }
}
