//! What the crate's loom models share (built only for `cargo test` under `--cfg loom`): the
//! preemption cap of the largest models, a quiet panic hook for the panics the models cause on
//! purpose, a buffer whose accesses loom tracks, and the record of barrier arrivals.
//!
//! The models themselves live beside the code they check, each in a `loom` module of its own;
//! `README.md` in this folder says how to run them. The communicators they run on (members of
//! a communicator without a team) are made by `shm::loom_world`.

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// `loom::model` for the models too large to explore at two preemptions on every run: at most
/// one preemption, unless `CORECOLL_LOOM_DEEP=1` asks for the bound of `LOOM_MAX_PREEMPTIONS`.
/// One preemption still interleaves every pair of threads at every point once.
pub(crate) fn model_capped<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut builder = loom::model::Builder::new();
    let deep = std::env::var("CORECOLL_LOOM_DEEP").is_ok_and(|v| v.trim() == "1");
    if !deep {
        builder.preemption_bound = Some(builder.preemption_bound.map_or(1, |b| b.min(1)));
    }
    builder.check(f);
}

/// Starts the message of every panic a model causes on purpose; [`quiet_panics`] keeps those
/// off the output.
pub(crate) const QUIET: &str = "expected by the model";

/// Installs (once per process) a panic hook that prints every panic but those whose message
/// starts with [`QUIET`].
pub(crate) fn quiet_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if !message.is_some_and(|m| m.starts_with(QUIET)) {
                default(info);
            }
        }));
    });
}

/// A buffer that one thread lends and another reads, tracked by loom: the reader reads it
/// inside `with`, the owner frees it inside `with_mut` once its send is over, so loom reports
/// any execution in which the free is not ordered after the read.
pub(crate) struct Tracked<T>(UnsafeCell<Option<Box<[T]>>>);

// SAFETY: the cell is accessed only through loom's `with`/`with_mut`, which check that every
// write is ordered with every other access; that is the property under test.
unsafe impl<T: Send> Sync for Tracked<T> {}

impl<T: Copy> Tracked<T> {
    /// A buffer holding `v`.
    pub(crate) fn new(v: Vec<T>) -> Arc<Self> {
        Arc::new(Tracked(UnsafeCell::new(Some(v.into_boxed_slice()))))
    }

    /// The buffer's address and length, to lend.
    pub(crate) fn addr(&self) -> (*const T, usize) {
        // SAFETY: read access checked by loom; the buffer is present until `free`.
        self.0.with(|b| {
            let b = unsafe { (*b).as_ref() }.expect("buffer present");
            (b.as_ptr(), b.len())
        })
    }

    /// The reader's access to a lent slice: checks that it is this very buffer (read in
    /// place, not a copy) and copies it, all inside one loom read access.
    pub(crate) fn read(&self, lent: &[T]) -> Vec<T> {
        // SAFETY: read access checked by loom.
        self.0.with(|b| {
            let b = unsafe { (*b).as_ref() }.expect("a lent buffer is not freed while read");
            assert_eq!(
                lent.as_ptr(),
                b.as_ptr(),
                "the reader reads the owner's slice"
            );
            assert_eq!(lent.len(), b.len());
            lent.to_vec()
        })
    }

    /// The owner takes its buffer back and frees it.
    pub(crate) fn free(&self) {
        // SAFETY: write access checked by loom.
        self.0.with_mut(|b| unsafe { *b = None });
    }
}

/// What the ranks of a barrier model share besides their communicators: per barrier parity
/// and rank a plain (loom-tracked) slot that its rank writes before the barrier and every rank
/// reads after it, and a relaxed counter of arrivals. A barrier that let a rank out before
/// every rank arrived would let a read race with (or miss) a write: loom reports the race, or
/// [`Arrivals::check`] fails. The parity rows also check the other direction: a write before
/// barrier k + 2 must not race with the reads of the same slot after barrier k.
pub(crate) struct Arrivals {
    p: usize,
    slots: [Vec<UnsafeCell<usize>>; 2],
    arrived: AtomicUsize,
}

// SAFETY: the slots are accessed only through loom's `with`/`with_mut`, which check that the
// barrier orders every write with every read; that is the property under test.
unsafe impl Sync for Arrivals {}

impl Arrivals {
    /// The record of `p` ranks, nobody arrived.
    pub(crate) fn new(p: usize) -> Arc<Self> {
        let row = || (0..p).map(|_| UnsafeCell::new(0)).collect();
        Arc::new(Arrivals {
            p,
            slots: [row(), row()],
            arrived: AtomicUsize::new(0),
        })
    }

    /// Before barrier `k`: rank `r` writes `k + 1` into its slot of parity `k % 2` (the slot
    /// every rank read after barrier `k − 2`) and counts its arrival, without any ordering.
    pub(crate) fn arrive(&self, r: usize, k: usize) {
        // SAFETY: write access checked by loom.
        self.slots[k % 2][r].with_mut(|v| unsafe { *v = k + 1 });
        self.arrived.fetch_add(1, Relaxed);
    }

    /// After barrier `k`: every rank's write before barrier `k` is visible (and ordered before
    /// this read, or loom reports a race), and so are all `p · (k + 1)` arrivals.
    pub(crate) fn check(&self, k: usize) {
        for s in 0..self.p {
            // SAFETY: read access checked by loom.
            let v = self.slots[k % 2][s].with(|v| unsafe { *v });
            assert_eq!(v, k + 1, "rank {s}'s write before barrier {k}");
        }
        assert!(self.arrived.load(Relaxed) >= self.p * (k + 1));
    }
}
