//! A non-blocking allreduce that is one exchange (two ranks, a short vector, recursive
//! doubling): its request posts its message as it starts and receives the peer's without a
//! task, and must meet a peer that runs the same call as a task — because an earlier start on
//! the same shadow is still unfinished there — on the wire, with the blocking call's bits.
//! Mismatched calls fail on both ranks, whichever way each runs.

mod common;

use common::{float, matrix, matrix_op, mismatch, team};
use corecoll::{op, Algorithm, Request, Result};

/// The shadows a communicator's non-blocking collectives rotate over (`shm::SHADOWS`).
const SHADOWS: usize = 8;

#[test]
fn one_exchange_matches_the_blocking_call_whichever_way_each_rank_runs_it() {
    let out = team(2)
        .run(|comm| -> Result<()> {
            let r = comm.rank();
            for n in [0, 1, 3, 64] {
                let f: Vec<f64> = (0..n).map(|i| float(r, i, 11)).collect();
                let mut want = f.clone();
                comm.allreduce(&mut want, op::Sum)?;
                let m: Vec<[u32; 4]> = (0..n).map(|i| matrix(r, i)).collect();
                let mut want_m = m.clone();
                comm.allreduce(&mut want_m, matrix_op())?;
                // Start 0 on shadow 0; rank 1 completes it before it starts the others, so
                // its start 8 (shadow 0 again) runs as one exchange, while on rank 0 start 0
                // is still unfinished and start 8 waits for it as a task.
                let mut bufs: Vec<Vec<f64>> = vec![f.clone(); SHADOWS + 1];
                let mut mats = m.clone();
                comm.scope(|s| {
                    let mut it = bufs.iter_mut();
                    let first = s.iallreduce(it.next().expect("a buffer"), op::Sum)?;
                    let first = if r == 1 {
                        first.wait()?;
                        None
                    } else {
                        Some(first)
                    };
                    let mut reqs: Vec<Request<'_>> = Vec::new();
                    for b in it.by_ref().take(SHADOWS - 1) {
                        reqs.push(s.iallreduce(b, op::Sum)?);
                    }
                    let last = s.iallreduce(it.next().expect("a buffer"), op::Sum)?;
                    let noncomm = s.iallreduce(&mut mats, matrix_op())?;
                    reqs.extend(first);
                    reqs.push(last);
                    reqs.push(noncomm);
                    reqs.reverse();
                    Request::wait_all(reqs)
                })?;
                for b in &bufs {
                    let same = b.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                    assert!(same, "n = {n}, rank {r}: {b:?} against {want:?}");
                }
                assert_eq!(mats, want_m, "n = {n}, rank {r}");
            }
            Ok(())
        })
        .unwrap();
    for (r, o) in out.into_iter().enumerate() {
        o.unwrap_or_else(|e| panic!("rank {r}: {e}"));
    }
}

#[test]
fn one_exchange_advances_while_the_rank_waits_elsewhere() {
    // Rank 0 starts the allreduce and then waits for a message that rank 1 sends only after
    // its own allreduce has completed: rank 0's request must have posted its message at start.
    let out = team(2)
        .run(|comm| -> Result<f64> {
            let mut v = [comm.rank() as f64 + 1.0];
            let mut got = [0.0f64];
            comm.scope(|s| {
                let req = s.iallreduce(&mut v, op::Sum)?;
                if comm.rank() == 0 {
                    comm.recv(1, &mut got)?;
                    req.wait()
                } else {
                    req.wait()?;
                    comm.send(0, &[7.0f64])
                }
            })?;
            Ok(v[0] + got[0])
        })
        .unwrap();
    let sums: Vec<f64> = out.into_iter().map(|o| o.unwrap()).collect();
    assert_eq!(sums, [10.0, 3.0]);
}

#[test]
fn mismatched_calls_fail_on_both_ranks_whichever_way_each_runs() {
    // Rank 1's vector is 1, 2 or 100 000 elements against rank 0's 1: a type of the same
    // length, another short length (both one exchange), a long one (rank 1 runs a task, with
    // another algorithm).
    for (n1, int) in [(1, true), (2, false), (100_000, false)] {
        let out = team(2)
            .run(|comm| -> Result<()> {
                let n = if comm.rank() == 1 { n1 } else { 1 };
                let (mut ints, mut floats) = (vec![1u64; n], vec![1.0f64; n]);
                comm.scope(|s| {
                    if comm.rank() == 1 && int {
                        s.iallreduce(&mut ints, op::Sum)?.wait()
                    } else {
                        s.iallreduce_with(&mut floats, op::Sum, Algorithm::Auto)?
                            .wait()
                    }
                })
            })
            .unwrap();
        for (r, o) in out.into_iter().enumerate() {
            let e = o.expect_err("a mismatch");
            let cause = e.root_cause();
            assert!(mismatch(cause), "n1 = {n1}, rank {r}: {e}");
        }
    }
}
