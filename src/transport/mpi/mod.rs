//! [`Transport`] between MPI processes (feature `mpi`): one rank is one process, the crate's
//! rank is the communicator's rank, and every schedule of the crate runs over MPI
//! point-to-point as it runs over the shared-memory mailboxes. Träff 2021 ran the dual-root
//! allreduce the same way, over `MPI_Sendrecv`.
//!
//! **Wire.** Bytes (`MPI_UINT8_T`), straight from and (for plain receives) straight into the
//! caller's slice; elements of a zero-sized type travel as their count, one `u64`, as in the
//! mailboxes ([`super::wire`]). A reducing receive lands in a scratch buffer owned by the
//! caller of [`MpiTransport::new`] (grown, never shrunk, so steady-state calls allocate
//! nothing) and is combined from there with `combine(acc, incoming)`.
//!
//! **Checking without a header.** The mailboxes carry a header (tag, element type, length)
//! beside every message; here the MPI envelope does that work. The crate's [`Tag`] (kind,
//! variant, low bits of the call's sequence number) is encoded into the MPI tag
//! ([`TagCodec`]), and a receive is a matched probe from the expected source with *any* tag
//! (`MPI_Mprobe`, MPI 3.1 §3.8.2) followed by the matched receive of exactly that message
//! (`MPI_Mrecv`/`MPI_Imrecv`). MPI does not let messages from one source on one communicator
//! overtake each other (MPI 3.1 §3.5), so the probed message is the next one the peer sent;
//! the receiver compares its tag and byte count with what it expects, and a difference is
//! [`Error::Mismatch`] naming both sides. The message is still received (into a throw-away
//! buffer) so that the sender's send completes and the next message on that edge is the next
//! one probed. The element type is not on the wire: the collectives' call check
//! (`hybrid::ProcessComm`) compares it, and a different element size shows up here as a
//! different byte count.
//!
//! **Its own communicator.** The transport receives with any tag, so it must not share a
//! communicator with anyone else's traffic: `hybrid::ProcessComm` gives it a duplicate of the
//! user's (`MPI_Comm_dup`, MPI 3.1 §6.4.2), whose messages can never match the user's own
//! receives or the other way round. The duplicate's error handler is set to
//! `MPI_ERRORS_ARE_FATAL`, so an MPI failure aborts the job instead of leaving the other
//! processes waiting for a message that will never come.
//!
//! **Progress.** Every method blocks until its part is done (the trait's contract). Exchanges
//! post their sends as immediate operations (`MPI_Isend`) before they receive, so two
//! processes sending each other large messages do not deadlock whatever the order of their
//! calls; [`Transport::exchange_many`] posts all its sends, then takes its receives in list
//! order (each a matched probe and an immediate matched receive), then waits for everything.
//! A blocking send or receive naming the calling process itself would wait for itself and is
//! refused ([`Error::SelfDeadlock`]); the exchanges may name it.
//!
//! The calls go through rsmpi's raw bindings (`mpi::ffi`, the C API) rather than its safe
//! wrappers, whose typed buffers would have the transport view `T`'s padding bytes as `u8`s
//! and whose requests and matched messages panic when dropped unfinished; each `unsafe` block
//! says why it is sound. What was learnt from: the rsmpi 0.8 sources (`point_to_point.rs`,
//! `request.rs`, `attribute.rs`) and the MPI 3.1 standard, sections cited where used.

use super::wire::{payload, reduce_in, wire_len};
use super::Transport;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Kind, Tag};
use ::mpi::ffi;
use ::mpi::topology::SimpleCommunicator;
use ::mpi::traits::AsRaw;
use std::cell::RefCell;
use std::mem::{size_of, size_of_val, MaybeUninit};
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
        let tag_ub = if rc == ffi::MPI_SUCCESS as c_int && flag != 0 && !value.is_null() {
            // SAFETY: MPI returned a valid pointer to the attribute's int (checked non-null),
            // which lives as long as the communicator.
            unsafe { *value }
        } else {
            32767
        };
        TagCodec::for_tag_ub(tag_ub)
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

