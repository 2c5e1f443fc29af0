//! Non-blocking sends between the threads of different processes (`Scope::isend_tagged`): every
//! rank sends every rank messages of every length before anyone receives, then receives them
//! with blocking receives in another order than sent; and a blocking send after non-blocking
//! ones to the same rank arrives after them.

use crate::{check, payload, LENGTHS};
use corecoll::{Comm, Request, Result};

/// Every rank sends every rank (itself included) one message of each length, tag = its index,
/// all as requests; then receives them, tags in reverse order, senders from the next rank on.
pub fn all_to_all(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    let msgs = crate::every_length(r);
    comm.scope(|s| {
        let mut sends = Vec::new();
        for q in 0..p {
            for (k, m) in msgs.iter().enumerate() {
                sends.push(s.isend_tagged(q, k as u32, m)?);
            }
        }
        for d in 0..p {
            let q = (r + d) % p;
            for (k, &len) in LENGTHS.iter().enumerate().rev() {
                let mut got = vec![0u64; len];
                let st = comm.recv_tagged(q, k as u32, &mut got)?;
                check(
                    "isend",
                    st.len == len && got == payload(q, k as u32, k, len),
                    || format!("rank {r}: message {k} from {q}: {st:?}"),
                )?;
            }
        }
        Request::wait_all(sends)
    })
}

/// Three non-blocking sends and then a blocking one to the next rank, one tag: received in
/// that order. Short messages (eager everywhere), so that the blocking send completes before
/// its receiver receives, as every rank sends first.
pub fn in_order(comm: &Comm) -> Result<()> {
    let (r, p) = (comm.rank(), comm.size());
    let (to, from) = ((r + 1) % p, (r + p - 1) % p);
    let msgs: Vec<Vec<u64>> = (0..4).map(|k| payload(r, 5, k, 10 + k)).collect();
    comm.scope(|s| {
        let sends = msgs[..3]
            .iter()
            .map(|m| s.isend_tagged(to, 5, m))
            .collect::<Result<Vec<_>>>()?;
        comm.send_tagged(to, 5, &msgs[3])?;
        for k in 0..4 {
            let mut got = vec![0u64; 10 + k];
            comm.recv_tagged(from, 5, &mut got)?;
            check("isend order", got == payload(from, 5, k, 10 + k), || {
                format!("rank {r}: message {k} from {from} out of order")
            })?;
        }
        Request::wait_all(sends)
    })
}
