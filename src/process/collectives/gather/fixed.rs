//! Gather, scatter and allgather of a `Comm` whose ranks span MPI processes, one block of the
//! same length per rank; the three stages of each are in the [module docs](super).

use super::common::{bytes, bytes_mut, staging, B, V_FORM};
use crate::algorithms::gather as sched;
use crate::algorithms::gather::Allgathering;
use crate::collective::Collective;
use crate::error::Result;
use crate::mailbox::{Elem, Kind};
use crate::process::leaders::check::Call;
use crate::process::leaders::comm::shared_memory_only;
use crate::process::Bridge;
use crate::select::{Allgather, Barrier, Broadcast, Decision, Flat, Gather, Scatter};

impl Bridge {
    /// `Comm::gather_with` across processes ([module docs](super)).
    pub(crate) fn gather<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        root: usize,
        algorithm: Gather,
    ) -> Result<()> {
        let call =
            Call::of::<T>(Kind::Coll(Collective::Gather), algorithm.id(), send.len()).at(root);
        // SAFETY: `recv` receives only blocks gathered from the ranks' `send`.
        let recv = unsafe { bytes_mut(recv) };
        self.gather_bytes(bytes(send), recv, root, algorithm, call)
    }

    /// [`Bridge::gather`] on the bytes of the blocks.
    fn gather_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        root: usize,
        algorithm: Gather,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "gather";
        let (p, m) = (self.size(), send.len());
        let is_root = self.rank() == root;
        let (q, _, t) = self.here();
        let (qr, lr) = self.layout.locate(root);
        let leader = self.is_leader();
        let local = &self.local;
        let mut own = staging(if leader { t * m } else { 0 });
        // A shared-memory choice is refused between the processes, below; stage 1 does not
        // run it first.
        let refused = algorithm.needs_shared_memory();
        let before = self.first_stage(OP, &call, || {
            if refused {
                Ok(())
            } else {
                local.gather_with(send, &mut own, 0, algorithm)
            }
        });
        let mut whole = staging(if leader && q == qr && lr != 0 {
            p * m
        } else {
            0
        });
        self.across(OP, call, before, |pc| {
            if refused {
                return Err(shared_memory_only(
                    self.rank(),
                    OP,
                    algorithm.name(),
                    "auto, linear or binomial",
                ));
            }
            let (counts, displs) = self.process_blocks(m);
            let dst: &mut [B] = match (q == qr, lr == 0) {
                (false, _) => &mut [],
                (true, true) => &mut *recv,
                (true, false) => &mut whole,
            };
            pc.agreed(
                OP,
                Kind::Coll(Collective::Gather),
                V_FORM,
                p * m,
                |tr, tag| sched::gatherv(tr, &own, dst, &counts, &displs, qr, tag),
            )
        })?;
        if q == qr && lr != 0 {
            let into: &mut [B] = if is_root { recv } else { &mut [] };
            self.leader_to(lr, &whole, into)
        } else {
            local.barrier_with(Barrier::Auto)
        }
    }

    /// `Comm::scatter_with` across processes ([module docs](super)).
    pub(crate) fn scatter<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        root: usize,
        algorithm: Scatter,
    ) -> Result<()> {
        let call =
            Call::of::<T>(Kind::Coll(Collective::Scatter), algorithm.id(), recv.len()).at(root);
        // SAFETY: `recv` receives only a block of the root's `send`.
        let recv = unsafe { bytes_mut(recv) };
        self.scatter_bytes(bytes(send), recv, root, algorithm, call)
    }

    /// [`Bridge::scatter`] on the bytes of the blocks.
    fn scatter_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        root: usize,
        algorithm: Scatter,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "scatter";
        let (p, m) = (self.size(), recv.len());
        let is_root = self.rank() == root;
        let (q, _, t) = self.here();
        let (qr, lr) = self.layout.locate(root);
        let leader = self.is_leader();
        let local = &self.local;
        let mut whole = staging(if leader && q == qr && lr != 0 {
            p * m
        } else {
            0
        });
        let before = self.first_stage(OP, &call, || {
            if q == qr && lr != 0 {
                let data = if is_root { send } else { &[] };
                self.to_leader(lr, data, &mut whole)
            } else {
                Ok(())
            }
        });
        let mut own = staging(if leader { t * m } else { 0 });
        self.across(OP, call, before, |pc| {
            if algorithm.needs_shared_memory() {
                return Err(shared_memory_only(
                    self.rank(),
                    OP,
                    algorithm.name(),
                    "auto, linear or binomial",
                ));
            }
            let (counts, displs) = self.process_blocks(m);
            let src: &[B] = match (q == qr, lr == 0) {
                (false, _) => &[],
                (true, true) => send,
                (true, false) => &whole,
            };
            pc.agreed(
                OP,
                Kind::Coll(Collective::Scatter),
                V_FORM,
                p * m,
                |tr, tag| sched::scatterv(tr, src, &counts, &displs, &mut own, qr, tag),
            )
        })?;
        local.scatter_with(&own, recv, 0, algorithm)
    }

    /// `Comm::allgather_with` across processes ([module docs](super)).
    pub(crate) fn allgather<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        algorithm: Allgather,
    ) -> Result<()> {
        let call = Call::of::<T>(
            Kind::Coll(Collective::Allgather),
            algorithm.id(),
            send.len(),
        );
        // SAFETY: `recv` receives only blocks of the ranks' `send`.
        let recv = unsafe { bytes_mut(recv) };
        self.allgather_bytes(bytes(send), recv, algorithm, call)
    }

    /// [`Bridge::allgather`] on the bytes of the blocks.
    fn allgather_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        algorithm: Allgather,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "allgather";
        let (p, m) = (self.size(), send.len());
        let (_, _, t) = self.here();
        let leader = self.is_leader();
        let local = &self.local;
        let mut own = staging(if leader { t * m } else { 0 });
        let before = self.first_stage(OP, &call, || {
            local.gather_with(send, &mut own, 0, Gather::Auto)
        });
        let l = &self.layout;
        let uniform = (0..l.processes()).all(|q| l.threads(q) == t);
        let on_node = uniform && matches!(algorithm.flat(), None | Some(Flat::Direct));
        self.across(OP, call, before, |pc| {
            let np = l.processes();
            let bytes = p * m;
            if pc.node().is_some() && on_node {
                return pc.node_allgather(&own, recv);
            }
            let schedule = match algorithm.flat() {
                Some(Flat::Direct) => {
                    return Err(shared_memory_only(
                        self.rank(),
                        OP,
                        algorithm.name(),
                        "auto, ring, recursive-doubling or bruck",
                    ))
                }
                Some(Flat::Schedule(s)) => s,
                None if bytes >= 80 << 10 => Allgathering::Ring,
                None if np.is_power_of_two() => Allgathering::RecursiveDoubling,
                None => Allgathering::Bruck,
            };
            let alg = Flat::Schedule(schedule).alg();
            if !uniform {
                let (counts, displs) = self.process_blocks(m);
                return pc.agreed(
                    OP,
                    Kind::Coll(Collective::Allgather),
                    V_FORM,
                    bytes,
                    |tr, tag| sched::allgatherv(tr, &own, recv, &counts, &displs, tag),
                );
            }
            pc.agreed(
                OP,
                Kind::Coll(Collective::Allgather),
                alg.id(),
                bytes,
                |tr, tag| sched::run_allgather(tr, &own, recv, schedule, tag),
            )
        })?;
        self.note_node(on_node);
        local.broadcast_with(recv, 0, Broadcast::Auto)
    }
}
