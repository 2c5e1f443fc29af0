//! [`ShmTransport::exchange_many`]: several sends and receives in flight at once, the engine
//! of [`ShmTransport::exchange`] generalised from one pending post, one expected receive and
//! one loan to any number of each.
//!
//! The loop is the engine's: post every outgoing message whose cell (or arena room) is free,
//! take every expected message that has arrived, note every loan the receiver has released,
//! and when nothing moved wait (spin → yield → park) for any of these, watching the run's
//! failure, the peers still needed having returned, and the team's timeout. Every post is
//! attempted before any wait, so a set of calls that matches up (each message some peer
//! expects, in the same order per edge) completes whatever the sizes. Messages to one
//! destination are posted in list order, and messages from one source are taken in list
//! order (a later one is not tried while an earlier one on the same edge is pending), so the
//! per-edge FIFO order of the mailboxes is the order of the lists.
//!
//! Every loan is a [`Lent`] in a vector that is dropped before the call returns — on success,
//! on error, and while unwinding — and each settles its loan on drop, so no caller's slice is
//! freed or written while a peer may still read it.

use super::{copy_in, header_of, outgoing, Lent, ShmTransport};
use crate::error::{Error, Result};
use crate::mailbox::Header;
use crate::mailbox::{Elem, Tag};

