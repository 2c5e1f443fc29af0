//! Ranks that pass different ops to a collective that combines: every rank's call is an
//! `Err`, never a result computed with two ops. Built-in ops are compared by what they are,
//! user ops by their type: two closures are two ops, the same op passed by value on one rank
//! and by reference on another is one. Checked for allreduce (every algorithm, including the
//! two-rank recursive doubling whose one exchange carries the check), reduce, scan, exscan and
//! reduce-scatter, at several rank counts and lengths, with the odd rank first, in the middle
//! and last; the error names both ops on the rank that finds the difference, and the team runs
//! a clean call afterwards.

mod common;

use common::team;
use corecoll::algorithm::{Reduce, ReduceScatter, Scan};
use corecoll::op::{self, Op};
use corecoll::{Algorithm, Block, Comm, Error};

/// A collective that combines, called with `op` on `buf` (the reduce-scatter's send buffer is
/// `buf`, its receive buffer a p-th of it).
type Call = fn(&Comm, &mut Vec<u64>, &dyn Op<u64>) -> Result<(), Error>;

/// Every combining collective and algorithm to try, by name.
fn calls() -> Vec<(String, Call)> {
    let mut v: Vec<(String, Call)> = Vec::new();
    for alg in Algorithm::ALL {
        // The ring needs a commutative op, which all ops here are; the shared-memory and
        // hierarchical ones run too (one group: `Auto`'s flat choice).
        let name = format!("allreduce {}", alg.name());
        let f: Call = match alg {
            Algorithm::Auto => |c, b, o| c.allreduce_with(b, o, Algorithm::Auto),
            Algorithm::Linear => |c, b, o| c.allreduce_with(b, o, Algorithm::Linear),
            Algorithm::Binomial => |c, b, o| c.allreduce_with(b, o, Algorithm::Binomial),
            Algorithm::RecursiveDoubling => {
                |c, b, o| c.allreduce_with(b, o, Algorithm::RecursiveDoubling)
            }
            Algorithm::Rabenseifner => |c, b, o| c.allreduce_with(b, o, Algorithm::Rabenseifner),
            Algorithm::Direct => |c, b, o| c.allreduce_with(b, o, Algorithm::Direct),
            Algorithm::DualRoot { .. } => |c, b, o| {
                let alg = Algorithm::DualRoot {
                    block: Block::Elements(3),
                };
                c.allreduce_with(b, o, alg)
            },
            Algorithm::TwoTree { .. } => |c, b, o| {
                let alg = Algorithm::TwoTree { block: Block::Auto };
                c.allreduce_with(b, o, alg)
            },
            Algorithm::Ring { .. } => |c, b, o| {
                let alg = Algorithm::Ring { block: Block::Auto };
                c.allreduce_with(b, o, alg)
            },
            _ => continue,
        };
        v.push((name, f));
    }
    v.push(("reduce auto".into(), |c, b, o| {
        c.reduce_with(b, o, 0, Reduce::Auto)
    }));
    v.push(("reduce binomial to the last rank".into(), |c, b, o| {
        let root = c.size() - 1;
        c.reduce_with(b, o, root, Reduce::Binomial)
    }));
    v.push(("reduce linear".into(), |c, b, o| {
        c.reduce_with(b, o, 0, Reduce::Linear)
    }));
    v.push(("reduce direct".into(), |c, b, o| {
        c.reduce_with(b, o, 0, Reduce::Direct)
    }));
    v.push(("scan".into(), |c, b, o| c.scan_with(b, o, Scan::Auto)));
    v.push(("scan pipelined".into(), |c, b, o| {
        c.scan_with(b, o, Scan::PipelinedTree { block: Block::Auto })
    }));
    v.push(("exscan".into(), |c, b, o| c.exscan_with(b, o, Scan::Auto)));
    for alg in [
        ReduceScatter::Auto,
        ReduceScatter::Ring,
        ReduceScatter::RecursiveHalving,
        ReduceScatter::Direct,
    ] {
        let f: Call = match alg {
            ReduceScatter::Ring => |c, b, o| {
                let mut recv = vec![0u64; b.len() / c.size()];
                c.reduce_scatter_block_with(b, &mut recv, o, ReduceScatter::Ring)
            },
            ReduceScatter::RecursiveHalving => |c, b, o| {
                let mut recv = vec![0u64; b.len() / c.size()];
                c.reduce_scatter_block_with(b, &mut recv, o, ReduceScatter::RecursiveHalving)
            },
            ReduceScatter::Direct => |c, b, o| {
                let mut recv = vec![0u64; b.len() / c.size()];
                c.reduce_scatter_block_with(b, &mut recv, o, ReduceScatter::Direct)
            },
            _ => |c, b, o| {
                let mut recv = vec![0u64; b.len() / c.size()];
                c.reduce_scatter_block_with(b, &mut recv, o, ReduceScatter::Auto)
            },
        };
        v.push((format!("reduce-scatter {}", alg.name()), f));
    }
    v
}

