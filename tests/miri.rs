//! The library's unsafe paths in runs small enough for Miri, which checks them for undefined
//! behaviour (out-of-bounds or dangling accesses, aliasing violations, data races):
//!
//! ```text
//! MIRIFLAGS="-Zmiri-isolation-error=warn-nobacktrace -Zmiri-ignore-leaks" \
//!     cargo +nightly miri test --test miri
//! ```
//!
//! (isolation makes the topology's reads of /sys fail, so the team runs on the flat topology).
//! The suite runs them as ordinary tests too. What they reach: the mailboxes' eager and
//! rendezvous copies, the single-copy board and its direct allreduce, the flag barrier, the
//! pipelined algorithms in blocks of two elements, the hierarchical ones on two groups of a
//! synthetic topology (both levels), allgatherv and a split, the folded persistent allreduce's
//! slots with starts in flight and a `Persistent` forgotten, and requests in flight waited out of order and forgotten, persistent collectives run as
//! requests, and the errors of mismatched calls. Under Miri a request's task runs to its end
//! when first driven, on the rank's own stack (a task's stack and its switches are `mmap` and
//! inline assembly, which Miri does not run: `sync::task`), so Miri checks everything about
//! requests but the suspension of a task; the ordinary run of this suite has real tasks. Not
//! reached: pinning and anything between processes. Forgetting a request or a persistent
//! collective leaks by design, which Miri would report: `-Zmiri-ignore-leaks` (`.ci/run`).

mod common;

use common::span_op;
use corecoll::op;
use corecoll::unstable::EAGER_MAX;
use corecoll::{Algorithm, Block, Comm, Error, Peer, Pinning, Result, Team};
use std::time::Duration;

/// A team of `p` unpinned ranks whose waits time out rather than hang.
fn team(p: usize) -> Team {
    Team::builder()
        .ranks(p)
        .pinning(Pinning::None)
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap()
}

/// Rank `r`'s element `i`.
fn val(r: usize, i: usize) -> u64 {
    (r as u64 + 1) * 1000 + i as u64
}

/// The spans of rank `r`: element `i` is (r, r + 1) shifted by `i`'s own offset.
fn span(r: usize, i: usize) -> (u32, u32) {
    let o = 100 * i as u32;
    (o + r as u32, o + r as u32 + 1)
}

/// Rank `r`'s `n` spans.
fn spans(r: usize, n: usize) -> Vec<(u32, u32)> {
    (0..n).map(|i| span(r, i)).collect()
}

/// The spans of `p` ranks combined in rank order, element `i`.
fn whole(p: usize, i: usize) -> (u32, u32) {
    (span(0, i).0, span(p - 1, i).1)
}

/// Runs `f` on `p` ranks and unwraps every rank's result.
fn on<R: Send>(p: usize, f: impl Fn(&Comm) -> Result<R> + Sync) -> Vec<R> {
    let out = team(p).run(f).unwrap();
    out.into_iter()
        .enumerate()
        .map(|(r, res)| res.unwrap_or_else(|e| panic!("rank {r}: {e}")))
        .collect()
}

#[test]
fn persistent_folds_with_starts_in_flight_and_one_forgotten() {
    for p in [2, 3] {
        on(p, |comm| {
            let r = comm.rank();
            let mut sums = vec![0u64; 3];
            let mut chain = vec![(0u32, 0u32); 2];
            comm.scope(|s| {
                let mut a = s.allreduce_init(&mut sums, op::Sum)?;
                let mut b = s.allreduce_init_with(&mut chain, span_op(), Algorithm::Linear)?;
                for k in 0..3u64 {
                    a.buffer()?
                        .iter_mut()
                        .enumerate()
                        .for_each(|(i, x)| *x = val(r, i) + k);
                    b.buffer()?.copy_from_slice(&spans(r, 2));
                    a.start()?;
                    b.start()?;
                    // Waited in an order that depends on the rank.
                    if r % 2 == 0 {
                        a.wait()?;
                        b.wait()?;
                    } else {
                        b.wait()?;
                        a.wait()?;
                    }
                    for (i, &x) in a.buffer()?.iter().enumerate() {
                        assert_eq!(x, (0..p).map(|q| val(q, i) + k).sum::<u64>());
                    }
                    for (i, &x) in b.buffer()?.iter().enumerate() {
                        assert_eq!(x, whole(p, i));
                    }
                }
                // Forgotten with a start in flight: its peers complete theirs from the copy in
                // the slots, and the buffer stays borrowed to the end of the scope.
                a.start()?;
                std::mem::forget(a);
                b.buffer()?.copy_from_slice(&spans(r, 2));
                b.start()?;
                b.wait()
            })?;
            Ok(())
        });
    }
}

