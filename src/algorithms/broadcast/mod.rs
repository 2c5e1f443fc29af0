//! Broadcast schedules: the root's `buf` ends up in `buf` on every rank.
//!
//! Four algorithms, one file each:
//!
//! * [`binomial`]: the binomial tree rooted at the root, ⌈log₂ p⌉ rounds of the whole vector;
//! * [`pipelined_tree`]: Träff's post-order binary tree, the vector pipelined down it in blocks;
//! * [`scatter_allgather`]: van de Geijn's binomial scatter of p pieces and a ring allgather;
//! * [`direct`](mod@direct) (shared memory only): every rank copies straight from the root's buffer.
//!
//! The first three are written against `Transport` and work on *relative* ranks, in which the
//! root is a fixed number (0 for the binomial tree and the scatter, p − 1 for the post-order
//! tree, whose root is its highest rank). Every one of them sends each of its messages even
//! when it is empty, so that a rank whose length differs from the others' meets a mismatch
//! instead of waiting for a message that never comes. The mismatch fails the run, so every
//! rank still waiting returns `Err`; a rank that had already finished its part (the root,
//! whose sends may be eager) may return `Ok`, which is why `Comm::broadcast_with` agrees on
//! root, length, type and algorithm first.

mod binomial;
pub(crate) mod direct;
mod pipelined_tree;
mod scatter_allgather;

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::shm::Member;
use crate::transport::Transport;

/// The broadcast schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// The binomial tree ([`binomial`]).
    Binomial,
    /// Träff's post-order binary tree, pipelined ([`pipelined_tree`]).
    PipelinedTree,
    /// Van de Geijn's scatter and allgather ([`scatter_allgather`]).
    ScatterAllgather,
}

/// Runs broadcast `schedule` of `buf` from `root`, in pipeline blocks of `block` elements
/// where the schedule has them.
pub(crate) fn run<Tr: Transport, T: Elem>(
    t: &Tr,
    buf: &mut [T],
    root: usize,
    schedule: Schedule,
    block: usize,
    tag: Tag,
) -> Result<()> {
    match schedule {
        Schedule::Binomial => binomial::binomial(t, buf, root, tag),
        Schedule::PipelinedTree => pipelined_tree::pipelined_tree(t, buf, root, block, tag),
        Schedule::ScatterAllgather => scatter_allgather::scatter_allgather(t, buf, root, tag),
    }
}

/// The shared-memory direct broadcast of `buf` from `root`.
pub(crate) fn direct<T: Elem>(comm: &Member, buf: &mut [T], root: usize, tag: Tag) -> Result<()> {
    direct::direct(comm, buf, root, tag)
}

/// The schedules called directly, without the agreement of `Comm::broadcast_with` in front:
/// what they must catch on their own.
#[cfg(all(test, not(loom)))]
mod runs {
    use super::{direct, run};
    use crate::error::Error;
    use crate::mailbox::Tag;
    use crate::shm::testing::spmd_with;
    use crate::shm::Member;
    use crate::transport::shm::ShmTransport;
    use std::time::Duration;

    /// Ranks whose waits time out, so that a hang fails the test instead of stalling it.
    fn ranks<R: Send>(p: usize, body: impl Fn(&Member) -> R + Sync) -> crate::Result<Vec<R>> {
        spmd_with(p, Duration::from_secs(30), body)
    }

    /// The transport schedules, with their blocks.
    const SCHEDULES: [(super::Schedule, usize); 5] = [
        (super::Schedule::Binomial, 0),
        (super::Schedule::PipelinedTree, 1),
        (super::Schedule::PipelinedTree, 7),
        (super::Schedule::PipelinedTree, 1000),
        (super::Schedule::ScatterAllgather, 0),
    ];

