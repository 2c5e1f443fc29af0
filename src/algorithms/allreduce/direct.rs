//! The shared-memory direct allreduce (shm only): single-copy, two synchronisations.
//!
//! Every rank publishes its input and output buffers on the communicator's board
//! (`shm::board`), and once all have arrived, rank `i` reduces slice `i` of the vector
//! (`block_start(n, p, i)..block_start(n, p, i + 1)`), reading the p inputs straight from the
//! other ranks' memory in rank order (x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}), and writes the result straight
//! into all p outputs. Each input byte is read once and each output byte written once: 2pS
//! bytes of memory traffic for p ranks of S bytes, the lower bound, which only a shared address
//! space allows (DESIGN.md, "Shared-memory direct"; the idea of XHC in Open MPI and of MPICH's
//! shared-memory collectives, which reduce in place across processes' mapped buffers).
//!
//! The slice is processed in chunks of 4 KiB (`shm::board::fold_chunk`): the chunk is accumulated (input 0
//! copied, then `fold_right` with inputs 1 … p−1), then copied into the p outputs while it is
//! still in L1. The accumulator is the rank's own output chunk when that cannot clobber an
//! operand still to be read (out of place, or in place on rank 0), else a chunk-sized scratch
//! buffer. Every chunk is therefore combined as ((x₀ ⊙ x₁) ⊙ x₂) ⊙ …, exactly the sequential
//! left fold, so floating-point results are the sequential ones, on every rank, every run.
//!
//! Ranks that pass different lengths or element types all see it on the board after phase 1;
//! all of them then return `Error::Mismatch` without touching any buffer.

use super::block_start;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::shm::Member;
use crate::shm::{fold_chunk, Session};
use std::ptr;

/// Direct allreduce: the result of every rank's input (`send` if given, else `buf`) lands in
/// `buf` on every rank.
pub(crate) fn direct<T: Elem, O: Op<T>>(
    comm: &Member,
    send: Option<&[T]>,
    buf: &mut [T],
    op: &O,
    tag: Tag,
) -> Result<()> {
    let (p, me, n) = (comm.size(), comm.rank(), buf.len());
    // SAFETY: `send` and `buf` stay borrowed for this whole function and are not used
    // through their references again; the session ends before it returns.
    let Some(session) = (unsafe { open(comm, send, buf, tag, "direct")? }) else {
        return Ok(());
    };
    // SAFETY: the session passed phase 1 and is open; every published call has `n` elements
    // of `T` (checked by `open`).
    unsafe { reduce_slice(&session, p, me, n, send.is_some(), op) };
    session.finish(true)
}

/// The start of a shared-memory allreduce (`Direct`, `HierarchicalDirect`): checks that
/// `send` (if given) is as long as `buf`, publishes both on the communicator's board as call
/// `tag`, waits for phase 1 and checks that every rank published the same length and element
/// type (`name`, "direct" say, names the algorithm in the mismatch). `Ok(None)` on a
/// communicator of one rank, after copying `send` into `buf`: there is nothing to share.
///
/// # Safety
///
/// Until the returned session ends (finished, or dropped while unwinding), `send` and `buf`
/// must stay borrowed and be used only through the published pointers, as the collective
/// prescribes, not through the references. `Comm` is not `Sync`, so the caller is the only
/// thread acting as this rank.
pub(crate) unsafe fn open<'a, T: Elem>(
    comm: &'a Member,
    send: Option<&[T]>,
    buf: &mut [T],
    tag: Tag,
    name: &str,
) -> Result<Option<Session<'a>>> {
    comm.enter("allreduce")?;
    let (me, n) = (comm.rank(), buf.len());
    if let Some(s) = send {
        if s.len() != n {
            return Err(comm.fail(Error::InvalidArgument {
                rank: me,
                op: "allreduce",
                what: format!("send has {} elements but recv has {n}", s.len()),
            }));
        }
    }
    if comm.size() == 1 {
        if let Some(s) = send {
            crate::copy::copy_slice(&mut *buf, s);
        }
        return Ok(None);
    }
    let out: *mut T = buf.as_mut_ptr();
    let input: *const T = send.map_or(out.cast_const(), <[T]>::as_ptr);
    // SAFETY: `input` and `out` cover `n` elements of `T` (`buf`, and `send` whose length was
    // checked), which by the caller's promise stay borrowed and untouched through their
    // references until the session ends (finished, withdrawn, or dropped while unwinding,
    // which waits as finishing does). A previous call on the board ended before it returned.
    let session = unsafe {
        comm.shared().board.open(
            comm,
            tag,
            input,
            out,
            n,
            "allreduce",
            &format!("{name} allreduce"),
        )?
    };
    Ok(Some(session))
}

