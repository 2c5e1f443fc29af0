//! Internals exposed to the loom models in `tests/loom_*.rs` (built only under `--cfg loom`;
//! not part of the public API).

use crate::collective::Collective;
use crate::local::world::{CommShared, Context, Ranks, RunState};
use crate::local::Comm;
use crate::mailbox::{Kind, Tag};
use crate::sync::park::WaitPolicy;
use crate::transport::shm::ShmTransport;
use crate::transport::Transport;
use std::sync::Arc;

pub use crate::mailbox::EAGER_MAX;

/// A mailbox with `slots` cells, as the transport uses it.
pub struct Mailbox(crate::mailbox::Mailbox);

/// Sequence number of a posted message.
pub type Seq = u64;

impl Mailbox {
    /// A mailbox with `slots` cells.
    pub fn new(slots: usize) -> Self {
        Mailbox(crate::mailbox::Mailbox::new(slots))
    }
    /// A mailbox with `slots` cells and an arena of `arena` bytes (at least EAGER_MAX).
    pub fn with_arena(slots: usize, arena: usize) -> Self {
        Mailbox(crate::mailbox::Mailbox::with_arena(slots, arena))
    }
    /// Producer: posts `data` (inline up to 16 bytes, through the arena up to EAGER_MAX) if
    /// there is room.
    pub fn try_send_eager(&self, tag: u64, data: &[u8]) -> Option<Seq> {
        let h = crate::mailbox::Header {
            tag,
            typ: 1,
            len: data.len(),
        };
        assert!(data.len() <= EAGER_MAX);
        // SAFETY: `data` is readable for its length, and at most EAGER_MAX bytes are not lent.
        unsafe { self.0.try_post(h, data.as_ptr()) }.map(|(n, _)| n)
    }
    /// Producer: lends `len` (> EAGER_MAX) bytes at `data` by rendezvous if there is room.
    ///
    /// # Safety
    /// `data` must stay readable and unwritten until `is_consumed` or `withdraw` says so.
    pub unsafe fn try_post_rendezvous(&self, tag: u64, data: *const u8, len: usize) -> Option<Seq> {
        assert!(len > EAGER_MAX);
        let h = crate::mailbox::Header { tag, typ: 1, len };
        // SAFETY: forwarded contract.
        unsafe { self.0.try_post(h, data) }.map(|(n, _)| n)
    }
    /// Producer: whether a message of `len` bytes can be posted now.
    pub fn has_room(&self, len: usize) -> bool {
        self.0.has_room(len)
    }
    /// Producer: whether message `n` has been released by the consumer.
    pub fn is_consumed(&self, n: Seq) -> bool {
        self.0.is_consumed(n)
    }
    /// Producer: cancels unclaimed rendezvous message `n`.
    pub fn withdraw(&self, n: Seq) -> bool {
        self.0.withdraw(n)
    }
    /// Producer: marks the lent slice of `n` as the producer's again (loom's race check).
    pub fn reclaim_lent(&self, n: Seq) {
        self.0.reclaim_lent(n)
    }
    /// Consumer: (tag, len) of the next message if it has arrived.
    pub fn front(&self) -> Option<(u64, usize)> {
        self.0.front().map(|h| (h.tag, h.len))
    }
    /// Consumer: calls `read` on the next message's payload (the cell's bytes for an eager
    /// message, the producer's lent slice for a rendezvous one) and releases its cell, also if
    /// `read` unwinds; `None` if there is no message yet or the producer withdrew it.
    pub fn take_with<R>(&self, read: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let len = self.0.front()?.len;
        self.0
            .take(|p| {
                // SAFETY: the mailbox hands `len` readable bytes that nobody writes until the
                // cell is released, which happens after `read` returns or unwinds.
                read(unsafe { std::slice::from_raw_parts(p, len) })
            })
            .ok()
    }
    /// Consumer: copies the next message into a vector and releases its cell; `None` if the
    /// producer withdrew it.
    pub fn take(&self) -> Option<Vec<u8>> {
        let len = self.0.front()?.len;
        self.0
            .take(|p| {
                let mut v = vec![0u8; len];
                // SAFETY: the mailbox hands `len` readable bytes.
                unsafe { std::ptr::copy_nonoverlapping(p, v.as_mut_ptr(), len) };
                v
            })
            .ok()
    }
}

