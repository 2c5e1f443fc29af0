//! `Comm::gather`, `scatter` and `allgather`: validation and dispatch; the schedules are in
//! `algorithms::gather`.
//!
//! **Validation.** A root out of range, or a buffer of the wrong length on one rank, fails the
//! run on that rank (`Error::RankOutOfRange`, `Error::InvalidArgument`) before anything is
//! sent, so every other rank's call fails too. Then the call check (`Comm::agree`) compares
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

use super::agree::Call;
use super::Comm;
use crate::algorithms::gather as sched;
use crate::error::{Error, Result};
use crate::select::{self, Allgather, Gather, Scatter};
use crate::transport::Kind;
use crate::tuning::Collective;

/// The bit added to the algorithm's id in the tag variant of the `v` forms' messages.
const V_FORM: u8 = 0x80;

impl Comm {
    /// Collects every rank's `send` into `recv` on rank `root`, block i from rank i
    /// (`MPI_Gather`). On the root, `recv.len()` must be `size() · send.len()`; elsewhere
    /// `recv` is not used. Every rank must pass the same root, block length and element type;
    /// anything else is an error on every rank.
    pub fn gather<T>(&self, send: &[T], recv: &mut [T], root: usize) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        self.gather_with(send, recv, root, Gather::Auto)
    }

    /// [`Comm::gather`] with a chosen algorithm (every rank must choose the same).
    pub fn gather_with<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        root: usize,
        algorithm: Gather,
    ) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        crate::comm::across_processes!(self, |b| b.gather(send, recv, root, algorithm));
        const OP: &str = "gather";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Gather);
        self.check_root(OP, root)?;
        if self.rank() == root {
            self.check_whole(OP, "recv", recv.len(), send.len())?;
        }
        let alg = match algorithm {
            Gather::Auto => {
                let block = std::mem::size_of_val(send);
                self.tuned(Collective::Gather, block * self.size(), true, || {
                    select::choose_gather(self.size(), block)
                })
            }
            chosen => chosen,
        };
        let t = self.coll(OP);
        let call = Call::of::<T, _>(OP, alg, send.len()).at(root);
        // `Direct` sends no message to share the check's hop with (`comm::pair`).
        if self.size() == 2 && alg != Gather::Direct {
            let data = tag.with_variant(alg.id());
            return self.gather_pair(&t, (tag, data), &call, (send, recv), root);
        }
        self.agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(alg.id());
        match alg {
            Gather::Direct => sched::direct_gather(self, send, recv, root, tag),
            _ => sched::run_gather(&t, send, recv, root, alg, tag),
        }
    }

    /// Hands block i of `send` on rank `root` to rank i's `recv` (`MPI_Scatter`). On the
    /// root, `send.len()` must be `size() · recv.len()`; elsewhere `send` is not used. Every
    /// rank must pass the same root, block length and element type; anything else is an error
    /// on every rank.
    pub fn scatter<T>(&self, send: &[T], recv: &mut [T], root: usize) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        self.scatter_with(send, recv, root, Scatter::Auto)
    }

    /// [`Comm::scatter`] with a chosen algorithm (every rank must choose the same).
    pub fn scatter_with<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        root: usize,
        algorithm: Scatter,
    ) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        crate::comm::across_processes!(self, |b| b.scatter(send, recv, root, algorithm));
        const OP: &str = "scatter";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Scatter);
        self.check_root(OP, root)?;
        if self.rank() == root {
            self.check_whole(OP, "send", send.len(), recv.len())?;
        }
        let alg = match algorithm {
            Scatter::Auto => {
                let block = std::mem::size_of_val(recv);
                self.tuned(Collective::Scatter, block * self.size(), true, || {
                    select::choose_scatter(
                        self.size(),
                        block,
                        self.run().ranks.policy.oversubscribed,
                    )
                })
            }
            chosen => chosen,
        };
        let t = self.coll(OP);
        let call = Call::of::<T, _>(OP, alg, recv.len()).at(root);
        // As in `gather_with`: `Direct` has no message to share the check's hop with.
        if self.size() == 2 && alg != Scatter::Direct {
            let data = tag.with_variant(alg.id());
            return self.scatter_pair(&t, (tag, data), &call, (send, recv), root);
        }
        self.agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(alg.id());
        match alg {
            Scatter::Direct => sched::direct_scatter(self, send, recv, root, tag),
            _ => sched::run_scatter(&t, send, recv, root, alg, tag),
        }
    }

    /// Collects every rank's `send` into `recv` on every rank, block i from rank i
    /// (`MPI_Allgather`). `recv.len()` must be `size() · send.len()` everywhere, and every
    /// rank must pass the same block length and element type; anything else is an error on
    /// every rank.
    pub fn allgather<T>(&self, send: &[T], recv: &mut [T]) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        self.allgather_with(send, recv, Allgather::Auto)
    }

    /// [`Comm::allgather`] with a chosen algorithm (every rank must choose the same).
    pub fn allgather_with<T>(&self, send: &[T], recv: &mut [T], algorithm: Allgather) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        crate::comm::across_processes!(self, |b| b.allgather(send, recv, algorithm));
        const OP: &str = "allgather";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Allgather);
        self.check_whole(OP, "recv", recv.len(), send.len())?;
        let auto = || {
            let block = std::mem::size_of_val(send);
            self.tuned(Collective::Allgather, block * self.size(), true, || {
                select::choose_allgather(self.size(), block)
            })
        };
        let alg = match algorithm {
            Allgather::Auto => auto(),
            // One group: `Auto`'s flat choice, decided from the plan (no messages, the same on
            // every rank) before the call check, as the allreduce does.
            Allgather::Hierarchical if self.hierarchy_plan(false).levels.is_empty() => auto(),
            Allgather::Hierarchical => {
                // The one-hop check is enough: no rank's result is complete without every
                // rank's block, so no rank finishes if one fails.
                let call = Call::of::<T, _>(OP, Allgather::Hierarchical, send.len());
                self.agree(&self.coll(OP), tag, &call, false)?;
                return self.hierarchy(false)?.allgather(self, send, recv);
            }
            Allgather::HierarchicalDirect if self.hierarchy_plan(false).levels.is_empty() => auto(),
            Allgather::HierarchicalDirect => {
                let alg = Allgather::HierarchicalDirect;
                // The one-hop check, as `Hierarchical`'s.
                let call = Call::of::<T, _>(OP, alg, send.len());
                self.agree(&self.coll(OP), tag, &call, false)?;
                let plan = self.hierarchy_plan(false);
                let tag = tag.with_variant(alg.id());
                return crate::hierarchy::direct::allgather(self, send, recv, plan, tag);
            }
            chosen => chosen,
        };
        let t = self.coll(OP);
        // At p = 2 every message-passing algorithm is one exchange whose message carries what
        // the check compares (the algorithm in the tag variant, the element type and length
        // checked by the receiving mailbox), and `Direct` starts with the check's own
        // exchange: either rank's first receive meets the other's first message, so a
        // disagreement fails both without the check's extra hop (`comm::pair`).
        if self.size() != 2 || alg == Allgather::Direct {
            self.agree(&t, tag, &Call::of::<T, _>(OP, alg, send.len()), false)?;
        }
        let tag = tag.with_variant(alg.id());
        match alg {
            Allgather::Direct => sched::direct_allgather(self, send, recv, tag),
            _ => sched::run_allgather(&t, send, recv, alg, tag),
        }
    }

    /// Gathers rank i's `send` into `recv[displs[i] .. displs[i] + counts[i]]` on rank `root`
    /// (`MPI_Gatherv`). On the root, `counts` and `displs` have `size()` entries, every block
    /// lies within `recv`, no two non-empty blocks overlap, and rank i's `send.len()` must be
    /// `counts[i]`; elsewhere `recv`, `counts` and `displs` are not used (pass empty slices).
    /// The algorithm is linear (every block straight to the root). Anything else is an error
    /// on every rank.
    pub fn gatherv<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: usize,
    ) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        crate::comm::across_processes!(self, |b| b.gatherv(send, recv, counts, displs, root));
        const OP: &str = "gatherv";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Gather);
        self.check_root(OP, root)?;
        if self.rank() == root {
            self.check_layout(OP, "recv", recv.len(), counts, displs, true)?;
            self.check_own(OP, "send", send.len(), counts[root])?;
        }
        let alg = Gather::Linear;
        let t = self.coll(OP);
        let call = Call::of::<T, _>(OP, alg, 0).at(root);
        self.agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(V_FORM | alg.id());
        sched::gatherv(&t, send, recv, counts, displs, root, tag)
    }

    /// Hands `send[displs[i] .. displs[i] + counts[i]]` on rank `root` to rank i's `recv`
    /// (`MPI_Scatterv`). On the root, `counts` and `displs` have `size()` entries and every
    /// block lies within `send` (blocks may overlap); rank i's `recv.len()` must be
    /// `counts[i]`; elsewhere `send`, `counts` and `displs` are not used (pass empty slices).
    /// The algorithm is linear (every block straight from the root). Anything else is an error
    /// on every rank.
    pub fn scatterv<T>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        crate::comm::across_processes!(self, |b| b.scatterv(send, counts, displs, recv, root));
        const OP: &str = "scatterv";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Scatter);
        self.check_root(OP, root)?;
        if self.rank() == root {
            self.check_layout(OP, "send", send.len(), counts, displs, false)?;
            self.check_own(OP, "recv", recv.len(), counts[root])?;
        }
        let alg = Scatter::Linear;
        let t = self.coll(OP);
        let call = Call::of::<T, _>(OP, alg, 0).at(root);
        self.agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(V_FORM | alg.id());
        sched::scatterv(&t, send, counts, displs, recv, root, tag)
    }

    /// Gathers rank i's `send` into `recv[displs[i] .. displs[i] + counts[i]]` on every rank
    /// (`MPI_Allgatherv`). On every rank `counts` and `displs` have `size()` entries, every
    /// block lies within `recv` and no two non-empty blocks overlap; `counts` must be the same
    /// everywhere, and rank i's `send.len()` must be `counts[i]` (the displacements may differ
    /// by rank). The algorithm is the ring. Anything else is an error on every rank.
    pub fn allgatherv<T>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()>
    where
        T: Copy + Send + Sync + 'static,
    {
        crate::comm::across_processes!(self, |b| b.allgatherv(send, recv, counts, displs));
        const OP: &str = "allgatherv";
        self.enter_call(OP)?;
        let tag = self.next_tag(Kind::Allgather);
        self.check_layout(OP, "recv", recv.len(), counts, displs, true)?;
        self.check_own(OP, "send", send.len(), counts[self.rank()])?;
        let alg = Allgather::Ring;
        let t = self.coll(OP);
        let call = Call::of::<T, _>(OP, alg, 0);
        self.agree(&t, tag, &call, false)?;
        let tag = tag.with_variant(V_FORM | alg.id());
        sched::allgatherv(&t, send, recv, counts, displs, tag)
    }

    /// Fails the run unless `counts` and `displs` describe `size()` blocks within a buffer of
    /// `len` elements, pairwise disjoint (non-empty ones) if `disjoint`.
    pub(super) fn check_layout(
        &self,
        op: &'static str,
        buffer: &str,
        len: usize,
        counts: &[usize],
        displs: &[usize],
        disjoint: bool,
    ) -> Result<()> {
        self.check_arg(
            op,
            layout_problem(self.size(), buffer, len, counts, displs, disjoint),
        )
    }

    /// Fails the run unless this rank's `buffer` has `count` elements.
    pub(super) fn check_own(
        &self,
        op: &'static str,
        buffer: &str,
        len: usize,
        count: usize,
    ) -> Result<()> {
        self.check_arg(op, own_problem(buffer, len, count))
    }

    /// Fails the run unless `buffer`'s length `len` is `size()` blocks of `block` elements.
    pub(super) fn check_whole(
        &self,
        op: &'static str,
        buffer: &str,
        len: usize,
        block: usize,
    ) -> Result<()> {
        self.check_arg(op, whole_problem(self.size(), buffer, len, block))
    }

    /// Fails the run with [`Error::InvalidArgument`] `what` of `op`, if there is one.
    fn check_arg(&self, op: &'static str, what: Option<String>) -> Result<()> {
        match what {
            Some(what) => Err(self.fail(Error::InvalidArgument {
                rank: self.rank(),
                op,
                what,
            })),
            None => Ok(()),
        }
    }
}

