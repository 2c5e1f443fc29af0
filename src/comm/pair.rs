//! Two ranks: the short collectives in one message latency.
//!
//! On a communicator of two ranks, the binomial broadcast, the gather and scatter (linear and
//! binomial alike), the recursive-doubling scan and the binomial reduce are each one message
//! between the two ranks (plus, for the reduce, the root's acknowledgement, or for a short
//! vector the root's vector the other way, [`Comm::reduce_pair`]). Run as the
//! general schedules run them, the call check (`Comm::agree`) is a hop of its own before that
//! message, so that a short call costs two message latencies where the allreduce, whose
//! two-rank exchange checks itself, costs one. Here the check and the message share the hop
//! ([`Comm::agree_pair_sending`]): each rank posts its descriptor, then its message if that is
//! eager-sized, and reads the other's descriptor before anything else it receives (a longer
//! message goes after the check, whose extra hop it does not notice). The messages, their tags
//! (variant = the algorithm's id) and the order of the operands are those of the general
//! schedules at p = 2, which the tests compare against the same references.
//!
//! The all-to-all collectives need no such path: their two-rank schedules are one exchange
//! whose message carries what the check compares (the algorithm in the tag, the element type
//! and length checked by the mailbox), so at p = 2 they skip the check as the allreduce does
//! (`comm::gather`, `comm::alltoall`, `comm::reduce_scatter`).

use super::agree::Call;
use super::Comm;
use crate::error::Result;
use crate::op::Op;
use crate::transport::{Elem, Tag, Transport};
use crate::EAGER_MAX;

/// An empty message: the reduce's acknowledgement.
const NOTHING: [u8; 0] = [];

impl Comm {
    /// Broadcast from `root` at p = 2: the root's buffer goes out with the check; `data` is the
    /// schedule's tag.
    pub(super) fn broadcast_pair<Tr: Transport, T: Elem>(
        &self,
        t: &Tr,
        (tag, data): (Tag, Tag),
        call: &Call,
        buf: &mut [T],
        root: usize,
    ) -> Result<()> {
        let peer = 1 - self.rank();
        if self.rank() == root {
            self.agree_pair_sending(t, tag, call, Some((data, &*buf)))
        } else {
            self.agree_pair(t, tag, call)?;
            t.recv(peer, data, buf)
        }
    }

    /// Reduce to `root` at p = 2. The other rank's vector goes out with the check and the root
    /// folds it in on its side (rank order). Then the other rank must learn that the root's
    /// fold did not fail (a panicking op), so that it does not return `Ok` from a call that
    /// failed:
    ///
    /// - **short vectors** (eager-sized): the root's vector goes out with the check too, as in
    ///   the allreduce's exchange, and the other rank folds the same two operands in the same
    ///   order into a copy (its `buf` stays as it was) — an op that fails on them fails on
    ///   both ranks. One message latency, as the allreduce; an acknowledgement would be a
    ///   second (the guideline reduce(m) ≤ allreduce(m) of Träff, Gropp and Thakur, which the
    ///   bench checks, failed by 1.4–1.9× at 8–128 B here before).
    /// - **longer vectors**: the root acknowledges after its fold, as the binomial reduce does,
    ///   rather than send m more bytes for the other rank to fold.
    ///
    /// (An op that panics on one rank only — it looks at the rank — may then fail the other
    /// rank's copy while the root returns `Ok` with its result; the run fails all the same,
    /// as with the allreduce's two-rank exchange.)
    pub(super) fn reduce_pair<Tr: Transport, T: Elem, O: Op<T>>(
        &self,
        t: &Tr,
        (tag, data): (Tag, Tag),
        call: &Call,
        buf: &mut [T],
        op: &O,
        root: usize,
    ) -> Result<()> {
        let (me, peer) = (self.rank(), 1 - self.rank());
        // Both ranks combine x_peer with x_me in rank order: x₀ ⊙ x₁.
        let mut fold = |acc: &mut [T], inc: &[T]| {
            if peer < me {
                op.fold_left(inc, acc);
            } else {
                op.fold_right(acc, inc);
            }
        };
        if std::mem::size_of_val(buf) <= EAGER_MAX {
            self.agree_pair_sending(t, tag, call, Some((data, &*buf)))?;
            if me == root {
                return t.recv_reduce(peer, data, buf, &mut fold);
            }
            let mut copy = buf.to_vec();
            return t.recv_reduce(peer, data, &mut copy, &mut fold);
        }
        if me != root {
            self.agree_pair_sending(t, tag, call, Some((data, &*buf)))?;
            return t.recv(peer, data, &mut [] as &mut [u8]);
        }
        self.agree_pair(t, tag, call)?;
        t.recv_reduce(peer, data, buf, &mut fold)?;
        t.send(peer, data, &NOTHING)
    }

    /// Inclusive (or `exclusive`) scan at p = 2: rank 0's vector goes out with the check and
    /// rank 0 is done; rank 1 folds it in on the left (or, exclusive, takes it).
    pub(super) fn scan_pair<Tr: Transport, T: Elem, O: Op<T>>(
        &self,
        t: &Tr,
        (tag, data): (Tag, Tag),
        call: &Call,
        buf: &mut [T],
        op: &O,
        exclusive: bool,
    ) -> Result<()> {
        if self.rank() == 0 {
            return self.agree_pair_sending(t, tag, call, Some((data, &*buf)));
        }
        self.agree_pair(t, tag, call)?;
        if exclusive {
            t.recv(0, data, buf)
        } else {
            t.recv_reduce(0, data, buf, &mut |acc, inc| op.fold_left(inc, acc))
        }
    }

    /// Gather to `root` at p = 2: the other rank's block goes out with the check.
    pub(super) fn gather_pair<Tr: Transport, T: Elem>(
        &self,
        t: &Tr,
        (tag, data): (Tag, Tag),
        call: &Call,
        (send, recv): (&[T], &mut [T]),
        root: usize,
    ) -> Result<()> {
        let (me, peer, n) = (self.rank(), 1 - self.rank(), send.len());
        if me != root {
            return self.agree_pair_sending(t, tag, call, Some((data, send)));
        }
        self.agree_pair(t, tag, call)?;
        recv[me * n..(me + 1) * n].copy_from_slice(send);
        t.recv(peer, data, &mut recv[peer * n..(peer + 1) * n])
    }

    /// Scatter from `root` at p = 2: the other rank's block goes out with the check.
    pub(super) fn scatter_pair<Tr: Transport, T: Elem>(
        &self,
        t: &Tr,
        (tag, data): (Tag, Tag),
        call: &Call,
        (send, recv): (&[T], &mut [T]),
        root: usize,
    ) -> Result<()> {
        let (me, peer, n) = (self.rank(), 1 - self.rank(), recv.len());
        if me != root {
            self.agree_pair(t, tag, call)?;
            return t.recv(peer, data, recv);
        }
        let block = &send[peer * n..(peer + 1) * n];
        self.agree_pair_sending(t, tag, call, Some((data, block)))?;
        recv.copy_from_slice(&send[me * n..(me + 1) * n]);
        Ok(())
    }
}
