//! Point-to-point between processes when only one thread per process may call MPI
//! (`Threading::Funneled` or `Serialized`): each process's leader (its rank 0, the thread that
//! initialised MPI) relays its threads' messages.
//!
//! **Sending.** A thread's message to a thread of another process is copied into the
//! process's outbox with its header (type fingerprint, count), and the send is complete: the
//! message is buffered, as MPI's standard-mode send may buffer. The leader posts what is in
//! the outbox on the team's [`Channels`] (the same duplicates, tags and wire as threads use
//! under `Threading::Multiple`, so processes of either kind talk to each other) and completes
//! the sends later; the outbox and the sends in flight own the bytes until MPI is done with
//! them.
//!
//! **Receiving.** The leader takes every message that has come for each of its threads (one
//! duplicate per thread index: `MPI_Improbe` from any source with any tag, then the header) and
//! appends it to that thread's inbox, in MPI's order, so that messages of one sender and tag
//! stay in order. A payload that follows its header in a message of its own is received into
//! the inbox entry's buffer by a receive the leader posts and completes in a later pass; until
//! then the entry cannot be taken (a receive that it matches waits for it, and does not take a
//! later one of the same sender and tag). Threads take messages out of their inbox as they
//! take messages moved aside (`process::p2p`), checking type and length the same way.
//!
//! **Progress.** [`Relay::progress`] is one pass of the leader over all of this, plus a look
//! for another process's failure notice. The leader runs it as its *idle hook*
//! (`sync::idle`) during the whole run: in every wait of its own (for a message, for its
//! threads in a collective, for them to finish the run), so a leader blocked in its own
//! receive or collective still serves its threads; and when it sends itself. Before each stage
//! between processes it runs the sending part alone ([`Relay::flush`]), so that what its
//! threads sent before a collective leaves before the leader waits for the other processes
//! (which may be waiting for those messages to join it); what has come in can wait for the
//! next pass — every thread of the process is in the collective then, none receiving — and
//! the pass skipped is an `MPI_Improbe` per thread, a measurable part of a short allreduce
//! through the node (figures in `docs/results/2026-11-29-figures-behind-the-code.md`). A leader busy
//! computing outside any call relays nothing until
//! its next call, as MPI itself progresses only inside calls. Inside MPI's own collectives (the
//! stage between processes) it does not relay either.

use crate::error::Error;
use crate::process::mpi::{new_stage, Channels, Sending, Stage};
use crate::process::p2p::paths::{Aside, Pending};
use crate::process::world::{Layout, Process};
use crate::shm::RunState;
use crate::sync::idle::Idle;
use parking_lot::{Mutex, MutexGuard};
use std::collections::VecDeque;
use std::ops::Deref;
use std::sync::Arc;

/// A message a thread of this process sent to a thread of another, not yet given to MPI.
struct Outgoing {
    /// The receiving process and its thread.
    to: (usize, usize),
    /// The sending thread (of this process) and the user's tag.
    from: (usize, u32),
    /// The element type's fingerprint and the element count.
    typ: (u64, usize),
    bytes: Vec<u8>,
}

/// A send the leader posted, with the bytes MPI reads until it completes.
struct Flight {
    send: Sending,
    _staged: Vec<u8>,
    _bytes: Vec<u8>,
}

/// What only the leader touches.
struct LeaderState {
    /// Posted sends not yet complete.
    flight: Vec<Flight>,
    /// Where headers are received.
    stage: Box<Stage>,
    /// The outbox's messages being posted (swapped with the outbox, so that threads append to
    /// an empty one meanwhile).
    draining: VecDeque<Outgoing>,
    /// Passes made, for [`NOTICE_EVERY`].
    passes: u32,
}

/// A process's relay of point-to-point between its threads and other processes (module docs).
pub(crate) struct Relay {
    channels: Arc<Channels>,
    layout: Arc<Layout>,
    outbox: Mutex<VecDeque<Outgoing>>,
    /// Per thread of this process, the messages from other processes for it, in arrival order.
    inboxes: Vec<Mutex<VecDeque<Aside>>>,
    leader: Mutex<LeaderState>,
}

