//! The hybrid world: a team whose ranks are the threads of several MPI processes
//! (`TeamBuilder::mpi`), every thread of every process a rank of one [`Comm`].
//!
//! **Ranks.** Process q runs tᵩ threads; its threads are the ranks oᵩ … oᵩ + tᵩ − 1, where
//! oᵩ = t₀ + … + t_{q−1} comes from an allgather of the thread counts when the team is built
//! ([`Layout`]). Every process's ranks are thus an interval of ranks, in process order, which
//! is what lets a reduction combine within each process first and across processes after and
//! still keep the rank order a non-commutative op needs.
//!
//! **Stages.** Each collective of such a `Comm` runs in three stages (`hybrid::collectives`),
//! the HAN composition of docs/hierarchy.md with MPI as its top level:
//! 1. within each process, over the mailboxes (the crate's own collectives on a plain `Comm`
//!    of the process's threads, [`Bridge::local`]), towards the process's rank 0;
//! 2. between the processes, by each process's rank 0 alone (the thread that called
//!    `Team::run`, which must be the thread that initialised MPI: under
//!    `Threading::Funneled` it is the only thread that may call MPI), on the leaders'
//!    [`ProcessComm`];
//! 3. within each process again, from its rank 0.
//!
//! **Agreement and failures.** Stage 2 starts with one check between the processes
//! ([`ProcessComm::agree_across`]): the call's descriptor and whether the process's own threads
//! got through stage 1. Every process takes the same branch, so
//! - a call that the processes make differently is the same [`Error::Mismatch`] on every
//!   process, and through stage 3 (which waits for rank 0) on every rank;
//! - a failure in one process (a panicking thread, a bad argument, a mismatch between its own
//!   threads) fails the run of that process and reaches the others at their next check, as
//!   [`Error::ProcessFailed`] on every rank of theirs;
//! - a process whose run ends (every thread returned) checks once more with
//!   [`Arrival::Finished`], so that a process still waiting in a collective that the others
//!   skipped fails instead of hanging, and a run that failed in one process makes
//!   `Team::run` fail ([`Error::ProcessFailed`]) in every other process (in the failing one,
//!   its ranks' results carry the error, and a panic fails `Team::run` as in any team).
//!
//! After a failed check every process has stopped calling MPI for the rest of the run (the
//! leaders know it alike: [`Process::closed`]), so the next run starts in step. What cannot
//! be told to the others is a panic while a leader is inside stage 2: that aborts the MPI job
//! (`MPI_Abort`, as `ProcessComm` does), and an MPI error is fatal (the duplicate
//! communicator's handler).

use super::check::{Arrival, Call};
use super::p2p::{AsideQueue, Stages};
use super::relay::Relay;
use super::ProcessComm;
use crate::error::{Error, Result};
use crate::local::Local;
use crate::transport::mpi::Channels;
use ::mpi::environment::Threading;
use ::mpi::ffi;
use ::mpi::topology::Communicator;
use ::mpi::traits::*;
use std::cell::Cell;
use std::sync::Arc;

/// Which ranks each process holds: process q has the ranks `offsets[q]..offsets[q + 1]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The first rank of every process, and the number of ranks at the end.
    offsets: Vec<usize>,
    /// This process's number (its rank in the MPI communicator the team was built on).
    process: usize,
}

impl Layout {
    /// The layout of processes with `threads[q]` threads each, seen from process `process`.
    pub(crate) fn new(threads: &[usize], process: usize) -> Layout {
        let mut offsets = Vec::with_capacity(threads.len() + 1);
        let mut sum = 0;
        offsets.push(0);
        for &t in threads {
            sum += t;
            offsets.push(sum);
        }
        Layout { offsets, process }
    }

    /// Number of ranks of the world.
    pub(crate) fn size(&self) -> usize {
        *self.offsets.last().expect("offsets start with 0")
    }

    /// Number of processes.
    pub(crate) fn processes(&self) -> usize {
        self.offsets.len() - 1
    }

    /// This process's number.
    pub(crate) fn process(&self) -> usize {
        self.process
    }

    /// The first rank of process `q`: its leader.
    pub(crate) fn offset(&self, q: usize) -> usize {
        self.offsets[q]
    }

    /// Number of ranks (threads) of process `q`.
    pub(crate) fn threads(&self, q: usize) -> usize {
        self.offsets[q + 1] - self.offsets[q]
    }