/// What is wrong, if anything, with `counts` and `displs` as `p` blocks within a buffer
/// (`buffer`, for the message) of `len` elements, pairwise disjoint (the non-empty ones) if
/// `disjoint`. Shared with the collectives between processes (`hybrid`).
pub(crate) fn layout_problem(
    p: usize,
    buffer: &str,
    len: usize,
    counts: &[usize],
    displs: &[usize],
    disjoint: bool,
) -> Option<String> {
    if counts.len() != p || displs.len() != p {
        Some(format!(
            "{} counts and {} displacements for {p} ranks",
            counts.len(),
            displs.len()
        ))
    } else if let Some(i) =
        (0..p).find(|&i| displs[i].checked_add(counts[i]).is_none_or(|end| end > len))
    {
        Some(format!(
            "block {i} ({} elements at {}) is not within {buffer}, of {len} elements",
            counts[i], displs[i]
        ))
    } else if disjoint {
        let mut blocks: Vec<usize> = (0..p).filter(|&i| counts[i] > 0).collect();
        blocks.sort_unstable_by_key(|&i| displs[i]);
        blocks
            .windows(2)
            .find(|w| displs[w[0]] + counts[w[0]] > displs[w[1]])
            .map(|w| format!("blocks {} and {} overlap in {buffer}", w[0], w[1]))
    } else {
        None
    }
}

/// What is wrong, if anything, with a rank's `buffer` of `len` elements whose count is `count`.
pub(crate) fn own_problem(buffer: &str, len: usize, count: usize) -> Option<String> {
    (len != count).then(|| format!("{buffer} holds {len} elements, but its count is {count}"))
}

/// What is wrong, if anything, with a `buffer` of `len` elements that must hold `p` blocks of
/// `block` elements.
pub(crate) fn whole_problem(p: usize, buffer: &str, len: usize, block: usize) -> Option<String> {
    (block.checked_mul(p) != Some(len)).then(|| {
        format!(
            "{buffer} holds {len} elements, but {p} blocks of {block} make {}",
            p as u128 * block as u128
        )
    })
}
