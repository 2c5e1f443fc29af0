//! Two ranks: the short collectives in one message latency.
//!
//! On a communicator of two ranks, the binomial broadcast, the gather and scatter (linear and
//! binomial alike), the recursive-doubling scan and the binomial reduce are each one message
//! between the two ranks (plus, for the reduce, the root's acknowledgement). Run as the
//! general schedules run them, the call check (`check::agree`) is a hop of its own before that
//! message, so that a short call costs two message latencies where the allreduce, whose
//! two-rank exchange checks itself, costs one. Here the check and the message share the hop
//! ([`agree_pair_sending`]): each rank posts its descriptor, then its message if that is
//! eager-sized, and reads the other's descriptor before anything else it receives (a longer
//! message goes after the check, whose extra hop it does not notice). The messages, their tags
//! (variant = the algorithm's id) and the order of the operands are those of the general
//! schedules at p = 2, which the tests compare against the same references.
//!
//! The all-to-all collectives need no such path: their two-rank schedules are one exchange
//! whose message carries what the check compares (the algorithm in the tag, the element type
//! and length checked by the mailbox), so at p = 2 they skip the check as the allreduce does
//! (`comm::gather`, `comm::alltoall`, `comm::reduce_scatter`).

use super::check::{agree_pair, agree_pair_sending, Call};
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// An empty message: the reduce's acknowledgement.
const NOTHING: [u8; 0] = [];

/// Broadcast from `root` at p = 2: the root's buffer goes out with the check; `data` is the
/// schedule's tag.
pub(crate) fn broadcast_pair<Tr: Transport, T: Elem>(
    t: &Tr,
    (tag, data): (Tag, Tag),
    call: &Call,
    buf: &mut [T],
    root: usize,
) -> Result<()> {
    let peer = 1 - t.rank();
    if t.rank() == root {
        agree_pair_sending(t, tag, call, Some((data, &*buf)))
    } else {
        agree_pair(t, tag, call)?;
        t.recv(peer, data, buf)
    }
}

/// Reduce to `root` at p = 2: the other rank's vector goes out with the check, the root
/// folds it in on its side (rank order), then acknowledges, as the binomial reduce does,
/// so that the other rank returns only once the root has its result.
///
/// The acknowledgement is a second message latency, which makes a short reduce slower
/// than a short allreduce, against Träff, Gropp and Thakur's guideline reduce(m) ≤
/// allreduce(m) (figures in `docs/results/2026-11-29-figures-behind-the-code.md`). It is the price of the error contract: an op that
/// panics on the root only must fail the other rank's call too. (Sending the root's
/// vector back for the other rank to fold the same operands, as the allreduce's exchange
/// does, would not do: it covers an op that fails on the operands, not one that fails on one
/// rank, which `tests/reduce.rs` and `tests/reduce_scatter.rs` require.)
pub(crate) fn reduce_pair<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    (tag, data): (Tag, Tag),
    call: &Call,
    buf: &mut [T],
    op: &O,
    root: usize,
) -> Result<()> {
    let (me, peer) = (t.rank(), 1 - t.rank());
    if me != root {
        agree_pair_sending(t, tag, call, Some((data, &*buf)))?;
        return t.recv(peer, data, &mut [] as &mut [u8]);
    }
    agree_pair(t, tag, call)?;
    t.recv_reduce(peer, data, buf, &mut |acc, inc| {
        if peer < me {
            op.fold_left(inc, acc);
        } else {
            op.fold_right(acc, inc);
        }
    })?;
    t.send(peer, data, &NOTHING)
}

/// Inclusive (or `exclusive`) scan at p = 2: rank 0's vector goes out with the check and
/// rank 0 is done; rank 1 folds it in on the left (or, exclusive, takes it).
pub(crate) fn scan_pair<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    (tag, data): (Tag, Tag),
    call: &Call,
    buf: &mut [T],
    op: &O,
    exclusive: bool,
) -> Result<()> {
    if t.rank() == 0 {
        return agree_pair_sending(t, tag, call, Some((data, &*buf)));
    }
    agree_pair(t, tag, call)?;
    if exclusive {
        t.recv(0, data, buf)
    } else {
        t.recv_reduce(0, data, buf, &mut |acc, inc| op.fold_left(inc, acc))
    }
}

/// Gather to `root` at p = 2: the other rank's block goes out with the check.
pub(crate) fn gather_pair<Tr: Transport, T: Elem>(
    t: &Tr,
    (tag, data): (Tag, Tag),
    call: &Call,
    (send, recv): (&[T], &mut [T]),
    root: usize,
) -> Result<()> {
    let (me, peer, n) = (t.rank(), 1 - t.rank(), send.len());
    if me != root {
        return agree_pair_sending(t, tag, call, Some((data, send)));
    }
    agree_pair(t, tag, call)?;
    crate::copy::copy_slice(&mut recv[me * n..(me + 1) * n], send);
    t.recv(peer, data, &mut recv[peer * n..(peer + 1) * n])
}

/// Scatter from `root` at p = 2: the other rank's block goes out with the check.
pub(crate) fn scatter_pair<Tr: Transport, T: Elem>(
    t: &Tr,
    (tag, data): (Tag, Tag),
    call: &Call,
    (send, recv): (&[T], &mut [T]),
    root: usize,
) -> Result<()> {
    let (me, peer, n) = (t.rank(), 1 - t.rank(), recv.len());
    if me != root {
        agree_pair(t, tag, call)?;
        return t.recv(peer, data, recv);
    }
    let block = &send[peer * n..(peer + 1) * n];
    agree_pair_sending(t, tag, call, Some((data, block)))?;
    crate::copy::copy_slice(&mut *recv, &send[me * n..(me + 1) * n]);
    Ok(())
}
