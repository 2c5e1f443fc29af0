//! Reproducible floating-point sums: an exact accumulator whose value does not depend on the
//! order in which numbers were added or accumulators merged.
//!
//! A float sum computed in floating point depends on its association: `(a + b) + c` and
//! `a + (b + c)` may differ in the last bits. So a dot product spread over ranks changes with
//! the rank count, and an allreduce changes with the algorithm. [`Accumulator`] avoids this by
//! not rounding until the end. It holds the sum as one wide fixed-point integer whose unit is the
//! smallest subnormal of the type (2⁻¹⁰⁷⁴ for `f64`, 2⁻¹⁴⁹ for `f32`) and whose range covers the
//! largest finite value with room for carries. Every finite float is an integer multiple of that
//! unit, so each [`Accumulator::add`] is exact, integer addition is associative and commutative,
//! and [`Accumulator::value`] rounds the exact sum once, to nearest with ties to even: the
//! correctly rounded sum, the same bits whatever the order, split or merge tree.
//!
//! The idea of summing into an exact fixed-point "superaccumulator" is old (Kulisch's long
//! accumulator); this layout — digits of 32 bits held in signed 64-bit limbs, so that carries
//! can be left pending for up to 2³⁰ additions — follows the small superaccumulator of Radford
//! Neal ("Fast exact summation using small and large superaccumulators", 2015), as his `xsum`
//! library and the Rust crate of that name use it. corecoll keeps its own because what the wire
//! needs is a `Copy` value with an exact merge, which those do not offer.
//!
//! Special values follow IEEE 754: a NaN among the inputs, or infinities of both signs, give NaN;
//! an infinity gives that infinity; an exact sum too large for the type rounds to the infinity
//! of its sign (even if a sequential sum would have overflowed earlier, or not at all, the
//! result is the correctly rounded exact sum); an exact sum of zero is −0.0 only when every
//! input was −0.0, else +0.0, as round-to-nearest addition gives.
//!
//! Cost: a `f64` accumulator is 544 bytes (67 limbs), an `f32` one 96 bytes.

mod binned;
mod round;
#[cfg(all(test, not(loom)))]
mod tests;
mod whole;

use crate::op::{Op, ReproducibleSum};

/// A float type an [`Accumulator`] sums: `f64` or `f32`. Sealed: its items describe the type's
/// bit layout to the accumulator and are not meant for other use.
pub trait Float: sealed::Sealed + Copy + Send + Sync + std::fmt::Debug + 'static {
    /// The accumulator's limbs for this type.
    #[doc(hidden)]
    type Limbs: Copy + Send + Sync + 'static + AsRef<[i64]> + AsMut<[i64]>;
    /// All limbs zero.
    #[doc(hidden)]
    const ZERO: Self::Limbs;
    /// Bits of the stored significand (52, 23).
    #[doc(hidden)]
    const MANTISSA: u32;
    /// The all-ones biased exponent (infinities and NaNs).
    #[doc(hidden)]
    const EXP_MAX: u64;
    /// The sign bit's position (63, 31).
    #[doc(hidden)]
    const SIGN: u32;
    /// The float's bits, widened.
    #[doc(hidden)]
    fn bits(self) -> u64;
    /// The float of these bits (the low ones).
    #[doc(hidden)]
    fn of_bits(bits: u64) -> Self;
    /// `xs` as `f64`s, if they are (`add_slice`'s binned path).
    #[doc(hidden)]
    fn as_f64s(xs: &[Self]) -> Option<&[f64]>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for f32 {}
}

/// Limbs of an `f64` accumulator: the largest finite `f64` is below 2²⁰⁹⁸ units, a number added
/// spans three 32-bit digits from digit ⌊(e − 1)/32⌋ ≤ 63 on, and the top limb keeps what
/// carries beyond.
const LIMBS_F64: usize = 67;
/// Limbs of an `f32` accumulator: 2²⁷⁷ units, digits from ⌊(e − 1)/32⌋ ≤ 7 on.
const LIMBS_F32: usize = 11;

