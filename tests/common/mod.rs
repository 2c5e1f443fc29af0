//! Helpers shared by the collective test suites: teams that time out instead of hanging,
//! element values, and the non-commutative ops that show order mistakes.

#![allow(dead_code)] // each suite uses its own subset

use corecoll::op::{self, Op};
use corecoll::{Comm, Error, Pinning, Team, Topology};
use std::fmt::Debug;
use std::time::Duration;

/// A team of `p` ranks whose waits time out, so that a hang fails the test instead of
/// stalling it.
pub fn team(p: usize) -> Team {
    Team::builder()
        .ranks(p)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// A well-mixed hash of `(rank, index, salt)` (splitmix64 finaliser).
pub fn mix(r: usize, i: usize, salt: u64) -> u64 {
    let mut z = (r as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add((i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9))
        .wrapping_add(salt.wrapping_mul(0x94d0_49bb_1331_11eb));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// An arbitrary float of rank `r`, element `i`, spread over twelve orders of magnitude: sums
/// of them depend on the order of the additions, so their bits show it.
pub fn float(r: usize, i: usize, salt: u64) -> f64 {
    let h = mix(r, i, salt);
    ((h >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 1e6 / (1 + h % 97) as f64
}

/// The 2×2 matrix product with wrapping arithmetic, row-major `[a, b, c, d]`.
pub fn matmul(x: [u32; 4], y: [u32; 4]) -> [u32; 4] {
    let [a, b, c, d] = x;
    let [e, f, g, h] = y;
    [
        a.wrapping_mul(e).wrapping_add(b.wrapping_mul(g)),
        a.wrapping_mul(f).wrapping_add(b.wrapping_mul(h)),
        c.wrapping_mul(e).wrapping_add(d.wrapping_mul(g)),
        c.wrapping_mul(f).wrapping_add(d.wrapping_mul(h)),
    ]
}

/// The non-commutative op of 2×2 matrix products ([`matmul`]).
pub fn matrix_op() -> impl Op<[u32; 4]> + Copy {
    op::non_commutative(|a: &[u32; 4], b: &[u32; 4]| matmul(*a, *b))
}

/// A matrix of rank `r`, element `i`: small entries, so that the products do not commute.
pub fn matrix(r: usize, i: usize) -> [u32; 4] {
    let h = mix(r, i, 3);
    [0, 16, 32, 48].map(|s| ((h >> s) & 0xffff) as u32 % 7)
}

/// The span op: `(a, b) ⊙ (b, c) = (a, c)`; it panics (failing the run) when the spans are
/// not adjacent, that is when operands come out of rank order.
pub fn span_op() -> impl Op<(u32, u32)> + Copy {
    op::non_commutative(|a: &(u32, u32), b: &(u32, u32)| {
        assert_eq!(a.1, b.0, "operands out of rank order");
        (a.0, b.1)
    })
}

/// A two-word element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// First word.
    pub a: u64,
    /// Second word.
    pub b: u64,
}

/// Element types the suites move: made from a per-rank, per-element number.
pub trait Value: Copy + Send + Sync + PartialEq + Debug + 'static {
    /// The element for the word `x`.
    fn from_word(x: u64) -> Self;
}

impl Value for u64 {
    fn from_word(x: u64) -> Self {
        x
    }
}

impl Value for Pair {
    fn from_word(x: u64) -> Self {
        Pair {
            a: x,
            b: !x.rotate_left(13),
        }
    }
}

/// A call expected to fail, run on every rank.
pub type BadCall<'a> = &'a (dyn Fn(&Comm) -> corecoll::Result<()> + Sync);

/// Runs `call` on every rank of `team` and checks that every rank fails with a root cause
/// that `expected` accepts (and that the run itself neither panicked nor timed out).
#[track_caller]
pub fn check_fails(team: &Team, what: &str, call: BadCall<'_>, expected: fn(&Error) -> bool) {
    let p = team.size();
    let out = team
        .run(call)
        .unwrap_or_else(|e| panic!("{what}, p = {p}: {e}"));
    for (r, res) in out.into_iter().enumerate() {
        let e = res.expect_err(&format!("{what}, p = {p}, rank {r}: no error"));
        assert!(
            expected(e.root_cause()),
            "{what}, p = {p}, rank {r}: unexpected {e}"
        );
    }
}

/// Root cause: a rank out of range.
pub fn out_of_range(e: &Error) -> bool {
    matches!(e, Error::RankOutOfRange { .. })
}

/// Root cause: an invalid argument.
pub fn invalid(e: &Error) -> bool {
    matches!(e, Error::InvalidArgument { .. })
}

/// Root cause: ranks that disagree.
pub fn mismatch(e: &Error) -> bool {
    matches!(e, Error::Mismatch { .. })
}

/// A layout of a `v` collective's buffer: per-rank (or per-peer) counts and displacements,
/// and the buffer's length.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Elements per rank.
    pub counts: Vec<usize>,
    /// Where each rank's block starts.
    pub displs: Vec<usize>,
    /// Length of the buffer holding the blocks.
    pub len: usize,
}

/// Blocks of `counts` placed in the order `order`, with `gap` elements before each and after
/// the last.
pub fn place<I>(counts: Vec<usize>, order: I, gap: usize) -> Layout
where
    I: IntoIterator,
    I::Item: std::borrow::Borrow<usize>,
{
    let mut displs = vec![0; counts.len()];
    let mut at = gap;
    for i in order {
        let i = *std::borrow::Borrow::borrow(&i);
        displs[i] = at;
        at += counts[i] + gap;
    }
    Layout {
        counts,
        displs,
        len: at,
    }
}

/// Layouts derived from `good` (p blocks, p ≥ 1) that are wrong wherever they are
/// significant, each with what makes it wrong; "overlapping" ones are wrong only for a
/// receive buffer.
pub fn bad_layouts(good: &Layout) -> Vec<(&'static str, Layout)> {
    let p = good.counts.len();
    let with = |f: &dyn Fn(&mut Layout)| {
        let mut l = good.clone();
        f(&mut l);
        l
    };
    let mut bad = vec![
        (
            "a count short",
            with(&|l| {
                l.counts.pop();
            }),
        ),
        ("a displacement too many", with(&|l| l.displs.push(0))),
        ("last block out of bounds", with(&|l| l.displs[p - 1] += 2)),
        (
            "displacement overflowing",
            with(&|l| l.displs[0] = usize::MAX),
        ),
        ("count overflowing", with(&|l| l.counts[0] = usize::MAX)),
    ];
    if p > 1 {
        bad.push((
            "blocks 0 and 1 overlapping",
            with(&|l| l.displs[1] = l.displs[0]),
        ));
    }
    bad
}

/// A team of `ranks` placed on `topology` (a described machine) by `pinning`, whose waits
/// time out after 45 s, so that a hang fails the test instead of stalling it.
pub fn placed_team(topology: Topology, pinning: Pinning, ranks: usize) -> Team {
    Team::builder()
        .ranks(ranks)
        .topology(topology)
        .pinning(pinning)
        .timeout(Duration::from_secs(45))
        .build()
        .unwrap()
}

/// The cores (OS indices) the calling thread may run on, ascending.
pub fn available_cores() -> Vec<usize> {
    let mut ids: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    ids.sort_unstable();
    ids
}
