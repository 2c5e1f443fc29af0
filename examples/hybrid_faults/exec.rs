//! One step of a run on one rank: the call, as the plan says or as the misbehaving rank departs
//! from it, and (in a run without a fault) its result against the sequential reference.

use crate::cases::{fold_with, inputs, reduction, Affine, Case};
use crate::plan::{
    allreduce_algorithms, Fault, Kind, Step, Ty, ALLGATHERS, ALLTOALLS, BARRIERS, BROADCASTS,
};
use corecoll::op::{self, Op};
use corecoll::{Comm, Result};

/// An element type of the steps, with a second op that differs from its own.
pub trait Elem: Case {
    /// Another op on the type than [`Case::op`].
    fn other_op() -> Box<dyn Op<Self>>;
}

impl Elem for u64 {
    fn other_op() -> Box<dyn Op<u64>> {
        Box::new(op::Max)
    }
}

impl Elem for Affine {
    fn other_op() -> Box<dyn Op<Affine>> {
        Box::new(op::non_commutative(|a: &Affine, b: &Affine| {
            Affine::combine(b, a)
        }))
    }
}

impl Elem for i32 {
    fn other_op() -> Box<dyn Op<i32>> {
        Box::new(op::Min)
    }
}

/// Which part of a split each rank is in: its process (its group on a plain team).
pub struct Parts {
    /// Rank r's part.
    pub of: Vec<usize>,
}

/// Runs `step` on this rank, departing from it by `fault` if this rank misbehaves there (a
/// panic or a return are the caller's). `Ok(Some(why))`: a wrong result.
pub fn run(
    comm: &Comm,
    step: &Step,
    parts: &Parts,
    fault: Option<Fault>,
) -> Result<Option<String>> {
    match (fault, step.kind) {
        (Some(Fault::Collective), Kind::Barrier) => {
            let mut x = [0u64];
            return comm.broadcast(&mut x, 0).map(|()| None);
        }
        (Some(Fault::Collective), Kind::Iallreduce) => {
            return comm.scope(|s| s.ibarrier()?.wait()).map(|()| None);
        }
        (Some(Fault::Collective), Kind::Persistent) => {
            return comm
                .scope(|s| -> Result<()> {
                    let mut req = s.barrier_init()?;
                    for _ in 0..2 {
                        req.start()?;
                        req.wait()?;
                    }
                    Ok(())
                })
                .map(|()| None);
        }
        (Some(Fault::Collective), _) => return comm.barrier().map(|()| None),
        (Some(Fault::Type), _) => return typed::<i32>(comm, step, parts, None).map(|_| None),
        _ => {}
    }
    match step.ty {
        Ty::U64 => typed::<u64>(comm, step, parts, fault),
        Ty::Affine => typed::<Affine>(comm, step, parts, fault),
    }
}

/// Blocks `0..p` of `n` elements each, rank q's input of length `len(q)`, concatenated.
fn concat<T: Case>(p: usize, len: impl Fn(usize) -> usize) -> Vec<T> {
    (0..p).flat_map(|q| inputs::<T>(q, len(q))).collect()
}

/// The counts of the `v` steps: rank q contributes `n + q % 3` elements.
fn v_counts(p: usize, n: usize) -> Vec<usize> {
    (0..p).map(|q| n + q % 3).collect()
}

/// Packed displacements of `counts`.
fn packed(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |at, &c| {
            let d = *at;
            *at += c;
            Some(d)
        })
        .collect()
}

/// Compares a result with the reference.
fn against<T: Case>(what: &str, got: &[T], want: &[T]) -> Option<String> {
    crate::cases::first_wrong(got, want).map(|why| format!("{what}: {why}"))
}

