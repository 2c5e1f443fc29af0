//! The board of a communicator: where the ranks of a shared-memory direct collective
//! (`algorithms::allreduce::direct`) publish their buffers and meet twice per call.
//!
//! Single-copy collectives over shared memory let every rank read and write the other ranks'
//! buffers in place, as XHC in Open MPI and MPICH's shared-memory collectives do (see
//! DESIGN.md, "Shared-memory direct"). What they need is a place to announce "here are my
//! buffers" and two synchronisations: everyone has announced (so everyone may start reading
//! and writing), and everyone has finished (so everyone may return and reuse its buffers).
//!
//! # Layout
//!
//! One [`Slot`] per rank, each on its own cache line(s) (`CachePadded`) and written by its rank
//! only: the published [`Call`] (input and output addresses, length, element type) and two
//! words, `arrived` and `done`. A peer waiting for a rank polls that rank's line; the line
//! moves once when the owner writes it and once to each reader.
//!
//! # Words and epochs
//!
//! Call `e` (the collective's sequence number plus one, identical on all ranks) uses the two
//! values `2e` and `2e + 1` of each word:
//!
//! | word | `2e` | `2e + 1` |
//! | --- | --- | --- |
//! | `arrived` | published call `e` | withdrew from call `e` (gave up before passing phase 1) |
//! | `done` | finished its part of call `e` | finished call `e` failing (its part is incomplete) |
//!
//! Values only grow from call to call and are compared through a wrapping difference
//! ([`reached`]), so they never need resetting.
//!
//! # Protocol
//!
//! 1. **Arrive**: the owner writes its `Call` (plain writes), then stores `arrived = 2e`
//!    (release), a `SeqCst` fence, and unparks every peer.
//! 2. **Phase 1**: wait until every peer's `arrived` (acquire) is `2e`: the rank has *passed*
//!    and may read every `Call` and touch the buffers as the collective prescribes. The acquire
//!    that saw `2e` orders the owner's `Call` write (and its input data) before the read.
//! 3. **Phase 2**: after its writes the rank stores `done = 2e` (release), fences, unparks, and
//!    waits until every peer has `done ≥ 2e` or `arrived = 2e + 1`. The acquire that saw a
//!    peer's `done` orders that peer's writes into this rank's output (and its last reads of
//!    this rank's input and `Call`) before this rank returns.
//!
//! **Why a slot may be rewritten for the next call.** A rank writes its `Call` for call `e + 1`
//! only after its phase 2 of call `e` ended, that is after it acquired `done ≥ 2e` from every
//! peer that passed (and `2e + 1` in `arrived` from every one that did not, which therefore
//! never read anything). Each peer reads `Call`s and buffers only between passing and storing
//! `done`, so every read of the old `Call` happened before the new write. Peers cannot mistake
//! the old `Call` for the new one either: they read it only after acquiring `arrived = 2e + 2`.
//!
//! # Giving up without leaving a buffer lent
//!
//! A rank waiting in phase 1 must return `Err` when the run fails, a peer returns from the run
//! without arriving, or the team's timeout passes. But its buffers are published: a peer may be
//! about to pass phase 1 and write into them. So it *withdraws*: it stores `arrived = 2e + 1`
//! (release), a `SeqCst` fence, unparks everyone, and then waits — without a deadline, and
//! whatever the run's state — until every peer is *resolved*: not arrived, withdrawn, or
//! `done ≥ 2e`. Only then does it return.
//!
//! That wait is enough because a peer passes only if it reads `arrived = 2e` in every slot,
//! after its own arrival store and fence. Take the withdrawing rank W and a peer Q. The two
//! `SeqCst` fences (W's after storing `2e + 1`, Q's after storing `2e`) are ordered. If W's is
//! first, every read Q makes after its fence sees `2e + 1` (or later) in W's slot: Q never
//! passes, never touches W's buffers. If Q's is first, W's reads after its fence see Q's
//! arrival, so W waits until Q resolves: Q either passed (read W's slot before the withdrawal)
//! and will store `done` after its last access, or it sees the withdrawal and withdraws too.
//! The store-buffering argument is the parker's (`src/sync/README.md`). A rank that
//! passed never waits for anything but peers that are computing or resolving, so phase 2 and
//! the resolving wait cannot last: they need no deadline and ignore the run's failure.
//!
//! A peer that sees a withdrawal (`arrived = 2e + 1`) in phase 1 withdraws too, and a rank that
//! passed but finds a peer withdrawn or failed in phase 2 returns `Err`: its result is
//! incomplete. Every withdrawal follows a failure of the run (the first withdrawer failed it
//! before withdrawing), so the ranks' next calls fail at once and never rewrite their slots
//! while a late peer still looks at them.
//!
//! If a rank unwinds between passing and storing `done` (a user operator panicked), its
//! [`Session`]'s drop fails the run, stores `done = 2e + 1` and waits for phase 2 like a
//! returning rank, so that no peer writes into its buffers after the unwinding frees them.
//!
//! Waiting is the crate's spin → yield → park on the rank's own parker; every store a peer may
//! wait for is followed by a `SeqCst` fence and an `unpark` of every peer, the event-count
//! protocol of `src/sync/README.md`, so no wake-up is lost. The board's protocol in prose, and
//! the loom models that check it: `src/shm/README.md`.

