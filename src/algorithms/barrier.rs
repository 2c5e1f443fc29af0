//! Barrier schedules: dissemination and a binomial tree.
//!
//! **Dissemination** (Hensgen, Finkel and Manber, "Two algorithms for barrier synchronization",
//! 1988): ⌈log₂ p⌉ rounds of one exchange each, p⌈log₂ p⌉ empty messages in all. Each round is
//! one message latency, so with a core per rank it is the shortest barrier there is.
//!
//! **Tree** (the combining-tree barrier of Yew, Tzeng and Lawrie 1987 and of Mellor-Crummey
//! and Scott 1991, on the binomial tree of `algorithms::binomial_tree`): every rank waits for
//! the arrival of its children, reports its own to its parent, waits for the release from its
//! parent and passes it on to its children. 2⌈log₂ p⌉ latencies on the critical path, twice
//! dissemination's, but about 2.5p messages instead of p⌈log₂ p⌉ (17 against 24 at p = 8, 80
//! against 198 at p = 33). The fewer messages were meant for more ranks than cores, where a
//! message may mean a context switch; measured on 2 cores, dissemination is faster all the
//! same (`select::choose_barrier`), since its rounds advance every rank at once while the
//! tree's hops wait for one rank at a time to be scheduled. The tree stays as a choice.
//!
//! # Mixed algorithms fail, and do not hang
//!
//! Every message carries the algorithm's id in its tag variant, so a rank that receives a
//! message of the other algorithm fails the run (`Error::Mismatch`), and with it every rank.
//! No rank can pass a barrier in which some rank runs the other algorithm: a rank passes
//! only after hearing, through a chain of messages of its own algorithm, from every rank. But
//! a receive that never comes would hang instead of failing: with a plain binomial tree, a
//! dissemination rank may wait for a tree rank that sends only to its parent, while that
//! parent waits for the dissemination rank. So the tree is laid out to meet dissemination's
//! first round on the ring edges r − 1 → r:
//!
//! * the tree is the binomial tree on the *mirrored* labels v = (p − r) mod p, so that the
//!   children of rank r are r − 1, r − 2, r − 4, … (received in that order, as dissemination
//!   receives) and a leaf's (odd v's) parent is r + 1;
//! * a rank with an even label v ≥ 2, whose right neighbour r + 1 is a leaf, first sends that
//!   leaf an empty *hello*, and the leaf receives it after reporting its arrival (off the
//!   critical path: the hello was sent at the start).
//!
//! Then on every ring edge r − 1 → r but 0 → 1, under either algorithm, the first thing rank
//! r − 1 does is post a message to r, and the first message rank r waits for is from r − 1
//! (a dissemination rank's round 0; a tree rank's first child, or its hello). In a mix of the
//! two algorithms, at least two ring edges join ranks of different algorithms, so one of them
//! is not 0 → 1, and its receiver meets the other algorithm's message in its first receive:
//! the run fails at once. The unit tests below check this on a model of the schedules for
//! every assignment of the two algorithms to up to 13 ranks.

use crate::algorithms::binomial_tree::{children, parent};
use crate::error::Result;
use crate::mailbox::Tag;
use crate::transport::Transport;

/// The barrier schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// Dissemination ([`dissemination`]).
    Dissemination,
    /// Up and down a binomial tree ([`tree`]).
    Tree,
}

/// Runs barrier `schedule`.
pub(crate) fn run<Tr: Transport>(t: &Tr, schedule: Schedule, tag: Tag) -> Result<()> {
    match schedule {
        Schedule::Tree => tree(t, tag),
        Schedule::Dissemination => dissemination(t, tag),
    }
}

/// Dissemination barrier (Hensgen, Finkel and Manber, "Two algorithms for barrier
/// synchronization", 1988): in round k = 0, 1, … while 2ᵏ < p, rank r sends an empty message to
/// (r + 2ᵏ) mod p and receives one from (r − 2ᵏ) mod p. After ⌈log₂ p⌉ rounds every rank has
/// heard, directly or through others, from every rank. Works for any p; the distances 2ᵏ are
/// all different modulo p, so no edge carries two rounds' messages.
pub(crate) fn dissemination<Tr: Transport>(t: &Tr, tag: Tag) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    let mut dist = 1;
    while dist < p {
        let dest = (r + dist) % p;
        let src = (r + p - dist) % p;
        t.sendrecv::<u8>(dest, &[], src, &mut [], tag)?;
        dist *= 2;
    }
    Ok(())
}

/// One step of the tree barrier: an empty message to, or from, a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send an empty message to this rank.
    Send(usize),
    /// Receive an empty message from this rank.
    Recv(usize),
}

/// The tree barrier's steps for rank `r` of `p`, in order, handed to `step` (see the module
/// docs): the hello to a leaf neighbour, the arrivals of the children, this rank's arrival to
/// its parent (a leaf: then the hello from its left neighbour), the release from the parent,
/// the release to the children (largest subtree first).
pub(crate) fn tree_steps(
    r: usize,
    p: usize,
    mut step: impl FnMut(Step) -> Result<()>,
) -> Result<()> {
    // The labels are mirrored, v = (p − r) mod p, an involution: the same map takes a label
    // back to its rank.
    let mirror = |v: usize| (p - v) % p;
    let v = mirror(r);
    if v >= 2 && v % 2 == 0 {
        step(Step::Send((r + 1) % p))?;
    }
    for c in children(v, p) {
        step(Step::Recv(mirror(c)))?;
    }
    if let Some(up) = parent(v).map(mirror) {
        step(Step::Send(up))?;
        // A leaf (odd label) other than rank 1, whose left neighbour is the root, gets a hello.
        if v % 2 == 1 && r != 1 {
            step(Step::Recv(r - 1))?;
        }
        step(Step::Recv(up))?;
    }
    for c in children(v, p).rev() {
        step(Step::Send(mirror(c)))?;
    }
    Ok(())
}

