//! The `v` forms (gatherv, scatterv, allgatherv) of a `Comm` whose ranks span MPI processes:
//! blocks of per-rank counts at per-rank displacements, the counts agreed or checked first
//! ([module docs](super), "Counts of the `v` forms").

use super::common::{bytes, bytes_mut, packed, scaled, staging, B, V_FORM};
use crate::algorithms::gather as sched;
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{Elem, Kind};
use crate::process::leaders::check::Call;
use crate::process::Bridge;
use crate::select::{Allgather, Barrier, Broadcast, Gather, Scatter};
use std::mem::size_of;

/// A fingerprint of `counts` (FNV-1a over their words), for the check that every rank of an
/// allgatherv passes the same counts.
fn fingerprint(counts: &[usize]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in counts.iter().chain(std::iter::once(&counts.len())) {
        for b in (c as u64).to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

impl Bridge {
    /// Fails (this process's run) unless this rank's `buffer` of `len` elements has the
    /// root's count for it, `count`: the ranks of other processes learn the root's counts
    /// through [`Bridge::root_counts`], which the threads of one process do not need (their
    /// messages' lengths are checked as they arrive).
    fn check_own(&self, op: &'static str, buffer: &str, len: usize, count: usize) -> Result<()> {
        if len == count {
            return Ok(());
        }
        let what = format!("{buffer} holds {len} elements, but its count is {count}");
        Err(self.invalid(op, what))
    }

    /// The root's `counts` on every rank (a hybrid broadcast), for `gatherv` and `scatterv`.
    fn root_counts(&self, counts: &[usize], root: usize) -> Result<Vec<usize>> {
        let mut all = if self.rank() == root {
            counts.to_vec()
        } else {
            vec![0; self.size()]
        };
        self.broadcast(&mut all, root, Broadcast::Auto)?;
        Ok(all)
    }

    /// `Comm::gatherv` across processes ([module docs](super)).
    pub(crate) fn gatherv<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: usize,
    ) -> Result<()> {
        const OP: &str = "gatherv";
        let is_root = self.rank() == root;
        let cnt = self.root_counts(counts, root)?;
        self.check_own(OP, "send", send.len(), cnt[self.rank()])?;
        let call = Call::of::<T>(
            Kind::Coll(Collective::Gather),
            V_FORM | Gather::Linear.id(),
            0,
        )
        .at(root);
        let w = size_of::<T>();
        let displs = if is_root {
            scaled(displs, w)
        } else {
            Vec::new()
        };
        // SAFETY: `recv` receives only blocks of the ranks' `send`, at multiples of `w`.
        let recv = unsafe { bytes_mut(recv) };
        self.gatherv_bytes(bytes(send), recv, &scaled(&cnt, w), &displs, root, call)
    }

    /// [`Bridge::gatherv`] on the bytes of the blocks (`cnt`: the root's counts, on every
    /// rank; `displs` on the root).
    fn gatherv_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        cnt: &[usize],
        displs: &[usize],
        root: usize,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "gatherv";
        let is_root = self.rank() == root;
        let (q, o, t) = self.here();
        let (qr, lr) = self.layout.locate(root);
        let leader = self.is_leader();
        let local = &self.local;
        let lc = &cnt[o..o + t];
        let (ld, lsum) = packed(lc);
        let mut own = staging(if leader { lsum } else { 0 });
        let before = self.first_stage(OP, &call, || local.gatherv(send, &mut own, lc, &ld, 0));
        let sums = self.process_sums(cnt);
        let (sd, total) = packed(&sums);
        let mut all = staging(if leader && q == qr { total } else { 0 });
        self.across(OP, call, before, |pc| {
            pc.agreed(
                OP,
                Kind::Coll(Collective::Gather),
                V_FORM,
                total,
                |tr, tag| sched::gatherv(tr, &own, &mut all, &sums, &sd, qr, tag),
            )
        })?;
        if q != qr {
            return local.barrier_with(Barrier::Auto);
        }
        // The packed blocks, in rank order, to the root, which places them.
        let place = |from: &[B], recv: &mut [B]| {
            let (pd, _) = packed(cnt);
            for i in 0..cnt.len() {
                crate::copy::copy_slice(
                    &mut recv[displs[i]..displs[i] + cnt[i]],
                    &from[pd[i]..pd[i] + cnt[i]],
                );
            }
        };
        if lr == 0 {
            if is_root {
                place(&all, recv);
            }
            return local.barrier_with(Barrier::Auto);
        }
        let mut mine = staging(if is_root { total } else { 0 });
        self.leader_to(lr, &all, &mut mine)?;
        if is_root {
            place(&mine, recv);
        }
        Ok(())
    }

    /// `Comm::scatterv` across processes ([module docs](super)).
    pub(crate) fn scatterv<T: Elem>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<()> {
        const OP: &str = "scatterv";
        let is_root = self.rank() == root;
        let cnt = self.root_counts(counts, root)?;
        self.check_own(OP, "recv", recv.len(), cnt[self.rank()])?;
        let call = Call::of::<T>(
            Kind::Coll(Collective::Scatter),
            V_FORM | Scatter::Linear.id(),
            0,
        )
        .at(root);
        let w = size_of::<T>();
        let displs = if is_root {
            scaled(displs, w)
        } else {
            Vec::new()
        };
        // SAFETY: `recv` receives only a block of the root's `send`, at multiples of `w`.
        let recv = unsafe { bytes_mut(recv) };
        self.scatterv_bytes(bytes(send), &scaled(&cnt, w), &displs, recv, root, call)
    }

    /// [`Bridge::scatterv`] on the bytes of the blocks (`cnt`: the root's counts, on every
    /// rank; `displs` on the root).
    fn scatterv_bytes(
        &self,
        send: &[B],
        cnt: &[usize],
        displs: &[usize],
        recv: &mut [B],
        root: usize,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "scatterv";
        let is_root = self.rank() == root;
        let (q, o, t) = self.here();
        let (qr, lr) = self.layout.locate(root);
        let leader = self.is_leader();
        let local = &self.local;
        let sums = self.process_sums(cnt);
        let (sd, total) = packed(&sums);
        // The root packs its blocks in rank order.
        let mut all: Vec<B> = Vec::new();
        if is_root {
            all.reserve(total);
            for i in 0..cnt.len() {
                crate::copy::extend(&mut all, &send[displs[i]..displs[i] + cnt[i]]);
            }
        }
        // The threads' agreement goes through every thread, so that a thread's wrong length
        // fails the process before its leader's check.
        let before = self.first_stage(OP, &call, || {
            if q == qr && lr != 0 {
                let mut at_leader = staging(if leader { total } else { 0 });
                let r = self.to_leader(lr, &all, &mut at_leader);
                if leader {
                    all = at_leader;
                }
                r
            } else {
                Ok(())
            }
        });
        let lc = &cnt[o..o + t];
        let (ld, lsum) = packed(lc);
        let mut own = staging(if leader { lsum } else { 0 });
        self.across(OP, call, before, |pc| {
            let src: &[B] = if q == qr { &all } else { &[] };
            pc.agreed(
                OP,
                Kind::Coll(Collective::Scatter),
                V_FORM,
                total,
                |tr, tag| sched::scatterv(tr, src, &sums, &sd, &mut own, qr, tag),
            )
        })?;
        local.scatterv(&own, lc, &ld, recv, 0)
    }

    /// `Comm::allgatherv` across processes ([module docs](super)).
    pub(crate) fn allgatherv<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let fp = fingerprint(counts);
        let total: usize = counts.iter().sum();
        let call = Call::of::<T>(
            Kind::Coll(Collective::Allgather),
            V_FORM | Allgather::Ring.id(),
            total,
        )
        .in_blocks(fp as usize);
        let w = size_of::<T>();
        // SAFETY: `recv` receives only blocks of the ranks' `send`, at multiples of `w`.
        let recv = unsafe { bytes_mut(recv) };
        let (counts, displs) = (scaled(counts, w), scaled(displs, w));
        self.allgatherv_bytes(bytes(send), recv, &counts, &displs, call)
    }

    /// [`Bridge::allgatherv`] on the bytes of the blocks.
    fn allgatherv_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        counts: &[usize],
        displs: &[usize],
        call: Call,
    ) -> Result<()> {
        const OP: &str = "allgatherv";
        let (_, o, t) = self.here();
        let leader = self.is_leader();
        let local = &self.local;
        let lc = &counts[o..o + t];
        let (ld, lsum) = packed(lc);
        let mut own = staging(if leader { lsum } else { 0 });
        // The threads' agreement compares the counts' fingerprint (the call's block).
        let before = self.first_stage(OP, &call, || local.gatherv(send, &mut own, lc, &ld, 0));
        let sums = self.process_sums(counts);
        let (sd, total) = packed(&sums);
        let mut all = staging(total);
        self.across(OP, call, before, |pc| {
            pc.agreed(
                OP,
                Kind::Coll(Collective::Allgather),
                V_FORM,
                total,
                |tr, tag| sched::allgatherv(tr, &own, &mut all, &sums, &sd, tag),
            )
        })?;
        local.broadcast_with(&mut all, 0, Broadcast::Auto)?;
        let (pd, _) = packed(counts);
        for i in 0..counts.len() {
            crate::copy::copy_slice(
                &mut recv[displs[i]..displs[i] + counts[i]],
                &all[pd[i]..pd[i] + counts[i]],
            );
        }
        Ok(())
    }
}
