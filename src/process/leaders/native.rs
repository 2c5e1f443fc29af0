//! MPI's own collectives between the processes (`Algorithm::Native`, `Broadcast::Native`,
//! `Reduce::Native`): `MPI_Allreduce`, `MPI_Bcast` and `MPI_Reduce` of the MPI library, called
//! after the crate's call check, beside the crate's schedules over MPI point-to-point.
//!
//! **Which calls.** A broadcast moves bytes (`MPI_UINT8_T`), so any element type goes. A
//! reduction needs MPI to know the element type and the op: the crate's built-in ops
//! ([`Op::builtin`]) on the primitive integer types up to 64 bits, `f32`, `f64` and `bool`,
//! as MPI's predefined ops. Refused, with [`Error::Unsupported`] on every process alike
//! (element type and op are in the agreed call):
//! - user ops (they would need `MPI_Op_create` and a callback through C), and `u128`/`i128`,
//!   which MPI has no type for;
//! - float `Min` and `Max`: the crate orders floats by `total_cmp` (−0.0 below +0.0, NaNs at
//!   the ends by sign), MPI's `MPI_MIN`/`MPI_MAX` by C's `<`, which answers otherwise for
//!   signed zeros and NaNs.
//!
//! **Semantics kept and not.** Integer and boolean reductions are exact whatever order MPI
//! combines in (integer `Sum` and `Prod` wrap in two's complement; Open MPI's C loops do so
//! on every machine it runs on, though C leaves signed overflow undefined). For float `Sum`
//! and `Prod`, MPI chooses the order of combination and promises neither the crate's order
//! nor bit-identical results on every process (MPI 3.1 §5.9.1 only advises it); Open MPI's
//! algorithms combine each element once or in commutative pairs, so in practice every process
//! gets the same bits. `Auto` therefore picks `Native` for exact reductions only.
//!
//! **In place.** rsmpi's raw bindings have no `MPI_IN_PLACE` (its value is a pointer constant
//! of the MPI library's header), so the reductions send from a copy of the input in the
//! communicator's scratch buffer and receive into the caller's: one extra copy of the vector,
//! which MPI's own in-place paths usually make too.
//!
//! **Waiting.** Where the communicator polls politely (a hybrid team whose node has more
//! threads than cores), the immediate forms (`MPI_Iallreduce`, `MPI_Ibcast`, `MPI_Ireduce`)
//! are polled with [`poll_politely`](crate::process::mpi::poll_politely); otherwise the
//! blocking ones run. In Open MPI the immediate forms are a different implementation (libnbc)
//! from the blocking ones (coll/tuned), with their own algorithms.

use crate::error::{Error, Result};
use crate::op::{Builtin, Op};
pub(crate) use crate::process::mpi::Chunk;
use crate::process::mpi::{scratch_bytes, wait_all};
use crate::process::ProcessComm;
use ::mpi::ffi;
use ::mpi::traits::AsRaw;
use std::any::TypeId;
use std::mem::{size_of, size_of_val, MaybeUninit};
use std::os::raw::{c_int, c_void};

/// What MPI calls an element type of the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// A primitive integer of 8 to 64 bits.
    Int,
    /// `f32` or `f64`.
    Float,
    /// `bool` (`MPI_C_BOOL`: Rust's `bool` is one byte holding 0 or 1, as C's `_Bool`).
    Bool,
}