impl Float for f64 {
    type Limbs = [i64; LIMBS_F64];
    const ZERO: Self::Limbs = [0; LIMBS_F64];
    const MANTISSA: u32 = 52;
    const EXP_MAX: u64 = 0x7ff;
    const SIGN: u32 = 63;
    #[inline(always)]
    fn bits(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    fn of_bits(bits: u64) -> f64 {
        f64::from_bits(bits)
    }
    #[inline(always)]
    fn as_f64s(xs: &[f64]) -> Option<&[f64]> {
        Some(xs)
    }
}

impl Float for f32 {
    type Limbs = [i64; LIMBS_F32];
    const ZERO: Self::Limbs = [0; LIMBS_F32];
    const MANTISSA: u32 = 23;
    const EXP_MAX: u64 = 0xff;
    const SIGN: u32 = 31;
    #[inline(always)]
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    #[inline(always)]
    fn of_bits(bits: u64) -> f32 {
        f32::from_bits(bits as u32)
    }
    #[inline(always)]
    fn as_f64s(_: &[f32]) -> Option<&[f64]> {
        None
    }
}

/// Additions (or merged additions) a limb takes between two carry propagations: each changes a
/// limb by less than 2³², so a limb stays below 2⁶² in magnitude.
const PENDING_MAX: u32 = 1 << 30;

/// What an accumulator has seen besides its finite sum (bits of [`Accumulator::seen`]).
const NAN: u32 = 1;
const POS_INF: u32 = 2;
const NEG_INF: u32 = 4;
/// Some input was added.
const ANY: u32 = 8;
/// Some input other than −0.0 was added.
const NOT_NEG_ZERO: u32 = 16;

/// The exact sum of the `f64`s or `f32`s added to it (module docs): [`add`](Accumulator::add)
/// and [`add_slice`](Accumulator::add_slice) numbers, [`merge`](Accumulator::merge) another
/// accumulator, and read the correctly rounded sum with [`value`](Accumulator::value). The
/// value is the same whatever the order of additions and merges. Between ranks, allreduce a
/// slice of accumulators with [`op::ReproducibleSum`](crate::op::ReproducibleSum).
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Accumulator<F: Float> {
    /// The sum in units of the type's smallest subnormal: limb i holds digit i (bits
    /// 32i .. 32i + 32) plus carries not yet propagated; the top limb is signed and unbounded.
    limbs: F::Limbs,
    /// Additions since the carries were last propagated ([`PENDING_MAX`]).
    pending: u32,
    /// [`NAN`], [`POS_INF`], [`NEG_INF`], [`ANY`], [`NOT_NEG_ZERO`]. A `u32`, so that the
    /// struct has no padding: its bytes travel between processes as they are.
    seen: u32,
}

impl<F: Float> Default for Accumulator<F> {
    fn default() -> Self {
        Accumulator {
            limbs: F::ZERO,
            pending: 0,
            seen: 0,
        }
    }
}

impl<F: Float> std::fmt::Debug for Accumulator<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accumulator")
            .field("value", &self.value())
            .finish_non_exhaustive()
    }
}

impl<F: Float> Accumulator<F> {
    /// An empty accumulator (its value is +0.0).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `x`, exactly.
    #[inline]
    pub fn add(&mut self, x: F) {
        if self.pending >= PENDING_MAX {
            self.carry();
        }
        self.pending += 1;
        self.seen |= deposit::<F>(self.limbs.as_mut(), x.bits());
    }

    /// Adds every number of `xs`, exactly (as [`add`](Accumulator::add) of each).
    pub fn add_slice(&mut self, xs: &[F]) {
        // How many float bins the last block took: a good guess for the next.
        let mut bins = 2;
        for block in xs.chunks(binned::BLOCK) {
            if self.pending > PENDING_MAX - binned::BLOCK as u32 {
                self.carry();
            }
            // `f64`s go through float bins where the block allows (`binned`): a few deposits
            // for the whole block.
            if let Some(binned) = F::as_f64s(block).and_then(|xs| binned::bin(xs, bins)) {
                bins = (binned.used / binned::LANES).max(1);
                for &b in &binned.bins[..binned.used] {
                    deposit::<f64>(self.limbs.as_mut(), b.to_bits());
                }
                self.pending += binned.used as u32;
                self.seen |= ANY | (NOT_NEG_ZERO * u32::from(binned.not_neg_zero));
                continue;
            }
            self.seen |= self.deposit_block(block);
            self.pending += block.len() as u32;
        }
    }

