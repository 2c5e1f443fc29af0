//! What the C layer costs: an 8-byte allreduce called from C (`corecoll_allreduce`: the handle
//! and argument checks, the type dispatch, the op as a code) against the same allreduce called
//! in Rust on the same communicator (with `op::Sum`, and with the C layer's op value), on one
//! team of two joined threads, in interleaved rounds (medians). A measurement, not a check:
//!
//! ```text
//! cargo test --release -p corecoll-c --lib -- --ignored --nocapture c_call_against_rust_call
//! ```

use crate::seat::{call_in, comm_of, Ctx};
use crate::types::{CORECOLL_DOUBLE, CORECOLL_SUM};
use crate::*;
use std::time::Instant;

#[test]
#[ignore = "a measurement: run it with --ignored --nocapture"]
fn c_call_against_rust_call() {
    const ROUNDS: usize = 31;
    const REPS: usize = 20_000;
    let mut team = std::ptr::null_mut();
    // SAFETY: a valid out pointer.
    assert_eq!(unsafe { corecoll_team_create(2, &mut team) }, 0);
    let team_addr = team as usize;
    let times: Vec<RankTimes> = std::thread::scope(|s| {
        let ranks: Vec<_> = (0..2)
            .map(|rank| {
                s.spawn(move || {
                    let team = team_addr as *const seat::corecoll_team_t;
                    let mut comm = std::ptr::null_mut();
                    // SAFETY: a live team handle and a valid out pointer.
                    assert_eq!(unsafe { corecoll_join(team, rank, &mut comm) }, 0);
                    let (mut c_times, mut rust_times) = (Vec::new(), Vec::new());
                    for _ in 0..ROUNDS {
                        let mut x = 1.0f64;
                        let t0 = Instant::now();
                        for _ in 0..REPS {
                            let p = &mut x as *mut f64 as *mut std::ffi::c_void;
                            // SAFETY: a live communicator and one double.
                            let rc = unsafe {
                                coll::corecoll_allreduce(
                                    buf_in_place(),
                                    p,
                                    1,
                                    CORECOLL_DOUBLE,
                                    CORECOLL_SUM,
                                    comm,
                                )
                            };
                            assert_eq!(rc, 0);
                        }
                        c_times.push(t0.elapsed().as_secs_f64() / REPS as f64);
                        // SAFETY: as above.
                        let (seat, _) = unsafe { comm_of(comm) }.expect("a live communicator");
                        let mut took = 0.0;
                        let mut took_cop = 0.0;
                        let mut call = |ctx: &Ctx<'_, '_>| -> error::CResult<()> {
                            let t0 = Instant::now();
                            for _ in 0..REPS {
                                let mut x = [1.0f64];
                                ctx.world.allreduce(&mut x, corecoll_rs::op::Sum)?;
                            }
                            took = t0.elapsed().as_secs_f64() / REPS as f64;
                            let t0 = Instant::now();
                            for _ in 0..REPS {
                                let mut x = [1.0f64];
                                let op = types::COp::<f64>::new(CORECOLL_SUM)?;
                                ctx.world.allreduce(&mut x, op)?;
                            }
                            took_cop = t0.elapsed().as_secs_f64() / REPS as f64;
                            Ok(())
                        };
                        // SAFETY: the seat is live and this thread's.
                        unsafe { call_in(seat, &mut call) }.expect("the Rust calls");
                        rust_times.push((took, took_cop));
                    }
                    // SAFETY: as above.
                    assert_eq!(unsafe { corecoll_leave(comm) }, 0);
                    (c_times, rust_times)
                })
            })
            .collect();
        ranks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // SAFETY: no thread is joined any more.
    assert_eq!(unsafe { corecoll_team_free(team) }, 0);
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let rust: Vec<f64> = times[0].1.iter().map(|t| t.0).collect();
    let cop: Vec<f64> = times[0].1.iter().map(|t| t.1).collect();
    let (c, rust, cop) = (median(&times[0].0), median(&rust), median(&cop));
    println!(
        "8-byte allreduce, 2 joined threads, {ROUNDS} rounds of {REPS} (medians): C call \
         {:.1} ns, Rust call {:.1} ns (with the C layer's op value: {:.1} ns), C / Rust = {:.3}",
        c * 1e9,
        rust * 1e9,
        cop * 1e9,
        c / rust
    );
}

/// One rank's times per round: the C calls', and the Rust calls' (with `op::Sum`, with the C
/// layer's op value).
type RankTimes = (Vec<f64>, Vec<(f64, f64)>);

/// `CORECOLL_IN_PLACE`.
fn buf_in_place() -> *const std::ffi::c_void {
    buf::IN_PLACE as *const std::ffi::c_void
}
