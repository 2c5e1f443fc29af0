//! The one-value forms (`allreduce_value`, `reduce_value`, `broadcast_value`) against
//! sequential references, over rank counts 1 to 33 and every root, with a non-commutative op
//! that shows order mistakes, and their refusals on every rank.

mod common;

use common::{check_fails, matmul, matrix, matrix_op, mismatch, mix, out_of_range, team, BadCall};
use corecoll::{op, Error};

const PS: [usize; 9] = [1, 2, 3, 4, 5, 8, 13, 17, 33];

#[test]
fn allreduce_value_sums_and_multiplies_in_rank_order() {
    for p in PS {
        let t = team(p);
        let sum: u64 = (0..p).map(|r| mix(r, 0, 1)).fold(0, u64::wrapping_add);
        let product = (1..p).fold(matrix(0, 0), |acc, r| matmul(acc, matrix(r, 0)));
        let max = (0..p)
            .map(|r| (mix(r, 0, 2) % 1000) as f64)
            .fold(f64::MIN, f64::max);
        let out = t
            .run(|comm| {
                let r = comm.rank();
                let s = comm.allreduce_value(mix(r, 0, 1), op::Sum)?;
                let m = comm.allreduce_value(matrix(r, 0), matrix_op())?;
                let x = comm.allreduce_value((mix(r, 0, 2) % 1000) as f64, op::Max)?;
                Ok::<_, Error>((s, m, x))
            })
            .unwrap();
        for (r, o) in out.into_iter().enumerate() {
            assert_eq!(o.unwrap(), (sum, product, max), "p = {p}, rank {r}");
        }
    }
}

#[test]
fn reduce_value_reaches_the_root_and_leaves_the_others() {
    for p in PS {
        let t = team(p);
        let product = (1..p).fold(matrix(0, 1), |acc, r| matmul(acc, matrix(r, 1)));
        for root in [0, p / 2, p - 1] {
            let out = t
                .run(|comm| comm.reduce_value(matrix(comm.rank(), 1), matrix_op(), root))
                .unwrap();
            for (r, o) in out.into_iter().enumerate() {
                let want = if r == root { product } else { matrix(r, 1) };
                assert_eq!(o.unwrap(), want, "p = {p}, root {root}, rank {r}");
            }
        }
    }
}

#[test]
fn broadcast_value_from_every_root() {
    for p in PS {
        let t = team(p);
        for root in 0..p {
            let out = t
                .run(|comm| comm.broadcast_value((comm.rank() as u32, -1.5f32), root))
                .unwrap();
            for (r, o) in out.into_iter().enumerate() {
                assert_eq!(
                    o.unwrap(),
                    (root as u32, -1.5),
                    "p = {p}, root {root}, rank {r}"
                );
            }
        }
    }
}

#[test]
fn disagreements_fail_on_every_rank() {
    for p in [2, 3, 5] {
        let t = team(p);
        let root_out_of_range: BadCall<'_> = &|comm| comm.broadcast_value(1u64, p).map(drop);
        check_fails(&t, "root out of range", root_out_of_range, out_of_range);
        let different_ops: BadCall<'_> = &|comm| {
            if comm.rank() == 0 {
                comm.allreduce_value(1u64, op::Max).map(drop)
            } else {
                comm.allreduce_value(1u64, op::Sum).map(drop)
            }
        };
        check_fails(&t, "different ops", different_ops, mismatch);
        let different_types: BadCall<'_> = &|comm| {
            if comm.rank() == p - 1 {
                comm.allreduce_value(1u32, op::Sum).map(drop)
            } else {
                comm.allreduce_value(1u64, op::Sum).map(drop)
            }
        };
        check_fails(&t, "different element types", different_types, mismatch);
        // The team is still usable afterwards.
        let out = t.run(|comm| comm.allreduce_value(2u64, op::Sum)).unwrap();
        assert!(out.into_iter().all(|o| o.unwrap() == 2 * p as u64));
    }
}
