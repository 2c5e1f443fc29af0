//! The validation of a call's own arguments, made once for every kind of team before the
//! call goes anywhere: a root that is no rank, a buffer of the wrong length, counts and
//! displacements that do not describe blocks within their buffer. Each fails the run on this
//! rank with a clear error (so that no other rank waits for it) before anything is sent.

use super::Comm;
use crate::error::{Error, Result};

impl Comm {
    /// Fails the call (on every rank: each checks its own argument) if `root` is not a rank.
    pub(crate) fn check_root(&self, op: &'static str, root: usize) -> Result<()> {
        if root >= self.size() {
            return Err(self.fail(Error::RankOutOfRange {
                rank: self.rank(),
                op,
                peer: root,
                size: self.size(),
            }));
        }
        Ok(())
    }

    /// Fails the run unless `counts` and `displs` describe `size()` blocks within a buffer of
    /// `len` elements, pairwise disjoint (non-empty ones) if `disjoint`.
    pub(crate) fn check_layout(
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
    pub(crate) fn check_own(
        &self,
        op: &'static str,
        buffer: &str,
        len: usize,
        count: usize,
    ) -> Result<()> {
        self.check_arg(op, own_problem(buffer, len, count))
    }

    /// Fails the run unless `send` and `recv`, of `send` and `recv` elements, are the buffers
    /// of an all-to-all: `size()` blocks each, of the same length.
    pub(crate) fn check_alltoall(&self, op: &'static str, send: usize, recv: usize) -> Result<()> {
        let p = self.size();
        if !send.is_multiple_of(p) {
            let what = format!("send holds {send} elements, not a multiple of the {p} ranks");
            return Err(self.invalid(op, what));
        }
        self.check_whole(op, "recv", recv, send / p)
    }

    /// Fails the run unless `buffer`'s length `len` is `size()` blocks of `block` elements.
    pub(crate) fn check_whole(
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
/// `disjoint`. Shared with the collectives between processes (`process`).
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