/// Passes of [`Relay::progress`] per look for a failure notice (a probe of its own).
const NOTICE_EVERY: u32 = 16;

// SAFETY: the MPI handles inside (`Sending`'s and `Pending`'s requests, the channels' communicators)
// are used by the leader only (`progress` and `Drop`, on the thread that runs the team, which
// MPI allows to call it); the rest is plain data behind locks.
unsafe impl Send for Relay {}
// SAFETY: see `Send`.
unsafe impl Sync for Relay {}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("threads", &self.inboxes.len())
            .finish_non_exhaustive()
    }
}

impl Relay {
    /// The channels it relays over.
    pub(crate) fn channels(&self) -> &Arc<Channels> {
        &self.channels
    }

    /// The relay of this process of `layout`, over `channels`.
    pub(crate) fn new(channels: Arc<Channels>, layout: Arc<Layout>) -> Relay {
        let threads = layout.threads(layout.process());
        Relay {
            channels,
            layout,
            outbox: Mutex::new(VecDeque::new()),
            inboxes: (0..threads).map(|_| Mutex::new(VecDeque::new())).collect(),
            leader: Mutex::new(LeaderState {
                flight: Vec::new(),
                stage: new_stage(),
                draining: VecDeque::new(),
                passes: 0,
            }),
        }
    }

    /// Hands a message to the leader: `count` elements of the type whose fingerprint is
    /// `typ`, as `bytes`, from thread `from` with user tag `tag`, to thread `to.1` of process
    /// `to.0`. Complete at once (module docs).
    pub(crate) fn send(
        &self,
        to: (usize, usize),
        from: (usize, u32),
        typ: (u64, usize),
        bytes: Vec<u8>,
    ) {
        self.outbox.lock().push_back(Outgoing {
            to,
            from,
            typ,
            bytes,
        });
    }

    /// Thread `i`'s inbox.
    pub(crate) fn inbox(&self, i: usize) -> MutexGuard<'_, VecDeque<Aside>> {
        self.inboxes[i].lock()
    }

    /// The sending part of a pass (module docs): posts the outbox and completes the sends it
    /// can, without looking for what has come in — what must happen before the leader waits in
    /// a stage between processes, whose peers may be waiting for these messages to join it.
    /// Whether there was anything to send (or still is in flight). Only the leader may call it.
    pub(crate) fn flush(&self) -> bool {
        self.send_outbox(&mut self.leader.lock())
    }

    /// Posts the outbox's messages and completes the sends it can: whether there was anything
    /// to post, or still is in flight.
    fn send_outbox(&self, st: &mut LeaderState) -> bool {
        let ch = &*self.channels;
        std::mem::swap(&mut *self.outbox.lock(), &mut st.draining);
        let worked = !st.draining.is_empty();
        for o in st.draining.drain(..) {
            let mut staged = Vec::new();
            // SAFETY: `staged` and `o.bytes` move into `flight` below, which keeps them (their
            // heap buffers do not move) until the send completes, or forever if it never does
            // (`Drop`).
            let send = unsafe {
                ch.post_bytes(
                    o.to,
                    o.from,
                    o.typ,
                    (o.bytes.as_ptr(), o.bytes.len()),
                    &mut staged,
                )
            };
            st.flight.push(Flight {
                send,
                _staged: staged,
                _bytes: o.bytes,
            });
        }
        st.flight.retain_mut(|f| !ch.test(&mut f.send));
        worked || !st.flight.is_empty()
    }

    /// One pass of the leader (module docs): posts the outbox, completes sends, receives what
    /// has come for each thread and the payloads in flight. Returns whether there was anything
    /// to do (or still is: sends or payloads in flight), and the process whose failure notice
    /// for this run has arrived, if one has. Only the leader may call it.
    pub(crate) fn progress(&self) -> (bool, Option<usize>) {
        let ch = &*self.channels;
        let mut guard = self.leader.lock();
        let st = &mut *guard;
        let mut worked = self.send_outbox(st);
        let stage: *mut Stage = &mut *st.stage;
        for (i, inbox) in self.inboxes.iter().enumerate() {
            for a in inbox.lock().iter_mut() {
                if let Some(p) = &mut a.pending {
                    worked = true;
                    if ch.test_one(&mut p.0) {
                        a.pending = None;
                    }
                }
            }
            // SAFETY: the stage is the leader's, held through `guard` and touched only through
            // `stage` here.
            while let Some(a) = unsafe { ch.poll(i, None, stage) } {
                let mut bytes = vec![0u8; a.bytes()];
                // SAFETY: `stage` holds `a`'s header; `bytes` is writable for `a.bytes()`
                // bytes and moves into the inbox entry, whose `pending` says the receive is in
                // flight until `progress` completes it (or `Drop` leaks the buffer).
                let pending = unsafe { ch.payload(i, &a, stage, bytes.as_mut_ptr()) };
                worked = true;
                let mut inbox = inbox.lock();
                inbox.push_back(Aside {
                    src: self.layout.offset(a.process) + a.thread,
                    tag: a.tag,
                    typ: a.typ,
                    count: a.count,
                    bytes,
                    pending: pending.map(Pending),
                });
            }
        }
        st.passes = st.passes.wrapping_add(1);
        let failed = st
            .passes
            .is_multiple_of(NOTICE_EVERY)
            .then(|| ch.notices().notice());
        (worked, failed.flatten())
    }
}

