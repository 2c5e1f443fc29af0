//! Teams whose ranks are the program's own threads ([`TeamBuilder::external`]): each thread
//! calls [`Team::join`] with its rank, and the ranks that join between one run's end and the
//! next make up a run, with the same communicators and guarantees as [`Team::run`]'s.
//!
//! A rank's part of a run is a [`Seat`], from [`Team::seat`] to [`Seat::leave`] ([`Team::join`]
//! is the two around a closure, and waits for the run to end; the C API calls them apart). A
//! run is an [`Entry`] behind the team's [`Door`], and a number there (its epoch): the first
//! rank to join makes the entry, every other joins it, and its last rank to leave closes the
//! run — renewing the entry for the next run if this one ended cleanly, so that the next joins
//! find their communicators as they left them — or a rank gives it up when it has waited longer
//! than the team's timeout for one that never joined. Where a joining thread runs is told to the
//! run when it joins ([`RunState::seat`]); a communicator that needs the ranks' locations (the
//! hierarchy, `Auto`'s level) waits for them there.
//!
//! A join and a leave write little that other ranks write too (the door's lock, the run's count
//! of returned ranks): each rank's part of an entry is on a cache line of its own, a join is
//! marked by the run's number rather than by flags that the next run must clear, and a rank
//! keeps its hold on the entry between its seats, so that joining the same entry renewed does
//! not count one more holder of it.
//!
//! On a hybrid team rank 0 of each process is its leader, which calls MPI: the other ranks
//! start once it has begun the run, and the run is closed by it, after its last check with the
//! other processes (`crate::process::world::Process::end`).
//!
//! The design follows MPICH's threadcomm (`MPIX_Threadcomm_start`/`finish`, MPICH 4.2), where
//! the threads of an OpenMP region become the ranks of a communicator for the region's length.
//!
//! [`TeamBuilder::external`]: super::TeamBuilder::external

use super::{affinity, Team};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::shm::{CommShared, RunState};
use crate::sync::park::{wait_until, Started};
use crate::sync::{AtomicBool, AtomicU64, CachePadded, Mutex, Ordering};
use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// The run of an external team that ranks are joining now, if any, and the last run if the
/// next may start from it.
#[derive(Debug)]
pub(super) struct Door {
    /// On a line of its own: every join takes the lock, and the team's other fields, read on
    /// every join, should not move with it.
    runs: CachePadded<Mutex<Runs>>,
    /// Each rank's hold on the run it joined last, kept when its seat is gone, on a line of
    /// its own: a join of the same entry renewed takes it back instead of counting one more
    /// holder of the entry (a count that every rank would write on every join and leave).
    held: Box<[CachePadded<Mutex<Held>>]>,
}

/// A rank's hold on the entry of the run it joined last, between its seats ([`Door::held`]).
type Held = Option<Arc<Entry>>;

/// What the door holds.
#[derive(Debug, Default)]
struct Runs {
    /// The run that ranks join: made by the first rank to join, taken away when a run fails.
    /// A run that ends cleanly with every rank's communicator kept (`Slot::kept`) is renewed
    /// by its last rank to leave and stays open as the next run, instead of a run state, a
    /// world and a communicator per rank made afresh (which would be most of a join's cost).
    open: Option<Arc<Entry>>,
}

/// One run of an external team.
#[derive(Debug)]
struct Entry {
    run: Arc<RunState>,
    world: Arc<CommShared>,
    /// Each rank's own part, on a cache line of its own.
    slots: Box<[CachePadded<Slot>]>,
    /// The number of the run, counted from 1: it moves on (under the door's lock) when the run
    /// is over for every rank — all have left (and on a hybrid team the leader has made its
    /// last check), or a rank gave up on one that never joined — whether the entry is then
    /// renewed for the next run or retired.
    epoch: CachePadded<AtomicU64>,
    /// The last run of this entry that ended cleanly (0: none). A run that fails retires its
    /// entry, so a seat's run ended cleanly exactly when this has reached its number.
    clean: AtomicU64,
    /// On a hybrid team: the leader has begun the run between the processes.
    begun: AtomicBool,
    /// Why the run fails on every rank other than by its own results: the first panic, another
    /// process's failure, a rank that never joined.
    outcome: Mutex<Option<Error>>,
}

