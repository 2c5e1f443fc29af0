//! The call check of [`ProcessComm`]'s collectives: do all processes make the same call?
//!
//! MPI leaves a collective whose processes disagree (on the length, the root, the element
//! type, or which collective it is) erroneous, and in practice such a call hangs or reads
//! garbage. The crate's contract is a clear error on every process instead. Before any
//! schedule, every process contributes the words of its call's descriptor `d` (collective
//! kind, algorithm id after `Auto`, pipeline block, length, element-type fingerprint, root,
//! commutativity of the op) and their complements `!d` to one `MPI_Allreduce` with `MPI_MAX`
//! (MPI 3.1 §5.9): max(!dᵢ) = !min(dᵢ), so every process learns the maximum and the minimum of
//! every field, and the processes agree exactly when they are equal. Every process sees the
//! same maxima and minima, so all take the same branch: all go on, or all fail. Only then, on
//! the failing path, an `MPI_Allgather` of the descriptors finds the first process whose call
//! differs from rank 0's, so that the error (the same on every process) names both calls.
//!
//! Cost: one allreduce of 14 `u64` (112 bytes) per collective call, a latency-bound collective
//! of ⌈log₂ p⌉-ish rounds of small messages. Measured with `mpirun -np 2 --map-by core
//! --bind-to core target/release/examples/mpi_check --time 8` (Open MPI 4, the 2 cores of the
//! development machine; docs/hybrid.md; figures in
//! `docs/results/2026-11-29-figures-behind-the-code.md`): the check alone (`ProcessComm::barrier`)
//! costs about an 8-byte `MPI_Allreduce`, so it about doubles the shortest allreduce and is
//! nothing for long vectors. The shared-memory `Comm`'s check is cheaper
//! (one hop, or a dissemination over the same mailboxes) because a failing rank there can fail
//! the whole run; between processes there is no such shared flag, and a process that finds a
//! mismatch on its own could not tell the others without a message they would have to wait
//! for. The allreduce is also a barrier, which is what `ProcessComm::barrier` uses it for.

use crate::algorithms::check;
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::{describe_op_word, fingerprint_size, op_word, type_fingerprint, Kind};
use crate::op::{Identity, Op};
use crate::process::collectives::gather::common::V_FORM;
use crate::process::ProcessComm;
use ::mpi::ffi;
use ::mpi::traits::*;
use std::ffi::c_int;

/// Words in a call's descriptor.
const WORDS: usize = 7;
/// The algorithm id that tells a `dup` from a `split` (`Kind::Split`).
const DUP: u8 = 1;

/// How a process comes to the check of a call of a team that spans processes (the hybrid
/// world, `process::world`): its leader brings, besides the call, whether its own threads got
/// this far. The check then fails on every process if any process failed, so that a failure
/// in one process's shared-memory stage reaches the ranks of every process at the same call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// The process's threads are ready for the stage between processes.
    Ready = 0,
    /// The process's run failed before this call (its cause is reported there).
    Failed = 1,
    /// The process's run has ended: every thread returned from the team's closure. Matches
    /// only the other processes' ends.
    Finished = 2,
}

/// What a process is about to do in a collective call, as the check compares it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call {
    /// The collective.
    kind: Kind,
    /// The algorithm's id (after `Auto`).
    alg: u8,
    /// The pipeline block in elements (0 where the algorithm has none).
    block: usize,
    /// Elements per process.
    len: usize,
    /// The element type's fingerprint (`transport::type_fingerprint`).
    elem: u64,
    /// The root, for rooted collectives.
    root: Option<usize>,
    /// The op, for reducing collectives (compared as [`op_word`]: which built-in op it is,
    /// else the user op's type and whether it is commutative).
    op: Option<Identity>,
    /// Which communicator of the team: 0 for those that share the team's leaders (the world
    /// and what `split` makes), k for its k-th duplicate (`Comm::dup`), so that processes
    /// whose leaders call collectives of a communicator and of its duplicate in different
    /// orders fail instead of combining one's data with the other's.
    context: u64,
}