/// Reduces this rank's slice of the vector from every published input into every published
/// output, chunk by chunk.
///
/// # Safety
///
/// `session` must have passed phase 1 and not be finished, and every rank's call must have
/// `n` elements of `T`. The caller is rank `me`, and `out_of_place` says whether the calls have
/// `input != output`.
unsafe fn reduce_slice<T: Elem, O: Op<T>>(
    session: &Session<'_>,
    p: usize,
    me: usize,
    n: usize,
    out_of_place: bool,
    op: &O,
) {
    let (lo, hi) = (block_start(n, p, me), block_start(n, p, me + 1));
    if lo == hi {
        return;
    }
    #[cfg(loom)]
    for owner in 0..p {
        session.touch(owner);
    }
    let chunk = fold_chunk::<T>();
    let outputs = |k: usize| session.call(k).output.cast::<T>();
    let ranks: Vec<usize> = (0..p).collect();
    let mut scratch: Vec<T> = Vec::new();
    let mut start = lo;
    while start < hi {
        let len = chunk.min(hi - start);
        // SAFETY: for the whole chunk, by phase 1, every rank's buffers are valid for `n`
        // elements and, until this rank stores `done`, only rank `me` reads or writes the
        // elements `lo..hi` of any of them, so every slice below covers memory nobody else
        // accesses meanwhile; the result is written into an output only after every input
        // of the chunk was read.
        unsafe {
            let acc = session.fold_own(&ranks, me, out_of_place, start, len, &mut scratch, op);
            for j in 0..p {
                let dst = outputs(j).add(start);
                if dst.cast_const() != acc {
                    ptr::copy_nonoverlapping(acc, dst, len);
                }
            }
        }
        start += len;
    }
}

