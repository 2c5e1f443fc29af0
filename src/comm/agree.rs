//! The check every collective makes before its schedule starts: do all ranks make the same
//! call?

use super::Comm;
use crate::error::{Error, Result};
use crate::transport::{Tag, Transport};

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
    /// root, pipeline block and element type — before any schedule starts. Each rank posts its
    /// descriptor to rank r+1 and reads rank r−1's (one `sendrecv`, which cannot deadlock); if
    /// the ranks do not all agree, some rank differs from its left neighbour and fails the
    /// run, which ends every other rank's call. Without this, ranks that picked different
    /// schedules could all wait to receive first and hang. Costs one message hop per call.
    pub(crate) fn agree<Tr: Transport>(&self, t: &Tr, tag: Tag, call: &Call) -> Result<()> {
        let (p, r) = (self.size(), self.rank());
        if p == 1 {
            return Ok(());
        }
        let mine = call.words();
        let mut left = [0u64; 4];
        t.sendrecv((r + 1) % p, &mine, (r + p - 1) % p, &mut left, tag)?;
        if left != mine {
            let found = if left[0] == mine[0] && left[2..] == mine[2..] {
                "the same call with another element type".to_string()
            } else {
                call.describe(&left)
            };
            return Err(self.fail(Error::Mismatch {
                rank: r,
                peer: (r + p - 1) % p,
                op: call.op,
                expected: call.describe(&mine),
                found,
            }));
        }
        Ok(())
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
