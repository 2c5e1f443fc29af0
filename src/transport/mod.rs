//! The point-to-point layer every schedule is written against.
//!
//! [`Transport`] is what an algorithm may ask of the ranks it runs on: send, receive,
//! exchange, and receive-and-combine, each naming a peer and a [`Tag`]. The shared-memory
//! implementation ([`shm`]) runs over the mailboxes, the MPI one (`mpi`, feature `mpi`) over
//! MPI point-to-point between processes, and [`sim`] records what a schedule asks for the
//! cost-model simulator ([`crate::sim`]), so one schedule serves all three.

#[cfg(feature = "mpi")]
pub(crate) mod mpi;
mod permuted;
pub(crate) mod shm;
pub(crate) mod sim;
mod wire;

pub(crate) use permuted::Permuted;

use crate::error::Result;
use std::any::TypeId;
use std::hash::{Hash, Hasher};

/// Element types that can travel between ranks: plain `Copy` data with no borrowed parts.
pub trait Elem: Copy + Send + Sync + 'static {}
impl<T: Copy + Send + Sync + 'static> Elem for T {}

/// What kind of operation a message belongs to; with the call's sequence number it forms the
/// [`Tag`] a receiver checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// User point-to-point (`send`, `recv`, `sendrecv`).
    P2p = 1,
    /// `barrier`.
    Barrier = 2,
    /// `split`.
    Split = 3,
    /// `allreduce` and its variants.
    Allreduce = 4,
    /// `broadcast`.
    Broadcast = 5,
    /// `reduce`.
    Reduce = 6,
    /// `scan` and `exscan`.
    Scan = 7,
    /// `gather` and `gatherv`.
    Gather = 8,
    /// `scatter` and `scatterv`.
    Scatter = 9,
    /// `allgather` and `allgatherv`.
    Allgather = 10,
    /// `alltoall` and `alltoallv`.
    Alltoall = 11,
    /// `reduce_scatter_block`.
    ReduceScatter = 12,
}

impl Kind {
    /// The kind whose discriminant is `v`, if there is one.
    pub(crate) fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::P2p,
            2 => Kind::Barrier,
            3 => Kind::Split,
            4 => Kind::Allreduce,
            5 => Kind::Broadcast,
            6 => Kind::Reduce,
            7 => Kind::Scan,
            8 => Kind::Gather,
            9 => Kind::Scatter,
            10 => Kind::Allgather,
            11 => Kind::Alltoall,
            12 => Kind::ReduceScatter,
            _ => return None,
        })
    }

    /// The user-facing name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::P2p => "point-to-point",
            Kind::Barrier => "barrier",
            Kind::Split => "split",
            Kind::Allreduce => "allreduce",
            Kind::Broadcast => "broadcast",
            Kind::Reduce => "reduce",
            Kind::Scan => "scan",
            Kind::Gather => "gather",
            Kind::Scatter => "scatter",
            Kind::Allgather => "allgather",
            Kind::Alltoall => "alltoall",
            Kind::ReduceScatter => "reduce_scatter_block",
        }
    }
}

/// Operation kind, variant and call sequence number: every message carries one, and a receiver
/// that finds another than it expects reports a mismatch instead of reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag {
    /// The operation kind.
    pub kind: Kind,
    /// Which variant of the operation (the algorithm of a collective; 0 if there is one).
    pub variant: u8,
    /// Which collective call of the communicator (0 for point-to-point).
    pub seq: u64,
}

impl Tag {
    /// A point-to-point tag.
    pub(crate) const P2P: Tag = Tag {
        kind: Kind::P2p,
        variant: 0,
        seq: 0,
    };

    /// The same tag with variant `v`.
    pub(crate) fn with_variant(self, v: u8) -> Tag {
        Tag { variant: v, ..self }
    }

    /// Packs the tag into a header word: the kind in the low byte, the variant in the next,
    /// the sequence number above.
    pub(crate) fn encode(self) -> u64 {
        (self.seq << 16) | (u64::from(self.variant) << 8) | self.kind as u64
    }

    /// Describes a packed tag for an error message.
    pub(crate) fn describe(word: u64) -> String {
        let (variant, seq) = ((word >> 8) & 0xff, word >> 16);
        match Kind::from_u8((word & 0xff) as u8) {
            Some(Kind::P2p) => "point-to-point".to_string(),
            Some(k) if variant != 0 => {
                format!("{} (collective call #{seq}, variant {variant})", k.name())
            }
            Some(k) => format!("{} (collective call #{seq})", k.name()),
            None => format!("an unknown kind {:#x}", word & 0xff),
        }
    }
}

