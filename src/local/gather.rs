//! `Comm::gather`, `scatter` and `allgather`: validation and dispatch; the schedules are in
//! `algorithms::gather`.
//!
//! **Validation.** A root out of range, or a buffer of the wrong length on one rank, fails the
//! run on that rank (`Error::RankOutOfRange`, `Error::InvalidArgument`) before anything is
//! sent, so every other rank's call fails too. Then the call check (`check::agree`) compares
//! block length, element type, root and algorithm: in its dissemination form for gather and
//! scatter, whose root or leaves may otherwise finish without hearing of a disagreement; in
//! its one-hop form for allgather, where no rank can finish without every rank's block, so no
//! rank finishes if one fails. The shared-memory `Direct` forms run the check too (a rank
//! that chose another algorithm would never come to the board), and then check block
//! length, element type and root once more on the board (`algorithms::gather`).
//!
//! **The `v` forms** run one fixed algorithm each (linear gatherv and scatterv, ring
//! allgatherv; `algorithms::gather::vector`). The counts and displacements are checked where
//! they are significant (at the root; everywhere for allgatherv): p of each, every block within
//! its buffer, and no two non-empty blocks overlapping in a receive buffer (a scatterv's send
//! blocks may overlap, as in MPI); and the caller's own block against its count. The call check
//! compares root, algorithm and element type with a length of 0, since the block lengths may
//! differ by rank; a rank whose send length differs from the count its receivers expect is
//! caught by the mailbox's length check (`Error::Mismatch`), and the schedules end with a
//! barrier so that it fails every rank. Their messages carry tag variant 0x80 | the
//! algorithm's id, so that a rank calling `gather` against a `gatherv` fails too.

use super::Local;
use crate::algorithms::check::{self, Call};
use crate::algorithms::gather as sched;
use crate::algorithms::pair;
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{Elem, Kind};
use crate::select::{self, Allgather, Decision, Flat, Gather, Scatter};

/// The bit added to the algorithm's id in the tag variant of the `v` forms' messages.
const V_FORM: u8 = 0x80;

