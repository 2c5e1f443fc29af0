//! Tests of the node stage's collectives, on threads standing for a node's processes over a
//! heap buffer standing for its segment (small slots, so that vectors take many rounds).

mod support {
    use super::super::*;
    use crate::process::node::Control;
    use crate::sync::{AtomicU64, CachePadded};

    /// Slots of a test node, 128-byte lines.
    struct Slots(Vec<CachePadded<[u8; 128]>>);
    /// The slots' address, handed to the processes' threads.
    #[derive(Clone, Copy)]
    struct At(*mut u8);
    // SAFETY: the threads reach the slots only through `Rounds`, whose protocol is under test.
    unsafe impl Send for At {}
    // SAFETY: see `Send`.
    unsafe impl Sync for At {}

    /// Runs `f(rounds)` on `p` threads as the processes of a node with slots of `slot`
    /// bytes: each thread's result, in process order.
    pub(crate) fn node<R: Send>(
        p: usize,
        slot: usize,
        f: impl Fn(&Rounds<'_>) -> R + Sync,
    ) -> Vec<R> {
        let poison = AtomicU64::new(0);
        let controls: Vec<CachePadded<Control>> = (0..p).map(|_| Default::default()).collect();
        let mut slots = Slots(
            (0..2 * p * slot / 128)
                .map(|_| CachePadded::new([0; 128]))
                .collect(),
        );
        let at = At(slots.0.as_mut_ptr().cast());
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..p)
                .map(|me| {
                    let (poison, controls, f) = (&poison, &controls[..], &f);
                    s.spawn(move || {
                        let at = at;
                        // SAFETY: `slots` holds 2 · p slots of `slot` bytes (a multiple of 128)
                        // and outlives the scope; one `Rounds` per process.
                        let r = unsafe { Rounds::new(poison, controls, at.0, slot, me) };
                        f(&r)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    pub(crate) fn never(_: usize) -> Option<Error> {
        None
    }

    /// A non-commutative op on spans: (a, b) ⊙ (b, c) = (a, c).
    pub(crate) struct Span;
    impl Op<(u32, u32)> for Span {
        fn fold_right(&self, acc: &mut [(u32, u32)], rhs: &[(u32, u32)]) {
            for (a, b) in acc.iter_mut().zip(rhs) {
                assert_eq!(a.1, b.0, "spans combined out of order");
                a.1 = b.1;
            }
        }
        fn fold_left(&self, lhs: &[(u32, u32)], acc: &mut [(u32, u32)]) {
            for (a, l) in acc.iter_mut().zip(lhs) {
                assert_eq!(l.1, a.0, "spans combined out of order");
                a.0 = l.0;
            }
        }
        fn is_commutative(&self) -> bool {
            false
        }
    }
}

mod collectives {
    use super::super::*;
    use super::support::*;
    use crate::op::Sum;

    #[test]
    fn every_collective_matches_its_sequential_reference_over_many_rounds() {
        for p in [1usize, 2, 3, 5, 8] {
            // 256-byte slots: 32 u64 or 32 spans per round; lengths below, at and across.
            for n in [0usize, 1, 31, 32, 33, 100, 1000] {
                let out = node(p, 256, |r| {
                    let q = r.me() as u32;
                    let mut w = |_: usize| never(0);
                    let mut spans = vec![(q, q + 1); n];
                    allreduce(r, &mut spans, &Span, &mut w).unwrap();
                    let mut sums: Vec<u64> = (0..n as u64).map(|i| i * 7 + u64::from(q)).collect();
                    reduce(r, &mut sums, &Sum, p - 1, &mut w).unwrap();
                    let mut b: Vec<u64> = (0..n as u64).map(|i| i + u64::from(q) * 1000).collect();
                    broadcast(r, &mut b, p / 2, &mut w).unwrap();
                    let send: Vec<u16> = (0..n).map(|i| (i as u16) ^ (q as u16) << 12).collect();
                    let mut all = vec![0u16; n * p];
                    allgather(r, &send, &mut all, &mut w).unwrap();
                    let words = gather_words(r, &[u64::from(q), 7], &mut w).unwrap();
                    (spans, sums, b, all, words)
                });
                for (q, (spans, sums, b, all, words)) in out.into_iter().enumerate() {
                    let at = format!("p={p} n={n} process {q}");
                    assert!(spans.iter().all(|&s| s == (0, p as u32)), "{at}");
                    if q == p - 1 {
                        let want =
                            (0..n as u64).map(|i| i * 7 * p as u64 + (0..p as u64).sum::<u64>());
                        assert!(sums.iter().copied().eq(want), "{at}");
                    } else {
                        assert!(
                            sums.iter()
                                .copied()
                                .eq((0..n as u64).map(|i| i * 7 + q as u64)),
                            "{at}"
                        );
                    }
                    let root = (p / 2) as u64;
                    assert!(
                        b.iter().copied().eq((0..n as u64).map(|i| i + root * 1000)),
                        "{at}"
                    );
                    for (s, block) in
                        all.chunks(n.max(1))
                            .enumerate()
                            .take(if n == 0 { 0 } else { p })
                    {
                        let want = (0..n).map(|i| (i as u16) ^ (s as u16) << 12);
                        assert!(block.iter().copied().eq(want), "{at}: block {s}");
                    }
                    let want: Vec<u64> = (0..p as u64).flat_map(|s| [s, 7]).collect();
                    assert_eq!(words, want, "{at}");
                }
            }
        }
    }

    #[test]
    fn a_poisoned_node_stops_every_wait() {
        let out = node(2, 128, |r| {
            let mut w = |_: usize| never(0);
            if r.me() == 1 {
                r.poison();
                return true;
            }
            // Process 1 never arrives: the wait sees the poison.
            matches!(gather_words(r, &[1], &mut w), Err(Halt::Poisoned(1)))
        });
        assert!(out.iter().all(|&ok| ok));
    }
}

mod fused {
    use super::super::*;
    use super::support::{node, Span};

    #[test]
    fn the_words_and_a_short_allreduce_share_one_round() {
        for p in [1usize, 2, 3, 4] {
            for agree in [true, false] {
                let out = node(p, 256, |r| {
                    let q = r.me() as u32;
                    let mut w = |_: usize| None;
                    let words = [5u64, if agree { 0 } else { u64::from(q) }];
                    let mut spans = vec![(q, q + 1); 13];
                    let same = |rows: &[u64]| rows.chunks(2).all(|c| c == &rows[..2]);
                    let rows =
                        words_and_allreduce(r, &words, &mut spans, &Span, &same, &mut w).unwrap();
                    (rows, spans)
                });
                for (q, (rows, spans)) in out.into_iter().enumerate() {
                    let want: Vec<u64> = (0..p as u64)
                        .flat_map(|s| [5, if agree { 0 } else { s }])
                        .collect();
                    assert_eq!(rows, want, "p={p} agree={agree}");
                    let q = q as u32;
                    let span = if agree || p == 1 {
                        (0, p as u32)
                    } else {
                        (q, q + 1)
                    };
                    assert!(
                        spans.iter().all(|&s| s == span),
                        "p={p} agree={agree} process {q}"
                    );
                }
            }
        }
        // The second round: process 0's words, and its data only where they are agreed.
        for p in [1usize, 2, 3, 5] {
            for agree in [true, false] {
                let out = node(p, 256, |r| {
                    let q = r.me() as u64;
                    let mut w = |_: usize| None;
                    let mut words = [if q == 0 { 9 } else { 0 }, u64::from(agree)];
                    let mut data = vec![q; 7];
                    let ok = |w: &[u64]| w[1] == 1;
                    words_then_data(r, &mut words, &mut data, &ok, &mut w).unwrap();
                    (words, data)
                });
                for (q, (words, data)) in out.into_iter().enumerate() {
                    assert_eq!(words, [9, u64::from(agree)], "p={p} process {q}");
                    let want = if agree { 0 } else { q as u64 };
                    assert!(data.iter().all(|&d| d == want), "p={p} process {q}");
                }
            }
        }
        // 256-byte slots: 128 bytes of words, then 16 u64 at most.
        assert!(fits_with_words::<u64>(256, 8, 16));
        assert!(!fits_with_words::<u64>(256, 8, 17));
    }
}

mod single_copy {
    use super::super::*;
    use super::support::{node, Span};
    use crate::op::Sum;
    use crate::process::node::cma;

    /// The threads standing for processes read each other's memory through the kernel as
    /// processes do (their process reading itself).
    fn read(_q: usize, at: u64, into: &mut [u8]) -> Result<(), Error> {
        cma::read(std::process::id(), at, into).map_err(|e| Error::Unsupported {
            rank: 0,
            op: "test",
            what: e.to_string(),
        })
    }

    #[test]
    fn one_copy_gives_the_rounds_bits_in_process_order() {
        for p in [1usize, 2, 3, 5, 8] {
            for n in [0usize, 1, 2, 7, 1000, 20_011] {
                let out = node(p, 256, |r| {
                    let q = r.me() as u32;
                    let mut w = |_: usize| None;
                    let mut spans = vec![(q, q + 1); n];
                    single::allreduce(r, &mut spans, &Span, &read, &mut w).unwrap();
                    // Sums whose grouping shows in the bits.
                    let x = |i: usize| 1.0 / (i as f64 + 3.0) * 1e8f64.powi(q as i32 % 3);
                    let mut one: Vec<f64> = (0..n).map(x).collect();
                    single::allreduce(r, &mut one, &Sum, &read, &mut w).unwrap();
                    let mut rounds: Vec<f64> = (0..n).map(x).collect();
                    allreduce(r, &mut rounds, &Sum, &mut w).unwrap();
                    (spans, one, rounds)
                });
                for (q, (spans, one, rounds)) in out.into_iter().enumerate() {
                    let at = format!("p={p} n={n} process {q}");
                    assert!(spans.iter().all(|&s| s == (0, p as u32)), "{at}");
                    let same = one
                        .iter()
                        .zip(&rounds)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{at}");
                }
            }
        }
    }
}
