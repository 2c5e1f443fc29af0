//! The single-producer single-consumer mailbox of one directed edge.
//!
//! A ring of `slots` header cells (a bounded SPSC queue in the manner of Lamport's and of
//! FastForward's: the producer publishes a cell by writing its sequence word last, the consumer
//! releases cells by advancing one counter) plus a payload arena. Each cell is one cache line:
//! its sequence word, then the message header, then [`INLINE`] payload bytes, so a small
//! message travels in the same line as the flag that announces it.
//!
//! Three ways to carry a payload share the ring, chosen by its length:
//!
//! * **inline** (≤ [`INLINE`] bytes): in the cell itself.
//! * **eager** (≤ [`EAGER_MAX`] bytes): copied into the arena, a byte ring that the producer
//!   fills in cache-line-aligned pieces and that is freed in message order as cells are
//!   released; the producer goes on as soon as the cell is published.
//! * **rendezvous** (larger): the cell carries the address of the producer's own slice; the
//!   consumer reads (copies or reduces) straight from it — one copy in all — and the producer
//!   stays in its send until the consumer has released the cell, which is the
//!   acknowledgement. A claim word makes cancelling safe: the consumer claims the cell before
//!   it touches the producer's memory and the producer may withdraw an unclaimed cell, so a
//!   producer that gives up (abort, timeout) never returns while its slice is being read.
//!
//! Sequence numbers are 64-bit message counts compared for equality or by wrapping difference,
//! so they are monotone and wrap-safe. The producer writes only the cells, the arena and its
//! own padded line; the consumer writes only its padded `consumed` line (and, for rendezvous
//! cells, the claim word it must share with the producer).
//!
//! Who may call what is a contract of the crate, not of the types: only the edge's source
//! rank calls the producer methods and only its destination rank calls the consumer methods,
//! each from one thread at a time (a `Comm` is `!Sync`). The protocol, and why each ordering is
//! enough: `README.md` in this folder; its loom models are the `loom` module beside it.

mod arena;
pub(crate) mod names;
mod tag;

use crate::sync::{AtomicU32, AtomicU64, CachePadded, Ordering, UnsafeCell};
use arena::Arena;
use std::mem::MaybeUninit;
pub(crate) use tag::{
    describe_op_bits, describe_op_word, fingerprint_size, op_bits, op_word, type_fingerprint, Kind,
    Tag,
};
pub use tag::{Elem, TAG_MAX};

/// Largest payload in bytes sent by the eager protocol; larger messages use rendezvous.
///
/// Chosen by measurement (docs/benchmarks.md, "Eager or rendezvous"): from just above 1 KiB
/// a ping-pong by rendezvous was faster than eager, and stayed ahead at every larger size,
/// because it spares the sender's copy and its acknowledgement is off the critical path.
/// Below 1 KiB the eager copy wins and lets a sender run ahead.
pub const EAGER_MAX: usize = 1024;
/// Payload bytes that share the cache line of a cell's sequence word: a message this small
/// arrives in the one line the receiver polls.
pub(crate) const INLINE: usize = 16;
/// Header cells per mailbox: how many messages may be in flight on one edge. (Loom models use
/// small mailboxes: the state space grows with them and the protocol does not depend on it.)
pub(crate) const DEFAULT_SLOTS: usize = if cfg!(loom) { 4 } else { 32 };
/// Bytes of eager payload arena per mailbox: sixteen messages of `EAGER_MAX` bytes (one under
/// loom).
pub(crate) const DEFAULT_ARENA: usize = if cfg!(loom) {
    EAGER_MAX
} else {
    16 * EAGER_MAX
};
/// The arena's unit of allocation: each eager payload starts on a line of its own, so the
/// producer writing one message and the consumer reading another never share a line.
const CHUNK: usize = 64;

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
    /// Where the payload is: the arena offset (eager, as an address without provenance), the
    /// producer's slice (rendezvous, a pointer, so that the consumer reads through the
    /// producer's own provenance), unused (inline).
    loc: *const u8,
    inline: [MaybeUninit<u8>; INLINE],
}

#[repr(C, align(64))]
struct Slot {
    /// Written by the producer only: `n + 1` once message `n` is in this cell. Read by the
    /// consumer, which knows which `n` it expects next.
    seq: AtomicU64,
    /// Rendezvous claim: the producer sets POSTED before publishing; the consumer moves
    /// POSTED → TAKEN before reading the producer's memory; the producer may move
    /// POSTED → WITHDRAWN to cancel. Unused by other messages.
    claim: AtomicU32,
    /// Header and inline payload: written by the producer before `seq`, read by the consumer
    /// after it.
    body: UnsafeCell<Body>,
    /// Under loom, stands for the producer's lent slice of a rendezvous message: the consumer
    /// reads it while copying, the producer writes it when its send returns, so loom reports a
    /// race if a send could return while its slice is still being read.
    #[cfg(loom)]
    lent: UnsafeCell<()>,
}

