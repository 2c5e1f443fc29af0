//! `Comm::dup` of a communicator whose ranks span processes.

use super::{check, payload, rings};
use corecoll::{op, Comm, Error, Peer, Result, Team, ANY_TAG};

/// Messages on a communicator and on its duplicate (same sender, receiver and tag) received in
/// the other order than sent, each from any sender with any tag: each lands on its own
/// communicator. Then rings (every length) and allreduces on the duplicate and the original
/// in turn, and the same on a duplicate of the duplicate.
pub fn isolation(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    let dup = comm.dup()?;
    check("dup", dup.rank() == r && dup.size() == p, || {
        format!("rank {r} of {p} is {} of {}", dup.rank(), dup.size())
    })?;
    let (to, from) = ((r + 1) % p, (r + p - 1) % p);
    // Short messages (sent eagerly between threads and processes), so that the sends complete
    // before their receives are posted.
    let lens = [1usize, 100];
    for (k, &len) in lens.iter().enumerate() {
        comm.send_tagged(to, 3, &payload(r, 3, k, len))?;
        dup.send_tagged(to, 3, &payload(r, 103, k, len))?;
    }
    for (c, which, salt) in [(&dup, "duplicate", 103), (comm, "original", 3)] {
        for (k, &len) in lens.iter().enumerate() {
            let mut got = vec![0u64; 100];
            let st = c.recv_tagged(Peer::Any, ANY_TAG, &mut got)?;
            check(
                "dup",
                st.source == Some(from) && st.tag == 3 && st.len == len,
                || format!("rank {r} on the {which}: {st:?}"),
            )?;
            check("dup", got[..len] == payload(from, salt, k, len)[..], || {
                format!("rank {r}: message {k} on the {which} carries another's payload")
            })?;
        }
    }
    let sum = (p * (p - 1) / 2) as u64;
    for c in [&dup, comm, &dup] {
        rings(c)?;
        let s = c.allreduce_value(r as u64, op::Sum)?;
        check("dup", s == sum, || format!("rank {r}: sum {s}"))?;
    }
    let again = dup.dup()?;
    drop(dup);
    rings(&again)?;
    let s = again.allreduce_value(1u64, op::Sum)?;
    check("dup", s == p as u64, || format!("rank {r}: count {s}"))?;
    again.barrier()
}

/// The leaders call a barrier on the world and one on its duplicate in opposite orders on
/// different processes (process 0 the world's first): with several processes every rank gets
/// an `Err`, rank 0 a `Mismatch` naming the duplicate; none hangs.
pub fn crossed(team: &Team, process: usize, processes: usize) -> bool {
    let out = team.run(|comm| -> Result<()> {
        let dup = comm.dup()?;
        if process == 0 {
            comm.barrier()?;
            dup.barrier()
        } else {
            dup.barrier()?;
            comm.barrier()
        }
    });
    let ok = match &out {
        Ok(out) if processes == 1 => out.iter().all(Result::is_ok),
        Ok(out) => {
            let named = process != 0
                || matches!(&out[0], Err(e @ Error::Mismatch { .. })
                    if e.to_string().contains("on duplicate"));
            named && out.iter().all(Result::is_err)
        }
        Err(_) => false,
    };
    if !ok {
        eprintln!("FAIL crossed collectives on a duplicate: process {process} got {out:?}");
    }
    ok
}