/// MPI's datatype for `T` and its class, if MPI has one.
fn datatype_of<T: 'static>() -> Option<(ffi::MPI_Datatype, Class)> {
    let t = TypeId::of::<T>();
    let is = |u: TypeId| t == u;
    // SAFETY: reading rsmpi's extern statics, the MPI library's predefined datatype handles,
    // which are initialised constants of its C shim.
    unsafe {
        let signed = [
            ffi::RSMPI_INT8_T,
            ffi::RSMPI_INT16_T,
            ffi::RSMPI_INT32_T,
            ffi::RSMPI_INT64_T,
        ];
        let unsigned = [
            ffi::RSMPI_UINT8_T,
            ffi::RSMPI_UINT16_T,
            ffi::RSMPI_UINT32_T,
            ffi::RSMPI_UINT64_T,
        ];
        // The index of a 1, 2, 4 or 8-byte integer in the tables above.
        let width = (size_of::<T>().max(1)).trailing_zeros() as usize;
        if [
            TypeId::of::<i8>(),
            TypeId::of::<i16>(),
            TypeId::of::<i32>(),
            TypeId::of::<i64>(),
            TypeId::of::<isize>(),
        ]
        .into_iter()
        .any(is)
        {
            return signed.get(width).map(|&d| (d, Class::Int));
        }
        if [
            TypeId::of::<u8>(),
            TypeId::of::<u16>(),
            TypeId::of::<u32>(),
            TypeId::of::<u64>(),
            TypeId::of::<usize>(),
        ]
        .into_iter()
        .any(is)
        {
            return unsigned.get(width).map(|&d| (d, Class::Int));
        }
        if is(TypeId::of::<f32>()) {
            return Some((ffi::RSMPI_FLOAT, Class::Float));
        }
        if is(TypeId::of::<f64>()) {
            return Some((ffi::RSMPI_DOUBLE, Class::Float));
        }
        if is(TypeId::of::<bool>()) {
            return Some((ffi::RSMPI_C_BOOL, Class::Bool));
        }
    }
    None
}

/// MPI's predefined op for built-in op `b` on elements of class `class`, if it means the same.
fn mpi_op(b: Builtin, class: Class) -> Option<ffi::MPI_Op> {
    use Builtin::*;
    // SAFETY: reading rsmpi's extern statics, the MPI library's predefined op handles.
    unsafe {
        Some(match (class, b) {
            (Class::Int | Class::Float, Sum | Avg) => ffi::RSMPI_SUM,
            (Class::Int | Class::Float, Prod) => ffi::RSMPI_PROD,
            (Class::Int, Min) => ffi::RSMPI_MIN,
            (Class::Int, Max) => ffi::RSMPI_MAX,
            (Class::Int, BitAnd) => ffi::RSMPI_BAND,
            (Class::Int, BitOr) => ffi::RSMPI_BOR,
            (Class::Int, BitXor) => ffi::RSMPI_BXOR,
            (Class::Int, LogicalAnd) => ffi::RSMPI_LAND,
            (Class::Int, LogicalOr) => ffi::RSMPI_LOR,
            // On bool the crate's and, or, xor, min and max are the logical ops.
            (Class::Bool, BitAnd | LogicalAnd | Min) => ffi::RSMPI_LAND,
            (Class::Bool, BitOr | LogicalOr | Max) => ffi::RSMPI_LOR,
            (Class::Bool, BitXor) => ffi::RSMPI_LXOR,
            _ => return None,
        })
    }
}

/// MPI's datatype and op for reducing `T` with `op`, or why MPI's own collective cannot.
fn reduction<T: 'static, O: Op<T> + ?Sized>(
    op: &O,
) -> std::result::Result<(ffi::MPI_Datatype, ffi::MPI_Op), String> {
    let Some((datatype, class)) = datatype_of::<T>() else {
        return Err(format!(
            "MPI has no predefined datatype for {} (the native collectives reduce primitive \
             integers up to 64 bits, f32, f64 and bool)",
            std::any::type_name::<T>()
        ));
    };
    let Some(b) = op.builtin() else {
        return Err(
            "the op is a user op, which MPI's own collectives cannot call; use one \
                    of the crate's schedules (dual-root, rabenseifner, …)"
                .to_string(),
        );
    };
    match mpi_op(b, class) {
        Some(o) => Ok((datatype, o)),
        None if class == Class::Float => Err(format!(
            "the crate's float {} orders by total_cmp (signed zeros and NaNs) and MPI's by C's \
             <, so MPI's own collective would answer otherwise; use one of the crate's schedules",
            b.name()
        )),
        None => Err(format!(
            "the {} op has no MPI counterpart on {}",
            b.name(),
            { std::any::type_name::<T>() }
        )),
    }
}

