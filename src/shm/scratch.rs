//! Per-rank scratch buffers of a communicator, reused from call to call.
//!
//! A collective whose schedule stages data (the hierarchical all-to-all's gathered and
//! staging buffers, say) takes its buffers from `Member::scratch` instead of allocating them
//! afresh on every call. At MiB sizes a fresh allocation is a fresh `mmap`: every call would
//! page-fault all of it in again and `munmap` it at the end, contending on the process's
//! memory-map lock with the other ranks' threads. Reused buffers are faulted in once.
//!
//! **The pool.** A [`Pool`] keeps up to [`POOL_SIZE`] cache-line (64-byte) aligned byte
//! allocations. `Member::scratch` hands out the smallest pooled allocation big enough for the
//! request, or allocates one, as a guard ([`Scratch`]) that derefs to a slice of possibly
//! uninitialised elements and gives its allocation back to the pool when dropped. Several
//! guards may be held at once. When the pool is full, a returned allocation replaces the
//! smallest pooled one if it is larger, and is freed otherwise.
//!
//! **Memory held.** A communicator keeps its largest scratch buffers (at most [`POOL_SIZE`]
//! of them, each no larger than the largest request) until it is dropped, as MPI libraries
//! cache their scratch space.
//!
//! Element types aligned to more than 64 bytes get a plain allocation of their own, not
//! pooled; zero-sized types and empty requests allocate nothing.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ops::{Deref, DerefMut};

/// Allocations a [`Pool`] keeps at most.
pub(crate) const POOL_SIZE: usize = 8;

/// One cache line: the unit (and the alignment) of pooled allocations.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(crate) struct Align64([u8; 64]);

/// A pooled allocation: whole cache lines, possibly uninitialised.
type Lines = Box<[MaybeUninit<Align64>]>;

/// A communicator's pool of scratch allocations (one per rank's `Member`; used by one thread at
/// a time, hence the `RefCell`).
#[derive(Default)]
pub(crate) struct Pool {
    /// The allocations not handed out, in no particular order.
    free: RefCell<Vec<Lines>>,
}

impl Pool {
    /// An empty pool.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Takes the smallest pooled allocation of at least `lines` cache lines out of the pool,
    /// or allocates a new one of exactly `lines`.
    fn take(&self, lines: usize) -> Lines {
        let mut free = self.free.borrow_mut();
        let best = free
            .iter()
            .enumerate()
            .filter(|(_, a)| a.len() >= lines)
            .min_by_key(|(_, a)| a.len())
            .map(|(i, _)| i);
        match best {
            Some(i) => free.swap_remove(i),
            None => Box::new_uninit_slice(lines),
        }
    }

    /// Returns `lines` to the pool: kept if the pool has room or holds a smaller allocation
    /// (which is freed instead), freed otherwise.
    fn give(&self, lines: Lines) {
        let mut free = self.free.borrow_mut();
        if free.len() < POOL_SIZE {
            free.push(lines);
            return;
        }
        let smallest = free
            .iter()
            .enumerate()
            .min_by_key(|(_, a)| a.len())
            .map(|(i, _)| i);
        if let Some(i) = smallest {
            if free[i].len() < lines.len() {
                free[i] = lines;
            }
        }
    }

    /// Cache lines held by the pool (not counting what is handed out), for tests.
    #[cfg(all(test, not(loom)))]
    fn held(&self) -> usize {
        self.free.borrow().iter().map(|a| a.len()).sum()
    }
}

/// Where a [`Scratch`]'s elements live.
enum Storage<T> {
    /// A pooled allocation, given back on drop.
    Pooled(Lines),
    /// An allocation of its own (over-aligned `T`), or none (zero-sized `T`, length 0).
    Own(Box<[MaybeUninit<T>]>),
}

