//! The timing method, shared by every kernel (corecoll's collectives and the baselines): all
//! ranks run inside one `Team::run`; warm-up calls first; then each timed iteration starts with
//! a barrier, and its time is max(end) − min(start) over the ranks, read from one monotonic
//! clock that every thread shares (an `Instant` taken before the run), so no clock needs to be
//! synchronised (ReproMPI's window method without the window, as the threads share a clock).
//! Under `--touch` every rank writes its whole input before each call (warm-up and timed),
//! before the barrier: outside the timed window, and timed apart. After the timed loop each
//! rank may hand over one more call's output for the check.

use crate::domain::Cache;
use corecoll::{Comm, Team};
use std::any::Any;
use std::time::{Duration, Instant};

/// One rank's side of a benchmarked operation, built on that rank's thread (so its buffers
/// are first touched there).
pub trait Kernel {
    /// One timed call.
    fn call(&mut self) -> Result<(), String>;

    /// Before each call: under [`Cache::Touch`], writes this rank's whole input of the next
    /// call, as an application would; nothing in the other modes.
    fn touch(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// After the timed loop: loads the check's inputs, makes one call and returns this
    /// rank's output (a `Vec` of the element type) for the harness to compare with its
    /// reference; `None` when there is nothing to check.
    fn check(&mut self) -> Result<Option<Box<dyn Any + Send>>, String> {
        Ok(None)
    }
}

/// How many iterations to run.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Warm-up calls (the first one included); `None`: as many as fit in a tenth of `budget`, at
    /// least 2 (so that the iteration count does not rest on the first call alone, which pays
    /// for page faults and wake-ups) and at most 1000.
    pub warmup: Option<usize>,
    /// Timed iterations; `None`: as many as fit in `budget`, within `min_iters..=max_iters`.
    pub iters: Option<usize>,
    /// Time for the timed iterations when `iters` is `None`.
    pub budget: Duration,
    /// Fewest timed iterations when `iters` is `None`.
    pub min_iters: usize,
    /// Most timed iterations when `iters` is `None`.
    pub max_iters: usize,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            warmup: None,
            iters: None,
            budget: Duration::from_millis(100),
            min_iters: 3,
            max_iters: 100_000,
        }
    }
}

impl Timing {
    /// Warm-up calls (the first included) after a first call of `first` seconds: `warmup`,
    /// or as many as fit in a tenth of `budget`, 2 to 1000.
    pub fn warmups(&self, first: f64) -> u64 {
        self.warmup.map_or_else(
            || ((self.budget.as_secs_f64() / 10.0 / first.max(1e-9)) as u64).clamp(2, 1000),
            |w| w as u64,
        )
    }

    /// Timed iterations after warm-up calls of `per_call` seconds: `iters`, or as many as
    /// fit in `budget`, within `min_iters..=max_iters`.
    pub fn iterations(&self, per_call: f64) -> u64 {
        self.iters.map_or_else(
            || {
                ((self.budget.as_secs_f64() / per_call.max(1e-9)) as usize)
                    .clamp(self.min_iters.max(1), self.max_iters.max(1)) as u64
            },
            |i| i as u64,
        )
    }
}

/// What one cell's run gives back.
#[derive(Debug)]
pub struct Measured {
    /// Per-iteration times in seconds: max(end) − min(start) over the ranks.
    pub times: Vec<f64>,
    /// Per-iteration time of the ranks' writes of their inputs before the call, in seconds:
    /// the slowest rank's (writes that [`Kernel::touch`] makes only under [`Cache::Touch`];
    /// empty when a harness does not time them).
    pub touch: Vec<f64>,
    /// Context switches per timed iteration (the barrier or fork before the call included),
    /// of all the threads or processes that ran it together: how often a rank gave up its
    /// core, voluntarily (to wait) or not (its time slice ran out). `None` where not counted.
    pub switches: Option<f64>,
    /// Each rank's output of the check call, in rank order (empty when the kernels have no
    /// check).
    pub outputs: Vec<Box<dyn Any + Send>>,
    /// What corecoll's `Auto` chose in the timed calls (`Comm::auto_choice` of rank 0 after
    /// the last one), if it chose.
    pub auto_choice: Option<&'static str>,
}

