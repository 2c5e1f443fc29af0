//! The latency check's self-check, before it measures anything: a broken build must not print
//! fast numbers.

use super::work::AnyResult;
use corecoll::unstable::EAGER_MAX;

/// Sends known data around rings of several sizes and lengths (eager, exactly eager max,
/// rendezvous), then splits the world by parity and meets at a barrier in each half.
pub fn self_check() -> AnyResult<()> {
    let lens = [0usize, 1, EAGER_MAX / 8, EAGER_MAX / 8 + 1, 100_000];
    for p in [1usize, 2, 3, 5, 8, 17] {
        let out = corecoll::run(p, |comm| -> corecoll::Result<(usize, usize)> {
            let (r, p) = (comm.rank(), comm.size());
            let (next, prev) = ((r + 1) % p, (r + p - 1) % p);
            for len in lens {
                let send: Vec<u64> = (0..len as u64).map(|i| i * 1000 + r as u64).collect();
                let mut recv = vec![u64::MAX; len];
                comm.sendrecv(next, &send, prev, &mut recv)?;
                let good = recv
                    .iter()
                    .enumerate()
                    .all(|(i, &v)| v == i as u64 * 1000 + prev as u64);
                assert!(
                    good,
                    "rank {r} of {p}: wrong data from rank {prev} ({len} u64)"
                );
                comm.barrier()?;
            }
            let sub = comm
                .split(Some(r % 2), p - r)?
                .expect("every rank has a colour");
            sub.barrier()?;
            Ok((sub.rank(), sub.size()))
        })?;
        for (r, res) in out.into_iter().enumerate() {
            let (sub_rank, sub_size) = res?;
            let same_parity = (r % 2..p).step_by(2).count();
            // Keys p - r order each half by descending world rank.
            let expected_rank = (r + 2..p).step_by(2).count();
            if (sub_rank, sub_size) != (expected_rank, same_parity) {
                return Err(format!(
                    "split on p = {p}: rank {r} got rank {sub_rank} of {sub_size}, \
                     expected {expected_rank} of {same_parity}"
                )
                .into());
            }
        }
    }
    Ok(())
}
