//! Reduction operations: what `allreduce` (and later `reduce`, `scan`, …) combine with.
//!
//! An [`Op<T>`] combines slices element by element in either operand order, so that a schedule
//! can always put the operand from the lower ranks on the left: MPI's semantics are
//! x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1} in rank order, which an associative but non-commutative op must get
//! exactly. [`Op::is_commutative`] tells a schedule whether it may reorder.
//!
//! The built-in ops are unit structs ([`Sum`], [`Prod`], [`Min`], [`Max`], [`BitAnd`],
//! [`BitOr`], [`BitXor`], [`LogicalAnd`], [`LogicalOr`], and the mean [`Avg`]) implemented for
//! every primitive type they make sense for, and [`ReproducibleSum`] for the exact accumulators
//! of `repro`; user ops come from [`commutative`] and [`non_commutative`]. Nothing
//! here allocates.
//!
//! Integer `Sum` and `Prod` wrap on overflow (two's complement), so results do not depend on
//! the order of combination. Float `Min` and `Max` follow `total_cmp` (−0.0 < +0.0, NaNs at
//! the ends by sign), so they are commutative bit for bit and every rank gets the same bits.

/// An associative operation on `T`, applied element-wise to slices.
pub trait Op<T>: Sync {
    /// `acc[i] = acc[i] ⊙ rhs[i]`: `acc` holds the operand from lower ranks.
    fn fold_right(&self, acc: &mut [T], rhs: &[T]);
    /// `acc[i] = lhs[i] ⊙ acc[i]`: `lhs` holds the operand from lower ranks.
    fn fold_left(&self, lhs: &[T], acc: &mut [T]);
    /// Whether `a ⊙ b == b ⊙ a` for all values (bit for bit), so that a schedule may combine
    /// in any order.
    fn is_commutative(&self) -> bool;
    /// Which of MPI's predefined operations this is, if it is one of the crate's built-in ops
    /// (`None` for user ops): lets a communicator between MPI processes hand the reduction to
    /// MPI's own collectives (`Algorithm::Native`).
    fn builtin(&self) -> Option<Builtin> {
        None
    }
    /// What the op does to a complete result over `ranks` ranks' values, once, after the
    /// combining: nothing for every op but [`Avg`], which divides by `ranks`. The
    /// communicator's calls apply it to each result they hand back (allreduce: every rank, p;
    /// reduce: the root, p; reduce-scatter: every block, p; scan: rank r, r + 1; exscan: rank
    /// r > 0, r); schedules never do. Provided: a user op has no reason to implement it.
    fn finish(&self, acc: &mut [T], ranks: usize) {
        let _ = (acc, ranks);
    }
    /// Whether combining partial results two at a time gives the op's result: true for every
    /// op but [`ReproducibleSum`] on `f64` and `f32`, whose result is the exact sum of all the
    /// operands rounded once, which a partial sum held in the type itself cannot carry. For
    /// such an op the single-copy schedules, which see every operand of an element at once,
    /// combine with [`Op::fold_all`], and the communicator runs the others on a wider state
    /// (`repro::Accumulator`); at two ranks, where one combining is the whole reduction, every
    /// schedule runs as it is. Provided: a user op has no reason to implement it.
    fn pairwise(&self) -> bool {
        true
    }
    /// `out[i] = x₀[i] ⊙ x₁[i] ⊙ … ⊙ x_{n−1}[i]` with `x_k = operand(k)`, each as long as `out`
    /// (n ≥ 1): the combining of every operand of an element at once. Provided: the left fold
    /// in rank order, the same bits as [`Op::fold_right`] one operand after another; an op
    /// that is not [`pairwise`](Op::pairwise) computes its result here.
    fn fold_all<'a>(&self, n: usize, operand: &dyn Fn(usize) -> &'a [T], out: &mut [T])
    where
        T: Copy + 'a,
    {
        out.copy_from_slice(operand(0));
        for k in 1..n {
            self.fold_right(out, operand(k));
        }
    }
    /// What the call check compares of this op, so that ranks that pass different ops fail
    /// the call instead of computing a wrong result: the built-in op it is, else its type
    /// (and its commutativity). Provided: an op has no reason to implement it itself.
    fn identity(&self) -> Identity {
        match self.builtin() {
            Some(b) => Identity::Builtin(b),
            None => Identity::User {
                type_id: typeid::of::<Self>(),
                name: std::any::type_name::<Self>(),
                commutative: self.is_commutative(),
            },
        }
    }
}