/// The timed loop of one rank: its (start, end) pairs in nanoseconds since `origin`, its
/// touches' durations in nanoseconds, its context switches, its check output and what `Auto`
/// chose in its last timed call.
struct RankTimes {
    stamps: Vec<(u64, u64)>,
    touches: Vec<u64>,
    /// Context switches of the rank's thread in the timed loop.
    switched: u64,
    output: Option<Box<dyn Any + Send>>,
    chose: Option<&'static str>,
}

/// A rank's [`RankTimes`], or why it failed.
type RankResult = Result<RankTimes, String>;

/// Runs `setup`'s kernel on every rank of `team` with the timing method of the module doc.
/// `setup` is called on each rank's thread with its communicator; `check` says whether to make
/// the check call after the timed loop. Any rank's error (or panic) fails the cell with the
/// first message in rank order.
pub fn measure<S>(team: &Team, timing: &Timing, check: bool, setup: S) -> Result<Measured, String>
where
    S: for<'c> Fn(&'c Comm) -> Result<Box<dyn Kernel + 'c>, String> + Sync,
{
    let origin = Instant::now();
    let ns = move || origin.elapsed().as_nanos() as u64;
    let results: Vec<RankResult> = team
        .run(|comm| -> RankResult {
            let e = |e: corecoll::Error| e.to_string();
            let mut kernel = setup(comm)?;
            // Warm-up: every rank times one call, and the slowest rank's time decides how
            // many more (a rank with no work in a call, such as the root of the `limit`
            // broadcast, would otherwise ask for far too many); every rank computes the same
            // count from the same maximum, so the collectives match.
            kernel.touch()?;
            comm.barrier().map_err(e)?;
            let t0 = Instant::now();
            kernel.call()?;
            let mut first = [t0.elapsed().as_secs_f64()];
            comm.allreduce(&mut first, corecoll::op::Max).map_err(e)?;
            let first = first[0];
            let n = timing.warmups(first);
            let t0 = Instant::now();
            for _ in 1..n {
                kernel.touch()?;
                kernel.call()?;
            }
            let mut per_call = [if n > 1 {
                t0.elapsed().as_secs_f64() / (n - 1) as f64
            } else {
                first
            }];
            comm.allreduce(&mut per_call, corecoll::op::Max)
                .map_err(e)?;
            let per_call = per_call[0];
            let iters = timing.iterations(per_call);
            let mut stamps = Vec::with_capacity(iters as usize);
            let mut touches = Vec::with_capacity(iters as usize);
            let switched = switches(Who::Thread);
            for _ in 0..iters {
                let before = ns();
                kernel.touch()?;
                touches.push(ns() - before);
                comm.barrier().map_err(e)?;
                let start = ns();
                kernel.call()?;
                stamps.push((start, ns()));
            }
            let switched = switches(Who::Thread).saturating_sub(switched);
            let chose = corecoll::unstable::auto_choice(comm);
            let output = if check { kernel.check()? } else { None };
            Ok(RankTimes {
                stamps,
                touches,
                switched,
                output,
                chose,
            })
        })
        .map_err(|e| e.to_string())?;
    let mut per_rank = Vec::with_capacity(results.len());
    for (r, res) in results.into_iter().enumerate() {
        per_rank.push(res.map_err(|e| format!("rank {r}: {e}"))?);
    }
    let iters = per_rank.first().map_or(0, |t| t.stamps.len());
    let times = (0..iters)
        .map(|i| {
            let start = per_rank.iter().map(|t| t.stamps[i].0).min().unwrap_or(0);
            let end = per_rank.iter().map(|t| t.stamps[i].1).max().unwrap_or(0);
            end.saturating_sub(start) as f64 * 1e-9
        })
        .collect();
    let touch = (0..iters)
        .map(|i| {
            let slowest = per_rank.iter().map(|t| t.touches[i]).max().unwrap_or(0);
            slowest as f64 * 1e-9
        })
        .collect();
    let auto_choice = per_rank.first().and_then(|t| t.chose);
    let switched: u64 = per_rank.iter().map(|t| t.switched).sum();
    let outputs = per_rank.into_iter().filter_map(|t| t.output).collect();
    Ok(Measured {
        times,
        touch,
        switches: per_iteration(switched, iters),
        outputs,
        auto_choice,
    })
}

