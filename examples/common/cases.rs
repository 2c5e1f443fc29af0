//! The element types the checks of `examples/hybrid_check` and `examples/everywhere` run on,
//! their inputs and their sequential references (included by each with `#[path]`).
//!
//! Every rank's input is a pure function of (rank, index), so every rank can compute every
//! other rank's input and with it the exact result of any collective, in rank order:
//! `u64` sums (exact, wrapping), `f64` sums (rounded: close to the sequential sum, and the same
//! bits on every rank where every rank holds the result) and a non-commutative op, the
//! composition of affine maps x ↦ a·x + b modulo the Mersenne prime 2⁶¹ − 1, which any
//! reordering of the operands changes.

use corecoll::op::{self, FnOp, Op};
use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::Range;
use std::sync::{Arc, Mutex};

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

/// (x·y) mod 2⁶¹ − 1, for x, y < 2⁶¹ − 1: as 2⁶¹ ≡ 1, the product's bits above the 61st
/// add to those below (a 128-bit division costs more than the collectives in a debug build).
fn mul_mod(x: u64, y: u64) -> u64 {
    let xy = u128::from(x) * u128::from(y);
    let folded = (xy as u64 & M61) + (xy >> 61) as u64;
    let r = (folded & M61) + (folded >> 61);
    if r >= M61 {
        r - M61
    } else {
        r
    }
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

impl Case for i32 {
    type O = op::Max;
    const NAME: &'static str = "i32 max";
    const TYPE: &'static str = "i32";
    fn op() -> op::Max {
        op::Max
    }
    fn combine(a: &i32, b: &i32) -> i32 {
        *a.max(b)
    }
    fn input(r: usize, i: usize) -> i32 {
        mix(r, i, 8) as i32
    }
    fn bits(&self) -> u64 {
        u64::from(*self as u32)
    }
}

impl Case for u128 {
    type O = op::Sum;
    const NAME: &'static str = "u128 sum";
    const TYPE: &'static str = "u128";
    fn op() -> op::Sum {
        op::Sum
    }
    fn combine(a: &u128, b: &u128) -> u128 {
        a.wrapping_add(*b)
    }
    fn input(r: usize, i: usize) -> u128 {
        u128::from(mix(r, i, 6)) << 64 | u128::from(mix(r, i, 7))
    }
    fn bits(&self) -> u64 {
        (*self >> 64) as u64 ^ *self as u64
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
    cached::<T>(r, n)[..n].to_vec()
}

/// Every input vector computed so far in this process, by type and rank, each as long as the
/// longest asked for: the checks ask for prefixes of the same few vectors again and again
/// (every root, every count), which in a debug build costs more than the collectives.
type Cache = BTreeMap<(TypeId, usize), Arc<dyn Any + Send + Sync>>;

static CACHE: Mutex<Cache> = Mutex::new(BTreeMap::new());

/// Rank `r`'s inputs of type `T`, at least `n` of them.
fn cached<T: Case>(r: usize, n: usize) -> Arc<Vec<T>> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let key = (TypeId::of::<T>(), r);
    let known = cache
        .get(&key)
        .and_then(|v| v.clone().downcast::<Vec<T>>().ok());
    match known {
        Some(v) if v.len() >= n => v,
        _ => {
            let v = Arc::new((0..n).map(|i| T::input(r, i)).collect::<Vec<T>>());
            cache.insert(key, v.clone());
            v
        }
    }
}

/// x_lo ⊙ … ⊙ x_{hi−1} of the first `n` elements, in rank order (`ranks` must not be empty).
pub fn fold<T: Case>(ranks: Range<usize>, n: usize) -> Vec<T> {
    fold_with(ranks, n, T::combine)
}

/// [`fold`] with another op than the type's own, `f` its sequential form.
pub fn fold_with<T: Case>(ranks: Range<usize>, n: usize, f: impl Fn(&T, &T) -> T) -> Vec<T> {
    let mut ranks = ranks;
    let first = ranks.next().expect("at least one rank");
    let mut acc = inputs::<T>(first, n);
    for r in ranks {
        let x = cached::<T>(r, n);
        for (a, b) in acc.iter_mut().zip(x.iter()) {
            *a = f(a, b);
        }
    }
    acc
}

/// The reduction over ranks `0..p` of the first `n` elements.
pub fn reduction<T: Case>(p: usize, n: usize) -> Vec<T> {
    fold(0..p, n)
}

/// [`reduction`] with another op than the type's own, `f` its sequential form.
pub fn reduction_with<T: Case>(p: usize, n: usize, f: impl Fn(&T, &T) -> T) -> Vec<T> {
    fold_with(0..p, n, f)
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
    if got == want {
        return None;
    }
    (0..got.len())
        .find(|&i| !T::close(&got[i], &want[i]))
        .map(|i| format!("element {i}: got {:?}, want {:?}", got[i], want[i]))
}
