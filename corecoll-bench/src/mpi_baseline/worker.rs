//! One process of an MPI library's rows, started by that library's launcher from
//! [`super::run`]. Every process loads the library's layer (`library.rs`: MPI initialised with
//! `MPI_THREAD_FUNNELED`) and, for each collective, size and row, measures with the method of
//! `measure`:
//!
//! - warm-up calls first; rank 0 times one and decides (and broadcasts) how many more, then
//!   from their time how many timed iterations, with the rule of [`Timing`];
//! - each timed iteration starts with `MPI_Barrier`, and its time is max(end) − min(start)
//!   over the processes, computed at rank 0 from the (start, end) pairs that every process
//!   gathers there after the loop;
//! - after the loop, one more call on the inputs of [`cell::check_input`], whose outputs are
//!   gathered at rank 0 and compared with the sequential reference by [`cell::check`], as the
//!   threads' are. (It catches Open MPI 4.1's AVX-512 sums of 8-bit integers, which saturate
//!   where MPI's C semantics wrap, open-mpi/ompi#8045: those rows fail, rightly.)
//!
//! Clocks: the processes of one machine read the same `CLOCK_MONOTONIC`, so their start and
//! end times compare as they are and nothing needs synchronising. Across nodes the clocks
//! differ, and the method would first need them synchronised (ReproMPI's offset and drift
//! estimation, or an `MPI_Wtime` that is global, `MPI_WTIME_IS_GLOBAL`); the launchers here
//! start every process on this machine.
//!
//! `--cold` and `--touch`: each process's buffers are a `measure::Pool`, as the threads' are:
//! under `--cold` it cycles through enough buffers that they have left the caches when they
//! come round again; under `--touch` it writes its whole input before each call, outside the
//! timed window and timed apart. A pool's buffers, even empty ones, lie inside its allocation:
//! an empty `Vec` would point at the dangling address `align_of::<T>()`, and two of those look
//! to MPI like a send buffer that is also the receive buffer (`MPI_ERR_BUFFER`), and for bytes
//! that address is 1, which is Open MPI's `MPI_IN_PLACE`.

use super::library::{Library, Varying};
use super::{rows, Mpi, Row};
use crate::cell::{self, CellSpec};
use crate::cli::Args;
use crate::domain::{Form, OpName};
use crate::elem::{dispatch, Elem, Visit};
use crate::measure::{per_iteration, switches, Measured, Pool, Timing, Who};
use crate::record::{Record, Source};
use corecoll::op::Op;
use corecoll::Collective;
use std::any::Any;
use std::ffi::c_int;
use std::time::Duration;

