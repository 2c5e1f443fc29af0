//! The process layer of a hybrid team (feature `mpi`): a communicator whose ranks are the
//! threads of several MPI processes. A collective runs in three stages (`world`,
//! `collectives`): within each process over its threads' own communicator (`local::Local`),
//! between the processes by each process's first thread over MPI, and within each process
//! again. The stage between the processes runs on [`ProcessComm`], the leaders' communicator:
//! the crate's collective schedules over MPI point-to-point (`process::mpi`) — the very code
//! that runs between threads over the mailboxes — or MPI's own collectives.
//!
//! **Semantics** are `Comm`'s: x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1} in rank order on every algorithm that
//! accepts the op, bit-identical results on every process, and a call that the processes do
//! not all make alike (length, element type, root, algorithm, block, collective, op)
//! is the same [`Error::Mismatch`] on every process, found by one
//! `MPI_Allreduce` before the schedule (`check`, which documents its cost). Errors that follow
//! from the agreed call (an algorithm that needs shared memory, a ring for a non-commutative
//! op, a root out of range, a vector above MPI's `int` count of bytes) are decided after the
//! check, so they too are the same on every process and leave no process waiting.
//!
//! **MPI's own collectives.** `Algorithm::Native`, `Broadcast::Native` and `Reduce::Native`
//! call `MPI_Allreduce`, `MPI_Bcast` and `MPI_Reduce` after the check, in place of the crate's
//! schedules. A broadcast takes any element type (as bytes). A reduction takes the crate's
//! built-in ops ([`Op::builtin`]) on the primitive integers up to 64 bits, `f32`, `f64` and
//! `bool`; anything else, and float `Min`/`Max` (the crate orders floats by `total_cmp`, MPI by
//! C's `<`), is [`Error::Unsupported`] on every process (the op is part of the check). Integer
//! and boolean results are exact; a float sum or product is in the order MPI chooses, which
//! MPI does not promise to be the same on every process (Open MPI's algorithms make it so).
//! The reductions send from a copy of the vector (rsmpi's bindings have no `MPI_IN_PLACE`).
//!
//! **Failures the check cannot see.** Once the schedule runs, a process cannot tell the others
//! that it failed except by a message they are not waiting for. An MPI error aborts the job:
//! the transport's communicator is a duplicate of the user's with `MPI_ERRORS_ARE_FATAL`. A
//! panic in the op (or anywhere in the schedule) calls `MPI_Abort` on that communicator while
//! it unwinds out of the collective, after a line on stderr, so the other processes are
//! ended instead of left waiting for it; a program that catches panics loses its job to it.
//! A transport error inside an agreed schedule (a message with another tag or length) cannot
//! happen when every process runs the same crate; if it did, it would be returned on the
//! process that saw it while its peers might wait (a bug to report, not a usage error).
//!
//! **Lifetime.** A `ProcessComm` owns its duplicate communicator, freed on drop, which must
//! happen before MPI is finalised (before rsmpi's `Universe` is dropped). It is not `Sync`:
//! one thread per process calls it, and MPI's threading level must allow calls from that
//! thread (`Threading::Funneled` for the main thread).

use super::native;
use crate::algorithms;
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Kind, Tag};
use crate::op::Op;
use crate::process::mpi::{MpiTransport, Scratch, TagCodec};
use crate::process::node::NodeStage;
use crate::select::{Algorithm, Broadcast, Costs, Flat, Reduce};
use ::mpi::ffi;
use ::mpi::topology::{Communicator, SimpleCommunicator};
use ::mpi::traits::AsRaw;
use std::cell::{Cell, RefCell};
use std::mem::{size_of, size_of_val};

