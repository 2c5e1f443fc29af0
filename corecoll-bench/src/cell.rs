//! One cell of a sweep — a collective, an element type and op, a size, a rank count — and
//! corecoll's side of it: the algorithms of each collective, the kernel that calls them, the
//! inputs of the check, and the sequential reference that the check compares against.

use crate::cli::{Collective, Dtype, OpName, Param};
use crate::elem::{input, Elem};
use crate::measure::{Kernel, Pool};
use crate::record::Validation;
use corecoll::algorithm::{
    Allgather, Alltoall, Barrier, Broadcast, Fanout, Gather, Reduce, ReduceScatter, Scan, Scatter,
};
use corecoll::op::Op;
use corecoll::Block;
use corecoll::{Algorithm, Comm};
use std::any::Any;

/// Seed of the check's inputs.
pub const SEED: u64 = 0x636f_7265_636f_6c6c;

/// What one cell runs (everything but the algorithm).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellSpec {
    /// The collective.
    pub collective: Collective,
    /// Ranks.
    pub p: usize,
    /// Element type.
    pub dtype: Dtype,
    /// Op of the reducing collectives.
    pub op: OpName,
    /// Elements in each rank's largest buffer (`block · p` for the blocked collectives).
    pub count: usize,
    /// Elements per rank's block (= `count` for the unblocked collectives).
    pub block: usize,
    /// Root of the rooted collectives.
    pub root: usize,
    /// A different buffer each iteration.
    pub cold: bool,
}

impl CellSpec {
    /// The cell of `bytes` bytes per rank (as [`crate::record::Record::bytes`] counts) for
    /// `collective` on `p` ranks: whole elements, and for the blocked collectives whole blocks
    /// of at least one element (so that a size below p elements still moves something).
    pub fn new(
        collective: Collective,
        p: usize,
        dtype: Dtype,
        op: OpName,
        bytes: usize,
        root: usize,
        cold: bool,
    ) -> CellSpec {
        let elems = bytes / dtype.size();
        let (count, block) = if collective == Collective::Barrier {
            (0, 0)
        } else if collective.blocked() {
            let block = if bytes == 0 {
                0
            } else {
                (elems / p.max(1)).max(1)
            };
            (block * p, block)
        } else {
            (elems, elems)
        };
        CellSpec {
            collective,
            p,
            dtype,
            op,
            count,
            block,
            root,
            cold,
        }
    }

    /// Bytes per rank actually moved (the record's `bytes`).
    pub fn bytes(&self) -> usize {
        self.count * self.dtype.size()
    }
}

/// A corecoll algorithm of some collective.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Alg {
    /// Allreduce.
    Allreduce(Algorithm),
    /// Broadcast.
    Broadcast(Broadcast),
    /// Reduce.
    Reduce(Reduce),
    /// Scan and exscan.
    Scan(Scan),
    /// Gather.
    Gather(Gather),
    /// Scatter.
    Scatter(Scatter),
    /// Allgather.
    Allgather(Allgather),
    /// Alltoall.
    Alltoall(Alltoall),
    /// Reduce-scatter.
    ReduceScatter(ReduceScatter),
    /// Barrier.
    Barrier(Barrier),
    /// The one algorithm of a `v` form.
    Fixed,
}

