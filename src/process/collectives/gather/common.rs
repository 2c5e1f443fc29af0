//! Gather, scatter and allgather (and their `v` forms) of a `Comm` whose ranks span MPI
//! processes, in the three stages of `process::world`, plus the helpers the other data-moving
//! collectives of the hybrid world share (`process::collectives::alltoall`).
//!
//! **Why the process's blocks are contiguous.** Process q's threads are the ranks
//! oᵩ … oᵩ + tᵩ − 1, so the blocks its threads contribute to a gather are consecutive in the
//! root's buffer (for the fixed-size forms; for the `v` forms consecutive in rank order, which
//! the leaders move packed and the root then places at the caller's displacements). Each
//! collective is then
//! - **gather(v)**: a gather(v) within the process to its rank 0 (the leader), the leaders'
//!   gatherv of the process blocks (tᵩ·m elements, or the sum of the process's counts) to the
//!   root's process, and there, if the root is not its process's rank 0, a scatterv of one
//!   block from the leader to the root (as `reduce` does); every other rank waits for its
//!   leader (a barrier within the process);
//! - **scatter(v)**: the reverse: the root hands its whole buffer to its leader if it is not
//!   the leader (a gatherv of one block), the leaders' scatterv, a scatter(v) within each
//!   process;
//! - **allgather(v)**: a gather(v) within the process, the leaders' allgather(v) of the process
//!   blocks, a broadcast within the process of the whole.
//!
//! **Counts of the `v` forms.** The leaders need every process's total, and every rank of a
//! process its process's counts; in `gatherv` and `scatterv` only the root has them, so the
//! root's counts go to every rank first (a hybrid broadcast of p words, which carries its own
//! check between processes), and each rank then checks its own length against them before
//! stage 1, so that a wrong length fails the run before the leaders' check. In `allgatherv`
//! every rank has counts that must be equal everywhere: the leader compares a fingerprint of
//! its threads' counts with its own in stage 1 (a gather of one word each), and the processes'
//! fingerprints meet in the check between processes (as its `block` word, the total as its
//! length), so that differing counts are an error on every rank instead of a wrong layout.
//!
//! **Algorithms.** The caller's choice (`Gather`, `Scatter`) runs within the process (but
//! `Direct`, which needs the ranks to share memory, is refused on every rank, as the
//! allgather's and the other collectives' `Direct` are, before any stage runs it); between
//! processes the process blocks have unequal lengths in general (the processes' thread counts
//! may differ), so the linear gatherv and scatterv of `algorithms::gather` run there. For
//! allgather, a layout whose processes all have the same number of threads runs the caller's
//! `Ring`, `RecursiveDoubling` or `Bruck` between processes with blocks of t·m elements, and
//! `Auto` (and the hierarchical choices, which this composition is) takes MPICH's rule between
//! processes: recursive doubling (a power of two of processes) or Bruck below 80 KiB of result,
//! the ring above; any other layout runs the ring allgatherv. `Direct` needs the ranks to share
//! memory and is refused on every rank, as the allreduce refuses it.
//!
//! **Staging buffers, in bytes.** The leaders' buffers hold elements that no rank has yet (a
//! process's blocks before they arrive), and `T` has no value to fill them with; so the
//! data-moving stages run on the blocks' bytes as `MaybeUninit<u8>` (a `Copy` element type
//! like any other for the crate's collectives and the MPI transport): the caller's send
//! buffers are viewed as bytes, staging buffers start uninitialised, and the caller's receive
//! buffers are viewed as bytes only to be written with whole elements copied (through any
//! number of stages) from some rank's send buffer. One element type for every `T` also keeps
//! the stages within the process (public collectives of the process's `Comm`, generic over the
//! element type) from instantiating these methods again with ever longer types. The call
//! check between processes still compares the caller's `T`.
//!

use crate::error::{Error, Result};
use crate::mailbox::{Elem, Kind, Tag};
use crate::process::bridge::Bridge;
use crate::process::mpi::MpiTransport;
use crate::process::ProcessComm;
use std::mem::{size_of_val, MaybeUninit};

/// A byte of a staging buffer (module docs).
pub(in crate::process) type B = MaybeUninit<u8>;

/// The bit added to an algorithm id in the call check of a `v` form, so that a process calling
/// `gather` against one calling `gatherv` (or scan against exscan) is a mismatch.
pub(crate) const V_FORM: u8 = 0x80;

/// The bytes of `s` (to send).
pub(in crate::process) fn bytes<T>(s: &[T]) -> &[B] {
    // SAFETY: the bytes of initialised `T`s, padding included, are valid `MaybeUninit<u8>`s,
    // `B` has alignment 1, and the view covers exactly `s`'s memory; it is shared, so nothing
    // can be de-initialised through it.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<B>(), size_of_val(s)) }
}

