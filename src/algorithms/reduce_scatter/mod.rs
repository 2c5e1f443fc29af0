//! Reduce-scatter schedules (`MPI_Reduce_scatter_block`): every rank passes p blocks of n
//! elements, and rank i receives block i of the element-wise reduction
//! x₀ ⊙ x₁ ⊙ … ⊙ x_{p−1}, in rank order.
//!
//! * [`ring`](mod@ring): p − 1 steps, each passing one partially reduced block to the right neighbour
//!   (the reduce-scatter half of the ring allreduce, Patarasuk & Yuan 2009); for a
//!   non-commutative op a partial that wraps from rank p − 1 to rank 0 travels as two, so
//!   that the owner can combine them in rank order;
//! * [`recursive_halving`](mod@recursive_halving): ⌊log₂ p⌋ rounds exchanging halves of the remaining blocks with
//!   partner id xor 2ᵏ (Thakur, Rabenseifner and Gropp 2005), on a bit-reversed layout of
//!   the blocks (Träff 2005) so that the halving leaves each block at its owner, with
//!   Rabenseifner's fold for p not a power of two;
//! * [`direct`](mod@direct) (shared memory only): each rank folds its block of all p inputs straight
//!   into its own output, reading the other ranks' buffers in place.
//!
//! Every schedule keeps the lower ranks' operand on the left (`Op::fold_left` /
//! `fold_right`), so any associative op is computed exactly; each module says in which
//! association (which matters for floating point). Every message of a schedule is sent even
//! when it is empty (n = 0), so that a rank whose n differs from the others' meets a length
//! mismatch rather than a missing message (the call check in `comm::reduce_scatter` normally
//! reports it before).
//!
//! **Ending together.** Each rank's last act is combining its own block, after which no
//! peer needs anything from it: a rank whose op panics there (or whose last receive fails)
//! would leave the others returning `Ok`. So the message-passing schedules end with a
//! dissemination barrier ([`close`]), which a rank passes only once every rank has finished
//! its part; `Direct` gets the same from the board's phase 2.

mod direct;
mod recursive_halving;
mod ring;

pub(crate) use direct::direct;
pub(crate) use recursive_halving::recursive_halving;
pub(crate) use ring::ring;

use crate::algorithms::barrier;
use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// The reduce-scatter schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// Around the ring ([`ring`](mod@ring)).
    Ring,
    /// Recursive halving ([`recursive_halving`](mod@recursive_halving)).
    RecursiveHalving,
}

/// Runs reduce-scatter `schedule`.
pub(crate) fn run<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    send: &[T],
    recv: &mut [T],
    op: &O,
    schedule: Schedule,
    tag: Tag,
) -> Result<()> {
    match schedule {
        Schedule::Ring => ring(t, send, recv, op, tag),
        Schedule::RecursiveHalving => recursive_halving(t, send, recv, op, tag),
    }
}

/// The tag variant of the closing barrier (the schedules' variants are algorithm ids, far
/// below it).
const CLOSING: u8 = 0xff;

/// The closing barrier of the message-passing schedules (module docs, "Ending together").
fn close<Tr: Transport>(t: &Tr, tag: Tag) -> Result<()> {
    barrier::dissemination(t, tag.with_variant(CLOSING))
}
