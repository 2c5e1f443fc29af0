//! The shared-memory direct broadcast (shm only): single copy, two synchronisations.
//!
//! The root publishes its buffer on the communicator's board (`shm::board`); once every rank
//! has arrived, every other rank copies the root's buffer straight into its own, and phase 2
//! keeps the root's buffer lent until the last reader is done. Each byte moves once, from the
//! root's memory into each receiver's, with no intermediate buffer and no hop through other
//! ranks: the single-copy broadcast of XHC in Open MPI (there with a hierarchy of readers and
//! published progress flags; here flat, every reader at the root's buffer) and of MPICH's
//! shared-memory collectives, which a shared address space allows (DESIGN.md, "Single copy
//! where memory is shared").
//!
//! The copy goes in chunks of [`CHUNK_BYTES`], so that the readers, which start together,
//! stream through the root's buffer at about the same place, and a line one of them has
//! brought into a shared cache is still there for the others.
//!
//! **What is published.** Every rank publishes its own buffer as output; the rank that takes
//! itself for the root publishes it as input too, every other rank a null input. After phase
//! 1 each rank checks every call: the same length and element type as its own, and a
//! non-null input exactly at the rank it takes for the root. Every rank sees the same board,
//! so lengths or types that differ are seen by every rank, and all return
//! `Error::Mismatch` without touching a buffer. A disagreement about the root is seen at least
//! by the ranks whose root does not match the board; they end the call failing, so every other
//! rank's phase 2 fails too (with the mismatch as the root cause), though those may already
//! have copied (the agreement of `Comm::broadcast_with` normally reports it before).
//!
//! The direct scatter and gather (`algorithms::gather`) share the root's buffer the same way,
//! one block per rank: [`open_rooted`] publishes and checks the calls of all three
//! ([`Rooted`]).

use crate::error::{Error, Result};
use crate::mailbox::{type_fingerprint, Elem, Tag};
use crate::shm::Member;
use crate::shm::{Call, Session};
use std::mem::size_of;
use std::ptr;

/// Bytes copied per chunk: a few pages, small enough that the readers stay close together in
/// the root's buffer, large enough to amortise the loop.
const CHUNK_BYTES: usize = 16 << 10;

/// Direct broadcast of `buf` from `root`.
pub(super) fn direct<T: Elem>(comm: &Member, buf: &mut [T], root: usize, tag: Tag) -> Result<()> {
    comm.enter("broadcast")?;
    let (p, me, n) = (comm.size(), comm.rank(), buf.len());
    if root >= p {
        return Err(comm.fail(Error::RankOutOfRange {
            rank: me,
            op: "broadcast",
            peer: root,
            size: p,
        }));
    }
    if p == 1 {
        return Ok(());
    }
    // From here until the session ends, `buf` is touched only through `out` (by this rank,
    // and by its peers if this is the root), never through the reference.
    let out: *mut T = buf.as_mut_ptr();
    // SAFETY: `out` covers the `n` elements of `buf`, borrowed for this whole function and not
    // used through the reference while the session lasts, which ends before it returns.
    let session = unsafe { open(comm, out, n, root, tag, "direct broadcast")? };
    if me != root {
        // SAFETY: the session passed phase 1 and is open; the root's call (checked above) has
        // a non-null input of `n` elements of `T`, and this rank's output is `out`.
        unsafe { copy_from_root(&session, root, out, n) };
    }
    session.finish(true)
}

/// The start of a shared-memory broadcast (`Direct`, `HierarchicalDirect`): publishes `out`
/// (`n` elements; the input too on the root, null elsewhere), arrives on the board, and checks
/// that every rank published the same length, type and root; a mismatch fails every rank
/// before any buffer is touched. `name` names the algorithm in errors.
///
/// # Safety
///
/// `out` must be valid for reads and writes of `n` elements of `T` and not be used by the
/// caller except through the returned session's schedule until the session ends (finished,
/// or dropped while unwinding, which waits as finishing does); `root < comm.size()`.
pub(crate) unsafe fn open<'a, T: Elem>(
    comm: &'a Member,
    out: *mut T,
    n: usize,
    root: usize,
    tag: Tag,
    name: &'static str,
) -> Result<Session<'a>> {
    let input: *const T = if comm.rank() == root {
        out.cast_const()
    } else {
        ptr::null()
    };
    // SAFETY: by the caller's promise `out` is valid for `n` elements until the session ends;
    // the input is `out` itself on the root (the buffer `Rooted::Broadcast` shares), null
    // elsewhere.
    unsafe { open_rooted(comm, Rooted::Broadcast, (input, out), n, root, tag, name) }
}

/// The shape of a rooted single-copy collective, for [`open_rooted`]: which of the root's
/// buffers the other ranks share, and what the published length counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rooted {
    /// The broadcast: every rank reads the root's input, of `n` elements.
    Broadcast,
    /// The scatter: the root's input holds p blocks of `n` elements; rank i reads block i.
    Scatter,
    /// The gather: the root's output holds p blocks of `n` elements; rank i writes block i.
    Gather,
}

