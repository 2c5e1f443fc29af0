//! The element types and the reduction ops of the C API: each `corecoll_datatype_t` code is a
//! Rust type (`with_type!`), and each `corecoll_op_t` code is a built-in op or a user op made
//! from a C function (`COp`), checked against the type before a call starts.

use crate::error::{CError, CResult};
use corecoll_rs::op::{self, Builtin, Identity, Op};
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// A C element type: its code.
#[allow(non_camel_case_types)]
pub type corecoll_datatype_t = c_int;

/// `int8_t` (`signed char`).
pub const CORECOLL_INT8: corecoll_datatype_t = 1;
/// `uint8_t` (`unsigned char`, bytes).
pub const CORECOLL_UINT8: corecoll_datatype_t = 2;
/// `int16_t`.
pub const CORECOLL_INT16: corecoll_datatype_t = 3;
/// `uint16_t`.
pub const CORECOLL_UINT16: corecoll_datatype_t = 4;
/// `int32_t` (`int`).
pub const CORECOLL_INT32: corecoll_datatype_t = 5;
/// `uint32_t` (`unsigned`).
pub const CORECOLL_UINT32: corecoll_datatype_t = 6;
/// `int64_t` (`long long`, and `long` on LP64 systems).
pub const CORECOLL_INT64: corecoll_datatype_t = 7;
/// `uint64_t`.
pub const CORECOLL_UINT64: corecoll_datatype_t = 8;
/// `float`.
pub const CORECOLL_FLOAT: corecoll_datatype_t = 9;
/// `double`.
pub const CORECOLL_DOUBLE: corecoll_datatype_t = 10;
/// `char` as `MPI_CHAR`: `CORECOLL_INT8`.
pub const CORECOLL_CHAR: corecoll_datatype_t = CORECOLL_INT8;
/// `MPI_BYTE`: `CORECOLL_UINT8`.
pub const CORECOLL_BYTE: corecoll_datatype_t = CORECOLL_UINT8;
/// `int` as `MPI_INT`: `CORECOLL_INT32`.
pub const CORECOLL_INT: corecoll_datatype_t = CORECOLL_INT32;
/// `unsigned` as `MPI_UNSIGNED`: `CORECOLL_UINT32`.
pub const CORECOLL_UNSIGNED: corecoll_datatype_t = CORECOLL_UINT32;
/// `long long` as `MPI_LONG_LONG`: `CORECOLL_INT64`.
pub const CORECOLL_LONG_LONG: corecoll_datatype_t = CORECOLL_INT64;

/// A reduction op: its code (a built-in one, or one made by `corecoll_op_create`).
#[allow(non_camel_case_types)]
pub type corecoll_op_t = c_int;

/// No op (what `corecoll_op_free` leaves).
pub const CORECOLL_OP_NULL: corecoll_op_t = 0;
/// Sum (`MPI_SUM`); integers wrap.
pub const CORECOLL_SUM: corecoll_op_t = 1;
/// Product (`MPI_PROD`); integers wrap.
pub const CORECOLL_PROD: corecoll_op_t = 2;
/// Minimum (`MPI_MIN`).
pub const CORECOLL_MIN: corecoll_op_t = 3;
/// Maximum (`MPI_MAX`).
pub const CORECOLL_MAX: corecoll_op_t = 4;
/// Bitwise and (`MPI_BAND`), integers only.
pub const CORECOLL_BAND: corecoll_op_t = 5;
/// Bitwise or (`MPI_BOR`), integers only.
pub const CORECOLL_BOR: corecoll_op_t = 6;
/// Bitwise exclusive or (`MPI_BXOR`), integers only.
pub const CORECOLL_BXOR: corecoll_op_t = 7;
/// Logical and (`MPI_LAND`; non-zero is true, the result 0 or 1), integers only.
pub const CORECOLL_LAND: corecoll_op_t = 8;
/// Logical or (`MPI_LOR`), integers only.
pub const CORECOLL_LOR: corecoll_op_t = 9;
/// The reproducible sum (`op::ReproducibleSum`), `CORECOLL_FLOAT` and `CORECOLL_DOUBLE` only:
/// each element the correctly rounded exact sum of the ranks' elements, the same bits for every
/// algorithm, rank count and split of ranks over processes and threads (docs/repro.md).
pub const CORECOLL_REPRO_SUM: corecoll_op_t = 10;

