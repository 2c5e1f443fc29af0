//! The recording half of the cost-model simulator (module `sim`): a [`Transport`] for one
//! rank that moves no data and blocks on nothing, but writes down what the schedule asked of
//! it — every send and receive with its peer, length and tag, grouped by call, and every
//! reduction with its length — as a [`Trace`].
//!
//! **Why one rank at a time works.** The crate's schedules are oblivious: who talks to whom,
//! how much and in which order depends on (rank, p, length, block, root) only, never on the
//! values received. So each rank's schedule can run alone, to completion, against a transport
//! whose receives return at once with whatever the buffer held; the traces of all p ranks,
//! matched edge by edge afterwards (`sim::engine`), are exactly what the real run would
//! exchange. A schedule that did branch on received data would still run here, but the
//! simulator would follow the path of meaningless data; none does (the data-flow tests of each
//! schedule check their results, this only checks their messages).
//!
//! **No data at all.** The simulator runs schedules on [`Unit`], a zero-sized element, so a
//! vector of 10⁹ elements costs no memory and a copy of it no time; the model's element size
//! turns lengths into bytes. Reductions are recorded twice over: by [`SimOp`] when a schedule
//! folds with the op itself, and by the transport's `recv_reduce`/`sendrecv_reduce`, which
//! record the reduction instead of calling the schedule's combine closure (there is nothing to
//! combine). Local copies are not recorded: the model has no term for them.

use super::Transport;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use parking_lot::Mutex;

/// The simulator's element: no bytes, one value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Unit;

/// One message of a recorded call: the other rank, the length in elements and the tag word
/// ([`Tag::encode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Msg {
    /// The destination of a send, the source of a receive.
    pub peer: u32,
    /// Elements.
    pub elems: u64,
    /// The tag, encoded.
    pub tag: u64,
}

/// One step of a rank's trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// A blocking call that posts `sends` sends and then `recvs` receives, all in flight at
    /// once, and returns when all are done: `Trace::msgs[start..start + sends]` are the sends,
    /// the `recvs` after them the receives.
    Comm {
        /// Index of the call's first message in `Trace::msgs`.
        start: u32,
        /// Number of sends.
        sends: u32,
        /// Number of receives.
        recvs: u32,
    },
    /// A reduction of this many elements (one op application per element).
    Reduce {
        /// Elements combined.
        elems: u64,
    },
}

/// What one rank's schedule did, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Trace {
    /// The steps.
    pub steps: Vec<Step>,
    /// The messages of the `Comm` steps.
    pub msgs: Vec<Msg>,
}

impl Trace {
    /// The sends and the receives of a `Comm` step.
    pub(crate) fn messages(&self, start: u32, sends: u32, recvs: u32) -> (&[Msg], &[Msg]) {
        let (s, n, r) = (start as usize, sends as usize, recvs as usize);
        (&self.msgs[s..s + n], &self.msgs[s + n..s + n + r])
    }

    /// Appends `other`, the trace of one rank of a sub-communicator, with each peer renamed
    /// by `map` (its rank in the sub-communicator → its rank in the whole). The hierarchical
    /// compositions of the simulator (`sim::compose`) build a rank's trace from its stages so.
    pub(crate) fn append_mapped(&mut self, other: &Trace, map: impl Fn(u32) -> u32) {
        let offset = u32::try_from(self.msgs.len()).expect("fewer than 2^32 messages per rank");
        self.msgs.extend(other.msgs.iter().map(|m| Msg {
            peer: map(m.peer),
            ..*m
        }));
        self.steps.extend(other.steps.iter().map(|s| match *s {
            Step::Comm {
                start,
                sends,
                recvs,
            } => Step::Comm {
                start: start + offset,
                sends,
                recvs,
            },
            reduce => reduce,
        }));
    }

    /// Records a call.
    fn comm(&mut self, sends: &[(usize, usize)], recvs: &[(usize, usize)], tag: Tag) {
        let word = tag.encode();
        let start = u32::try_from(self.msgs.len()).expect("fewer than 2^32 messages per rank");
        let msg = |&(peer, elems): &(usize, usize)| Msg {
            peer: peer as u32,
            elems: elems as u64,
            tag: word,
        };
        self.msgs.extend(sends.iter().map(msg));
        self.msgs.extend(recvs.iter().map(msg));
        self.steps.push(Step::Comm {
            start,
            sends: sends.len() as u32,
            recvs: recvs.len() as u32,
        });
    }

    /// Records a reduction (none for an empty one).
    fn reduce(&mut self, elems: usize) {
        if elems > 0 {
            self.steps.push(Step::Reduce {
                elems: elems as u64,
            });
        }
    }
}

/// The recording transport of rank `rank` of `size` (module docs).
pub(crate) struct SimTransport {
    rank: usize,
    size: usize,
    // A lock only because `SimOp` shares the trace and ops must be `Sync`; one thread uses it.
    trace: Mutex<Trace>,
}

impl SimTransport {
    /// An empty trace for rank `rank` of `size`.
    pub(crate) fn new(rank: usize, size: usize) -> SimTransport {
        SimTransport {
            rank,
            size,
            trace: Mutex::new(Trace::default()),
        }
    }

    /// What the schedule did.
    pub(crate) fn into_trace(self) -> Trace {
        self.trace.into_inner()
    }

    /// Records a reduction of `elems` elements.
    fn reduced(&self, elems: usize) {
        self.trace.lock().reduce(elems);
    }

