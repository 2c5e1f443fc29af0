//! Point-to-point among the threads of one process: blocking sends and receives, probes, and
//! the non-blocking forms a scope runs as tasks. Every send to a destination goes in its turn
//! after the rank's earlier non-blocking sends to it, and every receive after the receives the
//! rank posted earlier (`transport::shm`'s posted receives), as MPI orders them.

use super::Local;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
#[cfg(feature = "mpi")]
use crate::transport::shm::Gate;
use crate::transport::shm::{Found, PostedRecv, PostedSend, ShmTransport, Want};
use crate::transport::Transport;

impl Local {
    fn p2p(&self, op: &'static str) -> ShmTransport<'_> {
        ShmTransport::p2p(&self.member, op)
    }

    /// Sends `data` to `dest` with user tag `tag` on `t`, once the earlier sends to `dest`
    /// have gone (`queue`: after them even if none waits, as a non-blocking send must).
    fn send_in_turn<T: Elem>(
        &self,
        t: &ShmTransport<'_>,
        (dest, tag, data): (usize, u32, &[T]),
        queue: bool,
    ) -> Result<()> {
        let m = &self.matcher;
        t.in_turn(m, dest, queue, || {
            if dest == self.rank() && t.send_to_posted(m, tag, data)? {
                return Ok(());
            }
            t.send(dest, Tag::p2p(tag), data)
        })
    }

    /// Point-to-point send with user tag `tag` among the threads of one process (`Comm` has
    /// checked the arguments).
    pub(crate) fn send<T: Elem>(&self, dest: usize, tag: u32, data: &[T]) -> Result<()> {
        self.send_in_turn(&self.p2p("send"), (dest, tag, data), false)
    }

    /// [`Local::send`] as a non-blocking send runs it (in a task of a scope): in its turn
    /// among the rank's sends to `dest` even when it has to wait before it is posted.
    pub(crate) fn isend<T: Elem>(&self, dest: usize, tag: u32, data: &[T]) -> Result<()> {
        self.send_in_turn(&self.p2p("isend"), (dest, tag, data), true)
    }

    /// The start of a non-blocking send, which completes it if it can: an eager message that
    /// is posted at once, or one to the rank itself that a posted receive takes (`false`: it
    /// must run as a request, [`Local::isend`]).
    pub(crate) fn isend_now<T: Elem>(&self, dest: usize, tag: u32, data: &[T]) -> Result<bool> {
        self.p2p("isend")
            .try_send_now(&self.matcher, dest, tag, data)
    }

    /// Takes a ticket for a non-blocking send of `data` to `dest` that could not complete as it
    /// started, held by the caller (`transport::shm::PostedSend`); `None` for one that runs as
    /// a task (to the rank itself, or of zero-sized elements).
    ///
    /// # Safety
    /// As `ShmTransport::post_send`: the result is dropped before `data`'s borrow ends.
    pub(crate) unsafe fn post_send<T: Elem>(
        &self,
        dest: usize,
        tag: u32,
        data: &[T],
    ) -> Option<PostedSend<'_>> {
        // SAFETY: per the contract.
        unsafe { self.p2p("isend").post_send(&self.matcher, dest, tag, data) }
    }

    /// Point-to-point receive of the first message `want` accepts.
    pub(crate) fn recv<T: Elem>(&self, want: Want, buf: &mut [T]) -> Result<Found> {
        self.p2p("recv").recv_matching(&self.matcher, want, buf)
    }

    /// [`Local::recv`] as a non-blocking receive runs it (in a task of a scope): posted if its
    /// message has not arrived, so that it is matched before the rank's later receives.
    pub(crate) fn irecv<T: Elem>(&self, want: Want, buf: &mut [T]) -> Result<Found> {
        self.p2p("irecv").recv_posted(&self.matcher, want, buf)
    }

