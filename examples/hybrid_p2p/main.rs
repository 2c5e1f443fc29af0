//! Checks point-to-point on a hybrid team (feature `mpi`: the threads of several MPI processes,
//! `TeamBuilder::mpi`, MPI initialised with `Threading::Multiple` or `Funneled`) against what each message
//! must carry: every payload is a function of (sender, tag, number, index), so the receiver
//! knows it exactly.
//!
//! ```text
//! cargo build --features mpi --example hybrid_p2p
//! mpirun -np 2 --bind-to none target/debug/examples/hybrid_p2p --threads 2
//! mpirun -np 3 --oversubscribe --bind-to none target/debug/examples/hybrid_p2p --threads-by-rank
//! mpirun -np 2 --bind-to none target/debug/examples/hybrid_p2p --funneled
//! ```
//!
//! Checks: rings with `sendrecv` at lengths across the inline/following boundary between
//! processes (8 KiB) and the mailboxes' eager/rendezvous one (1 KiB); every pair of ranks by
//! rounds of shifted `sendrecv`; tags received in another order than sent, large messages
//! among them (moved aside); receives from any rank, each sender's messages in order; a probe
//! then a receive of a message of unknown length; a halo exchange with no peer at the ends;
//! a message of another element type and one longer than the buffer, each an `Err` on the
//! receiver that names both types; messages and collectives on a `dup` apart from the
//! original's, and a `Mismatch` on every rank where the leaders call a collective of each in
//! different orders; non-blocking sends to every rank before any receive, and in order with a
//! blocking one; non-blocking receives posted before the sends and waited in reverse, one from
//! any rank matched before a later blocking receive, and from any rank with any tag (each
//! sender's messages in order); a thread that panics while a
//! thread of another process waits for its message fails every rank of every process. With
//! `--funneled` (MPI initialised with `Funneled`) the same checks run with each process's
//! leader relaying its threads' messages.

mod dup;
mod irecv;
mod isend;

use corecoll::{Comm, Error, Peer, Result, Team, ANY_TAG};
use mpi::environment::Threading;
use mpi::traits::*;
use std::process::ExitCode;

/// A message's payload: `len` words naming its sender, tag and number.
fn payload(src: usize, tag: u32, k: usize, len: usize) -> Vec<u64> {
    (0..len)
        .map(|i| ((src as u64) << 48) ^ (u64::from(tag) << 32) ^ ((k as u64) << 20) ^ i as u64)
        .collect()
}

/// Lengths (u64s) across both boundaries: inline up to 1024 u64 (8 KiB) between processes,
/// eager up to 128 between threads.
const LENGTHS: [usize; 8] = [0, 1, 127, 129, 1023, 1024, 1025, 100_003];

/// Rank `r`'s message of each length of [`LENGTHS`], tag and number = the length's index.
fn every_length(r: usize) -> Vec<Vec<u64>> {
    LENGTHS
        .iter()
        .enumerate()
        .map(|(k, &len)| payload(r, k as u32, k, len))
        .collect()
}

fn check(what: &str, ok: bool, detail: impl FnOnce() -> String) -> Result<()> {
    if !ok {
        panic!("{what}: {}", detail());
    }
    Ok(())
}

fn rings(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    for (k, &len) in LENGTHS.iter().enumerate() {
        for d in [1, p - 1] {
            let (to, from) = ((r + d) % p, (r + p - d % p) % p);
            let mut got = vec![0u64; len];
            let st = comm.sendrecv(to, &payload(r, 0, k, len), from, &mut got)?;
            check("ring", st.source == Some(from) && st.len == len, || {
                format!("{st:?}")
            })?;
            check("ring", got == payload(from, 0, k, len), || {
                format!("rank {r}: wrong payload of {len} from {from}")
            })?;
        }
    }
    Ok(())
}

fn all_pairs(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    for d in 0..p {
        let (to, from) = ((r + d) % p, (r + p - d) % p);
        let len = 1 + (r * 31 + to) % 1500;
        let want = 1 + (from * 31 + r) % 1500;
        let mut got = vec![0u64; want];
        let st = comm.sendrecv_tagged(to, 9, &payload(r, 9, d, len), from, 9, &mut got)?;
        check(
            "all pairs",
            st.len == want && got == payload(from, 9, d, want),
            || format!("rank {r} from {from}: {st:?}"),
        )?;
    }
    Ok(())
}

