//! What the ranks of the latency check repeat, and how it is timed: a sample is one timed loop
//! of repetitions on every rank of a persistent team after a barrier (rank 0's clock), the
//! repetition count chosen so that a sample lasts about [`SAMPLE_TARGET`]; besides, a plain
//! memcpy and the bare cache-line handoff between two cores that bounds any message from
//! below.

use corecoll::op::Sum;
use corecoll::Collective;
use corecoll::{Algorithm, Comm, Team};
use corecoll_bench::stats::Summary;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The error of the check's steps.
pub type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Samples per row.
pub const SAMPLES: usize = 30;
/// How long one sample should last.
pub const SAMPLE_TARGET: Duration = Duration::from_millis(10);

/// What the ranks repeat in one sample.
#[derive(Debug, Clone, Copy)]
pub enum Work {
    /// Rank 0 sends `n` bytes to rank 1, which sends them back; ranks ≥ 2 idle.
    PingPong(usize),
    /// [`Work::PingPong`] with requests: each side posts its receive (`irecv`) before it
    /// sends (`isend`) and waits for both, in a scope per round trip.
    RequestPingPong(usize),
    /// [`Work::Exchange`] as a halo exchange is written with requests: ranks 0 and 1 each post
    /// a receive from the other (`irecv`), send (`isend`) and wait for both
    /// (`Request::wait_all`), in a scope per exchange.
    RequestExchange(usize),
    /// Every rank calls `barrier`.
    Barrier,
    /// Ranks 0 and 1 swap `n` bytes with one `sendrecv` each; ranks ≥ 2 idle.
    Exchange(usize),
    /// Every rank copies `n` bytes between its own two buffers (`copy_from_slice`): the memory
    /// traffic of an exchange without any communication.
    Copy(usize),
    /// Every rank sends `n` bytes to itself and receives them: the library's own cost for one
    /// message at both ends, with no waiting and no data crossing cores.
    SelfMessage(usize),
    /// Every rank calls `allreduce_with` on `n` bytes of f64 with `Sum` and this algorithm.
    Allreduce(usize, Algorithm),
    /// Every rank starts and waits for a persistent allreduce (`Auto`) of `n` bytes of f64
    /// with `Sum`, set up once per sample.
    Persistent(usize),
    /// Every rank starts and waits for a non-blocking allreduce (`Auto`) of `n` bytes of f64
    /// with `Sum`, in a scope per repetition.
    Nonblocking(usize),
    /// Every rank calls a collective (`Auto`) on one u64 of its own (root 0; `Sum`, which
    /// wraps, for the reductions).
    Collective(CollectiveCall),
}

/// One call of a collective on a rank's own element and its two buffers of one element per
/// rank.
pub type CollectiveCall = fn(&Comm, &mut [u64], &mut [u64], &mut [u64]) -> corecoll::Result<()>;

/// The call of collective `c` in the 8-byte table (`Auto`, root 0, `Sum` for the reductions):
/// every collective of the library's list but the barrier, which the goals measure on its own
/// (and a collective this check does not know yet).
pub fn collective_call(c: Collective) -> Option<CollectiveCall> {
    Some(match c {
        Collective::Allreduce => |comm, own, _, _| comm.allreduce(own, Sum),
        Collective::Broadcast => |comm, own, _, _| comm.broadcast(own, 0),
        Collective::Reduce => |comm, own, _, _| comm.reduce(own, Sum, 0),
        Collective::Scan => |comm, own, _, _| comm.scan(own, Sum),
        Collective::Gather => |comm, own, all, _| comm.gather(own, all, 0),
        Collective::Scatter => |comm, own, all, _| comm.scatter(all, own, 0),
        Collective::Allgather => |comm, own, all, _| comm.allgather(own, all),
        Collective::Alltoall => |comm, _, all, all2| comm.alltoall(all, all2),
        Collective::ReduceScatter => |comm, own, all, _| comm.reduce_scatter_block(all, own, Sum),
        _ => return None,
    })
}

