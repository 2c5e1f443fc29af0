//! `Comm::split`, as `MPI_Comm_split`.
//!
//! Each rank posts (color, key) on the parent's split board under the call's sequence
//! number; a barrier on the parent (tagged as a split, so a rank in another collective is a
//! mismatch) guarantees every vote is in; then each rank reads the votes, and the first member
//! of each color to look makes the new communicator's shared state, which the others pick up.

use super::Local;
use crate::algorithms;
use crate::error::{Error, Result};
use crate::mailbox::Kind;
use crate::shm::{CommShared, Member, SplitRound};
use std::sync::Arc;

impl Local {
    /// `Comm::split` among the threads of one process (`Comm` has checked the
    /// arguments).
    pub(crate) fn split(&self, color: Option<usize>, key: usize) -> Result<Option<Local>> {
        self.enter_call("split")?;
        let tag = self.next_tag(Kind::Split);
        let p = self.size();
        {
            let mut rounds = self.shared().splits.lock();
            let round = rounds.entry(tag.seq).or_insert_with(|| SplitRound {
                votes: vec![None; p],
                remaining: p,
                ..SplitRound::default()
            });
            round.votes[self.rank()] = Some((color, key));
        }
        algorithms::barrier::dissemination(&self.coll("split"), tag)?;
        let mut rounds = self.shared().splits.lock();
        let Some(round) = rounds.get_mut(&tag.seq) else {
            return Err(Error::InvalidArgument {
                rank: self.rank(),
                op: "split",
                what: "the split round vanished (internal error)".into(),
            });
        };
        let made = color.map(|c| {
            let mut group: Vec<(usize, usize)> = round
                .votes
                .iter()
                .enumerate()
                .filter_map(|(r, v)| match v {
                    Some((Some(vc), k)) if *vc == c => Some((*k, r)),
                    _ => None,
                })
                .collect();
            group.sort_unstable();
            let new_rank = group
                .iter()
                .position(|&(_, r)| r == self.rank())
                .expect("the caller voted for its own color");
            let shared = round
                .made
                .entry(c)
                .or_insert_with(|| {
                    let members = group
                        .iter()
                        .map(|&(_, r)| self.shared().members[r])
                        .collect();
                    Arc::new(CommShared::new(members))
                })
                .clone();
            (new_rank, shared)
        });
        round.remaining -= 1;
        if round.remaining == 0 {
            rounds.remove(&tag.seq);
        }
        drop(rounds);
        Ok(made.map(|(rank, shared)| {
            let member = Member::new(rank, shared, self.member().run_arc().clone());
            Local::new(member, self.settings.clone())
        }))
    }
}
