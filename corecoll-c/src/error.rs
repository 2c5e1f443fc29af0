//! Return codes: `CORECOLL_SUCCESS`, one code per kind of the crate's `Error` and one per
//! mistake only a C caller can make (a NULL or freed handle, an unknown type or op code, a
//! count that does not fit); each failing call leaves its message as the calling thread's last
//! error (`corecoll_last_error`). A panic inside the library never crosses into C
//! (`guard`).

use corecoll_rs::Error;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The call succeeded.
pub const CORECOLL_SUCCESS: c_int = 0;
/// A team was asked for zero (or a negative number of) ranks.
pub const CORECOLL_ERR_ZERO_RANKS: c_int = 1;
/// A call named a rank the communicator does not have.
pub const CORECOLL_ERR_RANK: c_int = 2;
/// A call could never complete because a rank would wait for itself.
pub const CORECOLL_ERR_SELF_DEADLOCK: c_int = 3;
/// The ranks did not make the same call (another collective, length, type, root or op), or a
/// message was longer than the receive buffer or of another type.
pub const CORECOLL_ERR_MISMATCH: c_int = 4;
/// The arguments of one call were inconsistent (lengths, counts, displacements).
pub const CORECOLL_ERR_ARG: c_int = 5;
/// The algorithm or the kind of team cannot do what was asked.
pub const CORECOLL_ERR_UNSUPPORTED: c_int = 6;
/// A wait lasted longer than the team's timeout.
pub const CORECOLL_ERR_TIMEOUT: c_int = 7;
/// The peer a call waits for has left the run.
pub const CORECOLL_ERR_PEER_EXITED: c_int = 8;
/// Every rank that has not left is blocked waiting for another: the program's deadlock.
pub const CORECOLL_ERR_DEADLOCK: c_int = 9;
/// A rank panicked (inside a user op, or in Rust code of the program).
pub const CORECOLL_ERR_PANICKED: c_int = 10;
/// The call was abandoned because another call of the run failed first.
pub const CORECOLL_ERR_ABORTED: c_int = 11;
/// The run failed in another MPI process.
pub const CORECOLL_ERR_PROCESS_FAILED: c_int = 12;
/// The team is in use (freed while threads are joined to it).
pub const CORECOLL_ERR_TEAM_BUSY: c_int = 13;
/// Pinning could not be set up as asked.
pub const CORECOLL_ERR_PINNING: c_int = 14;
/// The topology could not be made as described.
pub const CORECOLL_ERR_TOPOLOGY: c_int = 15;
/// The calibration profile (`CORECOLL_PROFILE`) could not be read.
pub const CORECOLL_ERR_PROFILE: c_int = 16;
/// An algorithm rule (`CORECOLL_ALLREDUCE`, …) did not parse.
pub const CORECOLL_ERR_TUNING: c_int = 17;
/// One of the library's environment variables has a value it does not take.
pub const CORECOLL_ERR_ENVIRONMENT: c_int = 18;
/// A thread could not be started.
pub const CORECOLL_ERR_SPAWN: c_int = 19;
/// The simulator refused a case.
pub const CORECOLL_ERR_SIMULATION: c_int = 20;
/// A thread could not join as asked: a rank out of range, or joined twice in one run.
pub const CORECOLL_ERR_JOIN: c_int = 21;
/// A NULL, freed or foreign handle (a communicator used by another thread than its own).
pub const CORECOLL_ERR_HANDLE: c_int = 30;
/// An unknown element type code.
pub const CORECOLL_ERR_TYPE: c_int = 31;
/// An unknown or freed op code, or an op the element type does not take.
pub const CORECOLL_ERR_OP: c_int = 32;
/// A negative count, or one whose bytes do not fit in memory.
pub const CORECOLL_ERR_COUNT: c_int = 33;
/// A NULL buffer with a non-zero count, or a buffer not aligned for its element type.
pub const CORECOLL_ERR_BUFFER: c_int = 34;
/// A NULL, freed or inactive request.
pub const CORECOLL_ERR_REQUEST: c_int = 35;
/// The library failed inside (a bug: its message says where).
pub const CORECOLL_ERR_INTERNAL: c_int = 36;
/// An error of a kind this version of the C API does not name.
pub const CORECOLL_ERR_OTHER: c_int = 37;