/// The first code of the ops made by `corecoll_op_create`.
const FIRST_USER: c_int = 64;

/// A user function with MPI's `MPI_User_function` shape: `inoutvec[i] = invec[i] ⊙ inoutvec[i]`
/// for `i < *len`, `invec` holding the operands of the lower ranks.
#[allow(non_camel_case_types)]
pub type corecoll_user_function = Option<
    unsafe extern "C" fn(
        invec: *mut c_void,
        inoutvec: *mut c_void,
        len: *mut c_int,
        datatype: *mut corecoll_datatype_t,
    ),
>;

/// A user op made by `corecoll_op_create`.
#[derive(Debug)]
struct UserOp {
    /// Never NULL (`corecoll_op_create` refuses NULL).
    function: corecoll_user_function,
    commutative: bool,
}

/// The user ops by code − `FIRST_USER` (`None` once freed).
static USER_OPS: Mutex<Vec<Option<Arc<UserOp>>>> = Mutex::new(Vec::new());

/// Registers a user op; its code.
pub(crate) fn create_user_op(function: corecoll_user_function, commutative: bool) -> c_int {
    let mut ops = USER_OPS.lock().unwrap_or_else(|p| p.into_inner());
    let code = FIRST_USER + ops.len() as c_int;
    ops.push(Some(Arc::new(UserOp {
        function,
        commutative,
    })));
    code
}

/// Frees user op `code`: an error for a built-in or unknown one.
pub(crate) fn free_user_op(code: c_int) -> CResult<()> {
    let mut ops = USER_OPS.lock().unwrap_or_else(|p| p.into_inner());
    let slot = usize::try_from(code - FIRST_USER)
        .ok()
        .and_then(|i| ops.get_mut(i))
        .filter(|s| s.is_some())
        .ok_or(CError::Op(code))?;
    *slot = None;
    Ok(())
}

/// A C element type as Rust sees it.
pub(crate) trait CType: Copy + Send + Sync + 'static {
    /// Its code.
    const CODE: corecoll_datatype_t;
    /// Whether built-in op `b` applies to it.
    fn takes(b: Builtin) -> bool;
    /// `acc[i] = acc[i] ⊙ rhs[i]` (`left`: `acc[i] = rhs[i] ⊙ acc[i]`) for built-in op `b`,
    /// which it takes.
    fn fold(b: Builtin, acc: &mut [Self], rhs: &[Self], left: bool);
    /// The reproducible sum on this type, if it has one (the float types).
    fn repro() -> Option<&'static dyn Op<Self>>;
}

/// Folds with the crate's own op `$op` in the direction asked.
macro_rules! fold_with {
    ($op:expr, $acc:expr, $rhs:expr, $left:expr) => {
        if $left {
            $op.fold_left($rhs, $acc)
        } else {
            $op.fold_right($acc, $rhs)
        }
    };
}

macro_rules! int_types {
    ($($t:ty = $code:ident),*) => {$(
        impl CType for $t {
            const CODE: corecoll_datatype_t = $code;
            fn takes(b: Builtin) -> bool {
                b != Builtin::Avg
            }
            fn fold(b: Builtin, acc: &mut [Self], rhs: &[Self], left: bool) {
                match b {
                    Builtin::Sum => fold_with!(op::Sum, acc, rhs, left),
                    Builtin::Prod => fold_with!(op::Prod, acc, rhs, left),
                    Builtin::Min => fold_with!(op::Min, acc, rhs, left),
                    Builtin::Max => fold_with!(op::Max, acc, rhs, left),
                    Builtin::BitAnd => fold_with!(op::BitAnd, acc, rhs, left),
                    Builtin::BitOr => fold_with!(op::BitOr, acc, rhs, left),
                    Builtin::BitXor => fold_with!(op::BitXor, acc, rhs, left),
                    Builtin::LogicalAnd => fold_with!(op::LogicalAnd, acc, rhs, left),
                    Builtin::LogicalOr => fold_with!(op::LogicalOr, acc, rhs, left),
                    _ => unreachable!("an op the type does not take was refused before the call"),
                }
            }
            fn repro() -> Option<&'static dyn Op<Self>> {
                None
            }
        }
    )*};
}
int_types!(
    i8 = CORECOLL_INT8,
    u8 = CORECOLL_UINT8,
    i16 = CORECOLL_INT16,
    u16 = CORECOLL_UINT16,
    i32 = CORECOLL_INT32,
    u32 = CORECOLL_UINT32,
    i64 = CORECOLL_INT64,
    u64 = CORECOLL_UINT64
);

