//! The hierarchical barrier on shared flags (`Barrier::HierarchicalDirect`): no messages, only
//! epoch words in shared memory, gathered in each of the plan's top-level groups by its
//! leader, met on by the leaders, and released by each leader to its group.
//!
//! The flat barriers (`algorithms::barrier`) send empty messages through the mailboxes:
//! dissemination's ⌈log₂ p⌉ rounds cross between packages in most rounds, and the composed
//! `Barrier::Hierarchical` runs three flat barriers one after the other. On shared memory a
//! barrier needs less: one word per rank that its owner writes and one reader polls. This
//! module learned from MPICH's shared-memory "release/gather" collectives (ranks gather their
//! arrival up a tree of flags, the root releases them down through a flag the children poll)
//! and from XHC in Open MPI (per-rank sequence-number flags on their own cache lines, a
//! hierarchy of leaders following the machine's topology); it copies neither.
//!
//! # Flags
//!
//! `Flags` holds one [`Flag`] per rank, each on its own cache line(s) (`CachePadded`) and
//! written by its rank only, so that a line moves once from its writer to each reader:
//!
//! | word | written by | polled by | meaning once it has reached `e` |
//! | --- | --- | --- | --- |
//! | `arrived` | a member | its leader | the member has arrived at call `e` |
//! | `gathered` | a leader | the other leaders | every rank of its group has arrived at `e` |
//! | `released` | a leader | its members | every rank of the communicator has arrived at `e` |
//!
//! The groups are the plan's top-level groups (`Plan::covered`), the leader of each its
//! first rank; the others are its members. Call `e` is the collective's sequence number plus
//! one (`tag.seq + 1`, the same on every rank). Words only grow from call to call and are
//! compared wrap-safe ([`reached`]: "has reached `e`"), so they never need resetting.
//!
//! # Protocol
//!
//! - **Member**: store `arrived = e` (release); unpark its leader (`Parker::unpark` starts
//!   with the `SeqCst` fence of the event-count protocol); wait until its leader's `released`
//!   has reached `e`.
//! - **Leader**: wait until every member's `arrived` has reached `e`; store `gathered = e`
//!   (release) and unpark the other leaders; wait until every other leader's `gathered` has
//!   reached `e`; store `released = e` (release) and unpark its members. A leader alone in its
//!   group skips the gathering and the release; with one group there is no meeting.
//!
//! **Shortcut.** With at most [`POLL_LEADERS`] groups a member waits until its leader's
//! `released` *or every leader's* `gathered` has reached `e`: it need not wait for its
//! leader to be scheduled again after the meeting, which on an oversubscribed machine is a
//! whole hand-off of the core (measured on 2 × 2: the shortcut brings the barrier close to
//! dissemination; figures in `docs/results/2026-11-29-figures-behind-the-code.md`).
//! The extra polling is L − 1 lines from other groups per member, hence the bound. Either
//! word says that everyone arrived, and the wake-up argument is unchanged: a member parks
//! only while its leader's `released` has not reached `e`, and that store is followed by an
//! unpark of the member.
//!
//! **Why nobody leaves early.** A member leaves once it acquired `released ≥ e` from its
//! leader, a leader once it acquired `gathered ≥ e` from every other leader. A leader stores
//! `released = e` only after it saw every other leader's `gathered ≥ e` (and a member taking
//! the shortcut saw them itself), and a leader stores
//! `gathered = e` only after it saw every member's `arrived ≥ e`; every rank stores its own
//! word for `e` only in call `e`. So whoever leaves call `e` has seen, through a chain of
//! release stores and acquire loads, every rank's arrival at `e` — and everything each rank
//! wrote before arriving happens before everything anyone does after leaving.
//!
//! **Why a word can be rewritten for the next call.** The words carry no data, only epochs,
//! and a waiter for `e` accepts any value that reached `e`. A member can be at call `e + 1`
//! (and store `arrived = e + 1`) only after its leader released `e`, so a leader never waits
//! for a member's word of an older call; likewise a leader that stores `gathered = e + 1` has
//! left `e`, and a leader still waiting for its `gathered ≥ e` sees `e + 1` as reached.
//!
//! **Why no wake-up is lost.** Every wait is `sync::park::wait_until` on the waiting rank's
//! own parker (spin, yield, then park), with a condition that only loads the words with
//! acquire. Every store a rank may be waiting for is followed by `unpark` of that rank's
//! parker, whose `SeqCst` fence and load of the waiter count complete the event-count
//! protocol of the parker (`src/sync/README.md`): either the waiter's re-check under the parker's
//! lock sees the store, or the writer sees the waiter counted and notifies it.
//!
//! # Failure
//!
//! A wait gives up, with `Err` on that rank, when the run has failed (`Error::Aborted`), the
//! rank it waits for has returned from the run without storing the word
//! (`Error::PeerExited`), or the team's timeout passed since the call began
//! (`Error::Timeout`); the last two fail the run (`Comm::fail`), which wakes every rank, so
//! every other wait of this call gives up too, none hangs: whoever waits for the failing rank
//! (directly or through a leader) waits for a word that will never come, and sees the
//! failure instead. The condition is checked first, so a rank whose word did come passes.
//!
//! No buffers are lent, so nothing needs withdrawing. What a failing rank leaves behind are
//! words that reached at most the failing call `e`, each stored only by a rank that did arrive:
//! other ranks may still pass call `e` (correctly, when every rank did arrive), but no word
//! reaches `e + 1` for a call the failing rank never made. The run is failed, so every later
//! call fails as it enters (`Member::enter`) before it looks at the flags; a new run gets new flags with a
//! new communicator.
//!
//! # The call check
//!
//! A rank making another call (another barrier algorithm, another collective) never stores
//! these words, so the barrier's ranks would wait for it for ever; the one-hop call check
//! (`check::agree`: each rank's descriptor to rank r + 1) turns that into a mismatch on every
//! rank, as for `Barrier::Hierarchical`. Here it is split around the arrival: the dispatch
//! posts the descriptor (`check::agree_post`, an eager send), the rank stores its arrival, and
//! only then reads rank r − 1's descriptor and compares (`check`, `check::agree_take`), before
//! it waits for anyone. The check thus costs no wait of its own: a rank reads a descriptor
//! its neighbour posted before doing anything else. Storing the arrival before the comparison
//! lets no one out early: leaving needs *every* rank's arrival at this call's epoch, which
//! only ranks making this very call store, and between such ranks the check cannot fail.
//! A check with a round trip of its own would add a whole latency to every barrier.
//!
//! # Cost
//!
//! On the critical path: a member's line to its leader, the leader's `gathered` line to every
//! other leader (the only traffic between packages), and the `released` line back to the
//! members; 2 + (L − 1) line transfers per leader, one SeqCst fence per store. The dispatch's
//! one-hop call check (`Comm::barrier_with`) comes before and is not counted here.