/// `Auto`'s allreduce between processes for `bytes` per process, `exact` if MPI's own
/// reduction gives the crate's bits (integers and `bool`, built-in ops): measured with
/// `corecoll-bench/examples/process_sweep.rs` on 2, 3 and 4 processes of the development
/// machine (Open MPI 4.1.4, 2 cores; docs/hybrid.md, "Auto between processes"; figures in
/// `docs/results/2026-11-29-figures-behind-the-code.md`). MPI's `MPI_Allreduce` up to 2 KiB, where it
/// beat recursive doubling; recursive doubling up to 32 KiB, where it beat Rabenseifner;
/// Rabenseifner above (best from 128 KiB to 2 MiB at every P, close to the ring and the
/// two-tree at 8–16 MiB). All keep rank order.
fn auto_allreduce(bytes: usize, exact: bool) -> Algorithm {
    match bytes {
        b if b <= 2 << 10 && exact => Algorithm::Native,
        b if b <= 32 << 10 => Algorithm::RecursiveDoubling,
        _ => Algorithm::Rabenseifner,
    }
}

/// `Auto`'s broadcast between `p` processes for `bytes`, measured as [`auto_allreduce`]'s:
/// `MPI_Bcast` (faster than the binomial tree from 8 KiB to 512 KiB on 4 processes, level on
/// 2) below 2 MiB, and from 2 MiB on 3 processes or more scatter + allgather (van de Geijn;
/// faster than the binomial tree there).
fn auto_broadcast(p: usize, bytes: usize) -> Broadcast {
    if bytes >= 2 << 20 && p >= 3 {
        Broadcast::ScatterAllgather
    } else {
        Broadcast::Native
    }
}

/// `Auto`'s reduce between processes, measured as [`auto_allreduce`]'s: `MPI_Reduce` where
/// its result is exact (as fast as the binomial tree or faster on 3 and 4 processes, a little
/// slower at 8–16 MiB on 2), else the binomial tree. The pipelined tree was slower than both
/// at every size measured (up to 4 processes, where its pipeline has no depth).
fn auto_reduce(exact: bool) -> Reduce {
    if exact {
        Reduce::Native
    } else {
        Reduce::Binomial
    }
}

/// The refusal, on rank `rank`, of algorithm `name` of collective `op`, which needs the ranks
/// to share one address space, between MPI processes (a `ProcessComm`, or the stage between
/// processes of a team that spans them); `instead` lists what runs there.
pub(in crate::process) fn shared_memory_only(
    rank: usize,
    op: &'static str,
    name: &str,
    instead: &str,
) -> Error {
    Error::Unsupported {
        rank,
        op,
        what: format!(
            "the {name} algorithm needs the ranks to share memory; between MPI processes use \
             {instead}"
        ),
    }
}

/// A communicator whose ranks are MPI processes, one calling thread each (see the module
/// docs): the crate's collective schedules between processes, with MPI's semantics and the
/// crate's checks.
pub(crate) struct ProcessComm {
    /// The transport's own duplicate of the user's communicator.
    pub(in crate::process) comm: SimpleCommunicator,
    /// This process's rank.
    pub(in crate::process) rank: usize,
    /// Number of processes.
    pub(in crate::process) size: usize,
    /// How tags are encoded on `comm`.
    codec: TagCodec,
    /// The next collective call's sequence number (in its tags).
    seq: Cell<u64>,
    /// The reducing receives' scratch buffer, reused across calls.
    pub(in crate::process) scratch: Scratch,
    /// Whether waits poll and yield the core instead of blocking in MPI
    /// (`process::mpi::poll_politely`): set by a hybrid team whose node has more threads
    /// than cores.
    pub(in crate::process) polite: Cell<bool>,
    /// The pipelining lemma's constants between the processes (`select::block::lemma_block`): the
    /// `mpi` level of a profile ([`ProcessComm::set_profile`], or the hybrid team's), else the
    /// built-in estimate for Open MPI's shared-memory transport on one node (`Costs::MPI`).
    pub(in crate::process) costs: Cell<Costs>,
    /// Whether the call check gathers every process's words in its one allreduce (a shadow's
    /// leaders' communicator, `shadows`: its outcome then needs no second collective, which a
    /// process at the end of its run could not wait for), instead of their maxima and minima.
    rows: Cell<bool>,
    /// The nodes' shared memory, on the world's leaders' communicator when its processes
    /// share nodes: the check and the node's collectives run there (`node`).
    pub(in crate::process) node: Option<NodeStage>,
}