/// Rank r sends to r + 1 messages on tags 1 and 2 (large ones among them); r + 1 receives tag
/// 2 first, then tag 1: each tag's messages arrive in order.
fn tags_out_of_order(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    if p < 2 {
        return Ok(());
    }
    let plan: [(u32, usize); 5] = [(1, 3), (1, 5000), (2, 1), (1, 200_000), (2, 2000)];
    let (to, from) = ((r + 1) % p, (r + p - 1) % p);
    // Even ranks send first, odd ranks receive first, so that no rank waits on a send while
    // its sender waits on it (the last rank of an odd ring sends and receives in turn).
    let send = |comm: &Comm| -> Result<()> {
        for (k, &(tag, len)) in plan.iter().enumerate() {
            comm.send_tagged(to, tag, &payload(r, tag, k, len))?;
        }
        Ok(())
    };
    let recv = |comm: &Comm| -> Result<()> {
        for want in [2u32, 1] {
            for (k, &(tag, len)) in plan.iter().enumerate().filter(|(_, &(t, _))| t == want) {
                let mut got = vec![0u64; len];
                let st = comm.recv_tagged(from, want, &mut got)?;
                check(
                    "tags",
                    st.tag == tag && got == payload(from, tag, k, len),
                    || format!("rank {r}: message {k} from {from}: {st:?}"),
                )?;
            }
        }
        Ok(())
    };
    if r % 2 == 0 && r + 1 < p {
        send(comm)?;
        recv(comm)
    } else if r % 2 == 0 {
        // The last rank of an odd ring: its receiver (rank 0) sends first.
        recv(comm)?;
        send(comm)
    } else {
        recv(comm)?;
        send(comm)
    }
}

fn any_source(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    let per = 4;
    let len = |q: usize, k: usize| [0, 3, 1025, 20_000][(q + k) % 4];
    if r != 0 {
        for k in 0..per {
            comm.send_tagged(0, 4, &payload(r, 4, k, len(r, k)))?;
        }
        return comm.barrier();
    }
    let mut next = vec![0usize; p];
    let mut buf = vec![0u64; 20_000];
    for _ in 0..per * (p - 1) {
        let st = comm.recv_tagged(Peer::Any, ANY_TAG, &mut buf)?;
        let q = st.source.expect("a sender");
        let k = next[q];
        check("any source", st.tag == 4 && st.len == len(q, k), || {
            format!("{st:?}")
        })?;
        check(
            "any source",
            buf[..st.len] == payload(q, 4, k, st.len)[..],
            || format!("payload {k} from {q}"),
        )?;
        next[q] += 1;
    }
    check("any source", next[1..].iter().all(|&k| k == per), || {
        format!("{next:?}")
    })?;
    comm.barrier()
}

fn probe(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    let last = p - 1;
    if p < 2 {
        return Ok(());
    }
    if r == last {
        comm.send_tagged(0, 6, &payload(r, 6, 0, 3000 + r))?;
    } else if r == 0 {
        let st = comm.probe::<u64>(Peer::Any, ANY_TAG)?;
        check(
            "probe",
            st.source == Some(last) && st.len == 3000 + last,
            || format!("{st:?}"),
        )?;
        let mut buf = vec![0u64; st.len];
        let got = comm.recv_tagged(last, 6, &mut buf)?;
        check(
            "probe",
            got == st && buf == payload(last, 6, 0, st.len),
            || format!("{got:?}"),
        )?;
    }
    comm.barrier()
}

fn halo(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    let left = r.checked_sub(1);
    let right = (r + 1 < p).then_some(r + 1);
    let mut from_left = [-1i64; 2000];
    comm.sendrecv(right, &[r as i64; 2000], left, &mut from_left)?;
    let want = left.map_or(-1, |l| l as i64);
    check("halo", from_left.iter().all(|&x| x == want), || {
        format!("rank {r}")
    })
}

/// Runs `f` on the team and turns a failed rank into a message.
fn run(team: &Team, name: &str, f: impl Fn(&Comm) -> Result<()> + Sync) -> bool {
    if std::env::var_os("HYBRID_P2P_VERBOSE").is_some() {
        eprintln!("{name} …");
    }
    match team.run(|comm| f(comm)) {
        Ok(out) => match out.iter().position(Result::is_err) {
            None => true,
            Some(r) => {
                eprintln!("FAIL {name}: rank {r}: {:?}", out[r]);
                false
            }
        },
        Err(e) => {
            eprintln!("FAIL {name}: {e}");
            false
        }
    }
}