/// A scratch buffer of `len` possibly uninitialised `T`s from a communicator's [`Pool`]
/// (`Member::scratch`), which it gives its allocation back to when dropped. Its contents are
/// whatever an earlier user left (or never written): write before reading.
pub(crate) struct Scratch<'c, T> {
    pool: &'c Pool,
    /// `Pooled` always holds at least `len * size_of::<T>()` bytes; `Own` exactly `len`
    /// elements.
    storage: Storage<T>,
    len: usize,
    _elems: PhantomData<T>,
}

impl<'c, T> Scratch<'c, T> {
    /// A buffer of `len` elements from `pool`: the smallest pooled allocation big enough, or
    /// a new one (module docs).
    pub(crate) fn take(pool: &'c Pool, len: usize) -> Self {
        let bytes = len
            .checked_mul(size_of::<T>())
            .expect("scratch buffer size overflows usize");
        let storage = if bytes == 0 || align_of::<T>() > align_of::<Align64>() {
            Storage::Own(Box::new_uninit_slice(len))
        } else {
            Storage::Pooled(pool.take(bytes.div_ceil(size_of::<Align64>())))
        };
        Scratch {
            pool,
            storage,
            len,
            _elems: PhantomData,
        }
    }
}

impl<T> Deref for Scratch<'_, T> {
    type Target = [MaybeUninit<T>];

    fn deref(&self) -> &[MaybeUninit<T>] {
        match &self.storage {
            Storage::Own(own) => own,
            Storage::Pooled(lines) => {
                // SAFETY: `lines` is one live allocation of at least `len * size_of::<T>()`
                // bytes (`Member::scratch` sized it so, and `Pool::take` hands out only
                // allocations at least that big), aligned to 64 ≥ `align_of::<T>()` bytes
                // (only such `T` are pooled), so it holds `len` properly aligned slots; any
                // bytes are a valid `MaybeUninit<T>`; the guard owns the allocation
                // exclusively and the returned borrow of `self` keeps it alive and unchanged.
                unsafe { std::slice::from_raw_parts(lines.as_ptr().cast(), self.len) }
            }
        }
    }
}

impl<T> DerefMut for Scratch<'_, T> {
    fn deref_mut(&mut self) -> &mut [MaybeUninit<T>] {
        match &mut self.storage {
            Storage::Own(own) => own,
            Storage::Pooled(lines) => {
                // SAFETY: as in `deref`; the borrow is derived from the guard's unique
                // borrow of its allocation, so no other reference to it exists while the
                // returned one lives.
                unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast(), self.len) }
            }
        }
    }
}