/// One rank's message buffers for a `Work`: `a` is sent (or, for a ping-pong, sent and
/// received into), `b` is received into. An exchange swaps them after each repetition, so
/// that what a rank sends is always data it has just written, as in an application: the
/// bytes really move between the cores instead of being re-read from a clean copy left in the
/// receiver's cache by the previous repetition.
struct Buffers {
    a: Vec<u8>,
    b: Vec<u8>,
    /// The vector of an allreduce.
    f: Vec<f64>,
    /// A collective's own element and its two buffers of one element per rank.
    own: Vec<u64>,
    all: Vec<u64>,
    all2: Vec<u64>,
}

impl Buffers {
    fn new(work: Work, rank: usize, size: usize) -> Buffers {
        let n = match work {
            Work::PingPong(n)
            | Work::RequestPingPong(n)
            | Work::RequestExchange(n)
            | Work::Exchange(n)
            | Work::Copy(n)
            | Work::SelfMessage(n) => n,
            Work::Barrier
            | Work::Allreduce(..)
            | Work::Persistent(_)
            | Work::Nonblocking(_)
            | Work::Collective(_) => 0,
        };
        let k = usize::from(matches!(work, Work::Collective(_)));
        let f = match work {
            Work::Allreduce(n, _) | Work::Persistent(n) | Work::Nonblocking(n) => {
                vec![1.0 + rank as f64; n / 8]
            }
            _ => Vec::new(),
        };
        Buffers {
            a: vec![rank as u8 + 1; n],
            b: vec![0; n],
            f,
            own: vec![rank as u64 + 1; k],
            all: vec![7; k * size],
            all2: vec![0; k * size],
        }
    }
}

/// Starts an allreduce's vector again at 1 long before its sums (which double every value)
/// would overflow; on every rank alike, since the values are equal everywhere.
fn renew(f: &mut [f64]) {
    if f.first().is_some_and(|&x| x > 1e300) {
        f.fill(1.0);
    }
}

/// Repeats `work` `iters` times on this rank.
fn repeat(comm: &Comm, work: Work, bufs: &mut Buffers, iters: u64) -> corecoll::Result<()> {
    let rank = comm.rank();
    match work {
        // One buffer per rank: each message carries what the sender has just received.
        Work::PingPong(_) if rank == 0 => {
            for _ in 0..iters {
                comm.send(1, &bufs.a)?;
                comm.recv(1, &mut bufs.a)?;
            }
        }
        Work::PingPong(_) if rank == 1 => {
            for _ in 0..iters {
                comm.recv(0, &mut bufs.a)?;
                comm.send(0, &bufs.a)?;
            }
        }
        Work::RequestPingPong(_) if rank == 0 => {
            for _ in 0..iters {
                // The receive of the reply is posted before the send.
                let (a, b) = (&bufs.a, &mut bufs.b);
                comm.scope(|s| {
                    let reply = s.irecv(1, b)?;
                    s.isend(1, a)?.wait()?;
                    reply.wait()
                })?;
                std::mem::swap(&mut bufs.a, &mut bufs.b);
            }
        }
        Work::RequestPingPong(_) if rank == 1 => {
            for _ in 0..iters {
                comm.scope(|s| s.irecv(0, &mut bufs.a)?.wait())?;
                comm.scope(|s| s.isend(0, &bufs.a)?.wait())?;
            }
        }
        Work::RequestExchange(_) if rank < 2 => {
            let peer = 1 - rank;
            for _ in 0..iters {
                let (a, b) = (&bufs.a, &mut bufs.b);
                comm.scope(|s| {
                    let recv = s.irecv(peer, b)?;
                    let send = s.isend(peer, a)?;
                    corecoll::Request::wait_all([recv, send])
                })?;
                std::mem::swap(&mut bufs.a, &mut bufs.b);
            }
        }
        Work::Exchange(_) if rank < 2 => {
            let peer = 1 - rank;
            for _ in 0..iters {
                comm.sendrecv(peer, &bufs.a, peer, &mut bufs.b)?;
                std::mem::swap(&mut bufs.a, &mut bufs.b);
            }
        }
        Work::Barrier => {
            for _ in 0..iters {
                comm.barrier()?;
            }
        }
        Work::Copy(_) => {
            for _ in 0..iters {
                bufs.b.copy_from_slice(black_box(&bufs.a));
                std::mem::swap(black_box(&mut bufs.a), black_box(&mut bufs.b));
            }
        }
        Work::SelfMessage(_) => {
            for _ in 0..iters {
                comm.send(rank, &bufs.a)?;
                comm.recv(rank, &mut bufs.a)?;
            }
        }
        Work::Allreduce(_, alg) => {
            for _ in 0..iters {
                comm.allreduce_with(&mut bufs.f, Sum, alg)?;
                renew(&mut bufs.f);
            }
        }
        Work::Persistent(_) => comm.scope(|s| {
            let mut ar = s.allreduce_init(&mut bufs.f, Sum)?;
            for _ in 0..iters {
                ar.start()?;
                ar.wait()?;
                renew(ar.buffer()?);
            }
            Ok(())
        })?,
        Work::Nonblocking(_) => {
            for _ in 0..iters {
                comm.scope(|s| s.iallreduce(&mut bufs.f, Sum)?.wait())?;
                renew(&mut bufs.f);
            }
        }
        Work::Collective(call) => {
            for _ in 0..iters {
                call(comm, &mut bufs.own, &mut bufs.all, &mut bufs.all2)?;
            }
        }
        Work::PingPong(_)
        | Work::RequestPingPong(_)
        | Work::RequestExchange(_)
        | Work::Exchange(_) => {}
    }
    Ok(())
}

