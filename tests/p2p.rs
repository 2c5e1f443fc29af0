//! Point-to-point between the ranks of a team: ping-pong, rings (`send`/`recv` and
//! `sendrecv`) for p = 1..=17, 32 and 64 (oversubscribed on a small machine), message lengths
//! on both sides of the eager/rendezvous boundary ([`EAGER_MAX`] bytes) and 1 MiB, several
//! element types (one with padding), several messages in flight on one edge in FIFO order,
//! exchanges of a rank with itself, fan-in and fan-out. Every received value is checked against
//! `expected(tag, len)`, a function of the message's tag (which names the sender and the
//! message) and of the element's index.

use corecoll::unstable::EAGER_MAX;
use corecoll::{Comm, Error, Team};
use std::fmt::Debug;
use std::mem::size_of;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

type Res = Result<(), Error>;

/// An element type with a value for every hash, and a filler value that `from_hash` never
/// produces.
trait Val: Copy + Send + Sync + Debug + PartialEq + 'static {
    const NAME: &'static str;
    fn from_hash(h: u64) -> Self;
    fn garbage() -> Self;
    /// Bitwise equality where `==` is not (floating point).
    fn same(&self, other: &Self) -> bool {
        self == other
    }
    fn pattern_cell() -> &'static OnceLock<Vec<Self>>;
}

impl Val for u8 {
    const NAME: &'static str = "u8";
    fn from_hash(h: u64) -> Self {
        (h % 251) as u8
    }
    fn garbage() -> Self {
        255
    }
    fn pattern_cell() -> &'static OnceLock<Vec<Self>> {
        static P: OnceLock<Vec<u8>> = OnceLock::new();
        &P
    }
}

impl Val for u64 {
    const NAME: &'static str = "u64";
    fn from_hash(h: u64) -> Self {
        h >> 1
    }
    fn garbage() -> Self {
        u64::MAX
    }
    fn pattern_cell() -> &'static OnceLock<Vec<Self>> {
        static P: OnceLock<Vec<u64>> = OnceLock::new();
        &P
    }
}

impl Val for f64 {
    const NAME: &'static str = "f64";
    fn from_hash(h: u64) -> Self {
        match h % 13 {
            // NaN payloads and the sign of zero must travel bit for bit.
            3 => f64::from_bits(0x7ff8_0000_0000_0000 | (h >> 20)),
            7 => -0.0,
            _ => (h >> 11) as f64 * 0.375 - 1.0e12,
        }
    }
    fn garbage() -> Self {
        f64::from_bits(u64::MAX)
    }
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
    fn pattern_cell() -> &'static OnceLock<Vec<Self>> {
        static P: OnceLock<Vec<f64>> = OnceLock::new();
        &P
    }
}

/// 12 bytes, 5 of them padding (3 after `a`, 2 after `c`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Padded {
    a: u8,
    b: u32,
    c: u16,
}

impl Val for Padded {
    const NAME: &'static str = "Padded";
    fn from_hash(h: u64) -> Self {
        Padded {
            a: (h % 200) as u8,
            b: (h >> 8) as u32,
            c: (h >> 40) as u16,
        }
    }
    fn garbage() -> Self {
        Padded {
            a: 255,
            b: u32::MAX,
            c: u16::MAX,
        }
    }
    fn pattern_cell() -> &'static OnceLock<Vec<Self>> {
        static P: OnceLock<Vec<Padded>> = OnceLock::new();
        &P
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Largest message tag used by these tests, plus one.
const TAGS: usize = 64 * 64;
/// Offset between the windows of consecutive tags in the pattern.
const STRIDE: usize = 131;

/// The expected contents of message `tag` of `len` elements: element `i` is
/// `T::from_hash(splitmix(tag * STRIDE + i))`, read from a table built once per type (so that
/// making and checking a 1 MiB message is a copy and a comparison even in a debug build).
fn expected<T: Val>(tag: usize, len: usize) -> &'static [T] {
    assert!(tag < TAGS);
    let pattern = T::pattern_cell().get_or_init(|| {
        let n = TAGS * STRIDE + (1 << 20) / size_of::<T>();
        (0..n as u64).map(|j| T::from_hash(splitmix(j))).collect()
    });
    &pattern[tag * STRIDE..tag * STRIDE + len]
}

