//! The accumulator's special values, signed zeros, overflow, subnormals and carries; the
//! property tests against an exact reference are in tests/repro.rs.

use super::{Accumulator, PENDING_MAX};

fn sum64(xs: &[f64]) -> f64 {
    let mut a = Accumulator::<f64>::new();
    a.add_slice(xs);
    a.value()
}

fn sum32(xs: &[f32]) -> f32 {
    let mut a = Accumulator::<f32>::new();
    a.add_slice(xs);
    a.value()
}

#[test]
fn special_values() {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    assert!(sum64(&[1.0, nan, 2.0]).is_nan());
    assert!(sum64(&[inf, -inf]).is_nan());
    assert!(sum64(&[inf, 1.0, nan]).is_nan());
    assert_eq!(sum64(&[1.0, inf, 1e308]), inf);
    assert_eq!(sum64(&[-inf, -1e308, 5.0]), -inf);
    assert!(sum32(&[f32::INFINITY, f32::NEG_INFINITY]).is_nan());
    assert_eq!(sum32(&[f32::NEG_INFINITY, 1.0]), f32::NEG_INFINITY);
}

#[test]
fn signed_zeros() {
    let bits = |x: f64| x.to_bits();
    assert_eq!(bits(sum64(&[])), bits(0.0));
    assert_eq!(bits(sum64(&[-0.0])), bits(-0.0));
    assert_eq!(bits(sum64(&[-0.0, -0.0])), bits(-0.0));
    assert_eq!(bits(sum64(&[-0.0, 0.0])), bits(0.0));
    assert_eq!(bits(sum64(&[1.5, -1.5])), bits(0.0));
    assert_eq!(bits(sum64(&[-1.5, 1.5, -0.0])), bits(0.0));
    assert_eq!(sum32(&[-0.0]).to_bits(), (-0.0f32).to_bits());
    // Merging keeps what each side saw.
    let mut a = Accumulator::<f64>::new();
    a.add(-0.0);
    a.merge(&Accumulator::new());
    assert_eq!(bits(a.value()), bits(-0.0));
    a.merge(&{
        let mut b = Accumulator::new();
        b.add(0.0);
        b
    });
    assert_eq!(bits(a.value()), bits(0.0));
}

#[test]
fn overflow_rounds_to_the_infinity_of_the_sign_and_cancellation_stays_exact() {
    let max = f64::MAX;
    assert_eq!(sum64(&[max, max]), f64::INFINITY);
    assert_eq!(sum64(&[-max, -max]), f64::NEG_INFINITY);
    // A sequential sum overflows here; the exact one does not.
    assert_eq!(sum64(&[max, max, -max]), max);
    // Just below the rounding boundary to infinity: MAX + half an ulp of MAX rounds to even
    // (the infinity), less than that stays MAX.
    let half_ulp = 2f64.powi(970);
    assert_eq!(sum64(&[max, half_ulp]), f64::INFINITY);
    assert_eq!(sum64(&[max, half_ulp / 2.0]), max);
    assert_eq!(sum32(&[f32::MAX, f32::MAX]), f32::INFINITY);
    assert_eq!(sum32(&[f32::MAX, f32::MAX, -f32::MAX]), f32::MAX);
    // 600 binary orders of magnitude apart.
    assert_eq!(sum64(&[2f64.powi(300), 1.0, -2f64.powi(300)]), 1.0);
    assert_eq!(
        sum64(&[2f64.powi(300), 2f64.powi(-300), -2f64.powi(300)]),
        2f64.powi(-300)
    );
}

#[test]
fn subnormals_and_the_smallest_normal() {
    let tiny = f64::from_bits(1);
    assert_eq!(sum64(&[tiny, tiny]).to_bits(), 2);
    assert_eq!(sum64(&[tiny, -tiny, tiny]).to_bits(), 1);
    let below = f64::from_bits((1 << 52) - 1);
    assert_eq!(sum64(&[below, tiny]), f64::MIN_POSITIVE);
    assert_eq!(sum64(&[f64::MIN_POSITIVE, -tiny]), below);
    assert_eq!(sum64(&[-below, -tiny]), -f64::MIN_POSITIVE);
    assert_eq!(sum32(&[f32::from_bits(1), f32::from_bits(1)]).to_bits(), 2);
}

#[test]
fn ties_round_to_even() {
    // 1 + 2⁻⁵³ is halfway between 1 and its successor: to 1 (even); 1 + 3·2⁻⁵³ is halfway
    // between 1 + 2⁻⁵² and 1 + 2·2⁻⁵²: to the latter (even).
    let e = 2f64.powi(-53);
    assert_eq!(sum64(&[1.0, e]), 1.0);
    assert_eq!(sum64(&[1.0, 3.0 * e]), 1.0 + 4.0 * e);
    // A bit far below the tie breaks it.
    assert_eq!(sum64(&[1.0, e, 2f64.powi(-1000)]), 1.0 + 2.0 * e);
    assert_eq!(sum64(&[-1.0, -e, -(2f64.powi(-1000))]), -1.0 - 2.0 * e);
}