/// Runs `call` on `p` ranks with `len` elements per rank (times p for the reduce-scatter),
/// rank `odd` passing `theirs` and every other `mine`; asserts that every rank fails, that
/// the rank that finds the difference names both ops (`words`), and that the team still
/// works.
fn disagree(
    name: &str,
    call: Call,
    p: usize,
    len: usize,
    odd: usize,
    (mine, theirs): (&(dyn Op<u64> + Sync), &(dyn Op<u64> + Sync)),
    words: &[&str],
) {
    let team = team(p);
    let out = team
        .run(|comm| {
            let mut buf = vec![comm.rank() as u64 + 1; len * p];
            let op = if comm.rank() == odd { theirs } else { mine };
            call(comm, &mut buf, op)
        })
        .unwrap();
    let what = format!("{name}, p = {p}, {len} elements, rank {odd} differs");
    let errors: Vec<&Error> = out.iter().map(|r| r.as_ref().expect_err(&what)).collect();
    let found = errors.iter().find(|e| matches!(e, Error::Mismatch { .. }));
    let found = found.unwrap_or_else(|| panic!("{what}: no rank found the mismatch: {errors:?}"));
    let text = found.to_string();
    for w in words {
        assert!(text.contains(w), "{what}: {text:?} does not name {w:?}");
    }
    for e in &errors {
        assert!(
            matches!(e.root_cause(), Error::Mismatch { .. }),
            "{what}: {e}"
        );
    }
    // The team runs a clean call afterwards.
    let again = team
        .run(|comm| {
            let mut v = vec![1u64; 3];
            comm.allreduce(&mut v, op::Sum).map(|()| v[0])
        })
        .unwrap();
    assert!(
        again.iter().all(|r| r.as_ref() == Ok(&(p as u64))),
        "{what}"
    );
}

#[test]
fn builtin_ops_that_differ_fail_every_rank() {
    for (name, call) in calls() {
        for p in [2usize, 3, 4] {
            for len in [1usize, 5, 300] {
                for odd in [0, p - 1] {
                    let ops: (&(dyn Op<u64> + Sync), &(dyn Op<u64> + Sync)) = (&op::Sum, &op::Max);
                    disagree(&name, call, p, len, odd, ops, &["sum", "max"]);
                }
            }
        }
    }
}

#[test]
fn user_ops_of_different_types_fail_every_rank() {
    let add = op::commutative(|a: &u64, b: &u64| a.wrapping_add(*b));
    let also_add = op::commutative(|a: &u64, b: &u64| b.wrapping_add(*a));
    for (name, call) in calls() {
        for p in [2usize, 5] {
            let ops: (&(dyn Op<u64> + Sync), &(dyn Op<u64> + Sync)) = (&add, &also_add);
            disagree(&name, call, p, 7, p / 2, ops, &["user op"]);
        }
    }
    // A user op against a built-in one.
    let (name, call) = &calls()[0];
    let ops: (&(dyn Op<u64> + Sync), &(dyn Op<u64> + Sync)) = (&add, &op::Sum);
    disagree(name, *call, 2, 1, 1, ops, &["user op", "sum"]);
}

#[test]
// Passing the ops by reference on some ranks is the point here.
#[allow(clippy::needless_borrows_for_generic_args)]
fn one_op_by_value_and_by_reference_agrees() {
    let add = op::commutative(|a: &u64, b: &u64| a.wrapping_add(*b));
    for p in [2usize, 3] {
        let out = team(p)
            .run(|comm| {
                let mut v = vec![comm.rank() as u64; 4];
                let mut w = v.clone();
                if comm.rank() == 0 {
                    comm.allreduce(&mut v, add)?;
                    comm.scan(&mut w, &op::Sum)?;
                } else {
                    comm.allreduce(&mut v, &add)?;
                    comm.scan(&mut w, op::Sum)?;
                }
                Ok::<_, Error>((v[0], w[0]))
            })
            .unwrap();
        for (r, res) in out.into_iter().enumerate() {
            let (sum, prefix) = res.unwrap();
            assert_eq!(sum, (0..p as u64).sum::<u64>());
            assert_eq!(prefix, (0..=r as u64).sum::<u64>());
        }
    }
}

/// What the error says, for a person: both ops by name.
#[test]
fn the_error_names_both_ops() {
    for p in [2usize, 3] {
        let out = team(p)
            .run(|comm| {
                let mut v = vec![1.0f64; 2];
                if comm.rank() == 0 {
                    comm.allreduce(&mut v, op::Max)
                } else {
                    comm.allreduce(&mut v, op::Sum)
                }
            })
            .unwrap();
        let texts: Vec<String> = out
            .iter()
            .map(|r| r.as_ref().unwrap_err().to_string())
            .collect();
        eprintln!("p = {p}: {texts:#?}");
        assert!(
            texts.iter().any(|t| t.contains("max") && t.contains("sum")),
            "{texts:?}"
        );
    }
}