    /// One rank with another length is a mismatch error, not a hang, whichever rank it is.
    /// Without the agreement, a rank that has finished its part before the mismatch is found
    /// (the root after eager sends, say) may return `Ok`; every rank still waiting fails.
    #[test]
    fn schedules_catch_a_length_mismatch() {
        for p in [2usize, 3, 5, 8] {
            for (alg, block) in SCHEDULES {
                for (n, n_odd) in [(0usize, 1usize), (1, 0), (8, 16), (300, 0), (2000, 1999)] {
                    for (odd, root) in [(0, 0), (p - 1, 0), (1, p - 1)] {
                        let out = ranks(p, |m| {
                            let len = if m.rank() == odd { n_odd } else { n };
                            let mut v = vec![m.rank() as u64; len];
                            run(
                                &ShmTransport::coll(m, "test"),
                                &mut v,
                                root,
                                alg,
                                block,
                                Tag::P2P,
                            )
                        })
                        .unwrap();
                        let what = format!("{alg:?}/{block} p={p} n={n} m={n_odd} odd={odd}");
                        assert!(out.iter().any(|r| r.is_err()), "{what}: {out:?}");
                        for e in out.iter().filter_map(|r| r.as_ref().err()) {
                            assert!(
                                matches!(e.root_cause(), Error::Mismatch { .. }),
                                "{what}: {e}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Direct: lengths or element types that differ fail every rank with a mismatch, and no
    /// buffer changes.
    #[test]
    fn direct_catches_lengths_and_types_without_touching_buffers() {
        for p in [2usize, 3, 6] {
            for odd in [0, 1, p - 1] {
                for (n, n_odd) in [(0usize, 1usize), (5, 4), (10_000, 0)] {
                    let out = ranks(p, |m| {
                        let r = m.rank() as u64;
                        if m.rank() == odd && n == 5 {
                            // Another element type, of the same length.
                            let mut v = vec![r as u32; n];
                            let e = direct(m, &mut v, 0, Tag::P2P);
                            (e, v.iter().all(|&x| x == r as u32))
                        } else {
                            let len = if m.rank() == odd { n_odd } else { n };
                            let mut v = vec![r; len];
                            let e = direct(m, &mut v, 0, Tag::P2P);
                            (e, v.iter().all(|&x| x == r))
                        }
                    })
                    .unwrap();
                    for (r, (res, kept)) in out.into_iter().enumerate() {
                        let e = res.expect_err("a mismatch");
                        assert!(
                            matches!(e.root_cause(), Error::Mismatch { .. }),
                            "p={p} odd={odd} rank {r}: {e}"
                        );
                        assert!(kept, "p={p} odd={odd} n={n}: rank {r}'s buffer changed");
                    }
                }
            }
        }
    }

    /// Direct: ranks that disagree about the root fail every rank, whatever the pattern.
    #[test]
    fn direct_catches_different_roots() {
        type Roots = fn(usize, usize) -> usize;
        let patterns: [(&str, Roots); 4] = [
            ("the last rank names rank 1", |r, p| usize::from(r == p - 1)),
            (
                "the last rank names itself",
                |r, p| if r == p - 1 { r } else { 0 },
            ),
            ("every rank names itself", |r, _| r),
            ("every rank names the next", |r, p| (r + 1) % p),
        ];
        for p in [2usize, 3, 5] {
            for (what, root) in patterns {
                let out = ranks(p, |m| {
                    let mut v = vec![m.rank() as u64; 9];
                    direct(m, &mut v, root(m.rank(), p), Tag::P2P)
                })
                .unwrap();
                for (r, res) in out.into_iter().enumerate() {
                    let e = res.expect_err(what);
                    assert!(
                        matches!(e.root_cause(), Error::Mismatch { .. }),
                        "p={p}, {what}, rank {r}: {e}"
                    );
                }
            }
        }
    }

    /// Direct on its own: a root out of range is an error, p = 1 and empty vectors work.
    #[test]
    fn direct_edge_cases() {
        let out = ranks(1, |m| {
            let mut v = vec![4u64; 3];
            direct(m, &mut v, 0, Tag::P2P)?;
            direct(m, &mut v[..0], 0, Tag::P2P)?;
            Ok::<_, Error>(v)
        })
        .unwrap();
        assert_eq!(out[0].as_ref().unwrap(), &vec![4u64; 3]);
        let out = ranks(3, |m| {
            let mut v: Vec<u64> = Vec::new();
            direct(m, &mut v, 2, Tag::P2P)?;
            direct(m, &mut v, 3, Tag::P2P)
        })
        .unwrap();
        for res in out {
            let e = res.expect_err("root 3 of 3 ranks");
            assert!(
                matches!(e.root_cause(), Error::RankOutOfRange { .. }),
                "{e}"
            );
        }
    }
}
