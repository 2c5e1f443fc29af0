//! Point-to-point: `send`, `recv`, `sendrecv` and `probe`, with tags, a receive from any rank
//! and "no peer" (MPI's `MPI_ANY_SOURCE`, `MPI_ANY_TAG` and `MPI_PROC_NULL`).

use super::{Comm, Span};
use crate::error::{Error, Result};
use crate::mailbox::{names, Elem};
use crate::transport::shm::{Found, Want};

/// The other end of a point-to-point call: a rank of the communicator, any rank (receives and
/// probes only, as `MPI_ANY_SOURCE`), or no rank at all (as `MPI_PROC_NULL`: a send to no
/// peer completes at once and sends nothing, a receive from no peer completes at once and
/// leaves the buffer alone).
///
/// A rank converts into a `Peer`, and so does an `Option` of one (`None` is no peer), so that
/// a halo exchange is the same call on every rank, the boundary ranks included:
///
/// ```
/// use corecoll::Peer;
/// let out = corecoll::run(4, |comm| {
///     let (r, p) = (comm.rank(), comm.size());
///     let left = r.checked_sub(1);
///     let right = (r + 1 < p).then_some(r + 1);
///     // Send my rank to the right, receive my left neighbour's.
///     let mut from_left = [usize::MAX];
///     comm.sendrecv(right, &[r], left, &mut from_left).unwrap();
///     from_left[0]
/// })
/// .unwrap();
/// assert_eq!(out, vec![usize::MAX, 0, 1, 2]);
/// assert_eq!(Peer::from(None), Peer::None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// A rank of the communicator.
    Rank(usize),
    /// Any rank: a receive or probe takes the first matching message from whichever rank.
    Any,
    /// No rank: the call completes at once without sending or receiving anything.
    None,
}

impl From<usize> for Peer {
    fn from(rank: usize) -> Peer {
        Peer::Rank(rank)
    }
}

impl From<Option<usize>> for Peer {
    fn from(rank: Option<usize>) -> Peer {
        rank.map_or(Peer::None, Peer::Rank)
    }
}

/// The tag a receive or probe passes to take a message whatever its tag (`MPI_ANY_TAG`).
pub const ANY_TAG: u32 = u32::MAX;

pub use crate::mailbox::TAG_MAX;

/// What a receive got, or what a probe found: who sent it, with which tag, and how many
/// elements (as `MPI_Status` with `MPI_Get_count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status {
    /// The sender, or `None` for a receive from [`Peer::None`].
    pub source: Option<usize>,
    /// The message's tag ([`ANY_TAG`] for a receive from [`Peer::None`]).
    pub tag: u32,
    /// The number of elements received (at most the buffer's length), or that a probed
    /// message holds.
    pub len: usize,
}

impl Status {
    /// The status of a call on [`Peer::None`].
    pub(crate) const NONE: Status = Status {
        source: None,
        tag: ANY_TAG,
        len: 0,
    };

    pub(super) fn of(found: Found) -> Status {
        Status {
            source: Some(found.src),
            tag: found.tag,
            len: found.count,
        }
    }
}

/// Where a point-to-point call goes: a rank of the communicator (`None`: any), or nowhere.
#[derive(Clone, Copy)]
pub(super) enum Route {
    Rank(Option<usize>),
    Nowhere,
}

impl Comm {
    /// Where point-to-point `op` with `peer` goes; an error (failing the run) for a rank out
    /// of range, or for "any" as a destination (`send`).
    #[inline]
    pub(super) fn route(&self, op: &'static str, peer: Peer, receiving: bool) -> Result<Route> {
        let rank = match peer {
            Peer::None => return Ok(Route::Nowhere),
            Peer::Any if !receiving => {
                return Err(self.invalid(
                    op,
                    "a send needs a destination: Peer::Any is for receives and probes".into(),
                ))
            }
            Peer::Any => None,
            Peer::Rank(r) if r >= self.size() => {
                return Err(self.fail(Error::RankOutOfRange {
                    rank: self.rank(),
                    op,
                    peer: r,
                    size: self.size(),
                }))
            }
            Peer::Rank(r) => Some(r),
        };
        Ok(Route::Rank(rank))
    }

    /// Sends on the team's kind: between threads, or across processes too.
    fn send_on<T: Elem>(&self, dest: usize, tag: u32, data: &[T]) -> Result<()> {
        names::note::<T>();
        match &self.span {
            Span::Threads(l) => l.send(dest, tag, data),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.send(dest, tag, data),
        }
    }

    /// A non-blocking send's body on the team's kind (run as a request's task).
    pub(super) fn isend_on<T: Elem>(&self, dest: usize, tag: u32, data: &[T]) -> Result<()> {
        match &self.span {
            Span::Threads(l) => l.isend(dest, tag, data),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.isend(dest, tag, data),
        }
    }