    /// The most threads any process has.
    pub(crate) fn most_threads(&self) -> usize {
        (0..self.processes())
            .map(|q| self.threads(q))
            .max()
            .unwrap_or(0)
    }

    /// The leaders' ranks, by process.
    pub(crate) fn leaders(&self) -> &[usize] {
        &self.offsets[..self.processes()]
    }

    /// The process of rank `rank` (which must be below [`Layout::size`]) and its thread there.
    pub(crate) fn locate(&self, rank: usize) -> (usize, usize) {
        debug_assert!(rank < self.size());
        let q = self.offsets.partition_point(|&o| o <= rank) - 1;
        (q, rank - self.offsets[q])
    }
}

/// What a hybrid team keeps between runs: its process communicator and the layout. Used by
/// the team's rank 0 only (see the `Send`/`Sync` impls).
pub(crate) struct Process {
    /// The leaders' communicator (a duplicate of the one the team was built on).
    pc: ProcessComm,
    /// Which ranks each process holds.
    pub(crate) layout: Arc<Layout>,
    /// Whether MPI allows calls from its main thread only, so that a run must be started from
    /// that thread.
    funneled: bool,
    /// The communicators of point-to-point between the processes' threads (`hybrid::p2p`).
    channels: Arc<Channels>,
    /// Whether every thread may call MPI (`Threading::Multiple`) and so uses the channels
    /// itself; otherwise the leader relays.
    direct: bool,
    /// The leader's relay, unless `direct`.
    relay: Option<Arc<Relay>>,
    /// Whether a check of this run has failed (on every process alike): no more MPI for the
    /// rest of the run. Reset when a run starts.
    closed: Cell<bool>,
    /// The first other process whose failure a check of this run reported: `Team::run` then
    /// fails here too ([`Process::end`]). Reset when a run starts.
    failed_elsewhere: Cell<Option<usize>>,
    /// Runs started, for the failure notices of point-to-point (`Channels`).
    runs: Cell<u64>,
}

// SAFETY: a `Process` is reached only from a hybrid team: its `Team` holds it, and hands it
// to the rank-0 `Comm` of a run (`Bridge::process`) and uses it itself in `Team::run` before
// the ranks start and after they have all finished. Rank 0 of a run is the thread that called
// `Team::run`, and the team's `running` lock keeps runs from overlapping, so at any time only
// one thread touches it, and `Process::begin` makes sure that thread may call MPI. MPI's own
// handles (the duplicate communicator inside `pc`) may move between threads; what MPI
// restricts is which thread calls it, which is that check.
unsafe impl Send for Process {}
// SAFETY: see `Send`: no two threads use a `Process` at the same time.
unsafe impl Sync for Process {}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("layout", &self.layout)
            .field("funneled", &self.funneled)
            .finish_non_exhaustive()
    }
}

/// How this process's threads share its node with other processes' (for pinning and the wait
/// policy): the threads of the node's processes before this one, and on the whole node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeShare {
    /// Threads of the processes of this node with a lower rank.
    pub before: usize,
    /// Threads of every process of this node.
    pub total: usize,
    /// This process's index among the node's processes.
    pub index: usize,
}

impl NodeShare {
    /// The index into the node's `n` usable cores of this process's thread `i`, for the
    /// default pinning of a hybrid team: where the node's threads fit on its cores, every
    /// process gets cores of its own, one after the other (after the threads of the node's
    /// processes before it); where they do not, the processes start one core apart, so that
    /// their leaders (thread 0, which make the MPI calls) sit on different cores as long as
    /// there are cores for them, and each process's threads still spread over the cores.
    /// Seen on 2 cores, 2 processes × 2 threads (`hybrid_allreduce --table`, the benchmark
    /// helper's runs on a loaded machine, docs/hybrid.md): with the leaders sharing a core, an
    /// 8-byte `MPI_Allreduce` between them took 3.7 ms (each waits a time slice for the
    /// other), 0.35 µs outside the team's run.
    pub(crate) fn core_index(&self, i: usize, n: usize) -> usize {
        if self.total <= n {
            (self.before + i) % n
        } else {
            (self.index + i) % n
        }
    }
}