use super::groups::group_of;
use crate::error::Result;
use crate::mailbox::Tag;
use crate::shm::{reached, Flag, Member};
use crate::sync::park::Started;
use crate::sync::{AtomicU64, CachePadded, Ordering};

/// The operation's name in errors.
const OP: &str = "barrier";

/// Up to this many groups, a member also polls every leader's `gathered` word besides its
/// own leader's `released`, and leaves as soon as either says that everyone arrived: one
/// hand-off less on the critical path (module docs, "Shortcut").
const POLL_LEADERS: usize = 4;

/// The barrier over `groups` (each in rank order, together every rank once; leader = first
/// rank of each), as call `tag.seq + 1` of `comm`'s flags (module docs, "Protocol"), running
/// `check` once this rank has arrived and before it waits for anyone.
pub(crate) fn barrier(
    comm: &Member,
    groups: &[Vec<usize>],
    tag: Tag,
    check: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let me = comm.rank();
    let call = Call {
        comm,
        flags: comm.shared().barrier.all(),
        epoch: tag.seq.wrapping_add(1),
        started: comm.wait_start(),
    };
    let mine = &call.flags[me];
    let (group, k) = group_of(groups, me);
    if k != 0 {
        let leader = group[0];
        mine.arrived.store(call.epoch, Ordering::Release);
        call.wake(1, |_| leader);
        check()?;
        let released = &call.flags[leader].released;
        if groups.len() > POLL_LEADERS {
            return call.wait(call.pending(1, |_| leader, |f| &f.released));
        }
        let mut gathered = call.pending(groups.len(), |i| groups[i][0], |f| &f.gathered);
        return call.wait(|| {
            if reached(released.load(Ordering::Acquire), call.epoch) {
                None
            } else {
                gathered()
            }
        });
    }
    check()?;
    call.wait(call.pending(group.len(), |i| group[i], |f| &f.arrived))?;
    if groups.len() > 1 {
        mine.gathered.store(call.epoch, Ordering::Release);
        call.wake(groups.len(), |i| groups[i][0]);
        call.wait(call.pending(groups.len(), |i| groups[i][0], |f| &f.gathered))?;
    }
    if group.len() > 1 {
        mine.released.store(call.epoch, Ordering::Release);
        call.wake(group.len(), |i| group[i]);
    }
    Ok(())
}