// The layout promised above: the inline payload fills the end of the cell's only line.
#[cfg(not(loom))]
const _: () = {
    assert!(std::mem::offset_of!(Slot, body) + std::mem::offset_of!(Body, inline) == 64 - INLINE);
    assert!(std::mem::size_of::<Slot>() == 64);
};

impl Slot {
    /// A cell that last held message `prev` (a message of the previous lap), so that no
    /// message number, not even the one that wraps to `seq == 0`, finds it published.
    fn new(prev: u64) -> Self {
        Slot {
            seq: AtomicU64::new(prev.wrapping_add(1)),
            claim: AtomicU32::new(CLAIM_IDLE),
            body: UnsafeCell::new(Body {
                tag: 0,
                typ: 0,
                len: 0,
                loc: std::ptr::null(),
                inline: [MaybeUninit::uninit(); INLINE],
            }),
            #[cfg(loom)]
            lent: UnsafeCell::new(()),
        }
    }
}

/// Eight cells' arena starts: a line written by the producer only, aligned so that it shares
/// no line with anything another thread writes (a plain array from the allocator could).
#[repr(C, align(64))]
struct Starts([AtomicU64; 8]);

/// Producer-private state, on a line of its own.
struct Producer {
    /// Index of the next message to publish. Producer only.
    tail: AtomicU64,
    /// Last value of `Consumer::consumed` the producer read, to skip re-reading the
    /// consumer's line while cells and arena are known to be free. Producer only.
    seen: AtomicU64,
    /// Virtual arena offset (bytes ever allocated, a multiple of `CHUNK`) where the next eager
    /// payload goes. Producer only.
    head: AtomicU64,
}

/// Consumer-published progress, on a line of its own.
struct Consumer {
    /// Number of messages the consumer has finished with: the next one it reads is message
    /// `consumed`. Written by the consumer only; read by the producer to find free cells and
    /// arena space and to learn that a rendezvous message has been read.
    consumed: AtomicU64,
}

/// The mailbox of one directed edge: see the module documentation.
pub(crate) struct Mailbox {
    slots: Box<[Slot]>,
    /// `slots.len() − 1`; the number of cells is a power of two so that a message's cell is
    /// its number masked (a division per lookup is measurable at these latencies).
    slot_mask: u64,
    arena: Arena,
    /// Per cell, the virtual arena offset where the payload of the message it holds starts
    /// (the arena head at that time for a message without arena payload): everything before
    /// the start of message `m` is free while `m` is the oldest unreleased. Producer only, in
    /// lines of their own (see [`Starts`]).
    starts: Box<[Starts]>,
    prod: CachePadded<Producer>,
    cons: CachePadded<Consumer>,
}

// SAFETY: the cells' and the arena's `UnsafeCell`s are written by the producer before it
// publishes `seq` (release) and read by the consumer only after it observes that `seq`
// (acquire); the producer rewrites a cell, or an arena range, only after observing (acquire)
// that the consumer
// has advanced `consumed` past the message that used it. So every access to them is ordered by
// a release/acquire pair and never concurrent with a write. The address in a rendezvous cell
// is only dereferenced while its claim is TAKEN, during which the producer cannot return (see
// the transport's cleanup of a lent send).
unsafe impl Sync for Mailbox {}
// SAFETY: a mailbox owns its cells and arena; the address inside a rendezvous cell is only a
// value until claimed as described above.
unsafe impl Send for Mailbox {}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailbox")
            .field("slots", &self.slots.len())
            .field("arena", &self.arena.len)
            .finish_non_exhaustive()
    }
}

/// Returned by [`Mailbox::take`] when the producer withdrew a rendezvous message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Withdrawn;

/// How a payload of `len` bytes travels.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Carry {
    Inline,
    Arena,
    Lent,
}

fn carry(len: usize) -> Carry {
    if len <= INLINE {
        Carry::Inline
    } else if len <= EAGER_MAX {
        Carry::Arena
    } else {
        Carry::Lent
    }
}

impl Mailbox {
    /// A mailbox with `slots` cells (at least one) and the default arena.
    pub(crate) fn new(slots: usize) -> Self {
        Mailbox::with_arena(slots, DEFAULT_ARENA)
    }

