//! [`TagCodec`]: how the crate's [`Tag`] (kind, variant, call number) becomes an MPI tag within
//! the communicator's `MPI_TAG_UB`, and how an MPI tag reads back in an error message.

use crate::mailbox::{Kind, Tag};
use ::mpi::ffi;
use ::mpi::topology::SimpleCommunicator;
use ::mpi::traits::AsRaw;
use std::os::raw::{c_int, c_void};

/// How a [`Tag`] becomes an MPI tag: the kind in bits 0–3, the variant in bits 4–8 (below),
/// and the low `seq_bits` bits of the sequence number above, so that the largest tag is
/// 2^(9 + seq_bits) − 1 ≤ `MPI_TAG_UB`. MPI guarantees `MPI_TAG_UB` ≥ 32767 (MPI 3.1 §8.1.2),
/// which leaves at least 6 sequence bits; Open MPI's 2^31 − 1 leaves 22.
///
/// The variants the crate uses are an algorithm id (below 16), an id with the flag
/// [`VARIANT_FLAG`] set (a v-form or an exclusive scan), or 0xff (a v-form's closing
/// barrier): five bits hold all of them, the id in bits 4–7 and the flag in bit 8, with 0xff
/// as the flag with id 15 (no algorithm has id 15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TagCodec {
    /// Bits of the sequence number that the tag keeps.
    seq_bits: u32,
}

impl TagCodec {
    /// The codec for a communicator whose `MPI_TAG_UB` is `tag_ub` (at most 2^31 − 1 since tags
    /// are C ints): as many sequence bits as fit, at most 23. `None` below MPI's guaranteed
    /// minimum, 32767.
    pub(crate) fn for_tag_ub(tag_ub: c_int) -> Option<TagCodec> {
        if tag_ub < 32767 {
            return None;
        }
        // The largest b with 2^b − 1 ≤ tag_ub.
        let bits = (tag_ub as u64 + 1).ilog2();
        Some(TagCodec {
            seq_bits: bits.min(31) - 9,
        })
    }

    /// The codec for `comm`, from its `MPI_TAG_UB` attribute (MPI 3.1 §8.1.2; 32767, the
    /// guaranteed minimum, if the attribute is somehow absent).
    pub(crate) fn for_comm(comm: &SimpleCommunicator) -> Option<TagCodec> {
        TagCodec::for_tag_ub(tag_ub(comm))
    }

    /// Sequence bits kept.
    #[cfg(all(test, not(loom)))]
    fn seq_bits(self) -> u32 {
        self.seq_bits
    }

    /// The MPI tag of `tag`. A variant outside the three forms of the type's docs would not
    /// fit (none of the crate's is; the call check compares the full id anyway).
    pub(crate) fn encode(self, tag: Tag) -> c_int {
        let v = tag.variant;
        debug_assert!(
            v & 0x70 == 0 || v == 0xff,
            "variant {v:#x} is neither an id below 16, with or without the flag, nor 0xff"
        );
        let code = u64::from((v & 0xf) | ((v & VARIANT_FLAG) >> 3));
        let seq = tag.seq & ((1u64 << self.seq_bits) - 1);
        ((seq << 9) | (code << 4) | (u64::from(tag.kind.code()) & 0xf)) as c_int
    }

    /// Describes an MPI tag and a byte count for an error message, through the mailboxes'
    /// wording ([`Tag::describe`]); the call number is its low bits.
    pub(crate) fn describe(self, mpi_tag: c_int, bytes: usize) -> String {
        let t = mpi_tag as u64;
        let (kind, code, seq) = (t & 0xf, (t >> 4) & 0x1f, t >> 9);
        let variant = match (code & 0xf) | ((code & 0x10) << 3) {
            0x8f => 0xff,
            v => v,
        };
        let what = Tag::describe((seq << 16) | (variant << 8) | kind);
        if kind == u64::from(Kind::P2p.code()) {
            format!("{what}, {bytes} bytes")
        } else {
            let bits = self.seq_bits;
            format!("{what} (call number mod 2^{bits}), {bytes} bytes")
        }
    }
}

/// The flag bit of a tag variant: a v-form call or an exclusive scan (the id is in the low
/// bits).
const VARIANT_FLAG: u8 = 0x80;

/// `comm`'s `MPI_TAG_UB` attribute (MPI 3.1 §8.1.2; 32767, the guaranteed minimum, if the
/// attribute is somehow absent).
pub(crate) fn tag_ub(comm: &SimpleCommunicator) -> c_int {
    let mut value: *mut c_int = std::ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: for the predefined attribute MPI_TAG_UB, MPI_Comm_get_attr stores a pointer
    // to an int owned by MPI into `value` (MPI 3.1 §6.7.2, §8.1.2) and sets `flag`; both
    // out-parameters point to live locals, and `comm` is a valid communicator.
    let rc = unsafe {
        ffi::MPI_Comm_get_attr(
            comm.as_raw(),
            ffi::MPI_TAG_UB as c_int,
            (&mut value as *mut *mut c_int).cast::<c_void>(),
            &mut flag,
        )
    };
    if rc == ffi::MPI_SUCCESS as c_int && flag != 0 && !value.is_null() {
        // SAFETY: MPI returned a valid pointer to the attribute's int (checked non-null),
        // which lives as long as the communicator.
        unsafe { *value }
    } else {
        32767
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tag_codec_fits_the_bound_and_reads_back() {
        assert_eq!(TagCodec::for_tag_ub(32766), None);
        let small = TagCodec::for_tag_ub(32767).unwrap();
        assert_eq!(small.seq_bits(), 6);
        let big = TagCodec::for_tag_ub(c_int::MAX).unwrap();
        assert_eq!(big.seq_bits(), 22);
        for codec in [small, big] {
            let ub = (1i64 << (codec.seq_bits() + 9)) - 1;
            for seq in [0u64, 1, 127, 128, 1 << 40, u64::MAX] {
                let tag = Tag {
                    kind: Kind::Coll(crate::Collective::ReduceScatter),
                    variant: 12,
                    seq,
                    op: 0,
                };
                let t = codec.encode(tag);
                assert!(t >= 0 && i64::from(t) <= ub, "{t} above {ub}");
                let d = codec.describe(t, 24);
                assert!(d.starts_with("reduce-scatter (collective call "), "{d}");
                assert!(d.ends_with("24 bytes"), "{d}");
            }
            let a = Tag {
                kind: Kind::Coll(crate::Collective::Allreduce),
                variant: 8,
                seq: 5,
                op: 0,
            };
            assert_ne!(codec.encode(a), codec.encode(a.with_variant(9)));
            // The flagged forms (v-forms, exclusive scans) and the closing barrier keep
            // distinct tags, and read back as they were.
            let flagged = a.with_variant(VARIANT_FLAG | 8);
            let closing = a.with_variant(0xff);
            let plain = codec.encode(a);
            assert_ne!(plain, codec.encode(flagged));
            assert_ne!(codec.encode(flagged), codec.encode(closing));
            let top = codec.encode(Tag {
                seq: u64::MAX,
                ..closing
            });
            assert!(top >= 0 && i64::from(top) <= ub, "{top} above {ub}");
            assert_ne!(codec.encode(a), codec.encode(Tag { seq: 6, ..a }));
            assert_eq!(
                codec.describe(codec.encode(Tag::P2P), 0),
                "a point-to-point message with tag 0, 0 bytes"
            );
        }
    }
}
