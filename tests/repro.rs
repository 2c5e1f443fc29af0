//! Reproducible sums: `repro::Accumulator` against an exact reference computed here, and the
//! accumulators reduced between ranks with `op::ReproducibleSum` by every algorithm.
//!
//! **The reference** is independent of the accumulator's code: the exact sum as a big integer
//! in units of the type's smallest subnormal, written out as an exact decimal (the integer
//! times 5^k over 10^k) and parsed by the standard library, whose parsing rounds correctly.
//!
//! **Property tests** draw numbers spanning the whole exponent range (subnormals and values
//! near the largest included, half of them negated copies of others so that sums cancel) and
//! check the accumulator's value bit for bit against the reference, and that any order and
//! any split into merged parts gives the same bits.
//!
//! **Between ranks**: a global vector's numbers dealt to p ∈ 1..=17 ranks in blocks, round
//! robin and in a shuffled order, each rank adding its share, then an allreduce of the
//! accumulators with every algorithm, and a reduce, scan and reduce-scatter with `Auto`: every
//! rank's value is the reference's bits.

mod common;

use common::{mix, team};
use corecoll::op::ReproducibleSum;
use corecoll::repro::Accumulator;
use corecoll::{Algorithm, Block};
use num_bigint::BigInt;
use proptest::prelude::*;

/// The exact sum of `xs` (finite `f64`s) in units of 2⁻¹⁰⁷⁴.
fn exact64(xs: &[f64]) -> BigInt {
    xs.iter().map(|&x| units(x.to_bits(), 52, 0x7ff, 63)).sum()
}

/// The exact sum of `xs` (finite `f32`s) in units of 2⁻¹⁴⁹.
fn exact32(xs: &[f32]) -> BigInt {
    xs.iter()
        .map(|&x| units(u64::from(x.to_bits()), 23, 0xff, 31))
        .sum()
}

/// A finite float's value in units of its type's smallest subnormal, from its bits.
fn units(bits: u64, mantissa: u32, exp_max: u64, sign: u32) -> BigInt {
    let e = (bits >> mantissa) & exp_max;
    assert_ne!(e, exp_max, "finite numbers only");
    let fraction = bits & ((1 << mantissa) - 1);
    let significand = if e == 0 {
        fraction
    } else {
        fraction | 1 << mantissa
    };
    let v = BigInt::from(significand) << (e.max(1) - 1);
    if bits >> sign & 1 == 1 {
        -v
    } else {
        v
    }
}

/// `n` · 2^−`k` as an exact decimal string: n · 5^k, with the point k digits from the right.
fn decimal(n: &BigInt, k: u32) -> String {
    let digits = (n * BigInt::from(5).pow(k)).to_string();
    let (sign, digits) = match digits.strip_prefix('-') {
        Some(d) => ("-", d.to_string()),
        None => ("", digits),
    };
    let k = k as usize;
    let padded = format!(
        "{}{digits}",
        "0".repeat((k + 1).saturating_sub(digits.len()))
    );
    let (int, frac) = padded.split_at(padded.len() - k);
    format!("{sign}{int}.{frac}")
}

/// The correctly rounded `f64` of an exact sum of finite `f64`s (+0.0 for zero).
fn rounded64(n: &BigInt) -> f64 {
    decimal(n, 1074).parse::<f64>().expect("a decimal") + 0.0
}

/// The correctly rounded `f32` of an exact sum of finite `f32`s (+0.0 for zero).
fn rounded32(n: &BigInt) -> f32 {
    decimal(n, 149).parse::<f32>().expect("a decimal") + 0.0
}

fn acc64(xs: &[f64]) -> Accumulator<f64> {
    let mut a = Accumulator::new();
    a.add_slice(xs);
    a
}

/// A finite `f64` of any exponent, subnormals included, from `bits` (an exponent of all ones
/// is replaced).
fn finite64(bits: u64) -> f64 {
    let x = f64::from_bits(bits);
    if x.is_finite() {
        x
    } else {
        f64::from_bits(bits & !(1 << 62))
    }
}

/// Half an ulp of `x` (normal, large enough), with `x`'s sign: added to `x`, a tie.
fn half_ulp(x: f64) -> f64 {
    let e = (x.to_bits() >> 52) & 0x7ff;
    if e <= 53 {
        return 0.0;
    }
    f64::from_bits((x.to_bits() & (1 << 63)) | (e - 53) << 52)
}

