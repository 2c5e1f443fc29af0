//! The checks of results of `hybrid_check`: every allreduce algorithm that runs between
//! processes, the refusals of the shared-memory ones between processes (they run on a
//! threads-only team), and every other collective with `Auto` (and `Native` where it
//! applies), from the checks shared with `examples/everywhere` (`common/collectives.rs`).

use crate::cases::{inputs, reduction, Affine, Case};
use crate::collectives::{self, allreduce, allreduce_into, broadcast, reduce, GAP};
use crate::suite::{Outcome, RunFails, Suite};
use corecoll::algorithm::{Broadcast, Gather, Reduce, Scatter};
use corecoll::{op, Algorithm, Error};

/// The allreduce algorithms a caller may choose between processes. Every algorithm but the
/// shared-memory ones (`Direct`, and the hierarchies, which the hybrid world itself is).
fn algorithms() -> Vec<Algorithm> {
    Algorithm::ALL
        .into_iter()
        .filter(|a| !a.needs_shared_memory())
        .collect()
}

/// Every check of results.
pub fn check_all(s: &Suite<'_>) {
    let p = s.ctx.size();
    let big = *s.ctx.allreduce_counts().iter().max().expect("counts");
    let full_u64 = reduction::<u64>(p, big);
    let full_f64 = reduction::<f64>(p, big);
    let full_aff = reduction::<Affine>(p, big);
    for alg in algorithms() {
        allreduce(s, alg, &full_u64);
        allreduce(s, alg, &full_f64);
        // MPI's own collective takes built-in ops only (refused between processes).
        if !matches!(alg, Algorithm::Ring { .. }) && alg != Algorithm::Native {
            allreduce(s, alg, &full_aff);
        }
    }
    // Refusals (every rank's call an error).
    s.check_fails(
        "allreduce ring with a non-commutative op is refused",
        RunFails::Either,
        None,
        |_, _| true,
        |comm| {
            let mut v = inputs::<Affine>(comm.rank(), 5);
            Outcome::Called(comm.allreduce_with(
                &mut v,
                Affine::op(),
                Algorithm::Ring {
                    block: corecoll::Block::Auto,
                },
            ))
        },
    );
    if s.ctx.on_node {
        // Nodes made believe smaller than the world: the leaders of the nodes meet over MPI.
        let several = std::env::var("CORECOLL_NODE_SIZE")
            .ok()
            .and_then(|k| k.trim().parse::<usize>().ok())
            .is_some_and(|k| k > 0 && k < s.ctx.processes());
        let node = if several {
            "node shared memory between processes, MPI between nodes"
        } else {
            "node shared memory between processes"
        };
        let want = crate::cases::reduction::<u64>(s.ctx.size(), 5);
        s.check(
            "allreduce direct runs through the node's shared memory between processes",
            |comm| {
                let mut v = inputs::<u64>(comm.rank(), 5);
                match comm.allreduce_with(&mut v, op::Sum, Algorithm::Direct) {
                    Err(e) => Some(e.to_string()),
                    Ok(()) if v != want => Some("wrong result".into()),
                    Ok(()) => {
                        let said = corecoll::unstable::auto_choice(comm);
                        (said != Some(node)).then(|| format!("auto_choice said {said:?}"))
                    }
                }
            },
        );
        // One copy where asked for (and the kernel allows it), on one node.
        let cma = std::env::var("CORECOLL_NODE_CMA").is_ok_and(|v| v.trim() == "1");
        if cma && !several {
            let n = 20_000;
            let want = crate::cases::reduction::<u64>(s.ctx.size(), n);
            s.check("a long allreduce copies once between processes", |comm| {
                let mut v = inputs::<u64>(comm.rank(), n);
                match comm.allreduce(&mut v, op::Sum) {
                    Err(e) => Some(e.to_string()),
                    Ok(()) if v != want => Some("wrong result".into()),
                    Ok(()) => {
                        let said = corecoll::unstable::auto_choice(comm);
                        let one =
                            "node shared memory between processes, one copy (process_vm_readv)";
                        (said != Some(one)).then(|| format!("auto_choice said {said:?}"))
                    }
                }
            });
        }
        // An allgather runs through the nodes where every process has as many threads.
        let uniform = (0..s.ctx.processes()).all(|q| s.ctx.threads(q) == s.ctx.threads(0));
        let gathers = if uniform {
            node
        } else {
            "MPI between processes"
        };
        s.check("a reduce and an allgather say where they ran", |comm| {
            let mut v = inputs::<u64>(comm.rank(), 5);
            let mut all = vec![0u64; comm.size()];
            let r = comm.reduce(&mut v, op::Sum, comm.size() - 1);
            let said = corecoll::unstable::auto_choice(comm);
            let g = r.and_then(|()| comm.allgather(&[comm.rank() as u64], &mut all));
            let gathered = corecoll::unstable::auto_choice(comm);
            match g {
                Err(e) => Some(e.to_string()),
                Ok(()) if said != Some(node) => Some(format!("reduce: auto_choice said {said:?}")),
                Ok(()) if gathered != Some(gathers) => {
                    Some(format!("allgather: auto_choice said {gathered:?}"))
                }
                Ok(()) => None,
            }
        });
        s.check(
            "an alltoall says it ran over MPI between processes",
            |comm| {
                let send = inputs::<u64>(comm.rank(), comm.size());
                let mut recv = vec![0u64; comm.size()];
                match comm.alltoall(&send, &mut recv) {
                    Err(e) => Some(e.to_string()),
                    Ok(()) => (corecoll::unstable::auto_choice(comm)
                        != Some("MPI between processes"))
                    .then(|| {
                        format!(
                            "auto_choice said {:?}",
                            corecoll::unstable::auto_choice(comm)
                        )
                    }),
                }
            },
        );
    }
    if s.ctx.hybrid {
        if !s.ctx.on_node {
            s.check_fails(
                "allreduce direct (shared memory only) is refused between processes",
                RunFails::Either,
                None,
                |_, e| matches!(e, Error::Unsupported { .. } | Error::Aborted { .. }),
                |comm| {
                    let mut v = inputs::<u64>(comm.rank(), 5);
                    Outcome::Called(comm.allreduce_with(&mut v, op::Sum, Algorithm::Direct))
                },
            );
        }
        let n = 5;
        s.check_fails(
            "gather direct (shared memory only) is refused between processes",
            RunFails::Either,
            None,
            |_, e| matches!(e, Error::Unsupported { .. } | Error::Aborted { .. }),
            |comm| {
                let send = inputs::<u64>(comm.rank(), n);
                let mut recv = vec![GAP; if comm.rank() == 0 { p * n } else { 0 }];
                Outcome::Called(comm.gather_with(&send, &mut recv, 0, Gather::Direct))
            },
        );
        s.check_fails(
            "scatter direct (shared memory only) is refused between processes",
            RunFails::Either,
            None,
            |_, e| matches!(e, Error::Unsupported { .. } | Error::Aborted { .. }),
            |comm| {
                let send = inputs::<u64>(comm.rank(), if comm.rank() == 0 { p * n } else { 0 });
                let mut recv = vec![GAP; n];
                Outcome::Called(comm.scatter_with(&send, &mut recv, 0, Scatter::Direct))
            },
        );
    } else {
        allreduce(s, Algorithm::Direct, &full_u64);
        allreduce(s, Algorithm::Direct, &full_f64);
        allreduce(s, Algorithm::Direct, &full_aff);
    }
    allreduce_into(s, &full_u64);
    allreduce_into(s, &full_aff);

    broadcast::<u64>(s, Broadcast::Auto);
    broadcast::<Affine>(s, Broadcast::Auto);
    broadcast::<Affine>(s, Broadcast::Native);
    reduce(s, &full_u64, Reduce::Auto);
    reduce(s, &full_f64, Reduce::Auto);
    reduce(s, &full_aff, Reduce::Auto);
    reduce(s, &full_u64, Reduce::Native);
    reduce(s, &full_f64, Reduce::Native);
    collectives::others(s, &full_u64, &full_f64, &full_aff);
}