/// `MPI_SUCCESS` or a panic: the transport's communicator has `MPI_ERRORS_ARE_FATAL`, so an
/// MPI call that fails aborts the job before it returns, and another code means the MPI
/// library broke its own error handler's contract.
fn ok(rc: c_int, call: &str) {
    assert_eq!(
        rc,
        ffi::MPI_SUCCESS as c_int,
        "{call} returned error code {rc}"
    );
}

/// Point-to-point between the processes of one MPI communicator (a duplicate owned by the
/// caller, see the module docs), for one named operation (used in error messages).
pub(crate) struct MpiTransport<'a> {
    /// The transport's own communicator.
    comm: &'a SimpleCommunicator,
    /// The tag layout for `comm`.
    codec: TagCodec,
    /// The reducing receives' scratch buffer.
    scratch: &'a Scratch,
    /// This process's rank in `comm`.
    rank: usize,
    /// The size of `comm`.
    size: usize,
    /// The operation, for error messages.
    op: &'static str,
    /// Whether waits poll MPI's non-blocking calls and yield the core between polls
    /// ([`poll_politely`]) instead of blocking in MPI, which polls without yielding.
    polite: bool,
}

/// Polls `done` until it returns true: crossbeam's `Backoff::snooze` between polls, a few
/// growing spins and then one `yield_now` per poll. For processes whose threads outnumber the
/// cores: MPI's blocking calls poll the network without giving the core up, and on a shared
/// core the peer they wait for (another process, or a thread of this one) then runs only when
/// the scheduler preempts them, a time slice of milliseconds per message. Figures in
/// docs/hybrid.md ("Polite MPI waits"), with their command.
pub(crate) fn poll_politely(mut done: impl FnMut() -> bool) {
    // No parking: nothing wakes a thread when an MPI message arrives.
    let backoff = crossbeam_utils::Backoff::new();
    while !done() {
        backoff.snooze();
    }
}

/// Waits for every request of `reqs` (completed ones are null requests): `MPI_Waitall`, or if
/// `polite`, `MPI_Testall` until done ([`poll_politely`]).
pub(crate) fn wait_all(reqs: &mut [ffi::MPI_Request], polite: bool) {
    if reqs.is_empty() {
        return;
    }
    let n = reqs.len() as c_int;
    if polite {
        poll_politely(|| {
            let mut done: c_int = 0;
            // SAFETY: `reqs` holds requests returned by MPI (or null requests), writable in
            // place; the statuses are ignored (RSMPI_STATUSES_IGNORE is MPI's sentinel).
            let rc = unsafe {
                ffi::MPI_Testall(n, reqs.as_mut_ptr(), &mut done, ffi::RSMPI_STATUSES_IGNORE)
            };
            ok(rc, "MPI_Testall");
            done != 0
        });
        return;
    }
    // SAFETY: as for MPI_Testall above.
    let rc = unsafe { ffi::MPI_Waitall(n, reqs.as_mut_ptr(), ffi::RSMPI_STATUSES_IGNORE) };
    ok(rc, "MPI_Waitall");
}

/// A message's byte count as MPI's `int` count.
fn count_of(bytes: usize) -> Option<c_int> {
    c_int::try_from(bytes).ok()
}

impl<'a> MpiTransport<'a> {
    /// The transport over `comm` (the caller's own duplicate: the transport receives with any
    /// tag), with the tag layout `codec` and reducing receives through `scratch`, for `op`.
    pub(crate) fn new(
        comm: &'a SimpleCommunicator,
        codec: TagCodec,
        scratch: &'a Scratch,
        op: &'static str,
        polite: bool,
    ) -> Self {
        use ::mpi::traits::Communicator;
        MpiTransport {
            comm,
            codec,
            scratch,
            rank: comm.rank() as usize,
            size: comm.size() as usize,
            op,
            polite,
        }
    }

    /// Fails unless `peer` is a rank of the communicator.
    fn check_rank(&self, peer: usize) -> Result<()> {
        if peer >= self.size {
            return Err(Error::RankOutOfRange {
                rank: self.rank,
                op: self.op,
                peer,
                size: self.size,
            });
        }
        Ok(())
    }