impl Call {
    /// A call of `kind` with algorithm id `alg` on `len` elements of `T` per process, without
    /// root, block or op.
    pub(crate) fn of<T: 'static>(kind: Kind, alg: u8, len: usize) -> Call {
        crate::mailbox::names::note::<T>();
        Call {
            kind,
            alg,
            block: 0,
            len,
            elem: type_fingerprint::<T>(),
            root: None,
            op: None,
            context: 0,
        }
    }

    /// `Comm::dup`: nothing to compare but the call.
    pub(crate) fn dup() -> Call {
        Call {
            elem: 0,
            ..Call::of::<()>(Kind::Split, DUP, 0)
        }
    }

    /// The same call on the communicator of context `context`.
    pub(crate) fn in_context(self, context: u64) -> Call {
        Call { context, ..self }
    }

    /// A barrier: no data, nothing else to compare (the check of a run's end is one too).
    pub(crate) fn barrier() -> Call {
        Call::barrier_with(0)
    }

    /// A barrier with the algorithm of id `alg`.
    pub(crate) fn barrier_with(alg: u8) -> Call {
        Call {
            elem: 0,
            ..Call::of::<()>(Kind::Coll(Collective::Barrier), alg, 0)
        }
    }

    /// The same call at root `root`.
    pub(crate) fn at(self, root: usize) -> Call {
        Call {
            root: Some(root),
            ..self
        }
    }

    /// The same call in pipeline blocks of `block` elements.
    pub(in crate::process) fn in_blocks(self, block: usize) -> Call {
        Call { block, ..self }
    }

    /// The same call with `op`: which built-in op it is (so that processes combining with
    /// different built-in ops fail the check, and `Native`'s MPI op is agreed), else whether
    /// it is commutative (user ops cannot be told apart).
    pub(crate) fn with_op<T, O: Op<T> + ?Sized>(self, op: &O) -> Call {
        Call {
            op: Some(op.identity()),
            ..self
        }
    }

    /// The collective.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// The same call as the threads of one process compare it among themselves
    /// (`Bridge::first_stage`), with `op` as the collective's name: every word the processes
    /// compare but the communicator's context, which the threads' own communicator (the
    /// world's or a duplicate's) already is.
    pub(crate) fn for_threads(&self, op: &'static str) -> check::Call {
        check::Call {
            op,
            alg: self.alg,
            name_of: match self.kind {
                Kind::Coll(c) => crate::select::names_of(c),
                Kind::P2p | Kind::Split => |_| None,
            },
            len: self.len,
            root: self.root,
            block: self.block,
            elem: self.elem,
            combine: self.op,
        }
    }

    /// The words compared.
    fn words(&self) -> [u64; WORDS] {
        [
            u64::from(self.kind.code()) | self.context << 8,
            u64::from(self.alg),
            self.block as u64,
            self.len as u64,
            self.elem,
            self.root.map_or(u64::MAX, |r| r as u64),
            self.op.map_or(0, op_word),
        ]
    }
}

/// Describes a call from its words (and, after them, the process's [`Arrival`], if given), for
/// an error message.
fn describe(w: &[u64]) -> String {
    if w.get(WORDS) == Some(&(Arrival::Finished as u64)) {
        return "the end of its run (every thread returned from the team's closure)".to_string();
    }
    let on = match w[0] >> 8 {
        0 => String::new(),
        k => format!(" on duplicate {k} of the team's communicator"),
    };
    format!("{}{on}", describe_call(w))
}

