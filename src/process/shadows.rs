//! Where the non-blocking collectives of the hybrid world run between the processes.
//!
//! A request is the blocking collective run as a task on one of the communicator's shadows
//! (`comm::scope`). Within a process a shadow is a shadow of the process's threads'
//! communicator; between the processes it is one of [`SHADOWS`] leaders' communicators of its
//! own ([`Shadow`], made with the team: `MPI_Comm_dup` is collective, and a first request must
//! not wait for the other processes' leaders to make one), so that requests in flight at once
//! and the blocking calls meanwhile never meet in MPI. Each shadow runs its requests one after
//! the other in start order on every process, as the ranks start them, so its MPI calls come
//! in the same order on every process. Its waits poll (`process::mpi::poll_politely`), which
//! inside a task suspends the task instead of blocking the rank.
//!
//! **Failures.** An MPI collective cannot be withdrawn once posted, so a check on a shadow is
//! never skipped while another process may have posted it: a request whose process failed
//! still reaches its check (as [`Arrival::Failed`]), and only a failed check on the shadow
//! itself closes it, on every process alike. When a run ends, every process makes one more
//! check on the world's leaders' communicator, and where it may be needed one on each open
//! shadow: a process still waiting in a request that another never started meets that
//! process's end there and gets an error instead of waiting for ever, and `Team::run` reports
//! it. Where one node holds every process, each counts the checks it posts on the shadows in
//! its run (`process::node::folds`), and a process at its end posts the shadows' last checks only
//! once it sees another process with more than its own — one waiting on a shadow for a check
//! this process will never make, which the world's last check cannot meet — while it waits in
//! that check. In a run without such a wait (every process made the same calls) no shadow has
//! a last check, so a run's end costs one round through the node. Elsewhere, or where a check
//! failed in the run (on every process alike: it closed the world or a shadow everywhere),
//! every process posts them all at once, before the world's; and a process whose world's last
//! check fails (another process met it in a call of its run, and will post them all at its
//! end) posts them all after it.

use crate::error::{Error, Result};
use crate::local::persistent::Setup;
use crate::mailbox::Kind;
use crate::process::bridge::{Bridge, FirstStage};
use crate::process::leaders::check::{Arrival, Call, PendingCheck};
use crate::process::mpi::wait_all;
use crate::process::world::Process;
use crate::process::ProcessComm;
use crate::select::Choice;
use crate::shm::SHADOWS;
use ::mpi::topology::Communicator;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One shadow's leaders' communicator, and whether a check on it failed in this run.
pub(crate) struct Shadow {
    pub(super) pc: Mutex<ProcessComm>,
    pub(super) closed: AtomicBool,
}

// SAFETY: as `Process`'s (`process::world`): the leaders' communicator is behind a lock, used
// by the process's leader `Comm`s (`Bridge::across`, which checks the thread MPI allows) and by
// `Team::run`'s thread, one at a time; the flag is atomic.
unsafe impl Send for Shadow {}
// SAFETY: see `Send`.
unsafe impl Sync for Shadow {}

/// A communicator's shadows between processes: index k is its shadow k.
pub(crate) type ShadowSet = Arc<[Shadow]>;

/// The shadows of a communicator of the team, collective over `comm`'s processes (`like`:
/// with the costs of that leaders' communicator, else the defaults until the team's profile
/// is set).
pub(super) fn make<C: Communicator>(comm: &C, like: Option<&ProcessComm>) -> Result<ShadowSet> {
    (0..SHADOWS)
        .map(|_| {
            let pc = ProcessComm::new(comm)?;
            pc.set_polite(true);
            pc.set_gathers_rows();
            if let Some(like) = like {
                pc.costs.set(like.costs());
            }
            Ok(Shadow {
                pc: Mutex::new(pc),
                closed: AtomicBool::new(false),
            })
        })
        .collect()
}

impl Bridge {
    /// This rank's link of shadow `k` of the communicator (module docs): its threads' shadow
    /// `k` within the process, and the leaders' shadow `k` between processes (of the world, or
    /// of the duplicate this link belongs to).
    pub(crate) fn shadow(&self, k: usize) -> Result<Bridge> {
        Ok(self.with_stage(self.local.shadow(k), k))
    }
}