/// Writes a buffer's elements with their fill values.
type Refill<T> = Box<dyn Fn(&mut [T]) + Send + Sync>;

/// A benchmarked operation whose work runs on threads of its own (an OpenMP region's, a
/// rayon pool's), driven from one thread: each call starts when the driver makes it and ends
/// when it returns, having forked and joined the workers.
pub trait Driven {
    /// Before each call: under [`Cache::Touch`], every worker writes its whole input, and
    /// this returns the slowest one's time in seconds; nothing (and 0) in the other modes.
    fn touch(&mut self) -> Result<f64, String>;

    /// One timed call.
    fn call(&mut self) -> Result<(), String>;

    /// After the timed loop: loads the check's inputs, makes one call and returns every
    /// rank's output (a `Vec` of the element type each), in rank order.
    fn check(&mut self) -> Result<Vec<Box<dyn Any + Send>>, String>;
}

/// Measures `kernel` from this thread with the method of [`measure`] where a call is one
/// fork and join: warm-up calls, then timed calls, each from the driver's start to its
/// return (a fork already starts every worker at once, so there is no barrier before it and
/// the time is the driver's). `check` says whether to make the check call afterwards.
pub fn measure_driven(
    timing: &Timing,
    check: bool,
    kernel: &mut dyn Driven,
) -> Result<Measured, String> {
    kernel.touch()?;
    let t0 = Instant::now();
    kernel.call()?;
    let first = t0.elapsed().as_secs_f64();
    let n = timing.warmups(first);
    let mut calls = Duration::ZERO;
    for _ in 1..n {
        kernel.touch()?;
        let t0 = Instant::now();
        kernel.call()?;
        calls += t0.elapsed();
    }
    let per_call = if n > 1 {
        calls.as_secs_f64() / (n - 1) as f64
    } else {
        first
    };
    let iters = timing.iterations(per_call) as usize;
    let (mut times, mut touch) = (Vec::with_capacity(iters), Vec::with_capacity(iters));
    let mut switched = 0;
    for _ in 0..iters {
        touch.push(kernel.touch()?);
        let before = switches(Who::Process);
        let t0 = Instant::now();
        kernel.call()?;
        times.push(t0.elapsed().as_secs_f64());
        switched += switches(Who::Process).saturating_sub(before);
    }
    let outputs = if check { kernel.check()? } else { Vec::new() };
    Ok(Measured {
        times,
        touch,
        switches: per_iteration(switched, iters),
        outputs,
        auto_choice: None,
    })
}

/// Whose context switches [`switches`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// The calling thread's.
    Thread,
    /// Every thread's of this process.
    Process,
}

/// Context switches so far, voluntary and not, of `who` (getrusage(2): `ru_nvcsw +
/// ru_nivcsw`); 0 where the system does not say.
pub fn switches(who: Who) -> u64 {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let whom = match who {
        Who::Thread => libc::RUSAGE_THREAD,
        Who::Process => libc::RUSAGE_SELF,
    };
    // SAFETY: getrusage(2) writes only the `rusage` it is given, which lives in this frame.
    if unsafe { libc::getrusage(whom, &mut ru) } != 0 {
        return 0;
    }
    (ru.ru_nvcsw + ru.ru_nivcsw).max(0) as u64
}

