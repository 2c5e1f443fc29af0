//! corecoll's kernel of a cell: on each rank, the algorithm's call over a pool of send and
//! receive buffers, timed by `measure`, and the check call whose output the harness compares
//! with the reference.

use super::{check_input, lengths, output, CellSpec};
use crate::domain::{Alg, Form};
use crate::elem::Elem;
use crate::measure::{Kernel, Pool};
use corecoll::op::Op;
use corecoll::Collective;
use corecoll::Comm;
use std::any::Any;

/// corecoll's kernel on one rank: the algorithm's call over a pool of send and receive
/// buffers.
pub struct CorecollKernel<'c, T, O> {
    /// The rank's communicator.
    comm: &'c Comm,
    /// The cell.
    spec: CellSpec,
    /// The algorithm called.
    alg: Alg,
    /// The reduction op.
    op: O,
    /// Send buffers (the one buffer of the in-place collectives).
    send: Pool<T>,
    /// Receive buffers.
    recv: Pool<T>,
    /// Every rank's count, for the `v` forms.
    counts: Vec<usize>,
    /// Every rank's displacement, for the `v` forms.
    displs: Vec<usize>,
}

impl<'c, T: Elem, O: Op<T> + Copy> CorecollKernel<'c, T, O> {
    /// The kernel of `alg` for `spec` on `comm`'s rank.
    pub fn new(comm: &'c Comm, spec: CellSpec, alg: Alg, op: O) -> Self {
        let r = comm.rank();
        let (s, v) = lengths(&spec, r);
        let fill = move |i| T::timing_value(spec.op, r, i);
        CorecollKernel {
            comm,
            spec,
            alg,
            op,
            send: Pool::new(s, spec.cache, spec.p, fill),
            recv: Pool::new(v, spec.cache, spec.p, fill),
            counts: vec![spec.block; spec.p],
            displs: (0..spec.p).map(|i| i * spec.block).collect(),
        }
    }

    /// Calls the collective on the current buffers.
    fn run(&mut self) -> corecoll::Result<()> {
        use corecoll::algorithm::Any as S;
        use Collective as C;
        use Form::{Exclusive, Plain, Varying};
        let (c, op, root) = (self.comm, self.op, self.spec.root);
        let send = self.send.current();
        let recv = self.recv.current();
        let (counts, displs) = (&self.counts[..], &self.displs[..]);
        let call = self.spec.call;
        let wrong = |alg: Alg| -> ! { panic!("{alg:?} is not an algorithm of {call}") };
        if matches!(self.alg, Alg::Library(a) if a.collective() != call.collective) {
            wrong(self.alg);
        }
        match (call.form, self.alg, call.collective) {
            (Plain, Alg::Library(S::Allreduce(a)), _) => c.allreduce_with(send, op, a),
            (Plain, Alg::Library(S::Broadcast(a)), _) => c.broadcast_with(send, root, a),
            (Plain, Alg::Library(S::Reduce(a)), _) => c.reduce_with(send, op, root, a),
            (Plain, Alg::Library(S::Scan(a)), _) => c.scan_with(send, op, a),
            (Exclusive, Alg::Library(S::Scan(a)), _) => c.exscan_with(send, op, a),
            (Plain, Alg::Library(S::Gather(a)), _) => c.gather_with(send, recv, root, a),
            (Plain, Alg::Library(S::Scatter(a)), _) => c.scatter_with(send, recv, root, a),
            (Plain, Alg::Library(S::Allgather(a)), _) => c.allgather_with(send, recv, a),
            (Plain, Alg::Library(S::Alltoall(a)), _) => c.alltoall_with(send, recv, a),
            (Plain, Alg::Library(S::ReduceScatter(a)), _) => {
                c.reduce_scatter_block_with(send, recv, op, a)
            }
            (Plain, Alg::Library(S::Barrier(a)), _) => c.barrier_with(a),
            (Varying, Alg::Fixed, C::Gather) => c.gatherv(send, recv, counts, displs, root),
            (Varying, Alg::Fixed, C::Scatter) => c.scatterv(send, counts, displs, recv, root),
            (Varying, Alg::Fixed, C::Allgather) => c.allgatherv(send, recv, counts, displs),
            (Varying, Alg::Fixed, C::Alltoall) => {
                c.alltoallv(send, counts, displs, recv, counts, displs)
            }
            (_, alg, _) => wrong(alg),
        }
    }
}

impl<T: Elem, O: Op<T> + Copy> Kernel for CorecollKernel<'_, T, O> {
    fn touch(&mut self) -> Result<(), String> {
        self.send.touch();
        Ok(())
    }

    fn call(&mut self) -> Result<(), String> {
        self.send.next_buffer();
        self.recv.next_buffer();
        self.run().map_err(|e| e.to_string())
    }

    fn check(&mut self) -> Result<Option<Box<dyn Any + Send>>, String> {
        if self.spec.call.is_barrier() {
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
