//! A process of the node that exits in the middle of a round: a real segment shared with a
//! forked child, which the test reaps so that its process id is gone.

use super::{gone, process_exists, NodeMemory, Segment};
use crate::error::Error;
use crate::process::node::Halt;

#[test]
fn a_process_that_exits_inside_a_round_fails_the_waits_for_it() {
    let bytes = NodeMemory::bytes(2, 2, false);
    let (a, name) = Segment::create(bytes).unwrap();
    let b = Segment::open(&name, bytes).unwrap();
    Segment::unlink(&name).unwrap();
    let parent = NodeMemory::new(a, 2, 2, 0);
    let child = NodeMemory::new(b, 2, 2, 1);
    // SAFETY: the child touches only atomics of the shared mapping and its own process id
    // before `_exit`, nothing that another thread of this test process could hold locked.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let r = child.rounds();
        // SAFETY: getpid and _exit are async-signal-safe.
        r.join(unsafe { libc::getpid() } as u32);
        // Begins round 1, never arrives, and is gone.
        let _ = r.begin(&mut |_| None);
        // SAFETY: as `getpid`; the child ends here without running the test harness's code.
        unsafe { libc::_exit(0) };
    }
    let reaper = std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: `pid` is this process's child; `status` a live out-parameter.
        unsafe { libc::waitpid(pid, &mut status, 0) }
    });
    let r = parent.rounds().spinning(0);
    let k = r.begin(&mut |_| None).unwrap();
    r.arrive(k);
    let mut watch = |q: usize| {
        gone(&r, q).then_some(Error::ProcessFailed {
            rank: 0,
            op: "test",
            process: q,
        })
    };
    let waited = r.wait_arrived(k, None, &mut watch);
    assert_eq!(reaper.join().unwrap(), pid);
    match waited {
        Err(Halt::By(Error::ProcessFailed { process: 1, .. })) => {}
        Err(Halt::By(e)) => panic!("the wait failed with {e}"),
        Err(Halt::Poisoned(q)) => panic!("poisoned by {q}"),
        Ok(()) => panic!("the wait for a process that exited returned"),
    }
    assert!(!process_exists(pid as u32));
    assert!(process_exists(std::process::id()));
}