impl std::fmt::Debug for ProcessComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessComm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// Calls `MPI_Abort` if dropped while a panic unwinds (see the module docs).
pub(in crate::process) struct AbortOnUnwind<'c> {
    comm: &'c SimpleCommunicator,
    rank: usize,
    op: &'static str,
}

impl Drop for AbortOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "corecoll: process {} panicked inside {}; aborting the MPI job (MPI_Abort) so \
                 that the other processes do not wait for it forever",
                self.rank, self.op
            );
            self.comm.abort(70);
        }
    }
}

impl ProcessComm {
    /// A communicator over the processes of `comm`, collective over them (every process must
    /// call it): duplicates `comm` (`MPI_Comm_dup`), so that the crate's messages never meet
    /// the caller's own traffic, and makes MPI errors on the duplicate fatal. Fails if the MPI
    /// library's tag upper bound is below the standard's minimum (32767).
    pub(crate) fn new<C: Communicator>(comm: &C) -> Result<ProcessComm> {
        let dup = comm.duplicate();
        // SAFETY: `dup` is a valid communicator owned here, and RSMPI_ERRORS_ARE_FATAL is the
        // predefined error handler, valid for communicators.
        let rc = unsafe { ffi::MPI_Comm_set_errhandler(dup.as_raw(), ffi::RSMPI_ERRORS_ARE_FATAL) };
        assert_eq!(
            rc,
            ffi::MPI_SUCCESS as i32,
            "MPI_Comm_set_errhandler failed"
        );
        let (rank, size) = (dup.rank() as usize, dup.size() as usize);
        let codec = TagCodec::for_comm(&dup).ok_or_else(|| Error::Unsupported {
            rank,
            op: "ProcessComm::new",
            what: "the MPI library's MPI_TAG_UB is below the standard's minimum of 32767"
                .to_string(),
        })?;
        Ok(ProcessComm {
            comm: dup,
            rank,
            size,
            codec,
            seq: Cell::new(0),
            scratch: RefCell::new(Vec::new()),
            polite: Cell::new(false),
            costs: Cell::new(Costs::MPI),
            rows: Cell::new(false),
            node: None,
        })
    }

    /// Makes the call check gather every process's words (see the field).
    pub(crate) fn set_gathers_rows(&self) {
        self.rows.set(true);
    }

    /// Whether the call check gathers every process's words.
    pub(crate) fn gathers_rows(&self) -> bool {
        self.rows.get()
    }

    /// Makes waits poll politely (see the field).
    pub(crate) fn set_polite(&self, polite: bool) {
        self.polite.set(polite);
        if let Some(leaders) = self.node_leaders() {
            leaders.set_polite(polite);
        }
    }

    /// Takes `Block::Auto`'s constants from the `mpi` level of `profile` ([`crate::Profile`];
    /// its built-in estimate where that level was not measured). Every process must set the
    /// same profile: the block size is part of the call check, so processes that differ fail
    /// with [`Error::Mismatch`] instead of running different schedules.
    pub(crate) fn set_profile(&self, profile: &crate::Profile) {
        self.costs.set(profile.costs(crate::profile::Level::Mpi));
        if let Some(leaders) = self.node_leaders() {
            leaders.set_profile(profile);
        }
    }

    /// The pipelining lemma's constants (see the field).
    pub(crate) fn costs(&self) -> Costs {
        self.costs.get()
    }

    /// The tag of the next collective call of kind `kind`.
    pub(in crate::process) fn next_tag(&self, kind: Kind) -> Tag {
        let seq = self.seq.get();
        self.seq.set(seq.wrapping_add(1));
        Tag {
            kind,
            variant: 0,
            seq,
            op: 0,
        }
    }

