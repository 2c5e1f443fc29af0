//! [`ReproducibleSum`] on `f64` and `f32` buffers: the correctly rounded sum of an element's
//! operands.
//!
//! Two operands need nothing but the hardware's addition, which rounds the exact sum once. More
//! are summed at once ([`Op::fold_all`]) by error-free transformations: Knuth's two-sum splits
//! `a + b` into the rounded sum and its exact error, so a running sum `s` with a running sum `t`
//! of its errors, and `t`'s own errors `f`, leave the exact sum as `s + t + Σf`. Rounding
//! `s + t` once (to `r`, with error `d`) gives the correctly rounded sum whenever the `f`s are all
//! zero (then `s + t` is the exact sum, and the addition rounds it, ties included), and whenever
//! `|d| + Σ|f|` is below half the gap from `r` to its nearer neighbour (then the exact sum rounds
//! to `r` whatever the `f`s are). The test costs fourteen float operations per operand, runs on
//! 64 elements at a time with no branch (with AVX2 where the processor has it), and fails only
//! near a tie that `t` did not hold exactly, after heavy cancellation or on special values, where
//! the element goes to an [`Accumulator`] instead. A fast sum with an error bound that decides
//! whether the cheap answer is already the correctly rounded one is the scheme of Rump, Ogita and
//! Oishi ("Accurate floating-point summation", SIAM J. Sci. Comput. 2008); the error-free
//! addition is Knuth's (TAOCP vol. 2, 4.2.2). A cheaper bound on `t` alone (nine operations, no
//! `f`s) was tried and dropped: on numbers of 53 significant bits whose sums tie, about one element
//! in fifty then went to an accumulator, which cost more than it saved.

use super::Accumulator;
use crate::op::{Op, ReproducibleSum};

/// Elements summed together: the state of the sum for each lives in three arrays of this
/// length on the stack, and the loop over one operand's elements has no branch.
const LANES: usize = 64;
/// Operands read together while a quad's state stays in registers.
const BATCH: usize = 16;
/// Elements whose state is held in registers together: two AVX2 registers of `f64`s, so that
/// the additions of one wait less for those before.
const QUAD: usize = 8;