/// Numbers that span the exponent range, cancel and tie: half of them are derived from the
/// number before — its negation, its negated half, half its ulp (a tie to break by the rounding
/// rule), or the smallest subnormal of either sign (which breaks a tie) — and the rest are any
/// finite numbers.
fn numbers64() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec((any::<u64>(), 0u8..6), 0..200).prop_map(|v| {
        let mut xs: Vec<f64> = v.iter().map(|&(b, _)| finite64(b)).collect();
        for (i, &(b, how)) in v.iter().enumerate() {
            if i % 2 == 1 {
                let prev = xs[i - 1];
                xs[i] = match how {
                    0 => -prev,
                    1 => -prev * 0.5,
                    2 => half_ulp(prev),
                    3 => f64::from_bits(1 | (b & (1 << 63))),
                    _ => xs[i],
                };
            }
        }
        xs
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn f64_sum_is_the_correctly_rounded_exact_sum(xs in numbers64(), seed in any::<u64>()) {
        let want = rounded64(&exact64(&xs));
        let got = acc64(&xs).value();
        prop_assert_eq!(got.to_bits(), want.to_bits(), "{:?}", xs);
        // Any order, any split into parts merged in any order: the same bits.
        let mut order: Vec<usize> = (0..xs.len()).collect();
        order.sort_by_key(|&i| mix(i, 0, seed));
        let shuffled: Vec<f64> = order.iter().map(|&i| xs[i]).collect();
        let parts: Vec<Accumulator<f64>> = shuffled
            .chunks(1 + (seed % 7) as usize)
            .map(acc64)
            .collect();
        let mut merged = Accumulator::new();
        for part in parts.iter().rev() {
            merged.merge(part);
        }
        prop_assert_eq!(merged.value().to_bits(), want.to_bits());
    }

    #[test]
    fn f32_sum_is_the_correctly_rounded_exact_sum(bits in prop::collection::vec(any::<u32>(), 0..200)) {
        let xs: Vec<f32> = bits
            .iter()
            .map(|&b| f32::from_bits(b))
            .map(|x| if x.is_finite() { x } else { f32::from_bits(x.to_bits() & !(1 << 30)) })
            .collect();
        let mut a = Accumulator::<f32>::new();
        for &x in &xs {
            a.add(x);
        }
        prop_assert_eq!(a.value().to_bits(), rounded32(&exact32(&xs)).to_bits(), "{:?}", xs);
    }
}

proptest! {
    // Fewer cases: each sums thousands of numbers in the reference's big integers.
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Long slices (2048 numbers and more), which `add_slice` spreads over lanes.
    #[test]
    fn long_f64_slices_are_the_correctly_rounded_exact_sum(
        xs in prop::collection::vec(any::<u64>().prop_map(finite64), 2048..5000)
    ) {
        let want = rounded64(&exact64(&xs));
        prop_assert_eq!(acc64(&xs).value().to_bits(), want.to_bits());
    }
}

/// Numbers within `span` binary orders of magnitude above 2^`base` (where `add_slice` sums
/// blocks in float bins), with zeros of both signs, exact negations and ties among them.
fn narrow64() -> impl Strategy<Value = Vec<f64>> {
    (
        -1000i32..1000,
        0i32..200,
        prop::collection::vec((any::<u64>(), 0u8..8), 1..3000),
    )
        .prop_map(|(base, span, v)| {
            let mut xs: Vec<f64> = Vec::with_capacity(v.len());
            for (i, &(b, how)) in v.iter().enumerate() {
                let e = (base + (b % (span as u64 + 1)) as i32).clamp(-1074, 1020);
                let m = 1.0 + (b >> 12) as f64 / (1u64 << 52) as f64;
                let x = m * 2f64.powi(e.max(-1022)) * if b >> 63 == 1 { -1.0 } else { 1.0 };
                xs.push(match how {
                    0 => 0.0,
                    1 => -0.0,
                    2 if i > 0 => -xs[i - 1],
                    3 if i > 0 => half_ulp(xs[i - 1]),
                    _ => x,
                });
            }
            xs
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Blocks of numbers over a narrow range, summed in float bins: the exact reference, and
    /// the bits of adding them one by one.
    #[test]
    fn binned_blocks_are_the_correctly_rounded_exact_sum(xs in narrow64()) {
        let want = rounded64(&exact64(&xs));
        prop_assert_eq!(acc64(&xs).value().to_bits(), want.to_bits());
        let mut one = Accumulator::<f64>::new();
        xs.iter().for_each(|&x| one.add(x));
        prop_assert_eq!(one.value().to_bits(), want.to_bits());
    }
}

/// Ill-conditioned: values 600 binary orders of magnitude apart that cancel across ranks.
fn global(n: usize, salt: u64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let h = mix(i, 7, salt);
            let x = (h >> 11) as f64 / (1u64 << 53) as f64 + 0.5;
            let scaled = x * 2f64.powi((h % 601) as i32 - 300);
            if i % 3 == 2 {
                -scaled
            } else {
                scaled
            }
        })
        .chain([2f64.powi(290), -(2f64.powi(290)), 1e-300])
        .collect()
}

/// Which global indices rank r of p holds, dealt in blocks, round robin or shuffled.
fn share(deal: usize, n: usize, p: usize, r: usize) -> Vec<usize> {
    match deal {
        0 => (n * r / p..n * (r + 1) / p).collect(),
        1 => (r..n).step_by(p).collect(),
        _ => {
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&i| mix(i, 3, p as u64));
            order.into_iter().skip(r).step_by(p).collect()
        }
    }
}

