//! The single-producer single-consumer mailbox of one directed edge.
//!
//! A ring of `slots` cells (a bounded SPSC queue in the manner of Lamport's and of
//! FastForward's: the producer publishes a cell by writing its sequence word last, the consumer
//! releases cells by advancing one counter). Each cell is cache-line aligned and begins with
//! its sequence word, followed by the message header and the payload, so a message of up to
//! [`INLINE`] bytes travels in the same cache line as the flag that announces it.
//!
//! Two protocols share the ring:
//!
//! * **eager** (payload ≤ [`EAGER_MAX`] bytes): the payload is copied into the cell; the
//!   producer goes on as soon as the cell is published.
//! * **rendezvous** (larger): the cell carries the address and length of the producer's own
//!   slice; the consumer reads (copies or reduces) straight from it — one copy in all — and
//!   the producer stays in its send until the consumer has released the cell, which is the
//!   acknowledgement. A claim word makes cancelling safe: the consumer claims the cell before
//!   it touches the producer's memory and the producer may withdraw an unclaimed cell, so a
//!   producer that gives up (abort, timeout) never returns while its slice is being read.
//!
//! Sequence numbers are 64-bit message counts compared for equality or by wrapping difference,
//! so they are monotone and wrap-safe. The producer writes only the cells and its own padded
//! line; the consumer writes only its padded `consumed` line (and, for rendezvous cells, the
//! claim word it must share with the producer).
//!
//! Who may call what is a contract of the crate, not of the types: only the edge's source
//! rank calls the producer methods and only its destination rank calls the consumer methods,
//! each from one thread at a time (a `Comm` is `!Sync`). The protocol is described in
//! `docs/protocol.md` and model-checked in `tests/loom_mailbox.rs`.

use crate::sync::{AtomicU32, AtomicU64, CachePadded, Ordering, UnsafeCell};
use std::mem::MaybeUninit;

/// Largest payload in bytes sent by the eager protocol; larger messages use rendezvous.
pub const EAGER_MAX: usize = 4096;
/// Payload bytes that share the cache line of a cell's sequence word: a message this small
/// arrives in the one line the receiver polls.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const INLINE: usize = 16;
/// Cells per mailbox.
pub(crate) const DEFAULT_SLOTS: usize = 4;

const CLAIM_IDLE: u32 = 0;
const CLAIM_POSTED: u32 = 1;
const CLAIM_TAKEN: u32 = 2;
const CLAIM_WITHDRAWN: u32 = 3;

/// What a message says about itself: checked by the receiver against what it expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// Operation kind and call sequence number (see `transport::Tag`).
    pub tag: u64,
    /// Element-type fingerprint (see `transport::type_fingerprint`).
    pub typ: u64,
    /// Payload length in bytes.
    pub len: usize,
}

#[repr(C)]
struct Body {
    tag: u64,
    typ: u64,
    len: u64,
    /// Producer's slice address for a rendezvous message, 0 for an eager one.
    far: u64,
    data: [MaybeUninit<u8>; EAGER_MAX],
}

#[repr(C, align(64))]
struct Slot {
    /// Written by the producer only: `n + 1` once message `n` is in this cell. Read by the
    /// consumer, which knows which `n` it expects next.
    seq: AtomicU64,
    /// Rendezvous claim: the producer sets POSTED before publishing; the consumer moves
    /// POSTED → TAKEN before reading the producer's memory; the producer may move
    /// POSTED → WITHDRAWN to cancel. Unused by eager messages.
    claim: AtomicU32,
    /// Header and eager payload: written by the producer before `seq`, read by the consumer
    /// after it.
    body: UnsafeCell<Body>,
    /// Under loom, stands for the producer's lent slice of a rendezvous message: the consumer
    /// reads it while copying, the producer writes it when its send returns, so loom reports a
    /// race if a send could return while its slice is still being read.
    #[cfg(loom)]
    lent: UnsafeCell<()>,
}

impl Slot {
    fn new() -> Self {
        Slot {
            seq: AtomicU64::new(0),
            claim: AtomicU32::new(CLAIM_IDLE),
            body: UnsafeCell::new(Body {
                tag: 0,
                typ: 0,
                len: 0,
                far: 0,
                data: [MaybeUninit::uninit(); EAGER_MAX],
            }),
            #[cfg(loom)]
            lent: UnsafeCell::new(()),
        }
    }
}

// The layout promised above: the payload starts INLINE bytes before the end of the first line.
#[cfg(not(loom))]
const _: () = assert!(
    std::mem::offset_of!(Slot, body) + std::mem::offset_of!(Body, data) == 64 - INLINE
);

