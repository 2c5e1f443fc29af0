//! `Comm::gather`, `scatter` and `allgather`: validation and dispatch; the schedules are in
//! `algorithms::gather`.
//!
//! **Validation.** A root out of range, or a buffer of the wrong length on one rank, fails the
//! run on that rank (`Error::RankOutOfRange`, `Error::InvalidArgument`) before anything is
//! sent, so every other rank's call fails too. Then the call check (`Comm::agree`) compares
//! block length, element type, root and algorithm: in its dissemination form for gather and
//! scatter, whose root or leaves may otherwise finish without hearing of a disagreement; in
//! its one-hop form for allgather, where no rank can finish without every rank's block, so no
//! rank finishes if one fails.

use super::agree::Call;
use super::Comm;
use crate::algorithms::gather as sched;
use crate::error::{Error, Result};
use crate::select::{self, Allgather, Gather, Scatter};
use crate::transport::{type_fingerprint, Kind};

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
        const OP: &str = "gather";
        self.enter(OP)?;
        let tag = self.next_tag(Kind::Gather);
        self.check_root(OP, root)?;
        if self.rank() == root {
            self.check_whole(OP, "recv", recv.len(), send.len())?;
        }
        let alg = match algorithm {
            Gather::Auto => select::choose_gather(self.size(), std::mem::size_of_val(send)),
            chosen => chosen,
        };
        let t = self.coll(OP);
        let call = Call {
            op: OP,
            alg: alg.id(),
            name_of: |id| Gather::from_id(id).map(Gather::name),
            len: send.len(),
            root: Some(root),
            block: 0,
            elem: type_fingerprint::<T>(),
        };
        self.agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(alg.id());
        match alg {
            Gather::Linear => sched::gather_linear(&t, send, recv, root, tag),
            Gather::Binomial | Gather::Auto => sched::gather_binomial(&t, send, recv, root, tag),
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
        const OP: &str = "scatter";
        self.enter(OP)?;
        let tag = self.next_tag(Kind::Scatter);
        self.check_root(OP, root)?;
        if self.rank() == root {
            self.check_whole(OP, "send", send.len(), recv.len())?;
        }
        let alg = match algorithm {
            Scatter::Auto => select::choose_scatter(self.size(), std::mem::size_of_val(recv)),
            chosen => chosen,
        };
        let t = self.coll(OP);
        let call = Call {
            op: OP,
            alg: alg.id(),
            name_of: |id| Scatter::from_id(id).map(Scatter::name),
            len: recv.len(),
            root: Some(root),
            block: 0,
            elem: type_fingerprint::<T>(),
        };
        self.agree(&t, tag, &call, true)?;
        let tag = tag.with_variant(alg.id());
        match alg {
            Scatter::Linear => sched::scatter_linear(&t, send, recv, root, tag),
            Scatter::Binomial | Scatter::Auto => sched::scatter_binomial(&t, send, recv, root, tag),
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
        const OP: &str = "allgather";
        self.enter(OP)?;
        let tag = self.next_tag(Kind::Allgather);
        self.check_whole(OP, "recv", recv.len(), send.len())?;
        let alg = match algorithm {
            Allgather::Auto => select::choose_allgather(self.size(), std::mem::size_of_val(send)),
            chosen => chosen,
        };
        let t = self.coll(OP);
        let call = Call {
            op: OP,
            alg: alg.id(),
            name_of: |id| Allgather::from_id(id).map(Allgather::name),
            len: send.len(),
            root: None,
            block: 0,
            elem: type_fingerprint::<T>(),
        };
        self.agree(&t, tag, &call, false)?;
        let tag = tag.with_variant(alg.id());
        match alg {
            Allgather::Direct => sched::direct_allgather(self, send, recv, tag),
            Allgather::Ring => sched::ring(&t, send, recv, tag),
            Allgather::RecursiveDoubling => sched::recursive_doubling(&t, send, recv, tag),
            Allgather::Bruck | Allgather::Auto => sched::bruck(&t, send, recv, tag),
        }
    }

    /// Fails the run unless `buffer`'s length `len` is `size()` blocks of `block` elements.
    fn check_whole(&self, op: &'static str, buffer: &str, len: usize, block: usize) -> Result<()> {
        let p = self.size();
        if block.checked_mul(p) != Some(len) {
            return Err(self.fail(Error::InvalidArgument {
                rank: self.rank(),
                op,
                what: format!(
                    "{buffer} holds {len} elements, but {p} blocks of {block} make {}",
                    p as u128 * block as u128
                ),
            }));
        }
        Ok(())
    }
}