#[test]
fn carries_after_many_pending_additions() {
    // Pretend most of the pending budget is used, so that the next additions and merges
    // propagate the carries in the middle of the work.
    let xs: Vec<f64> = (0..1000).map(|i| (i as f64 - 500.5) * 1.25e-3).collect();
    let mut a = Accumulator::<f64>::new();
    a.pending = PENDING_MAX - 10;
    a.add_slice(&xs);
    let mut b = Accumulator::<f64>::new();
    b.pending = PENDING_MAX - 1;
    b.add(0.5);
    a.merge(&b);
    let mut c = Accumulator::<f64>::new();
    c.add_slice(&xs);
    c.add(0.5);
    assert_eq!(a.value().to_bits(), c.value().to_bits());
    // Negative sums borrow through every limb.
    let mut d = Accumulator::<f64>::new();
    d.add(-f64::from_bits(1));
    d.add(2f64.powi(1000));
    d.add(-(2f64.powi(1000)));
    assert_eq!(d.value().to_bits(), (-f64::from_bits(1)).to_bits());
}

#[test]
fn sizes_have_no_padding() {
    use std::mem::size_of;
    assert_eq!(size_of::<Accumulator<f64>>(), 67 * 8 + 8);
    assert_eq!(size_of::<Accumulator<f32>>(), 11 * 8 + 8);
}

/// Slices long enough for `add_slice`'s lanes (with a remainder that goes straight in): the
/// same bits as number by number, special values and signed zeros too.
#[test]
fn long_slices_sum_as_number_by_number() {
    let n = 6147;
    let xs: Vec<f64> = (0..n)
        .map(|i| {
            let z = (i as u64 + 7).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            // Any finite bits: subnormals, the largest exponents, both signs.
            let x = f64::from_bits(z);
            if x.is_finite() {
                x
            } else {
                f64::from_bits(z & !(1 << 62))
            }
        })
        .collect();
    let one_by_one = |xs: &[f64]| {
        let mut a = Accumulator::<f64>::new();
        for &x in xs {
            a.add(x);
        }
        a.value().to_bits()
    };
    assert_eq!(sum64(&xs).to_bits(), one_by_one(&xs));
    let mut with_specials = xs.clone();
    with_specials[n / 2] = f64::INFINITY;
    assert_eq!(sum64(&with_specials), f64::INFINITY);
    with_specials[n - 1] = f64::NEG_INFINITY;
    assert!(sum64(&with_specials).is_nan());
    let zeros = vec![-0.0f64; n];
    assert_eq!(sum64(&zeros).to_bits(), (-0.0f64).to_bits());
    let mut mixed = zeros.clone();
    mixed[5] = 0.0;
    assert_eq!(sum64(&mixed).to_bits(), 0);
    let small: Vec<f32> = (0..n).map(|i| (i as f32 - 3000.5) * 0.37).collect();
    let mut a = Accumulator::<f32>::new();
    small.iter().for_each(|&x| a.add(x));
    assert_eq!(sum32(&small).to_bits(), a.value().to_bits());
}

#[test]
fn binned_blocks_take_the_fast_path_only_where_they_may() {
    use super::binned::{bin, BLOCK};
    let uniform: Vec<f64> = (0..BLOCK)
        .map(|i| {
            ((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect();
    let b = bin(&uniform, 2).expect("numbers in [0, 1) take the bins");
    assert!(b.used > 0 && b.not_neg_zero);
    // The bins hold the exact sum.
    let mut binned = Accumulator::<f64>::new();
    b.bins[..b.used].iter().for_each(|&x| binned.add(x));
    let mut one = Accumulator::<f64>::new();
    uniform.iter().for_each(|&x| one.add(x));
    assert_eq!(binned.value().to_bits(), one.value().to_bits());
    // Zeros only: nothing to deposit, and −0.0 noted as such.
    let z = bin(&[-0.0; 9], 2).unwrap();
    assert_eq!((z.used, z.not_neg_zero), (0, false));
    // A subnormal, a special value, too wide a span, or magnitudes at the top: number by number.
    for odd in [f64::from_bits(1), f64::NAN, f64::INFINITY, 1e-200, 1e300] {
        let mut xs = uniform.clone();
        xs[7] = odd;
        assert!(bin(&xs, 2).is_none(), "{odd:e}");
    }
}