/// A hasher that folds what it is given; enough to turn a `TypeId` (already a hash) into a
/// word at no cost.
struct Fold(u64);

impl Hasher for Fold {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(17) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A word identifying the element type `T`: a 32-bit fingerprint of its `TypeId` above its
/// size in bytes (saturated at `u32::MAX`), so that an error can say how large the other
/// side's elements were.
#[inline]
pub(crate) fn type_fingerprint<T: 'static>() -> u64 {
    let mut h = Fold(0);
    TypeId::of::<T>().hash(&mut h);
    let size = u32::try_from(std::mem::size_of::<T>()).unwrap_or(u32::MAX);
    (h.finish() & 0xffff_ffff_0000_0000) | u64::from(size)
}

/// The element size recorded in a fingerprint.
pub(crate) fn fingerprint_size(fp: u64) -> usize {
    (fp & 0xffff_ffff) as usize
}

/// Point-to-point between the ranks of one communicator, in the terms schedules need.
///
/// Every method blocks until its part is done: a send until the data may be reused, a receive
/// until the data is in place. A failure (peer gone, mismatch, timeout, another rank's
/// failure) is an `Err` on this rank and stops the whole run, so that no rank is left waiting.
pub(crate) trait Transport {
    /// This rank.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Sends `data` to `dest`.
    fn send<T: Elem>(&self, dest: usize, tag: Tag, data: &[T]) -> Result<()>;
    /// Receives exactly `buf.len()` elements from `src`.
    fn recv<T: Elem>(&self, src: usize, tag: Tag, buf: &mut [T]) -> Result<()>;
    /// Sends `send` to `dest` while receiving `recv` from `src`, without deadlock whatever the
    /// sizes (the send is posted before the receive is waited for).
    fn sendrecv<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        recv: &mut [T],
        tag: Tag,
    ) -> Result<()>;
    /// Sends every `(dest, data)` of `sends` and receives every `(src, buf)` of `recvs`
    /// (exactly `buf.len()` elements each), all with `tag`, and returns once all are done.
    /// Messages on one edge go and are taken in list order.
    ///
    /// The default runs them one at a time: pair i as a [`Transport::sendrecv`] of `sends[i]`
    /// and `recvs[i]`, then the unpaired rest one by one — deadlock-free when the peers make
    /// matching calls in the same order (as the linear-shift rounds of the hierarchical
    /// all-to-all do). The shared-memory transport overrides it with one engine that has all
    /// of them in flight at once, deadlock-free whatever the order.
    #[allow(dead_code)] // the fallback of transports without a many-message engine
    fn exchange_many<T: Elem>(
        &self,
        sends: &[(usize, &[T])],
        recvs: &mut [(usize, &mut [T])],
        tag: Tag,
    ) -> Result<()> {
        let pairs = sends.len().min(recvs.len());
        for (&(dest, data), (src, buf)) in sends.iter().zip(recvs.iter_mut()) {
            self.sendrecv(dest, data, *src, buf, tag)?;
        }
        for &(dest, data) in &sends[pairs..] {
            self.send(dest, tag, data)?;
        }
        for (src, buf) in recvs[pairs..].iter_mut() {
            self.recv(*src, tag, buf)?;
        }
        Ok(())
    }
    /// Receives `acc.len()` elements from `src` and combines them into `acc` with
    /// `combine(acc, incoming)`, reading the incoming elements where the sender published them
    /// (no intermediate copy for large messages).
    #[allow(dead_code)] // the allreduce schedules' primitive (issue 3)
    fn recv_reduce<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        acc: &mut [T],
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()>;
    /// The butterfly's exchange: sends `buf` to `peer` and combines `peer`'s message of the
    /// same length into `buf` with `combine(buf, incoming)`. The outgoing data must not change
    /// while the peer may still read it, so this copies `buf` into `scratch` first (reusing its
    /// allocation across calls) unless the transport copies the message anyway.
    fn exchange_reduce<T: Elem>(
        &self,
        peer: usize,
        buf: &mut [T],
        scratch: &mut Vec<T>,
        tag: Tag,
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        scratch.clear();
        crate::copy::extend(scratch, buf);
        self.sendrecv_reduce(peer, scratch, peer, buf, tag, combine)
    }
    /// [`Transport::sendrecv`] whose receive combines like [`Transport::recv_reduce`].
    #[allow(dead_code)] // the allreduce schedules' primitive (issue 3)
    fn sendrecv_reduce<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        acc: &mut [T],
        tag: Tag,
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()>;
}
