//! Element types and ops as generic parameters: [`Elem`] (inputs, the values of the timed
//! loop, exact float sums) and [`dispatch`], which turns the command line's `--type` and `--op`
//! into one monomorphised call.

use crate::domain::{Dtype, OpName};
use corecoll::op::{self, Op};
use std::fmt::Debug;

/// An element type the bench runs.
pub trait Elem: Copy + Send + Sync + PartialEq + Debug + Default + 'static {
    /// Its `--type` name.
    const DTYPE: Dtype;

    /// A value from 64 random bits: for floats under `Sum` uniform in [0, 1), under `Prod` in
    /// [0.75, 1.25) (products of many stay normal), otherwise in [−1, 1); integers take the
    /// bits.
    fn from_bits(bits: u64, op: OpName) -> Self;

    /// The value every element of the timed loop holds: one that an in-place reduction maps
    /// to itself or to another ordinary value, so that thousands of repeated calls never
    /// reach infinity or the subnormal range, where float arithmetic slows down (0 under
    /// `Sum`, 1 under `Prod`; the input otherwise, as min, max and the bit ops stay in range).
    fn timing_value(op: OpName, rank: usize, i: usize) -> Self {
        match op {
            OpName::Sum | OpName::ReproSum => Self::default(),
            OpName::Prod => Self::one(),
            _ => input(op, 0, rank, i),
        }
    }

    /// 1 of this type.
    fn one() -> Self;

    /// As f64 (for errors and the float checks).
    fn to_f64(self) -> f64;

    /// Bit-for-bit equality (NaN equals itself, −0 differs from +0).
    fn same_bits(self, other: Self) -> bool;

    /// The exactly rounded sum of `terms` for floats, `None` for integers (whose wrapping sum
    /// is exact in any order); `scratch` is working space, reused between calls.
    fn exact_sum(terms: &[Self], scratch: &mut Vec<f64>) -> Option<Self>;
}

/// Input element `i` of rank `rank` for seed `seed`: a fixed function of the three (SplitMix64
/// of their mix), so that the harness recomputes every rank's input for the reference.
pub fn input<T: Elem>(op: OpName, seed: u64, rank: usize, i: usize) -> T {
    let x = seed
        ^ (rank as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (i as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
    T::from_bits(splitmix64(x), op)
}

/// SplitMix64's output function (Steele, Lea, Flood 2014).
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// [`fsum_with`] with a working space of its own.
#[cfg(test)]
pub fn fsum(terms: impl IntoIterator<Item = f64>) -> f64 {
    fsum_with(&mut Vec::new(), terms)
}

/// The exactly rounded f64 sum of `terms` (Shewchuk 1997's adaptive expansion, the method of
/// Python's `math.fsum`): partials that never overlap are kept exactly, and summed at the end
/// with the correction for round-half-even. `partials` is working space (cleared first), so
/// that a caller summing many short lists allocates once.
pub fn fsum_with(partials: &mut Vec<f64>, terms: impl IntoIterator<Item = f64>) -> f64 {
    partials.clear();
    for mut x in terms {
        let mut kept = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[kept] = lo;
                kept += 1;
            }
            x = hi;
        }
        partials.truncate(kept);
        partials.push(x);
    }
    // Add the partials from the largest down; stop at the first inexact addition and fix
    // the rounding with the sign of the next partial (a tie broken the wrong way).
    let mut hi = 0.0;
    let mut n = partials.len();
    if n > 0 {
        n -= 1;
        hi = partials[n];
        let mut lo = 0.0;
        while n > 0 {
            let x = hi;
            n -= 1;
            let y = partials[n];
            hi = x + y;
            let yr = hi - x;
            lo = y - yr;
            if lo != 0.0 {
                break;
            }
        }
        if n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            if y == x - hi {
                hi = x;
            }
        }
    }
    hi
}

