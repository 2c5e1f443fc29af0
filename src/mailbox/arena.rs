//! The eager payload arena of a mailbox (a byte ring filled in cache-line pieces and freed in
//! message order; see the parent module), and the small-copy helper for inline payloads.

use super::CHUNK;
use crate::sync::UnsafeCell;
use std::mem::MaybeUninit;

/// One cache line of arena bytes: the arena is made of them so that it is line-aligned.
#[cfg(not(loom))]
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([MaybeUninit<u8>; CHUNK]);

/// The eager payload ring. Outside loom one cell over all bytes; under loom one cell per
/// chunk, so that loom checks exactly the byte ranges the protocol keeps apart.
pub(super) struct Arena {
    #[cfg(not(loom))]
    bytes: UnsafeCell<Box<[Line]>>,
    #[cfg(loom)]
    chunks: Box<[UnsafeCell<[MaybeUninit<u8>; CHUNK]>]>,
    /// Capacity in bytes (a multiple of `CHUNK`).
    pub(super) len: usize,
}

impl Arena {
    pub(super) fn new(bytes: usize) -> Self {
        let len = bytes.div_ceil(CHUNK).max(1) * CHUNK;
        Arena {
            #[cfg(not(loom))]
            bytes: UnsafeCell::new(
                vec![Line([MaybeUninit::uninit(); CHUNK]); len / CHUNK].into_boxed_slice(),
            ),
            #[cfg(loom)]
            chunks: (0..len / CHUNK)
                .map(|_| UnsafeCell::new([MaybeUninit::uninit(); CHUNK]))
                .collect(),
            len,
        }
    }

    /// Copies `len` bytes from `src` to offset `at`.
    ///
    /// # Safety
    /// `src` readable for `len` bytes; `at + len <= self.len`; nobody reads the range now.
    pub(super) unsafe fn write(&self, at: usize, src: *const u8, len: usize) {
        #[cfg(not(loom))]
        self.bytes.with_mut(|b| {
            // SAFETY: per the contract; the range lies inside the boxed slice.
            unsafe {
                std::ptr::copy_nonoverlapping(src, (*b).as_mut_ptr().cast::<u8>().add(at), len)
            }
        });
        #[cfg(loom)]
        for (i, c) in (at / CHUNK..(at + len).div_ceil(CHUNK)).enumerate() {
            let (from, n) = (i * CHUNK, CHUNK.min(len - i * CHUNK));
            // SAFETY: per the contract, chunk by chunk (messages start on chunk boundaries).
            self.chunks[c].with_mut(|d| unsafe {
                std::ptr::copy_nonoverlapping(src.add(from), (*d).as_mut_ptr().cast(), n)
            });
        }
    }

    /// Calls `f` with a pointer to the `len` bytes at offset `at`.
    ///
    /// # Safety
    /// The range was written by `write` and nobody writes it now; `at + len <= self.len`.
    pub(super) unsafe fn read<R>(
        &self,
        at: usize,
        len: usize,
        f: impl FnOnce(*const u8) -> R,
    ) -> R {
        #[cfg(not(loom))]
        {
            let _ = len;
            // SAFETY: per the contract.
            self.bytes
                .with(|b| f(unsafe { (*b).as_ptr().cast::<u8>().add(at) }))
        }
        #[cfg(loom)]
        {
            let mut copy = vec![0u8; len];
            for (i, c) in (at / CHUNK..(at + len).div_ceil(CHUNK)).enumerate() {
                let (to, n) = (i * CHUNK, CHUNK.min(len - i * CHUNK));
                // SAFETY: per the contract, chunk by chunk.
                self.chunks[c].with(|d| unsafe {
                    std::ptr::copy_nonoverlapping(
                        (*d).as_ptr().cast(),
                        copy.as_mut_ptr().add(to),
                        n,
                    )
                });
            }
            f(copy.as_ptr())
        }
    }
}

/// Copies `len <= 16` bytes with at most two overlapping unaligned loads and stores of the
/// largest width that fits, instead of a call to `memcpy` (whose call overhead is a good part
/// of a small message's cost).
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes, not overlapping.
#[inline(always)]
pub(crate) unsafe fn copy_small(src: *const u8, dst: *mut u8, len: usize) {
    debug_assert!(len <= 16);
    // SAFETY (every arm): both accesses of each arm lie within the first `len` bytes of `src`
    // and of `dst` (the second starts at `len − width` ≥ 0), and unaligned accesses are used.
    unsafe {
        macro_rules! two {
            ($t:ty) => {{
                let w = std::mem::size_of::<$t>();
                let a = src.cast::<$t>().read_unaligned();
                let b = src.add(len - w).cast::<$t>().read_unaligned();
                dst.cast::<$t>().write_unaligned(a);
                dst.add(len - w).cast::<$t>().write_unaligned(b);
            }};
        }
        match len {
            8..=16 => two!(u64),
            4..=7 => two!(u32),
            2..=3 => two!(u16),
            1 => *dst = *src,
            _ => {}
        }
    }
}
