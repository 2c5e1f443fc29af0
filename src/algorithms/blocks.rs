//! How schedules cut a vector: into p nearly equal slices (reduce-scatter, direct, scatter),
//! and into pipeline blocks (the pipelined trees, the chain).

use std::ops::Range;

/// Where slice `j` of `n` elements cut into `parts` nearly equal slices begins, for
/// `j ∈ 0..=parts` (`block_start(n, parts, parts) == n`). The first `n % parts` slices have
/// one element more than the others; slice `j` is `block_start(j)..block_start(j + 1)`.
pub(crate) fn block_start(n: usize, parts: usize, j: usize) -> usize {
    debug_assert!(parts >= 1 && j <= parts);
    // j · ⌊n/parts⌋ ≤ n, so nothing overflows.
    j * (n / parts) + j.min(n % parts)
}

/// The elements that slices `blocks` (a range of slice indices) of `n` over `parts` cover.
pub(crate) fn elements(n: usize, parts: usize, blocks: Range<usize>) -> Range<usize> {
    block_start(n, parts, blocks.start)..block_start(n, parts, blocks.end)
}

/// Number of pipeline blocks of a vector of `n` elements cut into blocks of `block`: all the
/// full blocks plus one final block of `n mod block` elements, which is empty when `block`
/// divides `n` (and is the only block of an empty vector). Because only the last block is
/// short, ranks whose lengths differ never agree on a sequence of message lengths, so a
/// length mistake shows as a mismatch rather than a missing message.
pub(crate) fn pipeline_blocks(n: usize, block: usize) -> usize {
    n / block + 1
}

/// The elements of pipeline block `k` (see [`pipeline_blocks`]).
pub(crate) fn block_range(n: usize, block: usize, k: usize) -> Range<usize> {
    let start = k.saturating_mul(block).min(n);
    start..start.saturating_add(block).min(n)
}

/// Splits `buf` into a shared view of `src` and a mutable view of `dst`, two disjoint ranges
/// of it (panics if they overlap: a schedule bug, never an input error).
pub(crate) fn split_pair<T>(
    buf: &mut [T],
    src: Range<usize>,
    dst: Range<usize>,
) -> (&[T], &mut [T]) {
    assert!(
        src.end <= dst.start || dst.end <= src.start || src.is_empty() || dst.is_empty(),
        "overlapping ranges {src:?} and {dst:?}"
    );
    if src.is_empty() {
        return (&[], &mut buf[dst]);
    }
    if dst.is_empty() {
        return (&buf[src], &mut []);
    }
    if src.end <= dst.start {
        let (lo, hi) = buf.split_at_mut(dst.start);
        (&lo[src], &mut hi[..dst.end - dst.start])
    } else {
        let (lo, hi) = buf.split_at_mut(src.start);
        (&hi[..src.end - src.start], &mut lo[dst])
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Pipeline blocks tile the vector, only the last is short, and it may be empty.
    #[test]
    fn blocks_tile_the_vector() {
        for n in 0..50 {
            for block in 1..12 {
                let mut next = 0;
                let count = pipeline_blocks(n, block);
                for k in 0..count {
                    let r = block_range(n, block, k);
                    assert_eq!(r.start, next, "n={n} block={block} k={k}");
                    assert!(
                        r.len() == block || k + 1 == count,
                        "n={n} block={block} k={k}"
                    );
                    next = r.end;
                }
                assert_eq!(next, n);
                assert!(block_range(n, block, count).is_empty());
            }
        }
    }

    /// Slices tile the vector and differ in length by at most one.
    #[test]
    fn slices_tile_the_vector() {
        for n in 0..60 {
            for parts in 1..20 {
                assert_eq!(block_start(n, parts, 0), 0);
                assert_eq!(block_start(n, parts, parts), n);
                for j in 0..parts {
                    let len = block_start(n, parts, j + 1) - block_start(n, parts, j);
                    assert!(len == n / parts || len == n / parts + 1);
                }
                assert_eq!(elements(n, parts, 0..parts), 0..n);
            }
        }
    }

    /// `split_pair` hands out the two ranges asked for, in either order, empty ones included.
    #[test]
    fn split_pair_either_order_and_empty() {
        let mut b: Vec<u32> = (0..10).collect();
        let (s, d) = split_pair(&mut b, 6..8, 1..3);
        assert_eq!(s, &[6, 7]);
        assert_eq!(d, &mut [1, 2]);
        let (s, d) = split_pair(&mut b, 0..2, 2..5);
        assert_eq!(s, &[0, 1]);
        assert_eq!(d, &mut [2, 3, 4]);
        let (a, b2) = split_pair(&mut b, 7..10, 2..4);
        assert_eq!((a, &*b2), (&[7, 8, 9][..], &[2, 3][..]));
        let (a, b2) = split_pair(&mut b, 4..4, 4..6);
        assert_eq!((a.len(), b2.len()), (0, 2));
        let (a, b2) = split_pair(&mut b, 4..6, 4..4);
        assert_eq!((a.len(), b2.len()), (2, 0));
        let (a, b2) = split_pair(&mut b, 3..3, 3..3);
        assert!(a.is_empty() && b2.is_empty());
    }
}
