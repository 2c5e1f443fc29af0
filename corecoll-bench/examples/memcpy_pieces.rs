//! How fast one long `memcpy` is against the same bytes copied in pieces, on this machine: the
//! measurement behind the library's `src/copy.rs` (docs/tuning.md, "Long copies").
//!
//! For each buffer size, a loop of copies of the whole buffer in one `copy_from_slice` call,
//! then in pieces of 16 KiB to 512 KiB, each copy timed on its own; prints the best and the
//! mean rate. The mean is what a collective pays over many calls.
//!
//! ```sh
//! cargo run --release -p corecoll-bench --example memcpy_pieces
//! ```

use std::hint::black_box;
use std::time::Instant;

fn main() {
    for n in [256usize << 10, 1 << 20, 2 << 20, 8 << 20] {
        let src = vec![1u8; n];
        let mut dst = vec![0u8; n];
        let copies = ((256usize << 20) / n).max(8);
        let pieces = [16usize << 10, 64 << 10, 256 << 10, 512 << 10];
        for piece in std::iter::once(n).chain(pieces.into_iter().filter(|&k| k < n)) {
            let (mut best, mut total) = (f64::MAX, 0.0);
            for _ in 0..copies {
                let t = Instant::now();
                for (d, s) in dst.chunks_mut(piece).zip(src.chunks(piece)) {
                    d.copy_from_slice(s);
                }
                let e = t.elapsed().as_secs_f64();
                black_box(&mut dst);
                best = best.min(e);
                total += e;
            }
            let gbs = |t: f64| n as f64 / t / 1e9;
            let what = if piece == n {
                "one call".to_string()
            } else {
                format!("{} KiB pieces", piece >> 10)
            };
            println!(
                "{:>5} KiB, {what:>16}: best {:5.1} GB/s, mean {:5.1} GB/s ({copies} copies)",
                n >> 10,
                gbs(best),
                gbs(total / copies as f64)
            );
        }
    }
}