/// Every algorithm (`Algorithm::ALL`, blocks `Auto`) and the pipelined trees with blocks of one
/// element, where partial sums travel furthest.
fn algorithms() -> Vec<Algorithm> {
    let one = Block::Elements(1);
    Algorithm::ALL
        .into_iter()
        .chain([
            Algorithm::PipelinedTree { block: one },
            Algorithm::TwoTree { block: one },
        ])
        .collect()
}

#[test]
fn allreduce_of_accumulators_is_the_same_bits_for_every_algorithm_p_and_deal() {
    const K: usize = 3;
    let xs: Vec<Vec<f64>> = (0..K as u64).map(|k| global(500, k)).collect();
    let want: Vec<u64> = xs
        .iter()
        .map(|x| rounded64(&exact64(x)).to_bits())
        .collect();
    for p in 1..=17 {
        let team = team(p);
        for deal in 0..3 {
            for alg in algorithms() {
                let out = team
                    .run(|comm| -> corecoll::Result<Vec<u64>> {
                        let mut accs = [Accumulator::<f64>::new(); K];
                        for (acc, x) in accs.iter_mut().zip(&xs) {
                            for i in share(deal, x.len(), p, comm.rank()) {
                                acc.add(x[i]);
                            }
                        }
                        comm.allreduce_with(&mut accs, ReproducibleSum, alg)?;
                        Ok(accs.iter().map(|a| a.value().to_bits()).collect())
                    })
                    .unwrap();
                for (r, res) in out.into_iter().enumerate() {
                    assert_eq!(
                        res.unwrap(),
                        want,
                        "{alg:?}, p = {p}, deal {deal}, rank {r}"
                    );
                }
            }
        }
    }
}

#[test]
fn reduce_scan_and_reduce_scatter_of_accumulators() {
    let xs = global(300, 9);
    for p in [1, 2, 3, 5, 8, 13] {
        let out = team(p)
            .run(|comm| -> corecoll::Result<(Option<u64>, u64, u64)> {
                let (r, p) = (comm.rank(), comm.size());
                let mine = |i: usize| acc64(&xs[n_of(i, r, p, xs.len())]);
                let mut one = [mine(0)];
                let root = p - 1;
                comm.reduce(&mut one, ReproducibleSum, root)?;
                let reduced = (r == root).then(|| one[0].value().to_bits());
                let mut prefix = [mine(0)];
                comm.scan(&mut prefix, ReproducibleSum)?;
                // Block b of the reduce-scatter sums the numbers dealt for block b.
                let send: Vec<Accumulator<f64>> = (0..p).map(mine).collect();
                let mut block = [Accumulator::new()];
                comm.reduce_scatter_block(&send, &mut block, ReproducibleSum)?;
                Ok((
                    reduced,
                    prefix[0].value().to_bits(),
                    block[0].value().to_bits(),
                ))
            })
            .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            let (reduced, prefix, block) = res.unwrap();
            let dealt = |b: usize, upto: usize| -> Vec<f64> {
                (0..upto)
                    .flat_map(|q| xs[n_of(b, q, p, xs.len())].to_vec())
                    .collect()
            };
            let bits = |v: Vec<f64>| rounded64(&exact64(&v)).to_bits();
            if r == p - 1 {
                assert_eq!(reduced, Some(bits(dealt(0, p))), "reduce, p = {p}");
            }
            assert_eq!(prefix, bits(dealt(0, r + 1)), "scan, p = {p}, rank {r}");
            assert_eq!(
                block,
                bits(dealt(r, p)),
                "reduce-scatter, p = {p}, rank {r}"
            );
        }
    }
}

/// The numbers rank r adds for block `b`: a stretch of the vector that depends on both.
fn n_of(b: usize, r: usize, p: usize, n: usize) -> std::ops::Range<usize> {
    let k = (b * p + r) % (p * p);
    n * k / (p * p)..n * (k + 1) / (p * p)
}

#[path = "repro/buffers.rs"]
mod buffers;