/// corecoll's algorithms for `c` between threads, `auto` first, with their names (without
/// `native`, MPI's own collective between processes, which is `auto` between threads).
pub fn algorithms(c: Collective) -> Vec<(&'static str, Alg)> {
    fn all<A: Copy>(
        list: &[A],
        name: fn(A) -> &'static str,
        f: fn(A) -> Alg,
    ) -> Vec<(&'static str, Alg)> {
        list.iter()
            .filter(|&&a| name(a) != "native")
            .map(|&a| (name(a), f(a)))
            .collect()
    }
    match c {
        Collective::Allreduce => all(&Algorithm::ALL, Algorithm::name, Alg::Allreduce),
        Collective::Broadcast => all(&Broadcast::ALL, Broadcast::name, Alg::Broadcast),
        Collective::Reduce => all(&Reduce::ALL, Reduce::name, Alg::Reduce),
        Collective::Scan | Collective::Exscan => all(&Scan::ALL, Scan::name, Alg::Scan),
        Collective::Gather => all(&Gather::ALL, Gather::name, Alg::Gather),
        Collective::Scatter => all(&Scatter::ALL, Scatter::name, Alg::Scatter),
        Collective::Allgather => all(&Allgather::ALL, Allgather::name, Alg::Allgather),
        Collective::Alltoall => all(&Alltoall::ALL, Alltoall::name, Alg::Alltoall),
        Collective::ReduceScatter => {
            all(&ReduceScatter::ALL, ReduceScatter::name, Alg::ReduceScatter)
        }
        Collective::Barrier => all(&Barrier::ALL, Barrier::name, Alg::Barrier),
        Collective::Gatherv | Collective::Scatterv => vec![("linear", Alg::Fixed)],
        Collective::Allgatherv => vec![("ring", Alg::Fixed)],
        Collective::Alltoallv => vec![("pairwise", Alg::Fixed)],
    }
}

/// `alg` with its parameter set to `param` (a block or segment of `param` bytes, in elements
/// of `dtype`, at least 1; or a ring-leaders fanout), or `None` when `alg` takes no such
/// parameter.
pub fn with_param(alg: Alg, param: Param, dtype: Dtype) -> Option<Alg> {
    let block = match param {
        Param::Bytes(b) => Some(Block::Elements((b / dtype.size()).max(1))),
        Param::Fanout(_) => None,
    };
    Some(match (alg, param) {
        (Alg::Allreduce(a), Param::Bytes(_)) => Alg::Allreduce(match a {
            Algorithm::Chain { .. } => Algorithm::Chain { block: block? },
            Algorithm::Ring { .. } => Algorithm::Ring { block: block? },
            Algorithm::PipelinedTree { .. } => Algorithm::PipelinedTree { block: block? },
            Algorithm::DualRoot { .. } => Algorithm::DualRoot { block: block? },
            Algorithm::TwoTree { .. } => Algorithm::TwoTree { block: block? },
            Algorithm::Hierarchical { .. } => Algorithm::Hierarchical { segment: block? },
            _ => return None,
        }),
        (Alg::Broadcast(Broadcast::PipelinedTree { .. }), Param::Bytes(_)) => {
            Alg::Broadcast(Broadcast::PipelinedTree { block: block? })
        }
        (Alg::Reduce(Reduce::PipelinedTree { .. }), Param::Bytes(_)) => {
            Alg::Reduce(Reduce::PipelinedTree { block: block? })
        }
        (Alg::Scan(Scan::PipelinedTree { .. }), Param::Bytes(_)) => {
            Alg::Scan(Scan::PipelinedTree { block: block? })
        }
        (Alg::Alltoall(Alltoall::RingLeaders { .. }), Param::Fanout(n)) => {
            Alg::Alltoall(Alltoall::RingLeaders {
                fanout: Fanout::Exchanges(n),
            })
        }
        _ => return None,
    })
}

/// The length of rank `rank`'s send and receive buffers for `spec` (the send buffer is the
/// only one of the in-place collectives).
pub fn lengths(spec: &CellSpec, rank: usize) -> (usize, usize) {
    let root = rank == spec.root;
    let (n, b) = (spec.count, spec.block);
    match spec.collective {
        Collective::Allreduce
        | Collective::Broadcast
        | Collective::Reduce
        | Collective::Scan
        | Collective::Exscan => (n, 0),
        Collective::Gather | Collective::Gatherv => (b, if root { n } else { 0 }),
        Collective::Scatter | Collective::Scatterv => (if root { n } else { 0 }, b),
        Collective::Allgather | Collective::Allgatherv => (b, n),
        Collective::Alltoall | Collective::Alltoallv => (n, n),
        Collective::ReduceScatter => (n, b),
        Collective::Barrier => (0, 0),
    }
}

/// Rank `rank`'s send buffer of the check: its inputs (for a broadcast or scatter, only the
/// root's matter; the others' are overwritten or unused).
pub fn check_input<T: Elem>(spec: &CellSpec, rank: usize) -> Vec<T> {
    let (send, _) = lengths(spec, rank);
    (0..send).map(|i| input(spec.op, SEED, rank, i)).collect()
}

