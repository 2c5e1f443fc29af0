//! A training step's gradient allreduce, layer by layer, on ranks whose computation is
//! imbalanced: blocking (each layer's allreduce right after the layer, waiting for the slowest
//! rank of that layer) against non-blocking (each layer's `iallreduce` started after the layer,
//! all waited for at the end of the step).
//!
//! ```text
//! cargo run --release -p corecoll-bench --example imbalance [-- --layers 16 --ranks 2 --steps 200]
//! ```
//!
//! Layer l of rank r computes for `base · (1 + skew)` µs when (l + r) is even and `base` µs
//! otherwise, so that every rank is the slow one on half of the layers: a blocking step costs
//! about Σ_l max_r (the slow time on every layer), a non-blocking one about max_r Σ_l (half
//! slow, half fast) plus the last layers' allreduce. Each gradient is `--floats` f64 per layer.
//! The two versions run in interleaved rounds in one team; both results are checked against
//! each other bit for bit (same algorithm: the sums must be identical). Prints the median step
//! time of each and their ratio.

use corecoll::op::Sum;
use corecoll::{Request, Team};
use corecoll_bench::stats::Summary;
use std::time::{Duration, Instant};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(default)
}

/// Busy computation for `d` (a loop on the clock: the same wall time on every core).
fn compute(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        corecoll_bench::overlap::compute(64);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let layers = arg("--layers", 16);
    let ranks = arg("--ranks", 2);
    let steps = arg("--steps", 200);
    let floats = arg("--floats", 4096);
    let base = Duration::from_micros(arg("--base-us", 20) as u64);
    let skew = arg("--skew-percent", 100) as u32;
    let slow = base + base * skew / 100;
    let team = Team::new(ranks)?;
    let out = team.run(|comm| -> corecoll::Result<(Vec<f64>, Vec<f64>)> {
        let r = comm.rank();
        let layer_time = |l: usize| {
            if (l + r).is_multiple_of(2) {
                slow
            } else {
                base
            }
        };
        let grads = |step: usize| -> Vec<Vec<f64>> {
            (0..layers)
                .map(|l| {
                    (0..floats)
                        .map(|i| ((r * 7 + l * 3 + i + step) % 101) as f64 * 0.37)
                        .collect()
                })
                .collect()
        };
        let (mut blocking, mut nonblocking) = (Vec::new(), Vec::new());
        for step in 0..steps {
            // Blocking.
            let mut a = grads(step);
            comm.barrier()?;
            let t = Instant::now();
            for (l, g) in a.iter_mut().enumerate() {
                compute(layer_time(l));
                comm.allreduce(g, Sum)?;
            }
            blocking.push(t.elapsed().as_secs_f64());
            // Non-blocking.
            let mut b = grads(step);
            comm.barrier()?;
            let t = Instant::now();
            comm.scope(|s| {
                let mut reqs = Vec::with_capacity(layers);
                for (l, g) in b.iter_mut().enumerate() {
                    compute(layer_time(l));
                    reqs.push(s.iallreduce(g, Sum)?);
                }
                Request::wait_all(reqs)
            })?;
            nonblocking.push(t.elapsed().as_secs_f64());
            let bits = |v: &Vec<Vec<f64>>| -> Vec<u64> {
                v.iter().flatten().map(|x| x.to_bits()).collect()
            };
            assert_eq!(bits(&a), bits(&b), "step {step}: the two versions differ");
        }
        Ok((blocking, nonblocking))
    })?;
    let (blocking, nonblocking) = out.into_iter().next().expect("rank 0")?;
    let median = |v: &[f64]| Summary::of(v).map_or(f64::NAN, |s| s.median);
    let (b, n) = (median(&blocking), median(&nonblocking));
    let ideal_b = layers as f64 * slow.as_secs_f64();
    let ideal_n =
        layers.div_ceil(2) as f64 * slow.as_secs_f64() + (layers / 2) as f64 * base.as_secs_f64();
    println!(
        "imbalanced layer-by-layer allreduce: {ranks} ranks, {layers} layers of {floats} f64, \
         compute {} µs or {} µs per layer, {steps} steps",
        base.as_micros(),
        slow.as_micros()
    );
    println!(
        "  blocking      median step {:>9.1} µs   (compute alone, slowest per layer: {:.1} µs)",
        b * 1e6,
        ideal_b * 1e6
    );
    println!(
        "  non-blocking  median step {:>9.1} µs   (compute alone, each rank's own: {:.1} µs)",
        n * 1e6,
        ideal_n * 1e6
    );
    println!("  non-blocking / blocking: {:.2}", n / b);
    Ok(())
}
