//! [`Transport`] between MPI processes (feature `mpi`): one rank is one process, the crate's
//! rank is the communicator's rank, and every schedule of the crate runs over MPI
//! point-to-point as it runs over the shared-memory mailboxes. Träff 2021 ran the dual-root
//! allreduce the same way, over `MPI_Sendrecv`.
//!
//! **Wire.** Bytes (`MPI_UINT8_T`), straight from and (for plain receives) straight into the
//! caller's slice; elements of a zero-sized type travel as their count, one `u64`, as in the
//! mailboxes (`super::wire`). A reducing receive lands in a scratch buffer owned by the
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
//! (the leaders' check of `process`) compares it, and a different element size shows up here as a
//! different byte count.
//!
//! **Its own communicator.** The transport receives with any tag, so it must not share a
//! communicator with anyone else's traffic: the leaders' communicator of `process` gives it a
//! duplicate of the user's (`MPI_Comm_dup`, MPI 3.1 §6.4.2), whose messages can never match
//! the user's own receives or the other way round. The duplicate's error handler is set to
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

use super::{Scratch, TagCodec};
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Tag};
use crate::transport::Transport;
use ::mpi::ffi;
use ::mpi::topology::SimpleCommunicator;
use std::mem::{size_of, size_of_val, MaybeUninit};
use std::os::raw::c_int;

/// `MPI_SUCCESS` or a panic: the transport's communicator has `MPI_ERRORS_ARE_FATAL`, so an
/// MPI call that fails aborts the job before it returns, and another code means the MPI
/// library broke its own error handler's contract.
pub(super) fn ok(rc: c_int, call: &str) {
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
    pub(super) comm: &'a SimpleCommunicator,
    /// The tag layout for `comm`.
    pub(super) codec: TagCodec,
    /// The reducing receives' scratch buffer.
    pub(super) scratch: &'a Scratch,
    /// This process's rank in `comm`.
    pub(super) rank: usize,
    /// The size of `comm`.
    size: usize,
    /// The operation, for error messages.
    pub(super) op: &'static str,
    /// Whether waits poll MPI's non-blocking calls and yield the core between polls
    /// (`poll_politely`) instead of blocking in MPI, which polls without yielding.
    pub(super) polite: bool,
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
    pub(super) fn count(&self, bytes: usize) -> Result<c_int> {
        count_of(bytes).ok_or_else(|| Error::Unsupported {
            rank: self.rank,
            op: self.op,
            what: format!(
                "a message of {bytes} bytes is above MPI's count limit of {} bytes",
                c_int::MAX
            ),
        })
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