/// One process of an MPI library's rows, started by its launcher from [`super::run`]:
/// measures every cell of `args` with the method of the module doc; rank 0 writes the records
/// to `--mpi-out`.
pub fn worker(args: &Args) -> Result<(), String> {
    let out = args
        .mpi_out
        .clone()
        .ok_or("--mpi-worker needs --mpi-out FILE")?;
    let mpi = args
        .mpi_label
        .as_deref()
        .and_then(Mpi::by_label)
        .ok_or("--mpi-worker needs --mpi-label openmpi|mpich")?;
    let layer = args
        .mpi_layer
        .clone()
        .ok_or("--mpi-worker needs --mpi-layer FILE")?;
    let lib = Library::open(&layer)?;
    let p = lib.size();
    // Every process checks the same arguments, so they all stop here together.
    if args.root >= p {
        return Err(format!(
            "--root {} is not a rank of {p} processes",
            args.root
        ));
    }
    if !args.op.applies_to(args.dtype) {
        return Err(format!(
            "--op {} is not defined on --type {}",
            args.op.name(),
            args.dtype.name()
        ));
    }
    let op = lib.op(args.op.name())?;
    let timing = Timing {
        warmup: args.warmup,
        iters: args.iters,
        budget: Duration::from_secs_f64(args.time),
        ..Timing::default()
    };
    let library = lib.version();
    let mut records = Vec::new();
    for &c in &args.collective.0 {
        let sizes: &[usize] = if c.is_barrier() { &[0] } else { &args.sizes.0 };
        for &bytes in sizes {
            let spec = CellSpec::new(c, p, args.dtype, args.op, bytes, args.root, args.cache());
            for row in rows(c, &args.algorithms, mpi.label) {
                let cell = MpiCell {
                    lib: &lib,
                    spec,
                    row,
                    name: row.name(mpi.label),
                    op,
                    timing: &timing,
                };
                let rec = dispatch(args.dtype, args.op, cell).ok_or("op not defined on type")??;
                if let Some(mut rec) = rec {
                    rec.note = match (rec.note.is_empty(), library.is_empty()) {
                        (true, _) => library.clone(),
                        (false, true) => rec.note,
                        (false, false) => format!("{}; {library}", rec.note),
                    };
                    records.push(rec);
                }
            }
        }
    }
    if lib.rank() == 0 {
        let text = serde_json::to_string(&records).map_err(|e| e.to_string())?;
        std::fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    Ok(())
}

/// Nanoseconds on `CLOCK_MONOTONIC`, the clock that every process of this machine shares.
fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, writable timespec owned by this frame, and clock_gettime(2)
    // writes only that; CLOCK_MONOTONIC is always supported on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One process's side of a cell: the MPI call over its send and receive buffers.
struct MpiKernel<'l, T> {
    /// The library.
    lib: &'l Library,
    /// The cell.
    spec: CellSpec,
    /// Which call.
    row: Row,
    /// The reduction (the layer's index of it).
    op: c_int,
    /// Send buffers (the one buffer of the broadcast).
    send: Pool<T>,
    /// Receive buffers.
    recv: Pool<T>,
    /// Every rank's block length, for the `v` forms.
    counts: Vec<c_int>,
    /// Every rank's block offset, for the `v` forms.
    displs: Vec<c_int>,
}

impl<'l, T: Elem> MpiKernel<'l, T> {
    /// The kernel of `row` for `spec` on this process.
    fn new(lib: &'l Library, spec: CellSpec, row: Row, op: c_int) -> Self {
        let r = lib.rank();
        let (s, v) = lengths(&spec, r);
        let name = spec.op;
        MpiKernel {
            lib,
            spec,
            row,
            op,
            send: Pool::new(s, spec.cache, spec.p, move |i| T::timing_value(name, r, i)),
            recv: Pool::new(v, spec.cache, spec.p, |_| T::default()),
            counts: vec![spec.block as c_int; spec.p],
            displs: (0..spec.p).map(|i| (i * spec.block) as c_int).collect(),
        }
    }

    /// One call on the current buffers.
    fn run(&mut self) -> Result<(), String> {
        let (lib, op, root) = (self.lib, self.op, self.spec.root);
        let (counts, displs) = (&self.counts[..], &self.displs[..]);
        let send = self.send.current();
        let recv = self.recv.current();
        use Collective as C;
        use Form::{Exclusive, Plain, Varying as V};
        let call = self.spec.call;
        match (call.collective, call.form, self.row) {
            (C::Allreduce, Plain, Row::Native) => lib.allreduce(send, recv, op),
            (C::Allreduce, Plain, Row::ReduceBcast) => {
                lib.reduce(send, recv, op, root)?;
                lib.bcast(recv, root)
            }
            (C::Broadcast, Plain, _) => lib.bcast(send, root),
            (C::Reduce, Plain, _) => lib.reduce(send, recv, op, root),
            (C::Scan, Plain, _) => lib.scan(send, recv, op, false),
            (C::Scan, Exclusive, _) => lib.scan(send, recv, op, true),
            (C::Gather, Plain, _) => lib.gather(send, recv, root),
            (C::Scatter, Plain, _) => lib.scatter(send, recv, root),
            (C::Allgather, Plain, _) => lib.allgather(send, recv, false),
            (C::Alltoall, Plain, _) => lib.allgather(send, recv, true),
            (C::ReduceScatter, Plain, _) => lib.reduce_scatter_block(send, recv, op),
            (C::Gather, V, _) => lib.varying(Varying::Gather, send, recv, counts, displs, root),
            (C::Scatter, V, _) => lib.varying(Varying::Scatter, send, recv, counts, displs, root),
            (C::Allgather, V, _) => {
                lib.varying(Varying::Allgather, send, recv, counts, displs, root)
            }
            (C::Alltoall, V, _) => lib.varying(Varying::Alltoall, send, recv, counts, displs, root),
            (C::Barrier, Plain, _) => lib.barrier(),
            _ => unreachable!("{call} has no MPI row (see `rows`)"),
        }
    }