    /// Posts a receive of `want` into `buf` that messages from elsewhere may fill instead
    /// (`transport::shm::PostedRecv`: a receive from any rank of a team that spans processes).
    ///
    /// # Safety
    /// As `ShmTransport::post_shared`: the result is dropped before `buf`'s borrow ends, and
    /// `buf` is left alone until then unless `gate` was closed elsewhere.
    #[cfg(feature = "mpi")]
    pub(crate) unsafe fn post_shared<T: Elem>(
        &self,
        want: Want,
        buf: &mut [T],
        gate: &Gate,
    ) -> PostedRecv<'_> {
        // SAFETY: per the contract.
        unsafe {
            self.p2p("irecv")
                .post_shared(&self.matcher, want, buf, gate)
        }
    }

    /// Posts a receive of `want` into `buf`, held by the caller: a scope's non-blocking
    /// receive whose message has not arrived (`transport::shm::PostedRecv`).
    ///
    /// # Safety
    /// As `ShmTransport::post_recv`: the result is dropped before `buf`'s borrow ends, and
    /// `buf` is left alone until then.
    pub(crate) unsafe fn post_recv<T: Elem>(&self, want: Want, buf: &mut [T]) -> PostedRecv<'_> {
        // SAFETY: per the contract.
        unsafe { self.p2p("irecv").post_recv(&self.matcher, want, buf) }
    }

    /// One look for a message for posted receive `r`: its outcome if it has been matched here.
    pub(crate) fn poll_posted(&self, r: &PostedRecv<'_>) -> Result<Option<Found>> {
        self.p2p("irecv").poll_posted(r)
    }

    /// Whether [`Local::poll_posted`] could find `r`'s message now.
    pub(crate) fn posted_arrived(&self, r: &PostedRecv<'_>) -> bool {
        self.p2p("irecv").posted_arrived(r)
    }

    /// Waits for posted receive `r`'s message (`Some`) or for `also()` (`None`), as a blocking
    /// receive waits.
    pub(crate) fn wait_posted(
        &self,
        r: &PostedRecv<'_>,
        also: &dyn Fn() -> bool,
    ) -> Result<Option<Found>> {
        self.p2p("irecv").wait_posted(r, also)
    }

    /// Sends `send` (destination, tag, data) and receives the first message `want` accepts,
    /// in one call that cannot deadlock against a matching one.
    pub(crate) fn sendrecv<T: Elem>(
        &self,
        send: (usize, u32, &[T]),
        want: Want,
        recv: &mut [T],
    ) -> Result<Found> {
        let t = self.p2p("sendrecv");
        let m = &self.matcher;
        let (dest, tag, data) = send;
        t.in_turn(m, dest, false, || {
            if dest == self.rank() && t.send_to_posted(m, tag, data)? {
                return t.recv_matching(m, want, recv);
            }
            t.sendrecv_matching(m, send, want, recv)
        })
    }

    /// Receives the first message `want` accepts if one has arrived, without waiting.
    #[cfg(feature = "mpi")]
    pub(crate) fn try_recv<T: Elem>(&self, want: Want, buf: &mut [T]) -> Result<Option<Found>> {
        self.p2p("recv").try_recv_matching(&self.matcher, want, buf)
    }

    /// Receives the first message `want` accepts if one was moved aside, without looking at
    /// the mailboxes: a non-blocking receive's start (`ShmTransport::try_recv_aside`).
    pub(crate) fn try_recv_aside<T: Elem>(
        &self,
        want: Want,
        buf: &mut [T],
    ) -> Result<Option<Found>> {
        self.p2p("irecv").try_recv_aside(&self.matcher, want, buf)
    }

    /// Reports the first message `want` accepts without receiving it (waiting for one if
    /// `block`).
    pub(crate) fn probe<T: Elem>(
        &self,
        op: &'static str,
        want: Want,
        block: bool,
    ) -> Result<Option<Found>> {
        self.p2p(op).probe::<T>(&self.matcher, want, block)
    }
}
