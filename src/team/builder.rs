//! [`TeamBuilder`]: what a team is made of (ranks, pinning, topology, timeout, waiting, tuning)
//! and the building, which places the ranks and starts the threads of a team that owns them —
//! or none, for a team whose ranks are the program's own threads ([`TeamBuilder::external`]).

use super::join::Door;
use super::{worker, Shared, Team};
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::local::Settings;
use crate::profile::Profile;
use crate::shm::Ranks;
use crate::sync::park::WaitPolicy;
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, CachePadded, Mutex};
use crate::topology::{available_cores, process_cores, Pinning, Topology};
use crate::tuning::Tuning;
use std::sync::Arc;
use std::time::Duration;

/// Builds a [`Team`]: `Team::builder().ranks(8).pinning(Pinning::Spread).build()`.
#[derive(Debug, Clone, Default)]
pub struct TeamBuilder {
    ranks: Option<usize>,
    /// `None`: [`Pinning::Compact`], or no pinning on an external team.
    pinning: Option<Pinning>,
    /// Whether the ranks are the program's threads ([`TeamBuilder::external`]).
    external: bool,
    topology: Option<Topology>,
    timeout: Option<Duration>,
    /// Whether runs look for deadlocks (`None`: the default, on).
    deadlocks: Option<bool>,
    wait: Wait,
    /// What the processes of a node use between them (`None`: `CORECOLL_NODE_SHM`, else
    /// `Auto`).
    #[cfg(feature = "mpi")]
    node_shm: Option<crate::NodeShm>,
    profile: Option<Profile>,
    /// `algorithm_rules`' overrides, parsed when the team is built.
    rules: Vec<(Collective, String)>,
}

/// How the ranks of a team wait for one another, and which machine `Auto` assumes: as
/// OpenMP's `OMP_WAIT_POLICY`. The default judges from the load; the environment variable
/// `CORECOLL_WAIT_POLICY=active|passive` overrides the default, and [`TeamBuilder::wait`]
/// overrides both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Wait {
    /// `Active` when the team has no more ranks than the cores the process may use, else
    /// `Passive`.
    #[default]
    Auto,
    /// Every rank has a core of its own: a waiting rank spins for a while (some tens of
    /// microseconds) before it yields and then parks, and `Auto` picks the algorithms it
    /// picks for dedicated cores (the single-copy hierarchy across L3 groups and packages,
    /// for instance). On shared cores this wastes the time slices a peer needs.
    Active,
    /// The cores are shared: a waiting rank polls a few times and hands its core over, and
    /// `Auto` picks the algorithms it picks for an oversubscribed team.
    Passive,
}

impl Wait {
    /// The policy this choice resolves to for `ranks` threads on `cores` cores, with the
    /// environment variable consulted when the choice is `Auto`.
    fn resolve(self, ranks: usize, cores: usize) -> WaitPolicy {
        let chosen = match self {
            Wait::Auto => match crate::env::wait_passive() {
                Some(true) => Wait::Passive,
                Some(false) => Wait::Active,
                None => Wait::Auto,
            },
            other => other,
        };
        let load = match chosen {
            Wait::Auto => ranks,
            Wait::Active => 1,
            Wait::Passive => usize::MAX,
        };
        WaitPolicy::for_load(load, cores)
    }
}

impl TeamBuilder {
    /// The machine when none was given: the cores the building thread may use, or on an
    /// external team those of the process (whose threads the program's runtime places).
    fn detect(&self) -> Topology {
        if self.external {
            Topology::detect_process()
        } else {
            Topology::detect()
        }
    }

    /// Number of ranks (threads, the caller included). Default: the number of leaves (cores)
    /// of the topology, which for the detected one is the number of cores the calling thread
    /// may use (one rank per core: SMT siblings are left out).
    pub fn ranks(mut self, ranks: usize) -> Self {
        self.ranks = Some(ranks);
        self
    }

    /// Where ranks run, as places in the topology. Default [`Pinning::Compact`]; on an
    /// [external](TeamBuilder::external) team the default is the program's own placement, and
    /// a pinning given here binds each joining thread to its rank's core for the length of
    /// its [`Team::join`] (its own mask given back when it leaves).
    pub fn pinning(mut self, pinning: Pinning) -> Self {
        self.pinning = Some(pinning);
        self
    }

    /// A team with no threads of its own: its ranks are the program's threads — of an OpenMP
    /// region, a rayon pool, `std::thread::scope` — each of which calls [`Team::join`] with
    /// its rank once per run. [`Team::run`] on such a team is an error, as is `join` on a team
    /// with threads of its own.
    ///
    /// Where the threads run is the program's business (OpenMP's `OMP_PLACES`, say): a
    /// joined thread bound to a single processing unit (read once per thread, at its first
    /// join) has that location in the topology, and the hierarchy and `Auto` see it as they
    /// see an owned team's pinned ranks; an unbound one has none. [`TeamBuilder::pinning`]
    /// pins instead.
    pub fn external(mut self) -> Self {
        self.external = true;
        self
    }