/// Runs `samples` timed loops of `iters` repetitions of `work` in one run of `team` (after a
/// warm-up, with a barrier before each loop) and returns rank 0's time per loop.
fn run_samples(team: &Team, work: Work, samples: usize, iters: u64) -> AnyResult<Vec<Duration>> {
    let mut per_rank = team.run(|comm| -> corecoll::Result<Vec<Duration>> {
        let mut bufs = Buffers::new(work, comm.rank(), comm.size());
        repeat(comm, work, &mut bufs, iters.div_ceil(10).min(1000))?;
        let mut times = Vec::with_capacity(samples);
        for _ in 0..samples {
            comm.barrier()?;
            let t0 = Instant::now();
            repeat(comm, work, &mut bufs, iters)?;
            times.push(t0.elapsed());
        }
        Ok(times)
    })?;
    Ok(per_rank.swap_remove(0)?)
}

/// The repetition count that makes one sample last about `SAMPLE_TARGET`, found by timing
/// growing loops with `time(iters)`.
fn calibrate(mut time: impl FnMut(u64) -> AnyResult<Duration>) -> AnyResult<u64> {
    let mut iters = 1u64;
    loop {
        let t = time(iters)?;
        if t >= SAMPLE_TARGET / 2 || iters >= 1 << 30 {
            let scale = SAMPLE_TARGET.as_secs_f64() / t.as_secs_f64().max(1e-9);
            return Ok(((iters as f64 * scale).round() as u64).max(1));
        }
        let grow = (SAMPLE_TARGET.as_secs_f64() / t.as_secs_f64().max(1e-9)).clamp(2.0, 100.0);
        iters = (iters as f64 * grow).ceil() as u64;
    }
}

/// Seconds per repetition over the samples (median, minimum and 95th percentile among the
/// rest), each sample divided by `iters * per` (`per` = 2 turns a ping-pong round trip into
/// one way).
fn stats(samples: &[Duration], iters: u64, per: f64) -> Summary {
    let s: Vec<f64> = samples
        .iter()
        .map(|d| d.as_secs_f64() / (iters as f64 * per))
        .collect();
    Summary::of(&s).expect("at least one sample")
}

/// Measures `work` on `team`; `per` as in [`stats`].
pub fn measure(team: &Team, work: Work, per: f64) -> AnyResult<Summary> {
    let iters = calibrate(|i| Ok(run_samples(team, work, 1, i)?[0]))?;
    Ok(stats(&run_samples(team, work, SAMPLES, iters)?, iters, per))
}

/// Measures a plain memcpy of `n` bytes (`copy_from_slice`) on the calling thread, swapping
/// source and destination after each copy as the exchange swaps its buffers.
pub fn measure_memcpy(n: usize) -> AnyResult<Summary> {
    let mut src = vec![1u8; n];
    let mut dst = vec![0u8; n];
    let mut time = |iters: u64| {
        let t0 = Instant::now();
        for _ in 0..iters {
            dst.copy_from_slice(black_box(&src));
            std::mem::swap(black_box(&mut src), black_box(&mut dst));
        }
        t0.elapsed()
    };
    time(2);
    let iters = calibrate(|i| Ok(time(i)))?;
    let samples: Vec<Duration> = (0..SAMPLES).map(|_| time(iters)).collect();
    Ok(stats(&samples, iters, 1.0))
}

