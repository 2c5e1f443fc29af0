//! Team handles of the C API (`corecoll_team_create`, `corecoll_team_free`), and the team
//! held through one while a thread is joined to it or asks it something (`Held`).

use crate::error::{CError, CResult};
use crate::seat::{DEAD, LIVE};
use corecoll_rs::Team;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A team of the C API (`corecoll_team_create`).
pub struct corecoll_team_t {
    magic: AtomicU64,
    /// The team (from `Arc::into_raw`) while the handle is live, else NULL.
    team: AtomicPtr<Team>,
    /// How many threads hold the team (`Held`), per rank for the joined threads and in the
    /// last slot for everything else; each on a cache line of its own, so that threads
    /// joining at once write nothing in common. Sized when the handle is made, never
    /// changed.
    held: Box<[CachePadded<AtomicUsize>]>,
}

/// Freed team handles, for reuse.
static FREE_TEAMS: Mutex<Vec<&'static corecoll_team_t>> = Mutex::new(Vec::new());

/// What a team handle's `magic` holds while it is being freed.
const FREEING: u64 = 0xfeee_feee_feee_feee;

/// A live team handle for `team`.
pub(crate) fn new_team(team: Team) -> *mut corecoll_team_t {
    let slots = team.size() + 1;
    let reused = {
        let mut free = FREE_TEAMS.lock().unwrap_or_else(|p| p.into_inner());
        let fits = free.iter().position(|h| h.held.len() >= slots);
        fits.map(|i| free.swap_remove(i))
    };
    let handle: &'static corecoll_team_t = reused.unwrap_or_else(|| {
        Box::leak(Box::new(corecoll_team_t {
            magic: AtomicU64::new(DEAD),
            team: AtomicPtr::new(std::ptr::null_mut()),
            held: (0..slots)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }))
    });
    let team = Arc::into_raw(Arc::new(team)).cast_mut();
    handle.team.store(team, Ordering::SeqCst);
    handle.magic.store(LIVE, Ordering::SeqCst);
    handle as *const corecoll_team_t as *mut corecoll_team_t
}

/// A team held through its handle: `corecoll_team_free` refuses to free it meanwhile.
pub(crate) struct Held {
    team: &'static Team,
    count: &'static AtomicUsize,
}

impl std::ops::Deref for Held {
    type Target = Team;

    fn deref(&self) -> &Team {
        self.team
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The team of a live handle, held as rank `rank` (`None`, or a rank out of range: in the
/// handle's shared slot).
///
/// # Safety
/// `team` is NULL or a pointer this library returned as a team handle.
pub(crate) unsafe fn team_of(team: *const corecoll_team_t, rank: Option<usize>) -> CResult<Held> {
    // SAFETY: handles are never deallocated, so a pointer the library returned stays readable.
    let handle: &'static corecoll_team_t =
        unsafe { team.as_ref() }.ok_or(CError::Handle("team"))?;
    if handle.magic.load(Ordering::SeqCst) != LIVE {
        return Err(CError::Handle("team"));
    }
    let last = handle.held.len() - 1;
    let count = &*handle.held[rank.filter(|&r| r < last).unwrap_or(last)];
    count.fetch_add(1, Ordering::SeqCst);
    // Either `free_team` sees this count (it reads the counts after marking the handle), or
    // this sees its mark (both `SeqCst`): a team is never freed while held.
    if handle.magic.load(Ordering::SeqCst) != LIVE {
        count.fetch_sub(1, Ordering::SeqCst);
        return Err(CError::Handle("team"));
    }
    let team = handle.team.load(Ordering::SeqCst);
    // SAFETY: a live handle's team pointer came from `Arc::into_raw`, and its reference is
    // given back only by `free_team`, which does not while a count is held (above); the
    // handle itself is never deallocated.
    let team: &'static Team = unsafe { &*team };
    Ok(Held { team, count })
}

/// Frees a team handle: an error while threads are joined to it.
///
/// # Safety
/// As `team_of`.
pub(crate) unsafe fn free_team(team: *const corecoll_team_t) -> CResult<()> {
    // SAFETY: as in `team_of`.
    let handle: &'static corecoll_team_t =
        unsafe { team.as_ref() }.ok_or(CError::Handle("team"))?;
    if handle
        .magic
        .compare_exchange(LIVE, FREEING, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return Err(CError::Handle("team"));
    }
    if handle.held.iter().any(|c| c.load(Ordering::SeqCst) > 0) {
        handle.magic.store(LIVE, Ordering::SeqCst);
        return Err(corecoll_rs::Error::TeamBusy.into());
    }
    let team = handle.team.swap(std::ptr::null_mut(), Ordering::SeqCst);
    // SAFETY: the pointer came from `Arc::into_raw` (`new_team`), and no thread holds the
    // team (above); dropped here, on the freeing thread (a hybrid team's MPI part before
    // MPI_Finalize).
    drop(unsafe { Arc::from_raw(team) });
    handle.magic.store(DEAD, Ordering::SeqCst);
    FREE_TEAMS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(handle);
    Ok(())
}