/// A failure of a C call: one of the crate's errors, or a mistake of the C caller's.
#[derive(Debug)]
pub(crate) enum CError {
    /// The crate's error (boxed: a result that carries no error, as most do, stays small).
    Rust(Box<Error>),
    /// A bad handle: what it was.
    Handle(&'static str),
    /// A rank (a root, a peer) that names none: why.
    Rank(String),
    /// An unknown element type code.
    Type(c_int),
    /// An unknown op code.
    Op(c_int),
    /// An op the type does not take: (op, type).
    OpType(c_int, c_int),
    /// A count that does not fit: what it counts.
    Count(&'static str, i64),
    /// A bad buffer: which.
    Buffer(&'static str),
    /// A bad request: why.
    Request(&'static str),
    /// A call this kind of communicator cannot make from C: why.
    Unsupported(String),
    /// A panic inside the library.
    Internal(String),
}

impl From<Error> for CError {
    fn from(e: Error) -> Self {
        CError::Rust(Box::new(e))
    }
}

/// Result of the C layer's calls.
pub(crate) type CResult<T> = Result<T, CError>;

impl CError {
    /// The return code.
    pub(crate) fn code(&self) -> c_int {
        match self {
            CError::Rust(e) => rust_code(e),
            CError::Handle(_) => CORECOLL_ERR_HANDLE,
            CError::Rank(_) => CORECOLL_ERR_RANK,
            CError::Type(_) => CORECOLL_ERR_TYPE,
            CError::Op(_) | CError::OpType(..) => CORECOLL_ERR_OP,
            CError::Count(..) => CORECOLL_ERR_COUNT,
            CError::Buffer(_) => CORECOLL_ERR_BUFFER,
            CError::Request(_) => CORECOLL_ERR_REQUEST,
            CError::Unsupported(_) => CORECOLL_ERR_UNSUPPORTED,
            CError::Internal(_) => CORECOLL_ERR_INTERNAL,
        }
    }

    /// The message.
    fn message(&self) -> String {
        match self {
            CError::Rust(e) => e.to_string(),
            CError::Handle(what) => format!("a NULL, freed or foreign {what}"),
            CError::Rank(why) => why.clone(),
            CError::Type(t) => format!("unknown element type code {t}"),
            CError::Op(o) => format!("unknown or freed op code {o}"),
            CError::OpType(o, t) => format!("op code {o} does not apply to element type code {t}"),
            CError::Count(what, n) => format!("{what} {n} is negative or too large"),
            CError::Buffer(which) => {
                format!("{which} is NULL with a non-zero count, or not aligned for its type")
            }
            CError::Request(why) => format!("bad request: {why}"),
            CError::Unsupported(why) => why.clone(),
            CError::Internal(why) => format!("internal error: {why}"),
        }
    }
}

/// The code of one of the crate's errors.
fn rust_code(e: &Error) -> c_int {
    match e {
        Error::ZeroRanks => CORECOLL_ERR_ZERO_RANKS,
        Error::RankOutOfRange { .. } => CORECOLL_ERR_RANK,
        Error::SelfDeadlock { .. } => CORECOLL_ERR_SELF_DEADLOCK,
        Error::Mismatch { .. } => CORECOLL_ERR_MISMATCH,
        Error::InvalidArgument { .. } => CORECOLL_ERR_ARG,
        Error::Unsupported { .. } => CORECOLL_ERR_UNSUPPORTED,
        Error::Timeout { .. } => CORECOLL_ERR_TIMEOUT,
        Error::PeerExited { .. } => CORECOLL_ERR_PEER_EXITED,
        Error::Deadlock { .. } => CORECOLL_ERR_DEADLOCK,
        Error::Panicked { .. } => CORECOLL_ERR_PANICKED,
        Error::Aborted { .. } => CORECOLL_ERR_ABORTED,
        Error::ProcessFailed { .. } => CORECOLL_ERR_PROCESS_FAILED,
        Error::TeamBusy => CORECOLL_ERR_TEAM_BUSY,
        Error::Pinning(_) => CORECOLL_ERR_PINNING,
        Error::Topology(_) => CORECOLL_ERR_TOPOLOGY,
        Error::Profile { .. } => CORECOLL_ERR_PROFILE,
        Error::Tuning { .. } => CORECOLL_ERR_TUNING,
        Error::Environment { .. } => CORECOLL_ERR_ENVIRONMENT,
        Error::Spawn { .. } => CORECOLL_ERR_SPAWN,
        Error::Simulation { .. } => CORECOLL_ERR_SIMULATION,
        Error::Join { .. } => CORECOLL_ERR_JOIN,
        _ => CORECOLL_ERR_OTHER,
    }
}

thread_local! {
    /// The message of the calling thread's last failed call.
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `e` as the thread's last error; its code.
pub(crate) fn fail(e: CError) -> c_int {
    let text = e.message().replace('\0', " ");
    LAST.with(|l| *l.borrow_mut() = CString::new(text).unwrap_or_default());
    e.code()
}

/// Runs a C call's body: its code, with a panic inside the library made
/// `CORECOLL_ERR_INTERNAL` rather than an unwind into C.
pub(crate) fn guard(body: impl FnOnce() -> CResult<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => CORECOLL_SUCCESS,
        Ok(Err(e)) => fail(e),
        Err(payload) => fail(CError::Internal(panic_text(payload.as_ref()))),
    }
}

/// A panic's message.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

/// The calling thread's last error message (empty if none): valid until the thread's next
/// failing call.
#[no_mangle]
pub extern "C" fn corecoll_last_error() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

/// A fixed description of return code `code`.
#[no_mangle]
pub extern "C" fn corecoll_error_string(code: c_int) -> *const c_char {
    let s: &'static CStr = match code {
        CORECOLL_SUCCESS => c"success",
        CORECOLL_ERR_ZERO_RANKS => c"a team needs at least one rank",
        CORECOLL_ERR_RANK => c"a rank out of range",
        CORECOLL_ERR_SELF_DEADLOCK => c"a call that would wait for itself",
        CORECOLL_ERR_MISMATCH => c"the ranks made different calls, or a message did not fit",
        CORECOLL_ERR_ARG => c"inconsistent arguments",
        CORECOLL_ERR_UNSUPPORTED => c"not supported",
        CORECOLL_ERR_TIMEOUT => c"a wait timed out",
        CORECOLL_ERR_PEER_EXITED => c"the peer has left the run",
        CORECOLL_ERR_DEADLOCK => c"every rank is blocked: a deadlock",
        CORECOLL_ERR_PANICKED => c"a rank panicked",
        CORECOLL_ERR_ABORTED => c"abandoned: another call of the run failed",
        CORECOLL_ERR_PROCESS_FAILED => c"the run failed in another MPI process",
        CORECOLL_ERR_TEAM_BUSY => c"the team is in use",
        CORECOLL_ERR_PINNING => c"pinning failed",
        CORECOLL_ERR_TOPOLOGY => c"bad topology",
        CORECOLL_ERR_PROFILE => c"the calibration profile could not be read",
        CORECOLL_ERR_TUNING => c"an algorithm rule did not parse",
        CORECOLL_ERR_ENVIRONMENT => c"a bad value of a CORECOLL_ environment variable",
        CORECOLL_ERR_SPAWN => c"a thread could not be started",
        CORECOLL_ERR_SIMULATION => c"the simulator refused the case",
        CORECOLL_ERR_JOIN => c"the thread could not join as asked",
        CORECOLL_ERR_HANDLE => c"a NULL, freed or foreign handle",
        CORECOLL_ERR_TYPE => c"an unknown element type",
        CORECOLL_ERR_OP => c"an unknown op, or one the type does not take",
        CORECOLL_ERR_COUNT => c"a count that is negative or too large",
        CORECOLL_ERR_BUFFER => c"a NULL or misaligned buffer",
        CORECOLL_ERR_REQUEST => c"a NULL, freed or inactive request",
        CORECOLL_ERR_INTERNAL => c"an internal error",
        CORECOLL_ERR_OTHER => c"an error of another kind",
        _ => c"not a corecoll return code",
    };
    s.as_ptr()
}