    /// Records a call of `sends` and `recvs` ((peer, elements) each).
    fn record(&self, sends: &[(usize, usize)], recvs: &[(usize, usize)], tag: Tag) {
        self.trace.lock().comm(sends, recvs, tag);
    }
}

impl Transport for SimTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn fail(&self, e: Error) -> Error {
        e
    }

    fn send<T: Elem>(&self, dest: usize, tag: Tag, data: &[T]) -> Result<()> {
        self.record(&[(dest, data.len())], &[], tag);
        Ok(())
    }

    fn recv<T: Elem>(&self, src: usize, tag: Tag, buf: &mut [T]) -> Result<()> {
        self.record(&[], &[(src, buf.len())], tag);
        Ok(())
    }

    fn sendrecv<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        recv: &mut [T],
        tag: Tag,
    ) -> Result<()> {
        self.record(&[(dest, send.len())], &[(src, recv.len())], tag);
        Ok(())
    }

    fn exchange_many<T: Elem>(
        &self,
        sends: &[(usize, &[T])],
        recvs: &mut [(usize, &mut [T])],
        tag: Tag,
    ) -> Result<()> {
        let s: Vec<(usize, usize)> = sends.iter().map(|(d, x)| (*d, x.len())).collect();
        let r: Vec<(usize, usize)> = recvs.iter().map(|(d, x)| (*d, x.len())).collect();
        self.record(&s, &r, tag);
        Ok(())
    }

    fn recv_reduce<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        acc: &mut [T],
        _combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        self.record(&[], &[(src, acc.len())], tag);
        self.reduced(acc.len());
        Ok(())
    }

    fn exchange_reduce<T: Elem>(
        &self,
        peer: usize,
        buf: &mut [T],
        _scratch: &mut Vec<T>,
        tag: Tag,
        _combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        // The real transports copy `buf` aside first; the model has no term for copies.
        self.record(&[(peer, buf.len())], &[(peer, buf.len())], tag);
        self.reduced(buf.len());
        Ok(())
    }

    fn sendrecv_reduce<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        acc: &mut [T],
        tag: Tag,
        _combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        self.record(&[(dest, send.len())], &[(src, acc.len())], tag);
        self.reduced(acc.len());
        Ok(())
    }
}

/// The simulator's op: combines nothing, records how much it was asked to combine in the
/// transport's trace, and says it is commutative or not as the simulated call's op would.
pub(crate) struct SimOp<'a> {
    /// Where to record.
    pub transport: &'a SimTransport,
    /// Whether the simulated op is commutative (some schedules and `Auto` depend on it).
    pub commutative: bool,
}

impl Op<Unit> for SimOp<'_> {
    fn fold_right(&self, acc: &mut [Unit], _rhs: &[Unit]) {
        self.transport.reduced(acc.len());
    }

    fn fold_left(&self, _lhs: &[Unit], acc: &mut [Unit]) {
        self.transport.reduced(acc.len());
    }

    fn is_commutative(&self) -> bool {
        self.commutative
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::mailbox::Kind;

    /// A call is recorded as one step with its sends before its receives; a reduction as one
    /// step, an empty one not at all.
    #[test]
    fn records_calls_and_reductions() {
        let t = SimTransport::new(1, 4);
        let tag = Tag {
            kind: Kind::Coll(crate::Collective::Allreduce),
            variant: 8,
            seq: 3,
            op: 0,
        };
        let mut buf = vec![Unit; 10];
        t.sendrecv(2, &buf[..4], 0, &mut [Unit; 6][..], tag)
            .unwrap();
        t.recv_reduce(3, tag, &mut buf, &mut |_, _| unreachable!())
            .unwrap();
        let op = SimOp {
            transport: &t,
            commutative: false,
        };
        op.fold_left(&[], &mut buf[..0]);
        op.fold_right(&mut buf[..7], &[Unit; 7]);
        let trace = t.into_trace();
        assert_eq!(trace.steps.len(), 4);
        let Step::Comm {
            start,
            sends,
            recvs,
        } = trace.steps[0]
        else {
            panic!("{:?}", trace.steps[0]);
        };
        let (s, r) = trace.messages(start, sends, recvs);
        let word = tag.encode();
        assert_eq!(
            s,
            [Msg {
                peer: 2,
                elems: 4,
                tag: word
            }]
        );
        assert_eq!(
            r,
            [Msg {
                peer: 0,
                elems: 6,
                tag: word
            }]
        );
        assert_eq!(trace.steps[2], Step::Reduce { elems: 10 });
        assert_eq!(trace.steps[3], Step::Reduce { elems: 7 });
    }

    /// A trace appended under a renaming keeps its steps and lengths, renames its peers and
    /// points its calls at their own messages.
    #[test]
    fn appends_renamed() {
        let tag = Tag {
            kind: Kind::Coll(crate::Collective::Broadcast),
            variant: 1,
            seq: 1,
            op: 0,
        };
        let t = SimTransport::new(0, 2);
        t.send(1, tag, &[Unit; 3]).unwrap();
        let first = t.into_trace();
        let mut whole = first.clone();
        whole.append_mapped(&first, |peer| 10 + peer);
        assert_eq!(whole.steps.len(), 2);
        let Step::Comm {
            start,
            sends,
            recvs,
        } = whole.steps[1]
        else {
            panic!("{:?}", whole.steps[1]);
        };
        let (s, r) = whole.messages(start, sends, recvs);
        assert_eq!((s[0].peer, s[0].elems, r.len()), (11, 3, 0));
        assert_eq!(whole.messages(0, 1, 0).0[0].peer, 1);
    }
}