    /// A mailbox with at least `slots` cells and an arena of at least `arena` bytes, both
    /// rounded up to powers of two (and the arena to at least one message of `EAGER_MAX`).
    pub(crate) fn with_arena(slots: usize, arena: usize) -> Self {
        Mailbox::starting_at(slots, arena, 0)
    }

    /// As [`Mailbox::with_arena`], with the counters starting at message `first` (so that
    /// tests can cross the wrap of the 64-bit counters; 0 otherwise).
    fn starting_at(slots: usize, arena: usize, first: u64) -> Self {
        let slots = slots.max(1).next_power_of_two();
        let mask = slots as u64 - 1;
        // Cell j last held the message of the previous lap with number ≡ j (mod slots).
        let prev = |j: u64| first.wrapping_sub(slots as u64) + (j.wrapping_sub(first) & mask);
        Mailbox {
            slots: (0..slots as u64).map(|j| Slot::new(prev(j))).collect(),
            slot_mask: slots as u64 - 1,
            arena: Arena::new(arena.max(EAGER_MAX).next_power_of_two()),
            starts: (0..slots.div_ceil(8))
                .map(|_| Starts(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
            prod: CachePadded::new(Producer {
                tail: AtomicU64::new(first),
                seen: AtomicU64::new(first),
                // The arena's virtual offsets start just as close to their wrap.
                head: AtomicU64::new(first.wrapping_mul(CHUNK as u64)),
            }),
            cons: CachePadded::new(Consumer {
                consumed: AtomicU64::new(first),
            }),
        }
    }

    fn slot(&self, n: u64) -> &Slot {
        &self.slots[(n & self.slot_mask) as usize]
    }

    /// The arena start recorded for message `n`'s cell.
    fn start_of(&self, n: u64) -> &AtomicU64 {
        let i = (n & self.slot_mask) as usize;
        &self.starts[i / 8].0[i % 8]
    }

    // ----- producer side -------------------------------------------------------------------

    /// Where a payload of `len` bytes would go in the arena now: (virtual start, virtual
    /// end). A payload never wraps around the ring's end; it skips to the next lap instead.
    fn place(&self, len: usize) -> (u64, u64) {
        let head = self.prod.head.load(Ordering::Relaxed);
        if carry(len) != Carry::Arena {
            return (head, head);
        }
        let need = len.div_ceil(CHUNK) as u64 * CHUNK as u64;
        let cap = self.arena.len as u64;
        let start = if (head & (cap - 1)) + need > cap {
            (head | (cap - 1)).wrapping_add(1)
        } else {
            head
        };
        (start, start.wrapping_add(need))
    }

    /// Whether message `tail`, with a payload placed up to virtual offset `end`, fits given
    /// that the consumer has released `consumed` messages: a cell must be free, and the arena
    /// bytes from the oldest unreleased message's start to `end` must fit in the arena.
    fn fits(&self, tail: u64, end: u64, consumed: u64) -> bool {
        let busy = tail.wrapping_sub(consumed);
        if busy >= self.slots.len() as u64 {
            return false;
        }
        if busy == 0 {
            // Nothing is live: any placement fits (a payload is at most EAGER_MAX <= arena).
            return true;
        }
        let oldest = self.start_of(consumed).load(Ordering::Relaxed);
        end.wrapping_sub(oldest) <= self.arena.len as u64
    }

    /// Producer: whether a message of `len` bytes can be posted now (only reads, apart from
    /// the producer's own cache of `consumed`).
    pub(crate) fn has_room(&self, len: usize) -> bool {
        self.reserve(len).is_some()
    }

    /// Producer: the index and arena placement the next message of `len` bytes gets, if there
    /// is room for it.
    #[inline]
    fn reserve(&self, len: usize) -> Option<(u64, u64, u64)> {
        let tail = self.prod.tail.load(Ordering::Relaxed);
        let (start, end) = self.place(len);
        if !self.fits(tail, end, self.prod.seen.load(Ordering::Relaxed)) {
            let consumed = self.cons.consumed.load(Ordering::Acquire);
            self.prod.seen.store(consumed, Ordering::Relaxed);
            if !self.fits(tail, end, consumed) {
                return None;
            }
        }
        Some((tail, start, end))
    }

    /// Producer: posts a message of `header.len` bytes at `src` if there is room — inline or
    /// through the arena up to `EAGER_MAX` bytes, lent (rendezvous) beyond. Returns the
    /// message's number and whether its payload is lent.
    ///
    /// # Safety
    /// `src` must be valid for reads of `header.len` bytes. If the payload is lent, `src` must
    /// stay valid and unwritten until `is_consumed` or `withdraw` returns true for the
    /// returned number.
    #[inline]
    pub(crate) unsafe fn try_post(&self, header: Header, src: *const u8) -> Option<(u64, bool)> {
        let (n, start, end) = self.reserve(header.len)?;
        let how = carry(header.len);
        let loc = match how {
            Carry::Inline => std::ptr::null(),
            Carry::Arena => {
                let at = (start & (self.arena.len as u64 - 1)) as usize;
                // SAFETY: `fits` saw the consumer release every message that used this range;
                // `src` is readable per the contract.
                unsafe { self.arena.write(at, src, header.len) };
                std::ptr::without_provenance(at)
            }
            Carry::Lent => src,
        };
        let slot = self.slot(n);
        if how == Carry::Lent {
            slot.claim.store(CLAIM_POSTED, Ordering::Relaxed);
        }
        slot.body.with_mut(|body| {
            // SAFETY: the cell is free (reserve saw the consumer release it), so nobody else
            // accesses its body until `seq` is published below.
            unsafe {
                (*body).tag = header.tag;
                (*body).typ = header.typ;
                (*body).len = header.len as u64;
                (*body).loc = loc;
                if how == Carry::Inline {
                    crate::copy::copy_short(
                        src,
                        (*body).inline.as_mut_ptr().cast::<u8>(),
                        header.len,
                    );
                }
            }
        });
        self.start_of(n).store(start, Ordering::Relaxed);
        self.prod.head.store(end, Ordering::Relaxed);
        self.prod.tail.store(n.wrapping_add(1), Ordering::Relaxed);
        // Release: the body and arena writes above happen before the consumer's acquire of
        // `seq`. The caller then unparks the consumer, whose fence pairs with this store.
        slot.seq.store(n.wrapping_add(1), Ordering::Release);
        Some((n, how == Carry::Lent))
    }

    /// Producer: whether the consumer has finished with message `n` (the rendezvous
    /// acknowledgement). Only reads.
    pub(crate) fn is_consumed(&self, n: u64) -> bool {
        let done = self.cons.consumed.load(Ordering::Acquire);
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
                Ordering::AcqRel,
                Ordering::Acquire,
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
    #[inline]
    pub(crate) fn front(&self) -> Option<Header> {
        let n = self.cons.consumed.load(Ordering::Relaxed);
        let slot = self.slot(n);
        if slot.seq.load(Ordering::Acquire) != n.wrapping_add(1) {
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
    /// calling `read` with a pointer to its `len` payload bytes — in the cell, in the arena,
    /// or the producer's own lent slice — then releases the cell, which acknowledges a lent
    /// message. The cell is released even if `read` unwinds.
    pub(crate) fn take<R>(&self, read: impl FnOnce(*const u8) -> R) -> Result<R, Withdrawn> {
        let n = self.cons.consumed.load(Ordering::Relaxed);
        let slot = self.slot(n);
        debug_assert_eq!(slot.seq.load(Ordering::Relaxed), n.wrapping_add(1));
        // SAFETY: as in `front`.
        let (len, loc) = slot
            .body
            .with(|body| unsafe { ((*body).len as usize, (*body).loc) });

        /// Releases the cell when dropped, on return or unwind.
        struct Release<'a>(&'a AtomicU64, u64);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                // Release: our reads of the cell, arena or lent slice happen before the
                // producer's acquire of `consumed` lets it reuse them.
                self.0.store(self.1.wrapping_add(1), Ordering::Release);
            }
        }

        match carry(len) {
            Carry::Inline => {
                let _release = Release(&self.cons.consumed, n);
                // SAFETY: as in `front`; the inline bytes hold the `len` bytes copied.
                Ok(slot
                    .body
                    .with(|body| read(unsafe { (*body).inline.as_ptr().cast::<u8>() })))
            }
            Carry::Arena => {
                let _release = Release(&self.cons.consumed, n);
                // SAFETY: the producer wrote this range before publishing `seq` and leaves it
                // alone until we release the cell.
                Ok(unsafe { self.arena.read(loc.addr(), len, read) })
            }
            Carry::Lent => {
                let claimed = slot
                    .claim
                    .compare_exchange(
                        CLAIM_POSTED,
                        CLAIM_TAKEN,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok();
                let _release = Release(&self.cons.consumed, n);
                if !claimed {
                    return Err(Withdrawn);
                }
                #[cfg(loom)]
                let out = slot.lent.with(|_| read(loc));
                #[cfg(not(loom))]
                let out = read(loc);
                Ok(out)
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom;