/// corecoll's kernel on one rank: the algorithm's call over a pool of send and receive
/// buffers.
pub struct CorecollKernel<'c, T, O> {
    comm: &'c Comm,
    spec: CellSpec,
    alg: Alg,
    op: O,
    send: Pool<T>,
    recv: Pool<T>,
    counts: Vec<usize>,
    displs: Vec<usize>,
}

impl<'c, T: Elem, O: Op<T> + Copy> CorecollKernel<'c, T, O> {
    /// The kernel of `alg` for `spec` on `comm`'s rank.
    pub fn new(comm: &'c Comm, spec: CellSpec, alg: Alg, op: O) -> Self {
        let r = comm.rank();
        let (s, v) = lengths(&spec, r);
        let fill = |i| T::timing_value(spec.op, r, i);
        CorecollKernel {
            comm,
            spec,
            alg,
            op,
            send: Pool::new(s, spec.cold, spec.p, fill),
            recv: Pool::new(v, spec.cold, spec.p, fill),
            counts: vec![spec.block; spec.p],
            displs: (0..spec.p).map(|i| i * spec.block).collect(),
        }
    }

    /// Calls the collective on the current buffers.
    fn run(&mut self) -> corecoll::Result<()> {
        let (c, op, root) = (self.comm, self.op, self.spec.root);
        let send = self.send.current();
        let recv = self.recv.current();
        let (counts, displs) = (&self.counts[..], &self.displs[..]);
        match (self.spec.collective, self.alg) {
            (Collective::Allreduce, Alg::Allreduce(a)) => c.allreduce_with(send, op, a),
            (Collective::Broadcast, Alg::Broadcast(a)) => c.broadcast_with(send, root, a),
            (Collective::Reduce, Alg::Reduce(a)) => c.reduce_with(send, op, root, a),
            (Collective::Scan, Alg::Scan(a)) => c.scan_with(send, op, a),
            (Collective::Exscan, Alg::Scan(a)) => c.exscan_with(send, op, a),
            (Collective::Gather, Alg::Gather(a)) => c.gather_with(send, recv, root, a),
            (Collective::Scatter, Alg::Scatter(a)) => c.scatter_with(send, recv, root, a),
            (Collective::Allgather, Alg::Allgather(a)) => c.allgather_with(send, recv, a),
            (Collective::Alltoall, Alg::Alltoall(a)) => c.alltoall_with(send, recv, a),
            (Collective::ReduceScatter, Alg::ReduceScatter(a)) => {
                c.reduce_scatter_block_with(send, recv, op, a)
            }
            (Collective::Barrier, Alg::Barrier(a)) => c.barrier_with(a),
            (Collective::Gatherv, Alg::Fixed) => c.gatherv(send, recv, counts, displs, root),
            (Collective::Scatterv, Alg::Fixed) => c.scatterv(send, counts, displs, recv, root),
            (Collective::Allgatherv, Alg::Fixed) => c.allgatherv(send, recv, counts, displs),
            (Collective::Alltoallv, Alg::Fixed) => {
                c.alltoallv(send, counts, displs, recv, counts, displs)
            }
            (collective, alg) => panic!("{alg:?} is not an algorithm of {}", collective.name()),
        }
    }
}

impl<T: Elem, O: Op<T> + Copy> Kernel for CorecollKernel<'_, T, O> {
    fn call(&mut self) -> Result<(), String> {
        self.send.next();
        self.recv.next();
        self.run().map_err(|e| e.to_string())
    }

    fn check(&mut self) -> Result<Option<Box<dyn Any + Send>>, String> {
        if self.spec.collective == Collective::Barrier {
            return Ok(None);
        }
        let input = check_input::<T>(&self.spec, self.comm.rank());
        self.send.current().copy_from_slice(&input);
        self.recv.current().fill(T::default());
        self.run().map_err(|e| e.to_string())?;
        Ok(Some(Box::new(output(
            &self.spec,
            self.send.current(),
            self.recv.current(),
        ))))
    }
}