/// One rank's view of one call.
struct Call<'a> {
    comm: &'a Member,
    flags: &'a [CachePadded<Flag>],
    /// The call's epoch, `tag.seq + 1`.
    epoch: u64,
    /// When the call began to wait and the team's timeout: every wait of the call gives up at
    /// the same deadline.
    started: Started,
}

impl Call<'_> {
    /// Wakes the ranks `peer(0..count)` (this rank skipped) after this rank's last store:
    /// each `unpark` begins with the `SeqCst` fence that orders the store before its load of
    /// the waiter count (the parker's protocol, `src/sync/README.md`).
    fn wake(&self, count: usize, peer: impl Fn(usize) -> usize) {
        let me = self.comm.rank();
        let parkers = &self.comm.run().ranks.parkers;
        let members = &self.comm.shared().members;
        for i in 0..count {
            let q = peer(i);
            if q != me {
                parkers[members[q]].unpark();
            }
        }
    }

    /// The first of the ranks `peer(0..count)` (this rank skipped) whose `word` has not
    /// reached the call's epoch, `None` once there is none; each call resumes where the last
    /// stopped (the words only grow).
    fn pending<'s>(
        &'s self,
        count: usize,
        peer: impl Fn(usize) -> usize + 's,
        word: impl Fn(&Flag) -> &AtomicU64 + 's,
    ) -> impl FnMut() -> Option<usize> + 's {
        let me = self.comm.rank();
        let mut next = 0;
        move || {
            while next < count {
                let q = peer(next);
                if q != me && !reached(word(&self.flags[q]).load(Ordering::Acquire), self.epoch) {
                    return Some(q);
                }
                next += 1;
            }
            None
        }
    }

    /// Waits until `pending()` (which only loads words, with acquire) finds no rank to wait
    /// for; `Err` if the run failed, the rank it names returned from the run, or the timeout
    /// passed first (module docs, "Failure"): `Comm::wait_for`.
    fn wait(&self, pending: impl FnMut() -> Option<usize>) -> Result<()> {
        self.comm.wait_for(OP, &self.started, pending)
    }
}