#[test]
fn requests_waited_out_of_order_forgotten_and_persistent_broadcasts() {
    let p = 3;
    let got = on(p, |comm| {
        let r = comm.rank();
        let mut a: Vec<u64> = (0..4).map(|i| val(r, i)).collect();
        let mut b = spans(r, 3);
        let mut c = vec![r as u64; 2];
        // Longer than the slots' 248 bytes: a request per start.
        let mut long = vec![r as u64; 40];
        comm.scope(|s| {
            let ra = s.iallreduce(&mut a, op::Sum)?;
            let rb = s.iallreduce(&mut b, span_op())?;
            std::mem::forget(s.ibroadcast(&mut c, 2)?);
            rb.wait()?;
            ra.wait()?;
            let mut bc = s.broadcast_init(&mut long, 1)?;
            for k in 0..2u64 {
                if r == 1 {
                    bc.buffer()?.fill(k + 10);
                }
                bc.start()?;
                bc.wait()?;
                assert!(bc.buffer()?.iter().all(|&x| x == k + 10));
            }
            Ok(())
        })?;
        Ok((a, b, c))
    });
    for (a, b, c) in got {
        assert_eq!(
            a,
            (0..4)
                .map(|i| (0..p).map(|q| val(q, i)).sum())
                .collect::<Vec<u64>>()
        );
        assert!((0..3).all(|i| b[i] == whole(p, i)));
        assert_eq!(
            c,
            [2, 2],
            "the forgotten broadcast completed by the end of its scope"
        );
    }
}

#[test]
fn eager_and_rendezvous_messages_with_tags_and_any_source() {
    // Above EAGER_MAX bytes a message goes by rendezvous (the receiver copies from the
    // sender's buffer).
    let long = EAGER_MAX / 8 + 3;
    let got = on(3, |comm| {
        let r = comm.rank();
        let p = comm.size();
        let short: Vec<u64> = (0..5).map(|i| val(r, i)).collect();
        let big: Vec<u64> = (0..long).map(|i| val(r, i)).collect();
        let mut from_any = vec![0u64; 5];
        let mut tagged = vec![0u64; long];
        // Each rank sends to the next; a tagged long message and an untagged short one.
        let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
        comm.sendrecv_tagged(next, 7, &big, prev, 7, &mut tagged)?;
        comm.send(next, &short)?;
        let st = comm.recv(Peer::Any, &mut from_any)?;
        assert_eq!(st.source, Some(prev));
        // No peer on either side: nothing moves.
        let mut none = vec![0u64; 2];
        comm.sendrecv(Peer::None, &big, Peer::None, &mut none)?;
        assert_eq!(none, [0, 0]);
        Ok((from_any, tagged))
    });
    for (r, (from_any, tagged)) in got.into_iter().enumerate() {
        let prev = (r + 2) % 3;
        assert_eq!(from_any, (0..5).map(|i| val(prev, i)).collect::<Vec<_>>());
        assert_eq!(tagged, (0..long).map(|i| val(prev, i)).collect::<Vec<_>>());
    }
}

#[test]
fn collectives_on_three_ranks() {
    let algs = [
        Algorithm::Auto,
        Algorithm::Linear,
        Algorithm::Ring { block: Block::Auto },
        Algorithm::RecursiveDoubling,
        Algorithm::Direct,
    ];
    let p = 3;
    let n = 5;
    let got = on(p, |comm| {
        let r = comm.rank();
        let mine: Vec<u64> = (0..n).map(|i| val(r, i)).collect();
        let mut sums = Vec::new();
        for alg in algs {
            let mut v = mine.clone();
            comm.allreduce_with(&mut v, op::Sum, alg)?;
            sums.push(v);
            if matches!(alg, Algorithm::Ring { .. }) {
                continue; // it refuses non-commutative ops
            }
            let mut s = spans(r, n);
            comm.allreduce_with(&mut s, span_op(), alg)?;
            assert!((0..n).all(|i| s[i] == whole(p, i)), "{alg:?}");
        }
        let mut b = mine.clone();
        comm.broadcast(&mut b, 1)?;
        let mut red = mine.clone();
        comm.reduce(&mut red, op::Max, 2)?;
        let mut all = vec![0u64; n * p];
        comm.allgather(&mine, &mut all)?;
        let mut t = vec![0u64; n * p];
        let sent: Vec<u64> = (0..n * p).map(|i| val(r, i)).collect();
        comm.alltoall(&sent, &mut t)?;
        let mut sc = spans(r, n);
        comm.scan(&mut sc, span_op())?;
        let mut rs = vec![0u64; 2];
        let from: Vec<u64> = (0..2 * p).map(|i| val(r, i)).collect();
        comm.reduce_scatter_block(&from, &mut rs, op::Sum)?;
        comm.barrier()?;
        Ok((sums, b, red, all, t, sc, rs))
    });
    for (r, (sums, b, red, all, t, sc, rs)) in got.into_iter().enumerate() {
        let sum = |i: usize| (0..p).map(|q| val(q, i)).sum::<u64>();
        for v in sums {
            assert_eq!(v, (0..n).map(sum).collect::<Vec<_>>());
        }
        assert_eq!(b, (0..n).map(|i| val(1, i)).collect::<Vec<_>>());
        if r == 2 {
            assert_eq!(red, (0..n).map(|i| val(p - 1, i)).collect::<Vec<_>>());
        }
        let expect: Vec<u64> = (0..p)
            .flat_map(|q| (0..n).map(move |i| val(q, i)))
            .collect();
        assert_eq!(all, expect);
        let expect: Vec<u64> = (0..p)
            .flat_map(|q| (0..n).map(move |i| val(q, r * n + i)))
            .collect();
        assert_eq!(t, expect);
        assert!((0..n).all(|i| sc[i] == whole(r + 1, i)));
        assert_eq!(rs, (2 * r..2 * r + 2).map(sum).collect::<Vec<_>>());
    }
}