macro_rules! float_types {
    ($($t:ty = $code:ident),*) => {$(
        impl CType for $t {
            const CODE: corecoll_datatype_t = $code;
            fn takes(b: Builtin) -> bool {
                matches!(b, Builtin::Sum | Builtin::Prod | Builtin::Min | Builtin::Max)
            }
            fn fold(b: Builtin, acc: &mut [Self], rhs: &[Self], left: bool) {
                match b {
                    Builtin::Sum => fold_with!(op::Sum, acc, rhs, left),
                    Builtin::Prod => fold_with!(op::Prod, acc, rhs, left),
                    Builtin::Min => fold_with!(op::Min, acc, rhs, left),
                    Builtin::Max => fold_with!(op::Max, acc, rhs, left),
                    _ => unreachable!("an op the type does not take was refused before the call"),
                }
            }
            fn repro() -> Option<&'static dyn Op<Self>> {
                Some(&op::ReproducibleSum)
            }
        }
    )*};
}
float_types!(f32 = CORECOLL_FLOAT, f64 = CORECOLL_DOUBLE);

/// Runs `$body` with `$T` the Rust type of C type code `$dt`, or is `Err(CError::Type)`.
macro_rules! with_type {
    ($dt:expr, |$T:ident| $body:expr) => {{
        use $crate::types::*;
        match $dt {
            CORECOLL_INT8 => {
                type $T = i8;
                $body
            }
            CORECOLL_UINT8 => {
                type $T = u8;
                $body
            }
            CORECOLL_INT16 => {
                type $T = i16;
                $body
            }
            CORECOLL_UINT16 => {
                type $T = u16;
                $body
            }
            CORECOLL_INT32 => {
                type $T = i32;
                $body
            }
            CORECOLL_UINT32 => {
                type $T = u32;
                $body
            }
            CORECOLL_INT64 => {
                type $T = i64;
                $body
            }
            CORECOLL_UINT64 => {
                type $T = u64;
                $body
            }
            CORECOLL_FLOAT => {
                type $T = f32;
                $body
            }
            CORECOLL_DOUBLE => {
                type $T = f64;
                $body
            }
            other => Err($crate::error::CError::Type(other)),
        }
    }};
}
pub(crate) use with_type;

/// What a C op code is.
#[derive(Debug, Clone)]
enum Kind {
    Builtin(Builtin),
    User(Arc<UserOp>),
    /// `CORECOLL_REPRO_SUM` on a float type (`CType::repro`).
    Repro,
}

/// A C op on elements of `T`: a built-in op or a user op, as an `Op` of the crate.
#[derive(Debug, Clone)]
pub(crate) struct COp<T> {
    kind: Kind,
    _t: PhantomData<fn(T)>,
}

/// User op `code` (kept out of line: the built-in ops' path is every call's).
#[cold]
#[inline(never)]
fn user_op(code: corecoll_op_t) -> CResult<Arc<UserOp>> {
    let ops = USER_OPS.lock().unwrap_or_else(|p| p.into_inner());
    usize::try_from(code - FIRST_USER)
        .ok()
        .and_then(|i| ops.get(i).cloned().flatten())
        .ok_or(CError::Op(code))
}

impl<T: CType> COp<T> {
    /// The op of code `code` on `T`: an error for an unknown or freed code, or a built-in op
    /// that `T` does not take (a bitwise op on floats).
    #[inline(always)]
    pub(crate) fn new(code: corecoll_op_t) -> CResult<Self> {
        let builtin = match code {
            CORECOLL_SUM => Some(Builtin::Sum),
            CORECOLL_PROD => Some(Builtin::Prod),
            CORECOLL_MIN => Some(Builtin::Min),
            CORECOLL_MAX => Some(Builtin::Max),
            CORECOLL_BAND => Some(Builtin::BitAnd),
            CORECOLL_BOR => Some(Builtin::BitOr),
            CORECOLL_BXOR => Some(Builtin::BitXor),
            CORECOLL_LAND => Some(Builtin::LogicalAnd),
            CORECOLL_LOR => Some(Builtin::LogicalOr),
            CORECOLL_REPRO_SUM if T::repro().is_some() => {
                return Ok(COp {
                    kind: Kind::Repro,
                    _t: PhantomData,
                })
            }
            CORECOLL_REPRO_SUM => return Err(CError::OpType(code, T::CODE)),
            _ => None,
        };
        let kind = match builtin {
            Some(b) if T::takes(b) => Kind::Builtin(b),
            Some(_) => return Err(CError::OpType(code, T::CODE)),
            None => Kind::User(user_op(code)?),
        };
        Ok(COp {
            kind,
            _t: PhantomData,
        })
    }

