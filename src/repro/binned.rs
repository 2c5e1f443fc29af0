//! `Accumulator<f64>::add_slice`'s fast path: a block of numbers summed exactly in a few float
//! bins, which then go into the limbs as a handful of deposits.
//!
//! The block's largest magnitude fixes the top of a ladder of bins, each [`W`] bits below the
//! one before: bin j holds multiples of `2^b_j`. Each number is split exactly down the ladder —
//! `q = (r + c) − c` with `c = 1.5 · 2^(b + 52)` is `r` rounded to a multiple of `2^b`, and
//! `r − q` what is left — and every piece is added to its bin in floating point. A bin's
//! additions are exact: its pieces are multiples of `2^b_j`, so small that a lane's sum of them
//! stays below `2^(b_j + 53)`. A block first tries as many bins as the block before it took;
//! if something is left below the last, the smallest nonzero magnitude says how many bins reach
//! its last bit. This is the extraction of Demmel and Nguyen's binned
//! summation ("Parallel reproducible summation", IEEE TC 2015; ReproBLAS), used here for an
//! exact sum: the ladder reaches down to the block's last bit instead of stopping at a fixed
//! depth.
//!
//! The loops have no branches and run on four lanes, so the compiler vectorises them (with
//! AVX2 where the processor has it, detected at run time). A block
//! whose numbers span too many binary orders (more than [`MAX_BINS`] bins), that holds an
//! infinity or a NaN, or whose magnitudes lie at the very top or bottom of the range returns
//! `None`, and the caller adds its numbers one by one.

/// Numbers per block: a lane sums at most `BLOCK / LANES` = 2⁸ pieces.
pub(super) const BLOCK: usize = 1024;
/// Independent partial bins, so that additions do not wait for each other.
pub(super) const LANES: usize = 4;
/// Bits between two bins: a piece of bin j + 1 is below `2^(b_j − 1)` = `2^(b_{j+1} + W − 1)`,
/// so a lane's sum stays below `2^(b_{j+1} + W + 7)`, within the 53 bits of a float's
/// significand with room to spare (and for bin 0, whose pieces are below `2^(b_0 + W)`, too).
const W: i32 = 42;
/// Most bins a block may need (numbers over about 160 binary orders of magnitude).
const MAX_BINS: usize = 5;

const SIGN: u64 = 1 << 63;
const EXP: u64 = 0x7ff << 52;

/// What the block adds: the bins' values, exact floats to deposit, and the `seen` flags to note;
/// `None` if the block must go number by number.
pub(super) struct Block {
    /// At most `MAX_BINS · LANES` exact partial sums.
    pub(super) bins: [f64; MAX_BINS * LANES],
    /// How many of `bins` hold something: [`LANES`] per bin.
    pub(super) used: usize,
    /// Whether some number was not −0.0.
    pub(super) not_neg_zero: bool,
}

/// Splits `xs` (at most [`BLOCK`] numbers) into exact bins, `guess` of them first (the count
/// the block before took), or `None`: with AVX2 where the
/// processor has it (the same operations on four numbers per instruction instead of two; the
/// bits are the same, since every addition in the bins is exact).
pub(super) fn bin(xs: &[f64], guess: usize) -> Option<Block> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2, as just detected.
        return unsafe { bin_avx2(xs, guess) };
    }
    bin_here(xs, guess)
}

/// [`bin`] compiled for AVX2.
///
/// # Safety
/// The processor must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn bin_avx2(xs: &[f64], guess: usize) -> Option<Block> {
    bin_here(xs, guess)
}

