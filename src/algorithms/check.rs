//! The call check every collective makes before its schedule starts: do all ranks make the
//! same call? A [`Call`] describes one rank's call; [`agree`] and its variants compare the
//! ranks' descriptors over the collective's own transport.

use crate::error::{Error, Result};
use crate::mailbox::{describe_op_word, op_word, Elem, Tag, EAGER_MAX};
use crate::op::{Identity, Op};
use crate::transport::Transport;

/// Words in a call's descriptor.
pub(crate) const WORDS: usize = 5;

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
    /// The op, for the collectives that combine.
    pub combine: Option<Identity>,
}

impl Call {
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

    /// The same call combining with `op`.
    pub(crate) fn with_op<T, O: Op<T>>(self, op: &O) -> Call {
        Call {
            combine: Some(op.identity()),
            ..self
        }
    }

    /// The words compared.
    pub(crate) fn words(&self) -> [u64; WORDS] {
        [
            (self.len as u64) << 8 | u64::from(self.alg),
            self.elem,
            self.block as u64,
            self.root.map_or(u64::MAX, |r| r as u64),
            self.combine.map_or(0, op_word),
        ]
    }

    /// Describes this call, for an error message.
    pub(crate) fn describe_own(&self) -> String {
        self.describe(&self.words(), true)
    }

    /// Describes a call from its words, for an error message: this rank's own with its op's
    /// name, another rank's with what its op word tells.
    pub(crate) fn describe(&self, w: &[u64; WORDS], own: bool) -> String {
        let alg = (self.name_of)((w[0] & 0xff) as u8).unwrap_or("?");
        let mut d = format!(
            "{} of {} with the {alg} algorithm",
            self.op,
            crate::mailbox::names::elements(w[0] >> 8, &crate::mailbox::names::describe(w[1]))
        );
        if w[3] != u64::MAX {
            d += &format!(" at root {}", w[3]);
        }
        if w[2] != 0 {
            d += &format!(" in blocks of {}", w[2]);
        }
        match (own, self.combine) {
            (true, Some(op)) => d += &format!(" and op {}", op.describe()),
            _ if w[4] != 0 => d += &format!(" and op {}", describe_op_word(w[4])),
            _ => {}
        }
        d
    }
}

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
pub(crate) fn agree<Tr: Transport>(t: &Tr, tag: Tag, call: &Call, everyone: bool) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    if p == 1 {
        return Ok(());
    }
    let mine = call.words();
    let mut left = [0u64; WORDS];
    let mut dist = 1;
    loop {
        t.sendrecv((r + dist) % p, &mine, (r + p - dist) % p, &mut left, tag)?;
        compare(t, call, &mine, &left, (r + p - dist) % p)?;
        dist *= 2;
        if !everyone || dist >= p {
            return Ok(());
        }
    }
}

/// The one-hop check ([`agree`] with `everyone` false) in two halves, so that a
/// collective may start its own work in between: this half posts this rank's descriptor
/// to rank r + 1 (eager: it returns at once); [`agree_take`] reads rank r − 1's and
/// compares. The collective must call `agree_take` before it waits for anything that a
/// rank making another call would never provide, so that a mismatch fails the run instead
/// of leaving ranks waiting (the barrier on shared flags).
pub(crate) fn agree_post<Tr: Transport>(t: &Tr, tag: Tag, call: &Call) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    if p == 1 {
        return Ok(());
    }
    t.send((r + 1) % p, tag, &call.words())
}

/// The second half of the split one-hop check ([`agree_post`]).
pub(crate) fn agree_take<Tr: Transport>(t: &Tr, tag: Tag, call: &Call) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    if p == 1 {
        return Ok(());
    }
    let mut left = [0u64; WORDS];
    let from = (r + p - 1) % p;
    t.recv(from, tag, &mut left)?;
    compare(t, call, &call.words(), &left, from)
}

/// The check of a two-rank communicator, with the schedule's one message in the same hop
/// when it is short: this rank posts its descriptor to the other rank, then `data` (the
/// message its part of the schedule sends, under the schedule's tag) if it is eager-sized,
/// and only then reads the other's descriptor and compares; a longer `data` goes out after
/// the comparison. Messages between two ranks arrive in order, so each rank's descriptor is
/// the first thing the other reads in this call, before any data; a rank that finds a
/// difference fails the run, and since both ranks always read the other's descriptor,
/// both do. At p = 2 this is the whole dissemination check (one round), so it serves both
/// forms of [`agree`], and a short broadcast, gather, scatter or scan costs one
/// message latency instead of two.
///
/// Why only eager data goes first: an eager send returns once the message is in the
/// mailbox, but a rendezvous send waits until the receiver has read it. Two ranks that
/// disagree (each taking itself for the root of a broadcast, say) would both wait in such
/// a send, neither reading the other's descriptor. After the comparison both ranks agree,
/// and the data's receiver is about to read it.
pub(crate) fn agree_pair_sending<Tr: Transport, T: Elem>(
    t: &Tr,
    tag: Tag,
    call: &Call,
    data: Option<(Tag, &[T])>,
) -> Result<()> {
    debug_assert_eq!(t.size(), 2);
    let peer = 1 - t.rank();
    let mine = call.words();
    t.send(peer, tag, &mine)?;
    let (early, late) = match data {
        Some(d) if std::mem::size_of_val(d.1) <= EAGER_MAX => (Some(d), None),
        d => (None, d),
    };
    if let Some((data_tag, d)) = early {
        t.send(peer, data_tag, d)?;
    }
    let mut theirs = [0u64; WORDS];
    t.recv(peer, tag, &mut theirs)?;
    compare(t, call, &mine, &theirs, peer)?;
    if let Some((data_tag, d)) = late {
        t.send(peer, data_tag, d)?;
    }
    Ok(())
}

/// [`agree_pair_sending`] for a rank that sends nothing in the schedule's first
/// hop.
pub(crate) fn agree_pair<Tr: Transport>(t: &Tr, tag: Tag, call: &Call) -> Result<()> {
    agree_pair_sending::<Tr, u8>(t, tag, call, None)
}

/// Fails the run with a mismatch naming both calls unless `theirs` (the descriptor from
/// rank `peer`) is `mine`.
fn compare<Tr: Transport>(
    t: &Tr,
    call: &Call,
    mine: &[u64; WORDS],
    theirs: &[u64; WORDS],
    peer: usize,
) -> Result<()> {
    match difference(call, mine, theirs, t.rank(), peer) {
        None => Ok(()),
        Some(e) => Err(t.fail(e)),
    }
}

/// The mismatch of rank `rank`'s call `call` (descriptor `mine`) with rank `peer`'s (descriptor
/// `theirs`), naming both calls, if they differ: the one comparison of descriptors, whichever
/// way they travelled.
pub(crate) fn difference(
    call: &Call,
    mine: &[u64; WORDS],
    theirs: &[u64; WORDS],
    rank: usize,
    peer: usize,
) -> Option<Error> {
    if theirs == mine {
        return None;
    }
    let only = |i: usize| (0..WORDS).all(|j| j == i || theirs[j] == mine[j]);
    let found = if only(1) {
        "the same call with another element type".to_string()
    } else if only(4) {
        format!("the same call with op {}", describe_op_word(theirs[4]))
    } else {
        call.describe(theirs, false)
    };
    Some(Error::Mismatch {
        rank,
        peer,
        op: call.op,
        expected: call.describe(mine, true),
        found,
    })
}