    /// The machine the ranks are placed on. Default: [`Topology::detect`] (read once per
    /// process, then restricted to the cores the thread calling `build` may use). With a
    /// synthetic topology, ranks get the described machine's locations ([`Comm::location`](crate::Comm::location))
    /// while their threads are pinned to the real cores the leaves wrap onto.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// Longest a single wait of a communication call may last; a longer one fails with
    /// [`Error::Timeout`] naming the peer and the operation (and fails the run). Default: no
    /// limit — a rank that skips a call is still detected when it returns from the closure
    /// ([`Error::PeerExited`]), but one that waits elsewhere forever is not.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether a run looks for deadlocks among its ranks; default on. When every rank that
    /// has not returned is blocked waiting for another, every one of them gets
    /// [`Error::Deadlock`] naming the waits, without a timeout: the check is made only by a
    /// rank that is about to sleep, never on the fast path. Turn it off only if a rank's
    /// communicator is used from a thread other than the rank's own while the rank waits:
    /// the check counts a rank as blocked while its own thread waits, and cannot see a helper
    /// thread that is still computing what it will send. (Between the processes of a hybrid
    /// team the check is off and only the timeout finds a deadlock.)
    pub fn deadlock_detection(mut self, on: bool) -> Self {
        self.deadlocks = Some(on);
        self
    }

    /// How the ranks wait for one another ([`Wait`]); default [`Wait::Auto`], judged from
    /// the number of ranks against the cores the process may use (not the topology's, which
    /// may describe another machine).
    pub fn wait(mut self, wait: Wait) -> Self {
        self.wait = wait;
        self
    }

    /// What the processes of one node use between them on a hybrid team ([`NodeShm`]): shared
    /// memory where `/dev/shm` can hold the node's segment, else MPI with a warning (`Auto`,
    /// the default); shared memory or an error ([`NodeShm::Require`]); MPI only
    /// ([`NodeShm::Off`]). Unset, the environment variable `CORECOLL_NODE_SHM`
    /// (`auto|require|off`) decides.
    ///
    /// [`NodeShm`]: crate::NodeShm
    /// [`NodeShm::Require`]: crate::NodeShm::Require
    /// [`NodeShm::Off`]: crate::NodeShm::Off
    #[cfg(feature = "mpi")]
    pub fn node_shm(mut self, choice: crate::NodeShm) -> Self {
        self.node_shm = Some(choice);
        self
    }

    /// The machine's cost constants ([`Profile`], written by `corecoll-bench --calibrate`),
    /// from which `Block::Auto` picks pipeline block sizes: each communicator takes those of
    /// the level its ranks span. Default: the file named by the environment variable
    /// `CORECOLL_PROFILE` if it is set ([`Profile::from_env`]), else [`Profile::default`]
    /// (the built-in constants).
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// Overrides `Auto`'s choice for `collective` with `rules` in the syntax of oneCCL's
    /// algorithm variables, `name:from-to;…` over bytes per rank
    /// ([`tuning::Rules`](crate::tuning::Rules)), e.g.
    /// `"recursive-doubling:0-4095;ring:4096-max"` for the allreduce. Sizes the rules leave
    /// out go to the decision tables; the collective's environment variable
    /// (`CORECOLL_ALLREDUCE`, …) in turn overrides these rules ([`crate::tuning`]). Rules that
    /// do not parse make [`TeamBuilder::build`] fail with [`Error::Tuning`].
    pub fn algorithm_rules(mut self, collective: Collective, rules: impl Into<String>) -> Self {
        self.rules.retain(|(c, _)| *c != collective);
        self.rules.push((collective, rules.into()));
        self
    }

    /// Places the ranks on the topology ([`Topology::place`]) and starts the team's threads,
    /// each pinned to the OS index of its location. Fails for zero ranks, a placement the
    /// topology cannot satisfy, or (without [`TeamBuilder::profile`]) a `CORECOLL_PROFILE`
    /// that names a file that cannot be read or is not a profile ([`Error::Profile`]), and
    /// for algorithm rules (of [`TeamBuilder::algorithm_rules`] or an environment variable
    /// such as `CORECOLL_ALLREDUCE`) that do not parse ([`Error::Tuning`]), and for another
    /// of the crate's environment variables set to a value it does not take
    /// ([`Error::Environment`]; docs/usage.md lists them).
    pub fn build(self) -> Result<Team> {
        crate::env::check()?;
        self.build_for(None)
    }

