//! The kernel and the check of every call and algorithm, and the check catching wrong
//! results.

use super::*;
use crate::domain::{algorithms, Cache, Form};
use crate::measure::{measure, Kernel, Timing};
use corecoll::op;
use corecoll::Team;
use std::any::Any;

/// The call named `name`.
fn call(name: &str) -> Call {
    Call::from_name(name).unwrap()
}

fn quick() -> Timing {
    Timing {
        warmup: Some(1),
        iters: Some(2),
        ..Timing::default()
    }
}

/// Runs every algorithm of `c` for `spec` and returns (name, check) pairs.
fn run_all<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
    team: &Team,
    spec: CellSpec,
    o: O,
) -> Vec<(&'static str, Checked)> {
    algorithms(spec.call)
        .into_iter()
        .map(|(name, alg)| {
            let m = measure(team, &quick(), true, |comm| {
                Ok(Box::new(CorecollKernel::<T, O>::new(comm, spec, alg, o))
                    as Box<dyn Kernel + '_>)
            })
            .unwrap_or_else(|e| panic!("{} {name}: {e}", spec.call));
            assert_eq!(m.times.len(), 2);
            let c = if m.outputs.is_empty() {
                Checked {
                    validation: Validation::Skipped,
                    max_rel_error: None,
                    note: String::new(),
                }
            } else {
                check::<T, O>(&spec, &o, &m.outputs)
            };
            (name, c)
        })
        .collect()
}

#[test]
fn every_collective_and_algorithm_passes_its_check() {
    for p in [1, 2, 3, 5] {
        let team = Team::new(p).unwrap();
        for c in Call::all() {
            for bytes in [0, 8, 8 * 7, 8 * 1000 + 24] {
                let rooted = matches!(c.collective, Collective::Broadcast | Collective::Reduce);
                let root = if c.blocked() || rooted { p - 1 } else { 0 };
                let spec = CellSpec::new(c, p, Dtype::F64, OpName::Sum, bytes, root, Cache::Warm);
                for (name, checked) in run_all::<f64, _>(&team, spec, op::Sum) {
                    let want = if c.is_barrier() {
                        Validation::Skipped
                    } else {
                        Validation::Pass
                    };
                    assert_eq!(
                        checked.validation, want,
                        "p={p} {c} {name} {bytes} B: {}",
                        checked.note
                    );
                    if c.reduces() && p > 1 && bytes > 0 && c.form != Form::Exclusive {
                        assert!(
                            checked.max_rel_error.is_some(),
                            "{c} {name}: no error column"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn integer_ops_and_cold_and_touched_buffers_pass() {
    let team = Team::new(3).unwrap();
    for c in ["allreduce", "scan", "reduce-scatter", "alltoall"].map(call) {
        for cache in [Cache::Cold, Cache::Touch] {
            let spec = CellSpec::new(c, 3, Dtype::I32, OpName::Bxor, 4 * 301, 0, cache);
            for (name, checked) in run_all::<i32, _>(&team, spec, op::BitXor) {
                assert_eq!(
                    checked.validation,
                    Validation::Pass,
                    "{c} {name} {cache:?}: {}",
                    checked.note
                );
                assert_eq!(checked.max_rel_error, None);
            }
        }
        let spec = CellSpec::new(c, 3, Dtype::U8, OpName::Max, 77, 0, Cache::Warm);
        for (name, checked) in run_all::<u8, _>(&team, spec, op::Max) {
            assert_eq!(
                checked.validation,
                Validation::Pass,
                "{c} {name}: {}",
                checked.note
            );
        }
    }
}

/// The outputs of a correct allreduce of 5 f64 on 3 ranks.
fn good_allreduce(spec: &CellSpec) -> Vec<Vec<f64>> {
    let inputs: Vec<Vec<f64>> = (0..3).map(|r| check_input(spec, r)).collect();
    let sum: Vec<f64> = (0..5).map(|i| inputs.iter().map(|v| v[i]).sum()).collect();
    vec![sum; 3]
}

fn boxed(v: Vec<Vec<f64>>) -> Vec<Box<dyn Any + Send>> {
    v.into_iter()
        .map(|x| Box::new(x) as Box<dyn Any + Send>)
        .collect()
}

#[test]
fn the_check_catches_wrong_results() {
    let spec = CellSpec::new(
        call("allreduce"),
        3,
        Dtype::F64,
        OpName::Sum,
        40,
        0,
        Cache::Warm,
    );
    let good = good_allreduce(&spec);
    assert_eq!(
        check::<f64, _>(&spec, &op::Sum, &boxed(good.clone())).validation,
        Validation::Pass
    );
    // One element off by far more than rounding.
    let mut bad = good.clone();
    bad[0][3] += 1e-6;
    let c = check::<f64, _>(&spec, &op::Sum, &boxed(bad));
    assert_eq!(c.validation, Validation::Fail);
    assert!(c.note.contains("rank 0, element 3"), "{}", c.note);
    let mut bad = good.clone();
    bad[1][3] += 1e-6;
    let c = check::<f64, _>(&spec, &op::Sum, &boxed(bad));
    assert_eq!(c.validation, Validation::Fail);
    assert!(
        c.note.contains("rank 1 differs from rank 0 at element 3"),
        "{}",
        c.note
    );
    // Off by one ulp on one rank only: within the error bound, but not bit-identical.
    let mut ulp = good.clone();
    ulp[2][0] = f64::from_bits(ulp[2][0].to_bits() + 1);
    let c = check::<f64, _>(&spec, &op::Sum, &boxed(ulp));
    assert_eq!(c.validation, Validation::Fail);
    assert!(c.note.contains("bit-identical"), "{}", c.note);
    // Too few ranks, wrong lengths, wrong types.
    assert_eq!(
        check::<f64, _>(&spec, &op::Sum, &boxed(good[..2].to_vec())).validation,
        Validation::Fail
    );
    let mut short = good.clone();
    short[0].pop();
    assert_eq!(
        check::<f64, _>(&spec, &op::Sum, &boxed(short)).validation,
        Validation::Fail
    );
    let ints: Vec<Box<dyn Any + Send>> = (0..3)
        .map(|_| Box::new(vec![0i32; 5]) as Box<dyn Any + Send>)
        .collect();
    assert_eq!(
        check::<f64, _>(&spec, &op::Sum, &ints).validation,
        Validation::Fail
    );
    // A gather whose blocks are swapped.
    let g = CellSpec::new(
        call("gather"),
        2,
        Dtype::F64,
        OpName::Sum,
        32,
        0,
        Cache::Warm,
    );
    let ins: Vec<Vec<f64>> = (0..2).map(|r| check_input(&g, r)).collect();
    let swapped = vec![[ins[1].clone(), ins[0].clone()].concat(), Vec::new()];
    assert_eq!(
        check::<f64, _>(&g, &op::Sum, &boxed(swapped)).validation,
        Validation::Fail
    );
    let right = vec![[ins[0].clone(), ins[1].clone()].concat(), Vec::new()];
    assert_eq!(
        check::<f64, _>(&g, &op::Sum, &boxed(right)).validation,
        Validation::Pass
    );
}

#[test]
fn cells_round_sizes_to_whole_elements_and_blocks() {
    let s = CellSpec::new(
        call("allreduce"),
        4,
        Dtype::F64,
        OpName::Sum,
        1001,
        0,
        Cache::Warm,
    );
    assert_eq!((s.count, s.block, s.bytes()), (125, 125, 1000));
    let s = CellSpec::new(
        call("allgather"),
        4,
        Dtype::F64,
        OpName::Sum,
        8,
        0,
        Cache::Warm,
    );
    assert_eq!((s.count, s.block, s.bytes()), (4, 1, 32));
    let s = CellSpec::new(
        call("alltoall"),
        3,
        Dtype::U8,
        OpName::Sum,
        1 << 20,
        0,
        Cache::Warm,
    );
    assert_eq!((s.count, s.block), (3 * 349_525, 349_525));
    let s = CellSpec::new(call("gather"), 3, Dtype::U8, OpName::Sum, 0, 0, Cache::Warm);
    assert_eq!((s.count, s.block), (0, 0));
    let s = CellSpec::new(
        call("barrier"),
        3,
        Dtype::F64,
        OpName::Sum,
        4096,
        0,
        Cache::Warm,
    );
    assert_eq!(s.bytes(), 0);
}