#[test]
fn mismatched_calls_fail_on_every_rank() {
    let out = team(3)
        .run(|comm| {
            let mut v = vec![1u64; 4 + comm.rank() % 2];
            comm.allreduce(&mut v, op::Sum)
        })
        .unwrap();
    assert!(
        out.iter()
            .all(|e| matches!(e, Err(Error::Mismatch { .. } | Error::Aborted { .. }))),
        "{out:?}"
    );
    // A persistent allreduce set up with lengths that differ.
    let out = team(3)
        .run(|comm| {
            let mut w = vec![1u64; 2 + usize::from(comm.rank() == 1)];
            comm.scope(|s| s.allreduce_init(&mut w, op::Sum).map(|_| ()))
        })
        .unwrap();
    assert!(out.iter().all(Result::is_err), "{out:?}");
}

#[test]
fn hierarchies_pipelines_and_split_on_four_ranks_in_two_groups() {
    use corecoll::algorithm::{Allgather, Broadcast, Gather};
    use corecoll::Topology;
    let p = 4;
    let n = 5;
    let b2 = Block::Elements(2);
    let allreduces = [
        Algorithm::Hierarchical { segment: b2 },
        Algorithm::HierarchicalDirect,
        Algorithm::DualRoot { block: b2 },
        Algorithm::TwoTree { block: b2 },
        Algorithm::PipelinedTree { block: b2 },
        Algorithm::Chain { block: b2 },
        Algorithm::Rabenseifner,
    ];
    let broadcasts = [
        Broadcast::Hierarchical,
        Broadcast::HierarchicalDirect,
        Broadcast::PipelinedTree { block: b2 },
        Broadcast::ScatterAllgather,
        Broadcast::Direct,
    ];
    let allgathers = [
        Allgather::Hierarchical,
        Allgather::HierarchicalDirect,
        Allgather::Bruck,
        Allgather::Direct,
    ];
    // Two groups of two cores: the hierarchical algorithms have two levels to run.
    let team = Team::builder()
        .ranks(p)
        .topology(Topology::synthetic(&[2, 2]).unwrap())
        .pinning(Pinning::Compact)
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    let out = team
        .run(|comm| -> Result<()> {
            let r = comm.rank();
            assert!(
                comm.location(r).is_some(),
                "placed in the synthetic topology"
            );
            for alg in allreduces {
                let mut s = spans(r, n);
                comm.allreduce_with(&mut s, span_op(), alg)?;
                assert!((0..n).all(|i| s[i] == whole(p, i)), "{alg:?}");
            }
            for alg in broadcasts {
                let mut v: Vec<u64> = (0..n).map(|i| val(r, i)).collect();
                comm.broadcast_with(&mut v, 3, alg)?;
                assert!((0..n).all(|i| v[i] == val(3, i)), "{alg:?}");
            }
            let mine: Vec<u64> = (0..n).map(|i| val(r, i)).collect();
            let all: Vec<u64> = (0..p)
                .flat_map(|q| (0..n).map(move |i| val(q, i)))
                .collect();
            for alg in allgathers {
                let mut got = vec![0u64; n * p];
                comm.allgather_with(&mine, &mut got, alg)?;
                assert_eq!(got, all, "{alg:?}");
            }
            let mut got = vec![0u64; n * p];
            comm.gather_with(&mine, &mut got, 1, Gather::Direct)?;
            if r == 1 {
                assert_eq!(got, all);
            }
            // Rank q sends q + 1 elements to each rank; displacements leave one gap.
            let counts: Vec<usize> = (0..p).map(|q| q + 1).collect();
            let displs: Vec<usize> = (0..p).map(|q| q * (q + 1) / 2 + q).collect();
            let mut vgot = vec![0u64; displs[p - 1] + counts[p - 1]];
            comm.allgatherv(&mine[..r + 1], &mut vgot, &counts, &displs)?;
            for q in 0..p {
                let part = &vgot[displs[q]..displs[q] + counts[q]];
                assert!(part.iter().enumerate().all(|(i, &x)| x == val(q, i)));
            }
            // Ranks {0, 2} and {1, 3}, ordered by descending key.
            let sub = comm.split(Some(r % 2), p - r)?.expect("a color");
            let mut v: Vec<u64> = (0..n).map(|i| val(r, i)).collect();
            sub.allreduce(&mut v, op::Sum)?;
            let pair = [r % 2, r % 2 + 2];
            assert!((0..n).all(|i| v[i] == pair.iter().map(|&q| val(q, i)).sum::<u64>()));
            Ok(())
        })
        .unwrap();
    assert!(out.iter().all(Result::is_ok), "{out:?}");
}
