//! Single-threaded tests of the mailbox: ring, arena and counters, including across the
//! 64-bit wrap (the concurrent protocol is checked by the loom models).

use super::*;
use proptest::prelude::*;
use std::collections::VecDeque;

fn header(n: u64, len: usize) -> Header {
    Header {
        tag: n,
        typ: 7,
        len,
    }
}

fn payload(n: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (n.wrapping_mul(31) as usize).wrapping_add(i * 7) as u8)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Any interleaving of posts (inline, arena, lent) and takes on one thread: messages
    /// come out in order with their bytes intact, a post is refused only when cells or
    /// arena are really full, and lent messages are acknowledged exactly when taken.
    #[test]
    fn ring_and_arena_keep_messages_intact(
        slots in 1usize..6,
        arena_msgs in 1usize..4,
        ops in proptest::collection::vec((any::<bool>(), 0usize..3, 0usize..5000), 1..120),
        near_wrap in any::<bool>(),
    ) {
        // Half the cases start 40 messages (and 40 arena lines) before the counters wrap.
        let first = if near_wrap { u64::MAX - 40 } else { 0 };
        let mb = Mailbox::starting_at(slots, arena_msgs * EAGER_MAX, first);
        let mut next = first;
        // In flight: (number, bytes, lent buffer kept alive until acknowledged).
        let mut queue: VecDeque<(u64, Vec<u8>, bool)> = VecDeque::new();
        for (post, class, raw) in ops {
            if post {
                let len = match class {
                    0 => raw % (INLINE + 1),
                    1 => INLINE + 1 + raw % (EAGER_MAX - INLINE),
                    _ => EAGER_MAX + 1 + raw,
                };
                let data = payload(next, len);
                // SAFETY: `data` lives in `queue` until its message is taken.
                let posted = unsafe { mb.try_post(header(next, len), data.as_ptr()) };
                match posted {
                    Some((n, lent)) => {
                        prop_assert_eq!(n, next);
                        prop_assert_eq!(lent, len > EAGER_MAX);
                        queue.push_back((n, data, lent));
                        next = next.wrapping_add(1);
                    }
                    None => {
                        // Refused: either every cell is in use or the arena cannot hold it
                        // next to the payloads still in flight.
                        let in_arena: usize = queue
                            .iter()
                            .filter(|(_, d, _)| d.len() > INLINE && d.len() <= EAGER_MAX)
                            .map(|(_, d, _)| d.len().div_ceil(CHUNK) * CHUNK)
                            .sum();
                        let cells_full = queue.len() == mb.slots.len();
                        // Live payloads, the gaps skipped between them (each smaller than
                        // the payload after it) and the new one with its own skip.
                        let arena_tight = len > INLINE
                            && len <= EAGER_MAX
                            && 2 * in_arena + 2 * len.div_ceil(CHUNK) * CHUNK > mb.arena.len;
                        prop_assert!(!queue.is_empty(), "an empty mailbox refused {} bytes", len);
                        prop_assert!(cells_full || arena_tight,
                            "refused {} bytes with {} cells busy and {} arena bytes live",
                            len, queue.len(), in_arena);
                    }
                }
            } else if let Some((n, data, lent)) = queue.pop_front() {
                let h = mb.front().expect("a posted message is visible");
                prop_assert_eq!(h, header(n, data.len()));
                if lent {
                    prop_assert!(!mb.is_consumed(n));
                }
                // SAFETY: `take` hands the closure the message's `h.len` bytes.
                let read = |p| unsafe { std::slice::from_raw_parts(p, h.len) }.to_vec();
                let got = mb.take(read).expect("not withdrawn");
                prop_assert_eq!(got, data);
                prop_assert!(mb.is_consumed(n));
            } else {
                prop_assert!(mb.front().is_none());
            }
        }
    }
}

#[test]
fn withdrawn_message_is_not_read() {
    let mb = Mailbox::new(2);
    let data = vec![5u8; EAGER_MAX + 10];
    // SAFETY: `data` outlives the mailbox's use of it (withdrawn before it is dropped).
    let (n, lent) = unsafe { mb.try_post(header(0, data.len()), data.as_ptr()) }.unwrap();
    assert!(lent);
    assert!(mb.withdraw(n));
    assert_eq!(
        mb.take(|_| unreachable!("a withdrawn slice is never read")),
        Err(Withdrawn)
    );
    assert!(mb.is_consumed(n));
}

#[test]
fn claimed_message_cannot_be_withdrawn() {
    let mb = Mailbox::new(2);
    let data = vec![9u8; EAGER_MAX + 1];
    // SAFETY: as above.
    let (n, _) = unsafe { mb.try_post(header(0, data.len()), data.as_ptr()) }.unwrap();
    let got = mb.take(|p| {
        // While the consumer reads, the producer's withdrawal fails.
        assert!(!mb.withdraw(n));
        // SAFETY: the message has `EAGER_MAX + 1` bytes.
        unsafe { *p.add(EAGER_MAX) }
    });
    assert_eq!(got, Ok(9));
}
