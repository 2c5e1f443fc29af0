//! Failure notices between the processes of a hybrid team: a process whose run failed tells
//! every other process ([`Notices::notify`]), and a thread of theirs that waits for another
//! process looks for a notice of the current run between its polls ([`Notices::notice`]), so
//! that a thread blocked on a message from a process whose thread panicked fails instead of
//! waiting for the team's timeout. A notice names its run (the team counts runs), so that a
//! late one is recognised and dropped. The notices travel on a duplicate communicator of their
//! own, shared by the team's [`super::Channels`] and those of its duplicates (`Comm::dup`),
//! so that one notice reaches a waiter on any of them.

use super::request::{isend, null_request, wildcards};
use super::transport::ok;
use ::mpi::ffi;
use ::mpi::topology::SimpleCommunicator;
use ::mpi::traits::AsRaw;
use std::mem::{size_of, MaybeUninit};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a hybrid team's failure notices travel, and what this process knows of them (module
/// docs).
pub(crate) struct Notices {
    /// The duplicate the notices travel on.
    control: SimpleCommunicator,
    /// The number of the current run (set by the team's rank 0 before the ranks start).
    run: AtomicU64,
    /// Whether this process has sent its notices for the current run (the run number).
    notified: AtomicU64,
    /// The first process whose notice of the current run was received, plus one (0: none).
    noticed: AtomicU64,
    /// The notices' payloads (run numbers) sent so far, kept until the sends are done (they
    /// are detached: `MPI_Request_free`), that is for the notices' life. Boxed so that each
    /// keeps its address while the vector grows.
    #[allow(clippy::vec_box)]
    sent: parking_lot::Mutex<Vec<Box<u64>>>,
}

// SAFETY: `Notices` are made only with `Channels`, that is under MPI_THREAD_MULTIPLE (any
// thread may call MPI at any time, MPI 3.1 §12.4.3) or for a relaying leader, the one thread
// that calls them; the handle is not changed after it is made.
unsafe impl Send for Notices {}
// SAFETY: see `Send`.
unsafe impl Sync for Notices {}

impl Notices {
    /// Notices over `control`, a duplicate owned from now on.
    pub(crate) fn new(control: SimpleCommunicator) -> Notices {
        Notices {
            control,
            run: AtomicU64::new(0),
            notified: AtomicU64::new(0),
            noticed: AtomicU64::new(0),
            sent: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// A run begins (on the team's rank 0, before the ranks start): its number, and the
    /// notices of earlier runs still undelivered are dropped.
    pub(crate) fn begin_run(&self, run: u64) {
        self.run.store(run, Ordering::SeqCst);
        while self.notice().is_some() {}
        self.noticed.store(0, Ordering::SeqCst);
    }

    /// The first process whose failure notice of the current run has been received.
    pub(crate) fn noticed(&self) -> Option<usize> {
        let q = self.noticed.load(Ordering::SeqCst);
        (q > 0).then(|| q as usize - 1)
    }

    /// Tells every other process of `processes` that this process's current run failed,
    /// once per run.
    pub(crate) fn notify(&self, processes: usize, me: usize) {
        let run = self.run.load(Ordering::SeqCst);
        if self.notified.swap(run, Ordering::SeqCst) == run {
            return;
        }
        let mut sent = self.sent.lock();
        for q in (0..processes).filter(|&q| q != me) {
            let payload = Box::new(run);
            let mut req = null_request();
            // SAFETY: `payload` is kept in `sent` for the channels' life, so it outlives the
            // detached send; the control communicator is valid and `q` one of its ranks.
            unsafe {
                isend(
                    (&*payload as *const u64).cast(),
                    size_of::<u64>(),
                    q,
                    0,
                    self.control.as_raw(),
                    &mut req,
                );
                ok(ffi::MPI_Request_free(&mut req), "MPI_Request_free");
            }
            sent.push(payload);
        }
    }

    /// Records that process `q`'s current run failed, learned without its notice (through a
    /// node's shared memory), as if the notice had come first.
    pub(crate) fn record(&self, q: usize) {
        let _ = self
            .noticed
            .compare_exchange(0, q as u64 + 1, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// A notice of the current run's failure from another process, if one has arrived: that
    /// process. Notices of earlier runs are received and dropped.
    pub(crate) fn notice(&self) -> Option<usize> {
        let (any_source, _) = wildcards();
        loop {
            let mut found: c_int = 0;
            let mut status = MaybeUninit::<ffi::MPI_Status>::uninit();
            // SAFETY: the out-parameters point to live locals; the communicator is valid.
            let rc = unsafe {
                ffi::MPI_Iprobe(
                    any_source,
                    0,
                    self.control.as_raw(),
                    &mut found,
                    status.as_mut_ptr(),
                )
            };
            ok(rc, "MPI_Iprobe");
            if found == 0 {
                return None;
            }
            // SAFETY: MPI_Iprobe found a message and wrote the status.
            let source = unsafe { status.assume_init() }.MPI_SOURCE;
            let mut run: u64 = 0;
            // SAFETY: `run` is writable for the notice's 8 bytes; the message is there, so the
            // receive completes at once.
            let rc = unsafe {
                ffi::MPI_Recv(
                    (&mut run as *mut u64).cast(),
                    size_of::<u64>() as c_int,
                    ffi::RSMPI_UINT8_T,
                    source,
                    0,
                    self.control.as_raw(),
                    ffi::RSMPI_STATUS_IGNORE,
                )
            };
            ok(rc, "MPI_Recv");
            if run == self.run.load(Ordering::SeqCst) {
                let first = source as u64 + 1;
                let _ = self
                    .noticed
                    .compare_exchange(0, first, Ordering::SeqCst, Ordering::SeqCst);
                return Some(source as usize);
            }
        }
    }
}