    /// The transport for a call of `op`.
    pub(in crate::process) fn transport(&self, op: &'static str) -> MpiTransport<'_> {
        MpiTransport::new(&self.comm, self.codec, &self.scratch, op, self.polite.get())
    }

    /// Runs an agreed call's schedule over the transport, after the last check every process
    /// makes alike (the vector fits one MPI message), under the guard that aborts the job if
    /// the schedule panics.
    pub(in crate::process) fn schedule(
        &self,
        op: &'static str,
        bytes: usize,
        run: impl FnOnce(&MpiTransport<'_>) -> Result<()>,
    ) -> Result<()> {
        self.check_bytes(op, bytes)?;
        let t = self.transport(op);
        let _abort = self.abort_on_unwind(op);
        run(&t)
    }

    /// The guard that ends the job if a panic unwinds through it inside `op`.
    pub(in crate::process) fn abort_on_unwind(&self, op: &'static str) -> AbortOnUnwind<'_> {
        AbortOnUnwind {
            comm: &self.comm,
            rank: self.rank,
            op,
        }
    }

    /// The refusal of an algorithm that needs the ranks' shared address space.
    fn shared_memory_only(&self, op: &'static str, name: &str, instead: &str) -> Error {
        shared_memory_only(self.rank, op, name, instead)
    }

    /// Fails (on every process alike, after the check) if a vector of `bytes` bytes cannot go
    /// in one MPI message (an `int` count of bytes).
    pub(in crate::process) fn check_bytes(&self, op: &'static str, bytes: usize) -> Result<()> {
        if i32::try_from(bytes).is_err() {
            return Err(Error::Unsupported {
                rank: self.rank,
                op,
                what: format!(
                    "{bytes} bytes per process is above MPI's message limit of {} bytes",
                    i32::MAX
                ),
            });
        }
        Ok(())
    }

    /// Fails (on every process alike, after the check) if `root` is not a rank.
    fn check_root(&self, op: &'static str, root: usize) -> Result<()> {
        if root >= self.size {
            return Err(Error::RankOutOfRange {
                rank: self.rank,
                op,
                peer: root,
                size: self.size,
            });
        }
        Ok(())
    }

    /// The allreduce between the processes, after the hybrid world's check has made sure that
    /// every process makes this call (`Bridge::across`).
    pub(crate) fn allreduce_call<T, O>(
        &self,
        buf: &mut [T],
        op: O,
        algorithm: Algorithm,
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        const OP: &str = "allreduce";
        if self.node.is_some() && matches!(algorithm, Algorithm::Auto | Algorithm::Direct) {
            return self.node_allreduce(buf, &op);
        }
        let tag = self.next_tag(Kind::Coll(Collective::Allreduce));
        let (p, n, bytes) = (self.size, buf.len(), size_of_val(buf));
        let alg = match algorithm {
            Algorithm::Auto => auto_allreduce(bytes, native::exact::<T, O>(&op)),
            chosen => chosen,
        };
        let schedule = match (alg, alg.flat()) {
            (_, Some(Flat::Schedule(s))) => s,
            (Algorithm::Native, _) => return self.native_allreduce(buf, &op),
            _ => {
                return Err(self.shared_memory_only(
                    OP,
                    alg.name(),
                    "dual-root, two-tree, rabenseifner or another transport-generic algorithm",
                ));
            }
        };
        let block = if alg.has_block() {
            alg.block_elements(p, n, size_of::<T>(), self.costs.get())
        } else {
            0
        };
        match alg {
            Algorithm::Ring { .. } if !op.is_commutative() => {
                return Err(Error::Unsupported {
                    rank: self.rank,
                    op: OP,
                    what: "the ring algorithm reorders operands and cannot honour a \
                           non-commutative op; use linear, chain, binomial, \
                           recursive-doubling, rabenseifner, pipelined-tree, dual-root or \
                           two-tree"
                        .to_string(),
                });
            }
            // Nothing to combine: every process agreed on the empty call (or will fail alike).
            _ if n == 0 => return Ok(()),
            _ => {}
        }
        self.schedule(OP, bytes, |t| {
            algorithms::allreduce::run(t, buf, &op, schedule, block, tag.with_variant(alg.id()))
        })
    }

    /// The linear allreduce between the processes, combining in the node stage's grouping
    /// (nodes whose first processes are `starts`: `algorithms::allreduce::grouped_linear`),
    /// after the hybrid world's check: what a request runs where the blocking call runs
    /// through the nodes, so that both give the same bits.
    pub(crate) fn grouped_allreduce<T, O>(
        &self,
        buf: &mut [T],
        op: O,
        starts: &[usize],
    ) -> Result<()>
    where
        T: Elem,
        O: Op<T>,
    {
        const OP: &str = "allreduce";
        let tag = self.next_tag(Kind::Coll(Collective::Allreduce));
        if buf.is_empty() {
            return Ok(());
        }
        let variant = Algorithm::Linear.id();
        self.schedule(OP, size_of_val(buf), |t| {
            algorithms::allreduce::grouped_linear(t, buf, &op, starts, tag.with_variant(variant))
        })
    }

    /// A flat barrier between the processes (`Dissemination` or `Tree`), after the hybrid
    /// world's check (which is a barrier of its own: this one runs because the caller named
    /// it).
    pub(crate) fn barrier_call(&self, algorithm: crate::select::Barrier) -> Result<()> {
        const OP: &str = "barrier";
        let tag = self.next_tag(Kind::Coll(Collective::Barrier));
        let schedule = algorithm.schedule().expect("a flat barrier has a schedule");
        self.schedule(OP, 0, |t| {
            algorithms::barrier::run(t, schedule, tag.with_variant(algorithm.id()))
        })
    }

    /// `ProcessComm::broadcast_with`, with its call check if `check` (see
    /// [`ProcessComm::allreduce_call`]).
    pub(crate) fn broadcast_call<T>(
        &self,
        buf: &mut [T],
        root: usize,
        algorithm: Broadcast,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "broadcast";
        if self.node.is_some() && matches!(algorithm, Broadcast::Auto | Broadcast::Direct) {
            self.check_root(OP, root)?;
            return self.node_broadcast(buf, root);
        }
        let tag = self.next_tag(Kind::Coll(Collective::Broadcast));
        let (p, n, bytes) = (self.size, buf.len(), size_of_val(buf));
        let alg = match algorithm {
            Broadcast::Auto => auto_broadcast(p, bytes),
            chosen => chosen,
        };
        let block = alg.block_elements(p, n, size_of::<T>(), self.costs.get());
        self.check_root(OP, root)?;
        let schedule = match (alg, alg.flat()) {
            (_, Some(Flat::Schedule(s))) => s,
            (Broadcast::Native, _) => return self.native_broadcast(buf, root),
            _ => {
                return Err(self.shared_memory_only(
                    OP,
                    alg.name(),
                    "binomial, pipelined-tree or scatter-allgather",
                ))
            }
        };
        if n == 0 {
            return Ok(());
        }
        self.schedule(OP, bytes, |t| {
            algorithms::broadcast::run(t, buf, root, schedule, block, tag.with_variant(alg.id()))
        })
    }

    /// `ProcessComm::reduce_with`, with its call check if `check` (see
    /// [`ProcessComm::allreduce_call`]).
    pub(crate) fn reduce_call<T, O>(
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
        const OP: &str = "reduce";
        if self.node.is_some() && matches!(algorithm, Reduce::Auto | Reduce::Direct) {
            self.check_root(OP, root)?;
            return self.node_reduce(buf, &op, root);
        }
        let tag = self.next_tag(Kind::Coll(Collective::Reduce));
        let (p, n, bytes) = (self.size, buf.len(), size_of_val(buf));
        let alg = match algorithm {
            Reduce::Auto => auto_reduce(native::exact::<T, O>(&op)),
            chosen => chosen,
        };
        let block = alg.block_elements(p, n, size_of::<T>(), self.costs.get());
        self.check_root(OP, root)?;
        let schedule = match (alg, alg.flat()) {
            (_, Some(Flat::Schedule(s))) => s,
            (Reduce::Native, _) => return self.native_reduce(buf, &op, root),
            _ => {
                return Err(self.shared_memory_only(
                    OP,
                    alg.name(),
                    "binomial, linear or pipelined-tree",
                ))
            }
        };
        if n == 0 {
            return Ok(());
        }
        self.schedule(OP, bytes, |t| {
            algorithms::reduce::run(
                t,
                buf,
                &op,
                root,
                schedule,
                block,
                tag.with_variant(alg.id()),
            )
        })
    }
}
