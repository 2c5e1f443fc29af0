//! The check of a cell: every rank's output of one more call, on inputs the harness can
//! recompute, against a sequential reference of the collective's semantics (MPI's: rank-order
//! folds, bit-identical results on every rank).

use super::{check_input, CellSpec};
use crate::domain::{Dtype, Form, OpName};
use crate::elem::Elem;
use crate::record::Validation;
use corecoll::op::Op;
use corecoll::Collective;
use std::any::Any;

/// How element i of rank r's expected output is made from the inputs.
enum Expect<T> {
    /// A value copied from an input (exact).
    Copy(T),
    /// The rank-order fold of element `elem` of the inputs of `ranks` (for a float sum:
    /// compared with the exactly rounded sum, within the error bound of any summation order).
    Fold {
        /// The element of each input.
        elem: usize,
        /// The ranks whose inputs are folded, in order.
        ranks: std::ops::Range<usize>,
    },
}

/// The length of rank `r`'s expected output for `spec`.
fn expected_len(spec: &CellSpec, r: usize) -> usize {
    match spec.call.collective {
        Collective::Gather if r != spec.root => 0,
        Collective::Barrier => 0,
        Collective::Scatter | Collective::ReduceScatter => spec.block,
        _ => spec.count,
    }
}

/// Element `i` of rank `r`'s expected output for `spec`.
fn expected<T: Elem>(spec: &CellSpec, inputs: &[Vec<T>], r: usize, i: usize) -> Expect<T> {
    let (p, b, root) = (spec.p, spec.block, spec.root);
    let fold = |elem: usize, ranks: std::ops::Range<usize>| Expect::Fold { elem, ranks };
    let exclusive = spec.call.form == Form::Exclusive;
    match spec.call.collective {
        Collective::Allreduce => fold(i, 0..p),
        Collective::Reduce if r == root => fold(i, 0..p),
        Collective::Reduce => Expect::Copy(inputs[r][i]),
        Collective::Broadcast => Expect::Copy(inputs[root][i]),
        Collective::Scan if exclusive && r == 0 => Expect::Copy(inputs[0][i]),
        Collective::Scan if exclusive => fold(i, 0..r),
        Collective::Scan => fold(i, 0..r + 1),
        Collective::Gather | Collective::Allgather => Expect::Copy(inputs[i / b][i % b]),
        Collective::Scatter => Expect::Copy(inputs[root][r * b + i]),
        Collective::Alltoall => Expect::Copy(inputs[i / b][r * b + i % b]),
        Collective::ReduceScatter => fold(r * b + i, 0..p),
        _ => unreachable!("{} has no output", spec.call),
    }
}

/// The outcome of the check: pass or fail, the largest relative error of a float sum, and a
/// note on the first mismatch.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// Pass or fail.
    pub validation: Validation,
    /// For float sums: the largest relative error against the exactly rounded sum.
    pub max_rel_error: Option<f64>,
    /// The first mismatch, if any.
    pub note: String,
}

/// Compares every rank's check output (`outputs[r]`, a `Vec<T>`) with the sequential
/// reference for `spec` under `op`:
/// - copies (broadcast, gather, …) and integer or min/max reductions must be exact;
/// - float sums are compared with the exactly rounded sum: the relative error must stay within
///   (p − 1)·u + u (the bound of any summation order of non-negative terms, plus the
///   reference's rounding), and it is reported;
/// - float products within 2p·u of the rank-order product;
/// - an allreduce's results must be bit-identical on every rank.
pub fn check<T: Elem, O: Op<T>>(
    spec: &CellSpec,
    op: &O,
    outputs: &[Box<dyn Any + Send>],
) -> Checked {
    let fail = |note: String| Checked {
        validation: Validation::Fail,
        max_rel_error: None,
        note,
    };
    if outputs.len() != spec.p {
        return fail(format!(
            "{} of {} ranks returned a result",
            outputs.len(),
            spec.p
        ));
    }
    let mut outs = Vec::with_capacity(spec.p);
    for (r, o) in outputs.iter().enumerate() {
        match o.downcast_ref::<Vec<T>>() {
            Some(v) => outs.push(v),
            None => return fail(format!("rank {r}'s result has the wrong type")),
        }
    }
    let inputs: Vec<Vec<T>> = (0..spec.p).map(|r| check_input(spec, r)).collect();
    let float = T::DTYPE.is_float();
    let u = match T::DTYPE {
        Dtype::F32 => f32::EPSILON as f64 / 2.0,
        _ => f64::EPSILON / 2.0,
    };
    let sum_bound = spec.p as f64 * u * 1.000_001;
    let prod_bound = 2.0 * spec.p as f64 * u;
    let mut max_err: Option<f64> = None;
    let mut terms: Vec<T> = Vec::with_capacity(spec.p);
    let mut scratch: Vec<f64> = Vec::new();
    for (r, out) in outs.iter().enumerate() {
        let len = expected_len(spec, r);
        if out.len() != len {
            return fail(format!("rank {r}: {} elements, expected {len}", out.len()));
        }
        if spec.call.collective == Collective::Allreduce && r > 0 {
            // Rank 0's result was checked; the others must equal it bit for bit (below).
            break;
        }
        for (i, &got) in out.iter().enumerate() {
            let want = expected(spec, &inputs, r, i);
            let ok = match &want {
                Expect::Copy(x) => got.same_bits(*x),
                Expect::Fold { elem, ranks } => {
                    terms.clear();
                    terms.extend(ranks.clone().map(|q| inputs[q][*elem]));
                    let mut acc = [terms[0]];
                    for t in &terms[1..] {
                        op.fold_right(&mut acc, std::slice::from_ref(t));
                    }
                    let seq = acc[0];
                    if !float || matches!(spec.op, OpName::Min | OpName::Max) || terms.len() == 1 {
                        got.same_bits(seq)
                    } else if spec.op == OpName::ReproSum {
                        // The correctly rounded sum, bit for bit.
                        got.same_bits(T::exact_sum(&terms, &mut scratch).expect("a float type"))
                    } else if spec.op == OpName::Sum {
                        let exact = T::exact_sum(&terms, &mut scratch)
                            .expect("a float type")
                            .to_f64();
                        let err = if exact == 0.0 {
                            got.to_f64().abs()
                        } else {
                            ((got.to_f64() - exact) / exact).abs()
                        };
                        max_err = Some(max_err.map_or(err, |m: f64| m.max(err)));
                        err <= sum_bound
                    } else {
                        let s = seq.to_f64();
                        ((got.to_f64() - s) / s).abs() <= prod_bound
                    }
                }
            };
            if !ok {
                return fail(format!(
                    "rank {r}, element {i}: got {got:?}, expected {}",
                    match want {
                        Expect::Copy(x) => format!("{x:?}"),
                        Expect::Fold { .. } => "the fold of the inputs".to_string(),
                    }
                ));
            }
        }
    }
    if spec.call.collective == Collective::Allreduce {
        for (r, out) in outs.iter().enumerate().skip(1) {
            if let Some(i) = out
                .iter()
                .zip(outs[0].iter())
                .position(|(a, b)| !a.same_bits(*b))
            {
                return fail(format!(
                    "rank {r} differs from rank 0 at element {i} (results must be bit-identical)"
                ));
            }
        }
    }
    Checked {
        validation: Validation::Pass,
        max_rel_error: max_err,
        note: String::new(),
    }
}