/// The buffer that holds a rank's result after a call: the in-place collectives' one buffer,
/// the others' receive buffer.
pub fn output<T: Elem>(spec: &CellSpec, send: &[T], recv: &[T]) -> Vec<T> {
    match spec.collective {
        Collective::Allreduce
        | Collective::Broadcast
        | Collective::Reduce
        | Collective::Scan
        | Collective::Exscan => send.to_vec(),
        _ => recv.to_vec(),
    }
}

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
    match spec.collective {
        Collective::Gather | Collective::Gatherv if r != spec.root => 0,
        Collective::Barrier => 0,
        Collective::Scatter | Collective::Scatterv | Collective::ReduceScatter => spec.block,
        _ => spec.count,
    }
}

/// Element `i` of rank `r`'s expected output for `spec`.
fn expected<T: Elem>(spec: &CellSpec, inputs: &[Vec<T>], r: usize, i: usize) -> Expect<T> {
    let (p, b, root) = (spec.p, spec.block, spec.root);
    let fold = |elem: usize, ranks: std::ops::Range<usize>| Expect::Fold { elem, ranks };
    match spec.collective {
        Collective::Allreduce => fold(i, 0..p),
        Collective::Reduce if r == root => fold(i, 0..p),
        Collective::Reduce => Expect::Copy(inputs[r][i]),
        Collective::Broadcast => Expect::Copy(inputs[root][i]),
        Collective::Scan => fold(i, 0..r + 1),
        Collective::Exscan if r == 0 => Expect::Copy(inputs[0][i]),
        Collective::Exscan => fold(i, 0..r),
        Collective::Gather
        | Collective::Gatherv
        | Collective::Allgather
        | Collective::Allgatherv => Expect::Copy(inputs[i / b][i % b]),
        Collective::Scatter | Collective::Scatterv => Expect::Copy(inputs[root][r * b + i]),
        Collective::Alltoall | Collective::Alltoallv => Expect::Copy(inputs[i / b][r * b + i % b]),
        Collective::ReduceScatter => fold(r * b + i, 0..p),
        Collective::Barrier => unreachable!("a barrier has no output"),
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
        if spec.collective == Collective::Allreduce && r > 0 {
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
    if spec.collective == Collective::Allreduce {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{measure, Timing};
    use corecoll::op;
    use corecoll::Team;

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
        algorithms(spec.collective)
            .into_iter()
            .map(|(name, alg)| {
                let m = measure(team, &quick(), true, |comm| {
                    Ok(Box::new(CorecollKernel::<T, O>::new(comm, spec, alg, o))
                        as Box<dyn Kernel + '_>)
                })
                .unwrap_or_else(|e| panic!("{} {name}: {e}", spec.collective.name()));
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
            for c in Collective::ALL {
                for bytes in [0, 8, 8 * 7, 8 * 1000 + 24] {
                    let root =
                        if c.blocked() || matches!(c, Collective::Broadcast | Collective::Reduce) {
                            p - 1
                        } else {
                            0
                        };
                    let spec = CellSpec::new(c, p, Dtype::F64, OpName::Sum, bytes, root, false);
                    for (name, checked) in run_all::<f64, _>(&team, spec, op::Sum) {
                        let want = if c == Collective::Barrier {
                            Validation::Skipped
                        } else {
                            Validation::Pass
                        };
                        assert_eq!(
                            checked.validation,
                            want,
                            "p={p} {} {name} {bytes} B: {}",
                            c.name(),
                            checked.note
                        );
                        if c.reduces() && p > 1 && bytes > 0 && c != Collective::Exscan {
                            assert!(
                                checked.max_rel_error.is_some(),
                                "{} {name}: no error column",
                                c.name()
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn integer_ops_and_cold_buffers_pass() {
        let team = Team::new(3).unwrap();
        for c in [
            Collective::Allreduce,
            Collective::Scan,
            Collective::ReduceScatter,
            Collective::Alltoall,
        ] {
            let spec = CellSpec::new(c, 3, Dtype::I32, OpName::Bxor, 4 * 301, 0, true);
            for (name, checked) in run_all::<i32, _>(&team, spec, op::BitXor) {
                assert_eq!(
                    checked.validation,
                    Validation::Pass,
                    "{} {name}: {}",
                    c.name(),
                    checked.note
                );
                assert_eq!(checked.max_rel_error, None);
            }
            let spec = CellSpec::new(c, 3, Dtype::U8, OpName::Max, 77, 0, false);
            for (name, checked) in run_all::<u8, _>(&team, spec, op::Max) {
                assert_eq!(
                    checked.validation,
                    Validation::Pass,
                    "{} {name}: {}",
                    c.name(),
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
            Collective::Allreduce,
            3,
            Dtype::F64,
            OpName::Sum,
            40,
            0,
            false,
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
        let g = CellSpec::new(Collective::Gather, 2, Dtype::F64, OpName::Sum, 32, 0, false);
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
    fn parameters_apply_to_the_algorithms_that_take_them() {
        let find = |c, name| {
            algorithms(c)
                .into_iter()
                .find(|(n, _)| *n == name)
                .unwrap()
                .1
        };
        let h = find(Collective::Allreduce, "hierarchical");
        assert_eq!(
            with_param(h, Param::Bytes(1024), Dtype::F64),
            Some(Alg::Allreduce(Algorithm::Hierarchical {
                segment: Block::Elements(128)
            }))
        );
        // Less than one element is one element.
        let d = find(Collective::Allreduce, "dual-root");
        assert_eq!(
            with_param(d, Param::Bytes(3), Dtype::F32),
            Some(Alg::Allreduce(Algorithm::DualRoot {
                block: Block::Elements(1)
            }))
        );
        assert_eq!(with_param(d, Param::Fanout(2), Dtype::F64), None);
        // The chain's block and the ring's largest piece.
        assert_eq!(
            with_param(
                find(Collective::Allreduce, "chain"),
                Param::Bytes(4096),
                Dtype::F64
            ),
            Some(Alg::Allreduce(Algorithm::Chain {
                block: Block::Elements(512)
            }))
        );
        assert_eq!(
            with_param(
                find(Collective::Allreduce, "ring"),
                Param::Bytes(64),
                Dtype::F32
            ),
            Some(Alg::Allreduce(Algorithm::Ring {
                block: Block::Elements(16)
            }))
        );
        for c in [Collective::Broadcast, Collective::Reduce, Collective::Scan] {
            assert!(with_param(find(c, "pipelined-tree"), Param::Bytes(64), Dtype::U8).is_some());
        }
        let rl = find(Collective::Alltoall, "ring-leaders");
        assert_eq!(
            with_param(rl, Param::Fanout(2), Dtype::F64),
            Some(Alg::Alltoall(Alltoall::RingLeaders {
                fanout: Fanout::Exchanges(2)
            }))
        );
        assert_eq!(with_param(rl, Param::Bytes(8), Dtype::F64), None);
        for (c, name) in [
            (Collective::Allreduce, "direct"),
            (Collective::Broadcast, "hierarchical"),
            (Collective::Barrier, "hierarchical"),
        ] {
            assert_eq!(
                with_param(find(c, name), Param::Bytes(64), Dtype::F64),
                None
            );
        }
    }

    #[test]
    fn cells_round_sizes_to_whole_elements_and_blocks() {
        let s = CellSpec::new(
            Collective::Allreduce,
            4,
            Dtype::F64,
            OpName::Sum,
            1001,
            0,
            false,
        );
        assert_eq!((s.count, s.block, s.bytes()), (125, 125, 1000));
        let s = CellSpec::new(
            Collective::Allgather,
            4,
            Dtype::F64,
            OpName::Sum,
            8,
            0,
            false,
        );
        assert_eq!((s.count, s.block, s.bytes()), (4, 1, 32));
        let s = CellSpec::new(
            Collective::Alltoall,
            3,
            Dtype::U8,
            OpName::Sum,
            1 << 20,
            0,
            false,
        );
        assert_eq!((s.count, s.block), (3 * 349_525, 349_525));
        let s = CellSpec::new(Collective::Gather, 3, Dtype::U8, OpName::Sum, 0, 0, false);
        assert_eq!((s.count, s.block), (0, 0));
        let s = CellSpec::new(
            Collective::Barrier,
            3,
            Dtype::F64,
            OpName::Sum,
            4096,
            0,
            false,
        );
        assert_eq!(s.bytes(), 0);
    }
}