/// Copies `buf`'s bytes into `chunks` (grown to hold them) and returns where the copy starts:
/// the send buffer of a reduction that MPI cannot do in place (see the module docs).
fn copy_into<T: Copy>(chunks: &mut Vec<Chunk>, buf: &[T]) -> *const c_void {
    let bytes = size_of_val(buf);
    let dst = scratch_bytes(chunks, bytes);
    // SAFETY: `buf` is `bytes` readable bytes (its elements are `Copy` primitives, see
    // `datatype_of`, so every byte is initialised); `chunks` now has at least `bytes` writable
    // bytes and is not `buf` (the communicator's scratch, or a pending call's own copy).
    unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr().cast::<u8>(), dst, bytes) };
    dst.cast_const().cast()
}

/// Whether MPI's own reduction of `T` with `op` gives exactly the crate's result on every
/// process (what `Auto` may pick it for): a supported reduction on integers or `bool`.
pub(in crate::process) fn exact<T: 'static, O: Op<T> + ?Sized>(op: &O) -> bool {
    reduction::<T, O>(op).is_ok()
        && matches!(datatype_of::<T>(), Some((_, Class::Int | Class::Bool)))
}

impl ProcessComm {
    /// The refusal of a native reduction of `T` with `op`, if MPI cannot do it (see the module
    /// docs), the same on every process.
    fn native_refusal(&self, op: &'static str, why: String) -> Error {
        Error::Unsupported {
            rank: self.rank,
            op,
            what: format!("the native algorithm (MPI's own collective): {why}"),
        }
    }