impl<T> Drop for Scratch<'_, T> {
    fn drop(&mut self) {
        if let Storage::Pooled(lines) =
            std::mem::replace(&mut self.storage, Storage::Own(Box::new([])))
        {
            self.pool.give(lines);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// What a rank's `Member` holds of the pool.
    struct Owner {
        scratch: Pool,
    }

    impl Owner {
        fn scratch<T>(&self, len: usize) -> Scratch<'_, T> {
            Scratch::take(&self.scratch, len)
        }
    }

    /// Runs `f` with a fresh pool.
    fn with_comm<R>(f: impl Fn(&Owner) -> R) -> R {
        f(&Owner {
            scratch: Pool::new(),
        })
    }

    fn addr<T>(s: &[MaybeUninit<T>]) -> usize {
        s.as_ptr() as usize
    }

    #[test]
    fn several_guards_at_once_are_disjoint_and_keep_their_contents() {
        with_comm(|comm| {
            let mut a = comm.scratch::<u32>(1000);
            let mut b = comm.scratch::<u32>(1000);
            let mut c = comm.scratch::<u8>(10);
            for (i, x) in a.iter_mut().enumerate() {
                x.write(i as u32);
            }
            for (i, x) in b.iter_mut().enumerate() {
                x.write(!(i as u32));
            }
            for x in c.iter_mut() {
                x.write(7);
            }
            let (ra, rb) = (addr(&a)..addr(&a) + 4000, addr(&b)..addr(&b) + 4000);
            assert!(ra.end <= rb.start || rb.end <= ra.start, "a and b overlap");
            // SAFETY: every element was written above.
            unsafe {
                assert!(a
                    .iter()
                    .enumerate()
                    .all(|(i, x)| x.assume_init() == i as u32));
                assert!(b
                    .iter()
                    .enumerate()
                    .all(|(i, x)| x.assume_init() == !(i as u32)));
                assert!(c.iter().all(|x| x.assume_init() == 7));
            }
            assert_eq!((a.len(), b.len(), c.len()), (1000, 1000, 10));
        });
    }

    #[test]
    fn a_dropped_buffer_is_handed_out_again() {
        with_comm(|comm| {
            let first = addr(&comm.scratch::<u64>(1 << 17));
            // Smaller and of another type: the same allocation still fits.
            let again = addr(&comm.scratch::<u32>(1 << 16));
            assert_eq!(first, again);
            // Two small ones at once while the 1 MiB one is held: two more allocations,
            // which both come back.
            let held = comm.scratch::<u8>(1 << 20);
            assert_eq!(addr(&held), first);
            let (x, y) = (comm.scratch::<u8>(100), comm.scratch::<u8>(100));
            let (px, py) = (addr(&x), addr(&y));
            assert!(px != py && px != first && py != first);
            drop((held, x, y));
            // The smallest fitting allocation is chosen: the small ones for small requests,
            // the 1 MiB one for a large request.
            let (x, y) = (comm.scratch::<u8>(100), comm.scratch::<u8>(64));
            let mut got = [addr(&x), addr(&y)];
            let mut want = [px, py];
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want);
            let big = comm.scratch::<u8>(1 << 20);
            assert_eq!(addr(&big), first);
        });
    }

    #[test]
    fn the_pool_stays_bounded() {
        with_comm(|comm| {
            let held: Vec<_> = (1..=2 * POOL_SIZE)
                .map(|k| comm.scratch::<u8>(k * 64))
                .collect();
            drop(held);
            // The largest POOL_SIZE were kept.
            let lines: usize = (POOL_SIZE + 1..=2 * POOL_SIZE).sum();
            assert_eq!(comm.scratch.held(), lines);
            assert_eq!(comm.scratch.free.borrow().len(), POOL_SIZE);
        });
    }

    #[repr(align(32))]
    #[derive(Clone, Copy)]
    struct Align32(#[allow(dead_code)] u8);

    #[repr(align(128))]
    #[derive(Clone, Copy)]
    struct Align128(#[allow(dead_code)] u8);

    #[test]
    fn elements_are_aligned() {
        fn check<T>(comm: &Owner) {
            for len in [1, 3, 64, 1000] {
                let s = comm.scratch::<T>(len);
                assert_eq!(s.len(), len);
                assert_eq!(
                    addr(&s) % align_of::<T>(),
                    0,
                    "{}",
                    std::any::type_name::<T>()
                );
                // Pooled (cache-line aligned) or over-aligned beyond a cache line.
                assert_eq!(addr(&s) % 64, 0);
            }
        }
        with_comm(|comm| {
            check::<u8>(comm);
            check::<u64>(comm);
            check::<u128>(comm);
            check::<Align32>(comm);
            check::<Align128>(comm);
            // Written through the over-aligned fallback, too.
            let mut s = comm.scratch::<Align128>(4);
            for x in s.iter_mut() {
                x.write(Align128(1));
            }
        });
    }

    #[test]
    fn zero_sized_elements_and_empty_buffers() {
        with_comm(|comm| {
            let mut z = comm.scratch::<()>(usize::MAX);
            assert_eq!(z.len(), usize::MAX);
            z[12345].write(());
            let e = comm.scratch::<u64>(0);
            assert!(e.is_empty());
            assert_eq!(addr(&e) % align_of::<u64>(), 0);
            let e = comm.scratch::<u128>(0);
            assert!(e.is_empty());
            drop((z, e));
            // None of them went through the pool.
            assert_eq!(comm.scratch.held(), 0);
        });
    }
}