/// [`describe`] without the communicator.
fn describe_call(w: &[u64]) -> String {
    let kind = u8::try_from(w[0] & 0xff).ok().and_then(Kind::from_code);
    let Some(kind) = kind else {
        return format!("an unknown collective {:#x}", w[0]);
    };
    match kind {
        Kind::Coll(Collective::Barrier) if w[1] == 0 => return "barrier".to_string(),
        Kind::Split if w[1] == u64::from(DUP) => return "dup".to_string(),
        _ => {}
    }
    let id = u8::try_from(w[1]).unwrap_or(u8::MAX);
    // The hybrid world's `v` forms (and exscan) set the top bit of the algorithm id.
    let (v, id) = (id & V_FORM != 0, id & !V_FORM);
    let alg = match kind {
        Kind::Coll(c) => crate::select::name_of(c, id),
        Kind::P2p | Kind::Split => None,
    }
    .unwrap_or("?");
    let name = match (kind, v) {
        (Kind::Coll(Collective::Scan), true) => "exscan".to_string(),
        (
            Kind::Coll(Collective::Gather)
            | Kind::Coll(Collective::Scatter)
            | Kind::Coll(Collective::Allgather)
            | Kind::Coll(Collective::Alltoall),
            true,
        ) => {
            format!("{}v", kind.name())
        }
        _ => kind.name().to_string(),
    };
    let mut d = format!(
        "{name} of {} with the {alg} algorithm",
        // Not the type's name: a process knows the names of the types its own threads used,
        // and every process must describe a mismatch in the same words.
        crate::mailbox::names::elements(
            w[3],
            &format!(
                "{} bytes (type {:#010x})",
                fingerprint_size(w[4]),
                w[4] >> 32
            )
        ),
    );
    match (kind, v, w[2]) {
        (_, _, 0) => {}
        (Kind::Coll(Collective::Allgather), true, fp) => {
            d += &format!(" with counts of fingerprint {fp:#x}")
        }
        (_, _, block) => d += &format!(" in blocks of {block}"),
    }
    if w[5] != u64::MAX {
        d += &format!(" at root {}", w[5]);
    }
    if w[6] != 0 {
        d += &format!(" and op {}", describe_op_word(w[6]));
    }
    d
}

impl ProcessComm {
    /// `recv` = the element-wise maximum of every process's `send` (`MPI_Allreduce` with
    /// `MPI_MAX`; when the communicator polls politely, `MPI_Iallreduce` polled until done).
    pub(in crate::process) fn max_words(&self, send: &[u64], recv: &mut [u64]) {
        assert_eq!(send.len(), recv.len());
        let (n, comm) = (send.len() as c_int, self.comm.as_raw());
        let (send, recv) = (send.as_ptr().cast(), recv.as_mut_ptr().cast());
        // SAFETY: for both closures, `send` and `recv` hold `n` u64 each and outlive the call,
        // which completes inside `run_native`; the datatype and op are predefined, the
        // communicator valid, `req` a live out-parameter.
        self.run_native(
            "MPI_Allreduce",
            || unsafe {
                ffi::MPI_Allreduce(send, recv, n, ffi::RSMPI_UINT64_T, ffi::RSMPI_MAX, comm)
            },
            |req| unsafe {
                ffi::MPI_Iallreduce(
                    send,
                    recv,
                    n,
                    ffi::RSMPI_UINT64_T,
                    ffi::RSMPI_MAX,
                    comm,
                    req,
                )
            },
        );
    }

    /// The check of a call of a team that spans processes, made by each process's leader
    /// after its threads' first stage: `agree`'s allreduce over the call's words and the
    /// process's [`Arrival`]. `Ok` on every process if every process is `Ready` for the same
    /// call, or every process has `Finished`; otherwise the same error on every process:
    /// [`Error::ProcessFailed`] naming the first process that failed, or the
    /// [`Error::Mismatch`] of the first process whose call differs from process 0's. Errors
    /// name ranks of the team: `rank` (this leader's) and `leaders[q]`, process q's leader.
    pub(crate) fn agree_across(
        &self,
        call: &Call,
        arrival: Arrival,
        rank: usize,
        leaders: &[usize],
        op: &'static str,
    ) -> Result<()> {
        self.agree_across_watching(call, arrival, (rank, leaders), op, &mut || {})
    }