/// What the call check compares of an op ([`Op::identity`]): built-in ops by what they are, user
/// ops by their type. Two closures are two types, so ranks that pass different closures
/// disagree; the same closure passed by value on one rank and by reference on another is one
/// op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// One of the crate's built-in ops.
    Builtin(Builtin),
    /// A user op.
    User {
        /// Its type (lifetimes aside).
        type_id: std::any::TypeId,
        /// Its type's name, for messages.
        name: &'static str,
        /// Whether it is commutative ([`Op::is_commutative`]).
        commutative: bool,
    },
}

impl Identity {
    /// A short description for messages: the built-in op's name (`sum`), or `a user op
    /// (TYPE)`.
    pub fn describe(self) -> String {
        match self {
            Identity::Builtin(b) => b.name().to_string(),
            Identity::User { name, .. } => format!("a user op ({name})"),
        }
    }
}

/// The built-in ops by name, as MPI's predefined operations (`MPI_SUM`, `MPI_PROD`, …): what
/// [`Op::builtin`] reports for the crate's own ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// [`Sum`] (`MPI_SUM`).
    Sum,
    /// [`Prod`] (`MPI_PROD`).
    Prod,
    /// [`Min`] (`MPI_MIN`).
    Min,
    /// [`Max`] (`MPI_MAX`).
    Max,
    /// [`BitAnd`] (`MPI_BAND`).
    BitAnd,
    /// [`BitOr`] (`MPI_BOR`).
    BitOr,
    /// [`BitXor`] (`MPI_BXOR`).
    BitXor,
    /// [`LogicalAnd`] (`MPI_LAND`).
    LogicalAnd,
    /// [`LogicalOr`] (`MPI_LOR`).
    LogicalOr,
    /// [`Avg`]: `MPI_SUM`, then a division by the number of ranks.
    Avg,
}

impl Builtin {
    /// Every built-in op, in code order.
    pub const ALL: [Builtin; 10] = [
        Builtin::Sum,
        Builtin::Prod,
        Builtin::Min,
        Builtin::Max,
        Builtin::BitAnd,
        Builtin::BitOr,
        Builtin::BitXor,
        Builtin::LogicalAnd,
        Builtin::LogicalOr,
        Builtin::Avg,
    ];

    /// The op's name (`"sum"`, `"prod"`, …), for messages.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Sum => "sum",
            Builtin::Prod => "prod",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::BitAnd => "bit-and",
            Builtin::BitOr => "bit-or",
            Builtin::BitXor => "bit-xor",
            Builtin::LogicalAnd => "logical-and",
            Builtin::LogicalOr => "logical-or",
            Builtin::Avg => "avg",
        }
    }
}

impl<T, O: Op<T> + ?Sized> Op<T> for &O {
    fn fold_right(&self, acc: &mut [T], rhs: &[T]) {
        (**self).fold_right(acc, rhs)
    }
    fn fold_left(&self, lhs: &[T], acc: &mut [T]) {
        (**self).fold_left(lhs, acc)
    }
    fn is_commutative(&self) -> bool {
        (**self).is_commutative()
    }
    fn builtin(&self) -> Option<Builtin> {
        (**self).builtin()
    }
    fn finish(&self, acc: &mut [T], ranks: usize) {
        (**self).finish(acc, ranks)
    }
    fn identity(&self) -> Identity {
        (**self).identity()
    }
    fn pairwise(&self) -> bool {
        (**self).pairwise()
    }
    fn fold_all<'a>(&self, n: usize, operand: &dyn Fn(usize) -> &'a [T], out: &mut [T])
    where
        T: Copy + 'a,
    {
        (**self).fold_all(n, operand, out)
    }
}

/// Implements `Op<T>` for a built-in op from a binary function `$f(a, b) = a ⊙ b`.
macro_rules! builtin {
    ($op:ident, $f:expr, $($t:ty),*) => {$(
        impl Op<$t> for $op {
            #[inline]
            fn fold_right(&self, acc: &mut [$t], rhs: &[$t]) {
                let f: fn($t, $t) -> $t = $f;
                for (a, &b) in acc.iter_mut().zip(rhs) {
                    *a = f(*a, b);
                }
            }
            #[inline]
            fn fold_left(&self, lhs: &[$t], acc: &mut [$t]) {
                let f: fn($t, $t) -> $t = $f;
                for (&a, b) in lhs.iter().zip(acc.iter_mut()) {
                    *b = f(a, *b);
                }
            }
            fn is_commutative(&self) -> bool {
                true
            }
            fn builtin(&self) -> Option<Builtin> {
                Some(Builtin::$op)
            }
        }
    )*};
}

