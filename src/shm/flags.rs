//! The flags of the barrier on shared flags (`algorithms::flag_barrier`): three epoch words
//! per rank, each on the rank's own cache line and written by that rank only.

use crate::sync::{AtomicU64, CachePadded};

/// One rank's words. Every word is written by the owning rank only, with release, and read by
/// its pollers with acquire; each holds the epoch of the last call it reached.
pub(crate) struct Flag {
    /// A member's last call arrived at.
    pub(crate) arrived: AtomicU64,
    /// A leader's last call whose group had all arrived.
    pub(crate) gathered: AtomicU64,
    /// A leader's last call released to its group.
    pub(crate) released: AtomicU64,
}

/// The barrier flags of a communicator of p ranks: one cache-padded [`Flag`] per rank.
pub(crate) struct Flags {
    /// The flags, by communicator rank.
    flags: Box<[CachePadded<Flag>]>,
}

impl Flags {
    /// Flags for `p` ranks, at call 0 (every call is numbered 1 or above, wrapping aside).
    pub(crate) fn new(p: usize) -> Self {
        Flags {
            flags: (0..p)
                .map(|_| {
                    CachePadded::new(Flag {
                        arrived: AtomicU64::new(0),
                        gathered: AtomicU64::new(0),
                        released: AtomicU64::new(0),
                    })
                })
                .collect(),
        }
    }

    /// The flags, by communicator rank.
    pub(crate) fn all(&self) -> &[CachePadded<Flag>] {
        &self.flags
    }
}

impl std::fmt::Debug for Flags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flags")
            .field("ranks", &self.flags.len())
            .finish_non_exhaustive()
    }
}
