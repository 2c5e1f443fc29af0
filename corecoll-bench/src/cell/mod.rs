//! One cell of a sweep — a collective call, an element type and op, a size, a rank count — and
//! corecoll's side of it: the buffers each rank passes, the kernel that calls the algorithm
//! (`kernel.rs`), the inputs of the check and the sequential reference that the check
//! compares against (`check.rs`), and the cell's record of the results.

mod check;
mod kernel;
#[cfg(test)]
mod tests;

pub use check::{check, Checked};
pub use kernel::CorecollKernel;

use crate::domain::{Cache, Call, Dtype, OpName};
use crate::elem::{input, Elem};
use crate::measure::Measured;
use crate::record::{Record, Source, Validation};
use crate::stats::Summary;
use corecoll::op::Op;
use corecoll::Collective;

/// Seed of the check's inputs.
pub const SEED: u64 = 0x636f_7265_636f_6c6c;

/// What one cell runs (everything but the algorithm).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellSpec {
    /// The collective call.
    pub call: Call,
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
    /// What the buffers hold when a call starts.
    pub cache: Cache,
}

impl CellSpec {
    /// The cell of `bytes` bytes per rank (as a record's `bytes` counts them) for `call` on
    /// `p` ranks: whole elements, and for the blocked collectives whole blocks of at least one
    /// element (so that a size below p elements still moves something).
    pub fn new(
        call: Call,
        p: usize,
        dtype: Dtype,
        op: OpName,
        bytes: usize,
        root: usize,
        cache: Cache,
    ) -> CellSpec {
        let elems = bytes / dtype.size();
        let (count, block) = if call.is_barrier() {
            (0, 0)
        } else if call.blocked() {
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
            call,
            p,
            dtype,
            op,
            count,
            block,
            root,
            cache,
        }
    }

    /// Bytes per rank actually moved (the record's `bytes`).
    pub fn bytes(&self) -> usize {
        self.count * self.dtype.size()
    }
}

/// The length of rank `rank`'s send and receive buffers for `spec` (the send buffer is the
/// only one of the in-place collectives). A `v` form's buffers are its collective's, its
/// counts equal.
pub fn lengths(spec: &CellSpec, rank: usize) -> (usize, usize) {
    let root = rank == spec.root;
    let (n, b) = (spec.count, spec.block);
    match spec.call.collective {
        Collective::Allreduce | Collective::Broadcast | Collective::Reduce | Collective::Scan => {
            (n, 0)
        }
        Collective::Gather => (b, if root { n } else { 0 }),
        Collective::Scatter => (if root { n } else { 0 }, b),
        Collective::Allgather => (b, n),
        Collective::Alltoall => (n, n),
        Collective::ReduceScatter => (n, b),
        _ => (0, 0),
    }
}

/// Whether `call` works in place: its result is left in its one buffer, the send buffer.
fn in_place(call: Call) -> bool {
    matches!(
        call.collective,
        Collective::Allreduce | Collective::Broadcast | Collective::Reduce | Collective::Scan
    )
}

/// Rank `rank`'s send buffer of the check: its inputs (for a broadcast or scatter, only the
/// root's matter; the others' are overwritten or unused).
pub fn check_input<T: Elem>(spec: &CellSpec, rank: usize) -> Vec<T> {
    let (send, _) = lengths(spec, rank);
    (0..send).map(|i| input(spec.op, SEED, rank, i)).collect()
}

/// The buffer that holds a rank's result after a call: the in-place collectives' one buffer,
/// the others' receive buffer.
pub fn output<T: Elem>(spec: &CellSpec, send: &[T], recv: &[T]) -> Vec<T> {
    if in_place(spec.call) {
        send.to_vec()
    } else {
        recv.to_vec()
    }
}

/// The record of a cell measured (or failed) with `measured`: the statistics of its times, the
/// bandwidths, and the check of its outputs against the reference for `spec`. `scope` and
/// `placement` are left empty for the caller to set.
pub fn record_of<T: Elem, O: Op<T>>(
    spec: &CellSpec,
    algorithm: &str,
    source: Source,
    op: &O,
    measured: Result<Measured, String>,
) -> Record {
    let mut rec = Record {
        collective: spec.call.name().into(),
        algorithm: algorithm.into(),
        source,
        scope: String::new(),
        placement: String::new(),
        ranks: spec.p,
        dtype: spec.dtype.name().into(),
        op: if spec.call.reduces() {
            spec.op.name().into()
        } else {
            "-".into()
        },
        bytes: spec.bytes(),
        count: spec.count,
        cache: spec.cache.name().into(),
        iters: 0,
        min_us: f64::NAN,
        median_us: f64::NAN,
        p95_us: f64::NAN,
        mean_us: f64::NAN,
        algbw_gbs: f64::NAN,
        busbw_gbs: f64::NAN,
        limit_pct: None,
        validation: Validation::Fail,
        max_rel_error: None,
        note: String::new(),
        auto_choice: String::new(),
        touch_us: None,
        switches: None,
    };
    let m = match measured {
        Ok(m) => m,
        Err(e) => {
            rec.note = e;
            return rec;
        }
    };
    rec.auto_choice = m.auto_choice.unwrap_or_default().into();
    rec.set_times(&m.times);
    rec.switches = m.switches;
    if spec.cache == Cache::Touch {
        rec.touch_us = Summary::of(&m.touch).map(|s| s.median * 1e6);
    }
    if m.outputs.is_empty() {
        rec.validation = Validation::Skipped;
    } else {
        let c = check::<T, O>(spec, op, &m.outputs);
        rec.validation = c.validation;
        rec.max_rel_error = c.max_rel_error;
        rec.note = c.note;
    }
    rec
}