    /// [`ProcessComm::agree_across`] with `meanwhile` run now and then while a check through a
    /// node's segment waits for another process (the last check of a run, `process::shadows`).
    pub(crate) fn agree_across_watching(
        &self,
        call: &Call,
        arrival: Arrival,
        (rank, leaders): (usize, &[usize]),
        op: &'static str,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<()> {
        let mine = words_of(call, arrival);
        if self.node().is_some() {
            let rows = self.node_rows(&mine, op, meanwhile)?;
            return self.outcome_of_rows(&rows, rank, leaders, op);
        }
        if self.gathers_rows() {
            let mut rows = self.row_of(&mine);
            let send = rows.clone();
            self.max_words(&send, &mut rows);
            return self.outcome_of_rows(&rows, rank, leaders, op);
        }
        let mut send = [0u64; 2 * N];
        send[..N].copy_from_slice(&mine);
        for (c, w) in send[N..].iter_mut().zip(&mine) {
            *c = !w;
        }
        let mut both = [0u64; 2 * N];
        self.max_words(&send, &mut both);
        let same = (0..N).all(|i| both[i] == !both[N + i]);
        if same && both[WORDS] != Arrival::Failed as u64 {
            return Ok(());
        }
        // Every process is here: gather every process's words to say who failed or differs.
        let mut all = vec![0u64; N * self.size];
        self.comm.all_gather_into(&mine[..], &mut all[..]);
        self.outcome_of_rows(&all, rank, leaders, op)
    }

    /// [`ProcessComm::agree_across`] posted and not waited for (`MPI_Iallreduce`), on a
    /// communicator whose checks gather every process's words in one allreduce (a shadow's,
    /// `process::shadows`), so that several checks can be in flight at once (the end of a run)
    /// and the outcome needs no second collective: complete its request, then read it with
    /// [`ProcessComm::check_outcome`].
    pub(crate) fn start_check(&self, call: &Call, arrival: Arrival) -> PendingCheck {
        assert!(self.gathers_rows(), "a posted check gathers rows");
        let send = self.row_of(&words_of(call, arrival));
        let mut pending = PendingCheck {
            rows: vec![0u64; send.len()],
            send,
            req: std::mem::MaybeUninit::uninit(),
        };
        let (n, comm) = (pending.send.len() as c_int, self.comm.as_raw());
        // SAFETY: both vectors hold `n` u64 and stay where they are (they are not resized)
        // while their owner keeps the pending check until the request completes; the datatype
        // and op are predefined, the communicator valid, the request a live out-parameter.
        let rc = unsafe {
            ffi::MPI_Iallreduce(
                pending.send.as_ptr().cast(),
                pending.rows.as_mut_ptr().cast(),
                n,
                ffi::RSMPI_UINT64_T,
                ffi::RSMPI_MAX,
                comm,
                pending.req.as_mut_ptr(),
            )
        };
        assert_eq!(rc, ffi::MPI_SUCCESS as c_int, "MPI_Iallreduce failed");
        pending
    }

    /// The outcome of check `pending`, whose request has completed.
    pub(crate) fn check_outcome(
        &self,
        pending: &PendingCheck,
        rank: usize,
        leaders: &[usize],
        op: &'static str,
    ) -> Result<()> {
        self.outcome_of_rows(&pending.rows, rank, leaders, op)
    }

    /// This process's words in its row of a check that gathers every process's (zeros in the
    /// others' rows, which the allreduce's maximum fills).
    fn row_of(&self, mine: &[u64; N]) -> Vec<u64> {
        let mut rows = vec![0u64; N * self.size];
        rows[self.rank * N..(self.rank + 1) * N].copy_from_slice(mine);
        rows
    }

    /// The outcome of a check from every process's words (`all`, process q's in row q).
    pub(in crate::process) fn outcome_of_rows(
        &self,
        all: &[u64],
        rank: usize,
        leaders: &[usize],
        op: &'static str,
    ) -> Result<()> {
        let of = |q: usize| &all[q * N..(q + 1) * N];
        if let Some(q) = (0..self.size).find(|&q| of(q)[WORDS] == Arrival::Failed as u64) {
            return Err(Error::ProcessFailed {
                rank,
                op,
                process: q,
            });
        }
        let Some(peer) = (1..self.size).find(|&q| of(q) != of(0)) else {
            return Ok(());
        };
        Err(Error::Mismatch {
            rank: leaders[0],
            peer: leaders[peer],
            op: "the call check between processes",
            expected: describe(of(0)),
            found: describe(of(peer)),
        })
    }
}

