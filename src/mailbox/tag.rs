//! What a message says about itself beyond its length: the [`Tag`] of the operation it
//! belongs to (kind, variant and call number) and the fingerprint of its element type. A
//! receiver compares both with what it expects before it reads a byte.

use crate::collective::Collective;
use crate::op::{Builtin, Identity};
use std::any::TypeId;
use std::hash::{Hash, Hasher};

/// The largest tag a point-to-point message may carry: 32767, the least upper bound MPI
/// guarantees for its tags (`MPI_TAG_UB`), so that a tag means the same between the threads of
/// a process and between processes.
pub const TAG_MAX: u32 = 32767;

/// Element types that can travel between ranks: plain `Copy` data with no borrowed parts.
/// Every `T: Copy + Send + Sync + 'static` is one; generic code names the bound as the API
/// does:
///
/// ```
/// use corecoll::{op::Op, Comm, Elem, Result};
///
/// /// Combines `v` over every rank, then over every rank again.
/// fn twice<T: Elem, O: Op<T> + Copy>(comm: &Comm, v: &mut [T], op: O) -> Result<()> {
///     comm.allreduce(v, op)?;
///     comm.allreduce(v, op)
/// }
/// ```
pub trait Elem: Copy + Send + Sync + 'static {}
impl<T: Copy + Send + Sync + 'static> Elem for T {}

/// What kind of operation a message belongs to; with the call's sequence number it forms the
/// [`Tag`] a receiver checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// User point-to-point (`send`, `recv`, `sendrecv`).
    P2p,
    /// `split`.
    Split,
    /// A collective call.
    Coll(Collective),
}

impl From<Collective> for Kind {
    fn from(c: Collective) -> Kind {
        Kind::Coll(c)
    }
}

impl Kind {
    /// The kind's code in a tag word: 1 and 2 for point-to-point and split, 3 and up for the
    /// collectives in [`Collective::ALL`]'s order.
    pub(crate) fn code(self) -> u8 {
        match self {
            Kind::P2p => 1,
            Kind::Split => 2,
            Kind::Coll(c) => 3 + c.index() as u8,
        }
    }

    /// The kind whose [`Kind::code`] is `v`, if there is one.
    pub(crate) fn from_code(v: u8) -> Option<Kind> {
        match v {
            1 => Some(Kind::P2p),
            2 => Some(Kind::Split),
            v => Collective::ALL
                .get(usize::from(v).checked_sub(3)?)
                .map(|&c| Kind::Coll(c)),
        }
    }

    /// The user-facing name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::P2p => "point-to-point",
            Kind::Split => "split",
            Kind::Coll(c) => c.name(),
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
    /// Which collective call of the communicator; for point-to-point, the user's tag.
    pub seq: u64,
    /// The op of a reduction's messages ([`op_word`]; 0 for none): folded into the element
    /// type's fingerprint of each message, so that ranks combining with different ops meet a
    /// mismatch even where no separate call check runs before the data.
    pub op: u64,
}

impl Tag {
    /// A point-to-point tag (user tag 0).
    #[cfg(test)]
    pub(crate) const P2P: Tag = Tag::p2p(0);

    /// A point-to-point tag carrying the user's tag `user`.
    pub(crate) const fn p2p(user: u32) -> Tag {
        Tag {
            kind: Kind::P2p,
            variant: 0,
            seq: user as u64,
            op: 0,
        }
    }

    /// The user's tag of a packed point-to-point tag word ([`Tag::p2p`]).
    #[inline]
    pub(crate) fn user_tag(word: u64) -> u32 {
        (word >> 16) as u32
    }

    /// The same tag with variant `v`.
    pub(crate) fn with_variant(self, v: u8) -> Tag {
        Tag { variant: v, ..self }
    }

    /// The same tag for messages combined with the op of word `op` ([`op_word`]).
    pub(crate) fn with_op(self, op: u64) -> Tag {
        Tag { op, ..self }
    }

    /// Packs the tag into a header word: the kind in the low byte, the variant in the next,
    /// the sequence number above.
    pub(crate) fn encode(self) -> u64 {
        (self.seq << 16) | (u64::from(self.variant) << 8) | u64::from(self.kind.code())
    }

    /// The sequence number of a packed tag word ([`Tag::encode`]).
    #[inline]
    pub(crate) fn seq_of(word: u64) -> u64 {
        word >> 16
    }

    /// Describes a packed tag for an error message: the operation, and which of the
    /// communicator's collective calls it belongs to (counted from 1), or the user's tag of a
    /// point-to-point message. The algorithm (the variant) is not named: two ranks that ran
    /// different algorithms fail the call check first, which names both.
    pub(crate) fn describe(word: u64) -> String {
        let seq = Tag::seq_of(word);
        match Kind::from_code((word & 0xff) as u8) {
            Some(Kind::P2p) => format!("a point-to-point message with tag {seq}"),
            Some(k) => format!(
                "{} (collective call {} on this communicator)",
                k.name(),
                seq + 1
            ),
            None => format!("a message of an unknown kind {:#x}", word & 0xff),
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

/// The word that stands for op `id` in call descriptors and in a reduction's messages: the
/// built-in op's number in [`Builtin::ALL`] plus one, or a fingerprint of the user op's type
/// with the top bit set (and the next bit its commutativity); 0 stands for no op.
#[inline]
pub(crate) fn op_word(id: Identity) -> u64 {
    match id {
        Identity::Builtin(b) => 1 + Builtin::ALL.iter().position(|&x| x == b).unwrap_or(0) as u64,
        Identity::User {
            type_id,
            commutative,
            ..
        } => {
            let mut h = Fold(0);
            type_id.hash(&mut h);
            (h.finish() >> 2) | (1 << 63) | (u64::from(commutative) << 62)
        }
    }
}

/// What a message's type word carries of its op word `op` (see [`Tag::op`]): 32 bits in the high
/// half, which the element type's fingerprint fills with its own hash, so that the element
/// size in the low half stays readable. A built-in op's number as it is; a user op's
/// fingerprint folded to 31 bits with bit 31 set.
#[inline]
pub(crate) fn op_bits(op: u64) -> u64 {
    let folded = if op >> 63 == 1 {
        ((op ^ (op >> 32)) & 0x7fff_ffff) | 0x8000_0000
    } else {
        op & 0xffff_ffff
    };
    folded << 32
}

/// Describes the op that `bits` ([`op_bits`]) stands for, for an error message.
pub(crate) fn describe_op_bits(bits: u64) -> String {
    if bits >> 63 == 1 {
        // The fold keeps neither the commutativity nor a hash worth printing.
        "a user op".to_string()
    } else {
        describe_op_word(bits >> 32)
    }
}

/// Describes another rank's op word ([`op_word`]) for an error message.
pub(crate) fn describe_op_word(word: u64) -> String {
    match word {
        0 => "no op".to_string(),
        w if w & (1 << 63) != 0 => format!(
            "a {}commutative user op (type hash {:#010x})",
            if w & (1 << 62) != 0 { "" } else { "non-" },
            w as u32
        ),
        w => match Builtin::ALL.get(w as usize - 1) {
            Some(b) => b.name().to_string(),
            None => format!("an unknown op {w:#x}"),
        },
    }
}
