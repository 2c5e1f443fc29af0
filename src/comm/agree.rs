//! The check every collective makes before its schedule starts: do all ranks make the same
//! call?

use super::Comm;
use crate::error::{Error, Result};
use crate::select::Choice;
use crate::transport::{type_fingerprint, Tag, Transport};

/// What a rank is about to do in a collective call, as the agreement compares it.
pub(crate) struct Call {
    /// The collective's name.
    pub op: &'static str,
    /// The algorithm's id (after `Auto`).
    pub alg: u8,
    /// The algorithm's name for an id of this collective, for error messages.
    pub name_of: fn(u8) -> Option<&'static str>,
    /// Elements per rank.
    pub len: usize,
    /// The root, for rooted collectives.
    pub root: Option<usize>,
    /// The pipeline block (0 where the algorithm has none).
    pub block: usize,
    /// The element type's fingerprint.
    pub elem: u64,
}

impl Call {
    /// A call of collective `op` with algorithm `alg` on `len` elements of `T` per rank, with
    /// no root and no pipeline block (see [`Call::at`], [`Call::in_blocks`]).
    pub(crate) fn of<T: 'static, A: Choice>(op: &'static str, alg: A, len: usize) -> Call {
        Call {
            op,
            alg: alg.id(),
            name_of: A::name_of,
            len,
            root: None,
            block: 0,
            elem: type_fingerprint::<T>(),
        }
    }

    /// The same call at root `root`.
    pub(crate) fn at(self, root: usize) -> Call {
        Call {
            root: Some(root),
            ..self
        }
    }

    /// The same call in pipeline blocks of `block` elements.
    pub(crate) fn in_blocks(self, block: usize) -> Call {
        Call { block, ..self }
    }

    /// The words compared.
    fn words(&self) -> [u64; 4] {
        [
            (self.len as u64) << 8 | u64::from(self.alg),
            self.elem,
            self.block as u64,
            self.root.map_or(u64::MAX, |r| r as u64),
        ]
    }

    /// Describes a call from its words, for an error message.
    fn describe(&self, w: &[u64; 4]) -> String {
        let alg = (self.name_of)((w[0] & 0xff) as u8).unwrap_or("?");
        let mut d = format!(
            "{} of {} elements with the {alg} algorithm",
            self.op,
            w[0] >> 8
        );
        if w[3] != u64::MAX {
            d += &format!(" at root {}", w[3]);
        }
        if w[2] != 0 {
            d += &format!(" in blocks of {}", w[2]);
        }
        d
    }
}

impl Comm {
    /// Checks that every rank makes the same call — same algorithm (after `Auto`), length,
    /// root, pipeline block and element type — before any schedule starts.
    ///
    /// Each rank posts its descriptor to rank r+1 and reads rank r−1's (one `sendrecv`, which
    /// cannot deadlock); if the ranks do not all agree, some rank differs from its left
    /// neighbour and fails the run instead of going on. Without this, ranks that picked
    /// different schedules could all wait to receive first and hang.
    ///
    /// That one hop is enough when every rank's result depends on every rank's data (the
    /// allreduce): no rank can finish without the failing one, so every rank sees the failure.
    /// A broadcast is not like that — its root needs nothing from the others — so with
    /// `everyone` the check goes on
    /// as a dissemination barrier (Hensgen, Finkel, Manber 1988): in round k each rank sends
    /// its descriptor to r + 2^k and receives from r − 2^k, ⌈log₂ p⌉ rounds in all. A rank
    /// passes round k only after rank r − 2^k passed round k − 1, so a rank that completes
    /// every round knows that every rank completed round 0 — the comparison with its left
    /// neighbour — without failing: all agree. A rank that found a difference fails the run
    /// instead of sending on, so every rank waits for it in some round and returns the error.
    /// (A reduce's leaves finish once they have sent; its schedules end with an
    /// acknowledgement from the root instead, which also covers failures during the schedule.)
    pub(crate) fn agree<Tr: Transport>(
        &self,
        t: &Tr,
        tag: Tag,
        call: &Call,
        everyone: bool,
    ) -> Result<()> {
        let (p, r) = (self.size(), self.rank());
        if p == 1 {
            return Ok(());
        }
        let mine = call.words();
        let mut left = [0u64; 4];
        let mut dist = 1;
        loop {
            t.sendrecv((r + dist) % p, &mine, (r + p - dist) % p, &mut left, tag)?;
            if left != mine {
                let found = if left[0] == mine[0] && left[2..] == mine[2..] {
                    "the same call with another element type".to_string()
                } else {
                    call.describe(&left)
                };
                return Err(self.fail(Error::Mismatch {
                    rank: r,
                    peer: (r + p - dist) % p,
                    op: call.op,
                    expected: call.describe(&mine),
                    found,
                }));
            }
            dist *= 2;
            if !everyone || dist >= p {
                return Ok(());
            }
        }
    }

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
}
