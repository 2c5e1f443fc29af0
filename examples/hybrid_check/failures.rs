//! The failure checks: calls that must fail on every rank of every process — never hang, never
//! return a wrong answer — each in a run of its own (a failed call fails the rest of its run),
//! and then a normal run on the same team, which must work.
//!
//! "Process 1" is the second process (the second group of ranks in `--local` mode); the checks
//! that need one are skipped on a layout of one process.

use crate::cases::{inputs, reduction};
use crate::collectives::note;
use crate::suite::{Outcome, RunFails, Suite};
use corecoll::algorithm::Barrier;
use corecoll::{op, Error};

/// The start of the message of the panics the checks cause on purpose (not printed).
pub const INTENTIONAL: &str = "the intentional panic of a failure check";

/// Every failure check, then the normal run.
pub fn check_all(s: &Suite<'_>) {
    // The panics of check (c) are expected: keep them out of the log, and every other one in.
    crate::suite::quiet_panics(INTENTIONAL);
    let p = s.ctx.size();
    let two = s.ctx.processes() >= 2;
    let need = "needs two processes";
    // Which process a rank belongs to (the layout is the same everywhere).
    let offsets: Vec<usize> = (0..=s.ctx.processes())
        .map(|q| {
            if q < s.ctx.processes() {
                s.ctx.offset(q)
            } else {
                p
            }
        })
        .collect();
    let process_of = move |rank: usize| offsets.partition_point(|&o| o <= rank) - 1;
    let process_of = &process_of;
    let any = |_: usize, _: &Error| true;

    // (a) Mismatched lengths between processes.
    let name = "failure: process 1 passes another length (allreduce)";
    if two {
        s.check_fails(name, RunFails::Either, None, any, |comm| {
            let n = if process_of(comm.rank()) == 1 { 8 } else { 7 };
            let mut v = inputs::<u64>(comm.rank(), n);
            Outcome::Called(comm.allreduce(&mut v, op::Sum))
        });
    } else {
        s.skip(name, need);
    }
    let name = "failure: process 1 passes another length (broadcast from rank 0)";
    if two {
        s.check_fails(name, RunFails::Either, None, any, |comm| {
            let n = if process_of(comm.rank()) == 1 {
                1000
            } else {
                999
            };
            let mut v = inputs::<u64>(comm.rank(), n);
            Outcome::Called(comm.broadcast(&mut v, 0))
        });
    } else {
        s.skip(name, need);
    }

    // Mismatched ops between processes: built-in ones, and two closures (two types).
    let name = "failure: process 1 passes another op (allreduce: max against sum)";
    if two {
        s.check_fails(name, RunFails::Either, None, any, |comm| {
            let mut v = inputs::<u64>(comm.rank(), 7);
            Outcome::Called(if process_of(comm.rank()) == 1 {
                comm.allreduce(&mut v, op::Max)
            } else {
                comm.allreduce(&mut v, op::Sum)
            })
        });
    } else {
        s.skip(name, need);
    }
    let name = "failure: process 1 passes another user op (reduce-scatter)";
    if two {
        s.check_fails(name, RunFails::Either, None, any, |comm| {
            let v = inputs::<u64>(comm.rank(), 3 * comm.size());
            let mut r = vec![0u64; 3];
            let one = op::commutative(|a: &u64, b: &u64| a.wrapping_add(*b));
            let other = op::commutative(|a: &u64, b: &u64| b.wrapping_add(*a));
            Outcome::Called(if process_of(comm.rank()) == 1 {
                comm.reduce_scatter_block(&v, &mut r, other)
            } else {
                comm.reduce_scatter_block(&v, &mut r, one)
            })
        });
    } else {
        s.skip(name, need);
    }

    // (b) Mismatched roots between processes.
    let name = "failure: process 1 passes another root (broadcast)";
    if two {
        s.check_fails(name, RunFails::Either, None, any, |comm| {
            let root = if process_of(comm.rank()) == 1 {
                p - 1
            } else {
                0
            };
            let mut v = inputs::<u64>(comm.rank(), 7);
            Outcome::Called(comm.broadcast(&mut v, root))
        });
    } else {
        s.skip(name, need);
    }
    let name = "failure: process 1 passes another root (reduce)";
    if two {
        s.check_fails(name, RunFails::Either, None, any, |comm| {
            let root = if process_of(comm.rank()) == 1 {
                0
            } else {
                p - 1
            };
            let mut v = inputs::<u64>(comm.rank(), 7);
            Outcome::Called(comm.reduce(&mut v, op::Sum, root))
        });
    } else {
        s.skip(name, need);
    }

    // (c) A thread of process 1 panics before a collective: the others fail (between
    // processes with `ProcessFailed`, or `Aborted` behind a failed stage), and the run fails
    // on every process.
    let hybrid = s.ctx.hybrid;
    let accept_panic = |rank: usize, e: &Error| {
        !hybrid
            || process_of(rank) == 1
            || matches!(e, Error::ProcessFailed { .. } | Error::Aborted { .. })
    };
    let victims = if two {
        let (first, t) = (s.ctx.offset(1), s.ctx.threads(1));
        let mut v = vec![("the last thread", first + t - 1)];
        if t > 1 {
            v.push(("the first thread (the leader)", first));
        }
        v
    } else {
        Vec::new()
    };
    if !two {
        s.skip(
            "failure: a thread of process 1 panics before an allreduce",
            need,
        );
    }
    for (who, victim) in victims {
        let name =
            format!("failure: {who} of process 1 (rank {victim}) panics before an allreduce");
        s.check_fails(
            &name,
            RunFails::Everywhere,
            Some(victim),
            accept_panic,
            |comm| {
                if comm.rank() == victim {
                    panic!("{INTENTIONAL} (rank {victim})");
                }
                let mut v = inputs::<u64>(comm.rank(), 1000);
                Outcome::Called(comm.allreduce(&mut v, op::Sum))
            },
        );
    }

    // (d) Process 1's ranks skip the last collective: the others' call fails (at the run's
    // end check between processes), and so does process 1's run (between processes; on a
    // plain team the run itself succeeds, every other rank's call failing).
    let name = "failure: process 1's ranks skip the last collective (an allreduce)";
    if two {
        let run_fails = if hybrid {
            RunFails::In(1)
        } else {
            RunFails::Either
        };
        s.check_fails(name, run_fails, None, any, |comm| {
            let mut v = inputs::<u64>(comm.rank(), 7);
            match comm.allreduce(&mut v, op::Sum) {
                // Between processes every leader has passed the first call's check before
                // process 1's ranks leave, so the first call works everywhere; on a plain
                // team a rank still inside it may already miss a returned rank.
                Err(e) if hybrid => {
                    return Outcome::Problem(format!("the first allreduce failed: {e}"))
                }
                Err(e) => return Outcome::Called(Err(e)),
                Ok(()) => {}
            }
            if process_of(comm.rank()) == 1 {
                return Outcome::Skipped;
            }
            Outcome::Called(comm.allreduce(&mut v, op::Sum))
        });
    } else {
        s.skip(name, need);
    }

    // (e) Roots out of range: on every rank, and on process 1's ranks only.
    s.check_fails(
        "failure: root out of range on every rank (reduce)",
        RunFails::Either,
        None,
        any,
        |comm| {
            let mut v = inputs::<u64>(comm.rank(), 7);
            Outcome::Called(comm.reduce(&mut v, op::Sum, p))
        },
    );
    let name = "failure: root out of range on process 1's ranks only (broadcast)";
    if two {
        s.check_fails(name, RunFails::Either, None, any, |comm| {
            let root = if process_of(comm.rank()) == 1 {
                p + 3
            } else {
                0
            };
            let mut v = inputs::<u64>(comm.rank(), 7);
            Outcome::Called(comm.broadcast(&mut v, root))
        });
    } else {
        s.skip(name, need);
    }

    // (f) One thread of a process disagrees with the rest of the team, which its own leader
    // does not (the last thread of process 1; with one thread per process, its leader): every
    // argument that must agree is compared within each process too.
    let odd = two.then(|| s.ctx.offset(1) + s.ctx.threads(1) - 1);
    type Case = (
        &'static str,
        fn(&corecoll::Comm, bool) -> corecoll::Result<()>,
    );
    let cases: [Case; 7] = [
        ("another root (broadcast from rank 0)", |comm, odd| {
            let mut v = inputs::<u64>(comm.rank(), 7);
            comm.broadcast(&mut v, usize::from(odd))
        }),
        ("another root (reduce to rank 0)", |comm, odd| {
            let mut v = inputs::<u64>(comm.rank(), 7);
            comm.reduce(&mut v, op::Sum, usize::from(odd))
        }),
        ("another root (gather to rank 0)", |comm, odd| {
            let n = if comm.rank() == 0 || odd {
                3 * comm.size()
            } else {
                0
            };
            let mut all = vec![0u64; n];
            comm.gather(&inputs::<u64>(comm.rank(), 3), &mut all, usize::from(odd))
        }),
        ("another root (scatter from rank 0)", |comm, odd| {
            let all = inputs::<u64>(comm.rank(), 3 * comm.size());
            let mut mine = vec![0u64; 3];
            comm.scatter(&all, &mut mine, usize::from(odd))
        }),
        (
            "another algorithm (barrier: tree against dissemination)",
            |comm, odd| {
                comm.barrier_with(if odd {
                    Barrier::Tree
                } else {
                    Barrier::Dissemination
                })
            },
        ),
        ("another op (allreduce: max against sum)", |comm, odd| {
            let mut v = inputs::<u64>(comm.rank(), 7);
            if odd {
                comm.allreduce(&mut v, op::Max)
            } else {
                comm.allreduce(&mut v, op::Sum)
            }
        }),
        (
            "another collective (allreduce against broadcast)",
            |comm, odd| {
                let mut v = inputs::<u64>(comm.rank(), 7);
                if odd {
                    comm.allreduce(&mut v, op::Sum)
                } else {
                    comm.broadcast(&mut v, 0)
                }
            },
        ),
    ];
    for (what, call) in cases {
        let name = format!("failure: one thread of process 1 passes {what}");
        let Some(odd) = odd else {
            s.skip(&name, need);
            continue;
        };
        s.check_fails(&name, RunFails::Either, None, any, |comm| {
            Outcome::Called(call(comm, comm.rank() == odd))
        });
    }

    // The team is reusable: a normal run after all that.
    let want = reduction::<u64>(p, 1000);
    s.check(
        "after the failures, a normal run on the same team",
        |comm| {
            let r = comm.rank();
            let mut v = inputs::<u64>(r, 1000);
            if let Err(e) = comm.allreduce(&mut v, op::Sum) {
                return Some(format!("allreduce: {e}"));
            }
            // A wrong result is noted and the calls go on, as every other rank's do.
            let mut problem = (v != want).then(|| "allreduce: wrong result".to_string());
            let mut b = inputs::<u64>(r, 10);
            if let Err(e) = comm.broadcast(&mut b, p - 1) {
                return Some(format!("broadcast: {e}"));
            }
            if b != inputs::<u64>(p - 1, 10) {
                note(&mut problem, Some("broadcast: wrong result".to_string()));
            }
            note(
                &mut problem,
                comm.barrier().err().map(|e| format!("barrier: {e}")),
            );
            for alg in Barrier::ALL {
                let e = comm.barrier_with(alg).err();
                note(
                    &mut problem,
                    e.map(|e| format!("barrier with {}: {e}", alg.name())),
                );
            }
            problem
        },
    );
}
