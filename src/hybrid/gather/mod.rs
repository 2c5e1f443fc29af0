//! Gather, scatter and allgather (and their `v` forms) of a `Comm` whose ranks span MPI
//! processes, in the three stages of `hybrid::world`, plus the helpers the other data-moving
//! collectives of the hybrid world share (`hybrid::alltoall`).
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
use super::check::Call;
use super::world::Bridge;
use super::ProcessComm;
use crate::algorithms::gather as sched;
use crate::algorithms::gather::Allgathering;
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Kind, Tag};
use crate::select::{Allgather, Barrier, Broadcast, Decision, Flat, Gather, Scatter};
use crate::transport::mpi::MpiTransport;
use std::mem::{size_of, size_of_val, MaybeUninit};

/// A byte of a staging buffer (module docs).
pub(super) type B = MaybeUninit<u8>;

/// The bit added to an algorithm id in the call check of a `v` form, so that a process calling
/// `gather` against one calling `gatherv` (or scan against exscan) is a mismatch.
pub(crate) const V_FORM: u8 = 0x80;

/// The bytes of `s` (to send).
pub(super) fn bytes<T>(s: &[T]) -> &[B] {
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
pub(super) unsafe fn bytes_mut<T>(s: &mut [T]) -> &mut [B] {
    // SAFETY: as in `bytes`; the view is unique for its lifetime, and the caller keeps every
    // `T` of `s` initialised.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<B>(), size_of_val(s)) }
}

/// A staging buffer of `n` uninitialised bytes.
pub(super) fn staging(n: usize) -> Vec<B> {
    vec![MaybeUninit::uninit(); n]
}

/// `counts` (or displacements) in elements of `w` bytes, in bytes.
pub(super) fn scaled(counts: &[usize], w: usize) -> Vec<usize> {
    counts.iter().map(|&c| c * w).collect()
}

/// The displacements of blocks of `counts` packed one after another, and their total.
pub(super) fn packed(counts: &[usize]) -> (Vec<usize>, usize) {
    let mut displs = Vec::with_capacity(counts.len());
    let mut sum = 0;
    for &c in counts {
        displs.push(sum);
        sum += c;
    }
    (displs, sum)
}

/// A fingerprint of `counts` (FNV-1a over their words), for the check that every rank of an
/// allgatherv passes the same counts.
fn fingerprint(counts: &[usize]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in counts.iter().chain(std::iter::once(&counts.len())) {
        for b in (c as u64).to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

impl ProcessComm {
    /// Runs `run` over the transport as the schedule of a call the hybrid check has agreed on,
    /// with a fresh tag of `kind` and variant `variant`, `bytes` (the same on every process)
    /// checked against MPI's message limit, under the guard that aborts the job if it panics.
    pub(super) fn agreed(
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
    pub(super) fn here(&self) -> (usize, usize, usize) {
        let q = self.layout.process();
        (q, self.layout.offset(q), self.layout.threads(q))
    }

    /// The process blocks of a collective with `m` elements per rank: tᵩ·m elements at oᵩ·m.
    pub(super) fn process_blocks(&self, m: usize) -> (Vec<usize>, Vec<usize>) {
        let l = &self.layout;
        (0..l.processes())
            .map(|q| (l.threads(q) * m, l.offset(q) * m))
            .unzip()
    }

    /// The per-process sums of per-rank `counts` (p entries).
    pub(super) fn process_sums(&self, counts: &[usize]) -> Vec<usize> {
        let l = &self.layout;
        (0..l.processes())
            .map(|q| counts[l.offset(q)..l.offset(q) + l.threads(q)].iter().sum())
            .collect()
    }

    /// Within the process: moves `data` of thread `from` (≠ 0) into `into` on the leader (a
    /// gatherv of one block; `data` and `into` are used on those two threads only).
    pub(super) fn to_leader<E: Elem>(&self, from: usize, data: &[E], into: &mut [E]) -> Result<()> {
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
    pub(super) fn leader_to<E: Elem>(&self, to: usize, data: &[E], into: &mut [E]) -> Result<()> {
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
    pub(super) fn invalid(&self, op: &'static str, what: String) -> Error {
        self.fail(Error::InvalidArgument {
            rank: self.rank(),
            op,
            what,
        })
    }

    /// Fails (this process's run) unless this rank's `buffer` of `len` elements has the
    /// root's count for it, `count`: the ranks of other processes learn the root's counts
    /// through [`Bridge::root_counts`], which the threads of one process do not need (their
    /// messages' lengths are checked as they arrive).
    fn check_own(&self, op: &'static str, buffer: &str, len: usize, count: usize) -> Result<()> {
        if len == count {
            return Ok(());
        }
        let what = format!("{buffer} holds {len} elements, but its count is {count}");
        Err(self.invalid(op, what))
    }

    /// The root's `counts` on every rank (a hybrid broadcast), for `gatherv` and `scatterv`.
    fn root_counts(&self, counts: &[usize], root: usize) -> Result<Vec<usize>> {
        let mut all = if self.rank() == root {
            counts.to_vec()
        } else {
            vec![0; self.size()]
        };
        self.broadcast(&mut all, root, Broadcast::Auto)?;
        Ok(all)
    }

    /// `Comm::gather_with` across processes (module docs).
    pub(crate) fn gather<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        root: usize,
        algorithm: Gather,
    ) -> Result<()> {
        let call =
            Call::of::<T>(Kind::Coll(Collective::Gather), algorithm.id(), send.len()).at(root);
        // SAFETY: `recv` receives only blocks gathered from the ranks' `send`.
        let recv = unsafe { bytes_mut(recv) };
        self.gather_bytes(bytes(send), recv, root, algorithm, call)
    }

    /// [`Bridge::gather`] on the bytes of the blocks.
    fn gather_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        root: usize,
        algorithm: Gather,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "gather";
        let (p, m) = (self.size(), send.len());
        let is_root = self.rank() == root;
        let (q, _, t) = self.here();
        let (qr, lr) = self.layout.locate(root);
        let leader = self.is_leader();
        let local = &self.local;
        let mut own = staging(if leader { t * m } else { 0 });
        // A shared-memory choice is refused between the processes, below; stage 1 does not
        // run it first.
        let refused = algorithm.needs_shared_memory();
        let before = if refused {
            Ok(())
        } else {
            local.gather_with(send, &mut own, 0, algorithm)
        };
        let mut whole = staging(if leader && q == qr && lr != 0 {
            p * m
        } else {
            0
        });
        self.across(OP, call, before, |pc| {
            if refused {
                return Err(super::shared_memory_only(
                    self.rank(),
                    OP,
                    algorithm.name(),
                    "auto, linear or binomial",
                ));
            }
            let (counts, displs) = self.process_blocks(m);
            let dst: &mut [B] = match (q == qr, lr == 0) {
                (false, _) => &mut [],
                (true, true) => &mut *recv,
                (true, false) => &mut whole,
            };
            pc.agreed(
                OP,
                Kind::Coll(Collective::Gather),
                V_FORM,
                p * m,
                |tr, tag| sched::gatherv(tr, &own, dst, &counts, &displs, qr, tag),
            )
        })?;
        if q == qr && lr != 0 {
            let into: &mut [B] = if is_root { recv } else { &mut [] };
            self.leader_to(lr, &whole, into)
        } else {
            local.barrier_with(Barrier::Auto)
        }
    }

    /// `Comm::scatter_with` across processes (module docs).
    pub(crate) fn scatter<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        root: usize,
        algorithm: Scatter,
    ) -> Result<()> {
        let call =
            Call::of::<T>(Kind::Coll(Collective::Scatter), algorithm.id(), recv.len()).at(root);
        // SAFETY: `recv` receives only a block of the root's `send`.
        let recv = unsafe { bytes_mut(recv) };
        self.scatter_bytes(bytes(send), recv, root, algorithm, call)
    }

    /// [`Bridge::scatter`] on the bytes of the blocks.
    fn scatter_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        root: usize,
        algorithm: Scatter,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "scatter";
        let (p, m) = (self.size(), recv.len());
        let is_root = self.rank() == root;
        let (q, _, t) = self.here();
        let (qr, lr) = self.layout.locate(root);
        let leader = self.is_leader();
        let local = &self.local;
        let mut whole = staging(if leader && q == qr && lr != 0 {
            p * m
        } else {
            0
        });
        let before = if q == qr && lr != 0 {
            let data = if is_root { send } else { &[] };
            self.to_leader(lr, data, &mut whole)
        } else {
            Ok(())
        };
        let mut own = staging(if leader { t * m } else { 0 });
        self.across(OP, call, before, |pc| {
            if algorithm.needs_shared_memory() {
                return Err(super::shared_memory_only(
                    self.rank(),
                    OP,
                    algorithm.name(),
                    "auto, linear or binomial",
                ));
            }
            let (counts, displs) = self.process_blocks(m);
            let src: &[B] = match (q == qr, lr == 0) {
                (false, _) => &[],
                (true, true) => send,
                (true, false) => &whole,
            };
            pc.agreed(
                OP,
                Kind::Coll(Collective::Scatter),
                V_FORM,
                p * m,
                |tr, tag| sched::scatterv(tr, src, &counts, &displs, &mut own, qr, tag),
            )
        })?;
        local.scatter_with(&own, recv, 0, algorithm)
    }

    /// `Comm::allgather_with` across processes (module docs).
    pub(crate) fn allgather<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        algorithm: Allgather,
    ) -> Result<()> {
        let call = Call::of::<T>(
            Kind::Coll(Collective::Allgather),
            algorithm.id(),
            send.len(),
        );
        // SAFETY: `recv` receives only blocks of the ranks' `send`.
        let recv = unsafe { bytes_mut(recv) };
        self.allgather_bytes(bytes(send), recv, algorithm, call)
    }

    /// [`Bridge::allgather`] on the bytes of the blocks.
    fn allgather_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        algorithm: Allgather,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "allgather";
        let (p, m) = (self.size(), send.len());
        let (_, _, t) = self.here();
        let leader = self.is_leader();
        let local = &self.local;
        let mut own = staging(if leader { t * m } else { 0 });
        let before = local.gather_with(send, &mut own, 0, Gather::Auto);
        self.across(OP, call, before, |pc| {
            let l = &self.layout;
            let np = l.processes();
            let bytes = p * m;
            let uniform = (0..np).all(|q| l.threads(q) == t);
            let schedule = match algorithm.flat() {
                Some(Flat::Direct) => {
                    return Err(super::shared_memory_only(
                        self.rank(),
                        OP,
                        algorithm.name(),
                        "auto, ring, recursive-doubling or bruck",
                    ))
                }
                Some(Flat::Schedule(s)) => s,
                None if bytes >= 80 << 10 => Allgathering::Ring,
                None if np.is_power_of_two() => Allgathering::RecursiveDoubling,
                None => Allgathering::Bruck,
            };
            let alg = Flat::Schedule(schedule).alg();
            if !uniform {
                let (counts, displs) = self.process_blocks(m);
                return pc.agreed(
                    OP,
                    Kind::Coll(Collective::Allgather),
                    V_FORM,
                    bytes,
                    |tr, tag| sched::allgatherv(tr, &own, recv, &counts, &displs, tag),
                );
            }
            pc.agreed(
                OP,
                Kind::Coll(Collective::Allgather),
                alg.id(),
                bytes,
                |tr, tag| sched::run_allgather(tr, &own, recv, schedule, tag),
            )
        })?;
        local.broadcast_with(recv, 0, Broadcast::Auto)
    }

    /// `Comm::gatherv` across processes (module docs).
    pub(crate) fn gatherv<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: usize,
    ) -> Result<()> {
        const OP: &str = "gatherv";
        let is_root = self.rank() == root;
        let cnt = self.root_counts(counts, root)?;
        self.check_own(OP, "send", send.len(), cnt[self.rank()])?;
        let call = Call::of::<T>(
            Kind::Coll(Collective::Gather),
            V_FORM | Gather::Linear.id(),
            0,
        )
        .at(root);
        let w = size_of::<T>();
        let displs = if is_root {
            scaled(displs, w)
        } else {
            Vec::new()
        };
        // SAFETY: `recv` receives only blocks of the ranks' `send`, at multiples of `w`.
        let recv = unsafe { bytes_mut(recv) };
        self.gatherv_bytes(bytes(send), recv, &scaled(&cnt, w), &displs, root, call)
    }

    /// [`Bridge::gatherv`] on the bytes of the blocks (`cnt`: the root's counts, on every
    /// rank; `displs` on the root).
    fn gatherv_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        cnt: &[usize],
        displs: &[usize],
        root: usize,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "gatherv";
        let is_root = self.rank() == root;
        let (q, o, t) = self.here();
        let (qr, lr) = self.layout.locate(root);
        let leader = self.is_leader();
        let local = &self.local;
        let lc = &cnt[o..o + t];
        let (ld, lsum) = packed(lc);
        let mut own = staging(if leader { lsum } else { 0 });
        let before = local.gatherv(send, &mut own, lc, &ld, 0);
        let sums = self.process_sums(cnt);
        let (sd, total) = packed(&sums);
        let mut all = staging(if leader && q == qr { total } else { 0 });
        self.across(OP, call, before, |pc| {
            pc.agreed(
                OP,
                Kind::Coll(Collective::Gather),
                V_FORM,
                total,
                |tr, tag| sched::gatherv(tr, &own, &mut all, &sums, &sd, qr, tag),
            )
        })?;
        if q != qr {
            return local.barrier_with(Barrier::Auto);
        }
        // The packed blocks, in rank order, to the root, which places them.
        let place = |from: &[B], recv: &mut [B]| {
            let (pd, _) = packed(cnt);
            for i in 0..cnt.len() {
                crate::copy::copy_slice(
                    &mut recv[displs[i]..displs[i] + cnt[i]],
                    &from[pd[i]..pd[i] + cnt[i]],
                );
            }
        };
        if lr == 0 {
            if is_root {
                place(&all, recv);
            }
            return local.barrier_with(Barrier::Auto);
        }
        let mut mine = staging(if is_root { total } else { 0 });
        self.leader_to(lr, &all, &mut mine)?;
        if is_root {
            place(&mine, recv);
        }
        Ok(())
    }

    /// `Comm::scatterv` across processes (module docs).
    pub(crate) fn scatterv<T: Elem>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<()> {
        const OP: &str = "scatterv";
        let is_root = self.rank() == root;
        let cnt = self.root_counts(counts, root)?;
        self.check_own(OP, "recv", recv.len(), cnt[self.rank()])?;
        let call = Call::of::<T>(
            Kind::Coll(Collective::Scatter),
            V_FORM | Scatter::Linear.id(),
            0,
        )
        .at(root);
        let w = size_of::<T>();
        let displs = if is_root {
            scaled(displs, w)
        } else {
            Vec::new()
        };
        // SAFETY: `recv` receives only a block of the root's `send`, at multiples of `w`.
        let recv = unsafe { bytes_mut(recv) };
        self.scatterv_bytes(bytes(send), &scaled(&cnt, w), &displs, recv, root, call)
    }

    /// [`Bridge::scatterv`] on the bytes of the blocks (`cnt`: the root's counts, on every
    /// rank; `displs` on the root).
    fn scatterv_bytes(
        &self,
        send: &[B],
        cnt: &[usize],
        displs: &[usize],
        recv: &mut [B],
        root: usize,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "scatterv";
        let is_root = self.rank() == root;
        let (q, o, t) = self.here();
        let (qr, lr) = self.layout.locate(root);
        let leader = self.is_leader();
        let local = &self.local;
        let sums = self.process_sums(cnt);
        let (sd, total) = packed(&sums);
        // The root packs its blocks in rank order.
        let mut all: Vec<B> = Vec::new();
        if is_root {
            all.reserve(total);
            for i in 0..cnt.len() {
                crate::copy::extend(&mut all, &send[displs[i]..displs[i] + cnt[i]]);
            }
        }
        // Stage 1 in every process goes through every thread, so that a thread's wrong
        // length fails the process before its leader's check.
        let before = if q == qr && lr != 0 {
            let mut at_leader = staging(if leader { total } else { 0 });
            let r = self.to_leader(lr, &all, &mut at_leader);
            if leader {
                all = at_leader;
            }
            r
        } else {
            local.barrier_with(Barrier::Auto)
        };
        let lc = &cnt[o..o + t];
        let (ld, lsum) = packed(lc);
        let mut own = staging(if leader { lsum } else { 0 });
        self.across(OP, call, before, |pc| {
            let src: &[B] = if q == qr { &all } else { &[] };
            pc.agreed(
                OP,
                Kind::Coll(Collective::Scatter),
                V_FORM,
                total,
                |tr, tag| sched::scatterv(tr, src, &sums, &sd, &mut own, qr, tag),
            )
        })?;
        local.scatterv(&own, lc, &ld, recv, 0)
    }

    /// `Comm::allgatherv` across processes (module docs).
    pub(crate) fn allgatherv<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let fp = fingerprint(counts);
        let total: usize = counts.iter().sum();
        let call = Call::of::<T>(
            Kind::Coll(Collective::Allgather),
            V_FORM | Allgather::Ring.id(),
            total,
        )
        .in_blocks(fp as usize);
        let w = size_of::<T>();
        // SAFETY: `recv` receives only blocks of the ranks' `send`, at multiples of `w`.
        let recv = unsafe { bytes_mut(recv) };
        let (counts, displs) = (scaled(counts, w), scaled(displs, w));
        self.allgatherv_bytes(bytes(send), recv, &counts, &displs, fp, call)
    }

    /// [`Bridge::allgatherv`] on the bytes of the blocks (`fp`: the fingerprint of the
    /// caller's counts).
    fn allgatherv_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        counts: &[usize],
        displs: &[usize],
        fp: u64,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "allgatherv";
        let (_, o, t) = self.here();
        let leader = self.is_leader();
        let local = &self.local;
        let mut fps = vec![0u64; if leader { t } else { 0 }];
        let lc = &counts[o..o + t];
        let (ld, lsum) = packed(lc);
        let mut own = staging(if leader { lsum } else { 0 });
        let before = local
            .gather_with(&[fp], &mut fps, 0, Gather::Auto)
            .and_then(|()| {
                if let Some(i) = fps.iter().position(|&f| f != fp) {
                    return Err(self.invalid(
                        OP,
                        format!(
                            "rank {} passes other counts than rank {o} (counts must be the same \
                         on every rank)",
                            o + i
                        ),
                    ));
                }
                local.gatherv(send, &mut own, lc, &ld, 0)
            });
        let sums = self.process_sums(counts);
        let (sd, total) = packed(&sums);
        let mut all = staging(total);
        self.across(OP, call, before, |pc| {
            pc.agreed(
                OP,
                Kind::Coll(Collective::Allgather),
                V_FORM,
                total,
                |tr, tag| sched::allgatherv(tr, &own, &mut all, &sums, &sd, tag),
            )
        })?;
        local.broadcast_with(&mut all, 0, Broadcast::Auto)?;
        let (pd, _) = packed(counts);
        for i in 0..counts.len() {
            crate::copy::copy_slice(
                &mut recv[displs[i]..displs[i] + counts[i]],
                &all[pd[i]..pd[i] + counts[i]],
            );
        }
        Ok(())
    }
}