/// A run a rank has joined: its entry and its number there.
type Joined = (Arc<Entry>, u64);

/// What a rank finds at the door ([`Door::enter`]).
enum Entered {
    /// It has joined this run.
    Joined(Joined),
    /// It has left this run, which has not ended yet: its next run begins once that one has.
    Left(Joined),
}

/// One rank's part of an [`Entry`].
#[derive(Debug, Default)]
struct Slot {
    /// The number (`Entry::epoch`) of the last run the rank joined: a second join of one run
    /// is an error. Never reset: a renewed entry's next run has the next number.
    joined: AtomicU64,
    /// The rank's communicator, kept as it leaves a run that has not failed, for the next run
    /// (on a hybrid team too: the next run begins between the processes as every run does,
    /// with the communicators as they were). Boxed, so that a join and a leave move a pointer,
    /// not the communicator.
    kept: Mutex<Option<Box<Comm>>>,
}

thread_local! {
    /// The processing unit (OS index) the calling thread is bound to, if to a single one: read
    /// at the thread's first join (OpenMP and `taskset` bind a thread once, when it starts).
    static BOUND: Cell<Option<Option<usize>>> = const { Cell::new(None) };
}

/// The processing unit the calling thread is bound to, if to a single one.
fn bound_pu() -> Option<usize> {
    BOUND.with(|b| {
        if let Some(known) = b.get() {
            return known;
        }
        let pu = affinity::single_pu();
        b.set(Some(pu));
        pu
    })
}

impl Door {
    /// The door of a team of `ranks` ranks.
    pub(super) fn new(ranks: usize) -> Door {
        Door {
            runs: CachePadded::new(Mutex::new(Runs::default())),
            held: (0..ranks)
                .map(|_| CachePadded::new(Mutex::new(None)))
                .collect(),
        }
    }

    /// Joins rank `rank` to the open run of `team`, or opens one; an error if `rank` is in it
    /// already. (An entry's `epoch` moves only under this lock, so it is the open run's here.)
    fn enter(&self, team: &Team, rank: usize) -> Result<Entered> {
        let last = self.held[rank].lock().take();
        let mut runs = self.runs.lock();
        let entry = runs.open.get_or_insert_with(|| Arc::new(Entry::new(team)));
        let epoch = entry.epoch.load(Ordering::SeqCst);
        // A hold on an entry retired since is dropped with `last`, after the lock.
        let hold = match last {
            Some(last) if Arc::ptr_eq(&last, entry) => last,
            _ => entry.clone(),
        };
        if entry.slots[rank].joined.swap(epoch, Ordering::SeqCst) == epoch {
            if entry.run.is_done(rank) {
                return Ok(Entered::Left((hold, epoch)));
            }
            drop(runs);
            *self.held[rank].lock() = Some(hold);
            return Err(Error::Join {
                rank,
                what: "this rank has already joined the team's current run (from another \
                       thread); each rank joins once per run"
                    .into(),
            });
        }
        Ok(Entered::Joined((hold, epoch)))
    }

    /// Keeps rank `rank`'s hold on `entry`, the run it has left, for its next join.
    fn keep(&self, rank: usize, entry: Arc<Entry>) {
        // (The rank's lock is released before an earlier hold, which may be an entry's last, is
        // dropped.)
        let earlier = self.held[rank].lock().replace(entry);
        drop(earlier);
    }

    /// Whether `entry` is the run that ranks join now (`runs` being the door's, locked).
    fn is_open(runs: &Runs, entry: &Arc<Entry>) -> bool {
        runs.open.as_ref().is_some_and(|e| Arc::ptr_eq(e, entry))
    }

