//! The eager payload arena of a mailbox (a byte ring filled in cache-line pieces and freed in
//! message order; see the parent module).

use super::CHUNK;
#[cfg(loom)]
use crate::sync::UnsafeCell;
use std::mem::MaybeUninit;

/// One cache line of arena bytes: the arena is made of them so that it is line-aligned.
#[cfg(not(loom))]
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([MaybeUninit<u8>; CHUNK]);

/// The eager payload ring. Outside loom one cell per line, reached through raw pointers only
/// (a `&mut` to the whole ring, even for an instant, would claim every line while a reader is
/// in another: a data race in Rust's model, which Miri reports); under loom one cell per
/// chunk, so that loom checks exactly the byte ranges the protocol keeps apart.
pub(super) struct Arena {
    #[cfg(not(loom))]
    lines: Box<[std::cell::UnsafeCell<Line>]>,
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
            lines: (0..len / CHUNK)
                .map(|_| std::cell::UnsafeCell::new(Line([MaybeUninit::uninit(); CHUNK])))
                .collect(),
            #[cfg(loom)]
            chunks: (0..len / CHUNK)
                .map(|_| UnsafeCell::new([MaybeUninit::uninit(); CHUNK]))
                .collect(),
            len,
        }
    }

    /// The first byte of the ring, with the right to write any line of it (a line's cell
    /// allows writes through a pointer made from a shared borrow).
    #[cfg(not(loom))]
    fn base(&self) -> *mut u8 {
        std::cell::UnsafeCell::raw_get(self.lines.as_ptr()).cast::<u8>()
    }

    /// Copies `len` bytes from `src` to offset `at`.
    ///
    /// # Safety
    /// `src` readable for `len` bytes; `at + len <= self.len`; nobody reads the range now.
    pub(super) unsafe fn write(&self, at: usize, src: *const u8, len: usize) {
        // SAFETY: per the contract; the range lies inside the lines, reached through the
        // cells' raw pointer.
        #[cfg(not(loom))]
        unsafe {
            std::ptr::copy_nonoverlapping(src, self.base().add(at), len)
        };
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
            // SAFETY: per the contract, the range lies inside the lines.
            f(unsafe { self.base().add(at) }.cast_const())
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
