//! The OpenMP peer: `c/openmp_peer.c` (its comment says what each variant does), compiled by
//! the build script when the system's C compiler links OpenMP, and driven call by call from
//! a thread of its own, the regions' master. Its stack, and the stacks of the workers that
//! its first region creates, hold the reduction's private copy of the vector (gcc places it
//! there), plus room for the rest; without that a large vector would overflow them, as it
//! does in a C program run with the default `OMP_STACKSIZE`.
//!
//! Its result is one shared vector that every thread reads, as an OpenMP reduction leaves
//! it: the check hands that vector over as every rank's output.

#[cfg(corecoll_openmp)]
use crate::cell::{check_input, CellSpec};
use crate::domain::{Dtype, OpName};
#[cfg(corecoll_openmp)]
use crate::measure::{Driven, Measured, Timing};
#[cfg(corecoll_openmp)]
use std::any::Any;

/// Why the OpenMP peer cannot run cells of `dtype` and `op` here, or `None`.
pub(super) fn missing(dtype: Dtype, op: OpName) -> Option<String> {
    if let Some(why) = option_env!("CORECOLL_OPENMP_MISSING") {
        return Some(format!("not built: {why}"));
    }
    (dtype != Dtype::F64 || op != OpName::Sum)
        .then(|| format!("f64 sums only, not {} {}", dtype.name(), op.name()))
}

#[cfg(not(corecoll_openmp))]
pub(super) use absent::run;

/// The build without the peer.
#[cfg(not(corecoll_openmp))]
mod absent {
    use crate::cell::CellSpec;
    use crate::measure::{Measured, Timing};

    /// Without the compiled peer there is nothing to run ([`super::missing`] says why).
    pub(in crate::peers) fn run(
        _slices: bool,
        _timing: &Timing,
        spec: &CellSpec,
        _cores: &[Option<usize>],
    ) -> Result<Measured, String> {
        Err(super::missing(spec.dtype, spec.op).unwrap_or_default())
    }
}

/// The C side (`c/openmp_peer.c`).
#[cfg(corecoll_openmp)]
mod ffi {
    use std::ffi::c_int;

    /// A peer's state, owned by the C side.
    #[repr(C)]
    pub struct Peer {
        _private: [u8; 0],
    }

    extern "C" {
        pub fn ccb_omp_new(
            threads: c_int,
            n: usize,
            cores: *const c_int,
            stack: usize,
        ) -> *mut Peer;
        pub fn ccb_omp_free(peer: *mut Peer);
        pub fn ccb_omp_vector(peer: *mut Peer, t: c_int) -> *mut f64;
        pub fn ccb_omp_sum(peer: *const Peer) -> *const f64;
        pub fn ccb_omp_touch(peer: *mut Peer, value: f64) -> u64;
        pub fn ccb_omp_reduction(peer: *mut Peer);
        pub fn ccb_omp_slices(peer: *mut Peer);
    }
}

/// Runs the OpenMP peer (`slices`: `openmp-slices`, else `openmp-reduction`) for `spec` on a
/// master thread with the stack the reduction needs.
#[cfg(corecoll_openmp)]
pub(super) fn run(
    slices: bool,
    timing: &Timing,
    spec: &CellSpec,
    cores: &[Option<usize>],
) -> Result<Measured, String> {
    let stack = spec.count * size_of::<f64>() + (16 << 20);
    let pins: Option<Vec<std::ffi::c_int>> = cores
        .iter()
        .map(|c| c.map(|c| c as std::ffi::c_int))
        .collect();
    let (timing, spec) = (*timing, *spec);
    std::thread::Builder::new()
        .name("openmp-peer".into())
        .stack_size(stack)
        .spawn(move || {
            let mut kernel = OpenMpKernel::new(slices, &spec, pins.as_deref(), stack)?;
            super::measure(&timing, &mut kernel)
        })
        .map_err(|e| format!("no OpenMP master thread: {e}"))?
        .join()
        .map_err(|_| "the OpenMP master thread panicked".to_string())?
}

/// One cell's peer, on its master thread.
#[cfg(corecoll_openmp)]
struct OpenMpKernel {
    peer: *mut ffi::Peer,
    spec: CellSpec,
    slices: bool,
}

#[cfg(corecoll_openmp)]
impl OpenMpKernel {
    fn new(
        slices: bool,
        spec: &CellSpec,
        cores: Option<&[std::ffi::c_int]>,
        stack: usize,
    ) -> Result<Self, String> {
        let threads = std::ffi::c_int::try_from(spec.p).map_err(|e| e.to_string())?;
        let cores = cores.map_or(std::ptr::null(), |c| c.as_ptr());
        // SAFETY: `cores` is null or holds `threads` entries (one per rank), alive for the
        // call; the C side copies what it needs. This thread was spawned with `stack` bytes.
        let peer = unsafe { ffi::ccb_omp_new(threads, spec.count, cores, stack) };
        if peer.is_null() {
            return Err(format!(
                "the OpenMP peer could not start {} threads with {} doubles each",
                spec.p, spec.count
            ));
        }
        Ok(OpenMpKernel {
            peer,
            spec: *spec,
            slices,
        })
    }
}

#[cfg(corecoll_openmp)]
impl Drop for OpenMpKernel {
    fn drop(&mut self) {
        // SAFETY: `peer` came from `ccb_omp_new` and is freed once, here.
        unsafe { ffi::ccb_omp_free(self.peer) }
    }
}

#[cfg(corecoll_openmp)]
impl Driven for OpenMpKernel {
    fn touch(&mut self) -> Result<f64, String> {
        if self.spec.cache != crate::domain::Cache::Touch {
            return Ok(0.0);
        }
        // Every element's timing value is the same under the sums the peer is built for.
        let value = <f64 as crate::elem::Elem>::timing_value(self.spec.op, 0, 0);
        // SAFETY: a live peer, used from its master thread only.
        let ns = unsafe { ffi::ccb_omp_touch(self.peer, value) };
        Ok(ns as f64 * 1e-9)
    }

    fn call(&mut self) -> Result<(), String> {
        // SAFETY: as in `touch`.
        unsafe {
            if self.slices {
                ffi::ccb_omp_slices(self.peer);
            } else {
                ffi::ccb_omp_reduction(self.peer);
            }
        }
        Ok(())
    }

    fn check(&mut self) -> Result<Vec<Box<dyn Any + Send>>, String> {
        let n = self.spec.count;
        for r in 0..self.spec.p {
            let input = check_input::<f64>(&self.spec, r);
            // SAFETY: vector r holds `n` doubles, and no region runs while the master writes
            // it.
            let v = unsafe {
                std::slice::from_raw_parts_mut(ffi::ccb_omp_vector(self.peer, r as _), n)
            };
            v.copy_from_slice(&input);
        }
        self.call()?;
        // SAFETY: the shared result holds `n` doubles, and no region runs while it is read.
        let sum = unsafe { std::slice::from_raw_parts(ffi::ccb_omp_sum(self.peer), n) }.to_vec();
        Ok((0..self.spec.p)
            .map(|_| Box::new(sum.clone()) as Box<dyn Any + Send>)
            .collect())
    }
}
