//! Tests of the shared-memory transport, its ranks on threads of their own (`shm::testing`):
//! the reducing receives' operand order at every size, `exchange_many` with several peers,
//! sizes and a mismatch, and a posted receive's gate.

use super::*;
use crate::mailbox::EAGER_MAX;
use crate::shm::testing::spmd;

/// A barrier of `m`'s communicator over its collectives' transport (empty messages to and
/// from every other rank): an `Err` once the run has failed.
fn barrier(m: &Member) -> Result<()> {
    let (t, p, r) = (ShmTransport::coll(m, "barrier"), m.size(), m.rank());
    let peers: Vec<usize> = (0..p).filter(|&q| q != r).collect();
    let sends: Vec<(usize, &[u8])> = peers.iter().map(|&q| (q, &[][..])).collect();
    let mut bufs = vec![[0u8; 0]; peers.len()];
    let mut recvs: Vec<(usize, &mut [u8])> = peers
        .iter()
        .zip(&mut bufs)
        .map(|(&q, b)| (q, &mut b[..]))
        .collect();
    t.exchange_many(&sends, &mut recvs, Tag::P2P)
}

/// A non-commutative combination (string-like concatenation of spans) so that operand
/// order mistakes show: acc := acc ⊙ incoming with (a, b) ⊙ (c, d) = (a, d) when b == c.
fn concat(acc: &mut [(u32, u32)], inc: &[(u32, u32)]) {
    for (a, b) in acc.iter_mut().zip(inc) {
        assert_eq!(a.1, b.0, "spans must be adjacent");
        a.1 = b.1;
    }
}

#[test]
fn recv_reduce_and_sendrecv_reduce_combine_in_order_for_every_size() {
    for n in [0usize, 1, 2, 3, EAGER_MAX / 8, EAGER_MAX / 8 + 1, 100_000] {
        for p in [1usize, 2, 3, 5] {
            let out = spmd(p, |m| {
                let t = ShmTransport::coll(m, "test");
                let r = m.rank() as u32;
                // Chain: rank r receives the span [0, r) from r − 1, appends its own
                // [r, r + 1), and passes [0, r + 1) on.
                let mut acc = vec![(0u32, 0u32); n];
                if r > 0 {
                    t.recv_reduce(m.rank() - 1, Tag::P2P, &mut acc, &mut concat)
                        .unwrap();
                }
                concat(&mut acc, &vec![(r, r + 1); n]);
                if m.rank() + 1 < p {
                    t.send(m.rank() + 1, Tag::P2P, &acc).unwrap();
                }
                // Ring exchange: acc := acc·31 + incoming, which shows a swapped operand
                // order or a misplaced element.
                let (left, right) = ((m.rank() + p - 1) % p, (m.rank() + 1) % p);
                let send: Vec<u64> = (0..n as u64).map(|i| r as u64 * 7 + i).collect();
                let mut got: Vec<u64> = (0..n as u64).map(|i| r as u64 * 1000 + i).collect();
                let mut f = |a: &mut [u64], b: &[u64]| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x = x.wrapping_mul(31).wrapping_add(*y);
                    }
                };
                t.sendrecv_reduce(right, &send, left, &mut got, Tag::P2P, &mut f)
                    .unwrap();
                (acc, got)
            });
            let last = &out[p - 1].0;
            assert!(last.iter().all(|&s| s == (0, p as u32)), "n={n} p={p}");
            for (r, (_, got)) in out.iter().enumerate() {
                let l = ((r + p - 1) % p) as u64;
                for (i, &g) in got.iter().enumerate() {
                    let i = i as u64;
                    assert_eq!(
                        g,
                        (r as u64 * 1000 + i) * 31 + l * 7 + i,
                        "n={n} p={p} r={r}"
                    );
                }
            }
        }
    }
}