    /// Ends `entry`'s run `epoch` for every rank (once: a second close of it does nothing).
    /// Later joins join the next run: this entry renewed if the run ended cleanly with every
    /// rank's communicator kept, else a new one.
    fn close(&self, team: &Team, entry: &Arc<Entry>, epoch: u64) {
        {
            let mut runs = self.runs.lock();
            if entry.epoch.load(Ordering::SeqCst) != epoch {
                return;
            }
            let open = Door::is_open(&runs, entry);
            if open && entry.reusable() {
                entry.clean.store(epoch, Ordering::SeqCst);
                entry.renew();
            } else if open {
                runs.open = None;
            }
            entry.epoch.store(epoch + 1, Ordering::SeqCst);
        }
        for p in team.shared.ranks.parkers.iter() {
            p.unpark();
        }
    }

    /// Rank `rank` has waited `started`'s timeout for run `epoch` to end: if some rank has not
    /// joined it, the run fails with a timeout naming it, and no one can join it any more
    /// (`true`); if all have, or the run is over, the wait goes on (`false`).
    fn give_up(&self, entry: &Arc<Entry>, epoch: u64, rank: usize, started: &Started) -> bool {
        let mut runs = self.runs.lock();
        if entry.over(epoch) {
            return false;
        }
        let joined = |s: &CachePadded<Slot>| s.joined.load(Ordering::SeqCst) == epoch;
        let Some(missing) = entry.slots.iter().position(|s| !joined(s)) else {
            return false;
        };
        if Door::is_open(&runs, entry) {
            runs.open = None;
        }
        drop(runs);
        let e = Error::Timeout {
            rank,
            peer: missing,
            op: "Team::join",
            waited: started.elapsed(),
        };
        entry.outcome.lock().get_or_insert(e.clone());
        entry.run.abort(e);
        true
    }
}

impl Entry {
    /// A fresh run of `team`.
    fn new(team: &Team) -> Entry {
        let size = team.size();
        Entry {
            run: Arc::new(RunState::joining(team.shared.ranks.clone())),
            world: Arc::new(CommShared::new((0..size).collect())),
            slots: (0..size)
                .map(|_| CachePadded::new(Slot::default()))
                .collect(),
            epoch: CachePadded::new(AtomicU64::new(1)),
            clean: AtomicU64::new(0),
            begun: AtomicBool::new(false),
            outcome: Mutex::new(None),
        }
    }

    /// Whether the next run may start from this one: it did not fail (a panic or a rank that
    /// never joined fail it too; on a hybrid team, a failure another process reported at the
    /// run's last check, which every process then sees alike), and every rank has left,
    /// keeping its communicator (as ranks of a run that has not failed do).
    fn reusable(&self) -> bool {
        !self.run.is_aborted() && self.all_left() && self.outcome.lock().is_none()
    }

    /// This run, ended cleanly, made fresh for the next: the same run state and world, and each
    /// rank's communicator as it left it. Every rank has left, so none uses the run state any
    /// more; their seats may still hold the entry, to read `epoch` and `clean`.
    fn renew(&self) {
        self.run.renew();
        self.begun.store(false, Ordering::SeqCst);
    }

    /// Whether run `epoch` of this entry is over.
    fn over(&self, epoch: u64) -> bool {
        self.epoch.load(Ordering::SeqCst) != epoch
    }

    /// Whether every rank has left.
    fn all_left(&self) -> bool {
        self.run.returned() == self.slots.len()
    }
}

