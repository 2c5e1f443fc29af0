//! The pairwise (linear shift) all-to-all exchange.
//!
//! Rank r copies its own block r locally; then in step k = 1 … p − 1 it sends its block
//! (r + k) mod p to rank r + k and receives block (r − k) mod p from rank r − k (mod p), one
//! `sendrecv` per step. In every step each rank sends one message and receives one, so no
//! rank is a hot spot, and each block moves exactly once, straight from its send buffer into
//! its receiver's receive buffer: (p − 1)·n elements in and out of every rank, the bandwidth
//! lower bound, in p − 1 steps.
//!
//! This is the pairwise exchange of MPICH's long-message all-to-all (Thakur, Rabenseifner and
//! Gropp, "Optimization of collective communication operations in MPICH", IJHPCA 19(1), 2005),
//! in the shift form that works for any p (MPICH pairs ranks by r xor k when p is a power of
//! two; the shift is the linear-shift exchange that Open MPI's RingLeaders proposal,
//! `/work/shared/papers/003_9fbaded9e0bef889.txt`, runs between node leaders).

use super::span;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;

/// Pairwise all-to-all of `send` (p blocks of n elements) into `recv` (p·n; checked by the
/// caller).
pub(crate) fn pairwise<Tr: Transport, T: Elem>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    let n = send.len() / p;
    debug_assert_eq!(recv.len(), send.len());
    crate::copy::copy_slice(&mut recv[span(r, n)], &send[span(r, n)]);
    for k in 1..p {
        let (dest, src) = ((r + k) % p, (r + p - k) % p);
        t.sendrecv(
            dest,
            &send[span(dest, n)],
            src,
            &mut recv[span(src, n)],
            tag,
        )?;
    }
    Ok(())
}
