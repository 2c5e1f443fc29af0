//! `Comm::split` as `MPI_Comm_split`: colours and keys (reversed keys, equal keys falling back
//! to the parent's rank order, `None` colours), each new communicator's rank, size and team
//! ranks checked against a sequential reference; barriers and point-to-point rings on the new
//! communicators (and their separation from the parent's messages); splits of splits; many
//! splits in a row; sub-communicators running different operations at once; and a property
//! test over random team sizes and votes.

use corecoll::{Comm, Error, Team};
use proptest::prelude::*;

type Vote = (Option<usize>, usize);

/// What a rank sees of a communicator: its own rank and the team rank of every rank.
#[derive(Debug, Clone, PartialEq, Eq)]
struct View {
    rank: usize,
    members: Vec<usize>,
}

fn view(c: &Comm) -> View {
    let members = (0..c.size())
        .map(|i| c.team_rank(i).expect("team_rank of a rank below size"))
        .collect();
    assert_eq!(c.team_rank(c.size()), None, "team_rank past the end");
    View {
        rank: c.rank(),
        members,
    }
}

/// The sequential reference: for a parent communicator whose rank i is team rank
/// `parent[i]`, the view each parent rank gets from a split with `votes` (`None` for a `None`
/// colour).
fn reference(parent: &[usize], votes: &[Vote]) -> Vec<Option<View>> {
    assert_eq!(parent.len(), votes.len());
    (0..votes.len())
        .map(|r| {
            let color = votes[r].0?;
            let mut group: Vec<(usize, usize)> = (0..votes.len())
                .filter(|&q| votes[q].0 == Some(color))
                .map(|q| (votes[q].1, q))
                .collect();
            group.sort();
            Some(View {
                rank: group.iter().position(|&(_, q)| q == r).unwrap(),
                members: group.iter().map(|&(_, q)| parent[q]).collect(),
            })
        })
        .collect()
}

/// A barrier, a `sendrecv` ring and a `send`/`recv` ring on `c`; every rank passes its team
/// rank, and checks it received its left neighbour's.
fn exercise(c: &Comm) -> Result<(), Error> {
    let (r, p) = (c.rank(), c.size());
    let (right, left) = ((r + 1) % p, (r + p - 1) % p);
    let me = c.team_rank(r).unwrap() as u64;
    let want = c.team_rank(left).unwrap() as u64;
    c.barrier()?;
    let mut got = [u64::MAX; 2];
    c.sendrecv(right, &[me, me + 1000], left, &mut got)?;
    assert_eq!(got, [want, want + 1000], "sendrecv ring at {r} of {p}");
    if p > 1 {
        let mut got = [u64::MAX];
        if r == 0 {
            c.send(right, &[me])?;
            c.recv(left, &mut got)?;
        } else {
            c.recv(left, &mut got)?;
            c.send(right, &[me])?;
        }
        assert_eq!(got, [want], "send/recv ring at {r} of {p}");
    }
    c.barrier()
}

/// Splits the world of a `p`-rank team with `votes(rank, p)`, exercises each new communicator,
/// and checks every rank's view against the reference.
fn check_split(team: &Team, name: &str, votes: impl Fn(usize, usize) -> Vote + Sync) {
    let p = team.size();
    let all: Vec<Vote> = (0..p).map(|r| votes(r, p)).collect();
    let want = reference(&(0..p).collect::<Vec<_>>(), &all);
    let got = team
        .run(|comm| -> Result<Option<View>, Error> {
            let (color, key) = votes(comm.rank(), comm.size());
            let sub = comm.split(color, key)?;
            match &sub {
                Some(s) => exercise(s)?,
                None => assert_eq!(color, None),
            }
            comm.barrier()?;
            Ok(sub.as_ref().map(view))
        })
        .unwrap_or_else(|e| panic!("{name}: p = {p}: {e}"));
    let got: Vec<Option<View>> = got.into_iter().map(Result::unwrap).collect();
    assert_eq!(got, want, "{name}: p = {p}, votes {all:?}");
}

type Scheme = fn(usize, usize) -> Vote;

