//! `Alltoall::RingLeaders`: the hierarchical all-to-all and all-to-allv on synthetic
//! machines, compact and spread, with fewer ranks than cores, as many, and more (wrapping),
//! uneven groups, block lengths from 0 to rendezvous-sized, fan-outs 1, 2, L and `Auto`,
//! repeated calls on one communicator, a split sub-communicator, and calls that disagree,
//! which fail on every rank. Results are compared with a sequential reference.

mod common;

use common::{check_fails, mismatch, place, placed_team};
use corecoll::algorithm::{Alltoall, Fanout};
use corecoll::{Comm, Error, Pinning, Team, Topology};

fn rl(f: Fanout) -> Alltoall {
    Alltoall::RingLeaders { fanout: f }
}

/// The fan-outs tried: 1, 2, all at once (more than any L here), `Auto`.
const FANOUTS: [Fanout; 4] = [
    Fanout::Exchanges(1),
    Fanout::Exchanges(2),
    Fanout::Exchanges(64),
    Fanout::Auto,
];

/// Block lengths: empty, one, odd, and rendezvous-sized (300 × 8 B > `EAGER_MAX`).
const LENS: [usize; 4] = [0, 1, 3, 300];

/// The machines and placements tested, with a description.
fn teams() -> Vec<(String, Team)> {
    let mut out = Vec::new();
    let cases: [(&[usize], Pinning, usize); 9] = [
        (&[2, 3], Pinning::Compact, 6),
        (&[2, 3], Pinning::Compact, 4),
        (&[2, 3], Pinning::Compact, 8),
        (&[2, 3], Pinning::Spread, 6),
        (&[3, 5], Pinning::Compact, 15),
        (&[3, 5], Pinning::Spread, 7),
        (&[4, 4], Pinning::Spread, 10),
        (&[2, 2, 4], Pinning::Compact, 16),
        (&[2, 2, 4], Pinning::Spread, 12),
    ];
    for (shape, pinning, p) in cases {
        let what = format!("{shape:?} {pinning:?} p = {p}");
        out.push((
            what,
            placed_team(Topology::synthetic(shape).unwrap(), pinning, p),
        ));
    }
    for (pinning, p) in [
        (Pinning::Compact, 9),
        (Pinning::Spread, 9),
        (Pinning::Compact, 11),
    ] {
        let t = Topology::synthetic_groups(vec![vec![3, 2], vec![4]]).unwrap();
        out.push((
            format!("[[3, 2], [4]] {pinning:?} p = {p}"),
            placed_team(t, pinning, p),
        ));
    }
    let t = Topology::synthetic(&[2, 3]).unwrap();
    out.push((
        "[2, 3] unpinned p = 5".into(),
        placed_team(t, Pinning::None, 5),
    ));
    out
}

/// Element `i` of the block rank `s` sends rank `d`.
fn val(s: usize, d: usize, i: usize) -> u64 {
    ((s as u64) << 40) | ((d as u64) << 20) | i as u64
}

/// Every length and fan-out on `comm`, checked against the reference.
fn regular(comm: &Comm, what: &str) -> corecoll::Result<()> {
    let (p, r) = (comm.size(), comm.rank());
    for n in LENS {
        for f in FANOUTS {
            let send: Vec<u64> = (0..p * n)
                .map(|k| val(r, k / n.max(1), k % n.max(1)))
                .collect();
            let mut recv = vec![u64::MAX; p * n];
            comm.alltoall_with(&send, &mut recv, rl(f))?;
            for s in 0..p {
                for i in 0..n {
                    assert_eq!(
                        recv[s * n + i],
                        val(s, r, i),
                        "{what}: n {n} {f:?} rank {r} from {s}"
                    );
                }
            }
        }
    }
    Ok(())
}