mod fold;
mod session;

pub(crate) use fold::fold_chunk;
pub(crate) use session::Session;

use super::Member;
use crate::error::{Error, Result};
use crate::mailbox::{type_fingerprint, Tag};
use crate::sync::park::{wait_until_watched, Watch};
use crate::sync::{fence, AtomicU64, CachePadded, Ordering, UnsafeCell};

/// What a rank publishes about one call: where its data is and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Call {
    /// The rank's input elements (its output buffer itself when in place).
    pub input: *const u8,
    /// The rank's output elements.
    pub output: *mut u8,
    /// Number of elements of both.
    pub len: usize,
    /// Fingerprint of the element type (`transport::type_fingerprint`).
    pub typ: u64,
    /// The collective, for error messages.
    pub op: &'static str,
}

impl Call {
    const EMPTY: Call = Call {
        input: std::ptr::null(),
        output: std::ptr::null_mut(),
        len: 0,
        typ: 0,
        op: "",
    };
}

/// One rank's place on the board. Every field is written by the owning rank only.
struct Slot {
    /// `2e` once the owner has published call `e`, `2e + 1` once it withdrew from it. Written
    /// (release) by the owner; read (acquire) by every peer.
    arrived: AtomicU64,
    /// `2e` once the owner has finished its part of call `e`, `2e + 1` if it finished failing.
    /// Written (release) by the owner; read (acquire) by every peer.
    done: AtomicU64,
    /// `4·2e + s` once the owner has reached stage `s` (1 ≤ s ≤ 3) of call `e`, for the
    /// collectives that meet between phase 1 and phase 2 ([`Session::mark`]). Written
    /// (release) by the owner; read (acquire) by the peers that wait for that stage.
    stage: AtomicU64,
    /// The owner's buffers for the current call. Written by the owner before it stores
    /// `arrived`; read by peers after they passed phase 1 and before they store `done`.
    call: UnsafeCell<Call>,
    /// Under loom: per rank `j`, a cell standing for rank `j`'s part of this slot's buffers
    /// (its slice of the vector). The owner writes all of them when it fills its input and
    /// when it takes its buffers back; rank `j` writes cell `j` while it reads and writes that
    /// part. loom reports a race if the protocol lets these accesses overlap.
    #[cfg(loom)]
    parts: Box<[UnsafeCell<()>]>,
}

/// The board of a communicator of `p` ranks: one [`Slot`] per rank.
pub(crate) struct Board {
    /// The slots, by communicator rank.
    slots: Box<[CachePadded<Slot>]>,
}

// SAFETY: the raw pointers in the `Call` cells are only dereferenced under the protocol above
// (between passing phase 1 and storing `done`); the cells themselves are written by their
// owner only while no peer reads them (module docs), everything else is atomic.
unsafe impl Sync for Board {}
// SAFETY: as for `Sync`; the board holds no thread-bound state.
unsafe impl Send for Board {}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board")
            .field("ranks", &self.slots.len())
            .finish_non_exhaustive()
    }
}

/// Whether epoch word `word` has reached `target`, wrap-safe: `word − target` (wrapping) is
/// below 2⁶³.
#[inline]
pub(crate) fn reached(word: u64, target: u64) -> bool {
    word.wrapping_sub(target) < 1 << 63
}

/// What phase 1 found on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// Every peer has arrived at this call.
    Pass,
    /// This peer (the first not yet arrived) has not arrived.
    Pending(usize),
    /// This peer withdrew from this call.
    Withdrawn(usize),
    /// This peer has published a later call: the ranks do not make the same calls.
    Ahead(usize),
}

impl Board {
    /// A board for `p` ranks, nobody arrived.
    pub(crate) fn new(p: usize) -> Self {
        Board {
            slots: (0..p)
                .map(|_| {
                    CachePadded::new(Slot {
                        arrived: AtomicU64::new(0),
                        done: AtomicU64::new(0),
                        stage: AtomicU64::new(0),
                        call: UnsafeCell::new(Call::EMPTY),
                        #[cfg(loom)]
                        parts: (0..p).map(|_| UnsafeCell::new(())).collect(),
                    })
                })
                .collect(),
        }
    }