/// The parker a rank sleeps on.
#[derive(Default)]
pub struct Parker(crate::sync::park::Parker);

impl Parker {
    /// Wakes parked waiters (call after publishing with SeqCst).
    pub fn unpark(&self) {
        self.0.unpark()
    }
    /// Parks until `ready()` (which must only read).
    pub fn park_until(&self, ready: impl FnMut() -> bool) {
        assert!(self.0.park_until(ready, None));
    }
}

/// Waits as every wait of the crate does (`sync::park::wait_until`, which under loom checks
/// `ready` once and then parks): returns once `ready()` holds. `ready` must only read.
pub fn wait_until(parker: &Parker, ready: impl FnMut() -> bool) {
    assert!(crate::sync::park::wait_until(
        &parker.0,
        &WaitPolicy::DEDICATED,
        None,
        ready
    ));
}

/// A handle on the run a world's communicators belong to: it lets a model do what `Team::run`
/// does around the ranks' closures (report a panic, mark a rank as returned) from any thread.
#[derive(Clone)]
pub struct RunHandle(Arc<RunState>);

impl RunHandle {
    /// Fails the run as a panic of team rank `rank` would (`RunState::panicked`): every
    /// pending and later communication call of the run returns `Err`.
    pub fn panicked(&self, rank: usize) {
        self.0.panicked(crate::Error::Panicked {
            rank,
            message: "failed by the model".into(),
        });
    }
    /// Team rank `rank` has returned from its closure (`RunState::mark_done`): waits that
    /// depend on it end with `Error::PeerExited`.
    pub fn mark_done(&self, rank: usize) {
        self.0.mark_done(rank);
    }
    /// Whether the run has failed.
    pub fn is_aborted(&self) -> bool {
        self.0.is_aborted()
    }
}

/// `recv_reduce` on `comm`'s point-to-point stream (the allreduce schedules' primitive):
/// receives `acc.len()` elements from `src` and combines them into `acc` with `combine`,
/// reading a rendezvous message in the sender's own slice. Pairs with [`Comm::send`].
pub fn recv_reduce<T: Copy + Send + Sync + 'static>(
    comm: &Comm,
    src: usize,
    acc: &mut [T],
    combine: &mut dyn FnMut(&mut [T], &[T]),
) -> crate::Result<()> {
    let t = ShmTransport::new(comm, Context::P2p, "recv_reduce");
    t.recv_reduce(src, Tag::P2P, acc, combine)
}

/// `sendrecv_reduce` on `comm`'s point-to-point stream: sends `send` to `dest` while
/// receiving from `src` and combining into `acc` with `combine`, as [`recv_reduce`]. Pairs
/// with itself or with [`Comm::send`] / [`recv_reduce`] on the other side.
pub fn sendrecv_reduce<T: Copy + Send + Sync + 'static>(
    comm: &Comm,
    dest: usize,
    send: &[T],
    src: usize,
    acc: &mut [T],
    combine: &mut dyn FnMut(&mut [T], &[T]),
) -> crate::Result<()> {
    let t = ShmTransport::new(comm, Context::P2p, "sendrecv_reduce");
    t.sendrecv_reduce(dest, send, src, acc, Tag::P2P, combine)
}

