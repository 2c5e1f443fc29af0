//! Teams: results in rank order, closures that borrow the caller's stack (and results that
//! borrow from it), reuse across many runs, every `Pinning` variant and the cores it assigns
//! on the detected topology, each rank's actual affinity, the calling thread's affinity given
//! back after a run (also after a panic), rank 0 on the calling thread, a team run from
//! inside another team's rank, stress runs of many oversubscribed ranks, and creating and
//! dropping many teams without leaving threads behind.
//!
//! The tests of this file take one lock for their whole length, so that counting the rank
//! threads of the process sees only the teams of the test that counts.

use corecoll::{Comm, Error, Pinning, Team, Topology};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread::ThreadId;

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(target_os = "linux")]
mod affinity {
    use std::mem::{size_of, zeroed};

    /// The calling thread's affinity mask, as ascending core ids.
    pub fn get() -> Vec<usize> {
        // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
        unsafe {
            let mut set: libc::cpu_set_t = zeroed();
            let rc = libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set);
            assert_eq!(rc, 0, "sched_getaffinity");
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    /// Restricts the calling thread to `cores`.
    pub fn set(cores: &[usize]) {
        // SAFETY: as in `get`; the set is initialised before use.
        unsafe {
            let mut set: libc::cpu_set_t = zeroed();
            libc::CPU_ZERO(&mut set);
            for &c in cores {
                libc::CPU_SET(c, &mut set);
            }
            let rc = libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
            assert_eq!(rc, 0, "sched_setaffinity({cores:?})");
        }
    }
}

/// The cores a `p`-rank team gets under `pinning` when built by a thread whose detected
/// topology has leaves `order` (OS indices in topology order): the rules documented on
/// `Pinning`. Spread over several L3 groups is checked on described machines in
/// tests/topology.rs; here it is taken from the topology's own placement.
fn expected_cores(pinning: &Pinning, p: usize, topo: &Topology) -> Vec<Option<usize>> {
    let order: Vec<usize> = topo.leaves().iter().map(|l| l.os_index).collect();
    let n = order.len();
    let socket = |s: usize| -> Vec<usize> { topo.package_leaves(s).map(|l| l.os_index).collect() };
    (0..p)
        .map(|r| match pinning {
            Pinning::None => None,
            Pinning::Compact => Some(order[r % n]),
            Pinning::Spread if topo.num_l3_groups() > 1 => {
                topo.place(pinning, p).unwrap()[r].map(|l| l.os_index)
            }
            Pinning::Spread if p <= n => Some(order[r * n / p]),
            Pinning::Spread => Some(order[r % n]),
            Pinning::Socket(s) => Some(socket(*s)[r % socket(*s).len()]),
            Pinning::Cores(list) => Some(list[r % list.len()]),
            other => panic!("no rule for {other:?}"),
        })
        .collect()
}

fn ring_value(comm: &Comm, salt: u64) -> Result<u64, Error> {
    let (r, p) = (comm.rank(), comm.size());
    let mut got = [0u64; 3];
    let mine = [salt, r as u64, salt ^ r as u64];
    comm.sendrecv((r + 1) % p, &mine, (r + p - 1) % p, &mut got)?;
    assert_eq!(got[0], salt);
    assert_eq!(got[2], got[0] ^ got[1]);
    Ok(got[1])
}

#[test]
fn results_come_in_rank_order() {
    let _serial = serial();
    for p in [1, 2, 5, 16] {
        let out = corecoll::run(p, |comm| {
            let r = comm.rank();
            (r, format!("rank {r} of {}", comm.size()), vec![r; r])
        })
        .unwrap();
        let want: Vec<(usize, String, Vec<usize>)> = (0..p)
            .map(|r| (r, format!("rank {r} of {p}"), vec![r; r]))
            .collect();
        assert_eq!(out, want);
    }
}

#[test]
fn closures_borrow_the_callers_stack() {
    let _serial = serial();
    let p = 6;
    let input: Vec<u64> = (0..p as u64).map(|r| r * r + 1).collect();
    let sum = AtomicU64::new(0);
    let slots: Vec<AtomicU64> = (0..p).map(|_| AtomicU64::new(u64::MAX)).collect();
    let seen = Mutex::new(Vec::new());
    let team = Team::new(p).unwrap();
    let out: Vec<&u64> = team
        .run(|comm| {
            let r = comm.rank();
            sum.fetch_add(input[r], Ordering::SeqCst);
            slots[r].store(input[r] * 10, Ordering::SeqCst);
            seen.lock().unwrap().push(r);
            comm.barrier().unwrap();
            &input[(r + 1) % p]
        })
        .unwrap();
    assert_eq!(sum.into_inner(), input.iter().sum::<u64>());
    let slots: Vec<u64> = slots.into_iter().map(AtomicU64::into_inner).collect();
    assert_eq!(slots, input.iter().map(|v| v * 10).collect::<Vec<_>>());
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    assert_eq!(seen, (0..p).collect::<Vec<_>>());
    for (r, v) in out.iter().enumerate() {
        assert!(std::ptr::eq(*v, &input[(r + 1) % p]));
    }
}

#[test]
fn a_team_is_reused_for_100_runs() {
    let _serial = serial();
    let team = Team::new(5).unwrap();
    let calls = AtomicUsize::new(0);
    for i in 0..100u64 {
        let out = team
            .run(|comm| -> Result<(u64, usize), Error> {
                calls.fetch_add(1, Ordering::SeqCst);
                let left = ring_value(comm, i)?;
                if i % 10 == 0 {
                    comm.split(Some(comm.rank() % 2), 0)?.unwrap().barrier()?;
                }
                comm.barrier()?;
                Ok((left, comm.rank()))
            })
            .unwrap();
        let got: Vec<(u64, usize)> = out.into_iter().map(Result::unwrap).collect();
        let want: Vec<(u64, usize)> = (0..5).map(|r| (((r + 4) % 5) as u64, r)).collect();
        assert_eq!(got, want, "run {i}");
    }
    assert_eq!(calls.into_inner(), 500);
}

#[test]
fn rank_zero_runs_on_the_calling_thread() {
    let _serial = serial();
    let team = Team::new(4).unwrap();
    let ids = |team: &Team| -> Vec<ThreadId> { team.run(|_| std::thread::current().id()).unwrap() };
    let first = ids(&team);
    assert_eq!(first[0], std::thread::current().id());
    for r in 1..4 {
        assert_ne!(first[r], first[0]);
        assert!(!first[r + 1..].contains(&first[r]), "{first:?}");
    }
    // The rank threads stay alive between runs.
    assert_eq!(ids(&team), first);
    // From another thread, that thread is rank 0 and the workers are the same.
    std::thread::scope(|s| {
        let other = s.spawn(|| (std::thread::current().id(), ids(&team)));
        let (caller, got) = other.join().unwrap();
        assert_eq!(got[0], caller);
        assert_eq!(got[1..], first[1..]);
    });
}

/// Every pinning variant: `cores()` follows the documented rule, and each pinned rank's
/// thread runs on exactly its core during the run (rank 0 included).
#[cfg(target_os = "linux")]
#[test]
fn pinning_variants_and_the_cores_they_assign() {
    let _serial = serial();
    let avail = affinity::get();
    let first = avail[0];
    let last = *avail.last().unwrap();
    let topo = Topology::detect();
    let variants = [
        Pinning::Compact,
        Pinning::Spread,
        Pinning::None,
        Pinning::Socket(0),
        Pinning::Cores(vec![first]),
        Pinning::Cores(vec![last, first]),
    ];
    for pinning in &variants {
        for p in [1, 2, 3, 2 * avail.len() + 1] {
            let team = Team::builder()
                .ranks(p)
                .pinning(pinning.clone())
                .build()
                .unwrap();
            let want = expected_cores(pinning, p, &topo);
            assert_eq!(team.cores(), want, "{pinning:?}, p = {p}");
            assert_eq!(team.size(), p);
            let masks = team.run(|_| affinity::get()).unwrap();
            for (r, mask) in masks.iter().enumerate() {
                match want[r] {
                    Some(c) => assert_eq!(mask, &vec![c], "{pinning:?}, p = {p}, rank {r}"),
                    None => assert_eq!(mask, &avail, "{pinning:?}, p = {p}, rank {r}"),
                }
            }
        }
    }
    // Compact and Spread wrap around when there are more ranks than cores: rank r goes
    // where rank r mod n goes.
    let n = topo.leaves().len();
    let p = 3 * n + 2;
    for pinning in [Pinning::Compact, Pinning::Spread] {
        let team = Team::builder()
            .ranks(p)
            .pinning(pinning.clone())
            .build()
            .unwrap();
        let first_round = expected_cores(&pinning, n, &topo);
        let want: Vec<Option<usize>> = (0..p).map(|r| first_round[r % n]).collect();
        assert_eq!(team.cores(), want, "{pinning:?}");
    }
    // The default team has one rank per core (per leaf of the detected topology).
    assert_eq!(Team::builder().build().unwrap().size(), n);
}

/// The cores are those the building thread may use.
#[cfg(target_os = "linux")]
#[test]
fn cores_follow_the_building_threads_affinity() {
    let _serial = serial();
    let avail = affinity::get();
    let last = *avail.last().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            affinity::set(&[last]);
            let team = Team::new(3).unwrap();
            assert_eq!(team.cores(), [Some(last); 3]);
            let masks = team.run(|_| affinity::get()).unwrap();
            assert_eq!(masks, vec![vec![last]; 3]);
        });
    });
}