/// Sum (`MPI_SUM`); integers wrap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sum;
/// Product (`MPI_PROD`); integers wrap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prod;
/// Minimum (`MPI_MIN`); floats by `total_cmp`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Min;
/// Maximum (`MPI_MAX`); floats by `total_cmp`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Max;
/// Bitwise and (`MPI_BAND`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BitAnd;
/// Bitwise or (`MPI_BOR`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BitOr;
/// Bitwise exclusive or (`MPI_BXOR`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BitXor;
/// Logical and (`MPI_LAND`): for integers, nonzero is true and the result is 0 or 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogicalAnd;
/// Logical or (`MPI_LOR`): for integers, nonzero is true and the result is 0 or 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogicalOr;
/// The mean: the [`Sum`] of the ranks' values divided by the number of ranks that contributed
/// ([`Op::finish`]; for `scan`, rank r's prefix divided by r + 1). Floats divide in their own
/// type, after the sum in rank order, so every rank gets the same bits. Integers divide the
/// wrapping sum and truncate toward zero, as Rust's `/` does (the mean of 1 and 2 is 1, of −1
/// and −2 is −1); a sum that overflows the type gives a meaningless mean, so average in a
/// wider type. MPI has no such op: programs divide an `MPI_SUM` themselves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Avg;
/// The reproducible float sum: the same bits whatever the algorithm, the placement, the split
/// of ranks over processes and threads, and whichever rank holds which contribution.
///
/// On `f64` and `f32` buffers each element of the result is the exact sum of the ranks'
/// elements, rounded once to nearest (ties to even): the correctly rounded sum, which depends on
/// the numbers only. Infinities and NaN propagate as in IEEE 754 (infinities of both signs
/// give NaN; every NaN comes back as the one quiet NaN `f64::NAN` / `f32::NAN`), an exact sum
/// beyond the type's range is the infinity of its sign, and an exact zero is −0.0 only when
/// every operand was −0.0. The single-copy algorithms compute it where they combine; the others
/// carry each element as a `repro::Accumulator` (68 times an `f64`'s bytes, 24 times an `f32`'s)
/// — `docs/repro.md` says which runs where and what it costs.
///
/// It also reduces `repro::Accumulator<f64>` and `repro::Accumulator<f32>`, which hold exact
/// sums and merge exactly, so the result is the correctly rounded sum of every number any rank
/// added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReproducibleSum;

macro_rules! ints {
    ($($t:ty),*) => {$(
        builtin!(Sum, |a, b| a.wrapping_add(b), $t);
        builtin!(Prod, |a, b| a.wrapping_mul(b), $t);
        builtin!(Min, |a, b| if b < a { b } else { a }, $t);
        builtin!(Max, |a, b| if b > a { b } else { a }, $t);
        builtin!(BitAnd, |a, b| a & b, $t);
        builtin!(BitOr, |a, b| a | b, $t);
        builtin!(BitXor, |a, b| a ^ b, $t);
        builtin!(LogicalAnd, |a, b| (a != 0 && b != 0) as $t, $t);
        builtin!(LogicalOr, |a, b| (a != 0 || b != 0) as $t, $t);
    )*};
}
ints!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

macro_rules! floats {
    ($($t:ty),*) => {
        builtin!(Sum, |a, b| a + b, $($t),*);
        builtin!(Prod, |a, b| a * b, $($t),*);
        builtin!(Min, |a, b| if b.total_cmp(&a).is_lt() { b } else { a }, $($t),*);
        builtin!(Max, |a, b| if b.total_cmp(&a).is_gt() { b } else { a }, $($t),*);
    };
}
floats!(f32, f64);

