//! The shared-memory direct all-to-all (shm only): single copy, two synchronisations.
//!
//! Every rank publishes its send buffer (input) and its receive buffer (output) on the
//! communicator's board (`shm::board`); once every rank has arrived, rank r copies block r of
//! every peer i's send buffer straight into block i of its own receive buffer, and phase 2
//! keeps each send buffer lent until the last reader is done. Each block moves once, from its
//! sender's memory into its receiver's, with no intermediate buffer and no hop through other
//! ranks (DESIGN.md, "Single copy where memory is shared"); the allgather's
//! `algorithms::gather::direct` is the same with one block per rank instead of p.
//!
//! **What is checked.** The published `len` is the block length n (input and output hold p·n
//! each, as the caller checked on every rank). After phase 1 each rank compares every call with
//! its own: the same block length and element type. Every rank sees the same board, so a
//! difference is seen by every rank, and all return `Error::Mismatch` without touching a
//! buffer.
//!
//! Nobody writes into another rank's buffer: each rank writes only its own output, and reads
//! only inputs, which no one writes during the call.

use crate::algorithms::gather::direct_blocks as blocks;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::shm::Member;

/// Direct all-to-all of every rank's `send` (p blocks of n elements) into `recv` (p·n;
/// checked by the caller): the allgather's single-copy exchange, each rank reading its own
/// block of every input.
pub(crate) fn alltoall<T: Elem>(comm: &Member, send: &[T], recv: &mut [T], tag: Tag) -> Result<()> {
    blocks(
        comm,
        "alltoall",
        send,
        recv,
        send.len() / comm.size(),
        true,
        tag,
    )
}