    /// Under `--touch`, writes this process's whole input of the next call.
    fn touch(&mut self) {
        self.send.touch();
    }

    /// One timed call, on the next buffers.
    fn call(&mut self) -> Result<(), String> {
        self.send.next_buffer();
        self.recv.next_buffer();
        self.run()
    }

    /// The check call on the inputs of [`cell::check_input`]; returns this rank's output, or
    /// `None` for the barrier.
    fn check(&mut self) -> Result<Option<Vec<T>>, String> {
        if self.spec.call.is_barrier() {
            return Ok(None);
        }
        let r = self.lib.rank();
        let input = cell::check_input::<T>(&self.spec, r);
        self.send.current().copy_from_slice(&input);
        self.recv.current().fill(T::default());
        self.run()?;
        let send = &*self.send.current();
        let recv = &*self.recv.current();
        let exclusive = self.spec.call.form == Form::Exclusive;
        let out = match self.spec.call.collective {
            Collective::Broadcast => send,
            Collective::Reduce if r != self.spec.root => send,
            // MPI leaves rank 0's exscan result undefined; corecoll's in-place exscan leaves
            // rank 0's buffer as it was, which is what the check expects.
            Collective::Scan if exclusive && r == 0 => send,
            _ => recv,
        };
        Ok(Some(out.to_vec()))
    }
}

/// The lengths of rank `rank`'s send and receive buffers: those of [`cell::lengths`], except
/// that MPI's allreduce, scan, exscan and reduce (at the root) are out of place, so they have
/// a receive buffer as long as the send buffer.
fn lengths(spec: &CellSpec, rank: usize) -> (usize, usize) {
    let (s, v) = cell::lengths(spec, rank);
    match spec.call.collective {
        Collective::Allreduce | Collective::Scan => (s, spec.count),
        Collective::Reduce if rank == spec.root => (s, spec.count),
        _ => (s, v),
    }
}

/// One cell to run: everything but the element type and op, which [`dispatch`] supplies.
struct MpiCell<'a> {
    /// The library.
    lib: &'a Library,
    /// The cell.
    spec: CellSpec,
    /// Which call.
    row: Row,
    /// The row's name.
    name: String,
    /// The layer's index of the op.
    op: c_int,
    /// How many iterations.
    timing: &'a Timing,
}

impl Visit for MpiCell<'_> {
    /// The record at rank 0, `None` elsewhere; `Err` when an MPI call failed (which MPI's
    /// default error handler makes fatal before it gets here).
    type Out = Result<Option<Record>, String>;

    fn visit<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
        self,
        _: OpName,
        op: O,
    ) -> Self::Out {
        // Every process computes the same answer, so they skip the cell together.
        let measured = if self.spec.count.saturating_mul(self.spec.p) > c_int::MAX as usize {
            Err(format!(
                "{} elements per rank is more than MPI's int counts hold here",
                self.spec.count
            ))
        } else {
            Ok(measure::<T>(
                self.lib,
                &self.spec,
                self.row,
                self.op,
                self.timing,
            )?)
        };
        Ok((self.lib.rank() == 0)
            .then(|| cell::record_of::<T, O>(&self.spec, &self.name, Source::Mpi, &op, measured)))
    }
}

