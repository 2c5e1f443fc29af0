//! The C API of corecoll: `libcorecoll.so`, `libcorecoll.a` and `include/corecoll.h`.
//!
//! The threads of a C, C++ or Fortran program's OpenMP region join a team as its ranks and call
//! corecoll's collectives, point-to-point and requests in MPI's argument order, with MPI's
//! names prefixed `corecoll_` (docs/c.md):
//!
//! ```c
//! corecoll_team_t *team;
//! corecoll_team_create(nthreads, &team);
//! #pragma omp parallel num_threads(nthreads)
//! {
//!     corecoll_comm_t *comm;
//!     corecoll_join(team, omp_get_thread_num(), &comm);
//!     corecoll_allreduce(CORECOLL_IN_PLACE, &dot, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
//!     corecoll_leave(comm);
//! }
//! corecoll_team_free(team);
//! ```
//!
//! Every function returns `CORECOLL_SUCCESS` or an error code (`corecoll_error_string`, and the
//! calling thread's `corecoll_last_error` message); none lets a panic cross into C. The
//! modules: teams and joins (`seat`), the collectives (`coll`), point-to-point (`p2p`),
//! requests (`requests`, `nonblocking`, `persistent`), element types and ops (`types`), buffers (`buf`) and return
//! codes (`error`).

#![allow(non_camel_case_types)]
// The functions take MPI's argument lists, and the helpers behind them pass them on.
#![allow(clippy::too_many_arguments)]

pub mod buf;
pub mod coll;
pub mod error;
pub mod nonblocking;
pub mod p2p;
pub mod persistent;
pub mod requests;
pub mod seat;
pub mod team;
pub mod types;

use error::{guard, CError};
use seat::{comm_of, corecoll_comm_t};
use std::ffi::c_int;
use team::corecoll_team_t;
use types::{corecoll_op_t, corecoll_user_function};

/// Makes a team of `nthreads` ranks whose ranks are the program's threads
/// (`corecoll_join`), in `*team`; its waits never time out.
///
/// # Safety
/// `team` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_team_create(
    nthreads: c_int,
    team: *mut *mut corecoll_team_t,
) -> c_int {
    // SAFETY: the caller's promise.
    unsafe { corecoll_team_create_timeout(nthreads, 0.0, team) }
}

/// `corecoll_team_create` whose waits fail with `CORECOLL_ERR_TIMEOUT` after
/// `timeout_seconds` (0: never), as does every rank's join when one never joins.
///
/// # Safety
/// As `corecoll_team_create`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_team_create_timeout(
    nthreads: c_int,
    timeout_seconds: f64,
    team: *mut *mut corecoll_team_t,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise.
        let out = unsafe { team.as_mut() }.ok_or(CError::Buffer("team"))?;
        let ranks = usize::try_from(nthreads).map_err(|_| corecoll_rs::Error::ZeroRanks)?;
        let mut builder = corecoll_rs::Team::builder().ranks(ranks).external();
        if timeout_seconds > 0.0 && timeout_seconds.is_finite() {
            builder = builder.timeout(std::time::Duration::from_secs_f64(timeout_seconds));
        }
        *out = team::new_team(builder.build()?);
        Ok(())
    })
}

/// Makes a team over the threads of every MPI process of the communicator `*mpi_comm` points
/// to, `nthreads` of them in this process; collective over its processes. `corecoll.h` calls it
/// as `corecoll_team_create_mpi(MPI_Comm comm, int nthreads, corecoll_team_t **team)` where
/// `mpi.h` is included first. Rank 0 of each process calls MPI: under `MPI_THREAD_FUNNELED`
/// it joins from the thread that initialised MPI (an OpenMP region's master thread). Without
/// MPI support in the library: `CORECOLL_ERR_UNSUPPORTED`.
///
/// # Safety
/// `mpi_comm` points to a valid `MPI_Comm` of the MPI this library was built with; `team` as
/// in `corecoll_team_create`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_team_create_mpi_handle(
    mpi_comm: *const std::ffi::c_void,
    nthreads: c_int,
    team: *mut *mut corecoll_team_t,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise.
        let out = unsafe { team.as_mut() }.ok_or(CError::Buffer("team"))?;
        if mpi_comm.is_null() {
            return Err(CError::Handle("MPI communicator"));
        }
        let ranks = usize::try_from(nthreads).map_err(|_| corecoll_rs::Error::ZeroRanks)?;
        // SAFETY: as above.
        let built = unsafe { mpi_team(mpi_comm, ranks) }?;
        *out = team::new_team(built);
        Ok(())
    })
}