/// The floor under any message: two plain threads on the cores of ranks 0 and 1 handing a
/// counter back and forth through two cache-line-padded atomics (no library, no payload, no
/// checks). Reported one way, as the ping-pong rows are, so the two can be compared within one
/// run (on a virtual machine this floor itself moves from run to run).
pub fn measure_handoff(cores: &[Option<usize>]) -> AnyResult<Summary> {
    let (iters, samples) = handoff(cores, |time| {
        let iters = calibrate(|i| Ok(time(i)))?;
        Ok((iters, (0..SAMPLES).map(|_| time(iters)).collect::<Vec<_>>()))
    })?;
    Ok(stats(&samples, iters, 2.0))
}

/// Runs `timed` on a thread pinned to rank 0's core while another, pinned to rank 1's, answers
/// the handoff (see [`measure_handoff`]); `timed` gets a clock of `iters` round trips.
fn handoff<R: Send>(
    cores: &[Option<usize>],
    timed: impl FnOnce(&mut dyn FnMut(u64) -> Duration) -> AnyResult<R> + Send,
) -> AnyResult<R> {
    use crossbeam_utils::CachePadded;
    use std::sync::atomic::{AtomicU64, Ordering::*};
    let pin = |r: usize| {
        if let Some(Some(c)) = cores.get(r) {
            core_affinity::set_for_current(core_affinity::CoreId { id: *c });
        }
    };
    let (ping, pong) = (
        CachePadded::new(AtomicU64::new(0)),
        CachePadded::new(AtomicU64::new(0)),
    );
    let rounds = |from: u64, iters: u64| {
        let t0 = Instant::now();
        for i in from + 1..=from + iters {
            ping.store(i, Release);
            while pong.load(Acquire) != i {
                std::hint::spin_loop();
            }
        }
        t0.elapsed()
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(1);
            let mut i = 0;
            loop {
                let v = ping.load(Acquire);
                if v == u64::MAX {
                    return;
                }
                if v != i {
                    i = v;
                    pong.store(i, Release);
                }
                std::hint::spin_loop();
            }
        });
        // The timing side on a thread of its own too, so the caller's affinity is untouched.
        let timer = s.spawn(|| {
            pin(0);
            let mut next = 0u64;
            let mut time = |iters: u64| {
                let t = rounds(next, iters);
                next += iters;
                t
            };
            time(1000);
            let out = timed(&mut time).map_err(|e| e.to_string());
            ping.store(u64::MAX, Release);
            out
        });
        let out = timer.join().map_err(|_| "the handoff timer panicked")?;
        Ok(out?)
    })
}

/// Measures every one of `works` on `team` (ranks 0 and 1 on the cores of the floor) and the
/// handoff floor in `rounds` interleaved rounds: each round takes one sample of every method
/// in turn, so that all of them see the same changes of the machine's load, and ratios of one
/// round compare like with like. Each method's seconds per repetition, round by round (`per`
/// as in [`stats`]); the floor's (one way) last.
pub fn measure_interleaved(
    team: &Team,
    works: &[(Work, f64)],
    rounds: usize,
) -> AnyResult<Vec<Vec<f64>>> {
    let cores = team.cores();
    let mut iters = Vec::with_capacity(works.len());
    for &(work, _) in works {
        iters.push(calibrate(|i| Ok(run_samples(team, work, 1, i)?[0]))?);
    }
    let floor_iters = handoff(cores, |time| calibrate(|i| Ok(time(i))))?;
    let mut out = vec![Vec::with_capacity(rounds); works.len() + 1];
    for _ in 0..rounds {
        for (k, &(work, per)) in works.iter().enumerate() {
            let t = run_samples(team, work, 1, iters[k])?[0];
            out[k].push(t.as_secs_f64() / (iters[k] as f64 * per));
        }
        let t = handoff(cores, |time| Ok(time(floor_iters)))?;
        out[works.len()].push(t.as_secs_f64() / (floor_iters as f64 * 2.0));
    }
    Ok(out)
}
