//! Non-blocking receives between the threads of different processes (`Scope::irecv_tagged`):
//! posted before anything is sent and waited in another order; matched before a later blocking
//! receive, whichever completes first; from any rank, each sender's messages in order.

use crate::{check, payload, LENGTHS};
use corecoll::{Comm, Peer, Request, Result, ANY_TAG};

/// Every rank posts a receive of every length from every rank (tag = the length's index)
/// before anyone sends, senders from the previous rank down; then sends them all as requests,
/// and waits for the receives in reverse order of posting.
pub fn posted_first(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    let msgs = crate::every_length(r);
    let order: Vec<(usize, usize)> = (0..p)
        .flat_map(|d| (0..LENGTHS.len()).map(move |k| ((r + p - d) % p, k)))
        .collect();
    let mut bufs: Vec<Vec<u64>> = order.iter().map(|&(_, k)| vec![0; LENGTHS[k]]).collect();
    comm.scope(|s| {
        let mut recvs = Vec::new();
        for (&(q, k), buf) in order.iter().zip(bufs.iter_mut()) {
            recvs.push(s.irecv_tagged(q, k as u32, buf)?);
        }
        comm.barrier()?;
        let mut sends = Vec::new();
        for q in 0..p {
            for (k, m) in msgs.iter().enumerate() {
                sends.push(s.isend_tagged(q, k as u32, m)?);
            }
        }
        for (i, req) in recvs.into_iter().enumerate().rev() {
            let (q, k) = order[i];
            let st = req.wait_status()?;
            check(
                "irecv posted first",
                st.source == Some(q) && st.tag == k as u32 && st.len == LENGTHS[k],
                || format!("rank {r}: receive {i} from {q}: {st:?}"),
            )?;
        }
        Request::wait_all(sends)
    })?;
    for (&(q, k), buf) in order.iter().zip(&bufs) {
        check(
            "irecv posted first",
            *buf == payload(q, k as u32, k, LENGTHS[k]),
            || format!("rank {r}: wrong payload {k} from {q}"),
        )?;
    }
    Ok(())
}

/// A receive from any rank posted first takes the first message even though a blocking
/// receive from its sender comes later and completes first; both lengths of messages between
/// processes (inline and following).
pub fn before_blocking(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    let (to, from) = ((r + 1) % p, (r + p - 1) % p);
    for len in [5usize, 3000] {
        let mut early = vec![0u64; len];
        let mut late = vec![0u64; len];
        let msgs: Vec<Vec<u64>> = (0..2).map(|k| payload(r, 7, k, len)).collect();
        comm.scope(|s| {
            let req = s.irecv_tagged(Peer::Any, 7, &mut early)?;
            comm.barrier()?;
            let sends = msgs
                .iter()
                .map(|m| s.isend_tagged(to, 7, m))
                .collect::<Vec<_>>();
            let st = comm.recv_tagged(from, 7, &mut late)?;
            check("irecv before recv", st.source == Some(from), || {
                format!("{st:?}")
            })?;
            let first = req.wait_status()?;
            check("irecv before recv", first.source == Some(from), || {
                format!("{first:?}")
            })?;
            sends.into_iter().try_for_each(|q| q?.wait())
        })?;
        check(
            "irecv before recv",
            early == payload(from, 7, 0, len) && late == payload(from, 7, 1, len),
            || format!("rank {r}: messages of {len} out of order"),
        )?;
    }
    Ok(())
}

/// Rank 0 posts receives from any rank with any tag for everything the others send it
/// (lengths across the boundaries), before they send; each sender's messages arrive in order.
pub fn any_source(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    let per = 4;
    let len = |q: usize, k: usize| [0, 3, 1025, 20_000][(q + k) % 4];
    if r != 0 {
        comm.barrier()?;
        for k in 0..per {
            comm.send_tagged(0, 4, &payload(r, 4, k, len(r, k)))?;
        }
        return comm.barrier();
    }
    let mut bufs = vec![vec![0u64; 20_000]; per * (p - 1)];
    let statuses = comm.scope(|s| {
        let recvs = bufs
            .iter_mut()
            .map(|b| s.irecv_tagged(Peer::Any, ANY_TAG, b))
            .collect::<Result<Vec<_>>>()?;
        comm.barrier()?;
        recvs
            .into_iter()
            .map(Request::wait_status)
            .collect::<Result<Vec<_>>>()
    })?;
    let mut next = vec![0usize; p];
    for (st, buf) in statuses.iter().zip(&bufs) {
        let q = st.source.expect("a sender");
        let k = next[q];
        check(
            "irecv any source",
            st.tag == 4 && st.len == len(q, k),
            || format!("{st:?}"),
        )?;
        check(
            "irecv any source",
            buf[..st.len] == payload(q, 4, k, st.len)[..],
            || format!("payload {k} from {q}"),
        )?;
        next[q] += 1;
    }
    check(
        "irecv any source",
        next[1..].iter().all(|&k| k == per),
        || format!("{next:?}"),
    )?;
    comm.barrier()
}
