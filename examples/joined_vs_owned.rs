//! The same collectives on a team with threads of its own (`Team::run`) and on one whose ranks
//! are the program's threads (`TeamBuilder::external`, `Team::join` from `std::thread::scope`),
//! in interleaved rounds; and what a run costs that joins, makes one 8-byte allreduce and
//! leaves, against the same on the owned team (`Team::run`) and against the bare fork-join of
//! the joining threads (a rayon pool's `broadcast`); and the same run made by threads that never
//! sleep (they meet at a spinning barrier between runs, as OpenMP's threads between regions),
//! against that barrier alone (measured last, once the owned team and the pool are gone).
//! Medians over the rounds, and their ratios.
//!
//! ```text
//! cargo run --release --example joined_vs_owned [rounds] [reps]
//! ```

use corecoll::{op, Comm, Team};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Microseconds per call of `f` on every rank, `reps` calls per run.
type Bench = fn(&Comm, usize);

fn allreduce_8(comm: &Comm, reps: usize) {
    for _ in 0..reps {
        let mut x = [comm.rank() as f64];
        comm.allreduce(&mut x, op::Sum).expect("allreduce");
    }
}

fn allreduce_64k(comm: &Comm, reps: usize) {
    let mut v = vec![comm.rank() as f64; 8192];
    for _ in 0..reps / 20 + 1 {
        comm.allreduce(&mut v, op::Sum).expect("allreduce");
    }
}

fn broadcast_8(comm: &Comm, reps: usize) {
    for _ in 0..reps {
        let mut x = [comm.rank() as f64];
        comm.broadcast(&mut x, 0).expect("broadcast");
    }
}

fn barrier(comm: &Comm, reps: usize) {
    for _ in 0..reps {
        comm.barrier().expect("barrier");
    }
}

/// Microseconds per run of `p` threads that meet at a spinning barrier, then (if `join`) join
/// `team`, make one 8-byte allreduce and leave, `runs` times.
fn spinning_runs(team: &Team, p: usize, runs: usize, join: bool) -> f64 {
    let arrived = AtomicUsize::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for rank in 0..p {
            let arrived = &arrived;
            s.spawn(move || {
                for run in 1..=runs {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    while arrived.load(Ordering::SeqCst) < run * p {
                        std::hint::spin_loop();
                    }
                    if join {
                        let seat = team.seat(rank).expect("seat");
                        allreduce_8(&seat, 1);
                        seat.leave().expect("leave");
                    }
                }
            });
        }
    });
    t0.elapsed().as_secs_f64() * 1e6 / runs as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(15);
    let reps: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let p = 2;
    let owned = Team::builder().ranks(p).build().expect("a team");
    let joined = Team::builder().ranks(p).external().build().expect("a team");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(p)
        .build()
        .expect("a pool");
    let benches: [(&str, Bench, usize); 4] = [
        ("allreduce 8 B", allreduce_8, reps),
        ("allreduce 64 KiB", allreduce_64k, reps / 20 + 1),
        ("broadcast 8 B", broadcast_8, reps),
        ("barrier", barrier, reps),
    ];
    let mut times = vec![(Vec::new(), Vec::new()); benches.len()];
    let mut region = (Vec::new(), Vec::new(), Vec::new());
    let mut spinning = (Vec::new(), Vec::new());
    let runs = reps / 10;
    for _ in 0..rounds {
        for (i, &(_, f, calls)) in benches.iter().enumerate() {
            let t0 = Instant::now();
            owned.run(|comm| f(comm, reps)).expect("run");
            times[i]
                .0
                .push(t0.elapsed().as_secs_f64() * 1e6 / calls as f64);
            let t0 = Instant::now();
            pool.broadcast(|ctx| {
                joined
                    .join(ctx.index(), |comm| f(comm, reps))
                    .expect("join")
            });
            times[i]
                .1
                .push(t0.elapsed().as_secs_f64() * 1e6 / calls as f64);
        }
        // A run per allreduce: owned, joined, and the bare fork-join.
        let t0 = Instant::now();
        for _ in 0..runs {
            owned.run(|comm| allreduce_8(comm, 1)).expect("run");
        }
        region
            .0
            .push(t0.elapsed().as_secs_f64() * 1e6 / runs as f64);
        let t0 = Instant::now();
        for _ in 0..runs {
            pool.broadcast(|ctx| {
                joined
                    .join(ctx.index(), |comm| allreduce_8(comm, 1))
                    .expect("join")
            });
        }
        region
            .1
            .push(t0.elapsed().as_secs_f64() * 1e6 / runs as f64);
        let t0 = Instant::now();
        for _ in 0..runs {
            pool.broadcast(|_| ());
        }
        region
            .2
            .push(t0.elapsed().as_secs_f64() * 1e6 / runs as f64);
    }
    // Apart, with the owned team's threads and the pool gone, so that only the spinning
    // threads are left to run on the cores.
    drop((owned, pool));
    for _ in 0..rounds {
        spinning.0.push(spinning_runs(&joined, p, runs, true));
        spinning.1.push(spinning_runs(&joined, p, runs, false));
    }
    println!("joined_vs_owned: {p} ranks, {rounds} rounds (medians, µs per call)");
    for (i, (name, _, _)) in benches.iter().enumerate() {
        let (o, j) = (median(times[i].0.clone()), median(times[i].1.clone()));
        println!(
            "  {name:18} owned {o:8.3}   joined {j:8.3}   joined / owned {:.2}",
            j / o
        );
    }
    let (o, j, b) = (median(region.0), median(region.1), median(region.2));
    println!(
        "  a run of one 8-byte allreduce: Team::run {o:.3}, join from a rayon broadcast {j:.3}, \
         the bare broadcast {b:.3} (join's own cost {:.3})",
        j - b
    );
    let (j, b) = (median(spinning.0), median(spinning.1));
    println!(
        "  the same run from threads that spin between runs: {j:.3}, the spinning barrier alone \
         {b:.3} (join, allreduce and leave {:.3})",
        j - b
    );
}