/// Producer-private counters, on a line of their own.
struct Producer {
    /// Index of the next message to publish. Written and read by the producer only.
    tail: AtomicU64,
    /// Last value of `Consumer::consumed` the producer read, to skip re-reading the
    /// consumer's line while the ring is not full. Producer only.
    seen: AtomicU64,
}

/// Consumer-published progress, on a line of its own.
struct Consumer {
    /// Number of messages the consumer has finished with: the next one it reads is message
    /// `consumed`. Written by the consumer only; read by the producer to find free cells and
    /// to learn that a rendezvous message has been read.
    consumed: AtomicU64,
}

/// The mailbox of one directed edge: see the module documentation.
pub(crate) struct Mailbox {
    slots: Box<[Slot]>,
    prod: CachePadded<Producer>,
    cons: CachePadded<Consumer>,
}

// SAFETY: the cells' `UnsafeCell`s are written by the producer before it publishes `seq`
// (SeqCst) and read by the consumer only after it observes that `seq`; the producer rewrites
// a cell only after observing (SeqCst) that the consumer has advanced `consumed` past it. So
// every access to a cell body is ordered by a release/acquire pair and never concurrent with a
// write. The raw pointer of a rendezvous message is only dereferenced while its claim is
// TAKEN, during which the producer cannot return (see `finish_rendezvous`).
unsafe impl Sync for Mailbox {}
// SAFETY: a mailbox owns its cells; the pointer inside a rendezvous cell is only a value until
// claimed as described above.
unsafe impl Send for Mailbox {}

/// Returned by [`Mailbox::take`] when the producer withdrew a rendezvous message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Withdrawn;

impl Mailbox {
    /// A mailbox with `slots` cells (at least one).
    pub(crate) fn new(slots: usize) -> Self {
        let slots = slots.max(1);
        Mailbox {
            slots: (0..slots).map(|_| Slot::new()).collect(),
            prod: CachePadded::new(Producer {
                tail: AtomicU64::new(0),
                seen: AtomicU64::new(0),
            }),
            cons: CachePadded::new(Consumer {
                consumed: AtomicU64::new(0),
            }),
        }
    }

    fn slot(&self, n: u64) -> &Slot {
        &self.slots[(n % self.slots.len() as u64) as usize]
    }

    // ----- producer side -------------------------------------------------------------------

    /// Producer: whether a cell is free (only reads).
    pub(crate) fn has_room(&self) -> bool {
        let tail = self.prod.tail.load(Ordering::Relaxed);
        let cap = self.slots.len() as u64;
        if tail.wrapping_sub(self.prod.seen.load(Ordering::Relaxed)) < cap {
            return true;
        }
        tail.wrapping_sub(self.cons.consumed.load(Ordering::SeqCst)) < cap
    }

    /// Producer: the index the next message gets if a cell is free.
    fn reserve(&self) -> Option<u64> {
        let tail = self.prod.tail.load(Ordering::Relaxed);
        let cap = self.slots.len() as u64;
        if tail.wrapping_sub(self.prod.seen.load(Ordering::Relaxed)) >= cap {
            let consumed = self.cons.consumed.load(Ordering::SeqCst);
            self.prod.seen.store(consumed, Ordering::Relaxed);
            if tail.wrapping_sub(consumed) >= cap {
                return None;
            }
        }
        Some(tail)
    }

    fn publish(&self, n: u64, header: Header, far: u64, fill: impl FnOnce(*mut MaybeUninit<u8>)) {
        let slot = self.slot(n);
        slot.body.with_mut(|body| {
            // SAFETY: the cell is free (reserve saw the consumer release it, SeqCst), so
            // nobody else accesses its body until `seq` is published below.
            unsafe {
                (*body).tag = header.tag;
                (*body).typ = header.typ;
                (*body).len = header.len as u64;
                (*body).far = far;
                fill((*body).data.as_mut_ptr());
            }
        });
        self.prod.tail.store(n.wrapping_add(1), Ordering::Relaxed);
        // SeqCst: the Dekker pairing with the consumer's parker (see sync::park).
        slot.seq.store(n.wrapping_add(1), Ordering::SeqCst);
    }

    /// Producer: copies `header.len` bytes from `src` into a free cell and publishes it.
    /// Returns the message's sequence number, or `None` if every cell is in use.
    ///
    /// # Safety
    /// `src` must be valid for reads of `header.len` bytes, and `header.len <= EAGER_MAX`.
    pub(crate) unsafe fn try_send_eager(&self, header: Header, src: *const u8) -> Option<u64> {
        debug_assert!(header.len <= EAGER_MAX);
        let n = self.reserve()?;
        self.publish(n, header, 0, |dst| {
            // SAFETY: the caller guarantees `src` is readable for `len` bytes; the cell's data
            // area holds EAGER_MAX >= len bytes and is exclusively ours (see publish).
            unsafe { std::ptr::copy_nonoverlapping(src, dst.cast::<u8>(), header.len) }
        });
        Some(n)
    }