impl Rooted {
    /// The collective, for the board's error messages.
    pub(crate) fn op(self) -> &'static str {
        match self {
            Rooted::Broadcast => "broadcast",
            Rooted::Scatter => "scatter",
            Rooted::Gather => "gather",
        }
    }

    /// Whether `call` publishes the buffer that the root shares (the input of a broadcast or
    /// scatter, the output of a gather): it must, exactly on the rank that takes itself for
    /// the root.
    fn shares(self, call: &Call) -> bool {
        match self {
            Rooted::Broadcast | Rooted::Scatter => !call.input.is_null(),
            Rooted::Gather => !call.output.is_null(),
        }
    }

    /// Describes a call of algorithm `name` for a mismatch error: `n` elements, or blocks of
    /// `n` (of this rank's type if `same_type`), and whether the rank publishing it acts as the
    /// root (`is_root`) for `root`.
    fn describe(self, name: &str, root: usize, n: usize, same_type: bool, is_root: bool) -> String {
        let ty = if same_type {
            ""
        } else {
            " of another element type"
        };
        let role = if is_root {
            "as the root"
        } else {
            "not as the root"
        };
        let (way, blocks) = match self {
            Rooted::Broadcast => ("from", ""),
            Rooted::Scatter => ("from", "blocks of "),
            Rooted::Gather => ("to", "blocks of "),
        };
        format!("{name} {way} rank {root} of {blocks}{n} elements{ty}, {role}")
    }
}

/// The start of a rooted shared-memory collective of shape `shape` (broadcast, scatter,
/// gather): publishes `input` and `output` with length `n` (elements of the broadcast, block
/// length of the others), arrives on the board, and checks that every rank published the same
/// length and element type, and the buffer the root shares ([`Rooted`]) exactly at the rank
/// it takes for the root (non-null there, null elsewhere); a mismatch fails every rank before
/// any buffer is touched. `name` names the algorithm in errors.
///
/// # Safety
///
/// On the rank that is `root`, the shared buffer (`input` for a broadcast or scatter, `output`
/// for a gather) must be non-null and valid for what `shape` lets the peers do with it: reads
/// of `n` elements of `T` (broadcast), of p·n (scatter), writes of p·n (gather); on the other
/// ranks it must be null. The other pointer, if non-null, must be valid for what this rank's
/// own schedule does with it (reads of an input, reads and writes of an output, of the
/// lengths above). None of them may be used by the caller except through the returned
/// session's schedule until the session ends (finished, or dropped while unwinding, which
/// waits as finishing does), and an input must not be written meanwhile; `root <
/// comm.size()`.
pub(crate) unsafe fn open_rooted<'a, T: Elem>(
    comm: &'a Member,
    shape: Rooted,
    (input, output): (*const T, *mut T),
    n: usize,
    root: usize,
    tag: Tag,
    name: &'static str,
) -> Result<Session<'a>> {
    let typ = type_fingerprint::<T>();
    let call = Call {
        input: input.cast(),
        output: output.cast(),
        len: n,
        typ,
        op: shape.op(),
    };
    let board = &comm.shared().board;
    // SAFETY: by the caller's promise the published pointers are valid as long as the session
    // lasts for what the peers do with them; a null one is never dereferenced: a peer uses
    // only the root's shared buffer, after checking below that it is non-null. `Comm` is not
    // `Sync`, so this thread is the only one acting as this rank, and a previous call on the
    // board ended before it returned.
    let session = unsafe { board.arrive(comm, tag.seq.wrapping_add(1), call)? };
    let agrees = |i: usize, c: Call| c.len == n && c.typ == typ && shape.shares(&c) == (i == root);
    if let Some(peer) = session.first_differing(|i, c| !agrees(i, c)) {
        let theirs = session.call(peer);
        let expected = shape.describe(name, root, n, true, peer == root);
        let found = shape.describe(
            name,
            root,
            theirs.len,
            theirs.typ == typ,
            shape.shares(&theirs),
        );
        return Err(session.reject(peer, expected, found));
    }
    Ok(session)
}

/// Copies the root's published input into `out`, chunk by chunk.
///
/// # Safety
///
/// `session` must have passed phase 1 and not be finished; the root's call must have a
/// non-null input of `n` elements of `T`; `out` must be this rank's published output of `n`
/// elements of `T`, and this rank must not be the root.
unsafe fn copy_from_root<T: Elem>(session: &Session<'_>, root: usize, out: *mut T, n: usize) {
    #[cfg(loom)]
    session.touch(root);
    let src = session.call(root).input.cast::<T>();
    let chunk = (CHUNK_BYTES / size_of::<T>().max(1)).max(1);
    let mut start = 0;
    while start < n {
        let len = chunk.min(n - start);
        // SAFETY: by phase 1 the root's input is valid for reads of `n` elements and nobody
        // writes it until the root's session ends, which waits for this rank's `done`; `out`
        // is this rank's own buffer, which nobody else reads or writes (only the root's input
        // is read by peers). The two do not overlap: they are distinct ranks' exclusive
        // borrows.
        unsafe { ptr::copy_nonoverlapping(src.add(start), out.add(start), len) };
        start += len;
    }
}

#[cfg(all(test, loom))]
mod loom;
