//! What the C layer costs: an 8-byte allreduce called from C (`corecoll_allreduce`: the handle
//! and argument checks, the type dispatch, the op as a code) against the same allreduce called
//! in Rust on the same communicator (with `op::Sum`, and with the C layer's op value), on one
//! team of two joined threads, in interleaved rounds (medians); and the same on a team of one
//! rank, where the call is all overhead (no other thread, nothing to wait for). Measurements,
//! not checks:
//!
//! ```text
//! cargo test --release -p corecoll-c --lib -- --ignored --nocapture c_call_against_rust_call
//! cargo test --release -p corecoll-c --lib -- --ignored --nocapture c_call_on_one_rank
//! ```
//!
//! And what joining costs the C caller: `corecoll_join` and `corecoll_leave` against
//! `Team::seat` and `Seat::leave` on a team of one rank (`join_and_leave_on_one_rank`).

use crate::seat::{call_in, comm_of, Ctx};
use crate::types::{CORECOLL_DOUBLE, CORECOLL_SUM};
use crate::*;
use std::time::Instant;

/// Times per call of one round of `reps` 8-byte allreduces on joined communicator `comm`, in
/// seconds: through `corecoll_allreduce`, then in Rust with `op::Sum`, then in Rust with the C
/// layer's op value.
fn round(comm: *mut seat::corecoll_comm_t, reps: usize) -> (f64, f64, f64) {
    let mut x = 1.0f64;
    let t0 = Instant::now();
    for _ in 0..reps {
        let p = &mut x as *mut f64 as *mut std::ffi::c_void;
        // SAFETY: a live communicator of this thread's and one double.
        let rc = unsafe {
            coll::corecoll_allreduce(buf_in_place(), p, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm)
        };
        assert_eq!(rc, 0);
    }
    let c = t0.elapsed().as_secs_f64() / reps as f64;
    // SAFETY: as above.
    let (seat, _) = unsafe { comm_of(comm) }.expect("a live communicator");
    let (mut rust, mut cop) = (0.0, 0.0);
    let mut call = |ctx: &Ctx<'_, '_>| -> error::CResult<()> {
        let t0 = Instant::now();
        for _ in 0..reps {
            let mut x = std::hint::black_box([1.0f64]);
            ctx.comm.allreduce(&mut x, corecoll_rs::op::Sum)?;
        }
        rust = t0.elapsed().as_secs_f64() / reps as f64;
        let t0 = Instant::now();
        for _ in 0..reps {
            let mut x = std::hint::black_box([1.0f64]);
            let op = types::COp::<f64>::new(CORECOLL_SUM)?;
            ctx.comm.allreduce(&mut x, op)?;
        }
        cop = t0.elapsed().as_secs_f64() / reps as f64;
        Ok(())
    };
    // SAFETY: the seat is live and this thread's.
    unsafe { call_in(seat, 0, &mut call) }.expect("the Rust calls");
    (c, rust, cop)
}

/// `rounds` rounds of `reps` calls on every rank of a team of `p` joined threads: rank 0's
/// medians (C call, Rust call, Rust call with the C op value), in nanoseconds.
fn measure(p: usize, rounds: usize, reps: usize) -> (f64, f64, f64) {
    let mut team = std::ptr::null_mut();
    // SAFETY: a valid out pointer.
    assert_eq!(unsafe { corecoll_team_create(p as i32, &mut team) }, 0);
    let team_addr = team as usize;
    let times: Vec<Vec<(f64, f64, f64)>> = std::thread::scope(|s| {
        let ranks: Vec<_> = (0..p)
            .map(|rank| {
                s.spawn(move || {
                    let team = team_addr as *const team::corecoll_team_t;
                    let mut comm = std::ptr::null_mut();
                    // SAFETY: a live team handle and a valid out pointer.
                    assert_eq!(unsafe { corecoll_join(team, rank as i32, &mut comm) }, 0);
                    let times = (0..rounds).map(|_| round(comm, reps)).collect();
                    // SAFETY: the communicator joined above.
                    assert_eq!(unsafe { corecoll_leave(comm) }, 0);
                    times
                })
            })
            .collect();
        ranks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // SAFETY: no thread is joined any more.
    assert_eq!(unsafe { corecoll_team_free(team) }, 0);
    let median = |f: fn(&(f64, f64, f64)) -> f64| {
        let mut v: Vec<f64> = times[0].iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] * 1e9
    };
    (median(|t| t.0), median(|t| t.1), median(|t| t.2))
}

#[test]
#[ignore = "a measurement: run it with --ignored --nocapture"]
fn c_call_against_rust_call() {
    let (rounds, reps) = (31, 20_000);
    let (c, rust, cop) = measure(2, rounds, reps);
    println!(
        "8-byte allreduce, 2 joined threads, {rounds} rounds of {reps} (medians): C call \
         {c:.1} ns, Rust call {rust:.1} ns (with the C layer's op value: {cop:.1} ns), \
         C / Rust = {:.3}",
        c / rust
    );
}

#[test]
#[ignore = "a measurement: run it with --ignored --nocapture"]
fn c_call_on_one_rank() {
    let (rounds, reps) = (15, 200_000);
    let (c, rust, cop) = measure(1, rounds, reps);
    println!(
        "8-byte allreduce on one rank, {rounds} rounds of {reps} (medians): C call {c:.1} ns, \
         Rust call {rust:.1} ns (with the C layer's op value: {cop:.1} ns): the C layer's own \
         cost {:.1} ns",
        c - rust
    );
}

#[test]
#[ignore = "a measurement: run it with --ignored --nocapture"]
fn join_and_leave_on_one_rank() {
    let (rounds, reps) = (15, 100_000);
    let mut team = std::ptr::null_mut();
    // SAFETY: a valid out pointer.
    assert_eq!(unsafe { corecoll_team_create(1, &mut team) }, 0);
    let rust = corecoll_rs::Team::builder()
        .ranks(1)
        .external()
        .build()
        .expect("a team");
    let (mut c, mut r) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t0 = Instant::now();
        for _ in 0..reps {
            let mut comm = std::ptr::null_mut();
            // SAFETY: a live team handle and a valid out pointer; then the joined handle.
            unsafe {
                assert_eq!(corecoll_join(team, 0, &mut comm), 0);
                assert_eq!(corecoll_leave(comm), 0);
            }
        }
        c.push(t0.elapsed().as_secs_f64() / reps as f64);
        let t0 = Instant::now();
        for _ in 0..reps {
            rust.seat(0).expect("seat").leave().expect("leave");
        }
        r.push(t0.elapsed().as_secs_f64() / reps as f64);
    }
    // SAFETY: no thread is joined any more.
    assert_eq!(unsafe { corecoll_team_free(team) }, 0);
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] * 1e9
    };
    let (c, r) = (median(c), median(r));
    println!(
        "join and leave on one rank, {rounds} rounds of {reps} (medians): corecoll_join + \
         corecoll_leave {c:.1} ns, Team::seat + Seat::leave {r:.1} ns"
    );
}

/// `CORECOLL_IN_PLACE`.
fn buf_in_place() -> *const std::ffi::c_void {
    buf::IN_PLACE as *const std::ffi::c_void
}
