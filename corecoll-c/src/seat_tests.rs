//! A panic inside the library during a C call (which no correct call makes, so it is injected
//! here through `call_on` and `call_in`): the call returns `CORECOLL_ERR_INTERNAL`, the run
//! fails for every rank as a panicking rank does, the panicking rank's seat is spent (its
//! later calls and its leave are errors) and the team is joined afresh afterwards — with and
//! without the rank's request scope open.

use crate::error::{guard, CError};
use crate::seat::{call_in, call_on, comm_of, corecoll_comm_t};
use crate::types::{CORECOLL_DOUBLE, CORECOLL_SUM};
use crate::*;
use std::ptr::null_mut;

/// One rank's part: joins, opens its request scope if `scoped`, then rank 0 panics inside a
/// call while rank 1 makes a barrier; both leave, then join a second run that allreduces.
/// The return codes: (the injected call's, a call after it, the barrier's, the leave's, the
/// second run's allreduce's, its sum).
fn rank(team: usize, r: c_int, scoped: bool) -> (c_int, c_int, c_int, c_int, c_int, f64) {
    let team = team as *const team::corecoll_team_t;
    let mut comm: *mut corecoll_comm_t = null_mut();
    // SAFETY: a live team handle and a valid out pointer.
    assert_eq!(unsafe { corecoll_join(team, r, &mut comm) }, 0);
    if scoped {
        let mut req = null_mut();
        // SAFETY: a live communicator of this thread's and a valid out pointer.
        assert_eq!(unsafe { nonblocking::corecoll_ibarrier(comm, &mut req) }, 0);
        // SAFETY: the request just made.
        assert_eq!(unsafe { requests::corecoll_wait(&mut req, null_mut()) }, 0);
    }
    let (mut injected, mut after, mut barrier) = (0, 0, 0);
    if r == 0 {
        injected = guard(|| {
            // SAFETY: as above.
            let (seat, _) = unsafe { comm_of(comm) }?;
            if scoped {
                let mut call = |_: &seat::Ctx<'_, '_>| -> error::CResult<()> {
                    panic!("a panic injected into a request call")
                };
                // SAFETY: the seat of this thread's communicator.
                unsafe { call_in(seat, 0, &mut call) }
            } else {
                let call = |_: &corecoll_rs::Comm| -> error::CResult<()> {
                    panic!("a panic injected into a blocking call")
                };
                // SAFETY: as above.
                unsafe { call_on(seat, 0, call) }
            }
        });
        // SAFETY: as above.
        after = unsafe { coll::corecoll_barrier(comm) };
    } else {
        // SAFETY: as above.
        barrier = unsafe { coll::corecoll_barrier(comm) };
    }
    // SAFETY: the communicator joined above.
    let left = unsafe { corecoll_leave(comm) };
    // SAFETY: as above.
    assert_eq!(unsafe { corecoll_join(team, r, &mut comm) }, 0);
    let mut x = f64::from(r);
    let p = &mut x as *mut f64 as *mut std::ffi::c_void;
    // SAFETY: a live communicator and one double.
    let sum = unsafe {
        coll::corecoll_allreduce(
            buf::IN_PLACE as *const std::ffi::c_void,
            p,
            1,
            CORECOLL_DOUBLE,
            CORECOLL_SUM,
            comm,
        )
    };
    // SAFETY: as above.
    assert_eq!(unsafe { corecoll_leave(comm) }, 0);
    (injected, after, barrier, left, sum, x)
}

#[test]
fn a_panic_inside_a_call_fails_the_run_and_spends_the_seat() {
    let internal = CError::Internal(String::new()).code();
    for scoped in [false, true] {
        let mut team = null_mut();
        // SAFETY: a valid out pointer.
        let made = unsafe { corecoll_team_create_timeout(2, 60.0, &mut team) };
        assert_eq!(made, 0);
        let at = team as usize;
        let out: Vec<_> = std::thread::scope(|s| {
            let ranks: Vec<_> = (0..2)
                .map(|r| s.spawn(move || rank(at, r, scoped)))
                .collect();
            ranks.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // SAFETY: no thread is joined any more.
        assert_eq!(unsafe { corecoll_team_free(team) }, 0);
        let (injected, after, _, left0, sum0, x0) = out[0];
        let (_, _, barrier, left1, sum1, x1) = out[1];
        assert_eq!(injected, internal, "scoped {scoped}");
        assert_eq!(after, internal, "a call on a spent seat (scoped {scoped})");
        assert_ne!(left0, 0, "the panicking rank's leave (scoped {scoped})");
        assert_ne!(barrier, 0, "the other rank's barrier (scoped {scoped})");
        assert_eq!(left1, error::CORECOLL_ERR_PANICKED, "scoped {scoped}");
        assert_eq!(
            (sum0, sum1, x0, x1),
            (0, 0, 1.0, 1.0),
            "the next run (scoped {scoped})"
        );
    }
}
