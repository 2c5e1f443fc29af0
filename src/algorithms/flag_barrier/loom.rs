//! Loom model of the barrier on shared flags (the module docs of `flag_barrier`, "Why nobody
//! leaves early" and "Why no wake-up is lost"): every rank's write before a barrier is ordered
//! before every rank's read after it, with leaders gathering their groups and meeting.

use super::barrier;
use crate::collective::Collective;
use crate::mailbox::Kind;
use crate::shm::loom_world::spmd;
use crate::sync::loom_support::{model_capped, Arrivals};

/// Three ranks in groups {0, 1} (leader 0) and {2} (a leader alone), two barriers in a row.
/// Before barrier k each rank writes its loom cell of barrier k and counts itself on a
/// relaxed counter; after it each rank reads every rank's cell of barrier k and the counter
/// ([`Arrivals`]). A barrier that let anyone out before everyone arrived would let a read race
/// with (or miss) a write: loom reports the race, or the assertion fails. At most one
/// preemption (`model_capped`; `CORECOLL_LOOM_DEEP=1` lifts the cap).
#[test]
fn flag_barrier_three_ranks_two_groups() {
    const P: usize = 3;
    const ROUNDS: usize = 2;
    model_capped(|| {
        let arrivals = Arrivals::new(P);
        spmd(P, move |comm| {
            let r = comm.rank();
            let groups = [vec![0, 1], vec![2]];
            for k in 0..ROUNDS {
                arrivals.arrive(r, k);
                comm.enter("barrier").expect("the run has not failed");
                let tag = comm.next_tag(Kind::Coll(Collective::Barrier));
                barrier(&comm, &groups, tag, || Ok(())).expect("barrier");
                arrivals.check(k);
            }
        });
    });
}
