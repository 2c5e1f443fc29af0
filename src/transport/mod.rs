//! The point-to-point layer every schedule is written against.
//!
//! [`Transport`] is what an algorithm may ask of the ranks it runs on: send, receive,
//! exchange, and receive-and-combine, each naming a peer and a [`Tag`]. The shared-memory
//! implementation ([`shm`]) runs over the mailboxes, the MPI one (`mpi`, feature `mpi`) over
//! MPI point-to-point between processes, and [`sim`] records what a schedule asks for the
//! cost-model simulator (module `sim`), so one schedule serves all three.
//!
//! The shared-memory transport's exchange engine, how its calls end and unwind, and its loom
//! models: `README.md` in this folder.

mod permuted;
pub(crate) mod shm;
pub(crate) mod sim;
pub(crate) mod wire;

pub(crate) use permuted::Permuted;

use crate::error::{Error, Result};
use crate::mailbox::{Elem, Tag};

/// Point-to-point between the ranks of one communicator, in the terms schedules need.
///
/// Every method blocks until its part is done: a send until the data may be reused, a receive
/// until the data is in place. A failure (peer gone, mismatch, timeout, another rank's
/// failure) is an `Err` on this rank and stops the whole run, so that no rank is left waiting.
pub(crate) trait Transport {
    /// This rank.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Records `e` as a failure of the ranks this transport connects, so that none of them
    /// waits for this one any more (the shared-memory transport fails the run; between
    /// processes and in the simulator there is nothing to record), and returns it.
    fn fail(&self, e: Error) -> Error;
    /// Sends `data` to `dest`.
    fn send<T: Elem>(&self, dest: usize, tag: Tag, data: &[T]) -> Result<()>;
    /// Receives exactly `buf.len()` elements from `src`.
    fn recv<T: Elem>(&self, src: usize, tag: Tag, buf: &mut [T]) -> Result<()>;
    /// Sends `send` to `dest` while receiving `recv` from `src`, without deadlock whatever the
    /// sizes (the send is posted before the receive is waited for).
    fn sendrecv<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        recv: &mut [T],
        tag: Tag,
    ) -> Result<()>;
    /// Sends every `(dest, data)` of `sends` and receives every `(src, buf)` of `recvs`
    /// (exactly `buf.len()` elements each), all with `tag`, and returns once all are done.
    /// Messages on one edge go and are taken in list order.
    ///
    /// The default runs them one at a time: pair i as a [`Transport::sendrecv`] of `sends[i]`
    /// and `recvs[i]`, then the unpaired rest one by one — deadlock-free when the peers make
    /// matching calls in the same order (as the linear-shift rounds of the hierarchical
    /// all-to-all do). The shared-memory transport overrides it with one engine that has all
    /// of them in flight at once, deadlock-free whatever the order.
    #[allow(dead_code)] // the fallback of transports without a many-message engine
    fn exchange_many<T: Elem>(
        &self,
        sends: &[(usize, &[T])],
        recvs: &mut [(usize, &mut [T])],
        tag: Tag,
    ) -> Result<()> {
        let pairs = sends.len().min(recvs.len());
        for (&(dest, data), (src, buf)) in sends.iter().zip(recvs.iter_mut()) {
            self.sendrecv(dest, data, *src, buf, tag)?;
        }
        for &(dest, data) in &sends[pairs..] {
            self.send(dest, tag, data)?;
        }
        for (src, buf) in recvs[pairs..].iter_mut() {
            self.recv(*src, tag, buf)?;
        }
        Ok(())
    }
    /// Receives `acc.len()` elements from `src` and combines them into `acc` with
    /// `combine(acc, incoming)`, reading the incoming elements where the sender published them
    /// (no intermediate copy for large messages).
    fn recv_reduce<T: Elem>(
        &self,
        src: usize,
        tag: Tag,
        acc: &mut [T],
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()>;
    /// The butterfly's exchange: sends `buf` to `peer` and combines `peer`'s message of the
    /// same length into `buf` with `combine(buf, incoming)`. The outgoing data must not change
    /// while the peer may still read it, so this copies `buf` into `scratch` first (reusing its
    /// allocation across calls) unless the transport copies the message anyway.
    fn exchange_reduce<T: Elem>(
        &self,
        peer: usize,
        buf: &mut [T],
        scratch: &mut Vec<T>,
        tag: Tag,
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()> {
        scratch.clear();
        crate::copy::extend(scratch, buf);
        self.sendrecv_reduce(peer, scratch, peer, buf, tag, combine)
    }
    /// [`Transport::sendrecv`] whose receive combines like [`Transport::recv_reduce`].
    fn sendrecv_reduce<T: Elem>(
        &self,
        dest: usize,
        send: &[T],
        src: usize,
        acc: &mut [T],
        tag: Tag,
        combine: &mut dyn FnMut(&mut [T], &[T]),
    ) -> Result<()>;
}
