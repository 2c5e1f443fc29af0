//! Long copies in pieces: every copy of a message or block that can be long goes through
//! [`copy_elems`] or [`copy_slice`], which call `memcpy` on at most [`PIECE_BYTES`] at a time.
//!
//! **Why.** One `memcpy` of a long buffer is not one fast loop on every machine. glibc's x86
//! `memcpy` picks its method by size (tunables `x86_rep_movsb_threshold` and
//! `x86_non_temporal_threshold`, and on AMD parts a stop threshold for `rep movsb` near the L2
//! size). On the machine this crate is measured on (AMD EPYC VM, 1 MiB L2 per core, glibc 2.36)
//! the method used above the L2 size is slow and erratic, where the same bytes copied in
//! pieces of 16 KiB to 512 KiB are fast and steady; 64 KiB is in the middle of that plateau
//! (`cargo run --release -p corecoll-bench --example memcpy_pieces`).
//!
//! What one long call does to the collectives: the two-rank allgather in message-passing form
//! (ring, recursive doubling: one single-copy exchange) ran several times slower than the
//! direct allgather, which copies in chunks; and the calibration's ping-pong, whose long
//! messages are one such copy, measured β an order of magnitude apart from run to run. The
//! figures and commands:
//! `docs/results/2026-11-29-figures-behind-the-code.md`.
//!
//! Pieces cost one call each; in the runs above no piece size was slower on average than the
//! one call, at any buffer size from 256 KiB. Short copies are one piece.

use std::mem::size_of;
use std::ptr;

/// Bytes per `memcpy` call of a long copy: well below the 1 MiB L2 of the machine measured
/// (and of most server cores), where the one-call copy stays fast.
pub(crate) const PIECE_BYTES: usize = 64 << 10;

/// Copies `n` elements of `T` from `src` to `dst` in pieces of at most [`PIECE_BYTES`].
///
/// # Safety
/// As `ptr::copy_nonoverlapping(src, dst, n)`: `src` valid for reads and `dst` for writes of
/// `n` elements, both aligned, the two ranges not overlapping.
#[inline]
pub(crate) unsafe fn copy_elems<T>(src: *const T, dst: *mut T, n: usize) {
    if size_of::<T>() == 0 {
        return;
    }
    let piece = (PIECE_BYTES / size_of::<T>()).max(1);
    let mut at = 0;
    while at < n {
        let len = piece.min(n - at);
        // SAFETY: `at + len <= n`, so both ranges lie within what the caller vouched for, and
        // they do not overlap since the whole ranges do not.
        unsafe { ptr::copy_nonoverlapping(src.add(at), dst.add(at), len) };
        at += len;
    }
}

/// `dst.copy_from_slice(src)` in pieces of at most [`PIECE_BYTES`].
///
/// # Panics
/// If the lengths differ, as `copy_from_slice`.
#[inline]
pub(crate) fn copy_slice<T: Copy>(dst: &mut [T], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "copy_slice: lengths differ");
    // SAFETY: both slices hold `src.len()` elements and a `&mut` slice cannot overlap a `&`.
    unsafe { copy_elems(src.as_ptr(), dst.as_mut_ptr(), src.len()) }
}

/// `v.extend_from_slice(src)` in pieces of at most [`PIECE_BYTES`].
#[inline]
pub(crate) fn extend<T: Copy>(v: &mut Vec<T>, src: &[T]) {
    v.reserve(src.len());
    let len = v.len();
    // SAFETY: `reserve` made room for `src.len()` more elements after the `len` initialised
    // ones, a fresh allocation or spare capacity that `src` (a shared borrow, while `v` is
    // borrowed exclusively) cannot overlap; after the copy they are initialised `T`s.
    unsafe {
        copy_elems(src.as_ptr(), v.as_mut_ptr().add(len), src.len());
        v.set_len(len + src.len());
    }
}

/// `src.to_vec()` in pieces of at most [`PIECE_BYTES`].
#[inline]
pub(crate) fn to_vec<T: Copy>(src: &[T]) -> Vec<T> {
    let mut v = Vec::new();
    extend(&mut v, src);
    v
}

/// Longest copy [`copy_short`] takes.
pub(crate) const SHORT_BYTES: usize = 256;

/// Copies `bytes` bytes from `src` to `dst`: inline ([`copy_short`]) up to [`SHORT_BYTES`],
/// else by `memcpy`.
///
/// # Safety
/// As `ptr::copy_nonoverlapping(src, dst, bytes)`.
#[inline(always)]
pub(crate) unsafe fn copy_bytes(src: *const u8, dst: *mut u8, bytes: usize) {
    // SAFETY: the caller's contract, which is both copies'.
    unsafe {
        if bytes <= SHORT_BYTES {
            copy_short(src, dst, bytes)
        } else {
            ptr::copy_nonoverlapping(src, dst, bytes)
        }
    }
}