    /// A non-blocking receive's body on the team's kind (run as a request's task).
    pub(super) fn irecv_on<T: Elem>(&self, want: Want, buf: &mut [T]) -> Result<Found> {
        match &self.span {
            Span::Threads(l) => l.irecv(want, buf),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.irecv(want, buf),
        }
    }

    /// Receives on the team's kind.
    fn recv_on<T: Elem>(&self, want: Want, buf: &mut [T]) -> Result<Status> {
        let found = match &self.span {
            Span::Threads(l) => l.recv(want, buf),
            #[cfg(feature = "mpi")]
            Span::Processes(b) => b.recv(want, buf),
        }?;
        Ok(Status::of(found))
    }

    /// Fails the run unless `tag` is one a message may carry (`any`: or [`ANY_TAG`]).
    #[inline]
    pub(super) fn check_tag(&self, op: &'static str, tag: u32, any: bool) -> Result<Option<u32>> {
        match tag {
            ANY_TAG if any => Ok(None),
            t if t <= TAG_MAX => Ok(Some(t)),
            t => Err(self.invalid(
                op,
                format!(
                    "tag {t} is out of range: tags are 0..={TAG_MAX}{}",
                    if any { " or ANY_TAG" } else { "" }
                ),
            )),
        }
    }

    /// Sends `data` to `dest` with tag 0 ([`Comm::send_tagged`]).
    ///
    /// Up to `crate::EAGER_MAX` bytes are copied into the mailbox and the call returns at
    /// once (unless the receiver is several messages behind); larger messages are read by the
    /// receiver straight from `data`, and the call returns when it has, or when the receiver
    /// has set the message aside to receive another one first.
    #[inline]
    pub fn send<T: Elem>(&self, dest: impl Into<Peer>, data: &[T]) -> Result<()> {
        self.send_tagged(dest, 0, data)
    }

    /// Sends `data` to `dest` with tag `tag` (0 to [`TAG_MAX`]). A send to [`Peer::None`]
    /// completes at once; [`Peer::Any`] is an error.
    pub fn send_tagged<T: Elem>(&self, dest: impl Into<Peer>, tag: u32, data: &[T]) -> Result<()> {
        let tag = self.check_tag("send", tag, false)?.unwrap_or_default();
        match self.route("send", dest.into(), false)? {
            Route::Nowhere => Ok(()),
            Route::Rank(dest) => self.send_on(dest.expect("a send has a destination"), tag, data),
        }
    }

    /// Receives a message with tag 0 from `src` into `buf` ([`Comm::recv_tagged`]).
    #[inline]
    pub fn recv<T: Elem>(&self, src: impl Into<Peer>, buf: &mut [T]) -> Result<Status> {
        self.recv_tagged(src, 0, buf)
    }

    /// Receives into `buf` the first message from `src` ([`Peer::Any`]: from any rank) with
    /// tag `tag` ([`ANY_TAG`]: any tag), and says who sent it, its tag and its length.
    ///
    /// Messages from one sender with one tag are received in the order they were sent. The
    /// message may be shorter than `buf` (the rest of `buf` is left alone); a longer one, or
    /// one of another element type, is an error ([`crate::Error::Mismatch`]) that fails the
    /// run. A receive from [`Peer::None`] completes at once and leaves `buf` alone.
    pub fn recv_tagged<T: Elem>(
        &self,
        src: impl Into<Peer>,
        tag: u32,
        buf: &mut [T],
    ) -> Result<Status> {
        let tag = self.check_tag("recv", tag, true)?;
        match self.route("recv", src.into(), true)? {
            Route::Nowhere => Ok(Status::NONE),
            Route::Rank(src) => self.recv_on(Want { src, tag }, buf),
        }
    }

    /// Sends `send` to `dest` and receives into `recv` from `src`, both with tag 0, in one call
    /// that cannot deadlock against a matching `sendrecv` (as `MPI_Sendrecv`); see
    /// [`Comm::sendrecv_tagged`].
    pub fn sendrecv<T: Elem>(
        &self,
        dest: impl Into<Peer>,
        send: &[T],
        src: impl Into<Peer>,
        recv: &mut [T],
    ) -> Result<Status> {
        self.sendrecv_tagged(dest, 0, send, src, 0, recv)
    }