impl Process {
    /// The process part of a hybrid team of `threads` threads in this process, collective over
    /// `comm`'s processes: checks MPI's threading level, allgathers the thread counts (over
    /// `comm` and over its processes on this node) and duplicates `comm` for the leaders.
    pub(crate) fn new<C: Communicator>(comm: &C, threads: usize) -> Result<(Process, NodeShare)> {
        const OP: &str = "TeamBuilder::mpi";
        let rank = comm.rank() as usize;
        let level = ::mpi::environment::threading_support();
        let funneled = level == Threading::Funneled;
        let mut main = 0;
        // SAFETY: `main` is a valid place for the flag; MPI is initialised (`comm` exists).
        unsafe { ffi::MPI_Is_thread_main(&mut main) };
        let unsupported = |what: String| Error::Unsupported { rank, op: OP, what };
        if level == Threading::Single {
            return Err(unsupported(
                "MPI was initialised with Threading::Single; a team whose threads span \
                 processes needs at least Threading::Funneled (mpi::initialize_with_threading)"
                    .to_string(),
            ));
        }
        if funneled && main == 0 {
            return Err(unsupported(
                "under Threading::Funneled only the thread that initialised MPI may call it, \
                 and a hybrid team's rank 0 (the thread that builds and runs it) does"
                    .to_string(),
            ));
        }
        let mut counts = vec![0usize; comm.size() as usize];
        comm.all_gather_into(&threads, &mut counts[..]);
        if let Some(q) = counts.iter().position(|&t| t == 0) {
            return Err(if q == rank {
                Error::ZeroRanks
            } else {
                unsupported(format!("process {q} asked for a team of 0 threads"))
            });
        }
        let node = comm.split_shared(rank as i32);
        let mut on_node = vec![0usize; node.size() as usize];
        node.all_gather_into(&threads, &mut on_node[..]);
        let share = NodeShare {
            before: on_node[..node.rank() as usize].iter().sum(),
            total: on_node.iter().sum(),
            index: node.rank() as usize,
        };
        let pc = ProcessComm::new(comm)?;
        let layout = Layout::new(&counts, rank);
        // Collective over the processes, as every MPI_Comm_dup.
        let world = comm.duplicate();
        let channels = Arc::new(Channels::new(&world, layout.most_threads()).map_err(unsupported)?);
        let layout = Arc::new(layout);
        let direct = level == Threading::Multiple;
        let relay = (!direct).then(|| Arc::new(Relay::new(channels.clone(), layout.clone())));
        let process = Process {
            pc,
            layout,
            funneled,
            channels,
            direct,
            relay,
            closed: Cell::new(false),
            failed_elsewhere: Cell::new(None),
            runs: Cell::new(0),
        };
        Ok((process, share))
    }

    /// Makes the leaders' waits poll and yield the core instead of blocking in MPI (for a node
    /// with more threads than cores: `transport::mpi::poll_politely`).
    pub(crate) fn set_polite(&self, polite: bool) {
        self.pc.set_polite(polite);
    }

    /// Takes the `mpi` level of the team's profile for the stage between the processes.
    pub(crate) fn set_profile(&self, profile: &crate::Profile) {
        self.pc.set_profile(profile);
    }

    /// Called by `Team::run` on its calling thread before the ranks start: that thread must
    /// be allowed to call MPI; the run starts with no failed check.
    pub(crate) fn begin(&self) -> Result<()> {
        if self.funneled {
            let mut main = 0;
            // SAFETY: `main` is a valid place for the flag; MPI is initialised (the team's
            // communicator exists).
            unsafe { ffi::MPI_Is_thread_main(&mut main) };
            if main == 0 {
                return Err(Error::Unsupported {
                    rank: self.layout.offset(self.layout.process()),
                    op: "Team::run",
                    what: "a hybrid team runs from the thread that initialised MPI (under \
                           Threading::Funneled only it may call MPI, and rank 0 does)"
                        .to_string(),
                });
            }
        }
        self.closed.set(false);
        self.failed_elsewhere.set(None);
        self.runs.set(self.runs.get() + 1);
        self.channels.begin_run(self.runs.get());
        Ok(())
    }