/// Copies `bytes` bytes (at most [`SHORT_BYTES`]) from `src` to `dst` inline: at most two
/// fixed-size moves, the first from the front and the second ending at the last byte (they
/// overlap unless `bytes` is a power of two), and no call. A `memcpy` of a length known only
/// at run time is a call and a dispatch on the length, a good part of a short message's cost;
/// the mailboxes' inline payloads and the persistent short allreduce's slots copy with this.
///
/// # Safety
/// As `ptr::copy_nonoverlapping(src, dst, bytes)`; `bytes <= SHORT_BYTES`.
#[inline(always)]
pub(crate) unsafe fn copy_short(src: *const u8, dst: *mut u8, bytes: usize) {
    /// Copies the first and the last `N` of the `bytes` bytes (`N ≤ bytes ≤ 2N`: together
    /// all of them).
    #[inline(always)]
    unsafe fn ends<const N: usize>(src: *const u8, dst: *mut u8, bytes: usize) {
        // SAFETY: both pieces, at 0 and at `bytes − N ≥ 0`, lie within the `bytes` bytes the
        // caller vouched for; unaligned accesses.
        unsafe {
            let head = ptr::read_unaligned(src.cast::<[u8; N]>());
            let tail = ptr::read_unaligned(src.add(bytes - N).cast::<[u8; N]>());
            ptr::write_unaligned(dst.cast::<[u8; N]>(), head);
            ptr::write_unaligned(dst.add(bytes - N).cast::<[u8; N]>(), tail);
        }
    }
    debug_assert!(bytes <= SHORT_BYTES);
    // SAFETY: each arm's N satisfies N ≤ bytes ≤ 2N (`ends`' contract), within the ranges
    // the caller vouched for.
    unsafe {
        match bytes {
            0 => {}
            1 => ends::<1>(src, dst, bytes),
            2..=3 => ends::<2>(src, dst, bytes),
            4..=7 => ends::<4>(src, dst, bytes),
            8..=15 => ends::<8>(src, dst, bytes),
            16..=31 => ends::<16>(src, dst, bytes),
            32..=63 => ends::<32>(src, dst, bytes),
            64..=127 => ends::<64>(src, dst, bytes),
            _ => ends::<128>(src, dst, bytes),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn short_copies_every_length_and_nothing_around() {
        let src: Vec<u8> = (0..=255u8)
            .map(|b| b.wrapping_mul(7).wrapping_add(3))
            .collect();
        for bytes in 0..=SHORT_BYTES {
            let mut dst = vec![0xAAu8; SHORT_BYTES + 2];
            // SAFETY: `src` holds 256 bytes and `dst` from index 1 holds 257, apart.
            unsafe { copy_short(src.as_ptr(), dst.as_mut_ptr().add(1), bytes) };
            assert_eq!(&dst[1..=bytes], &src[..bytes], "{bytes} bytes");
            assert_eq!(dst[0], 0xAA);
            assert!(dst[bytes + 1..].iter().all(|&b| b == 0xAA), "{bytes} bytes");
        }
    }

    #[test]
    fn copies_every_length_around_the_piece() {
        let piece = PIECE_BYTES / 8;
        for n in [0, 1, 7, piece - 1, piece, piece + 1, 3 * piece + 5] {
            let src: Vec<u64> = (0..n as u64).map(|i| i * 2654435761).collect();
            let mut dst = vec![0u64; n + 1];
            copy_slice(&mut dst[..n], &src);
            assert_eq!(&dst[..n], &src[..], "n = {n}");
            assert_eq!(dst[n], 0, "n = {n}: wrote past the end");
        }
    }

    #[test]
    fn zero_sized_and_byte_elements() {
        let mut units = [(); 5];
        copy_slice(&mut units, &[(); 5]);
        let src: Vec<u8> = (0..(PIECE_BYTES + 3)).map(|i| i as u8).collect();
        let mut dst = vec![0u8; src.len()];
        copy_slice(&mut dst, &src);
        assert_eq!(dst, src);
    }

    #[test]
    fn extend_and_to_vec_append_in_order() {
        let src: Vec<u32> = (0..(PIECE_BYTES / 4 * 2 + 9) as u32).collect();
        let mut v = vec![7u32, 8];
        extend(&mut v, &src);
        assert_eq!(&v[..2], &[7, 8]);
        assert_eq!(&v[2..], &src[..]);
        assert_eq!(to_vec(&src), src);
        assert!(to_vec::<u8>(&[]).is_empty());
    }

    #[test]
    #[should_panic(expected = "lengths differ")]
    fn different_lengths_panic() {
        copy_slice(&mut [0u8; 3], &[1u8; 4]);
    }
}