/// The direct allreduce (`Algorithm::Direct`) on `comm` with `op`, out of place when `send` is
/// given: the board protocol of `src/comm/board.rs` alone, without the agreement check that
/// `Comm::allreduce_with` makes first (which would add a mailbox exchange to every model).
pub fn allreduce_direct<T: Copy + Send + Sync + 'static, O: crate::op::Op<T>>(
    comm: &Comm,
    send: Option<&[T]>,
    buf: &mut [T],
    op: O,
) -> crate::Result<()> {
    comm.enter("allreduce")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Allreduce));
    crate::algorithms::allreduce::direct::direct(comm, send, buf, &op, tag)
}

/// `Broadcast::Direct` of `buf` from `root` on `comm`, without the call check that
/// `Comm::broadcast_with` makes first: the board protocol of `src/comm/board.rs` with the
/// root's buffer lent to every reader (`src/algorithms/broadcast/direct.rs`). A root out of
/// range is an error, as in the public call; a length that differs between ranks is caught on
/// the board.
pub fn broadcast_direct<T: Copy + Send + Sync + 'static>(
    comm: &Comm,
    buf: &mut [T],
    root: usize,
) -> crate::Result<()> {
    comm.enter("broadcast")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Broadcast));
    crate::algorithms::broadcast::direct(comm, buf, root, tag)
}

/// Panics unless `root` is a rank of `comm` and, on the root, `whole` holds `comm.size()`
/// blocks of `block`: what `Comm::scatter_with` and `Comm::gather_with` check before the
/// board (the schedules only `debug_assert!` it, and the loom profile has no debug
/// assertions). A model that breaks it is wrong, not the protocol.
fn check_rooted(comm: &Comm, whole: usize, block: usize, root: usize) {
    assert!(root < comm.size(), "root {root} out of range");
    if comm.rank() == root {
        assert_eq!(
            whole,
            comm.size() * block,
            "the root's buffer is not p blocks"
        );
    }
}

/// `Scatter::Direct` of `root`'s `send` (p blocks of `recv.len()`; unused elsewhere) into every
/// rank's `recv` on `comm`, without the call check that `Comm::scatter_with` makes first: the
/// board protocol with the root's send buffer lent to every reader of a block
/// (`src/algorithms/gather/direct_rooted.rs`). Panics if `root` or the root's buffer is out of
/// shape (see `check_rooted`); a block length that differs between ranks is caught on the
/// board.
pub fn scatter_direct<T: Copy + Send + Sync + 'static>(
    comm: &Comm,
    send: &[T],
    recv: &mut [T],
    root: usize,
) -> crate::Result<()> {
    check_rooted(comm, send.len(), recv.len(), root);
    comm.enter("scatter")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Scatter));
    crate::algorithms::gather::direct_scatter(comm, send, recv, root, tag)
}

/// `Gather::Direct` of every rank's `send` into `root`'s `recv` (p blocks of `send.len()`;
/// unused elsewhere) on `comm`, without the call check that `Comm::gather_with` makes first:
/// the board protocol with the root's receive buffer lent to every writer of a block
/// (`src/algorithms/gather/direct_rooted.rs`). Panics as [`scatter_direct`] does; a block
/// length that differs between ranks is caught on the board.
pub fn gather_direct<T: Copy + Send + Sync + 'static>(
    comm: &Comm,
    send: &[T],
    recv: &mut [T],
    root: usize,
) -> crate::Result<()> {
    check_rooted(comm, recv.len(), send.len(), root);
    comm.enter("gather")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Gather));
    crate::algorithms::gather::direct_gather(comm, send, recv, root, tag)
}

/// `Algorithm::HierarchicalDirect` on `comm` over `groups` (each in rank order, together every
/// rank once, at least two; intervals for a non-commutative op), without the call check: the
/// board's own protocol with its middle stage, out of place if `send` is given.
pub fn allreduce_hierarchical_direct<T: Copy + Send + Sync + 'static, O: crate::op::Op<T>>(
    comm: &Comm,
    send: Option<&[T]>,
    buf: &mut [T],
    op: O,
    groups: &[Vec<usize>],
) -> crate::Result<()> {
    comm.enter("allreduce")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Allreduce));
    crate::hierarchy::direct::allreduce(comm, send, buf, &op, groups, tag)
}

