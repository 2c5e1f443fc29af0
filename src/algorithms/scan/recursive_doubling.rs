//! The recursive-doubling scan of Hillis and Steele ("Data parallel algorithms", CACM 29(12),
//! 1986), for any p: ⌈log₂ p⌉ rounds, each moving the whole vector.
//!
//! **Rounds.** In round k (distance d = 2ᵏ) rank r sends its *partial* — the combination of
//! the window x_{max(0, r−d+1)} ⊙ … ⊙ x_r — to r + d (if it exists) and receives the partial
//! of r − d (if it exists), which covers the window just below its own. It combines that on
//! the left (`Op::fold_left(incoming, acc)`), so its window doubles to start at
//! max(0, r − 2d + 1) and the operands stay in rank order. After the round with 2d ≥ p every
//! window starts at 0.
//!
//! **Partial and result.** As MPI implementations of the same idea do (e.g. the scan of
//! MPICH's `MPIR_Scan_intra_recursive_doubling`, which however pairs r with r XOR 2ᵏ), a rank
//! keeps apart what it sends (its window's partial) and its result:
//!
//! * inclusive scan: the result *is* the partial, so both live in `buf`; the partial sent in
//!   round k is a copy taken before the round's receive combines into `buf`;
//! * exclusive scan: the result x₀ ⊙ … ⊙ x_{r−1} lives in `buf` (rank 0 never receives, so
//!   its `buf` is unchanged) and the partial in a scratch vector. Rank r ≥ 1 receives its
//!   first operand in round 0 straight into `buf` (there is no identity to start from), and
//!   after every receive its partial is its result ⊙ x_r, recomputed from a copy of its
//!   input, so that the send of the next round never needs a snapshot.
//!
//! **No deadlock.** A rank's round k is one `sendrecv` (or a lone send or receive at the
//! ends); round k's messages wait only for round k − 1 of the sender, so by induction on k
//! every round completes. Every message is sent even when the vector is empty.

use crate::error::Result;
use crate::mailbox::{Elem, Tag};
use crate::op::Op;
use crate::transport::Transport;

/// Recursive-doubling scan of `buf` under `op`: inclusive, or exclusive if `exclusive`.
pub(super) fn recursive_doubling<Tr: Transport, T: Elem, O: Op<T>>(
    t: &Tr,
    buf: &mut [T],
    op: &O,
    exclusive: bool,
    tag: Tag,
) -> Result<()> {
    let (p, r) = (t.size(), t.rank());
    let mut combine = |acc: &mut [T], inc: &[T]| op.fold_left(inc, acc);
    if !exclusive {
        // The partial is the result: send a copy of it while combining into `buf`.
        let mut sent: Vec<T> = Vec::new();
        let mut d = 1;
        while d < p {
            let dest = (r + d < p).then_some(r + d);
            let src = r.checked_sub(d);
            match (dest, src) {
                (Some(q), Some(s)) => {
                    sent.clear();
                    crate::copy::extend(&mut sent, buf);
                    t.sendrecv_reduce(q, &sent, s, buf, tag, &mut combine)?;
                }
                (Some(q), None) => t.send(q, tag, buf)?,
                (None, Some(s)) => t.recv_reduce(s, tag, buf, &mut combine)?,
                (None, None) => {}
            }
            d *= 2;
        }
        return Ok(());
    }
    // Exclusive: `partial` is this rank's window, `buf` the result once something came in.
    let mine: Vec<T> = if r > 0 {
        crate::copy::to_vec(buf)
    } else {
        Vec::new()
    };
    let mut partial: Vec<T> = crate::copy::to_vec(buf);
    let mut d = 1;
    while d < p {
        let dest = (r + d < p).then_some(r + d);
        let src = r.checked_sub(d);
        match (dest, src) {
            // Round 0: the first operand replaces `buf` (x_{r−1}).
            (Some(q), Some(s)) if d == 1 => t.sendrecv(q, &partial, s, buf, tag)?,
            (None, Some(s)) if d == 1 => t.recv(s, tag, buf)?,
            (Some(q), Some(s)) => t.sendrecv_reduce(q, &partial, s, buf, tag, &mut combine)?,
            (None, Some(s)) => t.recv_reduce(s, tag, buf, &mut combine)?,
            (Some(q), None) => t.send(q, tag, &partial)?,
            (None, None) => {}
        }
        if src.is_some() && r + 2 * d < p {
            // The partial is sent again in a later round (to r + 2d < p): refresh it.
            crate::copy::copy_slice(&mut partial, buf);
            op.fold_right(&mut partial, &mine);
        }
        d *= 2;
    }
    Ok(())
}