fn payload<T: Val>(tag: usize, len: usize) -> Vec<T> {
    expected::<T>(tag, len).to_vec()
}

fn garbage<T: Val>(len: usize) -> Vec<T> {
    vec![T::garbage(); len]
}

#[track_caller]
fn check<T: Val>(got: &[T], tag: usize, what: &str) {
    let want = expected::<T>(tag, got.len());
    if got == want {
        return;
    }
    if let Some(i) = (0..got.len()).find(|&i| !got[i].same(&want[i])) {
        panic!(
            "{what} ({} × {}): element {i} is {:?}, expected {:?}",
            got.len(),
            T::NAME,
            got[i],
            want[i]
        );
    }
}

/// Message tag: sender and a per-sender message number.
fn tag(src: usize, k: usize) -> usize {
    assert!(src < 64 && k < 64);
    src * 64 + k
}

/// The lengths to test for `T`: empty, one element, about 16 bytes (what shares a cache line
/// with a mailbox cell's flag), just under / at / just over the eager limit in elements, and
/// 1 MiB.
fn lengths<T>() -> [usize; 8] {
    let (s, e) = (size_of::<T>(), EAGER_MAX / size_of::<T>());
    [0, 1, 16 / s, 16 / s + 1, e - 1, e, e + 1, (1 << 20) / s]
}

#[test]
fn eager_boundary_lengths_are_exact_in_bytes() {
    let e = EAGER_MAX;
    assert_eq!(lengths::<u8>()[4..7], [e - 1, e, e + 1]);
    assert_eq!(lengths::<u64>()[4..7], [e / 8 - 1, e / 8, e / 8 + 1]);
    assert_eq!(size_of::<Padded>(), 12);
    let padded: Vec<usize> = lengths::<Padded>()[4..7].iter().map(|n| n * 12).collect();
    assert!(padded[1] <= EAGER_MAX && padded[2] > EAGER_MAX);
}

/// Pairs (2k, 2k+1) exchange `rounds` messages each way, the even rank first.
fn ping_pong<T: Val>(comm: &Comm, len: usize, rounds: usize) -> Res {
    let (r, p) = (comm.rank(), comm.size());
    let partner = r ^ 1;
    if partner >= p {
        return Ok(());
    }
    let what = format!("ping-pong {r}<-{partner} len {len}");
    for k in 0..rounds {
        let mut buf = garbage::<T>(len);
        if r % 2 == 0 {
            comm.send(partner, &payload::<T>(tag(r, k), len))?;
            comm.recv(partner, &mut buf)?;
        } else {
            comm.recv(partner, &mut buf)?;
            comm.send(partner, &payload::<T>(tag(r, k), len))?;
        }
        check(&buf, tag(partner, k), &what);
    }
    Ok(())
}

/// Every rank sends to its right neighbour with `send` and receives from its left with `recv`:
/// rank 0 sends first, every other rank receives first (so large messages cannot deadlock).
/// With one rank this is a message to itself, which only an eager message can complete.
fn ring_send_recv<T: Val>(comm: &Comm, len: usize) -> Res {
    let (r, p) = (comm.rank(), comm.size());
    let (right, left) = ((r + 1) % p, (r + p - 1) % p);
    if p == 1 && len * size_of::<T>() > EAGER_MAX {
        return Ok(());
    }
    let mine = payload::<T>(tag(r, 4), len);
    let mut buf = garbage::<T>(len);
    if r == 0 {
        comm.send(right, &mine)?;
        comm.recv(left, &mut buf)?;
    } else {
        comm.recv(left, &mut buf)?;
        comm.send(right, &mine)?;
    }
    check(
        &buf,
        tag(left, 4),
        &format!("send/recv ring at {r} len {len}"),
    );
    Ok(())
}