    /// Publishes `call` as `comm`'s rank for call `epoch` (non-zero; the collective's sequence
    /// number plus one) and waits for phase 1: `Ok` once every rank has arrived, with the
    /// [`Session`] that ends the call; `Err` if the call could not start (the run failed, a
    /// peer returned from the run, the timeout passed, a peer is at another call), after
    /// withdrawing so that no peer touches this rank's buffers any more.
    ///
    /// # Safety
    ///
    /// `call.input` must be valid for reads and `call.output` for writes of `call.len`
    /// elements of the type fingerprinted by `call.typ`, and stay so, untouched by the caller
    /// except through these pointers and as the collective prescribes, until the returned
    /// session is finished or dropped (or this call returns `Err`). The caller is the only
    /// thread using this board as `comm`'s rank, and its previous call on this board ended.
    pub(crate) unsafe fn arrive<'a>(
        &'a self,
        comm: &'a Member,
        epoch: u64,
        call: Call,
    ) -> Result<Session<'a>> {
        let me = comm.rank();
        let op = call.op;
        let target = epoch << 1;
        let slot = &self.slots[me];
        // SAFETY: only this rank writes its slot's cell, and no peer reads it now: each read
        // of the previous call's `Call` happened before that peer stored `done` (or it never
        // passed), and this rank acquired all of those before its previous call returned.
        slot.call.with_mut(|c| unsafe { *c = call });
        #[cfg(loom)]
        for part in slot.parts.iter() {
            part.with_mut(|_| ());
        }
        slot.arrived.store(target, Ordering::Release);
        self.wake_peers(comm);

        let session = Session {
            board: self,
            comm,
            target,
            open: true,
            op,
        };
        let run = comm.run();
        let members = &comm.shared().members;
        let started = comm.wait_start();
        // Peers below `next` have been seen arrived; the words do not change until this rank
        // finishes the call, so they need not be read again.
        let mut next = 0;
        let mut scan = || self.scan(me, target, &mut next);
        let watch = comm.watch(op);
        wait_until_watched(
            &run.ranks.parkers[members[me]],
            &run.ranks.policy,
            || started.deadline(),
            || match scan() {
                Scan::Pending(peer) => {
                    watch.peer.set(members[peer]);
                    run.is_aborted() || run.is_done(members[peer])
                }
                _ => true,
            },
            run.ranks.detect_deadlocks.then_some(&watch as &dyn Watch),
        );
        let e = match scan() {
            Scan::Pass => return Ok(session),
            Scan::Withdrawn(_) => session.aborted(),
            Scan::Ahead(peer) => comm.fail(Error::Mismatch {
                rank: me,
                peer,
                op,
                expected: format!(
                    "direct {op} (collective call {} on this communicator)",
                    epoch
                ),
                found: "a later direct collective call".into(),
            }),
            Scan::Pending(peer) => comm.stalled(op, peer, &started),
        };
        session.withdraw();
        Err(e)
    }

    /// The start every shared-memory collective of one length shares: publishes `input` and
    /// `output` (`len` elements of `T`, or blocks of `len` as the collective counts them) as
    /// this rank's buffers for collective `op`, arrives as call `tag` ([`Board::arrive`]) and
    /// checks that every rank published the same length and element type
    /// ([`Session::expect_same`]); a mismatch names the calls "`what` of `len` elements"
    /// ("direct reduce", "direct allgather of blocks", …).
    ///
    /// # Safety
    ///
    /// As for [`Board::arrive`], with `input` and `output` as the call's pointers.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn open<'a, T: 'static>(
        &'a self,
        comm: &'a Member,
        tag: Tag,
        input: *const T,
        output: *mut T,
        len: usize,
        op: &'static str,
        what: &str,
    ) -> Result<Session<'a>> {
        let typ = type_fingerprint::<T>();
        let call = Call {
            input: input.cast(),
            output: output.cast(),
            len,
            typ,
            op,
        };
        // SAFETY: the caller's promise is `arrive`'s.
        let session = unsafe { self.arrive(comm, tag.seq.wrapping_add(1), call)? };
        session.expect_same(len, typ, |len, same| {
            let ty = if same { "" } else { " of another element type" };
            format!("{what} of {len} elements{ty}")
        })
    }

    /// Phase 1 as rank `me` sees it now, starting at peer `*next` (advanced past arrived ones).
    fn scan(&self, me: usize, target: u64, next: &mut usize) -> Scan {
        while *next < self.slots.len() {
            let i = *next;
            if i != me {
                let word = self.slots[i].arrived.load(Ordering::Acquire);
                if word == target + 1 {
                    return Scan::Withdrawn(i);
                }
                if word != target {
                    return if reached(word, target) {
                        Scan::Ahead(i)
                    } else {
                        Scan::Pending(i)
                    };
                }
            }
            *next += 1;
        }
        Scan::Pass
    }

    /// Fences (ordering this rank's last store before whatever it reads next) and wakes every
    /// peer of `comm`'s rank.
    fn wake_peers(&self, comm: &Member) {
        fence(Ordering::SeqCst);
        let me = comm.rank();
        let parkers = &comm.run().ranks.parkers;
        for (i, &team_rank) in comm.shared().members.iter().enumerate() {
            if i != me {
                parkers[team_rank].unpark();
            }
        }
    }
}
