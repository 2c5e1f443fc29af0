//! The shared-memory state of a team's ranks, and one rank's handle on it.
//!
//! [`Ranks`] lives as long as a team (parkers, the waiting policy, the timeout, where each rank
//! runs), [`RunState`] as long as one run (its first failure, who has returned), and
//! [`CommShared`] as long as one communicator (its members, mailboxes, the meeting place of
//! `split`, the `Board` of the single-copy collectives, the `Flags` of the barrier on shared
//! flags and the `Calls` of the short allreduce folded on slots). A rank reaches all of them through its [`Member`], which also numbers its
//! collective calls, waits with the team's deadline and keeps its scratch buffers.
//!
//! Every layer above (transport, schedules, hierarchies, the API) works through a `Member`;
//! nothing here knows a collective beyond the tag of its messages.
//!
//! How every wait on this state ends, and the board's protocol with its loom models:
//! `README.md` in this folder.

mod board;
pub(crate) mod calls;
mod flags;
#[cfg(all(test, loom))]
pub(crate) mod loom_world;
mod member;
mod run;
mod scratch;
mod shared;
pub(crate) mod slots;
#[cfg(all(test, not(loom)))]
pub(crate) mod testing;

pub(crate) use board::{fold_chunk, reached, Call, Session};
pub(crate) use flags::Flag;
pub(crate) use member::Member;
pub(crate) use run::{Ranks, RunState};
pub(crate) use shared::{CommShared, Context, SplitRound, SHADOWS};
pub(crate) use slots::{Slots, SLOT_BYTES};