/// Rings in both directions with `sendrecv`, all ranks at once.
fn ring_sendrecv<T: Val>(comm: &Comm, len: usize) -> Res {
    let (r, p) = (comm.rank(), comm.size());
    let (right, left) = ((r + 1) % p, (r + p - 1) % p);
    let mut buf = garbage::<T>(len);
    comm.sendrecv(right, &payload::<T>(tag(r, 5), len), left, &mut buf)?;
    check(
        &buf,
        tag(left, 5),
        &format!("sendrecv ring → at {r} len {len}"),
    );
    let mut buf = garbage::<T>(len);
    comm.sendrecv(left, &payload::<T>(tag(r, 6), len), right, &mut buf)?;
    check(
        &buf,
        tag(right, 6),
        &format!("sendrecv ring ← at {r} len {len}"),
    );
    Ok(())
}

fn all_patterns<T: Val>(comm: &Comm) -> Res {
    for len in lengths::<T>() {
        ping_pong::<T>(comm, len, 2)?;
        ring_send_recv::<T>(comm, len)?;
        ring_sendrecv::<T>(comm, len)?;
    }
    Ok(())
}

/// Runs every pattern for every type and length on a team of each size in `ps`.
fn sweep(ps: &[usize]) {
    for &p in ps {
        let team = Team::new(p).unwrap();
        let out = team
            .run(|comm| -> Res {
                assert_eq!(
                    (comm.size(), comm.team_rank(comm.rank())),
                    (p, Some(comm.rank()))
                );
                all_patterns::<u8>(comm)?;
                all_patterns::<u64>(comm)?;
                all_patterns::<f64>(comm)?;
                all_patterns::<Padded>(comm)?;
                comm.barrier()
            })
            .unwrap_or_else(|e| panic!("p = {p}: {e}"));
        assert_eq!(out.len(), p);
        for (r, res) in out.into_iter().enumerate() {
            res.unwrap_or_else(|e| panic!("p = {p}, rank {r}: {e}"));
        }
    }
}

#[test]
fn patterns_p1_to_p6() {
    sweep(&[1, 2, 3, 4, 5, 6]);
}

#[test]
fn patterns_p7_to_p12() {
    sweep(&[7, 8, 9, 10, 11, 12]);
}

#[test]
fn patterns_p13_to_p17() {
    sweep(&[13, 14, 15, 16, 17]);
}

#[test]
fn patterns_p32() {
    sweep(&[32]);
}

#[test]
fn patterns_p64_oversubscribed() {
    sweep(&[64]);
}

/// Length in elements of message `k` of a stream: the first four are as large as eager
/// messages get, the others cycle through empty, tiny, middling and eager-limit sizes.
fn stream_len<T>(k: usize) -> usize {
    let bytes = if k < 4 {
        EAGER_MAX
    } else {
        [0, 1, 16, 17, 64, 1000, EAGER_MAX - 1, EAGER_MAX, 24][k % 9]
    };
    bytes / size_of::<T>()
}

/// Rank 0 sends `n` eager messages of different lengths, then a rendezvous one, then an eager
/// one, to rank 1, which starts reading only once the first two sends have returned (a
/// mailbox holds a few messages, not 60, so later sends must wait for the receiver to free
/// space). Everything arrives, in order.
fn fifo_one_edge<T: Val>(n: usize) {
    let queued = AtomicBool::new(false);
    let big = 3 * EAGER_MAX / size_of::<T>();
    let out = corecoll::run(2, |comm| -> Res {
        if comm.rank() == 0 {
            let sent = (|| -> Res {
                for k in 0..n {
                    comm.send(1, &payload::<T>(tag(0, k), stream_len::<T>(k)))?;
                    if k == 1 {
                        queued.store(true, Ordering::SeqCst);
                    }
                }
                comm.send(1, &payload::<T>(tag(0, n), big))?;
                comm.send(1, &payload::<T>(tag(0, n + 1), 1))
            })();
            queued.store(true, Ordering::SeqCst);
            sent?;
        } else {
            while !queued.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            for k in 0..n {
                let mut buf = garbage::<T>(stream_len::<T>(k));
                comm.recv(0, &mut buf)?;
                check(&buf, tag(0, k), &format!("message {k}"));
            }
            let mut buf = garbage::<T>(big);
            comm.recv(0, &mut buf)?;
            check(&buf, tag(0, n), "rendezvous message after the eager ones");
            let mut buf = garbage::<T>(1);
            comm.recv(0, &mut buf)?;
            check(
                &buf,
                tag(0, n + 1),
                "eager message after the rendezvous one",
            );
        }
        Ok(())
    })
    .unwrap();
    for r in out {
        r.unwrap();
    }
}