impl Drop for Relay {
    /// Leaks the buffers of sends and receives MPI has not completed: the relay may be dropped
    /// on a thread that may not call MPI, so it cannot cancel them, and MPI may still use the
    /// memory.
    fn drop(&mut self) {
        let st = self.leader.get_mut();
        for f in st.flight.drain(..) {
            std::mem::forget(f);
        }
        // The inboxes' entries whose payload is still coming leak their buffers as they drop
        // (`Aside`'s drop).
    }
}

/// A relaying leader's idle hook while it leads a run (`Process::lead`, borrowed;
/// `Process::lead_lasting`, owned): a pass of every relay of the team; before a stage between
/// processes only their sends ([`Relay::flush`]). A failure notice a relay receives fails the
/// run.
pub(in crate::process) struct Relaying<P, R>(pub(in crate::process) P, pub(in crate::process) R);

impl<P: Deref<Target = Process>, R: Deref<Target = RunState>> Idle for Relaying<P, R> {
    fn run(&self) -> bool {
        self.0.relay_for(&self.1)
    }

    fn flush(&self) -> bool {
        self.0.flush_all()
    }
}

impl Process {
    /// The leader's idle hook in `run`: one pass of every relay ([`Process::relay_all`]); a
    /// failure notice it receives fails `run`. Whether it found work.
    fn relay_for(&self, run: &RunState) -> bool {
        let (worked, failed) = self.relay_all();
        if let Some(process) = failed {
            run.abort(Error::ProcessFailed {
                rank: self.layout.offset(self.layout.process()),
                op: "point-to-point",
                process,
            });
        }
        worked
    }

    /// One pass of every relay of the team (its own and its duplicates'), on the leader:
    /// whether any had work, and the process whose failure notice one of them received.
    /// Duplicates' relays that nothing else holds any more are dropped (here, on the thread
    /// that may call MPI).
    pub(in crate::process) fn relay_all(&self) -> (bool, Option<usize>) {
        let Some(relay) = &self.relay else {
            return (false, None);
        };
        let (mut worked, mut failed) = relay.progress();
        let mut dups = self.dup_relays.lock();
        dups.retain(|r| Arc::strong_count(r) > 1);
        for r in dups.iter() {
            let (w, f) = r.progress();
            worked |= w;
            failed = failed.or(f);
        }
        (worked, failed)
    }

    /// The sending part of every relay of the team ([`Relay::flush`]), on the leader: whether
    /// any had something to send. Duplicates' relays are not dropped here (`relay_all` does).
    fn flush_all(&self) -> bool {
        let Some(relay) = &self.relay else {
            return false;
        };
        let mut worked = relay.flush();
        for r in self.dup_relays.lock().iter() {
            worked |= r.flush();
        }
        worked
    }
}
