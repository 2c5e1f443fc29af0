//! An accumulator's carries and the one rounding of its exact sum.

use super::{Accumulator, Float, ANY, NAN, NEG_INF, NOT_NEG_ZERO, POS_INF};

/// Propagates carries from the lowest limb up, leaving the number unchanged: every limb but the
/// top one ends in 0 .. 2³² (a negative limb borrows from the next), the top one takes the rest.
pub(super) fn carry(limbs: &mut [i64]) {
    let top = limbs.len() - 1;
    let mut c = 0i64;
    for l in &mut limbs[..top] {
        let v = *l + c;
        // An arithmetic shift: the floor of v / 2³², so that the digit left is not negative.
        c = v >> 32;
        *l = v & 0xffff_ffff;
    }
    limbs[top] += c;
}

/// The bits of `acc`'s value: the special value its inputs make, else its exact sum rounded to
/// nearest, ties to even (module docs of `repro`).
pub(super) fn value<F: Float>(acc: &Accumulator<F>) -> u64 {
    let m = F::MANTISSA;
    let sign_bit = 1u64 << F::SIGN;
    let infinity = F::EXP_MAX << m;
    let seen = acc.seen;
    if seen & NAN != 0 || seen & (POS_INF | NEG_INF) == POS_INF | NEG_INF {
        return infinity | 1 << (m - 1);
    }
    if seen & POS_INF != 0 {
        return infinity;
    }
    if seen & NEG_INF != 0 {
        return sign_bit | infinity;
    }
    let mut limbs = acc.limbs;
    let limbs = limbs.as_mut();
    carry(limbs);
    let top = limbs.len() - 1;
    let negative = limbs[top] < 0;
    if negative {
        // The magnitude: every limb negated, then its borrows propagated.
        for l in limbs.iter_mut() {
            *l = -*l;
        }
        carry(limbs);
    }
    let sign = if negative { sign_bit } else { 0 };
    let Some(h) = limbs.iter().rposition(|&l| l != 0) else {
        let negative_zero = seen & ANY != 0 && seen & NOT_NEG_ZERO == 0;
        return if negative_zero { sign_bit } else { 0 };
    };
    // The top limb starts at 2^(32 · (LIMBS − 1)) units, beyond the largest finite value.
    if h == top {
        return sign | infinity;
    }
    // The three highest digits (those below digit 0 count as zeros), and whether any digit
    // below them is not zero.
    let digit = |i: usize| h.checked_sub(i).map_or(0, |j| limbs[j] as u128);
    let window = digit(0) << 64 | digit(1) << 32 | digit(2);
    let sticky = limbs[..h.saturating_sub(2)].iter().any(|&l| l != 0);
    // The leading one's bit in the window (64 .. 96, digit h is not zero) and in the sum.
    let lead = 127 - window.leading_zeros();
    let pos = 32 * h as i64 - 64 + i64::from(lead);
    if pos < i64::from(m) {
        // Below the smallest normal number (so in digits 0 and 1): the sum in units is the
        // subnormal's significand.
        return sign | limbs[0] as u64 | (limbs[1] as u64) << 32;
    }
    let shift = lead - m;
    let mut significand = (window >> shift) as u64;
    let rest = window & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    let up = rest > half || (rest == half && (sticky || significand & 1 == 1));
    let mut pos = pos;
    if up {
        significand += 1;
        if significand == 1 << (m + 1) {
            significand >>= 1;
            pos += 1;
        }
    }
    let exponent = (pos - i64::from(m) + 1) as u64;
    if exponent >= F::EXP_MAX {
        return sign | infinity;
    }
    sign | exponent << m | (significand & ((1 << m) - 1))
}