/// Measures one cell on every process with the method of the module doc. At rank 0 the
/// result holds the per-iteration times and every rank's check output; elsewhere it is empty.
/// `Err` is an MPI call's failure, which ends the worker. The counts must fit MPI's `int`.
fn measure<T: Elem>(
    lib: &Library,
    spec: &CellSpec,
    row: Row,
    op: c_int,
    timing: &Timing,
) -> Result<Measured, String> {
    let mut k = MpiKernel::<T>::new(lib, *spec, row, op);
    // Warm-up: rank 0 times one call and decides how many more, then how many timed ones.
    k.touch();
    lib.barrier()?;
    let t0 = now_ns();
    k.call()?;
    let first = (now_ns() - t0) as f64 * 1e-9;
    let mut n: u64 = timing.warmups(first);
    lib.bcast_u64(&mut n)?;
    let t0 = now_ns();
    for _ in 1..n {
        k.touch();
        k.call()?;
    }
    let per_call = if n > 1 {
        (now_ns() - t0) as f64 * 1e-9 / (n - 1) as f64
    } else {
        first
    };
    let mut iters: u64 = timing.iterations(per_call);
    lib.bcast_u64(&mut iters)?;
    // Per iteration: the touch's duration, then the call's start and end.
    let mut stamps = Vec::with_capacity(3 * iters as usize + 1);
    let switched = switches(Who::Process);
    for _ in 0..iters {
        let before = now_ns();
        k.touch();
        stamps.push(now_ns() - before);
        lib.barrier()?;
        let start = now_ns();
        k.call()?;
        stamps.push(start);
        stamps.push(now_ns());
    }
    let switched = switches(Who::Process).saturating_sub(switched);
    let output = k.check()?;
    drop(k);

    // The stamps and the check outputs, gathered at rank 0.
    let p = spec.p;
    let (mut times, mut touch) = (Vec::new(), Vec::new());
    let mut all = vec![0u64; if lib.rank() == 0 { stamps.len() * p } else { 1 }];
    lib.gather_u64(&stamps, &mut all)?;
    if lib.rank() == 0 {
        let per_rank = stamps.len();
        let at = |q: usize, i: usize, j: usize| all[q * per_rank + 3 * i + j];
        for i in 0..iters as usize {
            let slowest = (0..p).map(|q| at(q, i, 0)).max().unwrap_or(0);
            let start = (0..p).map(|q| at(q, i, 1)).min().unwrap_or(0);
            let end = (0..p).map(|q| at(q, i, 2)).max().unwrap_or(0);
            touch.push(slowest as f64 * 1e-9);
            times.push(end.saturating_sub(start) as f64 * 1e-9);
        }
    }
    let mut per_process = vec![0u64; p];
    lib.gather_u64(&[switched], &mut per_process)?;
    let outputs = match output {
        Some(out) => gather_outputs(lib, out)?,
        None => Vec::new(),
    };
    Ok(Measured {
        times,
        touch,
        switches: per_iteration(per_process.iter().sum(), iters as usize),
        outputs,
        auto_choice: None,
    })
}

/// Gathers every rank's check output at rank 0, boxed per rank as [`cell::check`] takes them;
/// empty elsewhere.
fn gather_outputs<T: Elem>(
    lib: &Library,
    mut out: Vec<T>,
) -> Result<Vec<Box<dyn Any + Send>>, String> {
    // An address of its own even when empty (see the module doc).
    out.reserve(1);
    let (p, zero) = (lib.size(), lib.rank() == 0);
    let mut lens = vec![0u64; p];
    lib.gather_u64(&[out.len() as u64], &mut lens)?;
    let counts: Vec<c_int> = lens.iter().map(|&l| l as c_int).collect();
    let displs: Vec<c_int> = counts
        .iter()
        .scan(0, |at, &l| {
            let d = *at;
            *at += l;
            Some(d)
        })
        .collect();
    let total: usize = if zero {
        lens.iter().map(|&l| l as usize).sum()
    } else {
        0
    };
    let mut all: Vec<T> = vec![T::default(); total.max(1)];
    lib.varying(Varying::Gather, &out, &mut all, &counts, &displs, 0)?;
    if !zero {
        return Ok(Vec::new());
    }
    let mut rest = &all[..];
    Ok(lens
        .iter()
        .map(|&l| {
            let (mine, after) = rest.split_at(l as usize);
            rest = after;
            Box::new(mine.to_vec()) as Box<dyn Any + Send>
        })
        .collect())
}
