//! User point-to-point between threads of different MPI processes ([`Channels`]), for a hybrid
//! team whose processes run under `MPI_THREAD_MULTIPLE`: every thread calls MPI itself.
//!
//! **Channels.** The team owns one duplicate of its communicator per thread index: a message
//! *to* thread i of a process travels on duplicate i, so each duplicate has one receiving
//! thread per process and threads never contend on one matching queue, and no message of
//! this layer can match the leaders' collectives or the user's own MPI traffic. The MPI tag of a
//! message says which thread of the sending process sent it and the user's tag:
//! `thread · (TAG_MAX + 1) + tag`, which fits under `MPI_TAG_UB` for as many threads as
//! `MPI_TAG_UB / 32768` (65535 under Open MPI's 2³¹ − 1); the team refuses more.
//!
//! **Wire.** A message starts with a 16-byte header — the element type's fingerprint and the
//! element count — so that a receiver can check both (MPI's own envelope says neither). Up to
//! [`INLINE_MAX`] payload bytes travel in the same MPI message as the header, copied into the
//! sending thread's staging buffer; a larger payload follows in a second message with the same
//! tag, sent straight from the caller's slice and received straight into the receiver's, which
//! MPI's order between a pair of processes on one communicator keeps right behind its header.
//! The count's top bit says whether a payload message follows. A receiving thread takes
//! headers into a staging buffer of its own ([`STAGE`] bytes, enough for any header message),
//! with a receive posted before the message comes ([`Channels::post_recv`]: the message then
//! lands in place, where a probe would first queue it as unexpected and copy it again) or,
//! for a probe, by `MPI_Improbe` and `MPI_Mrecv` ([`Channels::poll`]). The buffers are the
//! threads' own and reused, so a short message costs no allocation.
//!
//! **Failure notices** travel on one more duplicate, shared with the channels of the team's
//! duplicates ([`Notices`], `process::mpi::notice`).
//!
//! **Progress.** Everything is immediate (`MPI_Isend`, `MPI_Improbe`, `MPI_Imrecv`,
//! `MPI_Irecv`), so that the caller can poll, watch its run's failure and the team's timeout, and
//! give up: an operation given up is cancelled and then waited for (`MPI_Cancel` and
//! `MPI_Wait`, which MPI 3.1 §3.8.4 guarantees to return for a cancelled operation), so no
//! buffer of the caller's is touched by MPI after the call returns.

use super::notice::Notices;
use super::request::{cancel_all, isend, null_request, test_all, wildcards};
use super::transport::ok;
use crate::mailbox::{fingerprint_size, type_fingerprint, Elem, TAG_MAX};
use ::mpi::ffi;
use ::mpi::topology::{Communicator, SimpleCommunicator};
use ::mpi::traits::AsRaw;
use std::mem::{size_of, size_of_val, MaybeUninit};
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// Payload bytes that travel in the header's own MPI message (copied); larger payloads follow
/// in a message of their own, straight from and into the callers' buffers.
pub(crate) const INLINE_MAX: usize = 8 << 10;
/// Bytes of the header.
const HEADER: usize = 16;
/// Bytes of a receiving thread's staging buffer: the largest header message.
pub(crate) const STAGE: usize = HEADER + INLINE_MAX;
/// Top bit of the header's count: a payload message follows.
const FOLLOWS: u64 = 1 << 63;
/// User tags per thread in the MPI tag.
const STRIDE: c_int = TAG_MAX as c_int + 1;

/// The duplicates of a hybrid team's communicator that carry point-to-point between its
/// processes' threads, one per thread index (module docs).
pub(crate) struct Channels {
    comms: Vec<SimpleCommunicator>,
    /// The team's failure notices.
    notices: Arc<Notices>,
}

// SAFETY: under MPI_THREAD_MULTIPLE any thread may call MPI on any communicator at any time
// (MPI 3.1 §12.4.3), and a hybrid team's threads use their channels themselves; otherwise only
// the process's relaying leader uses them, and the team drops them on that thread
// (`process::world`). The handles are not changed after they are made, and freed (on drop) only
// once no thread uses them.
unsafe impl Send for Channels {}
// SAFETY: see `Send`.
unsafe impl Sync for Channels {}

