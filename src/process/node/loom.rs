//! Loom models of the rounds of a node's processes (`rounds`), with threads for processes and
//! the slots as cells whose every access loom tracks: loom reports a data race if a slot could
//! be written while another process reads it (a round begun before the others left the one
//! two before) or read before its writer arrived. Also of a point-to-point ring (`ring`) and
//! of a region of persistent short allreduces' slots taken again (`region`).

use super::ring::{Lines, Ring, Store};
use super::{Control, Rounds};
use crate::sync::{AtomicU64, CachePadded};
use loom::cell::UnsafeCell;
use std::sync::Arc;

/// The shared part of the model: the poison, the control lines, and the slots (two per
/// process) as tracked cells.
struct Node {
    poison: AtomicU64,
    controls: Vec<CachePadded<Control>>,
    slots: Vec<UnsafeCell<u64>>,
}

// SAFETY: the slots are accessed only through loom's `with`/`with_mut`, which check every
// access against the others: the property under test.
unsafe impl Sync for Node {}

/// The value process `q` writes in round `k`.
fn value(q: usize, k: u64) -> u64 {
    (q as u64) << 32 | k
}

/// `p` processes run `rounds` rounds in which each writes its slot and reads everyone's, or
/// (`broadcast`) process 0 writes its slot and the others read it without arriving — the
/// rounds where only `left` keeps the writer from overwriting what is still read. (Three
/// processes are out of loom's reach: every poll of a wait is a branch of the model.)
fn exchange(p: usize, rounds: u64, broadcast: bool) {
    loom::model(move || {
        let node = Arc::new(Node {
            poison: AtomicU64::new(0),
            controls: (0..p)
                .map(|_| CachePadded::new(Control::default()))
                .collect(),
            slots: (0..2 * p).map(|_| UnsafeCell::new(0)).collect(),
        });
        let run = move |node: Arc<Node>, me: usize| {
            // SAFETY: the model never uses the slot pointers (`mine`, `slot`): its slots are
            // the tracked cells, indexed as the rounds would.
            let r =
                unsafe { Rounds::new(&node.poison, &node.controls, std::ptr::null_mut(), 128, me) };
            let mut never = |_: usize| None;
            for _ in 0..rounds {
                let k = r.begin(&mut never).expect("no one gives up");
                let cell = |q: usize| &node.slots[2 * q + (k % 2) as usize];
                if !broadcast || me == 0 {
                    cell(me).with_mut(|v| unsafe { *v = value(me, k) });
                    r.arrive(k);
                }
                let from = broadcast.then_some(0);
                r.wait_arrived(k, from, &mut never)
                    .expect("no one gives up");
                for q in (0..p).filter(|&q| !broadcast || q == 0) {
                    let got = cell(q).with(|v| unsafe { *v });
                    assert_eq!(
                        got,
                        value(q, k),
                        "process {me} reads {q}'s slot of round {k}"
                    );
                }
                r.leave(k);
            }
        };
        let others: Vec<_> = (1..p)
            .map(|q| {
                let node = node.clone();
                loom::thread::spawn(move || run(node, q))
            })
            .collect();
        run(node, 0);
        for t in others {
            t.join().unwrap();
        }
    });
}

#[test]
fn two_processes_three_rounds_never_overwrite_a_slot_being_read() {
    exchange(2, 3, false);
}

#[test]
fn a_root_that_alone_arrives_waits_for_its_readers_to_leave() {
    exchange(2, 3, true);
}

/// A ring's bytes as cells whose every access loom checks.
struct Cells(Vec<UnsafeCell<u8>>);

impl Store for &Cells {
    fn capacity(&self) -> usize {
        self.0.len()
    }

    unsafe fn put(&self, at: usize, src: &[u8]) {
        for (i, &b) in src.iter().enumerate() {
            // SAFETY: loom checks the access against every other: the property under test.
            self.0[at + i].with_mut(|p| unsafe { *p = b });
        }
    }

    unsafe fn get(&self, at: usize, dst: &mut [u8]) {
        for (i, d) in dst.iter_mut().enumerate() {
            // SAFETY: as in `put`.
            *d = self.0[at + i].with(|p| unsafe { *p });
        }
    }
}

/// A sender pushes 7 bytes (a frame's two parts) through a ring of 3 in pieces as space frees while the receiver
/// pulls them: loom reports a race if a byte could be overwritten before it is read or read
/// before it is written, and the receiver checks it gets the bytes in order.
#[test]
fn a_ring_never_overwrites_a_byte_not_yet_read() {
    loom::model(|| {
        let shared = Arc::new((
            Lines::default(),
            Cells((0..3).map(|_| UnsafeCell::new(0)).collect()),
        ));
        let sender = {
            let shared = shared.clone();
            loom::thread::spawn(move || {
                let ring = Ring::new(&shared.0, &shared.1);
                // A header of 2 bytes and a payload of 5, as a frame is pushed.
                let (head, payload): (Vec<u8>, Vec<u8>) = ((1..=2).collect(), (3..=7).collect());
                let mut done = 0;
                while done < 7 {
                    let n = if done < 2 {
                        ring.push_two(&head[done..], &payload)
                    } else {
                        ring.push(&payload[done - 2..])
                    };
                    if n == 0 {
                        loom::thread::yield_now();
                    }
                    done += n;
                }
            })
        };
        let ring = Ring::new(&shared.0, &shared.1);
        let mut got = Vec::new();
        while got.len() < 7 {
            let mut buf = [0u8; 2];
            let n = ring.pull(&mut buf);
            if n == 0 {
                loom::thread::yield_now();
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, (1..=7).collect::<Vec<u8>>());
        sender.join().unwrap();
    });
}

/// Rank `q`'s vector (one word) in generation `g` of a region.
fn vector(q: usize, g: u64) -> u64 {
    (g << 8) | q as u64
}

/// Two ranks take one region twice (generations 1 and 2), each generation one start: every
/// read of a rank's slot gives that generation's vector, and loom finds no slot written while
/// it is read (`region`'s protocol: what the first generation left must not pass for the
/// second's start 1, which uses the same half).
#[test]
fn a_region_taken_again_never_shows_the_last_generation() {
    use super::region::Region;
    use crate::shm::Slots;
    loom::model(|| {
        let shared = Arc::new((
            (0..2)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect::<Vec<_>>(),
            Slots::new(2),
        ));
        let rank = |shared: Arc<(Vec<CachePadded<AtomicU64>>, Slots)>, me: usize| {
            let r = Region::new(&shared.0, &shared.1, 1);
            for g in 1..=2 {
                while r.busy(g).is_some() {
                    loom::thread::yield_now();
                }
                r.take(me, g);
                let mine = vector(me, g);
                // SAFETY: rank `me` publishes into its own slots, 8 bytes from a live word;
                // its previous start (of the last generation) completed, and no rank uses
                // that generation any more (`busy` said none).
                unsafe { shared.1.publish(me, 1, &[((&raw const mine).cast(), 8)]) };
                while r.pending(g, 1).is_some() {
                    loom::thread::yield_now();
                }
                for q in 0..2 {
                    // SAFETY: every rank took `g` and published its start 1, and this rank
                    // publishes nothing more before it is done reading.
                    let got = unsafe { shared.1.read(q, 1, |x| x.cast::<u64>().read()) };
                    assert_eq!(got, vector(q, g), "rank {me} read rank {q}'s slot");
                }
                r.done(me, g);
            }
        };
        let other = {
            let shared = shared.clone();
            loom::thread::spawn(move || rank(shared, 1))
        };
        rank(shared, 0);
        other.join().unwrap();
    });
}
