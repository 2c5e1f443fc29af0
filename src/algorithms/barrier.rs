//! Barrier schedules.

use crate::error::Result;
use crate::transport::{Tag, Transport};

/// Dissemination barrier (Hensgen, Finkel and Manber, "Two algorithms for barrier
/// synchronization", 1988): in round k = 0, 1, … while 2ᵏ < p, rank r sends an empty message to
/// (r + 2ᵏ) mod p and receives one from (r − 2ᵏ) mod p. After ⌈log₂ p⌉ rounds every rank has
/// heard, directly or through others, from every rank. Works for any p; the distances 2ᵏ are
/// all different modulo p, so no edge carries two rounds' messages.
pub(crate) fn dissemination<Tr: Transport>(t: &Tr, tag: Tag) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    let mut dist = 1;
    while dist < p {
        let dest = (r + dist) % p;
        let src = (r + p - dist) % p;
        t.sendrecv::<u8>(dest, &[], src, &mut [], tag)?;
        dist *= 2;
    }
    Ok(())
}