    /// Sends `send` to `dest` with tag `send_tag` and receives into `recv` a message from
    /// `src` with tag `recv_tag`, as [`Comm::send_tagged`] and [`Comm::recv_tagged`] would,
    /// in one call that cannot deadlock against a matching one. `dest` and `src` may be this
    /// rank, and either may be [`Peer::None`] (then only the other half runs).
    pub fn sendrecv_tagged<T: Elem>(
        &self,
        dest: impl Into<Peer>,
        send_tag: u32,
        send: &[T],
        src: impl Into<Peer>,
        recv_tag: u32,
        recv: &mut [T],
    ) -> Result<Status> {
        let op = "sendrecv";
        let send_tag = self.check_tag(op, send_tag, false)?.unwrap_or_default();
        let recv_tag = self.check_tag(op, recv_tag, true)?;
        let (dest, src) = (
            self.route(op, dest.into(), false)?,
            self.route(op, src.into(), true)?,
        );
        match (dest, src) {
            (Route::Nowhere, Route::Nowhere) => Ok(Status::NONE),
            (Route::Rank(dest), Route::Nowhere) => {
                let dest = dest.expect("a send has a destination");
                self.send_on(dest, send_tag, send)?;
                Ok(Status::NONE)
            }
            (Route::Nowhere, Route::Rank(src)) => self.recv_on(Want { src, tag: recv_tag }, recv),
            (Route::Rank(dest), Route::Rank(src)) => {
                names::note::<T>();
                let send = (dest.expect("a send has a destination"), send_tag, send);
                let want = Want { src, tag: recv_tag };
                let found = match &self.span {
                    Span::Threads(l) => l.sendrecv(send, want, recv),
                    #[cfg(feature = "mpi")]
                    Span::Processes(b) => b.sendrecv(send, want, recv),
                }?;
                Ok(Status::of(found))
            }
        }
    }

    /// Waits for a message from `src` ([`Peer::Any`]: any rank) with tag `tag` ([`ANY_TAG`]:
    /// any tag) and reports it — sender, tag, and length in elements of `T` — without
    /// receiving it (as `MPI_Probe`): the next receive that names that sender and tag gets
    /// it. For messages whose length the receiver does not know in advance:
    ///
    /// ```
    /// use corecoll::{Peer, ANY_TAG};
    /// let out = corecoll::run(2, |comm| -> corecoll::Result<Vec<u32>> {
    ///     if comm.rank() == 0 {
    ///         comm.send_tagged(1, 7, &[1u32, 2, 3])?;
    ///         return Ok(vec![]);
    ///     }
    ///     let status = comm.probe::<u32>(Peer::Any, ANY_TAG)?;
    ///     let mut buf = vec![0u32; status.len];
    ///     comm.recv_tagged(status.source, status.tag, &mut buf)?;
    ///     Ok(buf)
    /// })
    /// .unwrap();
    /// assert_eq!(out[1], Ok(vec![1, 2, 3]));
    /// ```
    ///
    /// A message of another element type than `T` is an error ([`crate::Error::Mismatch`]).
    /// A probe of [`Peer::None`] returns at once with no source.
    pub fn probe<T: Elem>(&self, src: impl Into<Peer>, tag: u32) -> Result<Status> {
        let found = self.probe_with::<T>("probe", src.into(), tag, true)?;
        Ok(found.expect("a blocking probe finds a message"))
    }

    /// [`Comm::probe`] that does not wait (as `MPI_Iprobe`): `None` if no matching message
    /// has arrived yet.
    pub fn iprobe<T: Elem>(&self, src: impl Into<Peer>, tag: u32) -> Result<Option<Status>> {
        self.probe_with::<T>("iprobe", src.into(), tag, false)
    }

    fn probe_with<T: Elem>(
        &self,
        op: &'static str,
        src: Peer,
        tag: u32,
        block: bool,
    ) -> Result<Option<Status>> {
        let tag = self.check_tag(op, tag, true)?;
        match self.route(op, src, true)? {
            Route::Nowhere => Ok(Some(Status::NONE)),
            Route::Rank(src) => {
                let want = Want { src, tag };
                let found = match &self.span {
                    Span::Threads(l) => l.probe::<T>(op, want, block),
                    #[cfg(feature = "mpi")]
                    Span::Processes(b) => b.probe::<T>(op, want, block),
                }?;
                Ok(found.map(Status::of))
            }
        }
    }

    /// A communicator with the same ranks in the same order whose messages never match this
    /// one's (as `MPI_Comm_dup`): a library can talk on its own duplicate without receiving
    /// its caller's messages. Every rank of the communicator must call it.
    ///
    /// On a communicator whose ranks span MPI processes, each process's leader duplicates the
    /// team's point-to-point communicators (`MPI_Comm_dup`, collective over the processes), and
    /// the duplicate's collectives run their stage between processes on the team's leaders'
    /// communicator as this one's do: the leaders must therefore call the collectives of a
    /// communicator and of its duplicates in the same order on every process (MPI calls a
    /// program whose blocking collectives on two communicators cross erroneous, as they may
    /// deadlock); a process whose leader calls them in another order makes the call an
    /// [`Error::Mismatch`] on every rank instead.
    pub fn dup(&self) -> Result<Comm> {
        #[cfg(feature = "mpi")]
        if let Span::Processes(b) = &self.span {
            if b.layout.processes() > 1 {
                self.local().enter_call("dup")?;
                return b.dup().map(Comm::processes);
            }
        }
        let dup = self.split(Some(0), self.rank())?;
        Ok(dup.expect("every rank passes a color"))
    }
}