impl ShmTransport<'_> {
    /// Sends every `(dest, data)` of `sends` and receives every `(src, buf)` of `recvs`
    /// (exactly `buf.len()` elements each), all tagged `tag`, and returns once all are
    /// complete (a rendezvous send once its receiver has released it). Messages on one edge
    /// go and are taken in list order. Deadlock-free whatever the sizes, as long as the peers'
    /// calls match (everything is posted before anything is waited for); a failure, a
    /// mismatch, a timeout or a needed peer's exit is an `Err` that fails the run.
    pub(crate) fn exchange_many<T: Elem>(
        &self,
        sends: &[(usize, &[T])],
        recvs: &mut [(usize, &mut [T])],
        tag: Tag,
    ) -> Result<()> {
        let run = self.member.run();
        if run.is_aborted() {
            return Err(self.aborted());
        }
        for &(dest, _) in sends {
            self.check_rank(dest)?;
        }
        for (src, _) in recvs.iter() {
            self.check_rank(*src)?;
        }
        let me = self.member.rank();
        // The payloads of zero-sized elements (their counts); allocated once, before any
        // pointer into it is taken.
        let counts: Vec<u64> = sends.iter().map(|(_, d)| d.len() as u64).collect();
        let outs: Vec<_> = sends
            .iter()
            .zip(&counts)
            .map(|(&(dest, data), count)| {
                let o = outgoing(dest, tag, data, count);
                let mb = self.mailbox(me, dest);
                (o, mb)
            })
            .collect();
        let expects: Vec<Header> = recvs
            .iter()
            .map(|(_, buf)| header_of::<T>(tag, buf.len()))
            .collect();
        let parker = &run.ranks.parkers[self.member.shared().members[me]];
        let policy = &run.ranks.policy;
        let mut pending: Vec<bool> = vec![true; outs.len()];
        let mut received: Vec<bool> = vec![false; recvs.len()];
        // The loans of posted rendezvous sends, until their receivers release them.
        let mut loans: Vec<Lent<'_>> = Vec::new();

        let outcome = loop {
            let mut progressed = false;
            for i in 0..outs.len() {
                let (o, mb) = &outs[i];
                if !pending[i] || (0..i).any(|k| pending[k] && outs[k].0.dest == o.dest) {
                    continue;
                }
                // SAFETY: `o.data` is the caller's slice of `o.header.len` bytes (or the
                // count in `counts`), borrowed for this whole call; if it is lent, its `Lent`
                // in `loans` settles the loan before the call ends, however it ends.
                if let Some((n, is_lent)) = unsafe { mb.try_post(o.header, o.data) } {
                    if is_lent {
                        loans.push(Lent {
                            mb,
                            n,
                            released: false,
                            parker,
                            policy,
                        });
                    }
                    pending[i] = false;
                    progressed = true;
                    self.unpark(o.dest);
                }
            }
            let mut failed = None;
            for i in 0..recvs.len() {
                let src = recvs[i].0;
                if received[i] || (0..i).any(|k| !received[k] && recvs[k].0 == src) {
                    continue;
                }
                let mb = self.mailbox(src, me);
                let Some(found) = mb.front() else { continue };
                let expect = expects[i];
                if found != expect {
                    failed = Some(self.mismatch::<T>(src, &expect, &found));
                    break;
                }
                let buf = &mut *recvs[i].1;
                let n = buf.len();
                // SAFETY: the header matched, so the bytes are the wire form of `n` `T`s
                // published by the sender.
                match self.take_from(mb, src, |p| unsafe { copy_in(p, buf) }) {
                    Ok(got) if got == n => {}
                    Ok(got) => {
                        failed = Some(self.zero_sized_mismatch::<T>(src, tag, n, got));
                        break;
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
                received[i] = true;
                progressed = true;
            }
            if let Some(e) = failed {
                break Err(e);
            }
            for l in loans.iter_mut().filter(|l| !l.released) {
                if l.mb.is_consumed(l.n) {
                    l.released = true;
                    progressed = true;
                }
            }
            let sending: Vec<usize> = outs
                .iter()
                .enumerate()
                .filter(|&(i, _)| pending[i])
                .map(|(_, (o, _))| o.dest)
                .collect();
            let lent = loans.iter().any(|l| !l.released);
            let receiving: Vec<usize> = recvs
                .iter()
                .enumerate()
                .filter(|&(i, _)| !received[i])
                .map(|(_, (src, _))| *src)
                .collect();
            if sending.is_empty() && !lent && receiving.is_empty() {
                break Ok(());
            }
            if progressed {
                continue;
            }
            // The peers still needed: pending destinations, sources, and the receivers of
            // unreleased loans (found by their mailbox among the outgoing ones).
            let mut peers = sending;
            peers.extend(&receiving);
            for l in loans.iter().filter(|l| !l.released) {
                if let Some((o, _)) = outs.iter().find(|(_, mb)| std::ptr::eq(*mb, l.mb)) {
                    peers.push(o.dest);
                }
            }
            if peers.iter().all(|&p| p == me) {
                let why = if !receiving.is_empty() {
                    "nothing was sent to this rank by itself, and it would wait for itself"
                } else {
                    "the message is not received within the same call (only an exchange with \
                     itself completes a large or buffer-filling self-message)"
                };
                break Err(self.member.fail(Error::SelfDeadlock {
                    rank: me,
                    op: self.op,
                    why,
                }));
            }
            let waited = self.wait(&peers, false, || {
                let can_post = outs
                    .iter()
                    .enumerate()
                    .any(|(i, (o, mb))| pending[i] && mb.has_room(o.header.len));
                let arrived = recvs
                    .iter()
                    .enumerate()
                    .any(|(i, (src, _))| !received[i] && self.mailbox(*src, me).front().is_some());
                let acked = loans.iter().any(|l| !l.released && l.mb.is_consumed(l.n));
                can_post || arrived || acked
            });
            if let Err(e) = waited {
                break Err(e);
            }
        };
        // Unsettled loans are settled here (failure) or during unwinding, by `Lent::drop`.
        drop(loans);
        outcome
    }

    /// The error for `got` elements of a zero-sized type where `n` were expected.
    pub(super) fn zero_sized_mismatch<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        n: usize,
        got: usize,
    ) -> Error {
        let expect = header_of::<T>(tag, n);
        let mut e = self.mismatch::<T>(src, &expect, &expect);
        if let Error::Mismatch {
            expected, found, ..
        } = &mut e
        {
            let what = Tag::describe(expect.tag);
            let of = "a zero-sized type";
            *expected = format!("{what}: {}", crate::mailbox::names::elements(n, of));
            *found = format!("{what}: {}", crate::mailbox::names::elements(got, of));
        }
        e
    }
}
