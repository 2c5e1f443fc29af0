//! The slots of a short allreduce folded on them (`algorithms::allreduce::folded`: persistent
//! starts, and the blocking call): each rank has two halves, written only by it, each a
//! sequence number and the rank's contribution to one start, in the same cache lines (a
//! contribution of up to 56 bytes shares the sequence number's line, so that reading it costs
//! one line transfer). A half holds `B` bytes of contribution, [`SLOT_BYTES`] unless said.
//!
//! Start k (1, 2, …) of rank r writes r's contribution into its half k mod 2 and then stores k
//! into that half's sequence number (release); a reader that loads k or more there (acquire)
//! reads the contribution. Why the writer never overwrites a half while a reader is in it: the
//! next write to half k mod 2 is start k + 2, and a rank starts k + 2 only after its own start
//! k + 1 has completed, which it does only after every rank has published k + 1 — and a rank
//! publishes k + 1 only after it has finished reading every rank's half of start k. The loom
//! model beside the algorithm checks this.

use crate::sync::{AtomicU64, Ordering, UnsafeCell};
use std::mem::MaybeUninit;

/// Bytes of a contribution a half holds, unless said: the persistent folds'.
pub(crate) const SLOT_BYTES: usize = 248;

/// One half of a rank's slots: a sequence number and a contribution of `B` bytes, aligned to a
/// cache line (`B + 8` a multiple of 64 wastes nothing: 248 makes 256 bytes).
#[repr(C, align(64))]
struct Half<const B: usize> {
    /// The start whose contribution `data` holds (0: none yet). Written by the owner only.
    seq: AtomicU64,
    /// The contribution, at offset 8 (aligned to 8). Written by the owner only, before `seq`.
    data: UnsafeCell<[MaybeUninit<u8>; B]>,
}

/// Bytes of one rank's two halves.
#[cfg(all(not(loom), any(feature = "mpi", test)))]
pub(crate) const RANK_BYTES: usize = std::mem::size_of::<[Half<SLOT_BYTES>; 2]>();

/// The slots of one persistent short allreduce, shared by its ranks: in memory of their own
/// (threads of one process, [`Slots::new`]) or in a node's segment (processes of one node,
/// `Slots::within`).
pub(crate) struct Slots<const B: usize = SLOT_BYTES> {
    /// The first rank's halves; `ranks` of them follow one another.
    halves: *const [Half<B>; 2],
    ranks: usize,
    /// What keeps the halves' memory alive (the halves themselves, or a mapping that is
    /// `Send` and `Sync`).
    _keep: Box<dyn std::any::Any>,
}

// SAFETY: the halves' cells are written by their owner only, and read by others only after
// the owner's release store of the sequence number and before its next write to that half
// (module docs); the sequence numbers are atomics.
unsafe impl<const B: usize> Sync for Slots<B> {}
// SAFETY: see `Sync`; nothing in `Slots` is tied to a thread.
unsafe impl<const B: usize> Send for Slots<B> {}

impl<const B: usize> std::fmt::Debug for Slots<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slots").field("ranks", &self.ranks).finish()
    }
}

impl<const B: usize> Slots<B> {
    /// Slots for `p` ranks, none published.
    pub(crate) fn new(p: usize) -> Slots<B> {
        let half = || Half {
            seq: AtomicU64::new(0),
            data: UnsafeCell::new([MaybeUninit::uninit(); B]),
        };
        // A `Vec`, not a `Box`: moving a `Box` into `_keep` would assert that it is the only
        // way to its memory and so void the pointer taken from it (Stacked Borrows, as Miri
        // checks); moving a `Vec` leaves its buffer's pointers valid.
        let halves: Vec<[Half<B>; 2]> = (0..p).map(|_| [half(), half()]).collect();
        Slots {
            halves: halves.as_ptr(),
            ranks: p,
            _keep: Box::new(halves),
        }
    }

    /// Slots for `ranks` ranks in memory shared with other processes: `ranks · RANK_BYTES`
    /// bytes at `at`, which `keep` keeps mapped.
    ///
    /// # Safety
    /// `at` is aligned to 64 and valid for reads and writes of `ranks · RANK_BYTES` bytes for
    /// as long as `keep` lives; the memory was zeroed when made, or has been used only as such
    /// slots since; every process that maps it follows the module's protocol, each rank
    /// publishing into its own halves only.
    #[cfg(all(not(loom), any(feature = "mpi", test)))]
    pub(crate) unsafe fn within(
        at: *mut u8,
        ranks: usize,
        keep: Box<dyn std::any::Any + Send + Sync>,
    ) -> Slots<B> {
        debug_assert!((at as usize).is_multiple_of(64));
        Slots {
            halves: at.cast_const().cast(),
            ranks,
            _keep: Box::new(keep),
        }
    }

    /// Rank `r`'s halves.
    #[inline]
    fn of(&self, r: usize) -> &[Half<B>; 2] {
        assert!(r < self.ranks);
        // SAFETY: `halves` points to `ranks` pairs of halves that `_keep` keeps alive
        // (`new`, `within`), and `r` is one of them.
        unsafe { &*self.halves.add(r) }
    }

    /// Rank `r`'s contribution to start `k`: the bytes of `parts` (each a pointer and a
    /// length), one after the other, then the sequence number.
    ///
    /// # Safety
    /// Only rank `r` publishes into its slots; the parts' lengths add up to at most
    /// `B` and each part is readable for its length; start `k − 1` of rank `r` has
    /// completed (every rank has published it, [`Slots::reached`]), and so every rank has
    /// finished reading start `k − 2`.
    #[inline]
    pub(crate) unsafe fn publish(&self, r: usize, k: u64, parts: &[(*const u8, usize)]) {
        let half = &self.of(r)[(k % 2) as usize];
        half.data.with_mut(|d| {
            let mut at = 0;
            for &(src, bytes) in parts {
                debug_assert!(at + bytes <= B);
                // SAFETY: no reader is in this half (contract), `src` is readable for `bytes`,
                // and the part ends within the half's `B` bytes.
                unsafe { crate::copy::copy_bytes(src, d.cast::<u8>().add(at), bytes) };
                at += bytes;
            }
        });
        half.seq.store(k, Ordering::Release);
    }

    /// Rank `r`'s sequence numbers back to 0, for slots used again from start 1 (`process::node`'s
    /// regions): no other rank may look at `r`'s halves until `r` says so by a release store
    /// of its own after this.
    #[cfg(any(feature = "mpi", test))]
    pub(crate) fn reset(&self, r: usize) {
        for half in self.of(r) {
            half.seq.store(0, Ordering::Relaxed);
        }
    }

    /// Whether rank `q` has published start `k` (or a later one).
    #[inline]
    pub(crate) fn reached(&self, q: usize, k: u64) -> bool {
        // A later start in the same half (k + 2 …) implies start k too.
        self.of(q)[(k % 2) as usize].seq.load(Ordering::Acquire) >= k
    }

    /// Runs `f` on rank `q`'s contribution to start `k` (a pointer to it, aligned to 8).
    ///
    /// # Safety
    /// [`Slots::reached`]`(q, k)` has returned true on this thread, and the caller has not yet
    /// published start `k + 1` (module docs: the half stays as it is until then).
    #[inline]
    pub(crate) unsafe fn read<R>(&self, q: usize, k: u64, f: impl FnOnce(*const u8) -> R) -> R {
        self.of(q)[(k % 2) as usize]
            .data
            .with(|d| f(d.cast::<u8>()))
    }
}