#[cfg(all(test, loom))]
mod loom;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::direct;
    use crate::error::Error;
    use crate::mailbox::Kind;
    use crate::op::{self, Op};
    use crate::shm::testing::{spmd, spmd_with};
    use crate::shm::Member;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// Ranks whose waits time out, so that a hang fails the test instead of stalling it.
    fn ranks<R: Send>(p: usize, body: impl Fn(&Member) -> R + Sync) -> crate::Result<Vec<R>> {
        spmd_with(p, Duration::from_secs(30), body)
    }

    /// The direct allreduce as the allreduce calls it, but with `send` (out of place when
    /// given) and without the agreement check, so that the board's own checks are tested.
    fn call<T: crate::mailbox::Elem>(
        m: &Member,
        send: Option<&[T]>,
        buf: &mut [T],
        op: impl Op<T>,
    ) -> crate::Result<()> {
        m.enter("allreduce")?;
        let tag = m.next_tag(Kind::Coll(crate::collective::Collective::Allreduce));
        direct(m, send, buf, &op, tag)
    }

    /// splitmix64 of `(rank, index, salt)`.
    fn mix(r: usize, i: usize, salt: u64) -> u64 {
        let mut z = (r as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add((i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9))
            .wrapping_add(salt.wrapping_mul(0x94d0_49bb_1331_11eb));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A float of varied sign and magnitude, so that the order of additions shows.
    fn float(r: usize, i: usize) -> f64 {
        let h = mix(r, i, 7);
        let m = (h >> 11) as f64 / (1u64 << 53) as f64;
        let sign = if h & 1 == 0 { 1.0 } else { -1.0 };
        sign * m * 10f64.powi((h >> 1) as i32 % 7 - 3)
    }

    /// Row-major 2 × 2 product with wrapping arithmetic.
    fn matmul(x: [u32; 4], y: [u32; 4]) -> [u32; 4] {
        let f = |a: u32, b: u32, c: u32, d: u32| a.wrapping_mul(b).wrapping_add(c.wrapping_mul(d));
        [
            f(x[0], y[0], x[1], y[2]),
            f(x[0], y[1], x[1], y[3]),
            f(x[2], y[0], x[3], y[2]),
            f(x[2], y[1], x[3], y[3]),
        ]
    }

    fn matrix(r: usize, i: usize) -> [u32; 4] {
        let h = mix(r, i, 11);
        [0, 1, 2, 3].map(|k| ((h >> (8 * k)) & 7) as u32)
    }

    /// Adjacent spans: (a, b) ⊙ (b, c) = (a, c); anything else is an ordering bug.
    fn span_op() -> impl Op<(u32, u32)> + Copy {
        op::non_commutative(|a: &(u32, u32), b: &(u32, u32)| {
            assert_eq!(a.1, b.0, "spans combined out of order");
            (a.0, b.1)
        })
    }

    /// Per count: the expected u64 sums, f64 sums (sequential left fold) and matrix products.
    struct Expected {
        n: usize,
        sums: Vec<u64>,
        floats: Vec<u64>,
        products: Vec<[u32; 4]>,
    }

    fn expected(p: usize, n: usize) -> Expected {
        let fold = |i: usize| {
            let mut s = 0u64;
            let mut f = float(0, i);
            let mut m = matrix(0, i);
            for r in 0..p {
                s = s.wrapping_add(mix(r, i, 3));
                if r > 0 {
                    f += float(r, i);
                    m = matmul(m, matrix(r, i));
                }
            }
            (s, f.to_bits(), m)
        };
        let mut e = Expected {
            n,
            sums: Vec::with_capacity(n),
            floats: Vec::with_capacity(n),
            products: Vec::with_capacity(n),
        };
        for i in 0..n {
            let (s, f, m) = fold(i);
            e.sums.push(s);
            e.floats.push(f);
            e.products.push(m);
        }
        e
    }

    /// Four calls per count on one communicator (the board reused): u64 sum in place, f64 sum
    /// out of place (bit-identical to the sequential fold, input untouched), spans in place and
    /// matrix products out of place.
    fn sweep(p: usize) {
        let mut counts = vec![0, 1, 2, p - 1, p + 1, 1000, 65_537];
        counts.sort_unstable();
        counts.dedup();
        let all: Vec<Expected> = counts.iter().map(|&n| expected(p, n)).collect();
        let results = ranks(p, |m| {
            let r = m.rank();
            for e in &all {
                let n = e.n;
                let mut v: Vec<u64> = (0..n).map(|i| mix(r, i, 3)).collect();
                call(m, None, &mut v, op::Sum).unwrap();
                assert!(v == e.sums, "u64 sum, p = {p}, n = {n}, rank {r}");

                let send: Vec<f64> = (0..n).map(|i| float(r, i)).collect();
                let mut out = vec![f64::NAN; n];
                call(m, Some(&send), &mut out, op::Sum).unwrap();
                assert!(out.iter().map(|x| x.to_bits()).eq(e.floats.iter().copied()));
                assert!(send.iter().enumerate().all(|(i, x)| *x == float(r, i)));

                let mut spans = vec![(r as u32, r as u32 + 1); n];
                call(m, None, &mut spans, span_op()).unwrap();
                assert!(spans.iter().all(|&s| s == (0, p as u32)), "spans, p = {p}");

                let send: Vec<[u32; 4]> = (0..n).map(|i| matrix(r, i)).collect();
                let mut out = vec![[9; 4]; n];
                let mat = op::non_commutative(|a: &[u32; 4], b: &[u32; 4]| matmul(*a, *b));
                call(m, Some(&send), &mut out, mat).unwrap();
                assert!(out == e.products, "matrices, p = {p}, n = {n}");
            }
        })
        .unwrap();
        assert_eq!(results.len(), p);
    }

    #[test]
    fn matches_the_sequential_fold_small_teams() {
        for p in 1..=9 {
            sweep(p);
        }
    }

    #[test]
    fn matches_the_sequential_fold_larger_teams() {
        for p in 10..=17 {
            sweep(p);
        }
    }

    #[test]
    fn matches_the_sequential_fold_oversubscribed() {
        for p in [31, 32, 33] {
            sweep(p);
        }
    }

    /// Rank 1 passes one element more: every rank fails with a mismatch, and no buffer (of
    /// either length) is touched.
    #[test]
    fn length_mismatch_fails_everywhere() {
        let out = ranks(3, |m| {
            let r = m.rank();
            let n = if r == 1 { 11 } else { 10 };
            let send = vec![r as u64 + 1; n];
            let mut buf = vec![100 + r as u64; n];
            let res = call(m, Some(&send), &mut buf, op::Sum);
            assert!(buf.iter().all(|&x| x == 100 + r as u64), "buffer touched");
            res
        })
        .unwrap();
        for res in out {
            assert!(matches!(res, Err(Error::Mismatch { .. })), "{res:?}");
        }
    }

    /// One rank panics before the call (or returns without it): the others return `Err`
    /// promptly, long before the team's timeout.
    #[test]
    fn a_failing_rank_ends_the_call_promptly() {
        for p in [2, 5, 33] {
            for panics in [true, false] {
                let errs = Mutex::new(Vec::new());
                let started = Instant::now();
                let res = ranks(p, |m| {
                    if m.rank() == p - 1 {
                        std::thread::sleep(Duration::from_millis(20));
                        assert!(!panics, "planned panic");
                        return;
                    }
                    let mut v = vec![1u32; 100];
                    let e = call(m, None, &mut v, op::Sum).unwrap_err();
                    errs.lock().unwrap().push(e);
                });
                assert!(started.elapsed() < Duration::from_secs(10));
                assert_eq!(res.is_err(), panics);
                let errs = errs.into_inner().unwrap();
                assert_eq!(errs.len(), p - 1);
                for e in errs {
                    let ok = match e {
                        Error::Aborted { .. } => true,
                        Error::PeerExited { peer, .. } => !panics && peer == p - 1,
                        _ => false,
                    };
                    assert!(ok, "{e:?}");
                }
            }
        }
    }

    /// An operator that panics on one rank in the middle of its slice: that rank waits for the
    /// others before unwinding (its buffer stays valid while they write into it), and every
    /// other rank returns `Err`.
    #[test]
    fn a_panicking_operator_fails_the_call_everywhere() {
        let p = 3;
        let errs = Mutex::new(Vec::new());
        let res = ranks(p, |m| {
            let r = m.rank();
            let bomb = op::non_commutative(move |a: &u64, b: &u64| {
                assert!(!(r == 1 && *b == 15_000), "planned panic");
                a + b
            });
            let mut v: Vec<u64> = (0..30_000).map(|i| if r == 2 { i } else { 0 }).collect();
            let e = call(m, None, &mut v, bomb);
            errs.lock().unwrap().push(e.is_err());
        });
        assert!(res.is_err());
        assert_eq!(errs.into_inner().unwrap(), vec![true; p - 1]);
    }

    /// A rank that arrives too late: the waiting rank times out, the late one finds the run
    /// failed, and neither touches the other's buffer.
    #[test]
    fn a_late_rank_times_out() {
        let out = spmd_with(2, Duration::from_millis(100), |m| {
            if m.rank() == 1 {
                std::thread::sleep(Duration::from_millis(400));
            }
            let mut v = vec![m.rank() as u8 + 1; 64];
            let res = call(m, None, &mut v, op::Sum);
            assert!(v.iter().all(|&x| x == m.rank() as u8 + 1));
            res
        })
        .unwrap();
        assert!(matches!(out[0], Err(Error::Timeout { .. })), "{:?}", out[0]);
        assert!(matches!(out[1], Err(Error::Aborted { .. })), "{:?}", out[1]);
    }

    /// Small calls in place and out of place on three ranks, with a mismatch after them: the
    /// unsafe paths, small enough to run under Miri
    /// (`cargo +nightly miri test --lib direct::tests::small_calls_for_miri`).
    #[test]
    fn small_calls_for_miri() {
        let out = spmd(3, |m| {
            let r = m.rank() as u64;
            let mut v: Vec<u64> = (0..7).map(|i| r * 10 + i).collect();
            call(m, None, &mut v, op::Sum)?;
            let send = v.clone();
            let mut w = vec![0u64; 7];
            call(m, Some(&send), &mut w, op::Sum)?;
            let mut s = vec![(r as u32, r as u32 + 1); 4];
            call(m, None, &mut s, span_op())?;
            let mut bad = vec![0u8; 2 + m.rank() % 2];
            let e = call(m, None, &mut bad, op::Sum).unwrap_err();
            Ok::<_, Error>((w, s, e))
        });
        for res in out {
            let (w, s, e) = res.unwrap();
            assert!(w
                .iter()
                .enumerate()
                .all(|(i, &x)| x == 3 * (30 + 3 * i as u64)));
            assert!(s.iter().all(|&x| x == (0, 3)));
            assert!(matches!(e, Error::Mismatch { .. }), "{e:?}");
        }
    }
}