    /// Fails if a blocking send or receive names this process itself.
    fn check_not_self(&self, peer: usize) -> Result<()> {
        if peer == self.rank {
            return Err(Error::SelfDeadlock {
                rank: self.rank,
                op: self.op,
                why: "a blocking send or receive between processes waits for its own \
                      counterpart (only the exchanges may name the calling process)",
            });
        }
        Ok(())
    }

    /// Fails if a message of `bytes` bytes does not fit MPI's `int` count.
    fn count(&self, bytes: usize) -> Result<c_int> {
        count_of(bytes).ok_or_else(|| Error::Unsupported {
            rank: self.rank,
            op: self.op,
            what: format!(
                "a message of {bytes} bytes is above MPI's count limit of {} bytes",
                c_int::MAX
            ),
        })
    }

    /// Posts the send of `data` to `dest` with `tag` (`MPI_Isend`; for a zero-sized `T`, of
    /// `count`, which must hold `data.len()`) and returns its request.
    ///
    /// # Safety
    /// `data` and `count` must stay alive and unchanged until the request is completed.
    unsafe fn isend<T: Elem>(
        &self,
        dest: usize,
        tag: Tag,
        data: &[T],
        count: &u64,
    ) -> Result<ffi::MPI_Request> {
        let (ptr, bytes) = payload(data, count);
        let n = self.count(bytes)?;
        let mut req = MaybeUninit::<ffi::MPI_Request>::uninit();
        // SAFETY: `ptr` is readable for `bytes` bytes (the slice, or `count`), kept alive and
        // unchanged per the contract; `req` is a live out-parameter; the datatype is a
        // predefined one, the communicator valid, `dest` checked by the callers.
        let rc = unsafe {
            ffi::MPI_Isend(
                ptr.cast(),
                n,
                ffi::RSMPI_UINT8_T,
                dest as c_int,
                self.codec.encode(tag),
                self.comm.as_raw(),
                req.as_mut_ptr(),
            )
        };
        ok(rc, "MPI_Isend");
        // SAFETY: MPI_Isend succeeded and so wrote the request.
        Ok(unsafe { req.assume_init() })
    }

    /// Waits for every request of `reqs` (`MPI_Waitall`, or `MPI_Testall` polled politely;
    /// completed ones are null requests).
    fn wait_all(&self, reqs: &mut [ffi::MPI_Request]) {
        wait_all(reqs, self.polite);
    }

