//! Loom models of the rounds of a node's processes (`rounds`), with threads for processes and
//! the slots as cells whose every access loom tracks: loom reports a data race if a slot could
//! be written while another process reads it (a round begun before the others left the one
//! two before) or read before its writer arrived.

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
