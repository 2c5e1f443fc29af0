//! The engine of the shared-memory transport, [`ShmTransport::exchange`]: one send and one
//! receive in flight at once, each step taken as soon as it can be, and between steps a wait
//! for whichever of them the call still needs (module docs of `transport::shm`).

use super::{Incoming, Lent, Outgoing, ShmTransport};
use crate::error::{Error, Result};
use crate::mailbox::Header;
use crate::transport::Transport;

impl ShmTransport<'_> {
    /// The engine: posts `send` (if any), receives `recv` (if any), and returns once both are
    /// complete — for a rendezvous send, once the receiver has released the lent slice.
    pub(super) fn exchange<R, F: FnOnce(*const u8) -> R>(
        &self,
        send: Option<Outgoing>,
        recv: Option<Incoming<F>>,
        mismatch: fn(&Self, usize, &Header, &Header) -> Error,
    ) -> Result<Option<R>> {
        let run = self.member.run();
        if run.is_aborted() {
            return Err(self.aborted());
        }
        let me = self.member.rank();
        if let Some(o) = &send {
            self.check_rank(o.dest)?;
        }
        if let Some(i) = &recv {
            self.check_rank(i.src)?;
        }
        let out = send.as_ref().map(|o| (o, self.mailbox(me, o.dest)));
        let inb = recv
            .as_ref()
            .map(|i| (i.src, i.expect, self.mailbox(i.src, me)));
        let mut read = recv.map(|i| i.read);
        let parker = &run.ranks.parkers[self.member.shared().members[me]];
        let policy = &run.ranks.policy;
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
                        lent = Some(Lent {
                            mb,
                            n,
                            released: false,
                            parker,
                            policy,
                        });
                    }
                    pending = false;
                    progressed = true;
                    self.unpark(o.dest);
                }
            }
            if let (true, Some((src, expect, mb))) = (read.is_some(), inb) {
                if let Some(found) = mb.front() {
                    if found != expect {
                        break Err(mismatch(self, src, &expect, &found));
                    }
                    let f = read.take().expect("reader present");
                    match self.take_from(mb, src, f) {
                        Ok(r) => result = Some(r),
                        Err(e) => break Err(e),
                    }
                    progressed = true;
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
            if let (true, Some((src, _, _))) = (receiving, inb) {
                peers[np] = src;
                np += 1;
            }
            if peers[..np].iter().all(|&p| p == me) {
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
            let waited = self.wait(&peers[..np], || {
                let can_post = pending && out.is_some_and(|(o, mb)| mb.has_room(o.header.len));
                let arrived = receiving && inb.is_some_and(|(_, _, mb)| mb.front().is_some());
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