/// Words of a check: the call's and the arrival.
pub(in crate::process) const N: usize = WORDS + 1;

/// This process's words of a check of `call` with `arrival`.
pub(in crate::process) fn words_of(call: &Call, arrival: Arrival) -> [u64; N] {
    let mut mine = [0u64; N];
    mine[..WORDS].copy_from_slice(&call.words());
    mine[WORDS] = arrival as u64;
    mine
}

/// Whether the words of several processes (`rows`, one process's `N` after another's) are
/// the same call and none failed: a node's part of an agreement, before the other nodes'.
pub(in crate::process) fn rows_alike(rows: &[u64]) -> bool {
    rows.chunks(N)
        .all(|row| row == &rows[..N] && row[WORDS] != Arrival::Failed as u64)
}

/// `words` (a process's words of a check) with the arrival of a process that failed: what a
/// node's leader says between nodes for processes of its node it could not hear from.
pub(in crate::process) fn as_failed(words: &[u64]) -> Vec<u64> {
    let mut w = words.to_vec();
    w[WORDS] = Arrival::Failed as u64;
    w
}

/// A check in flight ([`ProcessComm::start_check`]): its buffers, which MPI reads and fills
/// until its request completes, and its request.
pub(crate) struct PendingCheck {
    send: Vec<u64>,
    rows: Vec<u64>,
    req: std::mem::MaybeUninit<ffi::MPI_Request>,
}

impl PendingCheck {
    /// The check's request, to complete (`MPI_Waitall` or polling).
    pub(crate) fn request(&mut self) -> &mut ffi::MPI_Request {
        // SAFETY: `start_check` wrote the request when it posted the allreduce.
        unsafe { self.req.assume_init_mut() }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::select::{Algorithm, Broadcast, Reduce};

    #[test]
    fn descriptions_name_every_field() {
        let call = Call::of::<u64>(
            Kind::Coll(Collective::Allreduce),
            Algorithm::Chain {
                block: crate::select::Block::Auto,
            }
            .id(),
            7,
        )
        .in_blocks(3)
        .with_op::<u64, _>(&crate::op::non_commutative(|a: &u64, b: &u64| a ^ b));
        assert_eq!(
            describe(&call.words()),
            format!(
                "allreduce of 7 elements of 8 bytes (type {:#010x}) with the chain algorithm \
                 in blocks of 3 and op a non-commutative user op (type hash {:#010x})",
                type_fingerprint::<u64>() >> 32,
                call.words()[6] as u32
            )
        );
        let b = Call::of::<u8>(
            Kind::Coll(Collective::Broadcast),
            Broadcast::Binomial.id(),
            0,
        )
        .at(2);
        assert!(describe(&b.words()).ends_with("with the binomial algorithm at root 2"));
        assert_eq!(describe(&Call::barrier().words()), "barrier");
        assert_eq!(
            describe(&Call::barrier().in_context(2).words()),
            "barrier on duplicate 2 of the team's communicator"
        );
        assert_eq!(describe(&Call::dup().words()), "dup");
        assert_ne!(Call::dup().words(), Call::barrier().words());
        let m = Call::of::<i32>(Kind::Coll(Collective::Reduce), Reduce::Native.id(), 5)
            .with_op::<i32, _>(&crate::op::Max);
        assert!(
            describe(&m.words()).ends_with("with the native algorithm and op max"),
            "{}",
            describe(&m.words())
        );
        let s = Call::of::<i32>(Kind::Coll(Collective::Reduce), Reduce::Native.id(), 5)
            .with_op::<i32, _>(&crate::op::Sum);
        assert_ne!(m.words(), s.words());
    }
}
