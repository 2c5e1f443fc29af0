//! Loom models of the parker: whatever the interleaving, a thread that parks until a condition
//! holds is woken once a writer has made it hold and called `unpark` — with one waiter, with
//! two waiters on one parker, with two writers, and across repeated parks. A lost wake-up
//! shows as a loom deadlock. The argument they check is in `src/sync/README.md`.
//!
//! Writers publish with a release store and the conditions read with acquire loads: the
//! weakest orderings the parker's contract allows its users (the parker's own `SeqCst` fences
//! do the rest).

use super::Parker;
use ::loom::sync::atomic::Ordering::SeqCst;
use ::loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Acquire, Ordering::Release};
use ::loom::thread;
use std::sync::Arc;

/// A parker and the flags its waiters wait for.
#[derive(Default)]
struct Shared {
    parker: Parker,
    a: AtomicBool,
    b: AtomicBool,
}

fn shared() -> Arc<Shared> {
    Arc::new(Shared::default())
}

/// Parks on `parker` until `ready()`, without a deadline.
fn park_until(parker: &Parker, ready: impl FnMut() -> bool) {
    assert!(parker.park_until(ready, None));
}

/// One waiter, one writer: the writer's store and the waiter's announcement race in every
/// order, and the waiter is never left asleep.
#[test]
fn one_waiter_one_writer() {
    ::loom::model(|| {
        let s = shared();
        let waiter = {
            let s = s.clone();
            thread::spawn(move || park_until(&s.parker, || s.a.load(Acquire)))
        };
        s.a.store(true, Release);
        s.parker.unpark();
        waiter.join().unwrap();
    });
}

/// Two threads parked on one parker (a rank and a helper thread it lent a communicator to),
/// each for its own condition, and one writer that makes both true with one `unpark` each:
/// the notification reaches every sleeper, and a wake-up meant for one does not strand the
/// other.
#[test]
fn two_waiters_on_one_parker() {
    ::loom::model(|| {
        let s = shared();
        let waiters: Vec<_> = [false, true]
            .into_iter()
            .map(|second| {
                let s = s.clone();
                thread::spawn(move || {
                    let flag = if second { &s.b } else { &s.a };
                    park_until(&s.parker, || flag.load(Acquire));
                })
            })
            .collect();
        s.a.store(true, Release);
        s.parker.unpark();
        s.b.store(true, Release);
        s.parker.unpark();
        for w in waiters {
            w.join().unwrap();
        }
    });
}

/// One waiter whose condition needs two writers (as a `sendrecv` waits for its peer's message
/// and for the acknowledgement of its own): each writer publishes its part and unparks;
/// whichever comes last, the waiter wakes with both parts visible.
#[test]
fn one_waiter_two_writers() {
    ::loom::model(|| {
        let s = shared();
        let writer = {
            let s = s.clone();
            thread::spawn(move || {
                s.b.store(true, Release);
                s.parker.unpark();
            })
        };
        let waiter = {
            let s = s.clone();
            thread::spawn(move || park_until(&s.parker, || s.a.load(Acquire) && s.b.load(Acquire)))
        };
        s.a.store(true, Release);
        s.parker.unpark();
        writer.join().unwrap();
        waiter.join().unwrap();
    });
}

/// The same parker used again and again: the waiter parks for the first event, then for the
/// second; the announcement count goes back to zero in between, and the writer's second
/// `unpark` is not absorbed by the first park.
#[test]
fn repeated_parks() {
    ::loom::model(|| {
        let parker = Arc::new(Parker::default());
        let events = Arc::new(AtomicUsize::new(0));
        let waiter = {
            let (parker, events) = (parker.clone(), events.clone());
            thread::spawn(move || {
                for k in 1..=2 {
                    park_until(&parker, || events.load(Acquire) >= k);
                }
            })
        };
        for _ in 0..2 {
            events.fetch_add(1, Release);
            parker.unpark();
        }
        waiter.join().unwrap();
    });
}

/// Why the parker orders its two sides with `SeqCst` fences rather than `SeqCst` accesses
/// (`README.md`, "What loom sees differently"): loom models `SeqCst` loads and stores as
/// acquire/release, so it lets both loads of the store-buffering litmus test read the old
/// values — an outcome the real memory model forbids for `SeqCst` accesses — and would report
/// lost wake-ups that cannot happen. Should loom ever model `SeqCst` accesses fully, this test
/// starts failing.
#[test]
#[should_panic(expected = "store buffering")]
fn loom_lets_seqcst_store_buffering_through() {
    ::loom::model(|| {
        let x = Arc::new(AtomicBool::new(false));
        let y = Arc::new(AtomicBool::new(false));
        let t = {
            let (x, y) = (x.clone(), y.clone());
            thread::spawn(move || {
                x.store(true, SeqCst);
                y.load(SeqCst)
            })
        };
        y.store(true, SeqCst);
        let saw_x = x.load(SeqCst);
        let saw_y = t.join().unwrap();
        assert!(
            saw_x || saw_y,
            "store buffering: both SeqCst loads read the old value"
        );
    });
}