    /// Deposits every number of `block` (at most `binned::BLOCK`, with room for as many
    /// additions) and returns what `seen` must note; does not count the additions.
    fn deposit_block(&mut self, block: &[F]) -> u32 {
        // Long blocks go to four accumulators of their own, element j to lane j mod 4, so that
        // consecutive numbers of similar magnitude (the same limbs) do not wait for each
        // other's additions; the lanes are added in at the end. Short ones go straight in.
        const LANES: usize = 4;
        const SHORT: usize = 64;
        let mut seen = 0;
        if block.len() < SHORT {
            for &x in block {
                seen |= deposit::<F>(self.limbs.as_mut(), x.bits());
            }
            return seen;
        }
        let mut lanes = [F::ZERO; LANES];
        let quads = block.chunks_exact(LANES);
        for &x in quads.remainder() {
            seen |= deposit::<F>(self.limbs.as_mut(), x.bits());
        }
        for quad in quads {
            for (lane, &x) in lanes.iter_mut().zip(quad) {
                seen |= deposit::<F>(lane.as_mut(), x.bits());
            }
        }
        // Each limb took less than 2³² per number of the block, in whichever lane.
        for lane in &lanes {
            for (a, b) in self.limbs.as_mut().iter_mut().zip(lane.as_ref()) {
                *a += b;
            }
        }
        seen
    }

    /// Adds what `other` has summed: afterwards this accumulator's value is that of one that
    /// had every number of both added.
    pub fn merge(&mut self, other: &Accumulator<F>) {
        let mut other = *other;
        if self.pending.saturating_add(other.pending) >= PENDING_MAX {
            self.carry();
            other.carry();
        }
        for (a, b) in self.limbs.as_mut().iter_mut().zip(other.limbs.as_ref()) {
            *a += b;
        }
        // Two limbs that were each below n·2³² and m·2³² sum below (n + m)·2³²; a limb just
        // carried is below 2³², so counts as one addition.
        self.pending += other.pending.max(1);
        self.seen |= other.seen;
    }

    /// The sum of everything added, correctly rounded (to nearest, ties to even); special
    /// values as the module docs say.
    pub fn value(&self) -> F {
        F::of_bits(round::value::<F>(self))
    }

    /// Propagates the pending carries: every limb but the top one into 0 .. 2³².
    fn carry(&mut self) {
        round::carry(self.limbs.as_mut());
        self.pending = 0;
    }
}

/// Adds the finite number of bits `bits` (a float of type `F`) to `limbs` (an accumulator's),
/// or notes the special value it is; returns what `Accumulator::seen` must note. Does not count
/// the addition.
#[inline(always)]
fn deposit<F: Float>(limbs: &mut [i64], bits: u64) -> u32 {
    let m = F::MANTISSA;
    let e = (bits >> m) & F::EXP_MAX;
    let negative = (bits >> F::SIGN) & 1 == 1;
    let fraction = bits & ((1 << m) - 1);
    if e == F::EXP_MAX {
        return ANY
            | NOT_NEG_ZERO
            | match (fraction != 0, negative) {
                (true, _) => NAN,
                (false, false) => POS_INF,
                (false, true) => NEG_INF,
            };
    }
    // x = significand · 2^(max(e, 1) − 1) units: the hidden bit only for normal numbers.
    let significand = fraction | (u64::from(e != 0) << m);
    let at = e.max(1) - 1;
    let shift = (at & 31) as u32;
    // significand · 2^shift, up to 84 bits: its low 64 bits and the rest (a shift by 64 − 0
    // would overflow, so by 63 − shift after one).
    let low = significand << shift;
    let high = (significand >> 1) >> (63 - shift);
    // Two's complement negation by mask: (v ^ −1) − (−1) = −v.
    let mask = -i64::from(negative);
    let signed = |v: u64| (v as i64 ^ mask) - mask;
    let i = (at >> 5) as usize;
    assert!(i + 2 < limbs.len());
    limbs[i] += signed(low & 0xffff_ffff);
    limbs[i + 1] += signed(low >> 32);
    limbs[i + 2] += signed(high);
    ANY | (NOT_NEG_ZERO * u32::from(!negative || significand != 0))
}

impl<F: Float> Op<Accumulator<F>> for ReproducibleSum {
    fn fold_right(&self, acc: &mut [Accumulator<F>], rhs: &[Accumulator<F>]) {
        for (a, b) in acc.iter_mut().zip(rhs) {
            a.merge(b);
        }
    }

    fn fold_left(&self, lhs: &[Accumulator<F>], acc: &mut [Accumulator<F>]) {
        self.fold_right(acc, lhs);
    }

    fn is_commutative(&self) -> bool {
        true
    }
}
