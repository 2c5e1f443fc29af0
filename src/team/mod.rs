//! Teams of rank threads: spawning, pinning, running SPMD closures, catching panics, tear-down;
//! and teams whose ranks are the program's own threads, which join ([`join`]).
//!
//! A [`Team`] keeps `ranks − 1` threads alive between runs, each pinned to its core; rank 0 of
//! every run is the thread that calls [`Team::run`] (pinned to rank 0's core for the run and
//! given its own affinity back afterwards), so that a hybrid program's MPI-initialising thread
//! is rank 0. A run hands the workers a lifetime-erased reference to the closure, and does not
//! return before every worker has finished with it, which is what lets closures borrow from
//! the caller's stack.

mod affinity;
mod builder;
mod join;

pub use builder::{TeamBuilder, Wait};
pub use join::Seat;

use crate::collective::Collective;
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::local::{Local, Settings};
use crate::profile::Profile;
use crate::shm::{CommShared, Member, Ranks, RunState};
use crate::sync::park::{wait_until, WaitPolicy};
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, CachePadded, Mutex, Ordering};
use crate::topology::{Location, Topology};
use join::Door;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A job as the workers see it: the run's per-rank body with its lifetime erased.
type Job = &'static (dyn Fn(usize) + Sync);

/// What the caller and the workers share.
struct Shared {
    /// Parkers and waiting policy, shared with every run.
    ranks: Arc<Ranks>,
    /// The cost constants and decision tables of every communicator of the team's runs.
    settings: Arc<Settings>,
    /// Bumped by the caller after `job` is set (to start a run) or after `shutdown` is set.
    /// Read by the workers.
    epoch: CachePadded<AtomicU64>,
    /// The current run's body; written by the caller while no worker runs.
    job: Mutex<Option<Job>>,
    /// Workers that have not finished the current run. The last one unparks rank 0.
    remaining: CachePadded<AtomicUsize>,
    /// Set by `Drop for Team`.
    shutdown: AtomicBool,
}

/// A team of rank threads, reusable across runs. See [`Team::run`].
pub struct Team {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// Core of each rank (rank 0: the caller's core during a run).
    cores: Vec<Option<usize>>,
    /// Held for the length of a run: runs of one team neither overlap nor nest.
    running: Mutex<()>,
    /// An external team's runs ([`TeamBuilder::external`]); `None` for a team with threads of
    /// its own.
    door: Option<Door>,
    /// A hybrid team's process part ([`TeamBuilder::mpi`]): its runs' ranks span the MPI
    /// processes.
    #[cfg(feature = "mpi")]
    process: Option<Arc<crate::process::world::Process>>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("size", &self.size())
            .field("cores", &self.cores)
            .finish_non_exhaustive()
    }
}

fn worker(shared: Arc<Shared>, rank: usize, core: Option<usize>) {
    if let Some(c) = core {
        affinity::pin_current(c);
    }
    let parker = &shared.ranks.parkers[rank];
    let policy = WaitPolicy::IDLE;
    let mut seen = 0;
    loop {
        wait_until(parker, &policy, None, || {
            shared.epoch.load(Ordering::SeqCst) != seen
        });
        seen = shared.epoch.load(Ordering::SeqCst);
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let job = *shared.job.lock();
        if let Some(job) = job {
            job(rank);
        }
        if shared.remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
            shared.ranks.parkers[0].unpark();
        }
    }
}

impl Team {
    /// A team of `ranks` ranks with the default settings ([`Pinning::Compact`](crate::Pinning::Compact), no timeout).
    pub fn new(ranks: usize) -> Result<Team> {
        Team::builder().ranks(ranks).build()
    }

    /// A builder with the default settings.
    pub fn builder() -> TeamBuilder {
        TeamBuilder::default()
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.shared.ranks.parkers.len()
    }

    /// The core (OS index) each rank is pinned to (`None`: not pinned), by rank.
    pub fn cores(&self) -> &[Option<usize>] {
        &self.cores
    }

    /// Where each rank runs (`None`: not pinned), by rank; see [`Comm::location`].
    pub fn locations(&self) -> &[Option<Location>] {
        &self.shared.ranks.locations
    }

    /// The topology the ranks are placed on.
    pub fn topology(&self) -> &Topology {
        self.shared
            .ranks
            .topology
            .as_deref()
            .expect("a team's ranks always have a topology")
    }

    /// What `Auto` runs for `collective` on a communicator of `p` of this team's ranks with
    /// `bytes` bytes per rank (as [`crate::tuning`] counts them) and an op that is
    /// `commutative` or not, and which source decided; `None` where no rule or table covers
    /// the call and the crate's fixed rules decide.
    pub fn decide(
        &self,
        collective: Collective,
        p: usize,
        bytes: usize,
        commutative: bool,
    ) -> Option<crate::tuning::Decision> {
        let oversubscribed = self.shared.ranks.policy.oversubscribed;
        let tuning = &self.shared.settings.tuning;
        tuning.decide(collective, p, oversubscribed, bytes, commutative)
    }

    /// The cost constants the team's communicators use ([`TeamBuilder::profile`]).
    pub fn profile(&self) -> &Profile {
        &self.shared.settings.profile
    }

