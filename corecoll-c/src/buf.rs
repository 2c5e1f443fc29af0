//! C buffers as Rust slices, checked where a C caller's mistake can be seen: NULL with a
//! non-zero count, a pointer not aligned for its element type, a count whose bytes overflow.
//! What cannot be seen (a buffer shorter than its count, one freed too early) is the caller's
//! promise, as in MPI.

use crate::error::{CError, CResult};
use std::ffi::c_void;

/// `CORECOLL_IN_PLACE`'s address.
pub(crate) const IN_PLACE: usize = 1;

/// Whether `ptr` is `CORECOLL_IN_PLACE`.
pub(crate) fn in_place(ptr: *const c_void) -> bool {
    ptr as usize == IN_PLACE
}

/// Whether a reduction's `sendbuf` is `CORECOLL_IN_PLACE` or `recvbuf` itself (MPI asks for
/// `MPI_IN_PLACE` there; the same buffer twice is taken as meaning it).
#[inline]
pub(crate) fn in_place_or_same(sendbuf: *const c_void, recvbuf: *const c_void) -> bool {
    in_place(sendbuf) || std::ptr::eq(sendbuf, recvbuf)
}

/// Checks `ptr` as a buffer of `n` elements of `T`: the pointer to slice from, a dangling one
/// for an empty buffer.
fn check<T>(ptr: *const c_void, n: usize, which: &'static str) -> CResult<*const T> {
    if n == 0 {
        return Ok(std::ptr::NonNull::<T>::dangling().as_ptr());
    }
    if n.checked_mul(size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(CError::Count(which, n as i64));
    }
    if ptr.is_null() || in_place(ptr) || !(ptr as usize).is_multiple_of(align_of::<T>()) {
        return Err(CError::Buffer(which));
    }
    Ok(ptr as *const T)
}

/// The `n` elements of `T` at `ptr`.
///
/// # Safety
/// Unless NULL, misaligned or `n` is 0, `ptr` addresses `n` initialised elements of `T` that
/// stay valid, and unwritten by others, for `'a`.
#[inline]
pub(crate) unsafe fn slice<'a, T>(
    ptr: *const c_void,
    n: usize,
    which: &'static str,
) -> CResult<&'a [T]> {
    let p = check::<T>(ptr, n, which)?;
    // SAFETY: checked non-null and aligned (or dangling for 0); the rest is the caller's.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// The `n` elements of `T` at `ptr`, to write.
///
/// # Safety
/// As `slice`, and nothing else reads or writes them for `'a`.
#[inline]
pub(crate) unsafe fn slice_mut<'a, T>(
    ptr: *mut c_void,
    n: usize,
    which: &'static str,
) -> CResult<&'a mut [T]> {
    let p = check::<T>(ptr, n, which)? as *mut T;
    // SAFETY: as in `slice`, exclusive by the caller's promise.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// The buffer a reduction works in place on: `recvbuf`'s `n` elements, with `sendbuf`'s copied
/// in unless the call is in place (`in_place_or_same`).
///
/// # Safety
/// As `slice_mut` for `recvbuf`, and `slice` for `sendbuf` unless in place.
pub(crate) unsafe fn reduced_in<'a, T: Copy>(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: usize,
) -> CResult<&'a mut [T]> {
    // SAFETY: the caller's promises.
    let recv = unsafe { slice_mut::<T>(recvbuf, n, "recvbuf") }?;
    if !in_place_or_same(sendbuf, recvbuf) {
        // SAFETY: as above.
        recv.copy_from_slice(unsafe { slice::<T>(sendbuf, n, "sendbuf") }?);
    }
    Ok(recv)
}

/// `n` counts (or displacements) of a v collective, as `usize`.
///
/// # Safety
/// As `slice` for `n` `c_int`s.
pub(crate) unsafe fn counts(
    ptr: *const std::ffi::c_int,
    n: usize,
    which: &'static str,
) -> CResult<Vec<usize>> {
    // SAFETY: the caller's promise.
    let ints: &[std::ffi::c_int] = unsafe { slice(ptr as *const c_void, n, which) }?;
    ints.iter()
        .map(|&c| usize::try_from(c).map_err(|_| CError::Count(which, i64::from(c))))
        .collect()
}
