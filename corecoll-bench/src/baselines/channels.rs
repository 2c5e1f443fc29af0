//! The `channels` baseline: a ring allreduce over crossbeam channels, as one would write it
//! with message passing between threads and no shared buffers. The vector is cut into p pieces
//! (`split`); rank r sends to rank r + 1 and receives from rank r − 1 (mod p). In p − 1
//! reduce-scatter steps each piece travels once round the ring, every rank folding its own
//! part into it, so that rank r ends with piece r + 1 complete; in p − 1 allgather steps the
//! complete pieces travel round again and every rank copies them into its buffer.
//!
//! Each message is a `Vec<T>` owned by the channel while in flight. A rank copies its own
//! piece into a vector at the first step and afterwards forwards the vector it received (with
//! its part folded in, or after copying it out); the vector of the last step is kept for the
//! next call's first message, so that once the vectors have grown to the largest piece a call
//! allocates nothing.
//!
//! Piece j is folded in ring order j, j + 1, …, j − 1, not rank order: the op must be
//! commutative, and a float sum differs in rounding from the rank-order sum (within the error
//! bound of any order). Every rank copies each complete piece from the one rank that folded
//! it, so the results are the same on every rank.
//!
//! The channels are unbounded, yet hold few messages: a rank sends its step-s message only
//! after receiving its step-(s − 1) one, so no rank runs more than p steps ahead of another.
//! Each kernel owns the only ends of its two channels, so a rank that fails drops them and
//! its neighbours' next send or receive fails instead of waiting for good.

use super::{needs_commutative, split};
use crate::cell::{check_input, CellSpec};
use crate::domain::Call;
use crate::elem::Elem;
use crate::measure::{measure, Kernel, Measured, Pool, Timing};
use corecoll::op::Op;
use corecoll::Collective;
use corecoll::Team;
use crossbeam_channel::{Receiver, Sender};
use std::any::Any;
use std::sync::Mutex;

/// Whether `channels` has a version of `c`: the allreduce.
pub fn applies(c: Call) -> bool {
    c == Call::plain(Collective::Allreduce)
}

/// Runs `channels` for `spec` on `team`.
pub fn run<T: Elem, O: Op<T> + Copy + Send + Sync + 'static>(
    team: &Team,
    timing: &Timing,
    spec: &CellSpec,
    op: O,
) -> Result<Measured, String> {
    let spec = *spec;
    if !op.is_commutative() {
        return Err(needs_commutative("channels"));
    }
    // Channel r carries rank r's messages to rank r + 1 (mod p); each rank takes its ends in
    // its setup.
    let mut to_right = Vec::with_capacity(spec.p);
    let mut from_left = Vec::with_capacity(spec.p);
    for _ in 0..spec.p {
        let (s, r) = crossbeam_channel::unbounded::<Vec<T>>();
        to_right.push(Mutex::new(Some(s)));
        from_left.push(Mutex::new(Some(r)));
    }
    from_left.rotate_right(1);
    measure(team, timing, true, |comm| {
        let r = comm.rank();
        Ok(Box::new(RingKernel {
            spec,
            rank: r,
            op,
            to_right: take(&to_right[r])?,
            from_left: take(&from_left[r])?,
            spare: Vec::new(),
            buf: Pool::new(spec.count, spec.cache, spec.p, move |i| {
                T::timing_value(spec.op, r, i)
            }),
        }) as Box<dyn Kernel + '_>)
    })
}

/// Takes a channel end out of its slot (once: the kernel owns it from then on).
fn take<E>(slot: &Mutex<Option<E>>) -> Result<E, String> {
    slot.lock()
        .map_err(|_| "a rank panicked taking its channel end".to_string())?
        .take()
        .ok_or_else(|| "a channel end was taken twice".to_string())
}

/// The `channels` kernel of one rank.
struct RingKernel<T, O> {
    /// The cell.
    spec: CellSpec,
    /// This rank.
    rank: usize,
    /// The op.
    op: O,
    /// To rank + 1 (mod p).
    to_right: Sender<Vec<T>>,
    /// From rank − 1 (mod p).
    from_left: Receiver<Vec<T>>,
    /// The vector of the next call's first message.
    spare: Vec<T>,
    /// The allreduce's buffers.
    buf: Pool<T>,
}

impl<T: Elem, O: Op<T>> RingKernel<T, O> {
    /// One allreduce on the current buffer.
    fn exec(&mut self) -> Result<(), String> {
        let (p, r, n) = (self.spec.p, self.rank, self.spec.count);
        if p == 1 {
            return Ok(());
        }
        let buf = self.buf.current();
        let piece = |j: usize| split::<T>(n, p, j % p);
        let send = |m: Vec<T>| {
            self.to_right
                .send(m)
                .map_err(|_| format!("rank {}'s right neighbour has gone", r))
        };
        let recv = || {
            self.from_left
                .recv()
                .map_err(|_| format!("rank {}'s left neighbour has gone", r))
        };
        let mut msg = std::mem::take(&mut self.spare);
        msg.clear();
        msg.extend_from_slice(&buf[piece(r)]);
        // Reduce-scatter: at step s, piece r − s − 1 arrives and gets this rank's part.
        for s in 0..p - 1 {
            send(msg)?;
            msg = recv()?;
            let j = piece(r + p - s - 1);
            if msg.len() != j.len() {
                return Err(format!("rank {r}: a piece of the wrong length arrived"));
            }
            self.op.fold_right(&mut msg, &buf[j]);
        }
        buf[piece(r + 1)].copy_from_slice(&msg);
        // Allgather: at step t, complete piece r − t arrives.
        for t in 0..p - 1 {
            send(msg)?;
            msg = recv()?;
            let j = piece(r + p - t);
            if msg.len() != j.len() {
                return Err(format!("rank {r}: a piece of the wrong length arrived"));
            }
            buf[j].copy_from_slice(&msg);
        }
        self.spare = msg;
        Ok(())
    }
}

impl<T: Elem, O: Op<T>> Kernel for RingKernel<T, O> {
    fn touch(&mut self) -> Result<(), String> {
        self.buf.touch();
        Ok(())
    }

    fn call(&mut self) -> Result<(), String> {
        self.buf.next_buffer();
        self.exec()
    }

    fn check(&mut self) -> Result<Option<Box<dyn Any + Send>>, String> {
        let input = check_input::<T>(&self.spec, self.rank);
        self.buf.current().copy_from_slice(&input);
        self.exec()?;
        Ok(Some(Box::new(self.buf.current().to_vec())))
    }
}
