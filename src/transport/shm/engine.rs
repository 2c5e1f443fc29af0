//! The engine of the shared-memory transport, [`ShmTransport::exchange`]: one send and one
//! receive in flight at once, each step taken as soon as it can be, and between steps a wait
//! for whichever of them the call still needs (module docs of `transport::shm`).

use super::{Lent, Outgoing, ShmTransport};
use crate::error::{Error, Result};
use crate::shm::Context;
use crate::transport::Transport;

/// A receive as the engine drives it: the next message from one rank (`Incoming`), or the
/// first that matches a source and tag among all that have arrived (`p2p::Matching`).
pub(super) trait Receive {
    /// What the completed receive returns.
    type Out;
    /// The rank the receive waits for, or `None` for any rank.
    fn source(&self) -> Option<usize>;
    /// Completes the receive if its message is there (`Ok(Some)`), or reports that it is
    /// not yet (`Ok(None)`; it may have moved other messages aside), or that the message
    /// there is not what was expected (`Err`, the run failed).
    fn poll(&mut self, t: &ShmTransport<'_>) -> Result<Option<Self::Out>>;
    /// Whether anything has arrived that [`Receive::poll`] would look at: the condition the
    /// engine waits for. Only reads.
    fn arrived(&self, t: &ShmTransport<'_>) -> bool;
    /// Whether a message of the rank to itself may still come while it waits: a send of its
    /// own, made earlier and not posted yet (a request's), which its scope will post.
    fn self_message_pending(&self, _t: &ShmTransport<'_>) -> bool {
        false
    }
}

impl ShmTransport<'_> {
    /// The engine: posts `send` (if any), receives `recv` (if any), and returns once both are
    /// complete — for a rendezvous send, once the receiver has released the lent slice.
    pub(super) fn exchange<Rc: Receive>(
        &self,
        send: Option<Outgoing>,
        recv: Option<Rc>,
    ) -> Result<Option<Rc::Out>> {
        let run = self.member.run();
        if run.is_aborted() {
            return Err(self.aborted());
        }
        let me = self.member.rank();
        if let Some(o) = &send {
            self.check_rank(o.dest)?;
        }
        if let Some(src) = recv.as_ref().and_then(Receive::source) {
            self.check_rank(src)?;
        }
        let out = send.as_ref().map(|o| (o, self.mailbox(me, o.dest)));
        let source = recv.as_ref().map(Receive::source);
        let mut read = recv;
        // Not yet posted (no cell or arena room so far)?
        let mut pending = send.is_some();
        // The loan of a posted rendezvous send, until the receiver releases it.
        let mut lent: Option<Lent<'_>> = None;
        let mut result = None;

        let outcome = loop {
            let mut progressed = false;
            if let (true, Some((o, mb))) = (pending, out) {
                // SAFETY: `o.data` is the caller's slice of `o.header.len` bytes, borrowed for
                // this whole call; if it is lent, `lent` settles the loan before the call ends,
                // however it ends.
                if let Some((n, is_lent)) = unsafe { mb.try_post(o.header, o.data) } {
                    if is_lent {
                        lent = Some(self.lent(mb, n));
                    }
                    pending = false;
                    progressed = true;
                    self.unpark(o.dest);
                }
            }
            if let Some(r) = &mut read {
                match r.poll(self) {
                    Ok(Some(got)) => {
                        result = Some(got);
                        read = None;
                        progressed = true;
                    }
                    Ok(None) => {}
                    Err(e) => break Err(e),
                }
            }
            if let Some(l) = &mut lent {
                if l.mb.is_consumed(l.n) {
                    l.released = true;
                    lent = None;
                    progressed = true;
                }
            }
            let receiving = read.is_some();
            let sending = pending || lent.is_some();
            if !sending && !receiving {
                break Ok(());
            }
            if progressed {
                continue;
            }
            let mut peers = [0usize; 2];
            let mut np = 0;
            if let (true, Some((o, _))) = (sending, out) {
                peers[np] = o.dest;
                np += 1;
            }
            // A receive from any rank waits for every other rank.
            let any = receiving && source == Some(None);
            if let (true, Some(Some(src))) = (receiving, source) {
                peers[np] = src;
                np += 1;
            }
            let alone = any && self.member.size() == 1;
            // A non-blocking point-to-point call may wait for the rank itself: the rank goes
            // on meanwhile, and may send or receive what it waits for; and a receive may wait
            // for a message the rank sent itself as a request that is not posted yet.
            let later = self.ctx == Context::P2p && crate::sync::task::inside()
                || read.as_ref().is_some_and(|r| r.self_message_pending(self));
            if (alone || !any) && !later && peers[..np].iter().all(|&p| p == me) {
                let why = if receiving {
                    "nothing was sent to this rank by itself, and it would wait for itself"
                } else {
                    "the message is not received within the same call (only sendrecv with \
                     itself completes a large or buffer-filling self-message)"
                };
                break Err(self.fail(Error::SelfDeadlock {
                    rank: me,
                    op: self.op,
                    why,
                }));
            }
            let waited = self.wait(&peers[..np], any, || {
                let can_post = pending && out.is_some_and(|(o, mb)| mb.has_room(o.header.len));
                let arrived = read.as_ref().is_some_and(|r| r.arrived(self));
                let acked = lent.as_ref().is_some_and(|l| l.mb.is_consumed(l.n));
                can_post || arrived || acked
            });
            if let Err(e) = waited {
                break Err(e);
            }
        };
        // An unsettled loan is settled here (failure) or during unwinding, by `Lent::drop`.
        drop(lent);
        outcome.map(|()| result)
    }
}
