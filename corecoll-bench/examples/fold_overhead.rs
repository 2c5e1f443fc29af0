//! What the library adds to a persistent 8-byte allreduce at p = 2: the same exchange of cache
//! lines written by hand (each rank stores its value and a sequence number in a line of its
//! own, two lines per rank used in turn, then spins on the other rank's line and adds) against
//! `Persistent::start` + `wait` on the same two pinned ranks, in interleaved rounds.
//!
//! ```text
//! cargo run --release -p corecoll-bench --example fold_overhead -- [--rounds N] [--iters N] [--work N]
//! cargo run --release -p corecoll-bench --example fold_overhead -- --single --iters 100000
//! ```
//!
//! Each round times `--iters` back-to-back exchanges of each method (the slower rank's time);
//! the minimum and the median over the rounds are printed. `--work N` puts N dependent
//! multiplications (through memory) between seeing the other rank's line and publishing in the
//! hand-written exchange, standing for software there, and prints what they cost alone.
//! `--single` runs only the persistent
//! loop on one rank (nothing to wait for), for counting its instructions under
//! `valgrind --tool=callgrind` at two `--iters` values: the difference divided by the
//! difference of the iterations is the instructions of one start, wait and `buffer`.

use corecoll::{op::Sum, Comm, Team};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One rank's line: a sequence number and the value it goes with.
#[repr(C, align(64))]
struct Line {
    seq: AtomicU64,
    value: UnsafeCell<f64>,
}

// SAFETY: `value` is written by its rank only before its release store of `seq`, and read by
// the other rank only after an acquire load of `seq` shows that store; the writer writes the
// line again two exchanges later, after the reader has published the exchange in between,
// which it does only after reading (the protocol of the library's slots).
unsafe impl Sync for Line {}

/// `work` dependent multiplications, each through memory.
#[inline(always)]
fn busy(x: &mut f64, work: u64) {
    for _ in 0..work {
        *x = std::hint::black_box(*x * 1.000_000_1);
    }
}

/// The exchange written by hand: `iters` exchanges numbered after `base`, with `work` between
/// seeing the other rank's line and publishing; returns seconds.
fn by_hand(lines: &[[Line; 2]; 2], rank: usize, base: u64, iters: u64, work: u64) -> f64 {
    let mut x = 1.0f64;
    let t0 = Instant::now();
    for k in base + 1..=base + iters {
        busy(&mut x, work);
        let mine = &lines[rank][(k % 2) as usize];
        // SAFETY: this rank's line, which the other rank no longer reads (type comment).
        unsafe { *mine.value.get() = x };
        mine.seq.store(k, Ordering::Release);
        let theirs = &lines[1 - rank][(k % 2) as usize];
        while theirs.seq.load(Ordering::Acquire) < k {
            std::hint::spin_loop();
        }
        // SAFETY: published (acquire above) and not written again before this rank publishes.
        x += unsafe { *theirs.value.get() };
        if x > 1e300 {
            x = 1.0;
        }
    }
    t0.elapsed().as_secs_f64()
}

/// `iters` starts and waits of a persistent allreduce of one f64; returns seconds.
fn persistent(comm: &Comm, iters: u64) -> corecoll::Result<f64> {
    let mut x = vec![1.0f64];
    let t0 = Instant::now();
    comm.scope(|s| {
        let mut ar = s.allreduce_init(&mut x, Sum)?;
        for _ in 0..iters {
            ar.start()?;
            ar.wait()?;
            let b = ar.buffer()?;
            if b[0] > 1e300 {
                b[0] = 1.0;
            }
        }
        Ok(())
    })?;
    Ok(t0.elapsed().as_secs_f64())
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect("a number"))
}

fn summary(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let iters = arg("--iters", 300_000);
    if std::env::args().any(|a| a == "--single") {
        let mut t = Team::new(1)?.run(|comm| persistent(comm, iters))?;
        let t = t.swap_remove(0)?;
        println!(
            "p=1 persistent: {:.1} ns per start + wait",
            t * 1e9 / iters as f64
        );
        return Ok(());
    }
    let rounds = arg("--rounds", 15);
    let work = arg("--work", 0);
    if work > 0 {
        let mut x = 1.0;
        let t0 = Instant::now();
        for _ in 0..iters {
            busy(&mut x, work);
        }
        let alone = t0.elapsed().as_secs_f64() * 1e9 / iters as f64;
        println!("--work {work} alone: {alone:.1} ns per exchange");
    }
    let team = Team::new(2)?;
    let line = || Line {
        seq: AtomicU64::new(0),
        value: UnsafeCell::new(0.0),
    };
    let lines = [[line(), line()], [line(), line()]];
    let (mut hand, mut lib) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let times = team.run(|comm| -> corecoll::Result<(f64, f64)> {
            comm.barrier()?;
            let h = by_hand(&lines, comm.rank(), round * iters, iters, work);
            comm.barrier()?;
            Ok((h, persistent(comm, iters)?))
        })?;
        let times: Vec<(f64, f64)> = times.into_iter().collect::<Result<_, _>>()?;
        let ns = |t: f64| t * 1e9 / iters as f64;
        hand.push(ns(times.iter().map(|t| t.0).fold(0.0, f64::max)));
        lib.push(ns(times.iter().map(|t| t.1).fold(0.0, f64::max)));
    }
    let (hand, lib) = (summary(hand), summary(lib));
    println!("{rounds} rounds of {iters} exchanges, p = 2, ns per exchange (min / median):");
    println!("  by hand:              {:6.1} / {:6.1}", hand.0, hand.1);
    println!("  persistent allreduce: {:6.1} / {:6.1}", lib.0, lib.1);
    println!(
        "  ratio: {:.2} (min) / {:.2} (median)",
        lib.0 / hand.0,
        lib.1 / hand.1
    );
    Ok(())
}