/// One rank's part in a run of an [external](super::TeamBuilder::external) team, from
/// [`Team::seat`] to [`Seat::leave`], on the thread that took it: it dereferences to the rank's
/// [`Comm`]. [`Team::join`] is a seat around a closure; a seat is for callers that cannot hand
/// over a closure (the C API's `corecoll_join` and `corecoll_leave`).
///
/// Leaving does not wait for the run's other ranks; the rank's next seat or join waits for the
/// run to end, so that a thread that leaves and joins again at once (a loop of OpenMP regions)
/// joins the next run. Dropped without `leave`, it leaves (a drop while a panic unwinds fails
/// the run with [`Error::Panicked`]). Forgotten (`mem::forget`), the run never ends for the
/// other ranks: their `join` and their next seat wait (for the team's timeout, if it has one). It is neither `Send` nor
/// `Sync`: its rank is its thread.
pub struct Seat<'t> {
    team: &'t Team,
    door: &'t Door,
    /// Given back to the door when the seat is dropped (`Door::keep`).
    entry: ManuallyDrop<Arc<Entry>>,
    /// The number of its run in `entry`.
    epoch: u64,
    rank: usize,
    /// The rank's communicator; `None` once it has left, or if the run failed before it began.
    comm: Option<Box<Comm>>,
    /// The thread's own affinity, given back when it leaves (a team with a pinning).
    saved: Option<affinity::SavedMask>,
    /// A hybrid team's leader: whether it began the run between the processes (so that it
    /// ends it), and its relay as the thread's idle hook while it is seated.
    #[cfg(feature = "mpi")]
    leader: Option<(bool, Option<crate::sync::idle::Lasting>)>,
    left: bool,
    _thread: PhantomData<*const ()>,
}

impl std::fmt::Debug for Seat<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seat")
            .field("rank", &self.rank)
            .field("size", &self.team.size())
            .finish_non_exhaustive()
    }
}

impl std::ops::Deref for Seat<'_> {
    type Target = Comm;

    fn deref(&self) -> &Comm {
        self.comm
            .as_ref()
            .expect("a seat handed out has its communicator until it leaves")
    }
}

impl Team {
    /// Runs `f` as rank `rank` of this [external](super::TeamBuilder::external) team on the
    /// calling thread, with the same [`Comm`] as [`Team::run`] hands its ranks, and returns
    /// what `f` returns once every rank of the run has left.
    ///
    /// Every rank joins once per run, each from its own thread; a run is the joins between
    /// the end of the one before and its own last rank's leaving. As in `Team::run`, a panic
    /// or an early return of one rank makes the others' pending and later calls fail, and the
    /// team is ready for the next run when `join` returns. `join` returns
    /// [`Error::Panicked`] on every rank if one panicked, and on a hybrid team
    /// [`Error::ProcessFailed`] if the run failed in another process.
    ///
    /// Errors ([`Error::Join`]): a team with threads of its own, a rank out of range, a rank
    /// that has joined the current run already. A rank that never joins makes the others fail
    /// with [`Error::Timeout`] once they have waited for it for the team's timeout
    /// ([`TeamBuilder::timeout`](super::TeamBuilder::timeout)); with no timeout they wait.
    ///
    /// On a hybrid team (`TeamBuilder::mpi`, feature `mpi`) the threads of every
    /// process join, and rank 0 of each process calls MPI for it: under
    /// `Threading::Funneled` it must be the thread that initialised MPI (an OpenMP region's
    /// master thread is), else [`Error::Unsupported`] on every rank of the process. The
    /// other ranks start once their process's rank 0 has joined.
    pub fn join<R, F: FnOnce(&Comm) -> R>(&self, rank: usize, f: F) -> Result<R> {
        let seat = self.seat(rank)?;
        let value = match catch_unwind(AssertUnwindSafe(|| f(&seat))) {
            Ok(value) => Some(value),
            Err(payload) => {
                seat.entry.run.rank_panicked(rank, payload.as_ref());
                None
            }
        };
        seat.end(true)?;
        value.ok_or_else(|| Error::Join {
            rank,
            what: "the rank's closure panicked".into(),
        })
    }

