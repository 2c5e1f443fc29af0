//! Internals exposed to the loom models in `tests/loom_*.rs` (built only under `--cfg loom`;
//! not part of the public API).

use crate::comm::world::{CommShared, Ranks, RunState};
use crate::comm::Comm;
use crate::sync::park::WaitPolicy;
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
    /// Producer: posts `data` eagerly if a cell is free.
    pub fn try_send_eager(&self, tag: u64, data: &[u8]) -> Option<Seq> {
        let h = crate::mailbox::Header { tag, typ: 1, len: data.len() };
        assert!(data.len() <= EAGER_MAX);
        // SAFETY: `data` is readable for its length, which is at most EAGER_MAX.
        unsafe { self.0.try_send_eager(h, data.as_ptr()) }
    }
    /// Producer: lends `len` bytes at `data` by rendezvous if a cell is free.
    ///
    /// # Safety
    /// `data` must stay readable and unwritten until `is_consumed` or `withdraw` says so.
    pub unsafe fn try_post_rendezvous(&self, tag: u64, data: *const u8, len: usize) -> Option<Seq> {
        let h = crate::mailbox::Header { tag, typ: 1, len };
        // SAFETY: forwarded contract.
        unsafe { self.0.try_post_rendezvous(h, data) }
    }
    /// Producer: whether a cell is free.
    pub fn has_room(&self) -> bool {
        self.0.has_room()
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
pub struct Parker(crate::sync::park::Parker);

impl Default for Parker {
    fn default() -> Self {
        Parker(crate::sync::park::Parker::new())
    }
}

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

/// The world communicators of a `p`-rank run without a team: one `Comm` per rank, to be moved
/// into loom threads.
pub fn world(p: usize) -> Vec<Comm> {
    let ranks = Arc::new(Ranks::new(p, WaitPolicy::OVERSUBSCRIBED, None));
    let run = Arc::new(RunState::new(ranks));
    let shared = Arc::new(CommShared::new((0..p).collect()));
    (0..p).map(|r| Comm::new(r, shared.clone(), run.clone())).collect()
}