impl Bridge {
    /// The setup of a persistent collective across processes: every rank agrees `setup`
    /// within its process, the leaders agree it between processes (on the shadow this link
    /// runs on, in its place among the requests), and every rank learns the outcome.
    pub(crate) fn agree_setup<T: 'static, A: Choice>(&self, setup: &Setup<'_, T, A>) -> Result<()> {
        // The threads agree the setup, which holds every word of the call below.
        let before = FirstStage::agreed(self.local.agree_setup(setup));
        let mut call = Call::of::<T>(Kind::Coll(setup.kind), setup.alg.id(), setup.len);
        if let Some(root) = setup.root {
            call = call.at(root);
        }
        if let Some(op) = setup.combine.as_deref() {
            call = call.with_op(&op);
        }
        self.across(setup.op, call, before, |_| Ok(()))?;
        self.local.barrier_with(crate::select::Barrier::Auto)
    }
}

impl Process {
    /// The last checks of a run (module docs), with `arrival`: on the world's leaders'
    /// communicator, unless a check there failed (`main`), as its blocking collectives check
    /// (MPI matches a blocking collective with blocking ones only, and the shadows' checks are
    /// immediate ones); and on every open shadow (of the world and of every duplicate made so
    /// far, the same on every process), posted together, where they may be needed. The
    /// world's outcome (`None` if not checked), and the first error on a shadow.
    pub(super) fn last_checks(
        &self,
        main: bool,
        arrival: Arrival,
    ) -> (Option<Result<()>>, Option<Error>) {
        const OP: &str = "Team::run";
        let layout = &self.layout;
        let (rank, leaders) = (layout.offset(layout.process()), layout.leaders());
        let sets = self.shadow_sets().clone();
        let all = sets.iter().flat_map(|set| set.iter());
        let shadows: Vec<&Shadow> = all
            .clone()
            .filter(|s| !s.closed.load(Ordering::SeqCst))
            .collect();
        let post = || -> Vec<(&Shadow, PendingCheck)> {
            shadows
                .iter()
                .map(|&s| (s, s.pc.lock().start_check(&Call::barrier(), arrival)))
                .collect()
        };
        // Every process posts the shadows' last checks at once where it cannot see the others'
        // counts of checks, or where a check failed in this run (on every process alike: a
        // check that fails closes its communicator on every process that makes it).
        let watched = self
            .folds
            .as_ref()
            .filter(|_| main && all.count() == shadows.len());
        let mut pending = if watched.is_none() {
            Some(post())
        } else {
            None
        };
        let world = main.then(|| {
            let run = self.run_number();
            let mut meanwhile = || {
                if pending.is_none() && watched.is_some_and(|f| f.others_checked_more(run)) {
                    pending = Some(post());
                }
            };
            let r = self.pc.lock().agree_across_watching(
                &Call::barrier(),
                arrival,
                (rank, leaders),
                OP,
                &mut meanwhile,
            );
            if let Err(e) = &r {
                self.close(&self.closed, e);
            }
            r
        });
        // A world's check that failed here failed on every process, some of which met this
        // end in a call of their run: those post the shadows' last checks at their end (their
        // world is closed), so this process posts them now.
        if matches!(world, Some(Err(_))) && pending.is_none() {
            pending = Some(post());
        }
        let mut pending = pending.unwrap_or_default();
        let mut reqs: Vec<_> = pending.iter_mut().map(|(_, p)| *p.request()).collect();
        wait_all(&mut reqs, true);
        let mut shadow = None;
        for (s, p) in &pending {
            let r = s.pc.lock().check_outcome(p, rank, leaders, OP);
            if let Err(e) = r {
                // Closed, but not the run's failure elsewhere: that is the world's check's to
                // tell (every process comes here with its run's arrival).
                s.closed.store(true, Ordering::SeqCst);
                shadow = shadow.or(Some(e));
            }
        }
        (world, shadow)
    }
}
