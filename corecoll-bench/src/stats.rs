//! The statistics of a cell: min, median, 95th percentile and mean of the per-iteration times,
//! and the bandwidths with nccl-tests' bus-bandwidth factors.

use crate::domain::Call;
use corecoll::Collective;

/// Summary of one cell's iteration times (seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub iters: usize,
    /// Smallest.
    pub min: f64,
    /// Median (the mean of the two middle samples for an even count).
    pub median: f64,
    /// 95th percentile, nearest rank: the ⌈0.95·n⌉-th smallest.
    pub p95: f64,
    /// Arithmetic mean.
    pub mean: f64,
}

impl Summary {
    /// The summary of `times` (seconds), or `None` when there are none.
    pub fn of(times: &[f64]) -> Option<Summary> {
        if times.is_empty() {
            return None;
        }
        let mut t = times.to_vec();
        t.sort_by(f64::total_cmp);
        let n = t.len();
        let median = if n % 2 == 1 {
            t[n / 2]
        } else {
            (t[n / 2 - 1] + t[n / 2]) / 2.0
        };
        let rank95 = (0.95 * n as f64).ceil() as usize;
        Some(Summary {
            iters: n,
            min: t[0],
            median,
            p95: t[rank95.clamp(1, n) - 1],
            mean: t.iter().sum::<f64>() / n as f64,
        })
    }
}

/// nccl-tests' factor from algorithm bandwidth to bus bandwidth for the collective named
/// `collective` (a [`Call`]'s name) on `p` ranks: 2(p − 1)/p for allreduce; (p − 1)/p for
/// allgather, alltoall, reduce-scatter and their `v` forms, and for gather and scatter (the
/// root's link carries all but its own block); 0 for the barrier, which moves no data; 1 for
/// the rest (broadcast, reduce, scan and exscan) and for a name that is not a call.
pub fn busbw_factor(collective: &str, p: usize) -> f64 {
    let p = p.max(1) as f64;
    let Some(call) = Call::from_name(collective) else {
        return 1.0;
    };
    match call.collective {
        Collective::Allreduce => 2.0 * (p - 1.0) / p,
        Collective::Allgather
        | Collective::Alltoall
        | Collective::ReduceScatter
        | Collective::Gather
        | Collective::Scatter => (p - 1.0) / p,
        Collective::Barrier => 0.0,
        _ => 1.0,
    }
}

/// Algorithm bandwidth in GB/s (10⁹ bytes per second) of `bytes` in `seconds`.
pub fn algbw_gbs(bytes: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / seconds / 1e9
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_odd_and_even_counts() {
        assert_eq!(Summary::of(&[]), None);
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (s.iters, s.min, s.median, s.p95, s.mean),
            (3, 1.0, 2.0, 3.0, 2.0)
        );
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.p95, s.mean), (1.0, 2.5, 4.0, 2.5));
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!(
            (one.min, one.median, one.p95, one.mean),
            (7.0, 7.0, 7.0, 7.0)
        );
    }

    #[test]
    fn p95_is_the_nearest_rank() {
        // 1..=100: the 95th smallest is 95; 1..=20: the 19th is 19; 1..=10: the 10th.
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(Summary::of(&v).unwrap().p95, 95.0);
        let v: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(Summary::of(&v).unwrap().p95, 19.0);
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(Summary::of(&v).unwrap().p95, 10.0);
    }

    #[test]
    fn busbw_factors_are_nccl_tests() {
        assert_eq!(busbw_factor("allreduce", 1), 0.0);
        assert_eq!(busbw_factor("allreduce", 2), 1.0);
        assert_eq!(busbw_factor("allreduce", 8), 1.75);
        assert_eq!(busbw_factor("allgather", 4), 0.75);
        assert_eq!(busbw_factor("alltoall", 2), 0.5);
        assert_eq!(busbw_factor("reduce-scatter", 8), 0.875);
        assert_eq!(busbw_factor("broadcast", 8), 1.0);
        assert_eq!(busbw_factor("reduce", 3), 1.0);
        assert_eq!(busbw_factor("barrier", 3), 0.0);
        assert_eq!(busbw_factor("alltoallv", 4), 0.75);
        assert_eq!(busbw_factor("exscan", 4), 1.0);
        assert_eq!(algbw_gbs(2_000_000_000, 2.0), 1.0);
        assert_eq!(algbw_gbs(8, 0.0), 0.0);
    }
}
