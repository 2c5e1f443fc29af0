//! The rayon peer: "every thread needs the sum of all threads' vectors" as a Rust programmer
//! writes it with rayon, on a pool of p threads of its own (pinned as the ranks are), over p
//! vectors, one per rank, that hold the result afterwards as an allreduce leaves it:
//!
//! - `rayon-reduce`: `par_iter().cloned().reduce_with(..)` over the vectors (a new vector per
//!   call and per combining step, as the idiom allocates), then `par_iter_mut()` copying the
//!   sum into each;
//! - `rayon-chunks`: the vectors cut into 8 KiB chunks; a task per chunk folds that chunk of
//!   every vector in rank order into a buffer of its own and writes it back into each.
//!
//! rayon's `reduce_with` keeps the order of the items, so both fold in rank order and take a
//! non-commutative op.

use super::measure;
use crate::baselines::chunk;
use crate::cell::{check_input, CellSpec};
use crate::domain::{Cache, OpName};
use crate::elem::Elem;
use crate::measure::{Driven, Measured, Timing};
use corecoll::op::Op;
use rayon::prelude::*;
use rayon::ThreadPool;
use std::any::Any;
use std::time::Instant;

/// Runs the rayon peer (`chunks`: `rayon-chunks`, else `rayon-reduce`) for `spec`.
pub(super) fn run<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
    chunks: bool,
    timing: &Timing,
    spec: &CellSpec,
    op: O,
    cores: &[Option<usize>],
) -> Result<Measured, String> {
    let pinned: Vec<Option<usize>> = cores.to_vec();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(spec.p)
        .thread_name(|i| format!("rayon-peer-{i}"))
        .start_handler(move |i| {
            if let Some(id) = pinned.get(i).copied().flatten() {
                core_affinity::set_for_current(core_affinity::CoreId { id });
            }
        })
        .build()
        .map_err(|e| format!("no rayon pool of {} threads: {e}", spec.p))?;
    let new = |r: usize| -> Vec<T> {
        let mut v = vec![T::default(); spec.count];
        write_input(&mut v, spec.op, r);
        v
    };
    let vectors = pool.install(|| (0..spec.p).into_par_iter().map(new).collect());
    let mut kernel = RayonKernel {
        pool,
        spec: *spec,
        op,
        chunks,
        vectors,
    };
    measure(timing, &mut kernel)
}

/// Writes rank `r`'s input of the timed calls into `v`.
fn write_input<T: Elem>(v: &mut [T], op: OpName, r: usize) {
    for (i, x) in v.iter_mut().enumerate() {
        *x = T::timing_value(op, r, i);
    }
}

/// The rayon peer of one cell.
struct RayonKernel<T, O> {
    pool: ThreadPool,
    spec: CellSpec,
    op: O,
    chunks: bool,
    /// Rank r's vector.
    vectors: Vec<Vec<T>>,
}

impl<T: Elem, O: Op<T> + Copy + Send + Sync> RayonKernel<T, O> {
    /// The sum of the vectors, cloned and reduced pairwise in order, copied into each.
    fn reduce(&mut self) {
        let op = self.op;
        let vectors = &mut self.vectors;
        self.pool.install(|| {
            let sum = vectors
                .par_iter()
                .cloned()
                .reduce_with(|mut a, b| {
                    op.fold_right(&mut a, &b);
                    a
                })
                .unwrap_or_default();
            vectors.par_iter_mut().for_each(|v| v.copy_from_slice(&sum));
        });
    }

    /// Chunk by chunk: a task folds chunk k of every vector and writes it into each.
    fn by_chunks(&mut self) {
        let (op, size) = (self.op, chunk::<T>());
        let p = self.vectors.len();
        let n = self.spec.count;
        let mut parts: Vec<Vec<&mut [T]>> = (0..n.div_ceil(size))
            .map(|_| Vec::with_capacity(p))
            .collect();
        for v in &mut self.vectors {
            for (k, c) in v.chunks_mut(size).enumerate() {
                parts[k].push(c);
            }
        }
        self.pool.install(|| {
            parts.into_par_iter().for_each_init(
                || vec![T::default(); size],
                |acc, mut slices| {
                    let acc = &mut acc[..slices[0].len()];
                    acc.copy_from_slice(slices[0]);
                    for s in &slices[1..] {
                        op.fold_right(acc, s);
                    }
                    for s in &mut slices {
                        s.copy_from_slice(acc);
                    }
                },
            );
        });
    }

    fn exec(&mut self) {
        if self.chunks {
            self.by_chunks();
        } else {
            self.reduce();
        }
    }
}

impl<T: Elem, O: Op<T> + Copy + Send + Sync> Driven for RayonKernel<T, O> {
    fn touch(&mut self) -> Result<f64, String> {
        if self.spec.cache != Cache::Touch {
            return Ok(0.0);
        }
        let t0 = Instant::now();
        let op = self.spec.op;
        let vectors = &mut self.vectors;
        self.pool.install(|| {
            vectors
                .par_iter_mut()
                .enumerate()
                .for_each(|(r, v)| write_input(v, op, r));
        });
        Ok(t0.elapsed().as_secs_f64())
    }

    fn call(&mut self) -> Result<(), String> {
        self.exec();
        Ok(())
    }

    fn check(&mut self) -> Result<Vec<Box<dyn Any + Send>>, String> {
        for (r, v) in self.vectors.iter_mut().enumerate() {
            v.copy_from_slice(&check_input::<T>(&self.spec, r));
        }
        self.exec();
        Ok(self
            .vectors
            .iter()
            .map(|v| Box::new(v.clone()) as Box<dyn Any + Send>)
            .collect())
    }
}