    /// Probes the next message from `src` (any tag: `MPI_Mprobe`) and returns it if its tag is
    /// `tag` and it holds `bytes` bytes; otherwise receives it into a throw-away buffer and
    /// returns the mismatch.
    fn probe(&self, src: usize, tag: Tag, bytes: usize) -> Result<ffi::MPI_Message> {
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
    fn recv_into<T: Elem>(&self, src: usize, tag: Tag, buf: &mut [T]) -> Result<()> {
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
    fn recv_reduce_then<T: Elem>(
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

impl Transport for MpiTransport<'_> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn fail(&self, e: Error) -> Error {
        e
    }

    fn send<T: Elem>(&self, dest: usize, tag: Tag, data: &[T]) -> Result<()> {
        self.check_rank(dest)?;
        self.check_not_self(dest)?;
        let count = data.len() as u64;
        // SAFETY: `data` and `count` outlive the request, completed before returning.
        let mut req = [unsafe { self.isend(dest, tag, data, &count)? }];
        self.wait_all(&mut req);
        Ok(())
    }

    fn recv<T: Elem>(&self, src: usize, tag: Tag, buf: &mut [T]) -> Result<()> {
        self.check_rank(src)?;
        self.check_not_self(src)?;
        self.recv_into(src, tag, buf)
    }

    fn sendrecv<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        recv: &mut [T],
        tag: Tag,
    ) -> Result<()> {
        self.check_rank(dest)?;
        self.check_rank(src)?;
        let count = send.len() as u64;
        // SAFETY: `send` (or `count`) is borrowed for this whole call, and the request is
        // completed below before either goes away.
        let mut req = [unsafe { self.isend(dest, tag, send, &count)? }];
        let r = self.recv_into(src, tag, recv);
        self.wait_all(&mut req);
        r
    }

    fn exchange_many<T: Elem>(
        &self,
        sends: &[(usize, &[T])],
        recvs: &mut [(usize, &mut [T])],
        tag: Tag,
    ) -> Result<()> {
        for &(dest, _) in sends {
            self.check_rank(dest)?;
        }
        for (src, _) in recvs.iter() {
            self.check_rank(*src)?;
        }
        let counts: Vec<u64> = sends.iter().map(|(_, d)| d.len() as u64).collect();
        let mut reqs = Vec::with_capacity(sends.len() + recvs.len());
        let mut result = Ok(());
        for (&(dest, data), count) in sends.iter().zip(&counts) {
            // SAFETY: `data` and `counts` outlive this call, and every request is completed
            // by the `wait_all` below before it returns.
            match unsafe { self.isend(dest, tag, data, count) } {
                Ok(req) => reqs.push(req),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            for (src, buf) in recvs.iter_mut() {
                if size_of::<T>() == 0 {
                    result = self.recv_into(*src, tag, buf);
                } else {
                    let bytes = size_of_val(*buf);
                    result = self.probe(*src, tag, bytes).map(|mut msg| {
                        let mut req = MaybeUninit::<ffi::MPI_Request>::uninit();
                        // SAFETY: `buf` is exclusively borrowed for this call, writable for
                        // the message's `bytes` bytes (compared by `probe`), and the request
                        // is completed by the `wait_all` below before the call returns.
                        let rc = unsafe {
                            ffi::MPI_Imrecv(
                                buf.as_mut_ptr().cast(),
                                bytes as c_int,
                                ffi::RSMPI_UINT8_T,
                                &mut msg,
                                req.as_mut_ptr(),
                            )
                        };
                        ok(rc, "MPI_Imrecv");
                        // SAFETY: MPI_Imrecv succeeded and wrote the request.
                        reqs.push(unsafe { req.assume_init() });
                    });
                }
                if result.is_err() {
                    break;
                }
            }
        }
        self.wait_all(&mut reqs);
        result
    }

    fn recv_reduce<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        acc: &mut [T],
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        self.check_rank(src)?;
        self.check_not_self(src)?;
        self.recv_reduce_then(src, tag, acc, combine, || {})
    }

    fn exchange_reduce<T: Elem>(
        &self,
        peer: usize,
        buf: &mut [T],
        _scratch: &mut Vec<T>,
        tag: Tag,
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        // The incoming message lands in the transport's scratch buffer and the send is
        // complete before `buf` is combined into, so `buf` can go out as it is: no copy.
        self.check_rank(peer)?;
        let count = buf.len() as u64;
        // SAFETY: `buf` is not written until the request is completed (the wait runs before
        // `combine`, and on the error path before returning).
        let mut req = [unsafe { self.isend(peer, tag, buf, &count)? }];
        self.recv_reduce_then(peer, tag, buf, combine, || self.wait_all(&mut req))
    }

    fn sendrecv_reduce<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        acc: &mut [T],
        tag: Tag,
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        self.check_rank(dest)?;
        self.check_rank(src)?;
        let count = send.len() as u64;
        // SAFETY: `send` (or `count`) is borrowed for this whole call, and the request is
        // completed before `combine` runs (so a panicking op cannot unwind past a send in
        // flight) and on every return path.
        let mut req = [unsafe { self.isend(dest, tag, send, &count)? }];
        self.recv_reduce_then(src, tag, acc, combine, || self.wait_all(&mut req))
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
                assert!(d.starts_with("reduce-scatter (collective call #"), "{d}");
                assert!(d.contains("variant 12") && d.ends_with("24 bytes"), "{d}");
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
            assert!(codec
                .describe(codec.encode(flagged), 0)
                .contains("variant 136"));
            assert!(codec
                .describe(codec.encode(closing), 0)
                .contains("variant 255"));
            let top = codec.encode(Tag {
                seq: u64::MAX,
                ..closing
            });
            assert!(top >= 0 && i64::from(top) <= ub, "{top} above {ub}");
            assert_ne!(codec.encode(a), codec.encode(Tag { seq: 6, ..a }));
            assert_eq!(
                codec.describe(codec.encode(Tag::P2P), 0),
                "point-to-point, 0 bytes"
            );
        }
    }
}