/// The last rank sends rank 0 (another process when there are several) a message of another
/// element type, then one longer than rank 0's buffer, each received by a blocking receive and
/// by a non-blocking one: every one is a `Mismatch` on rank 0, naming both sides (the other processes' runs then fail with the process's failure).
fn mismatches(team: &Team, process: usize) -> bool {
    let mut ok = true;
    for (longer, posted) in [(false, false), (true, false), (false, true), (true, true)] {
        let out = team.run(|comm| -> Result<()> {
            let last = comm.size() - 1;
            let mut into_u32 = [0u32; 4];
            let mut into_f32 = [0f32; 4];
            match comm.rank() {
                0 if last == 0 => {}
                0 if posted && longer => {
                    comm.scope(|s| s.irecv(last, &mut into_u32)?.wait())?;
                }
                0 if posted => comm.scope(|s| s.irecv(last, &mut into_f32)?.wait())?,
                0 if longer => drop(comm.recv(last, &mut into_u32)?),
                0 => drop(comm.recv(last, &mut into_f32)?),
                r if r == last && longer => comm.send(0, &[7u32; 9])?,
                r if r == last => comm.send(0, &[7u32; 4])?,
                _ => {}
            }
            Ok(())
        });
        if process != 0 {
            continue;
        }
        let text = match out.as_ref().map(|o| &o[0]) {
            Ok(Err(e @ Error::Mismatch { rank: 0, .. })) => e.to_string(),
            other => format!("not a mismatch on rank 0: {other:?}"),
        };
        let named = if longer {
            text.contains("up to 4 elements of u32") && text.contains("9 elements")
        } else {
            text.contains("elements of f32") && text.contains("4 elements of")
        };
        if !named {
            eprintln!("FAIL mismatch (longer: {longer}, irecv: {posted}): {text}");
            ok = false;
        }
    }
    ok
}

/// A thread of the last process panics while rank 0 waits for a message from it: every rank
/// of every process fails (rank 0 with the other process's failure), none hangs.
fn a_panic_elsewhere(team: &Team, process: usize, processes: usize) -> bool {
    if processes < 2 {
        return true;
    }
    let out = team.run(|comm| -> Result<()> {
        let victim = comm.size() - 1;
        if comm.rank() == victim {
            panic!("a thread panics on purpose (hybrid_p2p checks that every rank fails)");
        }
        if comm.rank() == 0 {
            comm.recv(victim, &mut [0u8])?;
        }
        Ok(())
    });
    let last = process + 1 == processes;
    let ok = match &out {
        Err(Error::Panicked { .. }) => last,
        Err(Error::ProcessFailed { .. }) => !last,
        Ok(out) if process == 0 => matches!(
            out[0].as_ref().map_err(Error::root_cause),
            Err(Error::ProcessFailed { .. })
        ),
        Ok(_) => !last,
        Err(_) => false,
    };
    if !ok {
        eprintln!("FAIL a panic elsewhere: process {process} got {out:?}");
    }
    ok
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let funneled = flag("--funneled");
    let threads: usize = args
        .iter()
        .position(|a| a == "--threads")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(2);
    let asked = if funneled {
        Threading::Funneled
    } else {
        Threading::Multiple
    };
    let (universe, level) = mpi::initialize_with_threading(asked).expect("MPI initialises once");
    let world = universe.world();
    let process = world.rank() as usize;
    if level < asked {
        eprintln!("hybrid_p2p: MPI gave {level:?} for {asked:?}");
        return ExitCode::FAILURE;
    }
    let mine = if flag("--threads-by-rank") {
        process + 1
    } else {
        threads
    };
    let team = match Team::builder().ranks(mine).mpi(&world) {
        Ok(team) => team,
        Err(e) => {
            eprintln!("process {process}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut passed = 0;
    let mut failed = 0;
    let mut tally = |ok: bool| if ok { passed += 1 } else { failed += 1 };
    let processes = world.size();
    tally(run(&team, "rings", rings));
    tally(run(&team, "all pairs", all_pairs));
    tally(run(&team, "tags out of order", tags_out_of_order));
    tally(run(&team, "any source", any_source));
    tally(run(&team, "probe", probe));
    tally(run(&team, "halo", halo));
    tally(mismatches(&team, process));
    tally(a_panic_elsewhere(&team, process, processes as usize));
    tally(run(&team, "dup", dup::isolation));
    tally(dup::crossed(&team, process, processes as usize));
    tally(run(
        &team,
        "isend to every rank before any receive",
        isend::all_to_all,
    ));
    tally(run(
        &team,
        "isend then send to one rank, in order",
        isend::in_order,
    ));
    tally(run(
        &team,
        "irecv posted before the sends",
        irecv::posted_first,
    ));
    tally(run(
        &team,
        "irecv from any rank before a blocking recv",
        irecv::before_blocking,
    ));
    tally(run(&team, "irecv from any rank", irecv::any_source));
    tally(run(&team, "a normal run after the failures", rings));
    let mut total = [passed as u64, failed as u64];
    let mine_tally = total;
    world.all_reduce_into(
        &mine_tally[..],
        &mut total[..],
        mpi::collective::SystemOperation::max(),
    );
    drop(team);
    if total[1] == 0 {
        if process == 0 {
            println!(
                "hybrid_p2p: all {} checks passed on {} processes",
                total[0],
                world.size()
            );
        }
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