/// The step on element type `T`, with the departures of `fault` (root, count, op, algorithm).
fn typed<T: Elem>(
    comm: &Comm,
    step: &Step,
    parts: &Parts,
    fault: Option<Fault>,
) -> Result<Option<String>> {
    let (r, p) = (comm.rank(), comm.size());
    let n = step.n + usize::from(fault == Some(Fault::Count));
    let root = (step.root + usize::from(fault == Some(Fault::Root))) % p;
    let alg = if fault == Some(Fault::Algorithm) {
        step.other_alg
    } else {
        step.alg
    };
    let own = T::op();
    let other = T::other_op();
    let op: &dyn Op<T> = if fault == Some(Fault::Op) {
        &*other
    } else {
        &own
    };
    let mine = || inputs::<T>(r, n);
    // Whether this rank's result is checked: the plan's own call, on the step's type.
    let checked = fault.is_none();
    let check = |what: &str, got: &[T], want: &dyn Fn() -> Vec<T>| -> Option<String> {
        checked.then(|| against(what, got, &want())).flatten()
    };
    Ok(match step.kind {
        Kind::Allreduce => {
            let algs = allreduce_algorithms();
            let mut v = mine();
            comm.allreduce_with(&mut v, op, algs[alg % algs.len()])?;
            check("allreduce", &v, &|| reduction::<T>(p, n))
        }
        Kind::Broadcast => {
            let mut v = mine();
            comm.broadcast_with(&mut v, root, BROADCASTS[alg % BROADCASTS.len()])?;
            check("broadcast", &v, &|| inputs::<T>(root, n))
        }
        Kind::Reduce => {
            let mut v = mine();
            comm.reduce(&mut v, op, root)?;
            (r == root)
                .then(|| check("reduce", &v, &|| reduction::<T>(p, n)))
                .flatten()
        }
        Kind::Scan => {
            let mut v = mine();
            comm.scan(&mut v, op)?;
            check("scan", &v, &|| fold_with(0..r + 1, n, T::combine))
        }
        Kind::Exscan => {
            let mut v = mine();
            comm.exscan(&mut v, op)?;
            (r > 0)
                .then(|| check("exscan", &v, &|| fold_with(0..r, n, T::combine)))
                .flatten()
        }
        Kind::Gather => {
            let mut all = vec![T::input(0, 0); if r == root { n * p } else { 0 }];
            comm.gather(&mine(), &mut all, root)?;
            (r == root)
                .then(|| check("gather", &all, &|| concat::<T>(p, |_| n)))
                .flatten()
        }
        Kind::Scatter => {
            let send = if r == root {
                inputs::<T>(root, n * p)
            } else {
                Vec::new()
            };
            let mut v = vec![T::input(0, 0); n];
            comm.scatter(&send, &mut v, root)?;
            check("scatter", &v, &|| {
                inputs::<T>(root, n * p)[r * n..(r + 1) * n].to_vec()
            })
        }
        Kind::Allgather => {
            let mut all = vec![T::input(0, 0); n * p];
            comm.allgather_with(&mine(), &mut all, ALLGATHERS[alg % ALLGATHERS.len()])?;
            check("allgather", &all, &|| concat::<T>(p, |_| n))
        }
        Kind::Alltoall => {
            let send = inputs::<T>(r, n * p);
            let mut got = vec![T::input(0, 0); n * p];
            comm.alltoall_with(&send, &mut got, ALLTOALLS[alg % ALLTOALLS.len()])?;
            check("alltoall", &got, &|| {
                (0..p)
                    .flat_map(|q| inputs::<T>(q, n * p)[r * n..(r + 1) * n].to_vec())
                    .collect()
            })
        }
        Kind::ReduceScatter => {
            let mut got = vec![T::input(0, 0); n];
            comm.reduce_scatter_block(&inputs::<T>(r, n * p), &mut got, op)?;
            check("reduce-scatter", &got, &|| {
                reduction::<T>(p, n * p)[r * n..(r + 1) * n].to_vec()
            })
        }
        Kind::Gatherv | Kind::Allgatherv => {
            // A count fault: on the allgatherv, counts that differ from the others' (this
            // rank's own one more, and a send to match); on the gatherv, where only the root's
            // counts count, a send one longer than they say.
            let counts = v_counts(p, step.n);
            let mut mine_counts = counts.clone();
            let longer = usize::from(fault == Some(Fault::Count));
            if step.kind == Kind::Allgatherv {
                mine_counts[r] += longer;
            }
            let displs = packed(&mine_counts);
            let total: usize = mine_counts.iter().sum();
            let send = inputs::<T>(r, counts[r] + longer);
            let want = || concat::<T>(p, |q| counts[q]);
            if step.kind == Kind::Allgatherv {
                let mut all = vec![T::input(0, 0); total];
                comm.allgatherv(&send, &mut all, &mine_counts, &displs)?;
                check("allgatherv", &all, &want)
            } else {
                let mut all = vec![T::input(0, 0); if r == root { total } else { 0 }];
                comm.gatherv(&send, &mut all, &mine_counts, &displs, root)?;
                (r == root).then(|| check("gatherv", &all, &want)).flatten()
            }
        }
        Kind::Barrier => {
            comm.barrier_with(BARRIERS[alg % BARRIERS.len()])?;
            None
        }
        Kind::Split => {
            let colour = parts.of[r];
            let part = comm
                .split(Some(colour), p - r)?
                .expect("every rank passes a colour");
            let mut v = mine();
            part.allreduce(&mut v, op)?;
            // The part's ranks in its order: keys p − r, so the highest rank first.
            let members: Vec<usize> = (0..p).rev().filter(|&q| parts.of[q] == colour).collect();
            check("allreduce on a split", &v, &|| {
                let mut acc = inputs::<T>(members[0], n);
                for &q in &members[1..] {
                    for (a, b) in acc.iter_mut().zip(inputs::<T>(q, n)) {
                        *a = T::combine(a, &b);
                    }
                }
                acc
            })
        }
        Kind::Dup => {
            let dup = comm.dup()?;
            let mut v = mine();
            dup.broadcast(&mut v, root)?;
            check("broadcast on a dup", &v, &|| inputs::<T>(root, n))
        }
        Kind::Iallreduce => {
            let mut v = mine();
            comm.scope(|s| s.iallreduce(&mut v, op)?.wait())?;
            check("iallreduce", &v, &|| reduction::<T>(p, n))
        }
        Kind::Persistent => {
            let mut v = vec![T::input(0, 0); n];
            let mut wrong = None;
            comm.scope(|s| -> Result<()> {
                let mut req = s.allreduce_init(&mut v, op)?;
                for k in 0..2 {
                    req.buffer()?.copy_from_slice(&mine());
                    req.start()?;
                    req.wait()?;
                    let got = req.buffer()?.to_vec();
                    if wrong.is_none() {
                        wrong = check(&format!("persistent start {k}"), &got, &|| {
                            reduction::<T>(p, n)
                        });
                    }
                }
                Ok(())
            })?;
            wrong
        }
    })
}
