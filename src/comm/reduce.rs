//! The reductions of [`Comm`]: allreduce (in place and out of place), reduce, scan and exscan,
//! reduce-scatter. Each checks its own arguments, then hands the call to the team's kind:
//! the threads of one process (`local`), or processes × threads (`process`).

use super::{Comm, Span};
use crate::error::Result;
use crate::mailbox::Elem;
use crate::op::Op;
use crate::select::{Algorithm, Reduce, ReduceScatter, Scan};

impl Comm {
    /// Combines every rank's `buf` element-wise with `op`, in rank order
    /// (x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}), and leaves the result in `buf` on every rank (in place, as
    /// `MPI_Allreduce` with `MPI_IN_PLACE`). Every rank must pass the same length and op: a
    /// different length or element type is an error on every rank; a different op is not
    /// detected (its result is unspecified, though memory-safe). All
    /// ranks get bit-identical results, and the same algorithm, rank count and inputs give the
    /// same bits run after run.
    pub fn allreduce<T, O>(&self, buf: &mut [T], op: O) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.allreduce_with(buf, op, Algorithm::Auto)
    }

    /// [`Comm::allreduce`] with a chosen algorithm (every rank must choose the same). An
    /// algorithm that cannot keep a non-commutative op's rank order (`Ring`) returns
    /// [`Error::Unsupported`](crate::Error::Unsupported) instead of a wrong answer.
    pub fn allreduce_with<T, O>(&self, buf: &mut [T], op: O, algorithm: Algorithm) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.local().enter_call("allreduce")?;
        if !op.pairwise() {
            return exact!(self, "allreduce", buf, |b| self
                .exact_allreduce(b, algorithm));
        }
        self.allreduce_span(buf, &op, algorithm)?;
        op.finish(buf, self.size());
        Ok(())
    }

    /// The allreduce handed to the team's kind.
    pub(super) fn allreduce_span<T: Elem, O: Op<T>>(
        &self,
        buf: &mut [T],
        op: &O,
        algorithm: Algorithm,
    ) -> Result<()> {
        match &self.span {
            Span::Threads(l) => l.allreduce_with(buf, op, algorithm),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.allreduce(buf, op, algorithm),
        }
    }

    /// [`Comm::allreduce`] out of place: `send` is left untouched and the result goes to
    /// `recv`, which must have the same length.
    pub fn allreduce_into<T, O>(&self, send: &[T], recv: &mut [T], op: O) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        const OP: &str = "allreduce";
        self.local().enter_call(OP)?;
        if send.len() != recv.len() {
            let what = format!(
                "send has {} elements but recv has {}",
                send.len(),
                recv.len()
            );
            return Err(self.invalid(OP, what));
        }
        if !op.pairwise() {
            crate::copy::copy_slice(&mut *recv, send);
            return exact!(self, OP, recv, |b| self.exact_allreduce(b, Algorithm::Auto));
        }
        match &self.span {
            Span::Threads(l) => l.allreduce_into(send, recv, &op),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => {
                // In place on a copy.
                crate::copy::copy_slice(&mut *recv, send);
                b.allreduce(recv, &op, Algorithm::Auto)
            }
        }?;
        op.finish(recv, self.size());
        Ok(())
    }

    /// [`Comm::allreduce`] of one value: every rank passes its `x` and gets
    /// x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1} back (`MPI_Allreduce` with a count of 1), with no slice to
    /// wrap it in. The call check, the algorithm (`Auto`) and the result bits are those of
    /// `allreduce` on a one-element slice.
    pub fn allreduce_value<T, O>(&self, x: T, op: O) -> Result<T>
    where
        T: Elem,
        O: Op<T>,
    {
        let mut one = [x];
        self.allreduce(&mut one, op)?;
        Ok(one[0])
    }

    /// [`Comm::reduce`] of one value: rank `root` gets x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}, every other
    /// rank gets its own `x` back unchanged (as its buffer is left by `reduce`).
    pub fn reduce_value<T, O>(&self, x: T, op: O, root: usize) -> Result<T>
    where
        T: Elem,
        O: Op<T>,
    {
        let mut one = [x];
        self.reduce(&mut one, op, root)?;
        Ok(one[0])
    }

    /// Combines every rank's `buf` element-wise with `op` in rank order
    /// (x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}, whatever the root) and leaves the result in `buf` on rank
    /// `root` (`MPI_Reduce` with `MPI_IN_PLACE` at the root); the other ranks' `buf` is left
    /// unchanged. Every rank must pass the same root, length, element type and op.
    pub fn reduce<T, O>(&self, buf: &mut [T], op: O, root: usize) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.reduce_with(buf, op, root, Reduce::Auto)
    }

    /// [`Comm::reduce`] with a chosen algorithm (every rank must choose the same).
    pub fn reduce_with<T, O>(
        &self,
        buf: &mut [T],
        op: O,
        root: usize,
        algorithm: Reduce,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.local().enter_call("reduce")?;
        self.check_root("reduce", root)?;
        if !op.pairwise() {
            return exact!(self, "reduce", buf, |b| self
                .exact_reduce(b, root, algorithm));
        }
        self.reduce_span(buf, &op, root, algorithm)?;
        if self.rank() == root {
            op.finish(buf, self.size());
        }
        Ok(())
    }

    /// The reduce handed to the team's kind.
    pub(super) fn reduce_span<T: Elem, O: Op<T>>(
        &self,
        buf: &mut [T],
        op: &O,
        root: usize,
        algorithm: Reduce,
    ) -> Result<()> {
        match &self.span {
            Span::Threads(l) => l.reduce_with(buf, op, root, algorithm),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.reduce(buf, op, root, algorithm),
        }
    }

    /// Inclusive prefix reduction (`MPI_Scan`, in place): rank r ends with
    /// x₀ ⊙ x₁ ⊙ … ⊙ x_r in `buf`, combined element-wise in rank order (any associative op).
    /// Every rank must pass the same length, element type and op; anything else is an error
    /// on every rank.
    pub fn scan<T, O>(&self, buf: &mut [T], op: O) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.scan_with(buf, op, Scan::Auto)
    }

    /// [`Comm::scan`] with a chosen algorithm (every rank must choose the same).
    pub fn scan_with<T, O>(&self, buf: &mut [T], op: O, algorithm: Scan) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.local().enter_call("scan")?;
        if !op.pairwise() {
            return exact!(self, "scan", buf, |b| self.exact_scan(b, true, algorithm));
        }
        self.scan_span(buf, &op, true, algorithm)?;
        op.finish(buf, self.rank() + 1);
        Ok(())
    }

    /// The scan (inclusive if `inclusive`, else the exscan) handed to the team's kind.
    pub(super) fn scan_span<T: Elem, O: Op<T>>(
        &self,
        buf: &mut [T],
        op: &O,
        inclusive: bool,
        algorithm: Scan,
    ) -> Result<()> {
        match (&self.span, inclusive) {
            (Span::Threads(l), true) => l.scan_with(buf, op, algorithm),
            (Span::Threads(l), false) => l.exscan_with(buf, op, algorithm),
            #[cfg(feature = "mpi")]
            (Span::Processes(b), true) => b.scan(buf, op, algorithm),
            #[cfg(feature = "mpi")]
            (Span::Processes(b), false) => b.exscan(buf, op, algorithm),
        }
    }

    /// Exclusive prefix reduction (`MPI_Exscan`, in place): rank r > 0 ends with
    /// x₀ ⊙ … ⊙ x_{r−1} in `buf`; rank 0's `buf` is left unchanged (MPI leaves it undefined).
    /// Every rank must pass the same length, element type and op, and every rank must call
    /// `exscan` (a rank calling [`Comm::scan`] instead is an error on every rank).
    pub fn exscan<T, O>(&self, buf: &mut [T], op: O) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.exscan_with(buf, op, Scan::Auto)
    }

    /// [`Comm::exscan`] with a chosen algorithm (every rank must choose the same).
    pub fn exscan_with<T, O>(&self, buf: &mut [T], op: O, algorithm: Scan) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.local().enter_call("exscan")?;
        if !op.pairwise() {
            return exact!(self, "exscan", buf, |b| self
                .exact_scan(b, false, algorithm));
        }
        self.scan_span(buf, &op, false, algorithm)?;
        if self.rank() > 0 {
            op.finish(buf, self.rank());
        }
        Ok(())
    }

    /// Reduces every rank's `send` element-wise with `op`, in rank order
    /// (x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}), and leaves block i of the result (elements i·n .. (i + 1)·n,
    /// n = `recv.len()`) in rank i's `recv` (`MPI_Reduce_scatter_block`). `send.len()` must be
    /// `size() · recv.len()`, and every rank must pass the same n and element type; anything
    /// else is an error on every rank. An op that panics on one rank makes the call an error
    /// on every other rank (the panic itself propagates from `Team::run`). A different op on
    /// one rank is not detected (its result is unspecified, though memory-safe).
    /// Non-commutative ops are computed exactly in rank order by every algorithm.
    pub fn reduce_scatter_block<T, O>(&self, send: &[T], recv: &mut [T], op: O) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        self.reduce_scatter_block_with(send, recv, op, ReduceScatter::Auto)
    }

    /// [`Comm::reduce_scatter_block`] with a chosen algorithm (every rank must choose the
    /// same).
    pub fn reduce_scatter_block_with<T, O>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: O,
        algorithm: ReduceScatter,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        const OP: &str = "reduce_scatter_block";
        self.local().enter_call(OP)?;
        self.check_whole(OP, "send", send.len(), recv.len())?;
        if !op.pairwise() {
            return exact!(self, OP, recv, send, |r, s| self
                .exact_reduce_scatter(s, r, algorithm));
        }
        self.reduce_scatter_span(send, recv, &op, algorithm)?;
        op.finish(recv, self.size());
        Ok(())
    }

    /// The reduce-scatter handed to the team's kind.
    pub(super) fn reduce_scatter_span<T: Elem, O: Op<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &O,
        algorithm: ReduceScatter,
    ) -> Result<()> {
        match &self.span {
            Span::Threads(l) => l.reduce_scatter_block_with(send, recv, op, algorithm),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.reduce_scatter_block(send, recv, op, algorithm),
        }
    }
}