#[test]
fn many_messages_in_flight_on_one_edge_arrive_in_order() {
    fifo_one_edge::<u8>(10);
    fifo_one_edge::<u8>(60);
    fifo_one_edge::<u64>(60);
    fifo_one_edge::<Padded>(60);
}

/// Every rank streams `n` small messages to its right neighbour while receiving `n` from its
/// left, with `send` and `recv` interleaved so that several are in flight on every edge (at
/// most four of at most 40 bytes unreceived, which a mailbox must buffer for this to finish).
#[test]
fn streams_around_a_ring_keep_order() {
    for p in [2, 5, 17] {
        let n = 50;
        let window = 3;
        let out = corecoll::run(p, |comm| -> Res {
            let (r, p) = (comm.rank(), comm.size());
            let (right, left) = ((r + 1) % p, (r + p - 1) % p);
            let mut received = 0;
            let recv_one = |k: usize| -> Res {
                let mut buf = garbage::<u64>(k % 5 + 1);
                comm.recv(left, &mut buf)?;
                check(&buf, tag(left, k), &format!("stream message {k} at {r}"));
                Ok(())
            };
            for k in 0..n {
                comm.send(right, &payload::<u64>(tag(r, k), k % 5 + 1))?;
                if k >= window {
                    recv_one(received)?;
                    received += 1;
                }
            }
            while received < n {
                recv_one(received)?;
                received += 1;
            }
            Ok(())
        })
        .unwrap();
        for r in out {
            r.unwrap();
        }
    }
}

/// Long streams of eager messages whose sizes vary from 0 to `EAGER_MAX` bytes along a chain
/// 0 → 1 → … → p−1 (no cycle, so no send can wait for a rank that waits for it), so that
/// however a mailbox stores payloads its space is reused many times over at shifting offsets.
#[test]
fn streams_of_varied_sizes_reuse_mailbox_space() {
    for p in [2, 3] {
        let n = 400;
        let len = |k: usize| (k * 331 + k * k) % (EAGER_MAX + 1);
        let out = corecoll::run(p, |comm| -> Res {
            let (r, p) = (comm.rank(), comm.size());
            for k in 0..n {
                if r > 0 {
                    let mut buf = garbage::<u8>(len(k));
                    comm.recv(r - 1, &mut buf)?;
                    check(&buf, tag(r - 1, k % 64), &format!("message {k} at {r}"));
                }
                if r + 1 < p {
                    comm.send(r + 1, &payload::<u8>(tag(r, k % 64), len(k)))?;
                }
            }
            Ok(())
        })
        .unwrap();
        for r in out {
            r.unwrap();
        }
    }
}

#[test]
fn sendrecv_with_self_small_and_large() {
    let out = corecoll::run(3, |comm| -> Res {
        let r = comm.rank();
        for len in lengths::<u64>() {
            let mut buf = garbage::<u64>(len);
            comm.sendrecv(r, &payload::<u64>(tag(r, 5), len), r, &mut buf)?;
            check(&buf, tag(r, 5), &format!("sendrecv with self, len {len}"));
        }
        for len in lengths::<Padded>() {
            let mut buf = garbage::<Padded>(len);
            comm.sendrecv(r, &payload::<Padded>(tag(r, 6), len), r, &mut buf)?;
            check(&buf, tag(r, 6), &format!("sendrecv with self, len {len}"));
        }
        Ok(())
    })
    .unwrap();
    for r in out {
        r.unwrap();
    }
}

/// Small messages a rank sends itself wait in its own mailbox, in order; a `sendrecv` with
/// itself after them receives the oldest one.
#[test]
fn send_to_self_then_receive() {
    let out = corecoll::run(2, |comm| -> Res {
        let r = comm.rank();
        let len = |k: usize| [0, 1, 17, EAGER_MAX][k];
        for k in 0..3 {
            comm.send(r, &payload::<u8>(tag(r, k), len(k)))?;
        }
        let mut buf = garbage::<u8>(len(0));
        comm.sendrecv(r, &payload::<u8>(tag(r, 3), len(3)), r, &mut buf)?;
        check(&buf, tag(r, 0), "oldest self-message");
        for k in 1..4 {
            let mut buf = garbage::<u8>(len(k));
            comm.recv(r, &mut buf)?;
            check(&buf, tag(r, k), &format!("self-message {k}"));
        }
        comm.send(r, &payload::<f64>(tag(r, 9), 3))?;
        let mut buf = garbage::<f64>(3);
        comm.recv(r, &mut buf)?;
        check(&buf, tag(r, 9), "f64 self-message");
        Ok(())
    })
    .unwrap();
    for r in out {
        r.unwrap();
    }
}