/// The team over `*mpi_comm`'s processes.
///
/// # Safety
/// As `corecoll_team_create_mpi_handle`.
#[cfg(feature = "mpi")]
unsafe fn mpi_team(
    mpi_comm: *const std::ffi::c_void,
    ranks: usize,
) -> error::CResult<corecoll_rs::Team> {
    use mpi::raw::FromRaw;
    // SAFETY: the caller's promise: it points to an `MPI_Comm` of this MPI.
    let raw = unsafe { *(mpi_comm as *const mpi::ffi::MPI_Comm) };
    let mut dup = std::mem::MaybeUninit::<mpi::ffi::MPI_Comm>::uninit();
    // SAFETY: `raw` is a valid communicator; MPI writes the duplicate.
    let rc = unsafe { mpi::ffi::MPI_Comm_dup(raw, dup.as_mut_ptr()) };
    if rc != 0 {
        return Err(CError::Unsupported(format!(
            "MPI_Comm_dup failed with code {rc}"
        )));
    }
    // SAFETY: a live communicator of our own, freed when `comm` drops.
    let comm = unsafe { mpi::topology::SimpleCommunicator::from_raw(dup.assume_init()) };
    let team = corecoll_rs::Team::builder()
        .ranks(ranks)
        .external()
        .mpi(&comm)?;
    Ok(team)
}

/// Without MPI support: an error.
#[cfg(not(feature = "mpi"))]
unsafe fn mpi_team(_: *const std::ffi::c_void, _: usize) -> error::CResult<corecoll_rs::Team> {
    Err(CError::Unsupported(
        "this libcorecoll was built without MPI (cargo feature `mpi` of corecoll-c)".into(),
    ))
}

/// Frees a team: `CORECOLL_ERR_TEAM_BUSY` while threads are joined to it. A team over MPI
/// processes is freed before `MPI_Finalize`, on a thread that may call MPI.
///
/// # Safety
/// `team` is NULL or a team handle of this library's.
#[no_mangle]
pub unsafe extern "C" fn corecoll_team_free(team: *mut corecoll_team_t) -> c_int {
    // SAFETY: the caller's promise.
    guard(|| unsafe { team::free_team(team) })
}

/// The number of ranks of this process in `team`.
///
/// # Safety
/// As `corecoll_team_free`; `size` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_team_size(
    team: *const corecoll_team_t,
    size: *mut c_int,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promises.
        let t = unsafe { team::team_of(team, None) }?;
        // SAFETY: `size` is NULL or writable (the caller's promise).
        let out = unsafe { size.as_mut() }.ok_or(CError::Buffer("size"))?;
        *out = c_int::try_from(t.size()).unwrap_or(c_int::MAX);
        Ok(())
    })
}

/// Joins `team`'s current run as rank `rank` (of this process's ranks) on the calling
/// thread, and hands back the run's communicator in `*comm`: every rank joins once per run,
/// and the run ends when every rank has called `corecoll_leave`.
///
/// # Safety
/// `team` as in `corecoll_team_free`; `comm` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_join(
    team: *const corecoll_team_t,
    rank: c_int,
    comm: *mut *mut corecoll_comm_t,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promises.
        let out = unsafe { comm.as_mut() }.ok_or(CError::Buffer("comm"))?;
        let rank = usize::try_from(rank).map_err(|_| corecoll_rs::Error::Join {
            rank: usize::MAX,
            what: format!("rank {rank} is negative"),
        })?;
        // SAFETY: `team` as in `corecoll_team_free` (the caller's promise).
        let t = unsafe { team::team_of(team, Some(rank)) }?;
        let handle = seat::join(t, rank)?;
        *out = handle as *const corecoll_comm_t as *mut corecoll_comm_t;
        Ok(())
    })
}

/// Leaves the run joined by `corecoll_join` (its communicator, and the splits and dups of
/// it, are freed), without waiting for the run's other ranks (rank 0 of each process of a
/// hybrid team does wait: it ends the run between the processes); the thread's next
/// `corecoll_join` waits for this run to end. Requests never waited for complete first.
/// `CORECOLL_ERR_PANICKED`, `CORECOLL_ERR_TIMEOUT` or `CORECOLL_ERR_PROCESS_FAILED` if the run
/// has failed as a whole.
///
/// # Safety
/// `comm` is NULL or a communicator handle of this library's.
#[no_mangle]
pub unsafe extern "C" fn corecoll_leave(comm: *mut corecoll_comm_t) -> c_int {
    // SAFETY: the caller's promise.
    guard(|| unsafe { seat::leave(comm) })
}

/// The calling rank in `comm` (`MPI_Comm_rank`).
///
/// # Safety
/// `comm` as in `corecoll_leave`; `rank` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_comm_rank(
    comm: *const corecoll_comm_t,
    rank: *mut c_int,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe { query(comm, rank, |c| c.rank()) }
}

/// The number of ranks of `comm` (`MPI_Comm_size`).
///
/// # Safety
/// As `corecoll_comm_rank`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_comm_size(
    comm: *const corecoll_comm_t,
    size: *mut c_int,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe { query(comm, size, |c| c.size()) }
}

/// Writes `f(comm)` to `out`.
///
/// # Safety
/// As `corecoll_comm_rank`.
unsafe fn query(
    comm: *const corecoll_comm_t,
    out: *mut c_int,
    f: impl Fn(&corecoll_rs::Comm) -> usize,
) -> c_int {
    // SAFETY: the caller's promises.
    let out = unsafe { out.as_mut() };
    let Some(out) = out else {
        return error::fail(CError::Buffer("output"));
    };
    // SAFETY: as above.
    unsafe {
        coll::on_comm(comm, |c| {
            *out = c_int::try_from(f(c)).unwrap_or(c_int::MAX);
            Ok(())
        })
    }
}