#[test]
fn alltoall_on_synthetic_machines() {
    for (what, team) in teams() {
        let out = team.run(|comm| regular(comm, &what)).unwrap();
        for res in out {
            res.unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
}

/// Irregular counts: zeros, small, and now and then rendezvous-sized.
fn count(s: usize, d: usize, salt: usize) -> usize {
    match (s * 7 + d * 3 + salt) % 6 {
        0 | 3 => 0,
        1 => 1,
        2 => 5,
        4 if (s + d).is_multiple_of(3) => 200,
        _ => 2,
    }
}

fn irregular(comm: &Comm, what: &str) -> corecoll::Result<()> {
    let (p, r) = (comm.size(), comm.rank());
    for salt in 0..2 {
        for f in FANOUTS {
            let sc: Vec<usize> = (0..p).map(|d| count(r, d, salt)).collect();
            let rc: Vec<usize> = (0..p).map(|s| count(s, r, salt)).collect();
            // Send blocks in reverse order with gaps; receive blocks in rank order with gaps
            // on odd salts, packed on even ones.
            let sl = place(sc.clone(), (0..p).rev(), 1);
            let rlay = place(rc.clone(), 0..p, salt);
            let mut send = vec![u64::MAX - 1; sl.len];
            for d in 0..p {
                for i in 0..sc[d] {
                    send[sl.displs[d] + i] = val(r, d, i);
                }
            }
            let mut recv = vec![u64::MAX; rlay.len];
            comm.alltoallv_with(
                &send,
                &sl.counts,
                &sl.displs,
                &mut recv,
                &rlay.counts,
                &rlay.displs,
                rl(f),
            )?;
            let mut want = vec![u64::MAX; rlay.len];
            for s in 0..p {
                for i in 0..rc[s] {
                    want[rlay.displs[s] + i] = val(s, r, i);
                }
            }
            assert_eq!(recv, want, "{what}: salt {salt} {f:?} rank {r}");
        }
    }
    Ok(())
}

#[test]
fn alltoallv_on_synthetic_machines() {
    for (what, team) in teams() {
        let out = team.run(|comm| irregular(comm, &what)).unwrap();
        for res in out {
            res.unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
}

/// Even and odd ranks of a spread and a compact team: each half has its own groups.
#[test]
fn on_a_split_communicator() {
    for pinning in [Pinning::Compact, Pinning::Spread] {
        let team = placed_team(
            Topology::synthetic(&[2, 2, 3]).unwrap(),
            pinning.clone(),
            12,
        );
        let out = team
            .run(|comm| {
                let half = comm.split(Some(comm.rank() % 2), comm.rank())?.unwrap();
                regular(&half, "split")?;
                irregular(&half, "split")
            })
            .unwrap();
        for res in out {
            res.unwrap_or_else(|e| panic!("{pinning:?}: {e}"));
        }
    }
}

fn disagreeing_teams() -> Vec<Team> {
    vec![
        placed_team(Topology::synthetic(&[3, 2]).unwrap(), Pinning::Compact, 6),
        placed_team(
            Topology::synthetic_groups(vec![vec![3, 2], vec![4]]).unwrap(),
            Pinning::Spread,
            9,
        ),
    ]
}

#[test]
fn disagreements_fail_every_rank() {
    let f2 = rl(Fanout::Exchanges(2));
    for team in disagreeing_teams() {
        let last = team.size() - 1;
        check_fails(
            &team,
            "block length",
            &|comm| {
                let n = if comm.rank() == last { 4 } else { 3 };
                let send = vec![1u64; n * comm.size()];
                comm.alltoall_with(&send, &mut vec![0; send.len()], f2)
            },
            mismatch,
        );
        check_fails(
            &team,
            "element type",
            &|comm| {
                if comm.rank() == 1 {
                    let send = vec![1u32; 2 * comm.size()];
                    comm.alltoall_with(&send, &mut vec![0; send.len()], f2)
                } else {
                    let send = vec![1u64; 2 * comm.size()];
                    comm.alltoall_with(&send, &mut vec![0; send.len()], f2)
                }
            },
            mismatch,
        );
        // The fan-out differs in effect only with three leaders or more (L = 2 clamps both
        // to 1): the [3, 2] team below.
        let mut others = vec![("algorithm", Alltoall::Pairwise)];
        if team.size() == 6 {
            others.push(("fan-out", rl(Fanout::Exchanges(1))));
        }
        for (name, other) in others {
            check_fails(
                &team,
                name,
                &|comm| {
                    let alg = if comm.rank() == last { other } else { f2 };
                    let send = vec![1u64; 300 * comm.size()];
                    comm.alltoall_with(&send, &mut vec![0; send.len()], alg)
                },
                mismatch,
            );
        }
        // alltoallv: rank 0 sends rank `last` one element more than it expects.
        check_fails(
            &team,
            "counts",
            &|comm| {
                let (p, r) = (comm.size(), comm.rank());
                let mut sc = vec![2usize; p];
                let mut rc = vec![2usize; p];
                if r == 0 {
                    sc[last] = 3;
                }
                if r == last {
                    rc[0] = 2;
                }
                let sl = place(sc, 0..p, 0);
                let rlay = place(rc, 0..p, 0);
                let send = vec![7u64; sl.len];
                let mut recv = vec![0u64; rlay.len];
                comm.alltoallv_with(
                    &send,
                    &sl.counts,
                    &sl.displs,
                    &mut recv,
                    &rlay.counts,
                    &rlay.displs,
                    f2,
                )
            },
            mismatch,
        );
        check_fails(
            &team,
            "bruck alltoallv",
            &|comm| {
                let p = comm.size();
                let l = place(vec![1; p], 0..p, 0);
                let send = vec![7u64; l.len];
                let mut recv = vec![0u64; l.len];
                comm.alltoallv_with(
                    &send,
                    &l.counts,
                    &l.displs,
                    &mut recv,
                    &l.counts,
                    &l.displs,
                    Alltoall::Bruck,
                )
            },
            |e| matches!(e, Error::Unsupported { .. }),
        );
    }
}
