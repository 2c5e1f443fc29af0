//! `op::Avg`: the sum divided by the number of ranks that contributed, in every reduction,
//! against a sequential reference; integers truncate toward zero.

use corecoll::{op, Result};

const PS: [usize; 8] = [1, 2, 3, 4, 5, 8, 13, 33];

/// Rank r's value at index i: integers of both signs (exact as floats too).
fn x(r: usize, i: usize) -> i64 {
    ((r * 7 + i * 3) % 11) as i64 - 5
}

/// What each rank gets: allreduce of integers and of floats, reduce, reduce-scatter.
type Means = (Vec<i64>, Vec<f64>, Vec<i64>, Vec<i32>);

#[test]
fn allreduce_reduce_and_reduce_scatter_divide_by_p() {
    for p in PS {
        let n = 2 * p + 1;
        let out = corecoll::run(p, |comm| -> Result<Means> {
            let r = comm.rank();
            let mut ints: Vec<i64> = (0..n).map(|i| x(r, i)).collect();
            comm.allreduce(&mut ints, op::Avg)?;
            let mut floats: Vec<f64> = (0..n).map(|i| x(r, i) as f64).collect();
            comm.allreduce(&mut floats, op::Avg)?;
            let mut at_root: Vec<i64> = (0..n).map(|i| x(r, i)).collect();
            comm.reduce(&mut at_root, op::Avg, p - 1)?;
            let send: Vec<i32> = (0..2 * p).map(|i| x(r, i) as i32).collect();
            let mut block = vec![0i32; 2];
            comm.reduce_scatter_block(&send, &mut block, op::Avg)?;
            Ok((ints, floats, at_root, block))
        })
        .unwrap();
        let sum = |i: usize| (0..p).map(|r| x(r, i)).sum::<i64>();
        for (r, res) in out.into_iter().enumerate() {
            let (ints, floats, at_root, block) = res.unwrap();
            for i in 0..n {
                // Rust's `/` truncates toward zero.
                assert_eq!(ints[i], sum(i) / p as i64, "p = {p}, i = {i}");
                assert_eq!(floats[i], sum(i) as f64 / p as f64, "p = {p}, i = {i}");
                if r == p - 1 {
                    assert_eq!(at_root[i], sum(i) / p as i64);
                } else {
                    assert_eq!(at_root[i], x(r, i), "not the root: its buffer is its own");
                }
            }
            for (k, &b) in block.iter().enumerate() {
                assert_eq!(i64::from(b), sum(2 * r + k) / p as i64, "p = {p}, rank {r}");
            }
        }
    }
}

#[test]
fn scans_divide_by_the_ranks_that_contributed() {
    for p in PS {
        let out = corecoll::run(p, |comm| -> Result<(f32, i16)> {
            let r = comm.rank();
            let mut inclusive = [x(r, 0) as f32];
            comm.scan(&mut inclusive, op::Avg)?;
            let mut exclusive = [x(r, 1) as i16];
            comm.exscan(&mut exclusive, op::Avg)?;
            Ok((inclusive[0], exclusive[0]))
        })
        .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            let (inclusive, exclusive) = res.unwrap();
            let upto = |end: usize, i: usize| (0..end).map(|q| x(q, i)).sum::<i64>();
            assert_eq!(
                inclusive,
                upto(r + 1, 0) as f32 / (r + 1) as f32,
                "p = {p}, rank {r}"
            );
            let want = if r == 0 {
                x(0, 1)
            } else {
                upto(r, 1) / r as i64
            };
            assert_eq!(i64::from(exclusive), want, "p = {p}, rank {r}");
        }
    }
}

#[test]
fn one_value_and_unsigned_means() {
    let out = corecoll::run(4, |comm| -> Result<(u8, f64)> {
        let r = comm.rank() as u8;
        // 10 + 11 + 12 + 13 = 46: 46 / 4 = 11 (truncated).
        let u = comm.allreduce_value(10 + r, op::Avg)?;
        let f = comm.allreduce_value(f64::from(r) * 0.5, op::Avg)?;
        Ok((u, f))
    })
    .unwrap();
    assert!(out.iter().all(|r| *r == Ok((11, 0.75))), "{out:?}");
}

/// Ranks that average and ranks that sum are making different calls: an error on every rank.
#[test]
fn avg_against_sum_is_a_mismatch() {
    let out = corecoll::run(3, |comm| {
        let mut v = [1.0f64; 4];
        if comm.rank() == 1 {
            comm.allreduce(&mut v, op::Sum)
        } else {
            comm.allreduce(&mut v, op::Avg)
        }
    })
    .unwrap();
    assert!(out.iter().all(Result::is_err), "{out:?}");
    let text = out
        .iter()
        .map(|r| r.clone().unwrap_err().to_string())
        .collect::<String>();
    assert!(text.contains("avg") && text.contains("sum"), "{text}");
}