    /// Builds this process's threads as ranks of a team that spans the MPI processes of
    /// `comm` (feature `mpi`), collective over them: every process calls it, each with its own
    /// number of threads. The world's ranks are the processes' threads in process order:
    /// process q's thread i is rank oᵩ + i, oᵩ being the threads of the processes before it
    /// (an allgather of the counts). `Team::run` then hands every thread of every process a
    /// [`Comm`](crate::Comm) over all of them, on which every collective of the crate runs: within each
    /// process over the mailboxes, between the processes by each process's rank 0 over MPI
    /// (docs/hybrid.md).
    ///
    /// Rank 0 of each process is the thread that calls `Team::run`, and it alone calls MPI, so
    /// MPI must have been initialised with at least `Threading::Funneled`
    /// (`mpi::initialize_with_threading`), and under `Funneled` the team must be built and run
    /// from the thread that initialised it; otherwise [`Error::Unsupported`] (decided by each
    /// process on its own, before any MPI call: a process that fails here leaves the others
    /// waiting for it). Point-to-point between threads of different processes is not
    /// supported ([`Error::Unsupported`]). The team must be dropped before MPI is finalised.
    ///
    /// With the default pinning ([`Pinning::Compact`]), several processes on one node that may
    /// all use the same cores (`mpirun --bind-to none`) pin their threads one after the other
    /// (process by process, in rank order), not all from the first core; where the node's
    /// threads outnumber its cores, the processes start one core apart instead, so that their
    /// rank 0s (which call MPI) do not share a core while there are cores enough. `Wait::Auto`
    /// judges the load from the threads of all the node's processes.
    #[cfg(feature = "mpi")]
    pub fn mpi<C: ::mpi::topology::Communicator>(mut self, comm: &C) -> Result<Team> {
        let detected = self.topology.is_none();
        let topology = self.topology.take().unwrap_or_else(|| self.detect());
        let ranks = self.ranks.unwrap_or(topology.leaves().len().max(1));
        let shm = self
            .node_shm
            .or_else(crate::env::node_shm)
            .unwrap_or_default();
        let (process, node) = crate::process::world::Process::new(comm, ranks, shm)?;
        self.topology = Some(topology);
        self.ranks = Some(ranks);
        if detected && node.total > ranks && !self.external && self.pinning.is_none() {
            let cores = available_cores();
            if !cores.is_empty() {
                let n = cores.len();
                self.pinning = Some(Pinning::Cores(
                    (0..ranks).map(|i| cores[node.core_index(i, n)]).collect(),
                ));
            }
        }
        let mut team = self.build_for(Some(node.total))?;
        // Where the node's threads share cores, the leaders' MPI waits give theirs up too.
        process.set_polite(team.shared.ranks.policy.oversubscribed);
        process.set_profile(&team.shared.settings.profile);
        team.process = Some(Arc::new(process));
        Ok(team)
    }

    /// [`TeamBuilder::build`], with `Wait::Auto` judging the load from `load` threads (those
    /// of every process on the node) instead of the team's own. A hybrid team (a `load`) does
    /// not look for deadlocks: its ranks may wait for another process.
    fn build_for(mut self, load: Option<usize>) -> Result<Team> {
        let detect_deadlocks = load.is_none() && self.deadlocks.unwrap_or(true);
        let topology = self.topology.take().unwrap_or_else(|| self.detect());
        let ranks = self.ranks.unwrap_or(topology.leaves().len().max(1));
        if ranks == 0 {
            return Err(Error::ZeroRanks);
        }
        let profile = match self.profile {
            Some(p) => p,
            None => Profile::from_env()?.unwrap_or_default(),
        };
        let tuning = Tuning::new(&profile.tables, &self.rules)?;
        let pinning = self.pinning.unwrap_or(if self.external {
            Pinning::None
        } else {
            Pinning::Compact
        });
        let locations = topology.place(&pinning, ranks)?;
        let plan: Vec<Option<usize>> = locations.iter().map(|l| l.map(|l| l.os_index)).collect();
        // Oversubscription is judged against the real cores, whatever the topology describes:
        // those of the building thread, or on an external team those of the process.
        let cores = if self.external {
            process_cores()
        } else {
            available_cores()
        };
        let policy = self
            .wait
            .resolve(load.unwrap_or(ranks).max(ranks), cores.len());
        let shared = Arc::new(Shared {
            ranks: Arc::new(Ranks {
                detect_deadlocks,
                ..Ranks::new(ranks, policy, self.timeout).placed(topology, locations)
            }),
            settings: Arc::new(Settings::new(profile, tuning)),
            epoch: CachePadded::new(AtomicU64::new(0)),
            job: Mutex::new(None),
            remaining: CachePadded::new(AtomicUsize::new(0)),
            shutdown: AtomicBool::new(false),
        });
        let mut team = Team {
            shared: shared.clone(),
            workers: Vec::with_capacity(ranks - 1),
            cores: plan.clone(),
            running: Mutex::new(()),
            door: self.external.then(|| Door::new(ranks)),
            #[cfg(feature = "mpi")]
            process: None,
        };
        if self.external {
            return Ok(team);
        }
        for (rank, core) in plan.into_iter().enumerate().skip(1) {
            let shared = shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("corecoll-rank-{rank}"))
                .spawn(move || worker(shared, rank, core))
                .map_err(|e| Error::Spawn {
                    rank,
                    message: e.to_string(),
                })?;
            // On error, dropping `team` shuts down the workers started so far.
            team.workers.push(handle);
        }
        Ok(team)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Wait;

    #[test]
    fn wait_policy_by_load() {
        // (The environment variable's names: `env`'s tests.) An explicit choice overrides the load (and the environment).
        assert!(!Wait::Active.resolve(64, 2).oversubscribed);
        assert!(Wait::Passive.resolve(1, 64).oversubscribed);
    }
}