/// `exchange_many` with every other rank at once, two messages per edge (in order), of
/// sizes from empty through eager to rendezvous, a message to itself, and zero-sized
/// elements; then a length mismatch, which is an `Err` on every rank.
#[test]
fn exchange_many_with_several_peers_and_sizes() {
    let size = |s: usize, d: usize, k: usize| {
        [0usize, 1, 3, EAGER_MAX / 8, EAGER_MAX / 8 + 1, 40_000][(s * 7 + d * 3 + k) % 6]
    };
    let val =
        |s: usize, d: usize, k: usize, i: usize| (s * 1_000_003 + d * 1009 + k * 7 + i) as u64;
    for p in [1usize, 2, 3, 5] {
        let out = spmd(p, |m| {
            let t = ShmTransport::coll(m, "test");
            let r = m.rank();
            let data: Vec<Vec<u64>> = (0..2 * p)
                .map(|j| {
                    (0..size(r, j / 2, j % 2))
                        .map(|i| val(r, j / 2, j % 2, i))
                        .collect()
                })
                .collect();
            let sends: Vec<(usize, &[u64])> = data
                .iter()
                .enumerate()
                .map(|(j, d)| (j / 2, &d[..]))
                .collect();
            let mut bufs: Vec<Vec<u64>> =
                (0..2 * p).map(|j| vec![0; size(j / 2, r, j % 2)]).collect();
            let mut recvs: Vec<(usize, &mut [u64])> = bufs
                .iter_mut()
                .enumerate()
                .map(|(j, b)| (j / 2, &mut b[..]))
                .collect();
            t.exchange_many(&sends, &mut recvs, Tag::P2P).unwrap();
            // Sends only and receives only, zero-sized elements, in a ring.
            let (right, left) = ((r + 1) % p, (r + p - 1) % p);
            if p > 1 {
                t.exchange_many(&[(right, &[(); 5][..])], &mut [], Tag::P2P)
                    .unwrap();
                t.exchange_many::<()>(&[], &mut [(left, &mut [(); 5][..])], Tag::P2P)
                    .unwrap();
            }
            bufs
        });
        for (r, bufs) in out.iter().enumerate() {
            for (j, b) in bufs.iter().enumerate() {
                let (s, k) = (j / 2, j % 2);
                let want: Vec<u64> = (0..size(s, r, k)).map(|i| val(s, r, k, i)).collect();
                assert_eq!(b, &want, "p={p} r={r} from {s} message {k}");
            }
        }
    }
    let out = spmd(3, |m| {
        let t = ShmTransport::coll(m, "test");
        let r = m.rank();
        let big = vec![1u32; 10_000];
        let n = if r == 1 { 9_999 } else { 10_000 };
        let mut a = vec![0u32; n];
        let mut b = vec![0u32; n];
        let (right, left) = ((r + 1) % 3, (r + 2) % 3);
        let res = t.exchange_many(
            &[(right, &big[..]), (left, &big[..])],
            &mut [(left, &mut a[..]), (right, &mut b[..])],
            Tag::P2P,
        );
        res.is_err() || barrier(m).is_err()
    });
    // Every rank fails: in the exchange, or in the barrier after a failed run.
    assert!(out.iter().all(|&e| e));
}

/// A receive posted with a gate (`post_shared`, the hybrid team's receive from any rank) takes
/// a message only while its gate is open, and closes it when it does; with the gate closed
/// elsewhere the message goes to the next receive instead.
#[test]
fn a_shared_posted_receive_takes_a_message_only_through_its_open_gate() {
    for closed in [false, true] {
        for n in [1usize, EAGER_MAX / 8 + 1] {
            let out = spmd(2, |m| {
                let t = ShmTransport::p2p(m, "test");
                let matcher = Matcher::default();
                let want = Want {
                    src: None,
                    tag: None,
                };
                if m.rank() == 0 {
                    barrier(m).unwrap();
                    t.send(1, Tag::p2p(3), &vec![7u64; n]).unwrap();
                    return (true, 0);
                }
                let mut buf = vec![0u64; n];
                let gate = super::Gate::open();
                // SAFETY: `r` is dropped below, before `buf`, which is untouched until then.
                let r = unsafe { t.post_shared(&matcher, want, &mut buf, &gate) };
                if closed {
                    gate.close();
                }
                barrier(m).unwrap();
                let mut got = None;
                while got.is_none() {
                    got = t.poll_posted(&r).unwrap();
                    if closed && (0..1000).all(|_| t.poll_posted(&r).unwrap().is_none()) {
                        break;
                    }
                }
                drop(r);
                if closed {
                    let mut other = vec![0u64; n];
                    let f = t.recv_matching(&matcher, want, &mut other).unwrap();
                    return (gate.is_open(), f.count + other.iter().sum::<u64>() as usize);
                }
                let f = got.expect("matched");
                (gate.is_open(), f.count + buf.iter().sum::<u64>() as usize)
            });
            // Open: the shared receive took it and closed its gate; closed: the next receive
            // took it, and the gate stayed closed.
            assert_eq!(out[1], (false, n + 7 * n), "closed={closed} n={n}");
        }
    }
}
