//! The hybrid world: a team whose ranks are the threads of several MPI processes
//! (`TeamBuilder::mpi`), every thread of every process a rank of one `Comm`.
//!
//! **Ranks.** Process q runs tᵩ threads; its threads are the ranks oᵩ … oᵩ + tᵩ − 1, where
//! oᵩ = t₀ + … + t_{q−1} comes from an allgather of the thread counts when the team is built
//! ([`Layout`]). Every process's ranks are thus an interval of ranks, in process order, which
//! is what lets a reduction combine within each process first and across processes after and
//! still keep the rank order a non-commutative op needs.
//!
//! **Stages.** Each collective of such a `Comm` runs in three stages (`process::collectives`),
//! the HAN composition of docs/hierarchy.md with MPI as its top level:
//! 1. within each process, over the mailboxes (the crate's own collectives on a plain `Comm`
//!    of the process's threads, `Bridge::local` in `bridge.rs`), towards the process's rank 0;
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

use crate::error::{Error, Result};
use crate::process::bridge::Links;
use crate::process::leaders::check::Arrival;
use crate::process::mpi::Channels;
use crate::process::node::folds::NodeFolds;
use crate::process::node::mail::NodeMail;
use crate::process::node::Nodes;
use crate::process::p2p::relay::Relay;
use crate::process::shadows::ShadowSet;
use crate::process::ProcessComm;
use ::mpi::environment::Threading;
use ::mpi::ffi;
use ::mpi::topology::Communicator;
use ::mpi::traits::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Which ranks each process holds: process q has the ranks `offsets[q]..offsets[q + 1]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The first rank of every process, and the number of ranks at the end.
    offsets: Vec<usize>,
    /// This process's number (its rank in the MPI communicator the team was built on).
    process: usize,
    /// How the processes share nodes, if the world's stage between processes runs through
    /// the nodes' shared memory (`process::node`).
    pub(crate) nodes: Option<Nodes>,
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
        Layout {
            offsets,
            process,
            nodes: None,
        }
    }

    /// Whether the world's stage between processes runs through the nodes' shared memory.
    pub(crate) fn on_node(&self) -> bool {
        self.nodes.is_some()
    }

    /// Whether it runs through the shared memory of one node that holds every process.
    pub(crate) fn one_node(&self) -> bool {
        self.nodes.as_ref().is_some_and(Nodes::whole)
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

/// What a hybrid team keeps between runs: its process communicator and the layout, shared by
/// the communicators of a run that span processes (the world and its duplicates) on their
/// leader ranks (see the `Send`/`Sync` impls).
pub(crate) struct Process {
    /// The leaders' communicator (a duplicate of the one the team was built on), locked for
    /// each stage between processes: every communicator of the team that spans processes runs
    /// its collectives' stages between processes on it, in the order its leader makes them,
    /// which the check compares on every process (with the communicator's context, `Call`).
    pub(super) pc: Mutex<ProcessComm>,
    /// The leaders' communicators of the shadows of the world communicator (first) and of
    /// each duplicate made so far (in the order made, the same on every process), on which
    /// their non-blocking collectives run their stages between processes
    /// (`process::shadows`). Kept as long as the team: the last checks of every run look at
    /// them all.
    shadows: Mutex<Vec<ShadowSet>>,
    /// Which ranks each process holds.
    pub(crate) layout: Arc<Layout>,
    /// Whether MPI allows calls from its main thread only, so that a run must be started from
    /// that thread.
    funneled: bool,
    /// The communicators of point-to-point between the processes' threads (`process::p2p`).
    pub(super) channels: Arc<Channels>,
    /// Whether every thread may call MPI (`Threading::Multiple`) and so uses the channels
    /// itself; otherwise the leader relays.
    pub(super) direct: bool,
    /// The leader's relay, unless `direct`.
    pub(super) relay: Option<Arc<Relay>>,
    /// Point-to-point between the processes of this process's node through its segment
    /// (`process::p2p::node`), if the node has several; to other nodes over the channels or the
    /// relay.
    pub(super) mail: Option<Arc<NodeMail>>,
    /// The persistent short allreduces' share of the node's segment, if one node holds every
    /// process (`process::node::fold`).
    pub(super) folds: Option<Arc<NodeFolds>>,
    /// The relays of the duplicates of the team's communicator (`Comm::dup`), unless `direct`:
    /// the leader serves them beside its own, and drops each on its own thread (which alone
    /// may call MPI, to free their channels) once nothing else holds it.
    pub(super) dup_relays: Mutex<Vec<Arc<Relay>>>,
    /// Duplicates made so far, the same number on every process (each is agreed): the next
    /// one's context is one more.
    contexts: AtomicU64,
    /// Whether a check of this run has failed (on every process alike): no more MPI for the
    /// rest of the run. Reset when a run starts.
    pub(super) closed: AtomicBool,
    /// The first other process whose failure a check of this run reported (`usize::MAX`:
    /// none): `Team::run` then fails here too ([`Process::end`]). Reset when a run starts.
    failed_elsewhere: AtomicUsize,
    /// Runs started, for the failure notices of point-to-point (`Notices`).
    runs: AtomicU64,
}

/// No process: the value of [`Process::failed_elsewhere`] before any failure.
const NONE: usize = usize::MAX;

// SAFETY: a `Process` is reached only from a hybrid team: its `Team` holds it, and hands it
// to the leader `Comm`s of a run (`Bridge::process`: the world's rank 0 and its duplicates')
// and uses it itself in `Team::run` before the ranks start and after they have all finished.
// Its mutable state is atomics, and the leaders' communicator and the duplicates' relays
// behind locks, so threads that use it at once (a leader `Comm` and its duplicate moved to
// another thread) take turns. MPI's own handles may move between threads; what MPI restricts
// is which thread calls it: `Process::begin` and `Bridge::across` check that under
// `Threading::Funneled` it is MPI's main thread, and under `Serialized` the locks make the
// calls one at a time.
unsafe impl Send for Process {}
// SAFETY: see `Send`.
unsafe impl Sync for Process {}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("layout", &self.layout)
            .field("funneled", &self.funneled)
            .finish_non_exhaustive()
    }
}

/// Whether the calling thread is MPI's main thread (`MPI_Is_thread_main`). MPI must be
/// initialised.
fn is_thread_main() -> bool {
    let mut main = 0;
    // SAFETY: `main` is a valid place for the flag; MPI is initialised (every caller holds a
    // communicator).
    unsafe { ffi::MPI_Is_thread_main(&mut main) };
    main != 0
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
    /// 8-byte `MPI_Allreduce` between them took thousands of times longer than outside the
    /// team's run, each leader waiting a time slice for the other (figures in
    /// `docs/results/2026-11-29-figures-behind-the-code.md`).
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
    pub(crate) fn new<C: Communicator>(
        comm: &C,
        threads: usize,
        shm: crate::NodeShm,
    ) -> Result<(Process, NodeShare)> {
        const OP: &str = "TeamBuilder::mpi";
        let rank = comm.rank() as usize;
        let level = ::mpi::environment::threading_support();
        let funneled = level == Threading::Funneled;
        let unsupported = |what: String| Error::Unsupported { rank, op: OP, what };
        if level == Threading::Single {
            return Err(unsupported(
                "MPI was initialised with Threading::Single; a team whose threads span \
                 processes needs at least Threading::Funneled (mpi::initialize_with_threading)"
                    .to_string(),
            ));
        }
        if funneled && !is_thread_main() {
            return Err(unsupported(
                "under Threading::Funneled only the thread that initialised MPI may call it, \
                 and a hybrid team's rank 0 (the thread that builds and runs it) does"
                    .to_string(),
            ));
        }
        // The environment's refusal travels with the thread counts (as a count of `usize::MAX`),
        // so that every process fails alike.
        let env = crate::env::check();
        let mine = if env.is_ok() { threads } else { usize::MAX };
        let mut counts = vec![0usize; comm.size() as usize];
        comm.all_gather_into(&mine, &mut counts[..]);
        env?;
        if let Some(q) = counts.iter().position(|&t| t == usize::MAX) {
            return Err(unsupported(format!(
                "process {q} refused an environment variable's value (its error names it)"
            )));
        }
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
        let mut pc = ProcessComm::new(comm)?;
        pc.node = crate::process::node::node_stage(comm, &node, &counts, shm)?;
        let mail = pc.node().and_then(|stage| stage.mail().cloned());
        let folds = pc
            .node()
            .filter(|stage| stage.nodes().whole())
            .map(|stage| stage.folds().clone());
        let pc = Mutex::new(pc);
        let shadows = Mutex::new(vec![crate::process::shadows::make(comm, None)?]);
        let mut layout = Layout::new(&counts, rank);
        layout.nodes = pc.lock().node().map(|stage| stage.nodes().clone());
        // Collective over the processes, as every MPI_Comm_dup.
        let world = comm.duplicate();
        let channels =
            Arc::new(Channels::new(&world, layout.most_threads(), None).map_err(unsupported)?);
        let layout = Arc::new(layout);
        let direct = level == Threading::Multiple;
        let relay = (!direct).then(|| Arc::new(Relay::new(channels.clone(), layout.clone())));
        let process = Process {
            pc,
            shadows,
            layout,
            funneled,
            channels,
            direct,
            relay,
            mail,
            folds,
            dup_relays: Mutex::new(Vec::new()),
            contexts: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            failed_elsewhere: AtomicUsize::new(NONE),
            runs: AtomicU64::new(0),
        };
        Ok((process, share))
    }

    /// Makes the leaders' waits poll and yield the core instead of blocking in MPI (for a node
    /// with more threads than cores: `process::mpi::poll_politely`).
    pub(crate) fn set_polite(&self, polite: bool) {
        self.pc.lock().set_polite(polite);
    }

    /// Takes the `mpi` level of the team's profile for the stage between the processes.
    pub(crate) fn set_profile(&self, profile: &crate::Profile) {
        self.pc.lock().set_profile(profile);
        for s in self.shadows.lock().iter().flat_map(|set| set.iter()) {
            s.pc.lock().set_profile(profile);
        }
    }

    /// Called by `Team::run` (`op`) on its calling thread before the ranks start, or by rank 0's
    /// `Team::join` before the process's other joined ranks start: that thread must be allowed
    /// to call MPI; the run starts with no failed check.
    pub(crate) fn begin(&self, op: &'static str) -> Result<()> {
        self.on_main_thread(op)?;
        self.closed.store(false, Ordering::SeqCst);
        for s in self.shadows.lock().iter().flat_map(|set| set.iter()) {
            s.closed.store(false, Ordering::SeqCst);
        }
        self.failed_elsewhere.store(NONE, Ordering::SeqCst);
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        self.channels.notices().begin_run(run);
        if let Some(folds) = &self.folds {
            folds.begin_run(run);
        }
        Ok(())
    }

    /// A leader of this process is about to post a check on a shadow (counted where the
    /// processes share a node, for the last checks of the run: `process::shadows`).
    pub(super) fn count_shadow_check(&self) {
        if let Some(folds) = &self.folds {
            folds.count_check();
        }
    }

    /// The number of the current run (the last begun).
    pub(super) fn run_number(&self) -> u64 {
        self.runs.load(Ordering::SeqCst)
    }

    /// Under `Threading::Funneled`, an error unless the calling thread is MPI's main thread
    /// (the only one that may call MPI), which the leader's `op` is about to call.
    pub(super) fn on_main_thread(&self, op: &'static str) -> Result<()> {
        if !self.funneled || is_thread_main() {
            return Ok(());
        }
        Err(Error::Unsupported {
            rank: self.layout.offset(self.layout.process()),
            op,
            what: "under Threading::Funneled a hybrid team's leaders (each process's rank 0, \
                   of the world and of its duplicates) call MPI, so they run on the thread \
                   that initialised MPI, which runs the team"
                .to_string(),
        })
    }

    /// The leader's part of `Comm::dup` (inside its stage between processes, on the locked
    /// leaders' communicator `pc`): the duplicate's point-to-point channels (collective over
    /// the processes, as `MPI_Comm_dup`) and relay, and its context.
    pub(super) fn duplicate(&self, pc: &ProcessComm) -> Result<Links> {
        let rank = self.layout.offset(self.layout.process());
        let threads = self.layout.most_threads();
        let notices = Some(self.channels.notices().clone());
        let channels =
            Channels::new(&pc.comm, threads, notices).map_err(|what| Error::Unsupported {
                rank,
                op: "dup",
                what,
            })?;
        let channels = Arc::new(channels);
        let relay = (!self.direct).then(|| {
            let relay = Arc::new(Relay::new(channels.clone(), self.layout.clone()));
            self.dup_relays.lock().push(relay.clone());
            relay
        });
        let shadows = crate::process::shadows::make(&pc.comm, Some(pc))?;
        self.shadows.lock().push(shadows.clone());
        Ok(Links {
            context: self.contexts.fetch_add(1, Ordering::SeqCst) + 1,
            channels: self.direct.then_some(channels),
            relay,
            shadows,
        })
    }

    /// Runs `f` — on the thread that runs the team: rank 0's work and the wait for the other
    /// ranks of this process — with this process's relay, if it has one, as that thread's idle
    /// hook (`process::p2p::relay`); a failure notice the relay receives fails `run`.
    pub(crate) fn lead<R>(&self, run: &crate::shm::RunState, f: impl FnOnce() -> R) -> R {
        if self.relay.is_none() {
            return f();
        }
        crate::sync::idle::with_idle(&crate::process::p2p::relay::Relaying(self, run), f)
    }

    /// [`Process::lead`] for a leader that joins a run and leaves it in another call
    /// (`Team::seat`): the relay, if this process has one, as the calling thread's idle hook
    /// until the returned guard is dropped.
    pub(crate) fn lead_lasting(
        self: &Arc<Self>,
        run: &Arc<crate::shm::RunState>,
    ) -> Option<crate::sync::idle::Lasting> {
        self.relay.as_ref()?;
        Some(crate::sync::idle::lasting(
            crate::process::p2p::relay::Relaying(self.clone(), run.clone()),
        ))
    }

    /// The shadows of the world (first) and of the duplicates made so far.
    pub(super) fn shadow_sets(&self) -> parking_lot::MutexGuard<'_, Vec<ShadowSet>> {
        self.shadows.lock()
    }

    /// Records that a check on a leaders' communicator whose flag is `closed` (the world's own
    /// or a shadow's) failed with `e` (the same on every process): no more MPI on it in this
    /// run, and if `e` names another process's failure, `Team::run` fails here too.
    pub(super) fn close(&self, closed: &AtomicBool, e: &Error) {
        closed.store(true, Ordering::SeqCst);
        if let Error::ProcessFailed { process, .. } = *e {
            if process != self.layout.process() {
                let _ = self.failed_elsewhere.compare_exchange(
                    NONE,
                    process,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
            }
        }
    }

    /// The other process whose failure a check of this run reported first.
    fn failed_elsewhere(&self) -> Option<usize> {
        let q = self.failed_elsewhere.load(Ordering::SeqCst);
        (q != NONE).then_some(q)
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
        if let Some(folds) = &self.folds {
            // Its ranks start nothing more in this run (`process::node::fold`'s waits look).
            folds.end_run(self.runs.load(Ordering::SeqCst), failed);
        }
        // What this process's threads sent last leaves now.
        self.relay_all();
        let closed = self.closed.load(Ordering::SeqCst);
        if failed && !closed {
            // Threads of other processes may be waiting for a message from this one. (After a
            // failed check they are not: every process's run failed at that check.)
            self.channels
                .notices()
                .notify(layout.processes(), layout.process());
        }
        let arrival = if failed {
            Arrival::Failed
        } else {
            Arrival::Finished
        };
        let (world, shadow) = self.last_checks(!closed, arrival);
        let elsewhere = |process| Error::ProcessFailed {
            rank,
            op: "Team::run",
            process,
        };
        let noticed = || self.channels.notices().noticed();
        let own = |e: &Error| matches!(*e, Error::ProcessFailed { process, .. } if process == layout.process());
        let r = match world {
            // No last check (an earlier one failed), or this process's own failure: its ranks'
            // results carry it, as in a team of one process (whose `run` fails only for a
            // panic) — unless another process's failure was reported at a check of this run
            // (of a blocking call, or of a request on a shadow) or by its notice
            // (`process::p2p`).
            Some(Err(e)) if !own(&e) => Err(e),
            Some(Ok(())) => Ok(()),
            None | Some(Err(_)) => match self.failed_elsewhere().or(noticed()) {
                Some(process) => Err(elsewhere(process)),
                None => Ok(()),
            },
        };
        // A request that another process started and this one never did (or the other way
        // round), met at the last check of its shadow. (Failures of runs are the world's
        // check's to report, above.)
        match (r, shadow) {
            (Ok(()), Some(e @ Error::Mismatch { .. })) => Err(e),
            (r, _) => r,
        }
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