    /// Producer: publishes a rendezvous cell that lends `header.len` bytes at `src`. Returns
    /// its sequence number, or `None` if every cell is in use. The producer must then call
    /// [`Mailbox::is_consumed`] / [`Mailbox::withdraw`] as `finish_rendezvous` in the transport
    /// does, and keep `src` valid until one of them says the consumer is done with it.
    ///
    /// # Safety
    /// `src` must stay valid for reads of `header.len` bytes, and must not be written, until
    /// `is_consumed` returns true or `withdraw` returns true for the returned number.
    pub(crate) unsafe fn try_post_rendezvous(&self, header: Header, src: *const u8) -> Option<u64> {
        let n = self.reserve()?;
        let slot = self.slot(n);
        slot.claim.store(CLAIM_POSTED, Ordering::Relaxed);
        self.publish(n, header, src as u64, |_| {});
        Some(n)
    }

    /// Producer: whether the consumer has finished with message `n` (the rendezvous
    /// acknowledgement). Only reads.
    pub(crate) fn is_consumed(&self, n: u64) -> bool {
        let done = self.cons.consumed.load(Ordering::SeqCst);
        done.wrapping_sub(n.wrapping_add(1)) < (1 << 63)
    }

    /// Producer: tries to cancel rendezvous message `n`. True if the consumer had not claimed
    /// it (and now never will); false if it has claimed it, in which case the producer must
    /// wait for [`Mailbox::is_consumed`] before its slice may be touched again.
    pub(crate) fn withdraw(&self, n: u64) -> bool {
        self.slot(n)
            .claim
            .compare_exchange(
                CLAIM_POSTED,
                CLAIM_WITHDRAWN,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
    }

    /// Producer, loom builds: marks the lent slice of message `n` as the producer's again.
    #[cfg(loom)]
    pub(crate) fn reclaim_lent(&self, n: u64) {
        self.slot(n).lent.with_mut(|_| ());
    }

    // ----- consumer side -------------------------------------------------------------------

    /// Consumer: the header of the next message, if it has arrived. Only reads.
    pub(crate) fn front(&self) -> Option<Header> {
        let n = self.cons.consumed.load(Ordering::Relaxed);
        let slot = self.slot(n);
        if slot.seq.load(Ordering::SeqCst) != n.wrapping_add(1) {
            return None;
        }
        Some(slot.body.with(|body| {
            // SAFETY: `seq` says the producer has published this cell, and it will not touch
            // it again before we advance `consumed`.
            unsafe {
                Header {
                    tag: (*body).tag,
                    typ: (*body).typ,
                    len: (*body).len as usize,
                }
            }
        }))
    }

    /// Consumer: reads the next message (which [`Mailbox::front`] must have returned) by
    /// calling `read` with a pointer to its `len` payload bytes — the cell for an eager
    /// message, the producer's own slice for a rendezvous one — then releases the cell, which
    /// acknowledges a rendezvous message. The cell is released even if `read` unwinds.
    pub(crate) fn take<R>(&self, read: impl FnOnce(*const u8) -> R) -> Result<R, Withdrawn> {
        let n = self.cons.consumed.load(Ordering::Relaxed);
        let slot = self.slot(n);
        debug_assert_eq!(slot.seq.load(Ordering::Relaxed), n.wrapping_add(1));
        // SAFETY: as in `front`.
        let far = slot.body.with(|body| unsafe { (*body).far });

        /// Releases the cell when dropped, on return or unwind.
        struct Release<'a>(&'a AtomicU64, u64);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.store(self.1.wrapping_add(1), Ordering::SeqCst);
            }
        }

        if far == 0 {
            let _release = Release(&self.cons.consumed, n);
            // SAFETY: as in `front`; the data area holds the `len` bytes the producer copied.
            Ok(slot
                .body
                .with(|body| read(unsafe { (*body).data.as_ptr().cast::<u8>() })))
        } else {
            let claimed = slot
                .claim
                .compare_exchange(CLAIM_POSTED, CLAIM_TAKEN, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok();
            let _release = Release(&self.cons.consumed, n);
            if !claimed {
                return Err(Withdrawn);
            }
            #[cfg(loom)]
            let out = slot.lent.with(|_| read(far as usize as *const u8));
            #[cfg(not(loom))]
            let out = read(far as usize as *const u8);
            Ok(out)
        }
    }
}