macro_rules! whole {
    ($t:ty, $avx2:ident) => {
        // In a block of its own, so that each type has its own helpers.
        const _: () = {
            /// NaN made the one quiet NaN the accumulator gives, so every rank's bits agree.
            #[inline(always)]
            fn canonical(x: $t) -> $t {
                if x.is_nan() {
                    <$t>::NAN
                } else {
                    x
                }
            }

            /// Knuth's error-free addition: `(s, e)` with `a + b = s + e` exactly (barring
            /// overflow), `s` the rounded sum.
            #[inline(always)]
            fn two_sum(a: $t, b: $t) -> ($t, $t) {
                let s = a + b;
                let bb = s - a;
                (s, (a - (s - bb)) + (b - bb))
            }

            /// Whether `r`, the rounding of `s + t` with error `d`, is the correctly rounded
            /// exact sum `r + d + Σf`, given `b`, the computed `Σ|f|`.
            #[inline(always)]
            fn settled(r: $t, d: $t, b: $t) -> bool {
                // Half the gap below |r| (the smaller one at a power of two; exact, and zero
                // among the smallest subnormals, where nothing passes). For r = 0 the bits
                // wrap to a NaN, and for r infinite or NaN the comparison fails too.
                let m = r.abs();
                let half = (m - <$t>::from_bits(m.to_bits().wrapping_sub(1))) * 0.5;
                // With b = 0, r + d is the exact sum and r its rounding (a tie rounded to even by
                // the addition itself). Else |Σf| ≤ Σ|f| < 2b (b is Σ|f| with a relative error
                // far below 1), and rounding is monotonic: a computed left side below `half`
                // means the true one is too, so the exact sum lies strictly inside the interval
                // that rounds to r.
                (r.is_finite() & (r != 0.0)) & ((b == 0.0) | (d.abs() + 2.0 * b < half))
            }

            /// [`Op::fold_all`] for three operands or more, 64 elements at a time.
            #[inline(always)]
            fn sum_all<'a>(n: usize, operand: &dyn Fn(usize) -> &'a [$t], out: &mut [$t]) {
                let mut at = 0;
                for out in out.chunks_mut(LANES) {
                    let m = out.len();
                    let x = |k: usize| &operand(k)[at..at + m];
                    let mut s: [$t; LANES] = [0.0; LANES];
                    let mut t: [$t; LANES] = [0.0; LANES];
                    let mut b: [$t; LANES] = [0.0; LANES];
                    s[..m].copy_from_slice(x(0));
                    // Operands in batches, elements in quads whose state stays in registers
                    // while a batch's operands go by.
                    let mut k = 1;
                    while k < n {
                        let batch = (n - k).min(BATCH);
                        let xs: [&[$t]; BATCH] =
                            std::array::from_fn(|j| if j < batch { x(k + j) } else { &[] });
                        let xs = &xs[..batch];
                        let mut g = 0;
                        while g + QUAD <= m {
                            let quad = |a: &[$t]| -> [$t; QUAD] {
                                a[g..g + QUAD].try_into().expect("a quad")
                            };
                            let (mut sq, mut tq, mut bq) = (quad(&s), quad(&t), quad(&b));
                            for xk in xs {
                                let xq = quad(xk);
                                for l in 0..QUAD {
                                    let (s1, e) = two_sum(sq[l], xq[l]);
                                    let (t1, f) = two_sum(tq[l], e);
                                    sq[l] = s1;
                                    tq[l] = t1;
                                    bq[l] += f.abs();
                                }
                            }
                            s[g..g + QUAD].copy_from_slice(&sq);
                            t[g..g + QUAD].copy_from_slice(&tq);
                            b[g..g + QUAD].copy_from_slice(&bq);
                            g += QUAD;
                        }
                        for i in g..m {
                            for xk in xs {
                                let (s1, e) = two_sum(s[i], xk[i]);
                                let (t1, f) = two_sum(t[i], e);
                                s[i] = s1;
                                t[i] = t1;
                                b[i] += f.abs();
                            }
                        }
                        k += batch;
                    }
                    // The test of every element, branch-free; the rare ones that fail go on.
                    let mut ok = [false; LANES];
                    let mut rs: [$t; LANES] = [0.0; LANES];
                    for i in 0..m {
                        let (r, d) = two_sum(s[i], t[i]);
                        rs[i] = r;
                        ok[i] = settled(r, d, b[i]);
                    }
                    for (i, o) in out.iter_mut().enumerate() {
                        let r = rs[i];
                        *o = if ok[i] {
                            r
                        } else if r == 0.0 && b[i] == 0.0 {
                            // The exact sum is zero: −0.0 only if every operand is, which is when
                            // s is (a rounded sum is −0.0 only when both operands are).
                            if s[i].to_bits() == (-0.0 as $t).to_bits() {
                                -0.0
                            } else {
                                0.0
                            }
                        } else {
                            let mut acc = Accumulator::<$t>::new();
                            (0..n).for_each(|k| acc.add(operand(k)[at + i]));
                            acc.value()
                        };
                    }
                    at += m;
                }
            }

            /// [`sum_all`] compiled for AVX2.
            ///
            /// # Safety
            /// The processor must have AVX2.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            unsafe fn $avx2<'a>(n: usize, operand: &dyn Fn(usize) -> &'a [$t], out: &mut [$t]) {
                sum_all(n, operand, out)
            }

            impl Op<$t> for ReproducibleSum {
                /// `a + b`, the correctly rounded sum of the two.
                #[inline]
                fn fold_right(&self, acc: &mut [$t], rhs: &[$t]) {
                    for (a, &b) in acc.iter_mut().zip(rhs) {
                        *a = canonical(*a + b);
                    }
                }

                #[inline]
                fn fold_left(&self, lhs: &[$t], acc: &mut [$t]) {
                    self.fold_right(acc, lhs);
                }

                fn is_commutative(&self) -> bool {
                    true
                }

                fn pairwise(&self) -> bool {
                    false
                }

                fn fold_all<'a>(
                    &self,
                    n: usize,
                    operand: &dyn Fn(usize) -> &'a [$t],
                    out: &mut [$t],
                ) where
                    $t: Copy + 'a,
                {
                    if n <= 2 {
                        // One addition is the correctly rounded sum (and one operand its own).
                        out.copy_from_slice(operand(0));
                        if n == 2 {
                            self.fold_right(out, operand(1));
                        } else {
                            out.iter_mut().for_each(|x| *x = canonical(*x));
                        }
                        return;
                    }
                    #[cfg(target_arch = "x86_64")]
                    if std::is_x86_feature_detected!("avx2") {
                        // SAFETY: the processor has AVX2, as just detected.
                        return unsafe { $avx2(n, operand, out) };
                    }
                    sum_all(n, operand, out)
                }
            }
        };
    };
}

whole!(f64, sum_all_f64_avx2);
whole!(f32, sum_all_f32_avx2);