/// The world communicators of a `p`-rank run without a team: one `Comm` per rank, to be moved
/// into loom threads.
pub fn world(p: usize) -> Vec<Comm> {
    world_with_run(p).0
}

/// As [`world`], with a handle on the run to fail it or mark ranks as returned.
pub fn world_with_run(p: usize) -> (Vec<Comm>, RunHandle) {
    let ranks = Arc::new(Ranks::new(p, WaitPolicy::OVERSUBSCRIBED, None));
    let run = Arc::new(RunState::new(ranks));
    let shared = Arc::new(CommShared::new((0..p).collect()));
    // Make every mailbox now, on the model's main thread, rather than on first use: the
    // communicator makes them lazily through a std `OnceLock`, whose synchronisation loom
    // cannot see, so a mailbox made by one loom thread and then used by another would be
    // reported as a race on its freshly made atomics and cells. Made before the rank threads
    // are spawned, they are ordered before every use.
    for ctx in [Context::P2p, Context::Coll] {
        for src in 0..p {
            for dst in 0..p {
                shared.mailbox(ctx, src, dst);
            }
        }
    }
    let comms = (0..p)
        .map(|r| Comm::new(r, shared.clone(), run.clone()))
        .collect();
    (comms, RunHandle(run))
}

/// `Barrier::HierarchicalDirect` on `comm` over `groups` (each in rank order, together every
/// rank once; the first rank of each leads it), without the call check: the shared flags of
/// `hierarchy::direct::barrier` alone.
pub fn barrier_hierarchical_direct(comm: &Comm, groups: &[Vec<usize>]) -> crate::Result<()> {
    comm.enter("barrier")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Barrier));
    crate::hierarchy::direct::barrier_over(comm, groups, tag, || Ok(()))
}

/// `Allgather::HierarchicalDirect`'s single-copy path on `comm` over `groups` (each in rank
/// order, together every rank once), without the call check or the short-block path: the
/// board's own protocol with the holders' stage between the two copies.
pub fn allgather_hierarchical_direct<T: Copy + Send + Sync + 'static>(
    comm: &Comm,
    send: &[T],
    recv: &mut [T],
    groups: &[Vec<usize>],
) -> crate::Result<()> {
    comm.enter("allgather")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Allgather));
    crate::hierarchy::direct::single_copy_allgather(comm, send, recv, groups, tag)
}

/// The single-copy schedule of `Broadcast::HierarchicalDirect` on `comm` from `root` over
/// `groups` (each in rank order, together every rank once), whatever the length and without
/// the call check: the board's own protocol with its middle stage.
pub fn broadcast_hierarchical_direct<T: Copy + Send + Sync + 'static>(
    comm: &Comm,
    buf: &mut [T],
    root: usize,
    groups: &[Vec<usize>],
) -> crate::Result<()> {
    comm.enter("broadcast")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Broadcast));
    crate::hierarchy::direct::broadcast_single_copy(comm, buf, root, groups, tag)
}

/// `Reduce::HierarchicalDirect`'s single-copy schedule on `comm` over `groups` (as for
/// [`allreduce_hierarchical_direct`]) to `root`, whatever the length, without the call check:
/// the board's protocol with its middle stage, the root's buffer the only output and every
/// other rank's partials in a compact buffer from its scratch pool.
pub fn reduce_hierarchical_direct<T: Copy + Send + Sync + 'static, O: crate::op::Op<T>>(
    comm: &Comm,
    buf: &mut [T],
    op: O,
    root: usize,
    groups: &[Vec<usize>],
) -> crate::Result<()> {
    comm.enter("reduce")?;
    let tag = comm.next_tag(Kind::Coll(Collective::Reduce));
    crate::hierarchy::direct::reduce_groups(comm, buf, &op, root, groups, tag)
}
