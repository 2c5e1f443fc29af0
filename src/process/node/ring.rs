//! A ring of bytes in a node's segment from one rank to one rank of another process: the
//! channel of point-to-point between processes of one node (`process::node::mail` frames messages
//! on it).
//!
//! One writer per line: the sending rank alone writes `head` (bytes written so far, ever
//! growing), the receiving rank alone writes `tail` (bytes taken so far). The sender writes
//! bytes at positions `head mod capacity` … while `head − tail < capacity` and publishes them
//! by storing the new `head` (release); the receiver, having loaded `head` (acquire), reads up
//! to it and hands the space back by storing the new `tail` (release), which the sender loads
//! (acquire) before it writes there again. So a byte is never read before it is written, nor
//! overwritten before it is read. Counters of 64 bits never wrap in practice.
//!
//! Nothing waits here: [`Ring::push`] writes what fits and [`Ring::pull`] takes what has come;
//! their callers poll (`process`'s point-to-point waits, spinning then yielding, since a wake-up
//! across processes would need a futex on the segment, as for the node's rounds).

use crate::sync::{AtomicU64, CachePadded, Ordering};

/// The two counters of a ring, each on its own line.
#[derive(Default)]
pub(crate) struct Lines {
    /// Bytes the sender has written (the sender's line).
    head: CachePadded<AtomicU64>,
    /// Bytes the receiver has taken (the receiver's line).
    tail: CachePadded<AtomicU64>,
}

/// Where a ring's bytes live: the segment's memory, or (in the loom models) cells whose every
/// access loom checks.
pub(crate) trait Store {
    /// Bytes the store holds.
    fn capacity(&self) -> usize;
    /// Copies `src` to positions `at..at + src.len()` (within the capacity).
    ///
    /// # Safety
    /// No one reads or writes those positions meanwhile (the ring's protocol).
    unsafe fn put(&self, at: usize, src: &[u8]);
    /// Copies positions `at..at + dst.len()` (within the capacity) to `dst`.
    ///
    /// # Safety
    /// No one writes those positions meanwhile (the ring's protocol).
    unsafe fn get(&self, at: usize, dst: &mut [u8]);
}

/// Bytes of the segment at `base`, `capacity` long.
pub(crate) struct Raw {
    pub(crate) base: *mut u8,
    pub(crate) capacity: usize,
}

impl Store for Raw {
    fn capacity(&self) -> usize {
        self.capacity
    }

    unsafe fn put(&self, at: usize, src: &[u8]) {
        debug_assert!(at + src.len() <= self.capacity);
        // SAFETY: within the store (the caller's bounds), not touched by anyone else meanwhile
        // (the caller's contract); `src` is the caller's own memory, so they do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.base.add(at), src.len()) }
    }

    unsafe fn get(&self, at: usize, dst: &mut [u8]) {
        debug_assert!(at + dst.len() <= self.capacity);
        // SAFETY: as in `put`, reading.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(at), dst.as_mut_ptr(), dst.len()) }
    }
}

/// One side's view of a ring: its counters and its bytes.
pub(crate) struct Ring<'a, S: Store> {
    lines: &'a Lines,
    store: S,
}

impl<'a, S: Store> Ring<'a, S> {
    /// The ring of `lines` over `store`. Its sender only calls [`Ring::push`], its receiver
    /// only [`Ring::pull`], each from one thread at a time.
    pub(crate) fn new(lines: &'a Lines, store: S) -> Self {
        Ring { lines, store }
    }

    /// Writes as much of `src` as fits: the number of bytes written (the sender's side).
    pub(crate) fn push(&self, src: &[u8]) -> usize {
        self.push_two(src, &[])
    }

    /// Writes as much of `first` and then `second` as fits, published at once: the number of
    /// bytes written (the sender's side).
    pub(crate) fn push_two(&self, first: &[u8], second: &[u8]) -> usize {
        let cap = self.store.capacity();
        // The sender's own counter: no one else writes it.
        let head = self.lines.head.load(Ordering::Relaxed);
        let tail = self.lines.tail.load(Ordering::Acquire);
        let free = cap - (head - tail) as usize;
        let n = free.min(first.len() + second.len());
        if n == 0 {
            return 0;
        }
        let (a, b) = (n.min(first.len()), n - n.min(first.len()));
        for (from, src) in [(head, &first[..a]), (head + a as u64, &second[..b])] {
            self.copy(from, src.len(), |at, range| {
                // SAFETY: positions between head and tail + capacity: taken by the receiver
                // (its tail, loaded with acquire, is past them) and not yet published again.
                unsafe { self.store.put(at, &src[range]) }
            });
        }
        self.lines.head.store(head + n as u64, Ordering::Release);
        n
    }

    /// Takes as many bytes as have come, up to `dst.len()`, into `dst`: the number taken (the
    /// receiver's side).
    pub(crate) fn pull(&self, dst: &mut [u8]) -> usize {
        let tail = self.lines.tail.load(Ordering::Acquire);
        let head = self.lines.head.load(Ordering::Acquire);
        let n = ((head - tail) as usize).min(dst.len());
        if n == 0 {
            return 0;
        }
        self.copy(tail, n, |at, range| {
            // SAFETY: positions between tail and head: published by the sender (its head,
            // loaded with acquire, is past them), which leaves them alone until the new tail
            // below hands them back.
            unsafe { self.store.get(at, &mut dst[range]) }
        });
        self.lines.tail.store(tail + n as u64, Ordering::Release);
        n
    }

    /// Copies as many bytes as have come, up to `dst.len()`, into `dst` without taking them:
    /// the number copied (the receiver's side).
    pub(crate) fn peek(&self, dst: &mut [u8]) -> usize {
        let tail = self.lines.tail.load(Ordering::Relaxed);
        let head = self.lines.head.load(Ordering::Acquire);
        let n = ((head - tail) as usize).min(dst.len());
        self.copy(tail, n, |at, range| {
            // SAFETY: as in `pull`; the sender leaves them alone until a later `pull`.
            unsafe { self.store.get(at, &mut dst[range]) }
        });
        n
    }

    /// Calls `f(position, range of the caller's bytes)` for the (at most two) pieces of the
    /// `n` bytes from counter value `from`, split where the ring wraps.
    fn copy(&self, from: u64, n: usize, mut f: impl FnMut(usize, std::ops::Range<usize>)) {
        if n == 0 {
            return;
        }
        let cap = self.store.capacity();
        let at = (from % cap as u64) as usize;
        let first = n.min(cap - at);
        f(at, 0..first);
        if first < n {
            f(0, first..n);
        }
    }
}