/// [`bin`]'s work, inlined into each of its forms.
#[inline(always)]
fn bin_here(xs: &[f64], guess: usize) -> Option<Block> {
    debug_assert!(xs.len() <= BLOCK);
    // Pass 1, branch-free on bits and magnitudes: any special value, any number other than
    // −0.0, the largest magnitude.
    let mut special = [0u64; LANES];
    let mut signs = [0u64; LANES];
    let mut hi = [0.0f64; LANES];
    let mut scan = |l: usize, x: f64| {
        let b = x.to_bits();
        // Bit 63 set exactly when the exponent is all ones.
        special[l] |= (b & EXP).wrapping_add(1 << 52);
        signs[l] |= b ^ SIGN;
        let a = f64::from_bits(b & !SIGN);
        // (A comparison, which compiles to one maximum instruction; no NaN gets here.)
        hi[l] = if a > hi[l] { a } else { hi[l] };
    };
    let quads = xs.chunks_exact(LANES);
    for &x in quads.remainder() {
        scan(0, x);
    }
    for quad in quads {
        for (l, &x) in quad.iter().enumerate() {
            scan(l, x);
        }
    }
    if special.iter().fold(0, |a, b| a | b) & SIGN != 0 {
        return None;
    }
    let mut out = Block {
        bins: [0.0; MAX_BINS * LANES],
        used: 0,
        not_neg_zero: signs.iter().fold(0, |a, b| a | b) != 0,
    };
    let hi = hi.into_iter().fold(0.0, f64::max);
    if hi == 0.0 {
        // Zeros only.
        return Some(out);
    }
    // Every |x| < 2^top (a subnormal largest magnitude has exponent field 0: below 2^−1022).
    let top = (hi.to_bits() >> 52) as i32 - 1022;
    let b0 = top - W;
    // The first constant, 1.5 · 2^(b0 + 52), must be finite.
    if b0 + 52 > 1022 {
        return None;
    }
    // As many bins as the block before needed, if they hold everything; else enough to reach
    // the smallest nonzero magnitude's last bit (a subnormal's is 2^−1074).
    if split_into(xs, b0, guess, &mut out) {
        return Some(out);
    }
    let mut lo = [f64::INFINITY; LANES];
    for quad in xs.chunks(LANES) {
        for (l, x) in quad.iter().enumerate() {
            let a = x.abs();
            lo[l] = lo[l].min(if a == 0.0 { f64::INFINITY } else { a });
        }
    }
    let lo = lo.into_iter().fold(f64::INFINITY, f64::min);
    let low = ((lo.to_bits() >> 52) as i32).max(1) - 1075;
    let bins = 1 + ((b0 - low).max(0) as u32).div_ceil(W as u32) as usize;
    (bins != guess && split_into(xs, b0, bins, &mut out)).then_some(out)
}

/// [`split`] into `bins` bins (at most [`MAX_BINS`]), noted in `out`; whether they hold
/// everything.
#[inline(always)]
fn split_into(xs: &[f64], b0: i32, bins: usize, out: &mut Block) -> bool {
    out.used = bins * LANES;
    match bins {
        1 => split::<1>(xs, b0, &mut out.bins),
        2 => split::<2>(xs, b0, &mut out.bins),
        3 => split::<3>(xs, b0, &mut out.bins),
        4 => split::<4>(xs, b0, &mut out.bins),
        5 => split::<5>(xs, b0, &mut out.bins),
        _ => false,
    }
}

/// Splits every number of `xs` down `K` bins from `2^b0` and adds the pieces to `lanes`,
/// `LANES` partial sums per bin: `q = (r + c) − c`, with `c = 1.5 · 2^(b + 52)`, is `r` rounded
/// to a multiple of `2^b`, and `r − q` goes on down. Whether nothing was left below the last
/// bin (which the choice of `K` ensures; checked all the same, as it costs one comparison per
/// number), or `false` if a bin's constant would not be normal.
#[inline(always)]
fn split<const K: usize>(xs: &[f64], b0: i32, lanes: &mut [f64; MAX_BINS * LANES]) -> bool {
    let b_last = b0 - W * (K as i32 - 1);
    if b_last + 52 < -1022 {
        return false;
    }
    let c: [f64; K] = std::array::from_fn(|j| {
        1.5 * f64::from_bits(((b0 - W * j as i32 + 52 + 1023) as u64) << 52)
    });
    let mut acc = [[0.0f64; LANES]; K];
    // Whether any number has something left after the last bin (the sign aside: −0.0 may
    // leave −0.0).
    let mut left = [0u64; LANES];
    let quads = xs.chunks_exact(LANES);
    // The last few numbers as a quad padded with zeros, which add nothing.
    let mut last = [0.0; LANES];
    last[..quads.remainder().len()].copy_from_slice(quads.remainder());
    for quad in quads.chain([&last[..]]) {
        let mut r: [f64; LANES] = std::array::from_fn(|l| quad[l]);
        for j in 0..K {
            for l in 0..LANES {
                let q = (r[l] + c[j]) - c[j];
                acc[j][l] += q;
                r[l] -= q;
            }
        }
        for l in 0..LANES {
            left[l] |= r[l].to_bits() << 1;
        }
    }
    for (j, a) in acc.iter().enumerate() {
        lanes[j * LANES..][..LANES].copy_from_slice(a);
    }
    left.iter().all(|&r| r == 0)
}