    /// Runs `f` on every rank (SPMD) and returns the results in rank order. Rank 0 runs on the
    /// calling thread.
    ///
    /// Returns only after every rank has returned or panicked. If a rank panics, every other
    /// rank's pending and later communication calls return `Err`, and `run` returns
    /// [`Error::Panicked`] with the first panic's rank and message; the team stays usable.
    ///
    /// An [external](TeamBuilder::external) team has no threads to run on: its ranks join
    /// ([`Team::join`]), and `run` fails with [`Error::Join`].
    pub fn run<R: Send, F: Fn(&Comm) -> R + Sync>(&self, f: F) -> Result<Vec<R>> {
        if self.door.is_some() {
            return Err(Error::Join {
                rank: 0,
                what: "the ranks of an external team are the program's threads: each calls \
                       Team::join, and Team::run has no threads to run on"
                    .into(),
            });
        }
        let _running = self.running.try_lock().ok_or(Error::TeamBusy)?;
        #[cfg(feature = "mpi")]
        if let Some(p) = &self.process {
            p.begin("Team::run")?;
        }
        let size = self.size();
        let run = Arc::new(RunState::new(self.shared.ranks.clone()));
        let world = Arc::new(CommShared::new((0..size).collect()));
        let results: Vec<Mutex<Option<R>>> = (0..size).map(|_| Mutex::new(None)).collect();
        let body = |rank: usize| {
            *results[rank].lock() = self.rank_body(rank, &world, &run, &f);
        };
        let job: &(dyn Fn(usize) + Sync) = &body;
        // SAFETY: the workers use `job` only between observing the epoch bump below and
        // decrementing `remaining`; this function waits for `remaining` to reach zero before
        // it clears the slot and before `body` (and what it borrows) goes out of scope, even
        // if a rank panics (`body` catches panics, so neither rank 0 nor a worker unwinds past
        // this point).
        let job: Job = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), Job>(job) };
        *self.shared.job.lock() = Some(job);
        self.shared.remaining.store(size - 1, Ordering::SeqCst);
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        for p in &self.shared.ranks.parkers[1..] {
            p.unpark();
        }

        let saved = self.cores[0].map(|c| {
            let saved = affinity::save();
            affinity::pin_current(c);
            saved
        });
        let remaining = &self.shared.remaining;
        let lead = || {
            body(0);
            if let Some(saved) = saved {
                affinity::restore(saved);
            }
            wait_until(
                &self.shared.ranks.parkers[0],
                &self.shared.ranks.policy,
                None,
                || remaining.load(Ordering::SeqCst) == 0,
            );
        };
        // A hybrid team's leader relays its threads' messages while it runs and waits.
        #[cfg(feature = "mpi")]
        match &self.process {
            Some(p) => p.lead(&run, lead),
            None => lead(),
        }
        #[cfg(not(feature = "mpi"))]
        lead();
        *self.shared.job.lock() = None;

        // A hybrid team's last check: every process's run ended, and none failed.
        #[cfg(feature = "mpi")]
        let across = match &self.process {
            Some(p) => p.end(run.is_aborted()),
            None => Ok(()),
        };
        if let Some(panic) = run.first_panic() {
            return Err(panic);
        }
        #[cfg(feature = "mpi")]
        across?;
        Ok(results
            .into_iter()
            .map(|m| m.into_inner().expect("every rank returned a value"))
            .collect())
    }
}

impl Team {
    /// Team rank `rank`'s part of a run over `world`: `f` on its communicator, a panic caught
    /// and made the run's failure (`None`), then the rank marked returned.
    fn rank_body<R>(
        &self,
        rank: usize,
        world: &Arc<CommShared>,
        run: &Arc<RunState>,
        f: impl FnOnce(&Comm) -> R,
    ) -> Option<R> {
        let comm = self.comm(rank, world, run);
        let value = match catch_unwind(AssertUnwindSafe(|| f(&comm))) {
            Ok(value) => Some(value),
            Err(payload) => {
                run.rank_panicked(rank, payload.as_ref());
                None
            }
        };
        drop(comm);
        run.mark_done(rank);
        value
    }

    /// The `Comm` of team rank `rank` in a run: over the run's `world`, and on a hybrid team
    /// bridged to the other processes (rank 0 holding the process part).
    fn comm(&self, rank: usize, world: &Arc<CommShared>, run: &Arc<RunState>) -> Comm {
        let member = Member::new(rank, world.clone(), run.clone());
        let local = Local::new(member, self.shared.settings.clone());
        #[cfg(feature = "mpi")]
        if let Some(p) = &self.process {
            return Comm::processes(crate::process::Bridge::new(local, p));
        }
        Comm::threads(local)
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        for p in self.shared.ranks.parkers.iter() {
            p.unpark();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// Runs `f` on `ranks` ranks of a new team with default settings (see [`Team::run`]) and
/// returns the results in rank order.
pub fn run<R: Send, F: Fn(&Comm) -> R + Sync>(ranks: usize, f: F) -> Result<Vec<R>> {
    Team::new(ranks)?.run(f)
}