macro_rules! float_elem {
    ($t:ty, $d:expr, $mant:expr) => {
        impl Elem for $t {
            const DTYPE: Dtype = $d;
            fn from_bits(bits: u64, op: OpName) -> Self {
                // The top `$mant` bits as a fraction in [0, 1).
                let u = (bits >> (64 - $mant)) as $t / (1u64 << $mant) as $t;
                match op {
                    OpName::Sum => u,
                    OpName::Prod => 0.75 + 0.5 * u,
                    _ => 2.0 * u - 1.0,
                }
            }
            fn one() -> Self {
                1.0
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn same_bits(self, other: Self) -> bool {
                self.to_bits() == other.to_bits()
            }
            fn exact_sum(terms: &[Self], scratch: &mut Vec<f64>) -> Option<Self> {
                // f32 terms are exact in f64; the f64 result is rounded once more to f32.
                Some(fsum_with(scratch, terms.iter().map(|&x| x as f64)) as $t)
            }
        }
    };
}
float_elem!(f64, Dtype::F64, 53);
float_elem!(f32, Dtype::F32, 24);

macro_rules! int_elem {
    ($t:ty, $d:expr) => {
        impl Elem for $t {
            const DTYPE: Dtype = $d;
            fn from_bits(bits: u64, _op: OpName) -> Self {
                bits as $t
            }
            fn one() -> Self {
                1
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn same_bits(self, other: Self) -> bool {
                self == other
            }
            fn exact_sum(_terms: &[Self], _scratch: &mut Vec<f64>) -> Option<Self> {
                None
            }
        }
    };
}
int_elem!(i64, Dtype::I64);
int_elem!(i32, Dtype::I32);
int_elem!(u8, Dtype::U8);

/// Something to run for one (element type, op) pair, chosen at run time by [`dispatch`].
pub trait Visit {
    /// What the run gives back.
    type Out;
    /// Runs with the element type `T` and the op `o` (`op` is its name).
    fn visit<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(self, op: OpName, o: O)
        -> Self::Out;
}

/// Calls `v.visit` for the type `dtype` and the op `op`; `None` if the op is not defined on
/// the type (the bit ops on floats).
///
/// Only the default pair, f64 under `Sum`, gets an instantiation of its own (`O` the op's
/// type); every other pair passes its op as `&dyn Op<T>`, so that the benchmark's code is
/// generated once per element type rather than once per pair (29 pairs made its optimised build
/// take over two minutes on 2 cores). The op's kernel is the same either way: the dynamic call
/// is one per slice folded, not per element.
pub fn dispatch<V: Visit>(dtype: Dtype, op: OpName, v: V) -> Option<V::Out> {
    macro_rules! ops {
        ($t:ty, $($name:ident => $o:expr),*) => {{
            let o: &'static (dyn Op<$t> + Sync) = match op {
                $(OpName::$name => &$o,)*
                #[allow(unreachable_patterns)]
                _ => return None,
            };
            Some(v.visit::<$t, _>(op, o))
        }};
    }
    match (dtype, op) {
        (Dtype::F64, OpName::Sum) => Some(v.visit::<f64, _>(op, op::Sum)),
        (Dtype::F64, _) => ops!(f64, Sum => op::Sum, Prod => op::Prod, Min => op::Min,
            Max => op::Max, ReproSum => op::ReproducibleSum),
        (Dtype::F32, _) => ops!(f32, Sum => op::Sum, Prod => op::Prod, Min => op::Min,
            Max => op::Max, ReproSum => op::ReproducibleSum),
        (Dtype::I64, _) => ops!(i64, Sum => op::Sum, Prod => op::Prod, Min => op::Min,
            Max => op::Max, Band => op::BitAnd, Bor => op::BitOr, Bxor => op::BitXor),
        (Dtype::I32, _) => ops!(i32, Sum => op::Sum, Prod => op::Prod, Min => op::Min,
            Max => op::Max, Band => op::BitAnd, Bor => op::BitOr, Bxor => op::BitXor),
        (Dtype::U8, _) => ops!(u8, Sum => op::Sum, Prod => op::Prod, Min => op::Min,
            Max => op::Max, Band => op::BitAnd, Bor => op::BitOr, Bxor => op::BitXor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsum_is_exactly_rounded() {
        assert_eq!(fsum([]), 0.0);
        assert_eq!(fsum([1e100, 1.0, -1e100]), 1.0);
        assert_eq!(fsum([0.1; 10]), 1.0);
        // 2^53 + 1 + 2^-50 rounds up to 2^53 + 2 (the naive sum gives 2^53).
        let big = 9007199254740992.0;
        assert_eq!(fsum([big, 1.0, 2f64.powi(-50)]), big + 2.0);
        assert_eq!(fsum([big, 1.0]), big);
        // Against exact integer arithmetic on values that are integers below 2^60.
        let xs: Vec<i64> = (0..1000)
            .map(|i| input::<i64>(OpName::Sum, 7, 0, i) >> 12)
            .collect();
        let exact: i128 = xs.iter().map(|&x| x as i128).sum();
        assert_eq!(fsum(xs.iter().map(|&x| x as f64)), exact as f64);
    }

    #[test]
    fn inputs_are_deterministic_and_in_range() {
        for i in 0..1000 {
            let a: f64 = input(OpName::Sum, 1, 3, i);
            assert_eq!(a, input::<f64>(OpName::Sum, 1, 3, i));
            assert!((0.0..1.0).contains(&a));
            let b: f32 = input(OpName::Prod, 1, 3, i);
            assert!((0.75..1.25).contains(&b));
            let c: f64 = input(OpName::Max, 1, 3, i);
            assert!((-1.0..1.0).contains(&c));
        }
        assert_ne!(
            input::<u8>(OpName::Sum, 1, 0, 0),
            input::<u8>(OpName::Sum, 1, 1, 0)
        );
        assert_eq!(f64::timing_value(OpName::Sum, 1, 1), 0.0);
        assert_eq!(i32::timing_value(OpName::Prod, 1, 1), 1);
    }

    struct Name;
    impl Visit for Name {
        type Out = (Dtype, usize);
        fn visit<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
            self,
            _: OpName,
            _: O,
        ) -> Self::Out {
            (T::DTYPE, std::mem::size_of::<T>())
        }
    }

    #[test]
    fn dispatch_covers_the_valid_pairs() {
        for d in Dtype::ALL {
            for o in OpName::ALL {
                match dispatch(d, o, Name) {
                    Some((t, size)) => {
                        assert!(o.applies_to(d));
                        assert_eq!((t, size), (d, d.size()));
                    }
                    None => assert!(!o.applies_to(d)),
                }
            }
        }
    }
}