    /// Joins the current run of this [external](super::TeamBuilder::external) team as rank
    /// `rank` on the calling thread, for a caller that cannot hand [`Team::join`] a closure:
    /// the seat dereferences to the rank's [`Comm`] until [`Seat::leave`]. The same errors
    /// as `join`'s; an error here has left the run already.
    pub fn seat(&self, rank: usize) -> Result<Seat<'_>> {
        let Some(door) = &self.door else {
            return Err(Error::Join {
                rank,
                what: "this team runs on threads of its own (Team::run); a team whose ranks \
                       are the program's threads is built with TeamBuilder::external"
                    .into(),
            });
        };
        if rank >= self.size() {
            return Err(Error::Join {
                rank,
                what: format!("no such rank: the team has {} ranks", self.size()),
            });
        }
        let (entry, epoch) = loop {
            match door.enter(self, rank)? {
                Entered::Joined(joined) => break joined,
                Entered::Left((last, e)) => {
                    self.until(door, &last, e, rank, || last.over(e));
                    door.keep(rank, last);
                }
            }
        };
        let saved = self.cores[rank].map(|core| {
            let saved = affinity::save();
            affinity::pin_current(core);
            saved
        });
        let place = match self.shared.ranks.locations[rank] {
            Some(l) => Some(l),
            None => bound_pu().and_then(|pu| self.topology().location_of_pu(pu)),
        };
        entry.run.seat(rank, place);
        let mut seat = Seat {
            team: self,
            door,
            entry: ManuallyDrop::new(entry),
            epoch,
            rank,
            comm: None,
            saved,
            #[cfg(feature = "mpi")]
            leader: None,
            left: false,
            _thread: PhantomData,
        };
        #[cfg(feature = "mpi")]
        if let Some(p) = &self.process {
            seat.begin_between_processes(p);
            // The leader could not begin, or the run was given up before it did.
            if seat.entry.outcome.lock().is_some() {
                return Err(seat.leave().expect_err("the run has failed"));
            }
        }
        let kept = seat.entry.slots[rank].kept.lock().take();
        seat.comm = Some(
            kept.unwrap_or_else(|| Box::new(self.comm(rank, &seat.entry.world, &seat.entry.run))),
        );
        Ok(seat)
    }

    /// Waits on rank `rank`'s parker until `ready()`. Each time the team's timeout passes
    /// first, gives up on a rank that has not joined ([`Door::give_up`]) and returns, closing
    /// the run unless a hybrid team's leader will; where every rank has joined, waits on.
    fn until(
        &self,
        door: &Door,
        entry: &Arc<Entry>,
        epoch: u64,
        rank: usize,
        ready: impl Fn() -> bool,
    ) {
        let ranks = &self.shared.ranks;
        loop {
            let started = Started::new(ranks.timeout);
            if wait_until(
                &ranks.parkers[rank],
                &ranks.policy,
                started.deadline(),
                &ready,
            ) {
                return;
            }
            if !door.give_up(entry, epoch, rank, &started) {
                continue;
            }
            // A hybrid team's leader closes the run after its last check with the other
            // processes; the other ranks wait for that if it has joined.
            let leader = self.hybrid() && entry.slots[0].joined.load(Ordering::SeqCst) == epoch;
            if !leader {
                door.close(self, entry, epoch);
                return;
            }
            if rank == 0 {
                return;
            }
        }
    }

    /// Whether the team spans MPI processes.
    fn hybrid(&self) -> bool {
        #[cfg(feature = "mpi")]
        return self.process.is_some();
        #[cfg(not(feature = "mpi"))]
        false
    }
}

