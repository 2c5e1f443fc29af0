//! Receiving in the MPI transport: the matched probe of the next message from a source and its
//! check against what is expected, the matched receive, and the reducing receive through the
//! scratch buffer ([`Scratch`]) that the transport's maker owns.

use super::transport::ok;
use super::{poll_politely, MpiTransport};
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Tag};
use crate::transport::wire::{reduce_in, wire_len};
use ::mpi::ffi;
use ::mpi::traits::AsRaw;
use std::cell::RefCell;
use std::mem::{size_of, MaybeUninit};
use std::os::raw::{c_int, c_void};

/// One unit of the reducing receives' scratch buffer: 64 bytes aligned to 64, so that the
/// buffer is aligned for any element type up to a cache line (others go through
/// [`reduce_in`]'s unaligned path).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct Chunk([u8; 64]);

/// The scratch buffer of the reducing receives, owned by whoever makes transports (one per
/// communicator) and lent to each.
pub(crate) type Scratch = RefCell<Vec<Chunk>>;

/// The start of `scratch` grown to at least `bytes` bytes (64-byte aligned, never shrunk).
pub(crate) fn scratch_bytes(scratch: &mut Vec<Chunk>, bytes: usize) -> *mut u8 {
    let chunks = bytes.div_ceil(size_of::<Chunk>());
    if scratch.len() < chunks {
        scratch.resize(chunks, Chunk([0; 64]));
    }
    scratch.as_mut_ptr().cast::<u8>()
}

