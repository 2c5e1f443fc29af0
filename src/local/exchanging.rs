//! A non-blocking allreduce that is one exchange: on two ranks, a short vector's allreduce is
//! recursive doubling's one exchange (`algorithms::allreduce`), an eager message each way. Its
//! request posts this rank's message as it starts and is then only the receive of the peer's,
//! combined in rank order into the buffer when it comes ([`Exchanging`]), which the scope
//! advances and waits for as it does a posted receive: no task, no stack. The message, its tag
//! and the combine are the blocking call's, so a rank that runs the call as a task (its turn
//! on the shadow had not come, or no cell was free) meets this one on the wire, with the same
//! bits.

use super::Local;
use crate::algorithms::allreduce::{combine, Schedule};
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{op_word, Elem, Kind, Tag};
use crate::op::Op;
use crate::select::{Algorithm, Flat};
use crate::transport::shm::ShmTransport;
use std::marker::PhantomData;
use std::mem::{size_of, size_of_val};

/// What an [`Exchanging`]'s look needs besides the op: whom it receives from, with which tag,
/// into which buffer (erased to bytes), and the communicator's size (for the op's finish).
struct Look {
    peer: usize,
    tag: Tag,
    buf: *mut u8,
    len: usize,
    size: usize,
}

/// A look for the peer's message with the op of the allreduce (a closure that holds only the
/// op, so that the usual ops, which hold nothing, cost no allocation): whether it came and
/// was combined into the buffer.
type LookFn<'a> = Box<dyn Fn(&ShmTransport<'_>, &Look) -> Result<bool> + 'a>;

/// The rest of a non-blocking allreduce that is one exchange (module docs): the peer's message,
/// combined into the buffer when it comes. Dropped unfinished (the run failed), it leaves the
/// buffer as it was or half combined; it never touches it after.
pub(crate) struct Exchanging<'a> {
    local: &'a Local,
    look: Look,
    look_fn: LookFn<'a>,
    _buf: PhantomData<&'a mut [u8]>,
}

impl<'a> Exchanging<'a> {
    /// One look for the peer's message: whether the allreduce has completed (its result in
    /// the buffer), or its error.
    pub(crate) fn poll(&mut self) -> Result<bool> {
        (self.look_fn)(&self.local.coll("allreduce"), &self.look)
    }

    /// Whether [`Exchanging::poll`] would find the peer's message (or the run's failure).
    pub(crate) fn arrived(&self) -> bool {
        self.local.coll("allreduce").message_from(self.look.peer)
    }

    /// Waits as a blocking receive does until the peer's message has come or `also()` holds.
    pub(crate) fn wait(&self, also: &dyn Fn() -> bool) -> Result<()> {
        self.local.coll("allreduce").wait_from(self.look.peer, also)
    }
}

impl Local {
    /// Starts the allreduce of `buf` under `op` with `algorithm` as one exchange if it is one
    /// (two ranks, an eager message, recursive doubling chosen, a cell free): posts this rank's
    /// message and returns the rest (`Ok`); otherwise does nothing and hands `op` back (`Err`),
    /// for the whole call to run as a task.
    ///
    /// # Safety
    /// The result must be dropped before `buf`'s borrow ends, and `buf` left alone until then.
    pub(crate) unsafe fn iallreduce_exchange<'a, T, O>(
        &'a self,
        buf: &mut [T],
        op: O,
        algorithm: Algorithm,
    ) -> Result<std::result::Result<Exchanging<'a>, O>>
    where
        T: Elem,
        O: Op<T> + 'a,
    {
        let bytes = size_of_val(buf);
        // On two ranks, the other one.
        let peer = self.rank() ^ 1;
        let one_exchange = self.size() == 2
            && size_of::<T>() != 0
            && self.coll("allreduce").eager_room(peer, bytes)
            && self.allreduce_choice(bytes, op.is_commutative(), algorithm)
                == (
                    Algorithm::RecursiveDoubling,
                    Some(Flat::Schedule(Schedule::RecursiveDoubling)),
                );
        if !one_exchange {
            return Ok(Err(op));
        }
        // The blocking call's first steps (`allreduce_impl`): at p = 2, recursive doubling
        // makes no call check, its message carries what the check would compare.
        self.enter_call("allreduce")?;
        let tag = self.next_tag(Kind::Coll(Collective::Allreduce));
        self.chose(Algorithm::RecursiveDoubling);
        let tag = tag
            .with_variant(Algorithm::RecursiveDoubling.id())
            .with_op(op_word(op.identity()));
        let t = self.coll("allreduce");
        if !t.try_send_eager(peer, tag, buf) {
            // The cell was free: only the run's failure refuses the message.
            return Err(t.aborted());
        }
        let look_fn: LookFn<'a> = Box::new(move |t, l: &Look| {
            // SAFETY: the buffer is the caller's, borrowed until the request is dropped and
            // left alone meanwhile (the contract), `len` `T`s.
            let buf = unsafe { std::slice::from_raw_parts_mut(l.buf.cast::<T>(), l.len) };
            let peer_lower = l.peer == 0;
            let got = t.try_recv_reduce(l.peer, l.tag, buf, &mut |acc, inc| {
                combine(&op, peer_lower, acc, inc)
            })?;
            if got {
                op.finish(buf, l.size);
            }
            Ok(got)
        });
        Ok(Ok(Exchanging {
            local: self,
            look: Look {
                peer,
                tag,
                buf: buf.as_mut_ptr().cast(),
                len: buf.len(),
                size: self.size(),
            },
            look_fn,
            _buf: PhantomData,
        }))
    }
}