/// Every rank but 0 sends rank 0 three messages, of lengths growing with the rank so that the
/// higher ranks' messages go by rendezvous; rank 0 receives them from the highest rank down.
#[test]
fn fan_in_to_one_rank() {
    for p in [2, 9, 33, 64] {
        let len = |src: usize, k: usize| src * 40 + k;
        let out = corecoll::run(p, |comm| -> Res {
            let (r, p) = (comm.rank(), comm.size());
            if r == 0 {
                for src in (1..p).rev() {
                    for k in 0..3 {
                        let mut buf = garbage::<u64>(len(src, k));
                        comm.recv(src, &mut buf)?;
                        check(
                            &buf,
                            tag(src, k),
                            &format!("fan-in from {src}, message {k}"),
                        );
                    }
                }
            } else {
                for k in 0..3 {
                    comm.send(0, &payload::<u64>(tag(r, k), len(r, k)))?;
                }
            }
            comm.barrier()
        })
        .unwrap();
        assert_eq!(out.len(), p);
        for r in out {
            r.unwrap();
        }
    }
}

/// Rank 0 sends every other rank a message of its own (eager and rendezvous), in rank order.
#[test]
fn fan_out_from_one_rank() {
    let p = 17;
    let len = |dst: usize| dst * 97;
    let out = corecoll::run(p, |comm| -> Res {
        let r = comm.rank();
        if r == 0 {
            for dst in 1..comm.size() {
                comm.send(dst, &payload::<u64>(tag(0, dst), len(dst)))?;
            }
        } else {
            let mut buf = garbage::<u64>(len(r));
            comm.recv(0, &mut buf)?;
            check(&buf, tag(0, r), "fan-out");
        }
        Ok(())
    })
    .unwrap();
    for r in out {
        r.unwrap();
    }
}

/// All-to-all by shifts: in step s every rank sends to r + s and receives from r − s, with
/// message lengths on both sides of the eager limit.
#[test]
fn all_to_all_by_shifted_sendrecv() {
    for p in [3, 8, 13] {
        let out = corecoll::run(p, |comm| -> Res {
            let (r, p) = (comm.rank(), comm.size());
            for s in 0..p {
                let (dst, src) = ((r + s) % p, (r + p - s) % p);
                let len = |from: usize, to: usize| (from * p + to) * 23;
                let mut buf = garbage::<u8>(len(src, r));
                comm.sendrecv(dst, &payload::<u8>(tag(r, dst), len(r, dst)), src, &mut buf)?;
                check(&buf, tag(src, r), &format!("shift {s} at {r}"));
            }
            Ok(())
        })
        .unwrap();
        for r in out {
            r.unwrap();
        }
    }
}

/// Messages of different element types on one edge in sequence, each checked.
#[test]
fn mixed_element_types_on_one_edge() {
    let out = corecoll::run(2, |comm| -> Res {
        if comm.rank() == 0 {
            comm.send(1, &payload::<u8>(1, 3))?;
            comm.send(1, &payload::<f64>(2, 700))?;
            comm.send(1, &payload::<Padded>(3, 5))?;
            comm.send(1, &payload::<u64>(4, 0))?;
        } else {
            let mut a = garbage::<u8>(3);
            let mut b = garbage::<f64>(700);
            let mut c = garbage::<Padded>(5);
            let mut d = garbage::<u64>(0);
            comm.recv(0, &mut a)?;
            comm.recv(0, &mut b)?;
            comm.recv(0, &mut c)?;
            comm.recv(0, &mut d)?;
            check(&a, 1, "u8");
            check(&b, 2, "f64");
            check(&c, 3, "Padded");
        }
        Ok(())
    })
    .unwrap();
    for r in out {
        r.unwrap();
    }
}