    /// Runs `f` — on the thread that runs the team: rank 0's work and the wait for the other
    /// ranks of this process — with this process's relay, if it has one, as that thread's idle
    /// hook (`hybrid::relay`); a failure notice the relay receives fails `run`.
    pub(crate) fn lead<R>(&self, run: &crate::shm::RunState, f: impl FnOnce() -> R) -> R {
        let Some(relay) = &self.relay else {
            return f();
        };
        let rank = self.layout.offset(self.layout.process());
        let hook = || {
            let (worked, failed) = relay.progress();
            if let Some(process) = failed {
                run.abort(Error::ProcessFailed {
                    rank,
                    op: "point-to-point",
                    process,
                });
            }
            worked
        };
        crate::sync::idle::with_idle(&hook, f)
    }

    /// Records that a check failed with `e` (the same on every process): no more MPI in this
    /// run, and if `e` names another process's failure, `Team::run` fails here too.
    fn close(&self, e: &Error) {
        self.closed.set(true);
        if let Error::ProcessFailed { process, .. } = *e {
            if process != self.layout.process() && self.failed_elsewhere.get().is_none() {
                self.failed_elsewhere.set(Some(process));
            }
        }
    }

    /// Called by `Team::run` after every rank of this process has returned: the last check
    /// of the run ([`Arrival::Finished`], or `Failed` if this process's run `failed`), unless
    /// a check already failed. An error means that the run failed in another process (now,
    /// or at an earlier check of the run), or that some process still waits in a collective
    /// this one never made. This process's own failure is no error here (its ranks' results
    /// say why, as in a team of one process, whose `run` fails only for a panic), nor is a
    /// mismatch every process saw at a collective (every rank returned it).
    pub(crate) fn end(&self, failed: bool) -> Result<()> {
        let layout = &self.layout;
        let rank = layout.offset(layout.process());
        if let Some(relay) = &self.relay {
            // What this process's threads sent last leaves now.
            relay.progress();
        }
        if failed {
            // Threads of other processes may be waiting for a message from this one.
            self.channels.notify(layout.processes(), layout.process());
        }
        if self.closed.get() {
            return match self.failed_elsewhere.get().or(self.channels.noticed()) {
                Some(process) => Err(Error::ProcessFailed {
                    rank,
                    op: "Team::run",
                    process,
                }),
                None => Ok(()),
            };
        }
        let arrival = if failed {
            Arrival::Failed
        } else {
            Arrival::Finished
        };
        let r = self.pc.agree_across(
            &Call::barrier(),
            arrival,
            rank,
            layout.leaders(),
            "Team::run",
        );
        if let Err(e) = &r {
            self.close(e);
        }
        match r {
            // This process's own failure: its ranks' results carry it, as in a team of one
            // process (whose `run` fails only for a panic) — unless it failed because another
            // process's did (that process's notice, `hybrid::p2p`).
            Err(Error::ProcessFailed { process, .. }) if process == layout.process() => {
                match self.channels.noticed() {
                    Some(process) => Err(Error::ProcessFailed {
                        rank,
                        op: "Team::run",
                        process,
                    }),
                    None => Ok(()),
                }
            }
            r => r,
        }
    }
}

/// A rank's link to the processes of a hybrid team, inside its [`Comm`]: the plain `Comm` of
/// its own process's threads, the layout, and on rank 0 of each process the process part.
pub(crate) struct Bridge {
    /// The communicator of this process's threads (thread i is its rank i), on which the
    /// stages within the process run.
    pub(crate) local: Local,
    /// Which ranks each process holds.
    pub(crate) layout: Arc<Layout>,
    /// The process part, on the process's rank 0 (the leader) only.
    process: Option<Arc<Process>>,
    /// The communicators of point-to-point between processes, if this thread may call MPI
    /// itself (`Threading::Multiple`).
    pub(crate) channels: Option<Arc<Channels>>,
    /// The process's relay, if its leader relays instead.
    pub(crate) relay: Option<Arc<Relay>>,
    /// This rank's messages from other processes moved aside by its receives.
    pub(crate) aside: AsideQueue,
    /// This rank's staging buffers for messages between processes.
    pub(crate) stages: Stages,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("layout", &self.layout)
            .field("leader", &self.process.is_some())
            .finish_non_exhaustive()
    }
}

impl Bridge {
    /// The link of the rank whose own process's communicator is `local`, in the team whose
    /// process part is `process` (which the local rank 0 holds).
    pub(crate) fn new(local: Local, process: &Arc<Process>) -> Self {
        let leader = local.rank() == 0;
        Bridge {
            local,
            layout: process.layout.clone(),
            channels: process.direct.then(|| process.channels.clone()),
            relay: process.relay.clone(),
            process: leader.then(|| process.clone()),
            aside: AsideQueue::default(),
            stages: Stages::default(),
        }
    }

