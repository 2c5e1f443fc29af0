//! The element types the checks run on, their inputs and their sequential references.
//!
//! Every rank's input is a pure function of (rank, index), so every rank can compute every
//! other rank's input and with it the exact result of any collective, in rank order:
//! `u64` sums (exact, wrapping), `f64` sums (rounded: close to the sequential sum, and the same
//! bits on every rank where every rank holds the result) and a non-commutative op, the
//! composition of affine maps x ↦ a·x + b modulo the Mersenne prime 2⁶¹ − 1, which any
//! reordering of the operands changes.

use corecoll::op::{self, FnOp, Op};
use std::fmt::Debug;
use std::ops::Range;

/// 2⁶¹ − 1, the affine maps' modulus.
const M61: u64 = (1 << 61) - 1;

/// A well-mixed word from (rank, index, salt) (the SplitMix64 output function).
pub fn mix(r: usize, i: usize, salt: u64) -> u64 {
    let mut z = (r as u64)
        .wrapping_mul(0x2545_f491_4f6c_dd1d)
        .wrapping_add((i as u64) << 1)
        .wrapping_add(salt << 58)
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The affine map x ↦ a·x + b mod 2⁶¹ − 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Affine {
    /// The factor.
    a: u64,
    /// The offset.
    b: u64,
}

/// (x·y) mod 2⁶¹ − 1.
fn mul_mod(x: u64, y: u64) -> u64 {
    (u128::from(x) * u128::from(y) % u128::from(M61)) as u64
}

/// `f` first, then `g`: x ↦ g(f(x)). Associative, not commutative.
fn compose(f: &Affine, g: &Affine) -> Affine {
    Affine {
        a: mul_mod(g.a, f.a),
        b: (mul_mod(g.a, f.b) + g.b) % M61,
    }
}

/// An element type with its op: inputs, the reference combination and how results compare.
pub trait Case: Copy + PartialEq + Debug + Send + Sync + 'static {
    /// The op the collectives get.
    type O: Op<Self> + Copy;
    /// What the check names say of the op.
    const NAME: &'static str;
    /// What the check names say of the type alone.
    const TYPE: &'static str;
    /// The op.
    fn op() -> Self::O;
    /// `a ⊙ b`, `a` from the lower ranks (the sequential reference).
    fn combine(a: &Self, b: &Self) -> Self;
    /// Rank `r`'s element `i`.
    fn input(r: usize, i: usize) -> Self;
    /// Whether `got` is an acceptable result where the sequential reference is `want`.
    fn close(got: &Self, want: &Self) -> bool {
        got == want
    }
    /// The value's bits, for the check that every rank holds the same result.
    fn bits(&self) -> u64;
}

impl Case for u64 {
    type O = op::Sum;
    const NAME: &'static str = "u64 sum";
    const TYPE: &'static str = "u64";
    fn op() -> op::Sum {
        op::Sum
    }
    fn combine(a: &u64, b: &u64) -> u64 {
        a.wrapping_add(*b)
    }
    fn input(r: usize, i: usize) -> u64 {
        mix(r, i, 1)
    }
    fn bits(&self) -> u64 {
        *self
    }
}

impl Case for f64 {
    type O = op::Sum;
    const NAME: &'static str = "f64 sum";
    const TYPE: &'static str = "f64";
    fn op() -> op::Sum {
        op::Sum
    }
    fn combine(a: &f64, b: &f64) -> f64 {
        a + b
    }
    fn input(r: usize, i: usize) -> f64 {
        // Magnitudes up to 1000 with low bits set, both signs: sums round, and the order of
        // the additions shows in the last bits.
        let m = mix(r, i, 2);
        (m >> 11) as f64 / (1u64 << 53) as f64 * 2000.0 - 1000.0 + (m & 15) as f64 * 1e-7
    }
    fn close(got: &f64, want: &f64) -> bool {
        // p ≤ a few dozen terms of at most 1000 each: any order of addition is within this.
        (got - want).abs() <= 1e-9 * want.abs().max(1.0)
    }
    fn bits(&self) -> u64 {
        self.to_bits()
    }
}

/// The affine maps' op: a plain function, so that its type can be named.
type ComposeOp = FnOp<fn(&Affine, &Affine) -> Affine>;

impl Case for Affine {
    type O = ComposeOp;
    const NAME: &'static str = "affine maps (non-commutative)";
    const TYPE: &'static str = "16-byte struct";
    fn op() -> ComposeOp {
        op::non_commutative(compose as fn(&Affine, &Affine) -> Affine)
    }
    fn combine(a: &Affine, b: &Affine) -> Affine {
        compose(a, b)
    }
    fn input(r: usize, i: usize) -> Affine {
        Affine {
            a: mix(r, i, 3) % M61,
            b: mix(r, i, 4) % M61,
        }
    }
    fn bits(&self) -> u64 {
        self.a.rotate_left(23) ^ self.b
    }
}

/// Rank `r`'s first `n` elements.
pub fn inputs<T: Case>(r: usize, n: usize) -> Vec<T> {
    (0..n).map(|i| T::input(r, i)).collect()
}

/// x_lo ⊙ … ⊙ x_{hi−1} of element `i`, in rank order (`ranks` must not be empty).
pub fn fold<T: Case>(ranks: Range<usize>, i: usize) -> T {
    let mut ranks = ranks;
    let first = ranks.next().expect("at least one rank");
    ranks.fold(T::input(first, i), |acc, r| {
        T::combine(&acc, &T::input(r, i))
    })
}

/// The reduction over ranks `0..p` of the first `n` elements.
pub fn reduction<T: Case>(p: usize, n: usize) -> Vec<T> {
    (0..n).map(|i| fold(0..p, i)).collect()
}

/// A hash of a result's bits (and its length), for comparing results between ranks.
pub fn hash<T: Case>(v: &[T]) -> u64 {
    v.iter().fold(v.len() as u64, |h, x| {
        (h.rotate_left(7) ^ x.bits()).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The first element where `got` is not acceptable for `want`, described.
pub fn first_wrong<T: Case>(got: &[T], want: &[T]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} elements, want {}", got.len(), want.len()));
    }
    (0..got.len())
        .find(|&i| !T::close(&got[i], &want[i]))
        .map(|i| format!("element {i}: got {:?}, want {:?}", got[i], want[i]))
}