/// `switched` context switches over `iters` iterations, per iteration (`None` for none).
pub fn per_iteration(switched: u64, iters: usize) -> Option<f64> {
    (iters > 0).then(|| switched as f64 / iters as f64)
}

/// The buffers of one rank's kernel: one buffer reused by every call (warm caches, and
/// `--touch`, where [`Pool::touch`] rewrites it before each call), or with `--cold` a ring of
/// buffers large enough together that a buffer has left the caches by the time it comes round
/// again.
pub struct Pool<T> {
    data: Vec<T>,
    /// Writes a buffer's elements as `new` filled them (element `i` with `fill(i)`): one
    /// dynamic call per buffer around a loop compiled for the fill, so that `touch` writes
    /// at the speed of an application's loop.
    refill: Refill<T>,
    cache: Cache,
    /// Where buffer 0 starts in `data`: the first element on a 64-byte boundary.
    first: usize,
    len: usize,
    stride: usize,
    slots: usize,
    at: usize,
}

/// Bytes that the buffers of all ranks together should span under `--cold`: the size in
/// `CORECOLL_COLD_BYTES` if it is set and parses (`64MiB`, `1048576`), else twice the
/// last-level cache (read from sysfs; 32 MiB if unreadable). The unit tests use 1 MiB, which
/// is enough buffers to check that every one of them is used and quick to fill in a debug
/// build.
pub fn cold_bytes() -> usize {
    if cfg!(test) {
        return 1 << 20;
    }
    std::env::var("CORECOLL_COLD_BYTES")
        .ok()
        .and_then(|v| crate::domain::parse_size(v.trim()).ok())
        .unwrap_or_else(|| 2 * llc_bytes().unwrap_or(32 << 20))
}

/// The size of CPU 0's largest cache, from sysfs.
fn llc_bytes() -> Option<usize> {
    (0..8)
        .filter_map(|i| {
            let path = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
            crate::domain::parse_size(std::fs::read_to_string(path).ok()?.trim()).ok()
        })
        .max()
}

impl<T: Copy> Pool<T> {
    /// A pool of buffers of `len` elements, each filled by `fill(i)`; one buffer unless `cache`
    /// is [`Cache::Cold`], then enough that `ranks` ranks' pools together span [`cold_bytes`]
    /// (at least two buffers; one when `len` is 0, which gains nothing from a ring). Every buffer starts on a 64-byte boundary (a cache line here), as
    /// OSU's benchmarks align theirs, so that how the allocator happened to place a buffer
    /// cannot make two ranks share a line where an algorithm splits the vector.
    pub fn new(
        len: usize,
        cache: Cache,
        ranks: usize,
        fill: impl Fn(usize) -> T + Send + Sync + 'static,
    ) -> Pool<T> {
        let elem = size_of::<T>().max(1);
        let line = 64usize.div_ceil(elem);
        let stride = len.div_ceil(line).max(1) * line;
        let slots = if cache == Cache::Cold && len > 0 {
            (cold_bytes() / (ranks.max(1) * stride * elem)).max(2)
        } else {
            1
        };
        let mut data = Vec::with_capacity(slots * stride + line);
        let misalign = data.as_ptr() as usize % 64;
        let first = if misalign.is_multiple_of(elem) {
            (64 - misalign) % 64 / elem
        } else {
            0
        };
        data.extend((0..first).map(|_| fill(0)));
        for _ in 0..slots {
            data.extend((0..stride).map(|i| fill(i.min(len.saturating_sub(1)))));
        }
        Pool {
            data,
            refill: Box::new(move |buf: &mut [T]| {
                for (i, x) in buf.iter_mut().enumerate() {
                    *x = fill(i);
                }
            }),
            cache,
            first,
            len,
            stride,
            slots,
            at: 0,
        }
    }