impl std::fmt::Debug for Channels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channels")
            .field("threads", &self.comms.len())
            .finish()
    }
}

/// A message that has arrived for this thread: who sent it, with which tag, what its header
/// says, and its payload (in hand, or still to receive).
pub(crate) struct Arrived {
    /// The sending process.
    pub process: usize,
    /// The sending thread of that process.
    pub thread: usize,
    /// The user's tag.
    pub tag: u32,
    /// The element type's fingerprint.
    pub typ: u64,
    /// The number of elements.
    pub count: usize,
    /// Whether the payload came with the header (it is in the staging buffer, after the
    /// header) or follows in a message of its own.
    inline: bool,
    /// The payload's size in bytes.
    bytes: usize,
    /// The MPI tag, to receive a following payload with.
    mpi_tag: c_int,
}

impl Arrived {
    /// Bytes of payload.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// A send in flight: its requests.
pub(crate) struct Sending {
    reqs: [ffi::MPI_Request; 2],
    n: usize,
}

/// A receive of the next header message posted into a staging buffer
/// ([`Channels::post_recv`]).
pub(crate) struct Receiving {
    req: ffi::MPI_Request,
    stage: *mut u8,
    /// Where it was posted, to post it again after a stray message.
    comm: ffi::MPI_Comm,
    source: c_int,
}

/// A receiving thread's staging buffer: room for the largest header message.
pub(crate) type Stage = [u8; STAGE];

/// A new zeroed staging buffer, on the heap.
pub(crate) fn new_stage() -> Box<Stage> {
    vec![0u8; STAGE]
        .into_boxed_slice()
        .try_into()
        .expect("a slice of STAGE bytes")
}

impl Channels {
    /// Duplicates `comm` `threads` times (collective over `comm`'s processes, as
    /// `MPI_Comm_dup`), each with MPI errors fatal, and once more for new [`Notices`] unless
    /// `notices` are given (those of the channels this is a duplicate of); an error if
    /// `threads` threads' tags do not fit under `MPI_TAG_UB`.
    pub(crate) fn new(
        comm: &SimpleCommunicator,
        threads: usize,
        notices: Option<Arc<Notices>>,
    ) -> Result<Channels, String> {
        let tag_ub = super::tag::tag_ub(comm);
        let need = i64::from(STRIDE) * threads as i64 - 1;
        if need > i64::from(tag_ub) {
            return Err(format!(
                "point-to-point between processes needs MPI tags up to {need} for {threads} \
                 threads per process, and this MPI's MPI_TAG_UB is {tag_ub}"
            ));
        }
        let fatal_dup = || {
            let dup = comm.duplicate();
            // SAFETY: `dup` is a valid communicator owned here; RSMPI_ERRORS_ARE_FATAL is the
            // predefined handler.
            let rc =
                unsafe { ffi::MPI_Comm_set_errhandler(dup.as_raw(), ffi::RSMPI_ERRORS_ARE_FATAL) };
            ok(rc, "MPI_Comm_set_errhandler");
            dup
        };
        let comms = (0..threads).map(|_| fatal_dup()).collect();
        let notices = notices.unwrap_or_else(|| Arc::new(Notices::new(fatal_dup())));
        Ok(Channels { comms, notices })
    }

    /// The team's failure notices.
    pub(crate) fn notices(&self) -> &Arc<Notices> {
        &self.notices
    }

    fn comm(&self, thread: usize) -> ffi::MPI_Comm {
        self.comms[thread].as_raw()
    }

    /// Posts the send of `data` with user tag `tag` from thread `from` to thread `to` of
    /// process `process`, staging the header (and a short payload) in `staged`.
    ///
    /// # Safety
    /// `data` and `staged` must stay alive and unchanged until the returned send is complete
    /// ([`Channels::test`]) or given up ([`Channels::give_up`]).
    pub(crate) unsafe fn post<T: Elem>(
        &self,
        to: (usize, usize),
        from: usize,
        tag: u32,
        data: &[T],
        staged: &mut Vec<u8>,
    ) -> Sending {
        let bytes = if size_of::<T>() == 0 {
            0
        } else {
            size_of_val(data)
        };
        let typ = (type_fingerprint::<T>(), data.len());
        // SAFETY: `data` is readable for `bytes` bytes (0 for a zero-sized type, which any
        // pointer is), and the caller keeps it and `staged` as `post_bytes` needs.
        unsafe { self.post_bytes(to, (from, tag), typ, (data.as_ptr().cast(), bytes), staged) }
    }