/// The ranks that pass the same `color` form a new communicator, ordered by `key` then rank
/// (`MPI_Comm_split`); `CORECOLL_UNDEFINED` as the color gives NULL.
///
/// # Safety
/// `comm` as in `corecoll_leave`; `newcomm` writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_comm_split(
    comm: *const corecoll_comm_t,
    color: c_int,
    key: c_int,
    newcomm: *mut *mut corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe {
        derive(comm, newcomm, move |c| {
            let color = match color {
                p2p::CORECOLL_UNDEFINED => None,
                c if c >= 0 => Some(c as usize),
                c => {
                    return Err(CError::Unsupported(format!(
                        "color {c}: a color is ≥ 0 or CORECOLL_UNDEFINED"
                    )))
                }
            };
            let key = usize::try_from(key)
                .map_err(|_| CError::Unsupported(format!("key {key}: keys are ≥ 0")))?;
            Ok(c.split(color, key)?)
        })
    }
}

/// A communicator over the same ranks whose messages never meet `comm`'s (`MPI_Comm_dup`).
///
/// # Safety
/// As `corecoll_comm_split`.
#[no_mangle]
pub unsafe extern "C" fn corecoll_comm_dup(
    comm: *const corecoll_comm_t,
    newcomm: *mut *mut corecoll_comm_t,
) -> c_int {
    // SAFETY: the caller's promises.
    unsafe { derive(comm, newcomm, |c| Ok(Some(c.dup()?))) }
}

/// Makes a communicator from `comm` with `make` and hands back its handle (NULL for `None`).
///
/// # Safety
/// As `corecoll_comm_split`.
unsafe fn derive(
    comm: *const corecoll_comm_t,
    newcomm: *mut *mut corecoll_comm_t,
    make: impl Fn(&corecoll_rs::Comm) -> error::CResult<Option<corecoll_rs::Comm>>,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promises.
        let out = unsafe { newcomm.as_mut() }.ok_or(CError::Buffer("newcomm"))?;
        // SAFETY: as above.
        let (seat_ptr, index) = unsafe { comm_of(comm) }?;
        // SAFETY: `seat_ptr` is live and this thread's.
        *out = unsafe { seat::derive(seat_ptr, index, make) }?;
        Ok(())
    })
}

/// Frees a communicator made by `corecoll_comm_split` or `corecoll_comm_dup` and sets
/// `*comm` to NULL (`MPI_Comm_free`); the joined communicator is freed by
/// `corecoll_leave`. Requests on it still in flight complete normally: the communicator is
/// kept for them until the thread leaves.
///
/// # Safety
/// `comm` is writable and holds NULL or a communicator handle.
#[no_mangle]
pub unsafe extern "C" fn corecoll_comm_free(comm: *mut *mut corecoll_comm_t) -> c_int {
    guard(|| {
        // SAFETY: the caller's promises.
        let slot = unsafe { comm.as_mut() }.ok_or(CError::Buffer("comm"))?;
        // SAFETY: as above.
        let (seat_ptr, index) = unsafe { comm_of(*slot) }?;
        if index == 0 {
            return Err(CError::Unsupported(
                "the communicator of corecoll_join is freed by corecoll_leave".into(),
            ));
        }
        // SAFETY: as above.
        unsafe { seat::drop_comm(seat_ptr, *slot, index) }?;
        *slot = std::ptr::null_mut();
        Ok(())
    })
}

/// Makes a user op from `function` (MPI's `MPI_User_function` shape: `inoutvec[i] =
/// invec[i] ⊙ inoutvec[i]`, `invec` holding the lower ranks' operands) in `*op`
/// (`MPI_Op_create`); `commute` non-zero if it is commutative. The function must not call
/// corecoll.
///
/// # Safety
/// `op` NULL or writable; `function` a valid function of that shape.
#[no_mangle]
pub unsafe extern "C" fn corecoll_op_create(
    function: corecoll_user_function,
    commute: c_int,
    op: *mut corecoll_op_t,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise.
        let out = unsafe { op.as_mut() }.ok_or(CError::Buffer("op"))?;
        if function.is_none() {
            return Err(CError::Buffer("function"));
        }
        *out = types::create_user_op(function, commute != 0);
        Ok(())
    })
}

/// Frees a user op and sets `*op` to `CORECOLL_OP_NULL` (`MPI_Op_free`).
///
/// # Safety
/// `op` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn corecoll_op_free(op: *mut corecoll_op_t) -> c_int {
    guard(|| {
        // SAFETY: the caller's promise.
        let slot = unsafe { op.as_mut() }.ok_or(CError::Buffer("op"))?;
        types::free_user_op(*slot)?;
        *slot = types::CORECOLL_OP_NULL;
        Ok(())
    })
}

#[cfg(test)]
mod seat_tests;
#[cfg(test)]
mod speed;