impl MpiTransport<'_> {
    /// Probes the next message from `src` (any tag: `MPI_Mprobe`) and returns it if its tag is
    /// `tag` and it holds `bytes` bytes; otherwise receives it into a throw-away buffer and
    /// returns the mismatch.
    pub(super) fn probe(&self, src: usize, tag: Tag, bytes: usize) -> Result<ffi::MPI_Message> {
        let mut msg = MaybeUninit::<ffi::MPI_Message>::uninit();
        let mut status = MaybeUninit::<ffi::MPI_Status>::uninit();
        if self.polite {
            let mut found: c_int = 0;
            poll_politely(|| {
                // SAFETY: the out-parameters point to live locals; `src` is a checked rank,
                // the communicator valid; RSMPI_ANY_TAG is MPI's wildcard.
                let rc = unsafe {
                    ffi::MPI_Improbe(
                        src as c_int,
                        ffi::RSMPI_ANY_TAG,
                        self.comm.as_raw(),
                        &mut found,
                        msg.as_mut_ptr(),
                        status.as_mut_ptr(),
                    )
                };
                ok(rc, "MPI_Improbe");
                found != 0
            });
        } else {
            // SAFETY: both out-parameters point to live locals; `src` is a checked rank, the
            // communicator valid; RSMPI_ANY_TAG is MPI's wildcard.
            let rc = unsafe {
                ffi::MPI_Mprobe(
                    src as c_int,
                    ffi::RSMPI_ANY_TAG,
                    self.comm.as_raw(),
                    msg.as_mut_ptr(),
                    status.as_mut_ptr(),
                )
            };
            ok(rc, "MPI_Mprobe");
        }
        // SAFETY: MPI_Mprobe succeeded, or MPI_Improbe found a message: both wrote both.
        let (msg, status) = unsafe { (msg.assume_init(), status.assume_init()) };
        let mut got: c_int = 0;
        // SAFETY: `status` describes the probed message; `got` is a live out-parameter.
        ok(
            unsafe { ffi::MPI_Get_count(&status, ffi::RSMPI_UINT8_T, &mut got) },
            "MPI_Get_count",
        );
        let want = self.codec.encode(tag);
        if status.MPI_TAG == want && usize::try_from(got) == Ok(bytes) {
            return Ok(msg);
        }
        let got = usize::try_from(got).unwrap_or(0);
        let mut sink = vec![0u8; got];
        // SAFETY: `sink` is writable for the message's `got` bytes; `msg` is the handle
        // MPI_Mprobe returned, received exactly once here.
        unsafe { self.mrecv(msg, sink.as_mut_ptr().cast(), got) };
        Err(Error::Mismatch {
            rank: self.rank,
            peer: src,
            op: self.op,
            expected: self.codec.describe(want, bytes),
            found: self.codec.describe(status.MPI_TAG, got),
        })
    }

    /// Receives the probed message `msg` of `bytes` bytes into `ptr` (`MPI_Mrecv`).
    ///
    /// # Safety
    /// `ptr` must be writable for `bytes` bytes, and `msg` a message of that size returned by
    /// `MPI_Mprobe` and not yet received.
    unsafe fn mrecv(&self, mut msg: ffi::MPI_Message, ptr: *mut c_void, bytes: usize) {
        if self.polite {
            let mut req = MaybeUninit::<ffi::MPI_Request>::uninit();
            // SAFETY: per the contract, as for MPI_Mrecv below; the request is completed
            // before this function returns.
            let rc = unsafe {
                ffi::MPI_Imrecv(
                    ptr,
                    bytes as c_int,
                    ffi::RSMPI_UINT8_T,
                    &mut msg,
                    req.as_mut_ptr(),
                )
            };
            ok(rc, "MPI_Imrecv");
            // SAFETY: MPI_Imrecv succeeded and wrote the request.
            self.wait_all(&mut [unsafe { req.assume_init() }]);
            return;
        }
        // SAFETY: per the contract (the count fits: it is the int count MPI reported, or one
        // `probe` compared with it).
        let rc = unsafe {
            ffi::MPI_Mrecv(
                ptr,
                bytes as c_int,
                ffi::RSMPI_UINT8_T,
                &mut msg,
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        ok(rc, "MPI_Mrecv");
    }

    /// Receives exactly `buf.len()` elements from `src` straight into `buf` (a zero-sized
    /// `T`: its count, compared with `buf.len()`).
    pub(super) fn recv_into<T: Elem>(&self, src: usize, tag: Tag, buf: &mut [T]) -> Result<()> {
        let bytes = wire_len::<T>(buf.len());
        let msg = self.probe(src, tag, bytes)?;
        if size_of::<T>() == 0 {
            let mut got = 0u64;
            // SAFETY: `got` is writable for the message's 8 bytes (compared by `probe`).
            unsafe { self.mrecv(msg, (&mut got as *mut u64).cast(), bytes) };
            return self.check_count(src, tag, buf.len(), got);
        }
        // SAFETY: `buf` is exclusively borrowed and writable for `bytes` bytes; whatever
        // bytes arrive were a sender's valid `T`s (the call check compares element types).
        unsafe { self.mrecv(msg, buf.as_mut_ptr().cast(), bytes) };
        Ok(())
    }

    /// Compares the count a zero-sized message carried with the one expected.
    fn check_count(&self, src: usize, tag: Tag, want: usize, got: u64) -> Result<()> {
        if got == want as u64 {
            return Ok(());
        }
        let what = |n: u64| {
            format!(
                "{} of {n} zero-sized elements",
                self.codec
                    .describe(self.codec.encode(tag), size_of::<u64>())
            )
        };
        Err(Error::Mismatch {
            rank: self.rank,
            peer: src,
            op: self.op,
            expected: what(want as u64),
            found: what(got),
        })
    }

    /// Receives `acc.len()` elements from `src` into the scratch buffer and combines them into
    /// `acc`, once `before_combine` (the exchanges' wait for their send) has run.
    pub(super) fn recv_reduce_then<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        acc: &mut [T],
        combine: &mut dyn FnMut(&mut [T], &[T]),
        before_combine: impl FnOnce(),
    ) -> Result<()> {
        let bytes = wire_len::<T>(acc.len());
        let msg = match self.probe(src, tag, bytes) {
            Ok(msg) => msg,
            Err(e) => {
                before_combine();
                return Err(e);
            }
        };
        let mut scratch = self.scratch.borrow_mut();
        let p = scratch_bytes(&mut scratch, bytes);
        // SAFETY: the scratch buffer holds at least `bytes` bytes and is borrowed exclusively
        // here.
        unsafe { self.mrecv(msg, p.cast(), bytes) };
        before_combine();
        // SAFETY: `p` holds the `wire_len::<T>(acc.len())` bytes just received, a copy of the
        // sender's valid `T`s (or the count of zero-sized ones).
        let got = unsafe { reduce_in(p, acc, combine) };
        if size_of::<T>() == 0 {
            return self.check_count(src, tag, acc.len(), got as u64);
        }
        Ok(())
    }
}