impl Seat<'_> {
    /// On a hybrid team, before the rank's communicator is made: the leader (rank 0) begins
    /// the run between the processes and installs its relay as its idle hook; the other ranks
    /// wait until it has.
    #[cfg(feature = "mpi")]
    fn begin_between_processes(&mut self, p: &Arc<crate::process::world::Process>) {
        let (team, entry) = (self.team, &self.entry);
        if self.rank != 0 {
            team.until(self.door, entry, self.epoch, self.rank, || {
                entry.begun.load(Ordering::SeqCst)
            });
            return;
        }
        let began = match p.begin("Team::join") {
            Ok(()) => true,
            Err(e) => {
                entry.outcome.lock().get_or_insert(e.clone());
                entry.run.abort(e);
                false
            }
        };
        entry.begun.store(true, Ordering::SeqCst);
        for parker in team.shared.ranks.parkers.iter() {
            parker.unpark();
        }
        let hook = began.then(|| p.lead_lasting(&entry.run)).flatten();
        self.leader = Some((began, hook));
    }

    /// Leaves the run, without waiting for its other ranks to leave (a hybrid team's rank 0
    /// does wait: it ends the run between the processes). The rank's next seat or join waits
    /// for this run to end. [`Error::Panicked`] if a rank of the run has panicked, on a hybrid
    /// team [`Error::ProcessFailed`] if the run has failed in another process,
    /// [`Error::Timeout`] if a rank never joined; `Ok` otherwise, even where this rank's own
    /// calls failed (they returned their errors).
    pub fn leave(self) -> Result<()> {
        self.end(false)
    }

    /// Leaves the run and, if `wait`, waits for it to end (`Team::join`): the run's outcome.
    fn end(mut self, wait: bool) -> Result<()> {
        self.finish();
        let (entry, epoch) = (&self.entry, self.epoch);
        if wait {
            self.team
                .until(self.door, entry, epoch, self.rank, || entry.over(epoch));
        }
        // (A failure aborts the run, but for another process's on a hybrid team.)
        let failed = entry.run.is_aborted() || self.team.hybrid();
        let failure = failed
            .then(|| {
                let panic = entry.run.first_panic();
                panic.or_else(|| entry.outcome.lock().clone())
            })
            .flatten();
        // Read after the failure: a run that ended cleanly may have been renewed for the next
        // run by now, whose failures are not this one's.
        if entry.clean.load(Ordering::SeqCst) >= epoch {
            return Ok(());
        }
        failure.map_or(Ok(()), Err)
    }

    /// The rank's leaving, once.
    fn finish(&mut self) {
        if std::mem::replace(&mut self.left, true) {
            return;
        }
        let (team, door, entry, epoch, rank) =
            (self.team, self.door, &self.entry, self.epoch, self.rank);
        // Kept for the next run where this one has not failed.
        let comm = self.comm.take();
        if !entry.run.is_aborted() {
            *entry.slots[rank].kept.lock() = comm;
        } else {
            drop(comm);
        }
        let last = entry.run.mark_done(rank) == team.size();
        #[cfg(feature = "mpi")]
        if let Some(p) = &team.process {
            if let Some((began, hook)) = self.leader.take() {
                // The leader relays its threads' messages until they have all left, then makes
                // the last check with the other processes (MPI only if it could begin).
                team.until(door, entry, epoch, 0, || entry.all_left());
                if began {
                    if let Err(e) = p.end(entry.run.is_aborted()) {
                        entry.outcome.lock().get_or_insert(e);
                    }
                }
                drop(hook);
                door.close(team, entry, epoch);
            } else {
                team.shared.ranks.parkers[0].unpark();
            }
            self.restore();
            return;
        }
        if last {
            door.close(team, entry, epoch);
        }
        self.restore();
    }

    /// Gives the thread its own affinity back.
    fn restore(&mut self) {
        if let Some(saved) = self.saved.take() {
            affinity::restore(saved);
        }
    }
}

impl Drop for Seat<'_> {
    fn drop(&mut self) {
        if !self.left && std::thread::panicking() {
            self.entry.run.panicked(Error::Panicked {
                rank: self.rank,
                message: "a panic unwound through the rank's seat".into(),
            });
        }
        self.finish();
        // SAFETY: `drop` runs once, and nothing reads the field after it.
        let entry = unsafe { ManuallyDrop::take(&mut self.entry) };
        self.door.keep(self.rank, entry);
    }
}
