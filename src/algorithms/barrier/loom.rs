//! Loom models of the dissemination barrier over the shared-memory transport
//! (`Barrier::Dissemination`): every rank's write before a barrier is ordered before every
//! rank's read after it, barriers can follow each other on the same mailboxes, and a rank that
//! returns from the run instead of calling ends its peers' barrier (`src/shm/README.md`, "How
//! every wait ends"; the models are listed in `src/transport/README.md`).
//!
//! Each rank's `Member` (`shm::loom_world`) is moved into a loom thread of its own (rank 0 runs
//! on the model's main thread); between barriers the ranks pass a small message round the
//! ring on the point-to-point stream. loom reports a deadlock if some rank could wait forever,
//! and a data race if the barrier let a rank read a slot of [`Arrivals`] before its owner's
//! write was ordered before the read.

use super::dissemination;
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::{Kind, Tag};
use crate::shm::loom_world::{spmd, world};
use crate::shm::Member;
use crate::sync::loom_support::{model_capped, Arrivals};
use crate::transport::shm::ShmTransport;
use crate::transport::Transport;
use ::loom::thread;

/// The dissemination barrier as the communicator runs it: the next collective tag, the
/// collectives' stream.
fn barrier(comm: &Member) -> Result<()> {
    comm.enter("barrier")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Barrier));
    dissemination(&ShmTransport::coll(comm, "barrier"), tag)
}

/// Rank `comm.rank()` of a barrier model: `rounds` barriers, with a small ring message (an
/// eager `send` to the right, a `recv` from the left) between consecutive ones.
fn barrier_rank(comm: Member, arrivals: &Arrivals, rounds: usize) {
    let (r, p) = (comm.rank(), comm.size());
    let t = ShmTransport::p2p(&comm, "ring");
    for k in 0..rounds {
        arrivals.arrive(r, k);
        barrier(&comm).expect("barrier");
        arrivals.check(k);
        if k + 1 < rounds {
            t.send((r + 1) % p, Tag::P2P, &[(r * 10 + k) as u32])
                .expect("send");
            let mut got = [0u32];
            t.recv((r + p - 1) % p, Tag::P2P, &mut got).expect("recv");
            assert_eq!(got[0] as usize, ((r + p - 1) % p) * 10 + k);
        }
    }
}

/// Two ranks, three barriers in a row on the same communicator (the mailboxes are reused and
/// the tags advance), with a message each way between them.
#[test]
fn barrier_reused_two_ranks() {
    ::loom::model(|| {
        let arrivals = Arrivals::new(2);
        spmd(2, move |comm| barrier_rank(comm, &arrivals, 3));
    });
}

/// Three ranks (two dissemination rounds per barrier, so knowledge of a rank's arrival
/// reaches the others through a third), two barriers with a ring message between them.
///
/// Three threads make many more interleavings: this model explores those with at most one
/// preemption (none if `LOOM_MAX_PREEMPTIONS=0`; `CORECOLL_LOOM_DEEP=1` lifts the cap).
#[test]
fn barrier_reused_three_ranks() {
    model_capped(|| {
        let arrivals = Arrivals::new(3);
        spmd(3, move |comm| barrier_rank(comm, &arrivals, 2));
    });
}

/// A rank returns from the run without calling the barrier its peer is in: the peer's
/// barrier ends with `PeerExited` instead of waiting forever, whatever the interleaving.
#[test]
fn peer_exit_ends_a_barrier() {
    ::loom::model(|| {
        let (mut comms, run) = world(2);
        let quitter = comms.pop().expect("rank 1");
        let comm = comms.pop().expect("rank 0");
        let t = thread::spawn(move || {
            drop(quitter);
            run.mark_done(1);
        });
        match barrier(&comm) {
            Err(Error::PeerExited {
                rank: 0, peer: 1, ..
            }) => {}
            other => panic!("expected PeerExited, got {other:?}"),
        }
        t.join().unwrap();
    });
}