    /// This rank's number in the world.
    pub(crate) fn rank(&self) -> usize {
        self.layout.offset(self.layout.process()) + self.local.rank()
    }

    /// Number of ranks of the world.
    pub(crate) fn size(&self) -> usize {
        self.layout.size()
    }

    /// Whether this rank is its process's leader (local rank 0), the one that calls MPI.
    pub(crate) fn is_leader(&self) -> bool {
        self.process.is_some()
    }

    /// Stage 2 of a collective `op` described by `call`: on the leader, the check between
    /// processes, with `before` (the leader's result of stage 1) as its arrival, then
    /// `stage` on the leaders' communicator; on the other ranks, nothing (`before`).
    ///
    /// On the leader, every failure of the check or of `stage` fails the process's run, so
    /// that its other ranks, waiting in stage 3 for the leader, return it too; the check's
    /// failures are the same on every process, and so are `stage`'s (decided from the agreed
    /// call), so every process stops calling MPI for the rest of the run at the same call.
    pub(crate) fn across(
        &self,
        op: &'static str,
        call: Call,
        before: Result<()>,
        stage: impl FnOnce(&ProcessComm) -> Result<()>,
    ) -> Result<()> {
        let Some(p) = &self.process else {
            return before;
        };
        // A relaying leader sends what its threads sent before it blocks in MPI's collective.
        crate::sync::idle::run();
        if p.closed.get() {
            // An earlier check failed on every process: this run's ranks all fail already.
            return before.and_then(|()| {
                Err(self.local.fail(Error::Aborted {
                    rank: self.rank(),
                    op,
                    cause: Box::new(self.local.run().cause()),
                }))
            });
        }
        let arrival = if before.is_ok() {
            Arrival::Ready
        } else {
            Arrival::Failed
        };
        let layout = &self.layout;
        let agreed =
            p.pc.agree_across(&call, arrival, self.rank(), layout.leaders(), op);
        let result = match (before, agreed) {
            (Err(e), _) => Err(e),
            (Ok(()), Err(e)) => Err(e),
            (Ok(()), Ok(())) => stage(&p.pc),
        };
        result.map_err(|e| {
            p.close(&e);
            self.local.fail(e)
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Layout;

    #[test]
    fn leaders_get_cores_of_their_own() {
        let node = |before, total, index| super::NodeShare {
            before,
            total,
            index,
        };
        // Room for every thread: disjoint cores, process after process.
        let fits = [node(0, 4, 0), node(2, 4, 1)];
        let cores: Vec<Vec<usize>> = fits
            .iter()
            .map(|s| (0..2).map(|i| s.core_index(i, 4)).collect())
            .collect();
        assert_eq!(cores, [vec![0, 1], vec![2, 3]]);
        // 2 processes × 2 threads on 2 cores: the leaders apart, each process on both cores.
        let over = [node(0, 4, 0), node(2, 4, 1)];
        let cores: Vec<Vec<usize>> = over
            .iter()
            .map(|s| (0..2).map(|i| s.core_index(i, 2)).collect())
            .collect();
        assert_eq!(cores, [vec![0, 1], vec![1, 0]]);
        // 3 processes × 3 threads on 4 cores: three leaders on three cores.
        let leaders: Vec<usize> = (0..3).map(|q| node(3 * q, 9, q).core_index(0, 4)).collect();
        assert_eq!(leaders, [0, 1, 2]);
    }

    #[test]
    fn layout_locates_every_rank() {
        for threads in [vec![1], vec![2, 2], vec![1, 3, 2], vec![5, 1, 1, 4]] {
            for process in 0..threads.len() {
                let l = Layout::new(&threads, process);
                assert_eq!(l.size(), threads.iter().sum::<usize>());
                assert_eq!(l.processes(), threads.len());
                let mut rank = 0;
                for (q, &t) in threads.iter().enumerate() {
                    assert_eq!(l.offset(q), rank);
                    assert_eq!(l.threads(q), t);
                    for i in 0..t {
                        assert_eq!(l.locate(rank), (q, i));
                        rank += 1;
                    }
                }
                assert_eq!(l.leaders().len(), threads.len());
            }
        }
    }
}
