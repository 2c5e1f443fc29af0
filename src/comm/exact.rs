//! The reductions with an op that is not pairwise (`Op::pairwise`): `op::ReproducibleSum` on
//! `f64` and `f32` buffers, whose result is each element's exact sum rounded once.
//!
//! Where the team's algorithm combines every operand of an element at once, or there are only
//! two ranks, the call runs on the floats themselves (`Local::whole_allreduce` and its
//! siblings say which). Everywhere else — the schedules that pass partial sums, the stages of a
//! hierarchy, the processes of a hybrid team — a partial sum does not fit a float, so the call
//! runs on `repro::Accumulator`s instead: each rank's numbers go into one accumulator per
//! element, the same collective reduces the accumulators with the same algorithm, and each
//! result is rounded once. An accumulator is 68 times an `f64`'s bytes (24 times an `f32`'s),
//! so these calls move that much more; they go in pieces of [`PIECE`] elements, which bounds
//! the memory to a few MiB per rank.

use super::{Comm, Span};
use crate::error::{Error, Result};
use crate::op::{Max, Op, ReproducibleSum};
use crate::repro::{Accumulator, Float};
use crate::select::{Algorithm, Reduce, ReduceScatter, Scan};
use std::any::TypeId;
use std::ops::Range;

/// Elements per call on accumulators: 2,048 `f64` accumulators are 1.1 MB.
const PIECE: usize = 2048;

/// Runs `$body` with `$buf` (and `$send`) as `f64`s or as `f32`s, whichever `T` is; another
/// element type is an error on every rank.
macro_rules! exact {
    ($comm:ident, $op:expr, $buf:expr, |$b:ident| $body:expr) => {{
        let buf = $buf;
        if let Some($b) = super::exact::floats_mut::<_, f64>(&mut *buf) {
            $body
        } else if let Some($b) = super::exact::floats_mut::<_, f32>(&mut *buf) {
            $body
        } else {
            Err($comm.not_floats::<T>($op))
        }
    }};
    ($comm:ident, $op:expr, $recv:expr, $send:expr, |$r:ident, $s:ident| $body:expr) => {{
        let (recv, send) = ($recv, $send);
        if let (Some($r), Some($s)) = (
            super::exact::floats_mut::<_, f64>(&mut *recv),
            super::exact::floats::<_, f64>(send),
        ) {
            $body
        } else if let (Some($r), Some($s)) = (
            super::exact::floats_mut::<_, f32>(&mut *recv),
            super::exact::floats::<_, f32>(send),
        ) {
            $body
        } else {
            Err($comm.not_floats::<T>($op))
        }
    }};
}

/// `buf` as a slice of `F`, if `T` is `F`.
pub(super) fn floats_mut<T: 'static, F: 'static>(buf: &mut [T]) -> Option<&mut [F]> {
    // SAFETY: `T` and `F` are one type, so the slice's layout and values are those of `[F]`.
    (TypeId::of::<T>() == TypeId::of::<F>()).then(|| unsafe { &mut *(buf as *mut [T] as *mut [F]) })
}

/// `buf` as a slice of `F`, if `T` is `F`.
pub(super) fn floats<T: 'static, F: 'static>(buf: &[T]) -> Option<&[F]> {
    // SAFETY: as in `floats_mut`.
    (TypeId::of::<T>() == TypeId::of::<F>()).then(|| unsafe { &*(buf as *const [T] as *const [F]) })
}

/// The scan (inclusive if `inclusive`) with `algorithm` on `p` ranks, whatever the team: no
/// scan reads every operand at once, so only while no result combines more than two operands
/// (p ≤ 2, or p ≤ 3 exclusive).
fn whole_scan(p: usize, inclusive: bool, algorithm: Scan) -> Option<Scan> {
    (p <= 2 || (!inclusive && p <= 3)).then_some(algorithm)
}

/// An accumulator holding `x` alone.
fn one<F: Float>(x: F) -> Accumulator<F> {
    let mut a = Accumulator::new();
    a.add(x);
    a
}

impl Comm {
    /// The error of an op that is not pairwise on an element type other than `f64` and `f32`.
    pub(super) fn not_floats<T>(&self, op: &'static str) -> Error {
        self.fail(Error::Unsupported {
            rank: self.rank(),
            op,
            what: format!(
                "an op that is not pairwise (the reproducible sum) reduces f64 and f32, not {}",
                std::any::type_name::<T>()
            ),
        })
    }

    /// On one rank, where nothing was combined, the result `buf` as a sum of one number: a NaN
    /// made the one quiet NaN, as every other rank count gives it.
    fn alone<F: Float>(&self, buf: &mut [F])
    where
        ReproducibleSum: Op<F>,
    {
        if self.size() == 1 {
            let mine = buf.to_vec();
            ReproducibleSum.fold_all(1, &|_| &mine[..], buf);
        }
    }

    /// The algorithm that runs on the floats themselves, if one does: any at two ranks, else
    /// what `local` says among the threads of one process, and none between processes.
    fn whole<A>(
        &self,
        algorithm: A,
        local: impl FnOnce(&crate::local::Local) -> Option<A>,
    ) -> Option<A> {
        match &self.span {
            _ if self.size() <= 2 => Some(algorithm),
            Span::Threads(l) => local(l),
            #[cfg(feature = "mpi")]
            Span::Processes(_) => None,
        }
    }

