//! `Comm::reduce_scatter_block`: validation and dispatch; the schedules are in
//! `algorithms::reduce_scatter`.
//!
//! **Validation.** A `send` whose length is not p times `recv`'s fails the run on that rank
//! (`Error::InvalidArgument`) before anything is sent, so every other rank's call fails too.
//! Then the call check (`check::agree`) compares the block length n, the element type and the
//! algorithm (after `Auto`, which every rank resolves from the same n, p and op).
//!
//! **Which form of the call check.** The one-hop form: each rank compares its call with its
//! left neighbour's, and a rank that finds a difference fails the run instead of starting the
//! schedule. That is enough here, as for the allreduce, because every rank's result depends
//! on every rank's data: no rank can finish without the failing one taking part in the
//! schedule. Concretely, the message-passing schedules end with a dissemination barrier that
//! no rank passes before every rank reached it, and `Direct` cannot pass the board's phase 1
//! without every rank's arrival; so every rank waits for the failing one somewhere and
//! returns the run's error. The dissemination form, which a broadcast or gather needs because
//! their root or leaves may finish without hearing from everyone, would only add ⌈log₂ p⌉ − 1
//! rounds.
//!
//! A different op on one rank is not detected (its result is unspecified, though
//! memory-safe: every receive takes exactly the length its rank expects).

use super::Local;
use crate::algorithms::check::{self, Call};
use crate::algorithms::reduce_scatter as sched;
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{op_word, Elem, Kind};
use crate::op::Op;
use crate::select::{self, Decision, Flat, ReduceScatter};

impl Local {
    /// `Comm::reduce_scatter_block` with a chosen algorithm (every rank must choose the
    /// same).
    pub(crate) fn reduce_scatter_block_with<T, O>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: O,
        algorithm: ReduceScatter,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        const OP: &str = "reduce_scatter_block";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Coll(Collective::ReduceScatter));
        let (alg, flat) = match algorithm.flat() {
            Some(flat) => (algorithm, flat),
            None => {
                let (bytes, commutative) = (std::mem::size_of_val(send), op.is_commutative());
                let flat = self.tuned(Collective::ReduceScatter, bytes, commutative, || {
                    let (n, oversubscribed) = (std::mem::size_of_val(recv), self.oversubscribed());
                    select::choose_reduce_scatter(self.size(), n, commutative, oversubscribed)
                });
                (flat.alg(), flat)
            }
        };
        let t = self.coll(OP);
        // At p = 2 every message-passing algorithm is one exchange whose message carries what
        // the check compares (the algorithm in the tag variant, the element type and length
        // checked by the receiving mailbox), and `Direct` starts with the check's own
        // exchange: either rank's first receive meets the other's first message, so a
        // disagreement fails both without the check's extra hop (`algorithms::pair`).
        if self.size() != 2 || alg == ReduceScatter::Direct {
            let call = Call::of::<T, _>(OP, alg, recv.len()).with_op(&op);
            check::agree(&t, tag, &call, false)?;
        }
        let tag = tag.with_variant(alg.id()).with_op(op_word(op.identity()));
        match flat {
            Flat::Direct => sched::direct(self.member(), send, recv, &op, tag),
            Flat::Schedule(s) => sched::run(&t, send, recv, &op, s, tag),
        }
    }
}