    /// MPI's datatype and op for a native reduction of `buf` with `op` (named `name` in
    /// errors), `None` if `buf` is empty (nothing to do), or the refusal: no MPI counterpart,
    /// or a vector above MPI's message limit (the same on every process, after the check).
    fn native_reduction<T: 'static, O: Op<T> + ?Sized>(
        &self,
        name: &'static str,
        buf: &[T],
        op: &O,
    ) -> Result<Option<(ffi::MPI_Datatype, ffi::MPI_Op)>> {
        let (datatype, mop) =
            reduction::<T, O>(op).map_err(|why| self.native_refusal(name, why))?;
        self.check_bytes(name, size_of_val(buf))?;
        Ok((!buf.is_empty()).then_some((datatype, mop)))
    }

    /// Copies `buf` into the scratch buffer and calls `f` with a pointer to the copy.
    fn sending_copy<T: Copy, R>(&self, buf: &[T], f: impl FnOnce(*const c_void) -> R) -> R {
        f(copy_into(&mut self.scratch.borrow_mut(), buf))
    }

    /// Runs an MPI collective: the blocking form `blocking`, or where the communicator polls
    /// politely the immediate form `immediate` (which writes a request) polled to completion.
    pub(in crate::process) fn run_native(
        &self,
        name: &str,
        blocking: impl FnOnce() -> c_int,
        immediate: impl FnOnce(*mut ffi::MPI_Request) -> c_int,
    ) {
        if !self.polite.get() {
            let rc = blocking();
            assert_eq!(rc, ffi::MPI_SUCCESS as c_int, "{name} failed");
            return;
        }
        let mut req = MaybeUninit::<ffi::MPI_Request>::uninit();
        let rc = immediate(req.as_mut_ptr());
        assert_eq!(rc, ffi::MPI_SUCCESS as c_int, "the immediate {name} failed");
        // SAFETY: the immediate call succeeded and wrote the request.
        wait_all(&mut [unsafe { req.assume_init() }], true);
    }

    /// `MPI_Allreduce` of `buf` with `op` (after the call check; see the module docs).
    pub(in crate::process) fn native_allreduce<T, O>(&self, buf: &mut [T], op: &O) -> Result<()>
    where
        T: Copy + 'static,
        O: Op<T> + ?Sized,
    {
        let Some((datatype, mop)) = self.native_reduction("allreduce", buf, op)? else {
            return Ok(());
        };
        let n = buf.len() as c_int;
        let comm = self.comm.as_raw();
        let recv = buf.as_mut_ptr().cast::<c_void>();
        self.sending_copy(buf, |send| {
            // SAFETY: for both closures, `send` is the scratch copy of `n` elements of the type
            // `datatype` describes (`datatype_of`), `recv` the caller's buffer of as many,
            // both live until the call (or its request) completes inside `run_native`; the op
            // is predefined and valid on that type (`mpi_op`), the communicator is this
            // communicator's valid duplicate, `req` a live out-parameter.
            self.run_native(
                "MPI_Allreduce",
                || unsafe { ffi::MPI_Allreduce(send, recv, n, datatype, mop, comm) },
                |req| unsafe { ffi::MPI_Iallreduce(send, recv, n, datatype, mop, comm, req) },
            )
        });
        Ok(())
    }

    /// Starts `MPI_Iallreduce` of `buf` with `op` (after the call check), for a caller that
    /// overlaps it with other work (the hybrid allreduce's stage pipelining). The input goes
    /// from a copy in `copy` (grown as needed; a caller that starts many calls passes the
    /// buffer back in each time), owned by the returned [`PendingAllreduce`], which holds `buf`
    /// until [`PendingAllreduce::wait`] gives both back, `buf` with the result (or until
    /// dropped, which waits too).
    pub(crate) fn native_allreduce_start<'b, T, O>(
        &self,
        buf: &'b mut [T],
        op: &O,
        mut copy: Vec<Chunk>,
    ) -> Result<PendingAllreduce<'b, T>>
    where
        T: Copy + 'static,
        O: Op<T> + ?Sized,
    {
        let Some((datatype, mop)) = self.native_reduction("allreduce", buf, op)? else {
            return Ok(PendingAllreduce {
                req: None,
                send: copy,
                buf,
                polite: false,
            });
        };
        let send = copy_into(&mut copy, buf);
        let mut req = MaybeUninit::<ffi::MPI_Request>::uninit();
        // SAFETY: `send` (the copy, owned by the returned value; its heap block does not move)
        // and `buf` (held by it, and not touched through the reference until the request is
        // complete) hold `buf.len()` elements of `datatype` and outlive the request, which the
        // returned value completes before it gives `buf` back or is dropped; op and
        // communicator as in `native_allreduce`.
        let rc = unsafe {
            ffi::MPI_Iallreduce(
                send,
                buf.as_mut_ptr().cast(),
                buf.len() as c_int,
                datatype,
                mop,
                self.comm.as_raw(),
                req.as_mut_ptr(),
            )
        };
        assert_eq!(rc, ffi::MPI_SUCCESS as c_int, "MPI_Iallreduce failed");
        Ok(PendingAllreduce {
            // SAFETY: MPI_Iallreduce succeeded and wrote the request.
            req: Some(unsafe { req.assume_init() }),
            send: copy,
            buf,
            polite: self.polite.get(),
        })
    }

    /// `MPI_Reduce` of `buf` with `op` to `root` (after the call check and the root's; see the
    /// module docs): the root receives into `buf` from a copy of it; the others send `buf`
    /// and leave it unchanged.
    pub(in crate::process) fn native_reduce<T, O>(
        &self,
        buf: &mut [T],
        op: &O,
        root: usize,
    ) -> Result<()>
    where
        T: Copy + 'static,
        O: Op<T> + ?Sized,
    {
        let Some((datatype, mop)) = self.native_reduction("reduce", buf, op)? else {
            return Ok(());
        };
        let n = buf.len() as c_int;
        let comm = self.comm.as_raw();
        let r = root as c_int;
        let name = "MPI_Reduce";
        if self.rank != root {
            let send = buf.as_ptr().cast::<c_void>();
            // SAFETY: for both closures, `send` is the caller's `n` elements of `datatype`, only
            // read, live until the call completes inside `run_native`; the receive buffer is
            // not significant away from the root (MPI 3.1 §5.9.1), so null; op, communicator
            // and request as in `native_allreduce`.
            self.run_native(
                name,
                || unsafe {
                    ffi::MPI_Reduce(send, std::ptr::null_mut(), n, datatype, mop, r, comm)
                },
                |req| unsafe {
                    ffi::MPI_Ireduce(send, std::ptr::null_mut(), n, datatype, mop, r, comm, req)
                },
            );
            return Ok(());
        }
        let recv = buf.as_mut_ptr().cast::<c_void>();
        self.sending_copy(buf, |send| {
            // SAFETY: for both closures, as in `native_allreduce`, at the root.
            self.run_native(
                name,
                || unsafe { ffi::MPI_Reduce(send, recv, n, datatype, mop, r, comm) },
                |req| unsafe { ffi::MPI_Ireduce(send, recv, n, datatype, mop, r, comm, req) },
            )
        });
        Ok(())
    }

    /// `MPI_Bcast` of `buf`'s bytes from `root` (after the call check and the root's).
    pub(in crate::process) fn native_broadcast<T: Copy>(
        &self,
        buf: &mut [T],
        root: usize,
    ) -> Result<()> {
        let bytes = size_of_val(buf);
        self.check_bytes("broadcast", bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        let (n, r, comm) = (bytes as c_int, root as c_int, self.comm.as_raw());
        let data = buf.as_mut_ptr().cast::<c_void>();
        // SAFETY: for both closures, `data` is the caller's buffer of `n` bytes, read at the root
        // and written elsewhere, live until the call completes inside `run_native`; a `Copy`
        // type may be written byte by byte with the root's bytes, which are a valid value of
        // it (every process has the same `T`, by the call check); the communicator and request
        // as in `native_allreduce`.
        self.run_native(
            "MPI_Bcast",
            || unsafe { ffi::MPI_Bcast(data, n, ffi::RSMPI_UINT8_T, r, comm) },
            |req| unsafe { ffi::MPI_Ibcast(data, n, ffi::RSMPI_UINT8_T, r, comm, req) },
        );
        Ok(())
    }
}