    /// `inout[i] = input[i] ⊙ inout[i]` by the user's function, in pieces of at most
    /// `c_int::MAX` elements.
    fn call_user(user: &UserOp, input: &[T], inout: &mut [T]) {
        for (i, o) in input
            .chunks(c_int::MAX as usize)
            .zip(inout.chunks_mut(c_int::MAX as usize))
        {
            let mut len = i.len() as c_int;
            let mut dt = T::CODE;
            let Some(function) = user.function else {
                return;
            };
            // SAFETY: both pointers address `len` valid elements of `T` (the function reads
            // `invec` and writes `inoutvec`, as MPI's user functions do; `invec` is never
            // written by a correct one, and the cast only matches MPI's signature).
            unsafe {
                function(
                    i.as_ptr() as *mut c_void,
                    o.as_mut_ptr() as *mut c_void,
                    &mut len,
                    &mut dt,
                )
            };
        }
    }
}

impl<T: CType> COp<T> {
    /// The crate's reproducible sum on `T` (the op is `CORECOLL_REPRO_SUM`, which `new` takes
    /// for the float types only).
    fn repro() -> &'static dyn Op<T> {
        T::repro().expect("CORECOLL_REPRO_SUM is refused on types without it")
    }
}

impl<T: CType> Op<T> for COp<T> {
    fn fold_right(&self, acc: &mut [T], rhs: &[T]) {
        match &self.kind {
            Kind::Builtin(b) => T::fold(*b, acc, rhs, false),
            Kind::User(user) => {
                // The function writes its right operand: `acc ⊙ rhs` lands in a copy of `rhs`.
                let mut out = rhs.to_vec();
                Self::call_user(user, acc, &mut out);
                acc.copy_from_slice(&out);
            }
            Kind::Repro => Self::repro().fold_right(acc, rhs),
        }
    }

    fn fold_left(&self, lhs: &[T], acc: &mut [T]) {
        match &self.kind {
            Kind::Builtin(b) => T::fold(*b, acc, lhs, true),
            Kind::User(user) => Self::call_user(user, lhs, acc),
            Kind::Repro => Self::repro().fold_left(lhs, acc),
        }
    }

    fn is_commutative(&self) -> bool {
        match &self.kind {
            Kind::Builtin(_) | Kind::Repro => true,
            Kind::User(user) => user.commutative,
        }
    }

    fn builtin(&self) -> Option<Builtin> {
        match &self.kind {
            Kind::Builtin(b) => Some(*b),
            Kind::User(_) | Kind::Repro => None,
        }
    }

    fn identity(&self) -> Identity {
        match &self.kind {
            Kind::Builtin(b) => Identity::Builtin(*b),
            Kind::User(user) => Identity::User {
                type_id: std::any::TypeId::of::<COp<T>>(),
                name: "a user op of the C API",
                commutative: user.commutative,
            },
            // The crate's op itself, so that C and Rust ranks agree.
            Kind::Repro => Self::repro().identity(),
        }
    }

    fn pairwise(&self) -> bool {
        !matches!(self.kind, Kind::Repro)
    }

    fn fold_all<'a>(&self, n: usize, operand: &dyn Fn(usize) -> &'a [T], out: &mut [T])
    where
        T: Copy + 'a,
    {
        if let Kind::Repro = self.kind {
            return Self::repro().fold_all(n, operand, out);
        }
        // The left fold in rank order, as `Op::fold_all` provides it.
        out.copy_from_slice(operand(0));
        for k in 1..n {
            self.fold_right(out, operand(k));
        }
    }
}
