//! One MPI library, loaded at run time: the shared library that the build script compiled
//! from `c/mpi_peer.c` with that MPI's `mpicc`, opened with `dlopen` in a process that the
//! MPI's own launcher started. Its functions call MPI on `MPI_COMM_WORLD`; this module
//! gives them safe signatures over slices of the benchmark's element types (and `u64`, for
//! the worker's time stamps). MPI's default error handler ends the job on an error, so a
//! call that returns at all has succeeded; a code other than `MPI_SUCCESS` (0) is still
//! turned into an `Err`.

use crate::elem::Elem;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;

/// `int f(void)`.
type Nullary = unsafe extern "C" fn() -> c_int;
/// `void ccm_library(char *, int)`.
type Describe = unsafe extern "C" fn(*mut c_char, c_int);
/// A lookup by name.
type Lookup = unsafe extern "C" fn(*const c_char) -> c_int;
/// `(send, recv, count, type, op or root)`.
type TwoBuffers = unsafe extern "C" fn(*const c_void, *mut c_void, c_int, c_int, c_int) -> c_int;
/// `(send, recv, count, type, op, root)`.
type Rooted = unsafe extern "C" fn(*const c_void, *mut c_void, c_int, c_int, c_int, c_int) -> c_int;
/// `(buffer, count, type, root)`.
type InPlace = unsafe extern "C" fn(*mut c_void, c_int, c_int, c_int) -> c_int;
/// `(send, recv, count, type)`.
type Exchange = unsafe extern "C" fn(*const c_void, *mut c_void, c_int, c_int) -> c_int;
/// `(send, count, recv, counts, displs, type, root)`.
type Gatherv = unsafe extern "C" fn(
    *const c_void,
    c_int,
    *mut c_void,
    *const c_int,
    *const c_int,
    c_int,
    c_int,
) -> c_int;
/// `(send, counts, displs, recv, count, type, root)`.
type Scatterv = unsafe extern "C" fn(
    *const c_void,
    *const c_int,
    *const c_int,
    *mut c_void,
    c_int,
    c_int,
    c_int,
) -> c_int;
/// `(send, count, recv, counts, displs, type)`.
type Allgatherv = unsafe extern "C" fn(
    *const c_void,
    c_int,
    *mut c_void,
    *const c_int,
    *const c_int,
    c_int,
) -> c_int;
/// `(send, recv, counts, displs, type)`.
type Alltoallv =
    unsafe extern "C" fn(*const c_void, *mut c_void, *const c_int, *const c_int, c_int) -> c_int;

/// The C functions, resolved by name.
struct Fns {
    init: Nullary,
    finalize: Nullary,
    rank: Nullary,
    size: Nullary,
    library: Describe,
    type_index: Lookup,
    op_index: Lookup,
    barrier: Nullary,
    allreduce: TwoBuffers,
    reduce: Rooted,
    bcast: InPlace,
    scan: TwoBuffers,
    exscan: TwoBuffers,
    gather: TwoBuffers,
    scatter: TwoBuffers,
    allgather: Exchange,
    alltoall: Exchange,
    reduce_scatter_block: TwoBuffers,
    gatherv: Gatherv,
    scatterv: Scatterv,
    allgatherv: Allgatherv,
    alltoallv: Alltoallv,
}

/// An MPI library, opened and initialised (`MPI_THREAD_FUNNELED`); finalised on drop.
pub struct Library {
    f: Fns,
    /// The index of the element type of each of the benchmark's types, by `Dtype::ALL`'s
    /// order, and of `u64` last.
    types: [c_int; 6],
}

/// Index of `u64` in [`Library::types`].
const U64: usize = 5;

/// MPI's error code as a result.
fn ok(code: c_int, what: &str) -> Result<(), String> {
    if code == 0 {
        Ok(())
    } else {
        Err(format!("{what} failed with MPI error code {code}"))
    }
}

/// An MPI count of `n` elements.
fn count(n: usize) -> Result<c_int, String> {
    c_int::try_from(n).map_err(|_| format!("{n} elements is more than an MPI count holds"))
}