impl Local {
    /// `Comm::gather` with a chosen algorithm (every rank must choose the same).
    pub(crate) fn gather_with<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        root: usize,
        algorithm: Gather,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "gather";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Coll(Collective::Gather));
        let (alg, flat) = match algorithm.flat() {
            Some(flat) => (algorithm, flat),
            None => {
                let block = std::mem::size_of_val(send);
                let flat = self.tuned(Collective::Gather, block * self.size(), true, || {
                    select::choose_gather(self.size(), block)
                });
                (flat.alg(), flat)
            }
        };
        let t = self.coll(OP);
        let call = Call::of::<T, _>(OP, alg, send.len()).at(root);
        // `Direct` sends no message to share the check's hop with (`algorithms::pair`).
        if self.size() == 2 && alg != Gather::Direct {
            let data = tag.with_variant(alg.id());
            return pair::gather_pair(&t, (tag, data), &call, (send, recv), root);
        }
        check::agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(alg.id());
        match flat {
            Flat::Direct => sched::direct_gather(self.member(), send, recv, root, tag),
            Flat::Schedule(s) => sched::run_gather(&t, send, recv, root, s, tag),
        }
    }

    /// `Comm::scatter` with a chosen algorithm (every rank must choose the same).
    pub(crate) fn scatter_with<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        root: usize,
        algorithm: Scatter,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "scatter";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Coll(Collective::Scatter));
        let (alg, flat) = match algorithm.flat() {
            Some(flat) => (algorithm, flat),
            None => {
                let block = std::mem::size_of_val(recv);
                let flat = self.tuned(Collective::Scatter, block * self.size(), true, || {
                    let oversubscribed = self.run().ranks.policy.oversubscribed;
                    select::choose_scatter(self.size(), block, oversubscribed)
                });
                (flat.alg(), flat)
            }
        };
        let t = self.coll(OP);
        let call = Call::of::<T, _>(OP, alg, recv.len()).at(root);
        // As in `gather_with`: `Direct` has no message to share the check's hop with.
        if self.size() == 2 && alg != Scatter::Direct {
            let data = tag.with_variant(alg.id());
            return pair::scatter_pair(&t, (tag, data), &call, (send, recv), root);
        }
        check::agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(alg.id());
        match flat {
            Flat::Direct => sched::direct_scatter(self.member(), send, recv, root, tag),
            Flat::Schedule(s) => sched::run_scatter(&t, send, recv, root, s, tag),
        }
    }

    /// `Comm::allgather` with a chosen algorithm (every rank must choose the same).
    pub(crate) fn allgather_with<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        algorithm: Allgather,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "allgather";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Coll(Collective::Allgather));
        let levels = !self.hierarchy_plan(false).levels.is_empty();
        match algorithm {
            // (One group: `Auto`'s flat choice below, decided from the plan, no messages and
            // the same on every rank, before the call check, as the allreduce does.)
            Allgather::Hierarchical if levels => {
                // The one-hop check is enough: no rank's result is complete without every
                // rank's block, so no rank finishes if one fails.
                let call = Call::of::<T, _>(OP, Allgather::Hierarchical, send.len());
                check::agree(&self.coll(OP), tag, &call, false)?;
                return self.hierarchy(false)?.allgather(self, send, recv);
            }
            Allgather::HierarchicalDirect if levels => {
                let alg = Allgather::HierarchicalDirect;
                // The one-hop check, as `Hierarchical`'s.
                let call = Call::of::<T, _>(OP, alg, send.len());
                check::agree(&self.coll(OP), tag, &call, false)?;
                let plan = self.hierarchy_plan(false);
                let tag = tag.with_variant(alg.id());
                return crate::hierarchy::direct::allgather(self.member(), send, recv, plan, tag);
            }
            _ => {}
        }
        let (alg, flat) = match algorithm.flat() {
            Some(flat) => (algorithm, flat),
            None => {
                let block = std::mem::size_of_val(send);
                let flat = self.tuned(Collective::Allgather, block * self.size(), true, || {
                    select::choose_allgather(self.size(), block)
                });
                (flat.alg(), flat)
            }
        };
        let t = self.coll(OP);
        // At p = 2 every message-passing algorithm is one exchange whose message carries what
        // the check compares (the algorithm in the tag variant, the element type and length
        // checked by the receiving mailbox), and `Direct` starts with the check's own
        // exchange: either rank's first receive meets the other's first message, so a
        // disagreement fails both without the check's extra hop (`algorithms::pair`).
        if self.size() != 2 || alg == Allgather::Direct {
            check::agree(&t, tag, &Call::of::<T, _>(OP, alg, send.len()), false)?;
        }
        let tag = tag.with_variant(alg.id());
        match flat {
            Flat::Direct => sched::direct_allgather(self.member(), send, recv, tag),
            Flat::Schedule(s) => sched::run_allgather(&t, send, recv, s, tag),
        }
    }

    /// `Comm::gatherv` among the threads of one process (`Comm` has checked the
    /// arguments).
    pub(crate) fn gatherv<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: usize,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "gatherv";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Coll(Collective::Gather));
        let alg = Gather::Linear;
        let t = self.coll(OP);
        let call = Call::of::<T, _>(OP, alg, 0).at(root);
        check::agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(V_FORM | alg.id());
        sched::gatherv(&t, send, recv, counts, displs, root, tag)
    }

    /// `Comm::scatterv` among the threads of one process (`Comm` has checked the
    /// arguments).
    pub(crate) fn scatterv<T>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "scatterv";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Coll(Collective::Scatter));
        let alg = Scatter::Linear;
        let t = self.coll(OP);
        let call = Call::of::<T, _>(OP, alg, 0).at(root);
        check::agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(V_FORM | alg.id());
        sched::scatterv(&t, send, counts, displs, recv, root, tag)
    }

    /// `Comm::allgatherv` among the threads of one process (`Comm` has checked the
    /// arguments).
    pub(crate) fn allgatherv<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()>
    where
        T: Elem,
    {
        const OP: &str = "allgatherv";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Coll(Collective::Allgather));
        let alg = Allgather::Ring;
        let t = self.coll(OP);
        let call = Call::of::<T, _>(OP, alg, 0);
        check::agree(&t, tag, &call, false)?;
        let tag = tag.with_variant(V_FORM | alg.id());
        sched::allgatherv(&t, send, recv, counts, displs, tag)
    }
}