    /// The next buffer (the same one when warm).
    pub fn next_buffer(&mut self) -> &mut [T] {
        self.at = (self.at + 1) % self.slots;
        self.current()
    }

    /// Under [`Cache::Touch`], writes the whole buffer that the next `next_buffer` returns as
    /// `new` filled it (a rank's application writing its input); nothing otherwise.
    pub fn touch(&mut self) {
        if self.cache == Cache::Touch {
            let s = self.first + (self.at + 1) % self.slots * self.stride;
            (self.refill)(&mut self.data[s..s + self.len]);
        }
    }

    /// The buffer of the last `next_buffer` (the first one before any).
    pub fn current(&mut self) -> &mut [T] {
        let s = self.first + self.at * self.stride;
        &mut self.data[s..s + self.len]
    }

    /// Where the pool's buffers lie, for a kernel whose ranks reach each other's buffers
    /// through raw pointers (the `limit` baseline). The pointer comes from one borrow of the
    /// storage and stays valid while the pool lives (moving the pool does not move its
    /// storage) as long as `current` and `next_buffer` are not called again, as each of those
    /// borrows the whole storage anew.
    pub fn layout(&mut self) -> PoolLayout<T> {
        PoolLayout {
            base: self.data[self.first..].as_mut_ptr(),
            stride: self.stride,
            slots: self.slots,
            len: self.len,
        }
    }
}

/// The layout of a [`Pool`]'s storage: buffer `i` (for `i < slots`) holds the `len` elements
/// from `base + i·stride`, and the `k`-th call of [`Pool::next_buffer`] on a new pool returns buffer
/// `k % slots` (so ranks that advance in lockstep agree on the buffer of every call).
#[derive(Debug)]
pub struct PoolLayout<T> {
    /// The first element of buffer 0.
    pub base: *mut T,
    /// Elements from the start of one buffer to the start of the next.
    pub stride: usize,
    /// Buffers (1 when warm).
    pub slots: usize,
    /// Elements of each buffer.
    pub len: usize,
}

impl<T> Clone for PoolLayout<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for PoolLayout<T> {}

impl<T> PoolLayout<T> {
    /// The first element of the buffer of the `k`-th call (see the type's doc).
    pub fn buffer(&self, k: usize) -> *mut T {
        // In bounds of the storage: (k % slots) · stride < slots · stride elements.
        self.base.wrapping_add((k % self.slots) * self.stride)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_buffers_are_aligned_and_cycle() {
        for cache in [Cache::Warm, Cache::Cold, Cache::Touch] {
            let cold = cache == Cache::Cold;
            let mut pool = Pool::new(100, cache, 64, |i| i as u32);
            let slots = if cold {
                2.max(cold_bytes() / (64 * 448))
            } else {
                1
            };
            for k in 0..3 {
                let b = pool.next_buffer();
                assert_eq!(b.len(), 100);
                assert_eq!(b.as_ptr() as usize % 64, 0, "call {k}");
                assert_eq!((b[0], b[99]), (0, 99));
            }
            let layout = pool.layout();
            assert_eq!(layout.base as usize % 64, 0);
            assert_eq!(layout.slots, slots);
        }
        // Under --touch the next buffer is rewritten as new filled it; not otherwise.
        for cache in [Cache::Warm, Cache::Touch] {
            let mut pool = Pool::new(5, cache, 2, |i| i as u8);
            pool.current().fill(9);
            pool.touch();
            let want: &[u8] = if cache == Cache::Touch {
                &[0, 1, 2, 3, 4]
            } else {
                &[9; 5]
            };
            assert_eq!(pool.next_buffer(), want);
        }
        let mut bytes = Pool::new(3, Cache::Warm, 1, |_| 7u8);
        assert_eq!(bytes.current(), &[7, 7, 7]);
        assert_eq!(bytes.current().as_ptr() as usize % 64, 0);
    }
}