    /// [`Channels::post`] of a payload already in bytes: `count` elements of the type whose
    /// fingerprint is `typ`, `bytes` bytes at `ptr`, from thread `from` with user tag `tag`.
    ///
    /// # Safety
    /// `ptr` must be readable for `bytes` bytes; it and `staged` must stay alive and unchanged
    /// until the returned send is complete ([`Channels::test`]) or given up.
    pub(crate) unsafe fn post_bytes(
        &self,
        (process, to): (usize, usize),
        (from, tag): (usize, u32),
        (typ, count): (u64, usize),
        (ptr, bytes): (*const u8, usize),
        staged: &mut Vec<u8>,
    ) -> Sending {
        let follows = bytes > INLINE_MAX;
        staged.clear();
        staged.extend_from_slice(&typ.to_le_bytes());
        let count = count as u64 | if follows { FOLLOWS } else { 0 };
        staged.extend_from_slice(&count.to_le_bytes());
        if !follows && bytes > 0 {
            // SAFETY: `ptr` is readable for `bytes` bytes (contract).
            staged.extend_from_slice(unsafe { std::slice::from_raw_parts(ptr, bytes) });
        }
        let mpi_tag = from as c_int * STRIDE + tag as c_int;
        let comm = self.comm(to);
        let mut s = Sending {
            reqs: [null_request(); 2],
            n: 0,
        };
        // SAFETY: the caller keeps `staged` alive and untouched until the request completes
        // or is given up (contract).
        unsafe {
            isend(
                staged.as_ptr(),
                staged.len(),
                process,
                mpi_tag,
                comm,
                &mut s.reqs[0],
            )
        };
        s.n = 1;
        if follows {
            // SAFETY: per the contract, `ptr` outlives the request.
            unsafe { isend(ptr, bytes, process, mpi_tag, comm, &mut s.reqs[1]) };
            s.n = 2;
        }
        s
    }

    /// Whether send `s` is complete (`MPI_Testall`).
    pub(crate) fn test(&self, s: &mut Sending) -> bool {
        test_all(&mut s.reqs[..s.n])
    }

    /// Gives up send `s`: cancels what is not complete and waits for it (module docs).
    pub(crate) fn give_up(&self, s: &mut Sending) {
        cancel_all(&mut s.reqs[..s.n]);
    }