impl Library {
    /// Opens the shared library at `path`, resolves its functions and initialises MPI.
    pub fn open(path: &Path) -> Result<Library, String> {
        let name = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| format!("{}: a path with a NUL byte", path.display()))?;
        // RTLD_DEEPBIND: the layer's MPI calls bind to the MPI library it was linked with
        // even where the program already has another one loaded (this executable links Open
        // MPI's when built with the `mpi` feature, and MPICH exports the same names); without
        // it, MPICH's layer called Open MPI's MPI_Comm_size and crashed.
        let flags = libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND;
        // SAFETY: dlopen(3) with a NUL-terminated path. The handle is never closed: MPI must
        // stay loaded until the process ends.
        let handle = unsafe { libc::dlopen(name.as_ptr(), flags) };
        if handle.is_null() {
            // SAFETY: dlerror(3) returns a NUL-terminated message after a failed dlopen.
            let why = unsafe { CStr::from_ptr(libc::dlerror()) };
            return Err(format!(
                "cannot load {}: {}",
                path.display(),
                why.to_string_lossy()
            ));
        }
        macro_rules! load {
            ($($field:ident: $ty:ty = $symbol:literal),* $(,)?) => {
                Fns {
                    $($field: {
                        let sym = concat!($symbol, "\0");
                        // SAFETY: dlsym(3) on a live handle with a NUL-terminated name.
                        let p = unsafe { libc::dlsym(handle, sym.as_ptr().cast()) };
                        if p.is_null() {
                            return Err(format!("{}: no symbol {}", path.display(), $symbol));
                        }
                        // SAFETY: `c/mpi_peer.c` defines the symbol as a function with the
                        // C signature of this field (the two are kept side by side), and
                        // function and data pointers have one size on the platforms with
                        // dlsym.
                        unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
                    },)*
                }
            };
        }
        let f = load!(
            init: Nullary = "ccm_init",
            finalize: Nullary = "ccm_finalize",
            rank: Nullary = "ccm_rank",
            size: Nullary = "ccm_size",
            library: Describe = "ccm_library",
            type_index: Lookup = "ccm_type",
            op_index: Lookup = "ccm_op",
            barrier: Nullary = "ccm_barrier",
            allreduce: TwoBuffers = "ccm_allreduce",
            reduce: Rooted = "ccm_reduce",
            bcast: InPlace = "ccm_bcast",
            scan: TwoBuffers = "ccm_scan",
            exscan: TwoBuffers = "ccm_exscan",
            gather: TwoBuffers = "ccm_gather",
            scatter: TwoBuffers = "ccm_scatter",
            allgather: Exchange = "ccm_allgather",
            alltoall: Exchange = "ccm_alltoall",
            reduce_scatter_block: TwoBuffers = "ccm_reduce_scatter_block",
            gatherv: Gatherv = "ccm_gatherv",
            scatterv: Scatterv = "ccm_scatterv",
            allgatherv: Allgatherv = "ccm_allgatherv",
            alltoallv: Alltoallv = "ccm_alltoallv",
        );
        // SAFETY: the library's initialisation, once per process, from this (the main)
        // thread, which then makes every MPI call.
        match unsafe { (f.init)() } {
            -1 => return Err("MPI_Init_thread failed".into()),
            0 => return Err("the MPI library provides only MPI_THREAD_SINGLE".into()),
            _ => {}
        }
        let mut lib = Library { f, types: [0; 6] };
        let names = crate::domain::Dtype::ALL.map(|d| d.name());
        for (i, name) in names.iter().chain(&["u64"]).enumerate() {
            lib.types[i] = lib.index(lib.f.type_index, name)?;
        }
        Ok(lib)
    }

    /// The index that `lookup` (the type or op table's) gives `name`.
    fn index(&self, lookup: Lookup, name: &str) -> Result<c_int, String> {
        let c = CString::new(name).map_err(|e| e.to_string())?;
        // SAFETY: a NUL-terminated name, only read.
        let i = unsafe { lookup(c.as_ptr()) };
        if i < 0 {
            return Err(format!("the MPI layer knows no `{name}`"));
        }
        Ok(i)
    }

    /// The index of the op named `name` (as `--op` spells it).
    pub fn op(&self, name: &str) -> Result<c_int, String> {
        self.index(self.f.op_index, name)
    }

    /// The index of `T`'s MPI datatype.
    fn ty<T: Elem>(&self) -> c_int {
        let at = crate::domain::Dtype::ALL
            .iter()
            .position(|&d| d == T::DTYPE)
            .expect("every element type is in Dtype::ALL");
        self.types[at]
    }

    /// This process's rank in `MPI_COMM_WORLD`.
    pub fn rank(&self) -> usize {
        // SAFETY: MPI is initialised; the call only reads.
        unsafe { (self.f.rank)() }.max(0) as usize
    }

    /// The number of processes.
    pub fn size(&self) -> usize {
        // SAFETY: as in `rank`.
        unsafe { (self.f.size)() }.max(0) as usize
    }

    /// The first line of `MPI_Get_library_version`, its runs of white space one space each.
    pub fn version(&self) -> String {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the C side writes at most `buf.len()` bytes, NUL-terminated.
        unsafe { (self.f.library)(buf.as_mut_ptr(), buf.len() as c_int) };
        // SAFETY: NUL-terminated within `buf` (the C side's promise, and the zeroed end).
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
        // One space between words: MPICH separates its fields with tabs.
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// `MPI_Barrier`.
    pub fn barrier(&self) -> Result<(), String> {
        // SAFETY: MPI is initialised and called from this thread only.
        ok(unsafe { (self.f.barrier)() }, "MPI_Barrier")
    }

    /// `MPI_Allreduce` of `s` into `r` (equal lengths) with op `o`.
    pub fn allreduce<T: Elem>(&self, s: &[T], r: &mut [T], o: c_int) -> Result<(), String> {
        assert_eq!(s.len(), r.len());
        let n = count(s.len())?;
        // SAFETY: both buffers hold `n` elements of the type of index `ty::<T>()`; MPI reads
        // `s` and writes `r` during the call only.
        let code = unsafe {
            (self.f.allreduce)(
                s.as_ptr().cast(),
                r.as_mut_ptr().cast(),
                n,
                self.ty::<T>(),
                o,
            )
        };
        ok(code, "MPI_Allreduce")
    }

    /// `MPI_Reduce` of `s` to `root`, into `r` there (as long as `s`; ignored elsewhere).
    pub fn reduce<T: Elem>(
        &self,
        s: &[T],
        r: &mut [T],
        o: c_int,
        root: usize,
    ) -> Result<(), String> {
        let n = count(s.len())?;
        assert!(self.rank() != root || r.len() >= s.len());
        // SAFETY: `s` holds `n` elements, and so does `r` where MPI writes it (the root).
        let code = unsafe {
            (self.f.reduce)(
                s.as_ptr().cast(),
                r.as_mut_ptr().cast(),
                n,
                self.ty::<T>(),
                o,
                root as c_int,
            )
        };
        ok(code, "MPI_Reduce")
    }

    /// `MPI_Bcast` of `b` from `root`.
    pub fn bcast<T: Elem>(&self, b: &mut [T], root: usize) -> Result<(), String> {
        let n = count(b.len())?;
        // SAFETY: `b` holds `n` elements.
        ok(
            unsafe { (self.f.bcast)(b.as_mut_ptr().cast(), n, self.ty::<T>(), root as c_int) },
            "MPI_Bcast",
        )
    }

    /// `MPI_Bcast` of one `u64` from rank 0.
    pub fn bcast_u64(&self, x: &mut u64) -> Result<(), String> {
        // SAFETY: one u64, of the type at index `types[U64]`.
        let code = unsafe { (self.f.bcast)((x as *mut u64).cast(), 1, self.types[U64], 0) };
        ok(code, "MPI_Bcast")
    }

    /// `MPI_Scan` (or `MPI_Exscan` when `exclusive`) of `s` into `r` (equal lengths).
    pub fn scan<T: Elem>(
        &self,
        s: &[T],
        r: &mut [T],
        o: c_int,
        exclusive: bool,
    ) -> Result<(), String> {
        assert_eq!(s.len(), r.len());
        let n = count(s.len())?;
        let call = if exclusive {
            self.f.exscan
        } else {
            self.f.scan
        };
        // SAFETY: both hold `n` elements.
        ok(
            unsafe {
                call(
                    s.as_ptr().cast(),
                    r.as_mut_ptr().cast(),
                    n,
                    self.ty::<T>(),
                    o,
                )
            },
            "MPI_Scan",
        )
    }

    /// `MPI_Gather` of `s` (a block) into `r` at `root` (p blocks there).
    pub fn gather<T: Elem>(&self, s: &[T], r: &mut [T], root: usize) -> Result<(), String> {
        let n = count(s.len())?;
        assert!(self.rank() != root || r.len() >= s.len() * self.size());
        // SAFETY: `s` holds a block, and `r` p blocks where MPI writes it (the root).
        ok(
            unsafe {
                (self.f.gather)(
                    s.as_ptr().cast(),
                    r.as_mut_ptr().cast(),
                    n,
                    self.ty::<T>(),
                    root as c_int,
                )
            },
            "MPI_Gather",
        )
    }

    /// `MPI_Gather` of `u64`s at rank 0.
    pub fn gather_u64(&self, s: &[u64], r: &mut [u64]) -> Result<(), String> {
        let n = count(s.len())?;
        assert!(self.rank() != 0 || r.len() >= s.len() * self.size());
        // SAFETY: as in `gather`, with u64 elements.
        ok(
            unsafe {
                (self.f.gather)(
                    s.as_ptr().cast(),
                    r.as_mut_ptr().cast(),
                    n,
                    self.types[U64],
                    0,
                )
            },
            "MPI_Gather",
        )
    }

    /// `MPI_Scatter` of `root`'s `s` (p blocks there) into `r` (a block).
    pub fn scatter<T: Elem>(&self, s: &[T], r: &mut [T], root: usize) -> Result<(), String> {
        let n = count(r.len())?;
        assert!(self.rank() != root || s.len() >= r.len() * self.size());
        // SAFETY: `r` holds a block, and `s` p blocks where MPI reads it (the root).
        ok(
            unsafe {
                (self.f.scatter)(
                    s.as_ptr().cast(),
                    r.as_mut_ptr().cast(),
                    n,
                    self.ty::<T>(),
                    root as c_int,
                )
            },
            "MPI_Scatter",
        )
    }

    /// `MPI_Allgather` (or `MPI_Alltoall` when `all_to_all`, `s` then p blocks) into `r` (p
    /// blocks).
    pub fn allgather<T: Elem>(&self, s: &[T], r: &mut [T], all_to_all: bool) -> Result<(), String> {
        let p = self.size().max(1);
        let block = r.len() / p;
        assert!(r.len() == block * p && s.len() >= if all_to_all { r.len() } else { block });
        let n = count(block)?;
        let call = if all_to_all {
            self.f.alltoall
        } else {
            self.f.allgather
        };
        // SAFETY: `s` holds one block (p for alltoall) and `r` p blocks of `n` elements.
        ok(
            unsafe { call(s.as_ptr().cast(), r.as_mut_ptr().cast(), n, self.ty::<T>()) },
            "MPI_Allgather/MPI_Alltoall",
        )
    }

    /// `MPI_Reduce_scatter_block` of `s` (p blocks) into `r` (a block).
    pub fn reduce_scatter_block<T: Elem>(
        &self,
        s: &[T],
        r: &mut [T],
        o: c_int,
    ) -> Result<(), String> {
        assert!(s.len() >= r.len() * self.size());
        let n = count(r.len())?;
        // SAFETY: `s` holds p blocks of `n` elements and `r` one.
        ok(
            unsafe {
                (self.f.reduce_scatter_block)(
                    s.as_ptr().cast(),
                    r.as_mut_ptr().cast(),
                    n,
                    self.ty::<T>(),
                    o,
                )
            },
            "MPI_Reduce_scatter_block",
        )
    }

    /// The v forms with every rank's `counts` and `displs` (the same for sending and
    /// receiving): gatherv to `root`, scatterv from it, allgatherv, alltoallv.
    pub fn varying<T: Elem>(
        &self,
        which: Varying,
        s: &[T],
        r: &mut [T],
        counts: &[c_int],
        displs: &[c_int],
        root: usize,
    ) -> Result<(), String> {
        let p = self.size();
        assert!(counts.len() == p && displs.len() == p);
        let end = |i: usize| (displs[i] + counts[i]).max(0) as usize;
        let span = (0..p).map(end).max().unwrap_or(0);
        let me = self.rank();
        let (t, c, d, root) = (
            self.ty::<T>(),
            counts.as_ptr(),
            displs.as_ptr(),
            root as c_int,
        );
        let (sp, rp) = (s.as_ptr().cast(), r.as_mut_ptr().cast());
        // The buffers that MPI reads or writes at this rank hold what `counts` and `displs`
        // say (asserted in each arm), and the count arrays hold p entries.
        let code = match which {
            Varying::Gather => {
                assert!(me != root as usize || r.len() >= span);
                let n = count(s.len())?;
                // SAFETY: as said above the match.
                unsafe { (self.f.gatherv)(sp, n, rp, c, d, t, root) }
            }
            Varying::Scatter => {
                assert!(me != root as usize || s.len() >= span);
                let n = count(r.len())?;
                // SAFETY: as said above the match.
                unsafe { (self.f.scatterv)(sp, c, d, rp, n, t, root) }
            }
            Varying::Allgather => {
                assert!(r.len() >= span);
                let n = count(s.len())?;
                // SAFETY: as said above the match.
                unsafe { (self.f.allgatherv)(sp, n, rp, c, d, t) }
            }
            Varying::Alltoall => {
                assert!(r.len() >= span && s.len() >= span);
                // SAFETY: as said above the match.
                unsafe { (self.f.alltoallv)(sp, rp, c, d, t) }
            }
        };
        ok(code, "an MPI v collective")
    }
}

/// Which v collective [`Library::varying`] calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Varying {
    /// `MPI_Gatherv`.
    Gather,
    /// `MPI_Scatterv`.
    Scatter,
    /// `MPI_Allgatherv`.
    Allgather,
    /// `MPI_Alltoallv`.
    Alltoall,
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: MPI was initialised by `open`, from this thread, and is finalised once.
        unsafe { (self.f.finalize)() };
    }
}