/// The bytes of `s` (to receive into).
///
/// # Safety
///
/// The caller writes through the view only whole `T`s copied byte for byte (at offsets that
/// are multiples of `size_of::<T>()`) from some rank's slice of `T`, never bytes of a staging
/// buffer that nothing wrote.
pub(in crate::process) unsafe fn bytes_mut<T>(s: &mut [T]) -> &mut [B] {
    // SAFETY: as in `bytes`; the view is unique for its lifetime, and the caller keeps every
    // `T` of `s` initialised.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<B>(), size_of_val(s)) }
}

/// A staging buffer of `n` uninitialised bytes.
pub(in crate::process) fn staging(n: usize) -> Vec<B> {
    vec![MaybeUninit::uninit(); n]
}

/// `counts` (or displacements) in elements of `w` bytes, in bytes.
pub(in crate::process) fn scaled(counts: &[usize], w: usize) -> Vec<usize> {
    counts.iter().map(|&c| c * w).collect()
}

/// The displacements of blocks of `counts` packed one after another, and their total.
pub(in crate::process) fn packed(counts: &[usize]) -> (Vec<usize>, usize) {
    let mut displs = Vec::with_capacity(counts.len());
    let mut sum = 0;
    for &c in counts {
        displs.push(sum);
        sum += c;
    }
    (displs, sum)
}

impl ProcessComm {
    /// Runs `run` over the transport as the schedule of a call the hybrid check has agreed on,
    /// with a fresh tag of `kind` and variant `variant`, `bytes` (the same on every process)
    /// checked against MPI's message limit, under the guard that aborts the job if it panics.
    pub(in crate::process) fn agreed(
        &self,
        op: &'static str,
        kind: Kind,
        variant: u8,
        bytes: usize,
        run: impl FnOnce(&MpiTransport<'_>, Tag) -> Result<()>,
    ) -> Result<()> {
        let tag = self.next_tag(kind).with_variant(variant);
        self.schedule(op, bytes, |t| run(t, tag))
    }
}

impl Bridge {
    /// This process's number, its first rank and its number of threads.
    pub(in crate::process) fn here(&self) -> (usize, usize, usize) {
        let q = self.layout.process();
        (q, self.layout.offset(q), self.layout.threads(q))
    }

    /// The process blocks of a collective with `m` elements per rank: tᵩ·m elements at oᵩ·m.
    pub(in crate::process) fn process_blocks(&self, m: usize) -> (Vec<usize>, Vec<usize>) {
        let l = &self.layout;
        (0..l.processes())
            .map(|q| (l.threads(q) * m, l.offset(q) * m))
            .unzip()
    }

    /// The per-process sums of per-rank `counts` (p entries).
    pub(in crate::process) fn process_sums(&self, counts: &[usize]) -> Vec<usize> {
        let l = &self.layout;
        (0..l.processes())
            .map(|q| counts[l.offset(q)..l.offset(q) + l.threads(q)].iter().sum())
            .collect()
    }

    /// Within the process: moves `data` of thread `from` (≠ 0) into `into` on the leader (a
    /// gatherv of one block; `data` and `into` are used on those two threads only).
    pub(in crate::process) fn to_leader<E: Elem>(
        &self,
        from: usize,
        data: &[E],
        into: &mut [E],
    ) -> Result<()> {
        let (t, me) = (self.local.size(), self.local.rank());
        let (mut counts, displs) = if me == 0 {
            (vec![0; t], vec![0; t])
        } else {
            (Vec::new(), Vec::new())
        };
        if me == 0 {
            counts[from] = into.len();
        }
        let send = if me == from { data } else { &[] };
        self.local.gatherv(send, into, &counts, &displs, 0)
    }

    /// Within the process: moves `data` of the leader into `into` on thread `to` (≠ 0) (a
    /// scatterv of one block; `data` and `into` are used on those two threads only).
    pub(in crate::process) fn leader_to<E: Elem>(
        &self,
        to: usize,
        data: &[E],
        into: &mut [E],
    ) -> Result<()> {
        let (t, me) = (self.local.size(), self.local.rank());
        let (mut counts, displs) = if me == 0 {
            (vec![0; t], vec![0; t])
        } else {
            (Vec::new(), Vec::new())
        };
        if me == 0 {
            counts[to] = data.len();
        }
        let recv = if me == to { into } else { &mut [] };
        self.local.scatterv(data, &counts, &displs, recv, 0)
    }

    /// Fails (this process's run) with an invalid argument `what` of `op`.
    pub(in crate::process) fn invalid(&self, op: &'static str, what: String) -> Error {
        self.fail(Error::InvalidArgument {
            rank: self.rank(),
            op,
            what,
        })
    }
}