    /// Looks once for a message to thread `me` from process `process` (`None`: any) with any
    /// tag, and receives its header (and inline payload) into `stage` if there is one.
    ///
    /// # Safety
    /// `stage` must be writable for [`STAGE`] bytes and not referenced during the call.
    pub(crate) unsafe fn poll(
        &self,
        me: usize,
        process: Option<usize>,
        stage: *mut Stage,
    ) -> Option<Arrived> {
        let (any_source, any_tag) = wildcards();
        let source = process.map_or(any_source, |q| q as c_int);
        let mut found: c_int = 0;
        let mut msg = MaybeUninit::<ffi::MPI_Message>::uninit();
        let mut status = MaybeUninit::<ffi::MPI_Status>::uninit();
        // SAFETY: the out-parameters point to live locals; the communicator is valid; source
        // and tag are ranks and tags of it or MPI's wildcards.
        let rc = unsafe {
            ffi::MPI_Improbe(
                source,
                any_tag,
                self.comm(me),
                &mut found,
                msg.as_mut_ptr(),
                status.as_mut_ptr(),
            )
        };
        ok(rc, "MPI_Improbe");
        if found == 0 {
            return None;
        }
        // SAFETY: MPI_Improbe found a message and so wrote both.
        let (mut msg, status) = unsafe { (msg.assume_init(), status.assume_init()) };
        let mut len: c_int = 0;
        // SAFETY: `status` describes the probed message; `len` is a live out-parameter.
        let rc = unsafe { ffi::MPI_Get_count(&status, ffi::RSMPI_UINT8_T, &mut len) };
        ok(rc, "MPI_Get_count");
        // A header message fits the stage; a longer one is a stray payload (`arrived`), taken
        // into a buffer of its own and dropped.
        let mut stray = Vec::new();
        let into: *mut u8 = if len as usize > STAGE {
            stray.resize(len as usize, 0u8);
            stray.as_mut_ptr()
        } else {
            stage.cast()
        };
        // SAFETY: `into` is writable for the message's `len` bytes (the stage holds STAGE,
        // contract); `msg` is the matched message, received exactly once, here. The message
        // is already here (it was probed), so the receive completes without waiting.
        let rc = unsafe {
            ffi::MPI_Mrecv(
                into.cast(),
                len,
                ffi::RSMPI_UINT8_T,
                &mut msg,
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        ok(rc, "MPI_Mrecv");
        if !stray.is_empty() {
            return None;
        }
        // SAFETY: the receive is complete, and `stage` holds its header.
        unsafe { arrived(&status, stage.cast()) }
    }

    /// Posts the receive of the next message to thread `me` from process `process` (`None`:
    /// any), any tag, into `stage`.
    ///
    /// # Safety
    /// `stage` must be writable for [`STAGE`] bytes, and stay alive and unreferenced until
    /// the receive is complete ([`Channels::test_recv`]) or given up
    /// ([`Channels::cancel_recv`]).
    pub(crate) unsafe fn post_recv(
        &self,
        me: usize,
        process: Option<usize>,
        stage: *mut Stage,
    ) -> Receiving {
        let source = process.map_or(wildcards().0, |q| q as c_int);
        let mut r = Receiving {
            req: null_request(),
            stage: stage.cast(),
            comm: self.comm(me),
            source,
        };
        // SAFETY: per the contract.
        unsafe { repost(&mut r) };
        r
    }

    /// The message received by `r` into its staging buffer, if it has come (`MPI_Test`).
    pub(crate) fn test_recv(&self, r: &mut Receiving) -> Option<Arrived> {
        let mut done: c_int = 0;
        let mut status = MaybeUninit::<ffi::MPI_Status>::uninit();
        // SAFETY: `r.req` is the live request `post_recv` returned; the out-parameters are
        // live locals.
        let rc = unsafe { ffi::MPI_Test(&mut r.req, &mut done, status.as_mut_ptr()) };
        ok(rc, "MPI_Test");
        if done == 0 {
            return None;
        }
        // SAFETY: a completed MPI_Test wrote the status, and the message is in the staging
        // buffer, alive per `post_recv`'s contract.
        let a = unsafe { arrived(&status.assume_init(), r.stage) };
        if a.is_none() {
            // A stray message, dropped: wait for the next one. SAFETY: as `post_recv`.
            unsafe { repost(r) };
        }
        a
    }

    /// Gives up receive `r` (cancels it and waits): the message it had already received into
    /// its staging buffer, if the cancel came too late.
    pub(crate) fn cancel_recv(&self, r: &mut Receiving) -> Option<Arrived> {
        if r.req == null_request() {
            return None;
        }
        let mut status = MaybeUninit::<ffi::MPI_Status>::uninit();
        let mut cancelled: c_int = 0;
        // SAFETY: `r.req` is a live request; a cancelled receive's wait returns at once (MPI
        // 3.1 §3.8.4), and the status it writes says whether the cancel took effect; if it
        // did not, the message is in the staging buffer (alive per `post_recv`).
        unsafe {
            ok(ffi::MPI_Cancel(&mut r.req), "MPI_Cancel");
            ok(ffi::MPI_Wait(&mut r.req, status.as_mut_ptr()), "MPI_Wait");
            let status = status.assume_init();
            ok(
                ffi::MPI_Test_cancelled(&status, &mut cancelled),
                "MPI_Test_cancelled",
            );
            if cancelled == 0 {
                arrived(&status, r.stage)
            } else {
                None
            }
        }
    }

    /// Starts taking the payload of `a` into `dst`, which must hold [`Arrived::bytes`] bytes:
    /// copies an inline payload from `stage` (where `a` was received) at once (`None`), or
    /// posts the receive of the payload message that follows and returns its request.
    ///
    /// # Safety
    /// `stage` must be the staging buffer `a` was received into, unchanged since; `dst` must
    /// be writable for `a.bytes()` bytes and stay alive and untouched until the returned
    /// request is complete ([`Channels::test_one`]) or given up ([`Channels::give_up_one`]).
    pub(crate) unsafe fn payload(
        &self,
        me: usize,
        a: &Arrived,
        stage: *const Stage,
        dst: *mut u8,
    ) -> Option<ffi::MPI_Request> {
        if a.inline {
            // SAFETY: `dst` is writable for `a.bytes` bytes (contract); an inline payload of
            // `a.bytes ≤ INLINE_MAX` bytes follows the header in `stage`.
            unsafe { std::ptr::copy_nonoverlapping(stage.cast::<u8>().add(HEADER), dst, a.bytes) };
            return None;
        }
        let mut req = null_request();
        // SAFETY: per the contract; the source and tag are the header's, whose payload message
        // MPI delivers next from that process on this communicator with that tag.
        let rc = unsafe {
            ffi::MPI_Irecv(
                dst.cast::<c_void>(),
                a.bytes as c_int,
                ffi::RSMPI_UINT8_T,
                a.process as c_int,
                a.mpi_tag,
                self.comm(me),
                &mut req,
            )
        };
        ok(rc, "MPI_Irecv");
        Some(req)
    }

    /// Whether the payload receive `req` is complete.
    pub(crate) fn test_one(&self, req: &mut ffi::MPI_Request) -> bool {
        test_all(std::slice::from_mut(req))
    }

    /// Gives up the payload receive `req` (cancels and waits).
    pub(crate) fn give_up_one(&self, req: &mut ffi::MPI_Request) {
        cancel_all(std::slice::from_mut(req));
    }
}

/// (Re)posts receive `r` (any tag, from its source) into its staging buffer.
///
/// # Safety
/// As [`Channels::post_recv`]; `r`'s request must be complete or never posted.
unsafe fn repost(r: &mut Receiving) {
    // SAFETY: the staging buffer is writable for STAGE bytes, the largest header message
    // (payload messages are received by their own receive, posted right after their header's
    // arrival and completed before another receive is posted on this communicator), and
    // outlives the request (`post_recv`'s contract).
    let rc = unsafe {
        ffi::MPI_Irecv(
            r.stage.cast(),
            STAGE as c_int,
            ffi::RSMPI_UINT8_T,
            r.source,
            wildcards().1,
            r.comm,
            &mut r.req,
        )
    };
    ok(rc, "MPI_Irecv");
}

/// What the header message received into `stage` with `status` says, or `None` for a stray
/// message whose length does not match its header: a payload left behind by a run that
/// failed while it was in flight (its header taken, the payload's receive given up), which is
/// dropped.
///
/// # Safety
/// `stage` must hold the received message (at least [`STAGE`] bytes readable).
unsafe fn arrived(status: &ffi::MPI_Status, stage: *const u8) -> Option<Arrived> {
    let mut len: c_int = 0;
    // SAFETY: `status` describes a completed receive; `len` is a live out-parameter.
    ok(
        unsafe { ffi::MPI_Get_count(status, ffi::RSMPI_UINT8_T, &mut len) },
        "MPI_Get_count",
    );
    let len = usize::try_from(len).ok()?;
    // SAFETY: the stage holds STAGE ≥ 16 readable bytes (contract).
    let word = |i: usize| u64::from_le(unsafe { stage.add(i).cast::<u64>().read_unaligned() });
    let (typ, count) = (word(0), word(8));
    let n = usize::try_from(count & !FOLLOWS).ok()?;
    let bytes = n.checked_mul(fingerprint_size(typ))?;
    let inline = count & FOLLOWS == 0;
    let expected = if inline { HEADER + bytes } else { HEADER };
    if len < HEADER || len != expected || !inline && bytes <= INLINE_MAX {
        return None;
    }
    Some(Arrived {
        process: status.MPI_SOURCE as usize,
        thread: (status.MPI_TAG / STRIDE) as usize,
        tag: (status.MPI_TAG % STRIDE) as u32,
        typ,
        count: n,
        inline,
        bytes,
        mpi_tag: status.MPI_TAG,
    })
}