    /// Runs `call` on accumulators of `buf`'s numbers, piece by piece ([`Comm::in_pieces`]),
    /// and, where this rank gets a result (`keep`), rounds each accumulator back into `buf`.
    fn on_accumulators<F>(
        &self,
        op: &'static str,
        buf: &mut [F],
        keep: bool,
        mut call: impl FnMut(&mut [Accumulator<F>]) -> Result<()>,
    ) -> Result<()>
    where
        F: Float,
    {
        self.in_pieces(op, buf.len(), |range| {
            let mut accs: Vec<_> = buf[range.clone()].iter().map(|&x| one(x)).collect();
            call(&mut accs)?;
            if keep {
                for (x, a) in buf[range].iter_mut().zip(&accs) {
                    *x = a.value();
                }
            }
            Ok(())
        })
    }

    /// Runs `call` on accumulators piece by piece over `len` elements: `call(range)` reduces
    /// the elements `range` of the vector. Every rank must have the same `len`; when it takes
    /// more than one piece, the ranks first agree on it (a rank with one piece meets the others'
    /// agreement with its reduction, which the call check refuses).
    fn in_pieces(
        &self,
        op: &'static str,
        len: usize,
        mut call: impl FnMut(Range<usize>) -> Result<()>,
    ) -> Result<()> {
        if len > PIECE {
            let mut both = [len as u64, !(len as u64)];
            self.allreduce_with(&mut both, Max, Algorithm::Auto)?;
            if both != [len as u64, !(len as u64)] {
                let what = format!(
                    "this rank passed {len} elements, others between {} and {}",
                    !both[1], both[0]
                );
                return Err(self.invalid(op, what));
            }
        }
        let mut at = 0;
        loop {
            let end = (at + PIECE).min(len);
            call(at..end)?;
            at = end;
            if at == len {
                return Ok(());
            }
        }
    }

    /// `Comm::allreduce_with` of a reproducible sum.
    pub(super) fn exact_allreduce<F>(&self, buf: &mut [F], algorithm: Algorithm) -> Result<()>
    where
        F: Float,
        ReproducibleSum: Op<F> + Op<Accumulator<F>>,
    {
        let len = buf.len();
        if let Some(alg) = self.whole(algorithm, |l| l.whole_allreduce::<F>(len, algorithm)) {
            self.allreduce_span(buf, &ReproducibleSum, alg)?;
            self.alone(buf);
            return Ok(());
        }
        self.on_accumulators("allreduce", buf, true, |accs| {
            self.allreduce_with(accs, ReproducibleSum, algorithm)
        })
    }

    /// `Comm::reduce_with` of a reproducible sum.
    pub(super) fn exact_reduce<F>(
        &self,
        buf: &mut [F],
        root: usize,
        algorithm: Reduce,
    ) -> Result<()>
    where
        F: Float,
        ReproducibleSum: Op<F> + Op<Accumulator<F>>,
    {
        if let Some(alg) = self.whole(algorithm, |l| l.whole_reduce(algorithm)) {
            self.reduce_span(buf, &ReproducibleSum, root, alg)?;
            self.alone(buf);
            return Ok(());
        }
        self.on_accumulators("reduce", buf, self.rank() == root, |accs| {
            self.reduce_with(accs, ReproducibleSum, root, algorithm)
        })
    }

    /// `Comm::scan_with` (inclusive) or `Comm::exscan_with` of a reproducible sum.
    pub(super) fn exact_scan<F>(
        &self,
        buf: &mut [F],
        inclusive: bool,
        algorithm: Scan,
    ) -> Result<()>
    where
        F: Float,
        ReproducibleSum: Op<F> + Op<Accumulator<F>>,
    {
        if let Some(alg) = whole_scan(self.size(), inclusive, algorithm) {
            self.scan_span(buf, &ReproducibleSum, inclusive, alg)?;
            if inclusive {
                self.alone(buf);
            }
            return Ok(());
        }
        let op = if inclusive { "scan" } else { "exscan" };
        self.on_accumulators(op, buf, inclusive || self.rank() > 0, |accs| {
            if inclusive {
                self.scan_with(accs, ReproducibleSum, algorithm)
            } else {
                self.exscan_with(accs, ReproducibleSum, algorithm)
            }
        })
    }

    /// `Comm::reduce_scatter_block_with` of a reproducible sum: pieces of the blocks, each
    /// gathered from the p blocks of `send`.
    pub(super) fn exact_reduce_scatter<F>(
        &self,
        send: &[F],
        recv: &mut [F],
        algorithm: ReduceScatter,
    ) -> Result<()>
    where
        F: Float,
        ReproducibleSum: Op<F> + Op<Accumulator<F>>,
    {
        if let Some(alg) = self.whole(algorithm, |l| l.whole_reduce_scatter(algorithm)) {
            self.reduce_scatter_span(send, recv, &ReproducibleSum, alg)?;
            self.alone(recv);
            return Ok(());
        }
        let n = recv.len();
        self.in_pieces("reduce_scatter_block", n, |range| {
            let accs: Vec<_> = (0..self.size())
                .flat_map(|q| send[q * n..][range.clone()].iter().map(|&x| one(x)))
                .collect();
            let mut mine = vec![Accumulator::new(); range.len()];
            self.reduce_scatter_block_with(&accs, &mut mine, ReproducibleSum, algorithm)?;
            for (x, a) in recv[range].iter_mut().zip(&mine) {
                *x = a.value();
            }
            Ok(())
        })
    }
}