/// A started `MPI_Iallreduce` ([`ProcessComm::native_allreduce_start`]): owns the copy it
/// sends from and holds the buffer it receives into until [`PendingAllreduce::wait`] gives it
/// back. Dropping it waits too, since MPI writes the buffer until the request completes; it
/// must not be leaked (`mem::forget`) while the request is live, which the crate never does.
pub(crate) struct PendingAllreduce<'b, T> {
    /// The request, until completed (`None` for an empty buffer).
    req: Option<ffi::MPI_Request>,
    /// The copy of the input that MPI reads.
    send: Vec<Chunk>,
    /// The receive buffer, written by MPI until the request completes.
    buf: &'b mut [T],
    /// Whether to poll politely.
    polite: bool,
}

impl<'b, T> PendingAllreduce<'b, T> {
    /// Waits until the allreduce is complete and gives the buffer back, holding the result,
    /// with the send copy's storage for reuse.
    pub(crate) fn wait(mut self) -> (&'b mut [T], Vec<Chunk>) {
        self.complete();
        (
            std::mem::take(&mut self.buf),
            std::mem::take(&mut self.send),
        )
    }

    /// Completes the request, if not done yet.
    fn complete(&mut self) {
        if let Some(req) = self.req.take() {
            wait_all(&mut [req], self.polite);
        }
    }
}

impl<T> Drop for PendingAllreduce<'_, T> {
    fn drop(&mut self) {
        self.complete();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::op;

    #[test]
    fn which_reductions_are_native() {
        assert!(reduction::<u64, _>(&op::Sum).is_ok());
        assert!(reduction::<i8, _>(&op::Max).is_ok());
        assert!(reduction::<usize, _>(&op::BitXor).is_ok());
        assert!(reduction::<f64, _>(&op::Sum).is_ok());
        assert!(reduction::<bool, _>(&op::BitXor).is_ok());
        assert!(reduction::<f32, _>(&op::Min)
            .unwrap_err()
            .contains("total_cmp"));
        assert!(reduction::<u128, _>(&op::Sum).unwrap_err().contains("u128"));
        let user = op::commutative(|a: &u32, b: &u32| a.wrapping_add(*b));
        assert!(reduction::<u32, _>(&user).unwrap_err().contains("user op"));
        assert!(exact::<i32, _>(&op::Prod) && exact::<bool, _>(&op::LogicalOr));
        assert!(!exact::<f64, _>(&op::Sum) && !exact::<u32, _>(&user));
    }
}
