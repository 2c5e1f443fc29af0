use corecoll::op::Sum;
use corecoll::{Algorithm, Block, Team};
use std::time::Instant;
fn main() {
    let team = Team::builder().ranks(2).build().unwrap();
    let algs = [
        Algorithm::RecursiveDoubling,
        Algorithm::Linear,
        Algorithm::DualRoot { block: Block::Auto },
        Algorithm::PipelinedTree { block: Block::Auto },
        Algorithm::Rabenseifner,
        Algorithm::Ring,
        Algorithm::Chain,
        Algorithm::Binomial,
    ];
    for n in [1usize, 128, 4096, 32768, 1 << 20] {
        for alg in algs {
            let mut best = f64::MAX;
            for _ in 0..5 {
                let iters = if n < 1000 {
                    20000
                } else if n < 100000 {
                    500
                } else {
                    20
                };
                let t = team
                    .run(|c| {
                        let mut v = vec![1.0f64; n];
                        for _ in 0..iters.min(100) {
                            c.allreduce_with(&mut v, Sum, alg).unwrap();
                            v.fill(1.0);
                        }
                        c.barrier().unwrap();
                        let t0 = Instant::now();
                        for _ in 0..iters {
                            c.allreduce_with(&mut v, Sum, alg).unwrap();
                            if v[0] > 1e300 {
                                v.fill(1.0)
                            }
                        }
                        t0.elapsed().as_secs_f64() / iters as f64
                    })
                    .unwrap();
                best = best.min(t[0]);
            }
            println!("n={n:8} {:20} {:10.1} ns", alg.name(), best * 1e9);
        }
    }
}