/// The calling thread's mask after a run is the one it had before: with all cores, with one
/// core other than rank 0's, when rank 0 panics, and with no pinning.
#[cfg(target_os = "linux")]
#[test]
fn the_callers_affinity_is_given_back() {
    let _serial = serial();
    let avail = affinity::get();
    let first = avail[0];
    let last = *avail.last().unwrap();
    let team = Team::new(3).unwrap();
    assert_eq!(team.cores()[0], Some(first));

    let inside = team.run(|_| affinity::get()).unwrap();
    assert_eq!(inside[0], vec![first]);
    assert_eq!(affinity::get(), avail);

    std::thread::scope(|s| {
        s.spawn(|| {
            affinity::set(&[last]);
            let inside = team.run(|_| affinity::get()).unwrap();
            assert_eq!(inside[0], vec![first]);
            assert_eq!(affinity::get(), vec![last]);

            let res = team.run(|comm| {
                if comm.rank() == 0 {
                    panic!("rank 0 panics while pinned");
                }
            });
            assert!(
                matches!(res, Err(Error::Panicked { rank: 0, .. })),
                "{res:?}"
            );
            assert_eq!(affinity::get(), vec![last]);
        });
    });

    let unpinned = Team::builder()
        .ranks(2)
        .pinning(Pinning::None)
        .build()
        .unwrap();
    let inside = unpinned.run(|_| affinity::get()).unwrap();
    assert_eq!(inside[0], avail);
    assert_eq!(affinity::get(), avail);
}

