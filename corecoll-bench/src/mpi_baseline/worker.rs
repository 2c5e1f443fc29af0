//! One process of the MPI baseline, started by `mpirun` from [`super::run`]. Every process
//! initialises MPI (`Threading::Funneled`) and, for each collective, size and row, measures
//! with the method of `measure`:
//!
//! - warm-up calls first; rank 0 times one and decides (and broadcasts) how many more, then
//!   from their time how many timed iterations, with the defaults of [`Timing`];
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
//! estimation, or an `MPI_Wtime` that is global, `MPI_WTIME_IS_GLOBAL`); `mpirun` here starts
//! every process on this machine.
//!
//! `--cold` and `--touch`: each process's buffers are a `measure::Pool`, as the threads' are:
//! under `--cold` it cycles through enough buffers that they have left the caches when they
//! come round again; under `--touch` it writes its whole input before each call, outside the
//! timed window and timed apart.

use super::{rows, Row};
use crate::cell::{self, CellSpec};
use crate::cli::Args;
use crate::domain::{Form, OpName};
use crate::elem::{dispatch, Elem, Visit};
use crate::measure::{Measured, Pool, Timing};
use crate::record::{Record, Source};
use corecoll::op::Op;
use corecoll::Collective;
use mpi::collective::SystemOperation;
use mpi::datatype::{DynBuffer, DynBufferMut, Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::{Count, Threading};
use std::any::{Any, TypeId};
use std::time::Duration;

/// One process of the MPI baseline, started by `mpirun` from [`super::run`]: measures every
/// cell of `args` with the method of the module doc; rank 0 writes the records to `--mpi-out`.
pub fn worker(args: &Args) -> Result<(), String> {
    let out = args
        .mpi_out
        .clone()
        .ok_or("--mpi-worker needs --mpi-out FILE")?;
    let (universe, provided) =
        mpi::initialize_with_threading(Threading::Funneled).ok_or("MPI was initialised already")?;
    if provided == Threading::Single {
        return Err("the MPI library provides only Threading::Single, not Funneled".into());
    }
    let world = universe.world();
    let (rank, p) = (world.rank() as usize, world.size() as usize);
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
    let timing = Timing {
        warmup: args.warmup,
        iters: args.iters,
        budget: Duration::from_secs_f64(args.time),
        ..Timing::default()
    };
    let library = mpi::environment::library_version()
        .ok()
        .and_then(|v| v.split(',').next().map(|s| s.trim().to_string()))
        .unwrap_or_default();
    let mut records = Vec::new();
    for &c in &args.collective.0 {
        let sizes: &[usize] = if c.is_barrier() { &[0] } else { &args.sizes.0 };
        for &bytes in sizes {
            let spec = CellSpec::new(c, p, args.dtype, args.op, bytes, args.root, args.cache());
            for row in rows(c, &args.algorithms) {
                let cell = MpiCell {
                    world: &world,
                    spec,
                    row,
                    timing: &timing,
                };
                let rec = dispatch(args.dtype, args.op, cell).ok_or("op not defined on type")?;
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
    if rank == 0 {
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

/// rsmpi's predefined operation for `op`.
fn system_op(op: OpName) -> SystemOperation {
    match op {
        OpName::Sum => SystemOperation::sum(),
        OpName::Prod => SystemOperation::product(),
        OpName::Min => SystemOperation::min(),
        OpName::Max => SystemOperation::max(),
        OpName::Band => SystemOperation::bitwise_and(),
        OpName::Bor => SystemOperation::bitwise_or(),
        OpName::Bxor => SystemOperation::bitwise_xor(),
    }
}

/// Returns `$make` of slice `$x` (of a generic element type `$t`) as a slice of whichever of the
/// bench's element types `$t` is, rebuilt by `$from_raw` (`from_raw_parts` or its `_mut`
/// form) from `$x`'s pointer (`as_ptr` or `as_mut_ptr`, `$ptr`): rsmpi takes its datatype from
/// the concrete type, which a generic `T: Elem` does not name.
macro_rules! as_concrete {
    ($t:ty, $x:ident, $ptr:ident, $from_raw:path, $make:path) => {{
        as_concrete!(@try $t, $x, $ptr, $from_raw, $make, f64, f32, i64, i32, u8)
    }};
    (@try $t:ty, $x:ident, $ptr:ident, $from_raw:path, $make:path, $($c:ty),*) => {{
        $(
            if TypeId::of::<$t>() == TypeId::of::<$c>() {
                let len = $x.len();
                // SAFETY: `$t` is `$c` (their `TypeId`s are equal), so the slice's memory
                // holds `len` initialised `$c` values, borrowed as `$x` was for as long.
                return $make(unsafe { $from_raw($x.$ptr().cast::<$c>(), len) });
            }
        )*
        unreachable!("the bench's element types are f64, f32, i64, i32 and u8")
    }};
}

/// MPI's view of a slice of one of the element types.
fn mpi_ref<T: Elem>(x: &[T]) -> DynBuffer<'_> {
    as_concrete!(T, x, as_ptr, std::slice::from_raw_parts, DynBuffer::new)
}

/// MPI's mutable view of a slice of one of the element types.
fn mpi_mut<T: Elem>(x: &mut [T]) -> DynBufferMut<'_> {
    as_concrete!(
        T,
        x,
        as_mut_ptr,
        std::slice::from_raw_parts_mut,
        DynBufferMut::new
    )
}

/// A buffer of `len` elements `fill(i)`, with room for at least one, so that it has an address
/// of its own even when empty. An empty `Vec` points at the dangling address `align_of::<T>()`:
/// two of them look to MPI like a send buffer that is also the receive buffer, which it
/// rejects (`MPI_ERR_BUFFER`), and for bytes that address is 1, which is Open MPI's
/// `MPI_IN_PLACE`.
fn buffer<T>(len: usize, fill: impl Fn(usize) -> T) -> Vec<T> {
    let mut v = Vec::with_capacity(len.max(1));
    v.extend((0..len).map(fill));
    v
}

/// One process's side of a cell: the MPI call over its send and receive buffers.
struct MpiKernel<'w, T> {
    /// The processes.
    world: &'w SimpleCommunicator,
    /// The cell.
    spec: CellSpec,
    /// Which call.
    row: Row,
    /// The reduction.
    op: SystemOperation,
    /// Send buffers (the one buffer of the broadcast). A pool's buffers, even empty ones, lie
    /// inside its allocation (see [`buffer`] for why that matters).
    send: Pool<T>,
    /// Receive buffers.
    recv: Pool<T>,
    /// Every rank's block length, for the `v` forms.
    counts: Vec<Count>,
    /// Every rank's block offset, for the `v` forms.
    displs: Vec<Count>,
}

impl<'w, T: Elem> MpiKernel<'w, T> {
    /// The kernel of `row` for `spec` on this process.
    fn new(world: &'w SimpleCommunicator, spec: CellSpec, row: Row, op: OpName) -> Self {
        let r = world.rank() as usize;
        let (s, v) = lengths(&spec, r);
        MpiKernel {
            world,
            spec,
            row,
            op: system_op(op),
            send: Pool::new(s, spec.cache, spec.p, move |i| T::timing_value(op, r, i)),
            recv: Pool::new(v, spec.cache, spec.p, |_| T::default()),
            counts: vec![spec.block as Count; spec.p],
            displs: (0..spec.p).map(|i| (i * spec.block) as Count).collect(),
        }
    }

    /// One call on the current buffers.
    fn run(&mut self) {
        let w = self.world;
        let me = w.rank() as usize == self.spec.root;
        let root = w.process_at_rank(self.spec.root as i32);
        let op = &self.op;
        let (counts, displs) = (&self.counts[..], &self.displs[..]);
        let send = self.send.current();
        let recv = self.recv.current();
        let s = mpi_ref(send);
        let mut v = mpi_mut(recv);
        use Collective as C;
        use Form::{Exclusive, Plain, Varying};
        let call = self.spec.call;
        match (call.collective, call.form, self.row) {
            (C::Allreduce, Plain, Row::Native) => w.all_reduce_into(&s, &mut v, op),
            (C::Allreduce, Plain, Row::ReduceBcast) => {
                if me {
                    root.reduce_into_root(&s, &mut v, op);
                } else {
                    root.reduce_into(&s, op);
                }
                root.broadcast_into(&mut v);
            }
            (C::Broadcast, Plain, _) => root.broadcast_into(&mut mpi_mut(send)),
            (C::Reduce, Plain, _) if me => root.reduce_into_root(&s, &mut v, op),
            (C::Reduce, Plain, _) => root.reduce_into(&s, op),
            (C::Scan, Plain, _) => w.scan_into(&s, &mut v, op),
            (C::Scan, Exclusive, _) => w.exclusive_scan_into(&s, &mut v, op),
            (C::Gather, Plain, _) if me => root.gather_into_root(&s, &mut v),
            (C::Gather, Plain, _) => root.gather_into(&s),
            (C::Scatter, Plain, _) if me => root.scatter_into_root(&s, &mut v),
            (C::Scatter, Plain, _) => root.scatter_into(&mut v),
            (C::Allgather, Plain, _) => w.all_gather_into(&s, &mut v),
            (C::Alltoall, Plain, _) => w.all_to_all_into(&s, &mut v),
            (C::ReduceScatter, Plain, _) => w.reduce_scatter_block_into(&s, &mut v, op),
            (C::Gather, Varying, _) if me => {
                root.gather_varcount_into_root(&s, &mut PartitionMut::new(&mut v, counts, displs))
            }
            (C::Gather, Varying, _) => root.gather_varcount_into(&s),
            (C::Scatter, Varying, _) if me => {
                root.scatter_varcount_into_root(&Partition::new(&s, counts, displs), &mut v)
            }
            (C::Scatter, Varying, _) => root.scatter_varcount_into(&mut v),
            (C::Allgather, Varying, _) => {
                w.all_gather_varcount_into(&s, &mut PartitionMut::new(&mut v, counts, displs))
            }
            (C::Alltoall, Varying, _) => w.all_to_all_varcount_into(
                &Partition::new(&s, counts, displs),
                &mut PartitionMut::new(&mut v, counts, displs),
            ),
            (C::Barrier, Plain, _) => w.barrier(),
            _ => unreachable!("{call} has no MPI row (see `rows`)"),
        }
    }

    /// Under `--touch`, writes this process's whole input of the next call.
    fn touch(&mut self) {
        self.send.touch();
    }

    /// One timed call, on the next buffers.
    fn call(&mut self) {
        self.send.next_buffer();
        self.recv.next_buffer();
        self.run();
    }

    /// The check call on the inputs of [`cell::check_input`]; returns this rank's output, or
    /// `None` for the barrier.
    fn check(&mut self) -> Option<Vec<T>> {
        if self.spec.call.is_barrier() {
            return None;
        }
        let r = self.world.rank() as usize;
        let input = cell::check_input::<T>(&self.spec, r);
        self.send.current().copy_from_slice(&input);
        self.recv.current().fill(T::default());
        self.run();
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
        // Not `clone`: this vector is sent to rank 0, and must not be empty and dangling.
        Some(buffer(out.len(), |i| out[i]))
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
    /// The processes.
    world: &'a SimpleCommunicator,
    /// The cell.
    spec: CellSpec,
    /// Which call.
    row: Row,
    /// How many iterations.
    timing: &'a Timing,
}

impl Visit for MpiCell<'_> {
    /// The record at rank 0, `None` elsewhere.
    type Out = Option<Record>;

    fn visit<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
        self,
        op_name: OpName,
        op: O,
    ) -> Option<Record> {
        let measured = measure::<T>(self.world, &self.spec, self.row, op_name, self.timing);
        (self.world.rank() == 0).then(|| {
            cell::record_of::<T, O>(&self.spec, self.row.name(), Source::Mpi, &op, measured)
        })
    }
}

/// Measures one cell on every process with the method of the module doc. At rank 0 the
/// result holds the per-iteration times and every rank's check output; elsewhere it is empty.
fn measure<T: Elem>(
    world: &SimpleCommunicator,
    spec: &CellSpec,
    row: Row,
    op: OpName,
    timing: &Timing,
) -> Result<Measured, String> {
    // Every process computes the same answer, so they skip the cell together.
    if spec.count.saturating_mul(spec.p) > Count::MAX as usize {
        return Err(format!(
            "{} elements per rank is more than MPI's int counts hold here",
            spec.count
        ));
    }
    let zero = world.process_at_rank(0);
    let mut k = MpiKernel::<T>::new(world, *spec, row, op);
    // Warm-up: rank 0 times one call and decides how many more, then how many timed ones.
    k.touch();
    world.barrier();
    let t0 = now_ns();
    k.call();
    let first = (now_ns() - t0) as f64 * 1e-9;
    let mut n: u64 = timing.warmups(first);
    zero.broadcast_into(&mut n);
    let t0 = now_ns();
    for _ in 1..n {
        k.touch();
        k.call();
    }
    let per_call = if n > 1 {
        (now_ns() - t0) as f64 * 1e-9 / (n - 1) as f64
    } else {
        first
    };
    let mut iters: u64 = timing.iterations(per_call);
    zero.broadcast_into(&mut iters);
    // Per iteration: the touch's duration, then the call's start and end.
    let mut stamps = buffer(0, |_| 0u64);
    stamps.reserve(3 * iters as usize);
    for _ in 0..iters {
        let before = now_ns();
        k.touch();
        stamps.push(now_ns() - before);
        world.barrier();
        let start = now_ns();
        k.call();
        stamps.push(start);
        stamps.push(now_ns());
    }
    let output = k.check();
    drop(k);

    // The stamps and the check outputs, gathered at rank 0.
    let p = spec.p;
    let (mut times, mut touch) = (Vec::new(), Vec::new());
    if world.rank() == 0 {
        let mut all = buffer(stamps.len() * p, |_| 0u64);
        zero.gather_into_root(&stamps[..], &mut all[..]);
        let per_rank = stamps.len();
        let at = |q: usize, i: usize, j: usize| all[q * per_rank + 3 * i + j];
        for i in 0..iters as usize {
            let slowest = (0..p).map(|q| at(q, i, 0)).max().unwrap_or(0);
            let start = (0..p).map(|q| at(q, i, 1)).min().unwrap_or(0);
            let end = (0..p).map(|q| at(q, i, 2)).max().unwrap_or(0);
            touch.push(slowest as f64 * 1e-9);
            times.push(end.saturating_sub(start) as f64 * 1e-9);
        }
    } else {
        zero.gather_into(&stamps[..]);
    }
    let outputs = match output {
        Some(out) => gather_outputs(world, out),
        None => Vec::new(),
    };
    Ok(Measured {
        times,
        touch,
        outputs,
        auto_choice: None,
    })
}

/// Gathers every rank's check output at rank 0, boxed per rank as [`cell::check`] takes them;
/// empty elsewhere.
fn gather_outputs<T: Elem>(world: &SimpleCommunicator, out: Vec<T>) -> Vec<Box<dyn Any + Send>> {
    let zero = world.process_at_rank(0);
    let len = out.len() as Count;
    if world.rank() != 0 {
        zero.gather_into(&len);
        zero.gather_varcount_into(&mpi_ref(&out));
        return Vec::new();
    }
    let p = world.size() as usize;
    let mut lens = vec![0 as Count; p];
    zero.gather_into_root(&len, &mut lens[..]);
    let displs: Vec<Count> = lens
        .iter()
        .scan(0, |at, &l| {
            let d = *at;
            *at += l;
            Some(d)
        })
        .collect();
    let total: usize = lens.iter().map(|&l| l as usize).sum();
    let mut all: Vec<T> = buffer(total, |_| T::default());
    {
        let mut buf = mpi_mut(&mut all);
        let mut part = PartitionMut::new(&mut buf, &lens[..], &displs[..]);
        zero.gather_varcount_into_root(&mpi_ref(&out), &mut part);
    }
    let mut rest = &all[..];
    lens.iter()
        .map(|&l| {
            let (mine, after) = rest.split_at(l as usize);
            rest = after;
            Box::new(mine.to_vec()) as Box<dyn Any + Send>
        })
        .collect()
}