const SCHEMES: &[(&str, Scheme)] = &[
    ("one colour, identity keys", |r, _| (Some(0), r)),
    ("one colour, reversed keys", |r, p| (Some(7), p - r)),
    ("one colour, equal keys", |_, _| (Some(3), 5)),
    ("three colours, identity keys", |r, _| (Some(r % 3), r)),
    ("two colours, reversed keys", |r, p| {
        (Some(r % 2), p - 1 - r)
    }),
    ("blocks of four, equal keys", |r, _| (Some(r / 4), 0)),
    ("every rank alone", |r, _| (Some(r), 0)),
    ("sparse colour numbers", |r, _| {
        (Some(1000 * (r % 2)), usize::MAX - r)
    }),
    ("some None, keys with ties", |r, _| {
        (if r % 3 == 1 { None } else { Some(r % 2) }, (r * 7) % 5)
    }),
    ("all None", |r, _| (None, r)),
    ("only rank 0 in", |r, _| {
        (if r == 0 { Some(1) } else { None }, 0)
    }),
];

#[test]
fn split_matches_the_reference() {
    for p in [1, 2, 3, 5, 8, 13, 17, 32, 64] {
        let team = Team::new(p).unwrap();
        for (name, scheme) in SCHEMES {
            check_split(&team, name, scheme);
        }
    }
}

#[test]
fn reference_examples() {
    let votes = [
        (Some(0), 1),
        (Some(1), 0),
        (Some(0), 0),
        (None, 0),
        (Some(0), 1),
    ];
    let want = reference(&[10, 11, 12, 13, 14], &votes);
    let v = |rank, members: &[usize]| {
        Some(View {
            rank,
            members: members.to_vec(),
        })
    };
    assert_eq!(
        want,
        vec![
            v(1, &[12, 10, 14]),
            v(0, &[11]),
            v(0, &[12, 10, 14]),
            None,
            v(2, &[12, 10, 14]),
        ]
    );
}

/// World → colour r % 2 with reversed keys → blocks of two → a final split with equal keys;
/// each level checked against the reference applied to the level above.
#[test]
fn split_of_a_split_of_a_split() {
    let p = 12;
    let got = corecoll::run(p, |world| -> Result<Vec<Option<View>>, Error> {
        let r = world.rank();
        let a = world.split(Some(r % 2), p - r)?.unwrap();
        exercise(&a)?;
        let b = a.split(Some(a.rank() / 2), a.rank())?.unwrap();
        exercise(&b)?;
        let c = b.split(if b.rank() == 0 { None } else { Some(0) }, 0)?;
        if let Some(c) = &c {
            exercise(c)?;
        }
        a.barrier()?;
        world.barrier()?;
        Ok(vec![Some(view(&a)), Some(view(&b)), c.as_ref().map(view)])
    })
    .unwrap();
    let got: Vec<Vec<Option<View>>> = got.into_iter().map(Result::unwrap).collect();

    let world_votes: Vec<Vote> = (0..p).map(|r| (Some(r % 2), p - r)).collect();
    let level_a = reference(&(0..p).collect::<Vec<_>>(), &world_votes);
    for r in 0..p {
        assert_eq!(got[r][0], level_a[r], "level a, team rank {r}");
        let a = level_a[r].as_ref().unwrap();
        let a_votes: Vec<Vote> = (0..a.members.len()).map(|i| (Some(i / 2), i)).collect();
        let level_b = reference(&a.members, &a_votes);
        assert_eq!(got[r][1], level_b[a.rank], "level b, team rank {r}");
        let b = level_b[a.rank].as_ref().unwrap();
        let b_votes: Vec<Vote> = (0..b.members.len())
            .map(|i| (if i == 0 { None } else { Some(0) }, 0))
            .collect();
        let level_c = reference(&b.members, &b_votes);
        assert_eq!(got[r][2], level_c[b.rank], "level c, team rank {r}");
    }
    assert_eq!(got[0][1].as_ref().unwrap().members, vec![2, 0]);
}