/// The tree barrier (see the module docs): arrivals up the mirrored binomial tree to rank 0,
/// the release back down, empty messages throughout.
pub(crate) fn tree<Tr: Transport>(t: &Tr, tag: Tag) -> Result<()> {
    tree_steps(t.rank(), t.size(), |s| match s {
        Step::Send(to) => t.send::<u8>(to, tag, &[]),
        Step::Recv(from) => t.recv::<u8>(from, tag, &mut []),
    })
}

#[cfg(all(test, loom))]
mod loom;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// What a rank runs in the model.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Alg {
        Dissemination,
        Tree,
    }

    /// Rank `r`'s steps under `alg`; a dissemination round's `sendrecv` posts its send before
    /// it waits for the receive, so it is a send then a receive.
    fn steps(alg: Alg, r: usize, p: usize) -> Vec<Step> {
        let mut out = Vec::new();
        match alg {
            Alg::Dissemination => {
                let mut dist = 1;
                while dist < p {
                    out.push(Step::Send((r + dist) % p));
                    out.push(Step::Recv((r + p - dist) % p));
                    dist *= 2;
                }
            }
            Alg::Tree => tree_steps(r, p, |s| {
                out.push(s);
                Ok(())
            })
            .unwrap(),
        }
        out
    }

    /// How a model run ends.
    #[derive(Debug, PartialEq, Eq)]
    enum End {
        /// Every rank finished and every message was received; messages sent.
        Passed(usize),
        /// Some rank received a message of the other algorithm.
        Mismatch,
        /// No rank can move and some have not finished.
        Stuck,
    }

    /// Runs the ranks' steps with unbounded FIFO queues per directed edge, each message
    /// labelled with its sender's algorithm, until no rank can move. Receives block and
    /// sends do not, as with the mailboxes' eager cells; the schedules form a Kahn network,
    /// so whether some receive meets a foreign message does not depend on the interleaving.
    fn run_model(algs: &[Alg]) -> End {
        let p = algs.len();
        let progs: Vec<Vec<Step>> = (0..p).map(|r| steps(algs[r], r, p)).collect();
        let mut pc = vec![0; p];
        let mut queues = vec![VecDeque::new(); p * p];
        let mut sent = 0;
        let mut moved = true;
        while moved {
            moved = false;
            for r in 0..p {
                while let Some(&s) = progs[r].get(pc[r]) {
                    match s {
                        Step::Send(to) => {
                            queues[r * p + to].push_back(algs[r]);
                            sent += 1;
                        }
                        Step::Recv(from) => match queues[from * p + r].pop_front() {
                            None => break,
                            Some(a) if a != algs[r] => return End::Mismatch,
                            Some(_) => {}
                        },
                    }
                    pc[r] += 1;
                    moved = true;
                }
            }
        }
        let done = (0..p).all(|r| pc[r] == progs[r].len());
        if done && queues.iter().all(VecDeque::is_empty) {
            End::Passed(sent)
        } else {
            End::Stuck
        }
    }

    /// The tree alone completes with 2(p − 1) + ⌊(p − 1)/2⌋ messages; every step names a
    /// rank in range and not this one.
    #[test]
    fn tree_completes_with_few_messages() {
        for p in (1..=40).chain([63, 64, 65, 100]) {
            for r in 0..p {
                for s in steps(Alg::Tree, r, p) {
                    let (Step::Send(q) | Step::Recv(q)) = s;
                    assert!(q < p && q != r, "p={p} r={r}: {s:?}");
                }
            }
            let want = 2 * (p - 1) + (p - 1) / 2;
            assert_eq!(run_model(&vec![Alg::Tree; p]), End::Passed(want), "p={p}");
            let d = run_model(&vec![Alg::Dissemination; p]);
            assert_eq!(d, End::Passed(p * (p.next_power_of_two().ilog2() as usize)));
        }
    }

    /// Every mix of the two algorithms on up to 13 ranks (and a sample on 31 to 33) meets a
    /// foreign message: none passes, none is stuck.
    #[test]
    fn every_mix_fails_and_none_hangs() {
        let check = |p: usize, mask: u64| {
            let algs: Vec<Alg> = (0..p)
                .map(|r| {
                    if mask >> r & 1 == 1 {
                        Alg::Tree
                    } else {
                        Alg::Dissemination
                    }
                })
                .collect();
            let mixed = algs.iter().any(|&a| a != algs[0]);
            let end = run_model(&algs);
            if mixed {
                assert_eq!(end, End::Mismatch, "p={p}, {algs:?}");
            } else {
                assert!(matches!(end, End::Passed(_)), "p={p}, {algs:?}");
            }
        };
        for p in 1..=13 {
            for mask in 0..1u64 << p {
                check(p, mask);
            }
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for p in [31, 32, 33] {
            for _ in 0..2000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                check(p, x & ((1 << p) - 1));
            }
        }
    }
}
