//! Criterion micro-benchmarks of the runtime core: one-way latency of an 8-byte message,
//! barriers of 2 and 8 ranks, and an 8 MiB pairwise exchange beside a plain 8 MiB memcpy.
//!
//! ```text
//! cargo bench --bench runtime
//! ```
//!
//! Starting a team costs far more than one operation, so each benchmark builds its [`Team`]
//! once and uses `iter_custom`: one `Team::run` per criterion sample, in which every rank warms
//! up, meets the others at a barrier, and repeats the operation `iters` times; rank 0 (the
//! calling thread) times the loop and its time is the sample's. The kernels are the ones of
//! the latency check `corecoll-latency` (the printed table, in the `corecoll-bench` crate): a
//! ping-pong sends back what it just received, and the exchange and the memcpy swap their two
//! buffers after each repetition, so that the data sent was always just written.

use corecoll::{Comm, Team};
use criterion::{Criterion, Throughput};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Size of the large exchange and of the memcpy it is compared with.
const BIG: usize = 8 << 20;

/// What the ranks repeat.
#[derive(Debug, Clone, Copy)]
enum Work {
    /// Rank 0 sends `n` bytes to rank 1, which sends them back; ranks ≥ 2 idle.
    PingPong(usize),
    /// Every rank calls `barrier`.
    Barrier,
    /// Ranks 0 and 1 swap `n` bytes with one `sendrecv` each; ranks ≥ 2 idle.
    Exchange(usize),
}

impl Work {
    /// Repetitions before the timed loop.
    fn warm_up(self, iters: u64) -> u64 {
        match self {
            Work::Exchange(_) => iters.min(2),
            _ => iters.min(200),
        }
    }
}

/// Repeats `work` `iters` times on this rank with its buffers `a` (sent, and for a ping-pong
/// also received into) and `b` (received into).
fn repeat(
    comm: &Comm,
    work: Work,
    a: &mut Vec<u8>,
    b: &mut Vec<u8>,
    iters: u64,
) -> corecoll::Result<()> {
    let rank = comm.rank();
    match work {
        Work::PingPong(_) if rank == 0 => {
            for _ in 0..iters {
                comm.send(1, a)?;
                comm.recv(1, a)?;
            }
        }
        Work::PingPong(_) if rank == 1 => {
            for _ in 0..iters {
                comm.recv(0, a)?;
                comm.send(0, a)?;
            }
        }
        Work::Exchange(_) if rank < 2 => {
            let peer = 1 - rank;
            for _ in 0..iters {
                comm.sendrecv(peer, a, peer, b)?;
                std::mem::swap(a, b);
            }
        }
        Work::Barrier => {
            for _ in 0..iters {
                comm.barrier()?;
            }
        }
        Work::PingPong(_) | Work::Exchange(_) => {}
    }
    Ok(())
}

/// Rank 0's time for `iters` repetitions of `work` on `team`, after a warm-up and a barrier.
fn timed(team: &Team, work: Work, iters: u64) -> Duration {
    let out = team
        .run(|comm| -> corecoll::Result<Duration> {
            let n = match work {
                Work::PingPong(n) | Work::Exchange(n) => n,
                Work::Barrier => 0,
            };
            let (mut a, mut b) = (vec![comm.rank() as u8 + 1; n], vec![0u8; n]);
            repeat(comm, work, &mut a, &mut b, work.warm_up(iters))?;
            comm.barrier()?;
            let t0 = Instant::now();
            repeat(comm, work, &mut a, &mut b, iters)?;
            Ok(t0.elapsed())
        })
        .expect("the benchmark run failed");
    out.into_iter()
        .next()
        .expect("rank 0's result")
        .expect("rank 0 failed")
}

fn latency(c: &mut Criterion) {
    let team = Team::new(2).expect("a team of 2");
    let mut g = c.benchmark_group("latency");
    g.bench_function("one_way_8B_p2", |bch| {
        bch.iter_custom(|iters| timed(&team, Work::PingPong(8), iters) / 2)
    });
    g.finish();
}

fn barrier(c: &mut Criterion) {
    let mut g = c.benchmark_group("barrier");
    for p in [2, 8] {
        let team = Team::new(p).expect("a team");
        g.bench_function(format!("p{p}"), |bch| {
            bch.iter_custom(|iters| timed(&team, Work::Barrier, iters))
        });
    }
    g.finish();
}

fn exchange(c: &mut Criterion) {
    let team = Team::new(2).expect("a team of 2");
    let mut g = c.benchmark_group("exchange_8MiB");
    g.throughput(Throughput::Bytes(BIG as u64));
    g.bench_function("sendrecv_p2", |bch| {
        bch.iter_custom(|iters| timed(&team, Work::Exchange(BIG), iters))
    });
    let (mut src, mut dst) = (vec![1u8; BIG], vec![0u8; BIG]);
    g.bench_function("memcpy", |bch| {
        bch.iter(|| {
            dst.copy_from_slice(black_box(&src));
            std::mem::swap(black_box(&mut src), black_box(&mut dst));
        })
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

fn main() {
    // What criterion_group! and criterion_main! expand to, without the undocumented public
    // function the former generates.
    let mut c = config().configure_from_args();
    latency(&mut c);
    barrier(&mut c);
    exchange(&mut c);
    c.final_summary();
}
