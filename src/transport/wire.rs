//! The wire form of typed messages: header of `n` elements of `T`, zero-sized elements sent
//! as their count, and reading a received payload into a buffer or combining it with one.

use super::shm::Outgoing;
use crate::mailbox::{op_bits, Header, INLINE};
use crate::mailbox::{type_fingerprint, Elem, Tag};
use std::mem::{size_of, size_of_val};

/// Bytes on the wire for `n` elements of `T`. Zero-sized elements travel as their count (one
/// `u64`), so that counts are checked for them too.
pub(crate) fn wire_len<T: Elem>(n: usize) -> usize {
    if size_of::<T>() == 0 {
        size_of::<u64>()
    } else {
        n * size_of::<T>()
    }
}

pub(super) fn header_of<T: Elem>(tag: Tag, n: usize) -> Header {
    Header {
        tag: tag.encode(),
        // The op of a reduction travels in the type word: another op is a mismatch too.
        typ: type_fingerprint::<T>() ^ op_bits(tag.op),
        len: wire_len::<T>(n),
    }
}

/// Where the wire bytes of `data` are, and how many: the slice itself, or for a zero-sized
/// `T` its count, which `count` must hold (and outlive the send).
pub(crate) fn payload<T: Elem>(data: &[T], count: &u64) -> (*const u8, usize) {
    if size_of::<T>() == 0 {
        ((count as *const u64).cast(), size_of::<u64>())
    } else {
        (data.as_ptr().cast(), size_of_val(data))
    }
}

/// The message carrying `data`; `count` must hold `data.len()` and outlive the call (it is the
/// payload when `T` is zero-sized).
pub(super) fn outgoing<T: Elem>(dest: usize, tag: Tag, data: &[T], count: &u64) -> Outgoing {
    Outgoing {
        dest,
        header: header_of::<T>(tag, data.len()),
        data: payload(data, count).0,
    }
}

/// Reads `buf.len()` elements of `T` from `p` into `buf`; returns the count received.
///
/// # Safety
/// `p` must point to the `wire_len::<T>(buf.len())` readable bytes of a message whose header
/// matched, which are a copy of valid `T`s.
pub(super) unsafe fn copy_in<T: Elem>(p: *const u8, buf: &mut [T]) -> usize {
    if size_of::<T>() == 0 {
        // SAFETY: a zero-sized payload is its count, one u64 (see `wire_len`).
        return unsafe { p.cast::<u64>().read_unaligned() } as usize;
    }
    let (dst, len) = (buf.as_mut_ptr().cast::<u8>(), size_of_val(buf));
    // SAFETY: per the contract; `buf` is exclusively borrowed and disjoint from `p`'s memory
    // (a mailbox cell, the arena, or another call's lent slice).
    unsafe {
        if len <= INLINE {
            crate::copy::copy_short(p, dst, len)
        } else {
            crate::copy::copy_elems(p, dst, len)
        }
    };
    buf.len()
}

/// Combines `acc.len()` incoming elements at `p` into `acc`, in place where `p` is aligned for
/// `T` (a lent slice always is), through a temporary otherwise (an eager cell); returns the
/// count received.
///
/// # Safety
/// As [`copy_in`].
pub(crate) unsafe fn reduce_in<T: Elem>(
    p: *const u8,
    acc: &mut [T],
    combine: &mut dyn FnMut(&mut [T], &[T]),
) -> usize {
    let n = acc.len();
    if size_of::<T>() == 0 {
        // SAFETY: as in `copy_in`.
        let got = unsafe { p.cast::<u64>().read_unaligned() } as usize;
        if got == n {
            let dangling = std::ptr::NonNull::<T>::dangling().as_ptr();
            // SAFETY: a slice of zero-sized values needs only a dangling, aligned pointer.
            combine(acc, unsafe { std::slice::from_raw_parts(dangling, n) });
        }
        return got;
    }
    if (p as usize).is_multiple_of(std::mem::align_of::<T>()) {
        // SAFETY: aligned, readable for n elements that are valid `T`s (contract), and not
        // written by anyone while the mailbox holds the message (eager) or the claim (lent).
        let incoming = unsafe { std::slice::from_raw_parts(p.cast::<T>(), n) };
        combine(acc, incoming);
    } else {
        let mut tmp: Vec<T> = Vec::with_capacity(n);
        // SAFETY: `tmp` has capacity for n elements; the bytes are n valid `T`s (contract).
        unsafe {
            std::ptr::copy_nonoverlapping(p, tmp.as_mut_ptr().cast::<u8>(), size_of_val(acc));
            tmp.set_len(n);
        }
        combine(acc, &tmp);
    }
    n
}