/// A rank of one team runs a team of its own (it is that team's rank 0); each inner team's
/// pinning is confined to the outer rank's core, and the outer rank's pinning is given back.
#[test]
fn a_team_inside_a_rank_of_another_team() {
    let _serial = serial();
    let outer = Team::new(3).unwrap();
    let out = outer
        .run(|comm| -> Result<Vec<u64>, Error> {
            let r = comm.rank() as u64;
            let inner = Team::new(2)?;
            #[cfg(target_os = "linux")]
            let before = affinity::get();
            let got = inner.run(|c| ring_value(c, r))?;
            #[cfg(target_os = "linux")]
            assert_eq!(affinity::get(), before);
            comm.barrier()?;
            got.into_iter().collect()
        })
        .unwrap();
    let out: Vec<Vec<u64>> = out.into_iter().map(Result::unwrap).collect();
    assert_eq!(out, vec![vec![1, 0]; 3]);
}

/// A rank hands a sub-communicator to a helper thread and keeps using the world itself: two
/// threads of one rank wait at once, each for its own messages.
#[test]
fn a_sub_communicator_used_by_a_helper_thread() {
    let _serial = serial();
    let p = 6;
    let out = corecoll::run(p, |world| -> Result<(u64, u64), Error> {
        let r = world.rank();
        let sub = world.split(Some(r % 2), p - r)?.unwrap();
        let (mut a, mut b) = (0, 0);
        std::thread::scope(|s| -> Result<(), Error> {
            let helper = s.spawn(move || -> Result<u64, Error> {
                let mut acc = 0;
                for i in 0..100 {
                    sub.barrier()?;
                    acc += ring_value(&sub, i)?;
                }
                Ok(acc)
            });
            for i in 0..100 {
                world.barrier()?;
                a += ring_value(world, 1000 + i)?;
            }
            b = helper.join().unwrap()?;
            Ok(())
        })?;
        Ok((a, b))
    })
    .unwrap();
    for (r, res) in out.into_iter().enumerate() {
        let (a, b) = res.unwrap();
        assert_eq!(a, 100 * ((r + p - 1) % p) as u64);
        // Sub-communicator of parity r % 2 ordered by descending team rank: its ranks are
        // team ranks [p - 2 + r % 2, p - 4 + r % 2, ...], and each receives its sub rank − 1.
        let sub_size = 3;
        let sub_rank = (p - 1 - r) / 2;
        assert_eq!(b, 100 * ((sub_rank + sub_size - 1) % sub_size) as u64);
    }
}

