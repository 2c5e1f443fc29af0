use super::*;

/// A hook that counts its runs and finds work when `found` says.
struct Counting {
    runs: Cell<u32>,
    flushes: Cell<u32>,
    found: bool,
    ready: Option<bool>,
}

impl Counting {
    fn new(found: bool) -> Self {
        Counting {
            runs: Cell::new(0),
            flushes: Cell::new(0),
            found,
            ready: None,
        }
    }
}

impl Idle for Counting {
    fn run(&self) -> bool {
        self.runs.set(self.runs.get() + 1);
        self.found
    }
    fn flush(&self) -> bool {
        self.flushes.set(self.flushes.get() + 1);
        true
    }
    fn ready(&self) -> Option<bool> {
        self.ready
    }
}

#[test]
fn the_hook_runs_inside_its_stretch_only_and_not_inside_itself() {
    let count = Cell::new(0);
    let hook = FnIdle(|| {
        count.set(count.get() + 1);
        !run()
    });
    assert!(!run());
    with_idle(&hook, || {
        assert!(installed());
        assert!(run());
        assert!(run());
    });
    assert!(!installed());
    assert!(!run());
    assert_eq!(count.get(), 2);
}

#[test]
fn the_previous_hook_comes_back_after_a_panic() {
    let outer = Counting::new(true);
    with_idle(&outer, || {
        let inner = FnIdle(|| -> bool { panic!("inner hook") });
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_idle(&inner, || panic!("stretch"))
        }));
        assert!(caught.is_err());
        assert!(run());
    });
    assert_eq!(outer.runs.get(), 1);
}

#[test]
fn every_installed_hook_runs_innermost_first() {
    let order = RefCell::new(Vec::new());
    let outer = FnIdle(|| {
        order.borrow_mut().push("outer");
        false
    });
    let inner = FnIdle(|| {
        order.borrow_mut().push("inner");
        true
    });
    with_idle(&outer, || {
        assert!(!run());
        with_idle(&inner, || assert!(run()));
        assert!(!run());
    });
    assert_eq!(*order.borrow(), ["outer", "inner", "outer", "outer"]);
}

#[test]
fn flush_runs_each_hooks_flush_part() {
    let (a, b) = (Counting::new(false), Counting::new(false));
    let plain = Cell::new(0);
    let whole = FnIdle(|| {
        plain.set(plain.get() + 1);
        false
    });
    assert!(!flush());
    with_idle(&a, || {
        with_idle(&whole, || {
            with_idle(&b, || {
                assert!(flush());
                assert!(!run());
            })
        })
    });
    // flush: each counter's part once and the closure whole; run: each whole once.
    assert_eq!((a.flushes.get(), b.flushes.get()), (1, 1));
    assert_eq!((a.runs.get(), b.runs.get(), plain.get()), (1, 1, 2));
}

#[test]
fn the_hooks_are_precise_only_if_every_one_can_tell() {
    let mut telling = Counting::new(false);
    telling.ready = Some(false);
    let mut has_work = Counting::new(false);
    has_work.ready = Some(true);
    let blind = Counting::new(false);
    with_idle(&telling, || {
        assert!(precise() && !ready());
        with_idle(&has_work, || assert!(precise() && ready()));
        with_idle(&blind, || assert!(!precise() && !ready()));
    });
}

#[test]
fn a_lasting_hook_runs_until_dropped() {
    let order = Rc::new(RefCell::new(Vec::new()));
    let o = order.clone();
    let lasting = lasting(FnIdle(move || {
        o.borrow_mut().push("lasting");
        true
    }));
    assert!(installed() && !precise());
    let stacked = FnIdle(|| {
        order.borrow_mut().push("stack");
        false
    });
    with_idle(&stacked, || assert!(run()));
    drop(lasting);
    assert!(!installed() && !run());
    assert_eq!(*order.borrow(), ["stack", "lasting"]);
}

#[test]
fn stretches_may_end_in_any_order() {
    // As a suspended task's or a C scope's coroutine's stretch does: the first hook's
    // stretch ends while the second's goes on, and the second is still run, alone.
    let (first, second) = (Counting::new(false), Counting::new(true));
    let (a, b) = (lasting_of(&first), lasting_of(&second));
    drop(a);
    assert!(run());
    drop(b);
    assert!(!installed());
    assert_eq!((first.runs.get(), second.runs.get()), (0, 1));

    /// A hook that forwards to `c` for as long as the returned guard lives (`c` outlives it).
    fn lasting_of(c: &Counting) -> Listed {
        // SAFETY: the guard is dropped before `c` in every use above.
        let c: &'static Counting = unsafe { std::mem::transmute::<&Counting, _>(c) };
        Listed(add(c))
    }
}

#[test]
fn a_hook_removed_by_another_hooks_work_is_not_called() {
    let victim = Counting::new(true);
    let guard = RefCell::new(None);
    let remover = FnIdle(|| {
        guard.borrow_mut().take();
        false
    });
    with_idle(&victim, || {
        // SAFETY: the entry is removed (by `remover`, below) while `victim` lives.
        let v: &'static Counting = unsafe { std::mem::transmute::<&Counting, _>(&victim) };
        *guard.borrow_mut() = Some(Listed(add(v)));
        with_idle(&remover, || assert!(run()));
    });
    // The outer entry ran once; the one listed later was removed before its turn.
    assert_eq!(victim.runs.get(), 1);
}

#[test]
fn hooks_beyond_the_slots_keep_their_order_as_any_is_removed() {
    let hooks: Vec<_> = (0..SLOTS + 3)
        .map(|i| {
            FnIdle(move || {
                ORDER.with(|o| o.borrow_mut().push(i));
                false
            })
        })
        .collect();
    thread_local!(static ORDER: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) });
    let mut listed: Vec<Option<Listed>> = hooks
        .iter()
        .map(|h| {
            // SAFETY: every entry is removed below, before `hooks` is dropped.
            let h: &'static dyn Idle = unsafe { std::mem::transmute::<&dyn Idle, _>(h) };
            Some(Listed(add(h)))
        })
        .collect();
    // Remove one from the slots and one from beyond them, then the rest in any order.
    for gone in [2, SLOTS + 1, 0, SLOTS + 2, 5] {
        listed[gone] = None;
        ORDER.with(|o| o.borrow_mut().clear());
        run();
        let left: Vec<usize> = (0..SLOTS + 3)
            .rev()
            .filter(|&i| listed[i].is_some())
            .collect();
        assert_eq!(ORDER.with(|o| o.borrow().clone()), left, "innermost first");
    }
    listed.clear();
    assert!(!installed());
}