#[cfg(all(test, loom))]
mod loom;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::barrier::{self, Schedule};
    use crate::collective::Collective;
    use crate::error::{Error, Result};
    use crate::shm::testing::spmd_with;
    use crate::shm::Member;
    use crate::transport::shm::ShmTransport;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// Groups of consecutive ranks of the given sizes, as compact pinning makes them.
    fn consecutive(sizes: &[usize]) -> Vec<Vec<usize>> {
        let mut next = 0;
        sizes
            .iter()
            .map(|&k| {
                next += k;
                (next - k..next).collect()
            })
            .collect()
    }

    /// `k` groups of `p` ranks dealt in turn (rank r in group r mod k), as spread pinning
    /// makes them.
    fn dealt(k: usize, p: usize) -> Vec<Vec<usize>> {
        (0..k).map(|g| (g..p).step_by(k).collect()).collect()
    }

    /// The groupings tried: regular and uneven groups, consecutive and dealt, one group, one
    /// rank per group, and more groups than `POLL_LEADERS`.
    fn groupings() -> Vec<Vec<Vec<usize>>> {
        let mut out: Vec<Vec<Vec<usize>>> = [
            &[2, 2][..],
            &[2, 1],
            &[3, 3],
            &[3, 2, 4],
            &[2, 2, 2, 1],
            &[5],
            &[1, 1, 1],
            &[2, 2, 2, 2, 2, 2],
            &[2, 2, 2, 2, 2, 2, 1],
        ]
        .iter()
        .map(|sizes| consecutive(sizes))
        .collect();
        for (k, p) in [(2, 4), (2, 7), (3, 9), (6, 12), (2, 6)] {
            out.push(dealt(k, p));
        }
        out
    }

    /// The barrier on the flags over `groups`, as the next barrier of `m`.
    fn flags(m: &Member, groups: &[Vec<usize>]) -> Result<()> {
        super::barrier(m, groups, m.next_tag(Collective::Barrier), || Ok(()))
    }

    /// Many barriers in a row, alternating with the ones over messages: after barrier k every
    /// rank reads at least p·(k + 1) increments of a counter each rank increments before each
    /// barrier; no barrier lets anyone out before everyone arrived.
    #[test]
    fn holds_everyone_until_all_arrived() {
        const ROUNDS: usize = 60;
        for groups in groupings() {
            let p = groups.iter().map(Vec::len).sum::<usize>();
            let count = AtomicUsize::new(0);
            let out = spmd_with(p, Duration::from_secs(60), |m| {
                for k in 0..ROUNDS {
                    count.fetch_add(1, Ordering::Relaxed);
                    let over = |s| {
                        let t = ShmTransport::coll(m, "barrier");
                        barrier::run(&t, s, m.next_tag(Collective::Barrier))
                    };
                    match k % 5 {
                        3 => over(Schedule::Dissemination)?,
                        4 => over(Schedule::Tree)?,
                        _ => flags(m, &groups)?,
                    }
                    let seen = count.load(Ordering::Relaxed);
                    assert!(seen >= p * (k + 1), "{groups:?}: barrier {k} saw {seen}");
                }
                Ok::<_, Error>(())
            })
            .unwrap();
            for (r, res) in out.into_iter().enumerate() {
                res.unwrap_or_else(|e| panic!("{groups:?}: rank {r}: {e}"));
            }
        }
    }

    /// A rank that returns without calling the barrier: every other rank returns `Err` (the
    /// leader of the leaver, the leaver's members, the other groups), long before the
    /// timeout; leaders and members alike are tried as the leaver.
    #[test]
    fn a_rank_that_leaves_fails_every_other() {
        let timeout = Duration::from_secs(30);
        for groups in [consecutive(&[2, 2]), dealt(2, 6)] {
            let p = groups.iter().map(Vec::len).sum::<usize>();
            for bad in 0..p {
                let start = Instant::now();
                let out = spmd_with(p, timeout, |m| {
                    // One good barrier first, so that the flags have moved.
                    flags(m, &groups)?;
                    if m.rank() == bad {
                        return Ok(());
                    }
                    flags(m, &groups)
                })
                .unwrap();
                assert!(
                    start.elapsed() < timeout / 2,
                    "{groups:?}, rank {bad} left: the others waited for the timeout"
                );
                for (r, res) in out.into_iter().enumerate() {
                    if r == bad {
                        assert!(res.is_ok());
                    } else {
                        let e = res.expect_err("a rank left: the barrier cannot pass");
                        assert!(
                            matches!(e.root_cause(), Error::PeerExited { .. }),
                            "{groups:?}, rank {bad} left, rank {r}: {e}"
                        );
                    }
                }
            }
        }
    }

    /// A member's wait for a leader that never comes ends with `Timeout` once the timeout
    /// passes.
    #[test]
    fn a_missing_leader_times_out() {
        let out = spmd_with(4, Duration::from_millis(200), |m| {
            if m.rank() == 0 {
                // Stay in the run (no PeerExited) past the others' timeout.
                std::thread::sleep(Duration::from_millis(600));
                return Ok(());
            }
            flags(m, &consecutive(&[2, 2]))
        })
        .unwrap();
        assert!(out[0].is_ok());
        for (r, res) in out.into_iter().enumerate().skip(1) {
            let e = res.expect_err("rank 0 never arrived");
            assert!(
                matches!(e.root_cause(), Error::Timeout { .. }),
                "rank {r}: {e}"
            );
        }
    }
}