/// 48 ranks (oversubscribed) alternate barriers and ring exchanges in both directions; every
/// tenth exchange is large enough to go by rendezvous.
#[test]
fn stress_48_ranks_barriers_and_rings() {
    let _serial = serial();
    let p = 48;
    let out = corecoll::run(p, |comm| -> Result<u64, Error> {
        let (r, p) = (comm.rank(), comm.size());
        let (right, left) = ((r + 1) % p, (r + p - 1) % p);
        let mut acc = 0u64;
        for i in 0..200u64 {
            comm.barrier()?;
            let len = if i % 10 == 0 { 1000 } else { 2 };
            let mine: Vec<u64> = (0..len as u64).map(|j| i * j + r as u64).collect();
            let mut got = vec![u64::MAX; len];
            let from = if i % 2 == 0 {
                comm.sendrecv(right, &mine, left, &mut got)?;
                left
            } else {
                comm.sendrecv(left, &mine, right, &mut got)?;
                right
            };
            for (j, v) in got.iter().enumerate() {
                assert_eq!(*v, i * j as u64 + from as u64, "exchange {i} at {r}");
            }
            acc += got[0];
        }
        Ok(acc)
    })
    .unwrap();
    let got: Vec<u64> = out.into_iter().map(Result::unwrap).collect();
    let want: Vec<u64> = (0..p)
        .map(|r| (100 * ((r + p - 1) % p) + 100 * ((r + 1) % p)) as u64)
        .collect();
    assert_eq!(got, want);
}

/// 33 ranks each stream 2000 small messages to their right neighbour, a few in flight at a
/// time, and check every one they receive from their left.
#[test]
fn stress_33_ranks_2000_messages_each() {
    let _serial = serial();
    let p = 33;
    let n = 2000u64;
    let out = corecoll::run(p, |comm| -> Result<u64, Error> {
        let (r, p) = (comm.rank(), comm.size());
        let (right, left) = ((r + 1) % p, (r + p - 1) % p);
        let value = |src: usize, k: u64| (src as u64) << 32 | k;
        let mut received = 0u64;
        let mut sum = 0u64;
        let mut recv_one = |k: u64| -> Result<(), Error> {
            let mut got = [0u64];
            comm.recv(left, &mut got)?;
            assert_eq!(got[0], value(left, k), "message {k} at {r}");
            sum += got[0] & 0xffff_ffff;
            Ok(())
        };
        for k in 0..n {
            comm.send(right, &[value(r, k)])?;
            if k >= 2 {
                recv_one(received)?;
                received += 1;
            }
        }
        while received < n {
            recv_one(received)?;
            received += 1;
        }
        Ok(sum)
    })
    .unwrap();
    for res in out {
        assert_eq!(res.unwrap(), n * (n - 1) / 2);
    }
}

/// Rank threads of this process (their names are `corecoll-rank-<r>`, cut to 15 bytes). A
/// thread names itself once it runs, and leaves `/proc` a moment after it has been joined.
#[cfg(target_os = "linux")]
fn rank_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("corecoll-rank"))
        .count()
}

/// Waits (up to a generous bound) for the number of rank threads to become `n`.
#[cfg(target_os = "linux")]
fn assert_rank_threads(n: usize) {
    for _ in 0..1000 {
        if rank_threads() == n {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(rank_threads(), n);
}

#[test]
fn teams_are_created_and_dropped_without_leaking_threads() {
    let _serial = serial();
    #[cfg(target_os = "linux")]
    assert_rank_threads(0);
    for i in 0..50u64 {
        let team = Team::new(8).unwrap();
        let out = team.run(|comm| ring_value(comm, i)).unwrap();
        assert_eq!(out[0], Ok(7));
        #[cfg(target_os = "linux")]
        if i % 10 == 0 {
            assert_rank_threads(7);
        }
        if i % 2 == 0 {
            let again = team.run(|comm| comm.barrier()).unwrap();
            assert!(again.iter().all(Result::is_ok));
        }
    }
    // Teams that never run, and `run` (which makes and drops a team each time).
    for _ in 0..20 {
        drop(Team::new(8).unwrap());
        assert_eq!(
            corecoll::run(8, |c| c.rank()).unwrap(),
            (0..8).collect::<Vec<_>>()
        );
    }
    #[cfg(target_os = "linux")]
    assert_rank_threads(0);
}