/// 30 splits of the world in a row, each with other colours and keys; all the new
/// communicators stay alive and are used again, in order, after the last split.
#[test]
fn many_splits_in_a_row() {
    let p = 7;
    let rounds = 30;
    let votes = |i: usize, r: usize| -> Vote {
        let color = if (r + i).is_multiple_of(5) {
            None
        } else {
            Some((r + i) % 3)
        };
        (color, (r * (i + 1)) % 4)
    };
    let got = corecoll::run(p, |world| -> Result<Vec<Option<View>>, Error> {
        let r = world.rank();
        let mut subs = Vec::new();
        for i in 0..rounds {
            let (color, key) = votes(i, r);
            let sub = world.split(color, key)?;
            if let Some(s) = &sub {
                s.barrier()?;
            }
            subs.push(sub);
        }
        for sub in subs.iter().flatten() {
            exercise(sub)?;
        }
        Ok(subs.iter().map(|s| s.as_ref().map(view)).collect())
    })
    .unwrap();
    let got: Vec<Vec<Option<View>>> = got.into_iter().map(Result::unwrap).collect();
    for i in 0..rounds {
        let all: Vec<Vote> = (0..p).map(|r| votes(i, r)).collect();
        let want = reference(&(0..p).collect::<Vec<_>>(), &all);
        for (r, (got, want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(&got[i], want, "split {i}, rank {r}");
        }
    }
}

/// Messages on the parent that are in flight across a split are neither taken by the split
/// nor mixed with the new communicator's messages.
#[test]
fn split_leaves_parent_messages_alone() {
    let p = 6;
    let out = corecoll::run(p, |world| -> Result<(), Error> {
        let r = world.rank();
        let (right, left) = ((r + 1) % p, (r + p - 1) % p);
        world.send(right, &[r as u32, 1])?;
        let sub = world.split(Some(0), p - r)?.unwrap();
        let (sr, sp) = (sub.rank(), sub.size());
        sub.send((sr + 1) % sp, &[r as u32, 2])?;
        world.send(right, &[r as u32, 3])?;
        let mut got = [u32::MAX; 2];
        sub.recv((sr + sp - 1) % sp, &mut got)?;
        let sub_left = sub.team_rank((sr + sp - 1) % sp).unwrap() as u32;
        assert_eq!(got, [sub_left, 2]);
        world.recv(left, &mut got)?;
        assert_eq!(got, [left as u32, 1]);
        world.recv(left, &mut got)?;
        assert_eq!(got, [left as u32, 3]);
        Ok(())
    })
    .unwrap();
    for r in out {
        r.unwrap();
    }
}

/// Two halves do different things on their own communicators at the same time: one splits
/// three more times, the other runs barriers and rings; then they meet on the world.
#[test]
fn sub_communicators_work_independently() {
    let p = 10;
    let out = corecoll::run(p, |world| -> Result<usize, Error> {
        let r = world.rank();
        let half = world.split(Some(r % 2), r)?.unwrap();
        let mut sizes = 0;
        if r % 2 == 0 {
            for i in 0..3 {
                let s = half.split(Some((half.rank() + i) % 2), 0)?.unwrap();
                exercise(&s)?;
                sizes += s.size();
            }
        } else {
            for _ in 0..5 {
                exercise(&half)?;
            }
            sizes = half.size();
        }
        world.barrier()?;
        Ok(sizes)
    })
    .unwrap();
    let sizes: Vec<usize> = out.into_iter().map(Result::unwrap).collect();
    // Even half: 5 ranks split 3/2, 2/3 and 3/2 by (rank + i) % 2.
    let even = |hr: usize| {
        (0..3)
            .map(|i| (0..5).filter(|q| (q + i) % 2 == (hr + i) % 2).count())
            .sum::<usize>()
    };
    let want: Vec<usize> = (0..p)
        .map(|r| if r % 2 == 0 { even(r / 2) } else { 5 })
        .collect();
    assert_eq!(sizes, want);
}

fn votes_strategy() -> impl Strategy<Value = Vec<Vote>> {
    (1usize..=12).prop_flat_map(|p| {
        proptest::collection::vec((proptest::option::of(0usize..4), 0usize..5), p)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_splits_match_the_reference(votes in votes_strategy()) {
        let p = votes.len();
        let team = Team::new(p).unwrap();
        let got = team
            .run(|comm| -> Result<Option<View>, Error> {
                let (color, key) = votes[comm.rank()];
                let sub = comm.split(color, key)?;
                if let Some(s) = &sub {
                    exercise(s)?;
                }
                Ok(sub.as_ref().map(view))
            })
            .unwrap();
        let got: Vec<Option<View>> = got.into_iter().map(Result::unwrap).collect();
        prop_assert_eq!(got, reference(&(0..p).collect::<Vec<_>>(), &votes));
    }
}
