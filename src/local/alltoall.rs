//! `Comm::alltoall` and `alltoallv`: validation and dispatch; the schedules are in
//! `algorithms::alltoall`.
//!
//! **Validation.** A send buffer whose length is not a multiple of p, or a receive buffer of
//! another length than the send buffer, fails the run on that rank (`Error::InvalidArgument`)
//! before anything is sent, so every other rank's call fails too. Then the call check
//! (`check::agree`) compares block length, element type and algorithm in its one-hop form: each
//! rank compares its call with its left neighbour's, and a rank that finds a difference fails
//! the run instead of starting the schedule. That is enough because in an all-to-all no rank
//! can finish without every other rank having started: in `Pairwise` every rank receives a
//! message straight from every other rank; in `Bruck` rank r's round-k message comes from
//! r − 2ᵏ, sent only after that rank's own earlier rounds, so r depends on r − j for every j
//! whose bits are among the rounds' distances, that is on every rank; `Direct` waits on the
//! board until every rank has arrived. Every message is sent even when empty, so this holds
//! for a block length of 0 as well. (It is the allgather's argument; a broadcast or gather,
//! where some rank needs nothing from some other, takes the dissemination form instead.)
//!
//! **The `v` form** runs one fixed algorithm, the pairwise exchange with per-peer counts and
//! displacements (`algorithms::alltoall::vector`). Every rank checks its own layouts: p counts
//! and p displacements each, every block within its buffer, no two non-empty receive blocks
//! overlapping (send blocks may overlap, as in MPI), and its count for itself the same in both.
//! The call check compares algorithm and element type with a length of 0, since the counts
//! differ by rank. A sender whose count for a peer differs from that peer's count for it is
//! caught by the mailbox's length check (`Error::Mismatch`), and the schedule ends with a
//! barrier so that it fails every rank. Its messages carry tag variant 0x80 | the algorithm's
//! id, so that a rank calling `alltoall` against an `alltoallv` fails too.

use super::Local;
use crate::algorithms::alltoall as sched;
use crate::algorithms::check::{self, Call};
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::hierarchy::alltoall as ring;
use crate::mailbox::{Elem, Kind};
use crate::select::{self, Alltoall, Decision, Flat};

/// The bit added to the algorithm's id in the tag variant of the `v` form's messages.
const V_FORM: u8 = 0x80;

impl Local {
    /// `Comm::alltoall` with a chosen algorithm (every rank must choose the same).
    pub(crate) fn alltoall_with<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        algorithm: Alltoall,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "alltoall";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Coll(Collective::Alltoall));
        let p = self.size();
        let n = send.len() / p;
        let t = self.coll(OP);
        // RingLeaders on one group (no levels) is `Auto`'s flat choice, decided here, before
        // the check, from the plan every rank derives alike.
        if let Alltoall::RingLeaders { fanout } = algorithm {
            let leaders = self.hierarchy_plan(false).covered().len();
            if leaders >= 2 {
                let f = ring::exchanges(fanout, leaders);
                // The fan-out rides in the check's block word.
                check::agree(
                    &t,
                    tag,
                    &Call::of::<T, _>(OP, algorithm, n).in_blocks(f),
                    false,
                )?;
                let counts = vec![n; p];
                let displs: Vec<usize> = (0..p).map(|j| j * n).collect();
                let layout = ring::Layout {
                    counts: &counts,
                    displs: &displs,
                    v: false,
                };
                let tag = tag.with_variant(algorithm.id());
                let plan = self.hierarchy_plan(false);
                let (send, recv) = ((send, layout), (recv, layout));
                return ring::ring_leaders(self.member(), plan, &t, send, recv, f, tag);
            }
        }
        let (alg, flat) = match algorithm.flat() {
            Some(flat) => (algorithm, flat),
            None => {
                let bytes = std::mem::size_of_val(send);
                let flat = self.tuned(Collective::Alltoall, bytes, true, || {
                    let oversubscribed = self.run().ranks.policy.oversubscribed;
                    select::choose_alltoall(p, std::mem::size_of_val(&send[..n]), oversubscribed)
                });
                (flat.alg(), flat)
            }
        };
        // At p = 2 every message-passing algorithm is one exchange whose message carries what
        // the check compares (the algorithm in the tag variant, the element type and length
        // checked by the receiving mailbox), and `Direct` starts with the check's own
        // exchange: either rank's first receive meets the other's first message, so a
        // disagreement fails both without the check's extra hop (`algorithms::pair`).
        if p != 2 || alg == Alltoall::Direct {
            check::agree(&t, tag, &Call::of::<T, _>(OP, alg, n), false)?;
        }
        let tag = tag.with_variant(alg.id());
        match flat {
            Flat::Direct => sched::direct(self.member(), send, recv, tag),
            Flat::Schedule(s) => sched::run(&t, send, recv, s, tag),
        }
    }

    /// `Comm::alltoallv_with` among the threads of one process (`Comm` has checked the
    /// arguments).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alltoallv_with<T>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
        recv_displs: &[usize],
        algorithm: Alltoall,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "alltoallv";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Coll(Collective::Alltoall));
        let leaders = match algorithm {
            Alltoall::RingLeaders { .. } => self.hierarchy_plan(false).covered().len(),
            _ => 0,
        };
        let alg = match algorithm {
            Alltoall::Auto | Alltoall::Pairwise => Alltoall::Pairwise,
            Alltoall::RingLeaders { .. } if leaders < 2 => Alltoall::Pairwise,
            Alltoall::RingLeaders { fanout } => Alltoall::RingLeaders { fanout },
            other => {
                return Err(self.fail(Error::Unsupported {
                    rank: self.rank(),
                    op: OP,
                    what: format!(
                        "the {} algorithm has no alltoallv (pairwise or ring-leaders have)",
                        other.name()
                    ),
                }))
            }
        };
        let t = self.coll(OP);
        if let Alltoall::RingLeaders { fanout } = alg {
            let f = ring::exchanges(fanout, leaders);
            let call = Call::of::<T, _>(OP, alg, 0).in_blocks(f);
            check::agree(&t, tag, &call, false)?;
            let tag = tag.with_variant(V_FORM | alg.id());
            let sl = ring::Layout {
                counts: send_counts,
                displs: send_displs,
                v: true,
            };
            let rl = ring::Layout {
                counts: recv_counts,
                displs: recv_displs,
                v: true,
            };
            return ring::ring_leaders(
                self.member(),
                self.hierarchy_plan(false),
                &t,
                (send, sl),
                (recv, rl),
                f,
                tag,
            );
        }
        let call = Call::of::<T, _>(OP, alg, 0);
        check::agree(&t, tag, &call, false)?;
        let tag = tag.with_variant(V_FORM | alg.id());
        sched::alltoallv(
            &t,
            (send, send_counts, send_displs),
            (recv, recv_counts, recv_displs),
            tag,
        )
    }
}
