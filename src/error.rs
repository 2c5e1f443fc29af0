//! The crate's error type. Every variant names the rank that reports it and, where there is
//! one, the peer and the operation, so that the message alone says what went wrong where.
//!
//! Ranks are ranks of the communicator the failing call was made on, except in
//! [`Error::Panicked`], which names the team rank (the rank in the world communicator).

use std::time::Duration;

/// Result of corecoll's operations.
pub type Result<T> = std::result::Result<T, Error>;

/// Why an operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A team or run was asked for zero ranks.
    #[error("a team needs at least one rank (asked for 0)")]
    ZeroRanks,
    /// A call named a rank the communicator does not have.
    #[error("rank {rank}: {op} names rank {peer}, but the communicator has only {size} ranks")]
    RankOutOfRange {
        /// The calling rank.
        rank: usize,
        /// The operation.
        op: &'static str,
        /// The rank named.
        peer: usize,
        /// The communicator's size.
        size: usize,
    },
    /// A rank sent or received something that could never complete because it would wait
    /// for itself.
    #[error("rank {rank}: {op} with itself cannot complete: {why}")]
    SelfDeadlock {
        /// The calling rank.
        rank: usize,
        /// The operation.
        op: &'static str,
        /// Why it cannot complete.
        why: &'static str,
    },
    /// A receiver found a message other than the one it expected: another operation kind or
    /// call, another element type, or another length.
    #[error(
        "rank {rank}: {op} from rank {peer} expected {expected}, but rank {peer} sent {found}"
    )]
    Mismatch {
        /// The receiving rank.
        rank: usize,
        /// The sender.
        peer: usize,
        /// The receiving operation.
        op: &'static str,
        /// What the receiver expected.
        expected: String,
        /// What the sender sent.
        found: String,
    },
    /// The arguments of one call were inconsistent (lengths, counts, a core list).
    #[error("rank {rank}: {op}: {what}")]
    InvalidArgument {
        /// The calling rank.
        rank: usize,
        /// The operation.
        op: &'static str,
        /// What is wrong.
        what: String,
    },
    /// The requested algorithm cannot do what was asked (for example keep the rank order of
    /// a non-commutative op).
    #[error("rank {rank}: {op}: {what}")]
    Unsupported {
        /// The calling rank.
        rank: usize,
        /// The operation.
        op: &'static str,
        /// What cannot be done, and what to use instead.
        what: String,
    },
    /// A wait lasted longer than the team's timeout.
    #[error("rank {rank}: {op} waited {waited:?} for rank {peer} and timed out")]
    Timeout {
        /// The waiting rank.
        rank: usize,
        /// The rank it waited for.
        peer: usize,
        /// The operation.
        op: &'static str,
        /// How long it waited.
        waited: Duration,
    },
    /// The peer a call waits for has already returned from the run's closure without sending
    /// what the call needs (it skipped a call, or sent to someone else).
    #[error("rank {rank}: {op} waits for rank {peer}, which has already returned from the run")]
    PeerExited {
        /// The waiting rank.
        rank: usize,
        /// The rank that has returned.
        peer: usize,
        /// The operation.
        op: &'static str,
    },
    /// Every rank of the run that has not returned is blocked waiting for another rank, and no
    /// message in flight can wake any of them: the program's own deadlock (two ranks that both
    /// receive first, say). Found among the threads of one process when the last of them is
    /// about to sleep, without a timeout; between the processes of a hybrid team only the
    /// team's timeout finds one. `waits` names the cycle of waits, in team ranks.
    #[error("rank {rank}: {op} can never complete, every rank that has not returned is blocked: {waits}")]
    Deadlock {
        /// The blocked rank.
        rank: usize,
        /// The operation it is blocked in.
        op: &'static str,
        /// Who waits for whom, in team ranks (the rank in the run's world).
        waits: String,
    },
    /// A rank's closure panicked.
    #[error("rank {rank} panicked: {message}")]
    Panicked {
        /// The team rank that panicked.
        rank: usize,
        /// The panic's message.
        message: String,
    },
    /// This call could not go on because another call of the run failed first; `cause` is that
    /// first failure, on whichever rank it happened.
    #[error("rank {rank}: {op} abandoned because the run failed: {cause}")]
    Aborted {
        /// The rank of this call.
        rank: usize,
        /// This call's operation.
        op: &'static str,
        /// The run's first failure.
        cause: Box<Error>,
    },
    /// A call of a team whose ranks span MPI processes was abandoned because the ranks of
    /// another process failed before it (their own error is reported in that process).
    #[error(
        "rank {rank}: {op} abandoned because the run failed in MPI process {process} (its \
         ranks report the cause)"
    )]
    ProcessFailed {
        /// The rank of this call.
        rank: usize,
        /// This call's operation.
        op: &'static str,
        /// The MPI process (its rank in the team's MPI communicator) whose run failed.
        process: usize,
    },
    /// A thread could not join a team as asked ([`Team::join`](crate::Team::join)): the team
    /// has threads of its own, the rank is out of range or has joined the current run
    /// already; or `Team::run` was called on a team whose ranks join.
    #[error("team rank {rank}: join: {what}")]
    Join {
        /// The team rank asked for.
        rank: usize,
        /// What is wrong.
        what: String,
    },
    /// `Team::run` was called while the team was already running (from another thread, or
    /// from inside one of its own ranks).
    #[error("the team is already running a closure; runs of one team do not nest or overlap")]
    TeamBusy,
    /// Pinning could not be set up as asked.
    #[error("pinning: {0}")]
    Pinning(String),
    /// A topology could not be made as described (an empty or malformed shape).
    #[error("topology: {0}")]
    Topology(String),
    /// A calibration profile could not be read: the file (if any) and what is wrong with it
    /// (`Profile::load`, `Profile::from_json`, `CORECOLL_PROFILE`).
    #[error("profile{}: {what}", path.as_ref().map(|p| format!(" {p}")).unwrap_or_default())]
    Profile {
        /// The file, if the profile came from one.
        path: Option<String>,
        /// What is wrong.
        what: String,
    },
    /// Algorithm rules or a decision table could not be read (`tuning`): where they came
    /// from (an environment variable, `TeamBuilder::algorithm_rules`, the profile) and what is
    /// wrong.
    #[error("algorithm rules from {origin}: {what}")]
    Tuning {
        /// Where the rules came from.
        origin: String,
        /// What is wrong.
        what: String,
    },
    /// An environment variable the crate reads is set to a value it does not take (the
    /// team's build refuses it rather than ignore it; docs/usage.md lists the variables).
    #[error("environment variable {name}={value:?} is not accepted: it takes {accepted}")]
    Environment {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it takes.
        accepted: &'static str,
    },
    /// A rank thread could not be started.
    #[error("could not start rank thread {rank}: {message}")]
    Spawn {
        /// The team rank of the thread.
        rank: usize,
        /// The operating system's message.
        message: String,
    },
    /// The cost-model simulator (module `sim`) could not carry out a schedule: one that
    /// cannot finish (a message nobody sends), or a case it cannot simulate.
    #[error("simulator: {what}")]
    Simulation {
        /// What went wrong.
        what: String,
    },
}

impl Error {
    /// The run's root cause: the error itself, or what an [`Error::Aborted`] wraps.
    pub fn root_cause(&self) -> &Error {
        match self {
            Error::Aborted { cause, .. } => cause.root_cause(),
            other => other,
        }
    }
}

/// The message of a caught panic.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic payload that is not a string)".to_string()
    }
}