/// Implements `Op<T>` for [`Avg`]: [`Sum`]'s combining, then `$div(x, ranks)`.
macro_rules! avg {
    ($div:expr, $($t:ty),*) => {$(
        impl Op<$t> for Avg {
            #[inline]
            fn fold_right(&self, acc: &mut [$t], rhs: &[$t]) {
                Sum.fold_right(acc, rhs)
            }
            #[inline]
            fn fold_left(&self, lhs: &[$t], acc: &mut [$t]) {
                Sum.fold_left(lhs, acc)
            }
            fn is_commutative(&self) -> bool {
                true
            }
            fn builtin(&self) -> Option<Builtin> {
                Some(Builtin::Avg)
            }
            fn finish(&self, acc: &mut [$t], ranks: usize) {
                for a in acc {
                    *a = $div(*a, ranks);
                }
            }
        }
    )*};
}
// Divided in the widest type of the sign (the rank count may not fit in a narrow one).
#[allow(clippy::unnecessary_cast)]
mod avg_ints {
    use super::{Avg, Builtin, Op, Sum};
    avg!(
        |x, n| (x as i128 / n as i128) as _,
        i8,
        i16,
        i32,
        i64,
        i128,
        isize
    );
    avg!(
        |x, n| (x as u128 / n as u128) as _,
        u8,
        u16,
        u32,
        u64,
        u128,
        usize
    );
}
avg!(|x, n| x / n as f32, f32);
avg!(|x, n| x / n as f64, f64);

builtin!(BitAnd, |a, b| a & b, bool);
builtin!(BitOr, |a, b| a | b, bool);
builtin!(BitXor, |a, b| a ^ b, bool);
builtin!(LogicalAnd, |a, b| a && b, bool);
builtin!(LogicalOr, |a, b| a || b, bool);
builtin!(Min, |a, b| a & b, bool);
builtin!(Max, |a, b| a | b, bool);

/// A user operation from a function `f(a, b) = a ⊙ b`, where `a` comes from lower ranks.
/// Made by [`commutative`] or [`non_commutative`].
#[derive(Clone, Copy)]
pub struct FnOp<F> {
    f: F,
    commutative: bool,
}

impl<F> std::fmt::Debug for FnOp<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnOp")
            .field("commutative", &self.commutative)
            .finish_non_exhaustive()
    }
}

impl<T: Copy, F: Fn(&T, &T) -> T + Sync> Op<T> for FnOp<F> {
    #[inline]
    fn fold_right(&self, acc: &mut [T], rhs: &[T]) {
        for (a, b) in acc.iter_mut().zip(rhs) {
            *a = (self.f)(a, b);
        }
    }
    #[inline]
    fn fold_left(&self, lhs: &[T], acc: &mut [T]) {
        for (a, b) in lhs.iter().zip(acc.iter_mut()) {
            *b = (self.f)(a, b);
        }
    }
    fn is_commutative(&self) -> bool {
        self.commutative
    }
}

/// A user operation that is associative and commutative: schedules may combine in any order.
/// (Floating-point addition, for instance, is commutative but not associative: results may
/// then differ between algorithms, though never between the ranks of one call.)
pub fn commutative<T: Copy, F: Fn(&T, &T) -> T + Sync>(f: F) -> FnOp<F> {
    FnOp {
        f,
        commutative: true,
    }
}

/// A user operation that is associative but not commutative: every algorithm that accepts it
/// combines exactly x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1} in rank order; one that cannot returns an error.
pub fn non_commutative<T: Copy, F: Fn(&T, &T) -> T + Sync>(f: F) -> FnOp<F> {
    FnOp {
        f,
        commutative: false,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn both_orders_and_builtins() {
        let mut acc = [1u8, 200, 3];
        Op::<u8>::fold_right(&Sum, &mut acc, &[1, 100, 0]);
        assert_eq!(acc, [2, 44, 3]);
        let concat = non_commutative(|a: &u32, b: &u32| a * 10 + b);
        let mut acc = [2u32];
        concat.fold_right(&mut acc, &[3]);
        assert_eq!(acc, [23]);
        concat.fold_left(&[1], &mut acc);
        assert_eq!(acc, [33]); // 1 ⊙ 23; the other order would give 231
        assert!(!concat.is_commutative());
        let mut m = [0.0f64, -0.0, f64::NAN];
        Op::<f64>::fold_right(&Min, &mut m, &[-0.0, 0.0, 1.0]);
        assert_eq!(m[0].to_bits(), (-0.0f64).to_bits());
        assert_eq!(m[1].to_bits(), (-0.0f64).to_bits());
        assert_eq!(m[2], 1.0);
        let mut l = [0i32, 5, 7];
        Op::<i32>::fold_right(&LogicalAnd, &mut l, &[3, 0, -1]);
        assert_eq!(l, [0, 0, 1]);
        assert_eq!(Op::<f64>::builtin(&Max), Some(Builtin::Max));
        assert_eq!(Op::<bool>::builtin(&&BitXor), Some(Builtin::BitXor));
        assert_eq!(Op::<u32>::builtin(&concat), None);
    }
}
