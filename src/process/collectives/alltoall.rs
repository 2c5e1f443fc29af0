//! Alltoall and alltoallv of a `Comm` whose ranks span MPI processes, in the three stages of
//! `process::world` (the leader-based composition of Open MPI's HAN and of MPICH's
//! node-aware alltoall, kept simple: correctness first):
//! 1. within each process, a gather of every thread's whole send buffer to the leader;
//! 2. between the leaders, one exchange in which process Q receives, packed, what this
//!    process's threads send to Q's threads (thread-major: for each thread i of the sender,
//!    its blocks for Q's ranks in rank order), and the leader rearranges what it received
//!    into each of its threads' receive buffers in rank order;
//! 3. within each process, a scatter(v) of those buffers.
//!
//! **Algorithms.** The caller's choice runs between the processes, where it can: with equal
//! thread counts in every process the process blocks are equal (t²·m elements) and
//! `Pairwise` or `Bruck` run as between threads; `Auto` (and `RingLeaders`, whose leaders are
//! this composition) take MPICH's rule there, Bruck for blocks of at most 256 bytes on at
//! least 8 processes, the pairwise exchange otherwise. Unequal thread counts run the pairwise
//! alltoallv. `Direct` needs shared memory and is refused on every rank. The alltoallv runs
//! the pairwise alltoallv between processes for `Auto`, `Pairwise` and `RingLeaders`, and
//! refuses `Bruck` and `Direct` as `Comm::alltoallv_with` does.
//!
//! **Alltoallv's counts.** Every rank's send and receive counts go to its leader with the data
//! (a gather of 2p words per thread), so the leader knows its threads' rows and columns of the
//! count matrix. A count that differs between sender and receiver in different processes would
//! make an MPI message of an unexpected length, which one process cannot report to the others
//! once the schedule has started; so the leaders first exchange the counts (an alltoallv of
//! words after the call's check), each compares what it is sent with what its threads expect,
//! and a second check between the processes carries every process's verdict (and that no
//! message is above MPI's size limit) before any data moves: a wrong count is an error on every
//! rank. That costs a second check and a small exchange; the fixed-size form needs neither
//! (its lengths are in the one check).

use crate::algorithms::alltoall as sched;
use crate::algorithms::alltoall;
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Kind};
use crate::process::bridge::{Bridge, FirstStage};
use crate::process::collectives::gather::common::{
    bytes, bytes_mut, packed, scaled, staging, B, V_FORM,
};
use crate::process::leaders::check::Call;
use crate::select::{Alltoall, Decision, Flat, Gather, Scatter};
use std::mem::size_of;

impl Bridge {
    /// The refusal of `alg` between processes.
    fn alltoall_refused(&self, op: &'static str, alg: Alltoall, instead: &str) -> Error {
        Error::Unsupported {
            rank: self.rank(),
            op,
            what: format!(
                "the {} algorithm is not available on a team that spans MPI processes; use \
                 {instead}",
                alg.name()
            ),
        }
    }

    /// `Comm::alltoall_with` across processes (module docs).
    pub(crate) fn alltoall<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        algorithm: Alltoall,
    ) -> Result<()> {
        let p = self.size();
        let call = Call::of::<T>(
            Kind::Coll(Collective::Alltoall),
            algorithm.id(),
            send.len() / p,
        );
        // SAFETY: `recv` receives only blocks of the ranks' `send`.
        let recv = unsafe { bytes_mut(recv) };
        self.alltoall_bytes(bytes(send), recv, algorithm, call)
    }

    /// [`Bridge::alltoall`] on the bytes of the blocks.
    fn alltoall_bytes(
        &self,
        send: &[B],
        recv: &mut [B],
        algorithm: Alltoall,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "alltoall";
        let p = self.size();
        let m = send.len() / p;
        let (_, _, t) = self.here();
        let leader = self.is_leader();
        let local = &self.local;
        let mut all = staging(if leader { t * p * m } else { 0 });
        let before = self.first_stage(OP, &call, || {
            local.gather_with(send, &mut all, 0, Gather::Auto)
        });
        let mut back = staging(if leader { t * p * m } else { 0 });
        self.across(OP, call, before, |pc| {
            let l = &self.layout;
            let np = l.processes();
            let uniform = (0..np).all(|q| l.threads(q) == t);
            let schedule = match algorithm.flat() {
                Some(Flat::Direct) => {
                    return Err(self.alltoall_refused(OP, algorithm, "auto, pairwise or bruck"))
                }
                Some(Flat::Schedule(s)) => s,
                None if np >= 8 && t * t * m <= 256 => alltoall::Schedule::Bruck,
                None => alltoall::Schedule::Pairwise,
            };
            let alg = Flat::Schedule(schedule).alg();
            // What goes to process Q: for each thread i, its blocks for Q's ranks.
            let sc: Vec<usize> = (0..np).map(|q| t * l.threads(q) * m).collect();
            let (sd, stot) = packed(&sc);
            let mut s = Vec::with_capacity(stot);
            for q in 0..np {
                for i in 0..t {
                    let start = (i * p + l.offset(q)) * m;
                    crate::copy::extend(&mut s, &all[start..start + l.threads(q) * m]);
                }
            }
            let rc: Vec<usize> = (0..np).map(|q| l.threads(q) * t * m).collect();
            let (rd, rtot) = packed(&rc);
            let mut r = staging(rtot);
            let bytes = self.layout.most_threads() * p * m;
            pc.agreed(
                OP,
                Kind::Coll(Collective::Alltoall),
                alg.id(),
                bytes,
                |tr, tag| match alg {
                    _ if !uniform => sched::alltoallv(tr, (&s, &sc, &sd), (&mut r, &rc, &rd), tag),
                    _ => sched::run(tr, &s, &mut r, schedule, tag),
                },
            )?;
            // From Q: for each of its threads i', its blocks for this process's threads j.
            for (q, &start) in rd.iter().enumerate() {
                for i in 0..l.threads(q) {
                    for j in 0..t {
                        let from = start + (i * t + j) * m;
                        let to = (j * p + l.offset(q) + i) * m;
                        crate::copy::copy_slice(&mut back[to..to + m], &r[from..from + m]);
                    }
                }
            }
            Ok(())
        })?;
        local.scatter_with(&back, recv, 0, Scatter::Auto)
    }

    /// `Comm::alltoallv_with` across processes (module docs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alltoallv<T: Elem>(
        &self,
        send: &[T],
        sc: &[usize],
        sd: &[usize],
        recv: &mut [T],
        rc: &[usize],
        rd: &[usize],
        algorithm: Alltoall,
    ) -> Result<()> {
        let call = Call::of::<T>(Kind::Coll(Collective::Alltoall), V_FORM | algorithm.id(), 0);
        let w = size_of::<T>();
        let (sc, sd, rc, rd) = (scaled(sc, w), scaled(sd, w), scaled(rc, w), scaled(rd, w));
        // SAFETY: `recv` receives only blocks of the ranks' `send`, at multiples of `w`.
        let recv = unsafe { bytes_mut(recv) };
        self.alltoallv_bytes(
            bytes(send),
            (&sc, &sd),
            recv,
            (&rc, &rd),
            w,
            algorithm,
            call,
        )
    }

    /// [`Bridge::alltoallv`] on the bytes of the blocks (counts and displacements in bytes,
    /// `w` bytes per element, for the error messages).
    #[allow(clippy::too_many_arguments)]
    fn alltoallv_bytes(
        &self,
        send: &[B],
        (sc, sd): (&[usize], &[usize]),
        recv: &mut [B],
        (rc, rd): (&[usize], &[usize]),
        w: usize,
        algorithm: Alltoall,
        call: Call,
    ) -> Result<()> {
        const OP: &str = "alltoallv";
        let p = self.size();
        let (_, o, t) = self.here();
        let leader = self.is_leader();
        let local = &self.local;
        let l = &*self.layout;
        let np = l.processes();

        // Stage 1: the counts (sc then rc, 2p words per thread) and the packed send blocks.
        let mut mine = Vec::with_capacity(2 * p);
        mine.extend_from_slice(sc);
        mine.extend_from_slice(rc);
        let mut cm = vec![0usize; if leader { 2 * p * t } else { 0 }];
        let counted = self.first_stage(OP, &call, || {
            local.gather_with(&mine, &mut cm, 0, Gather::Auto)
        });
        let send_of = |i: usize, r: usize| cm[i * 2 * p + r];
        let expects = |j: usize, r: usize| cm[j * 2 * p + p + r];
        let mut ps = Vec::with_capacity(sc.iter().sum());
        for j in 0..p {
            crate::copy::extend(&mut ps, &send[sd[j]..sd[j] + sc[j]]);
        }
        let tc: Vec<usize> = if leader {
            (0..t)
                .map(|i| (0..p).map(|r| send_of(i, r)).sum())
                .collect()
        } else {
            Vec::new()
        };
        let (td, tsum) = packed(&tc);
        let mut own = staging(tsum);
        let before = counted.and_then(|| local.gatherv(&ps, &mut own, &tc, &td, 0));

        // Stage 2a: the leaders exchange the counts: xc[r·t + j] is what rank r sends to this
        // process's thread j.
        let mut xc = vec![0usize; if leader { p * t } else { 0 }];
        self.across(OP, call, before, |pc| {
            if matches!(algorithm, Alltoall::Bruck | Alltoall::Direct) {
                return Err(self.alltoall_refused(OP, algorithm, "auto or pairwise"));
            }
            let mut s = Vec::with_capacity(p * t);
            for q in 0..np {
                for i in 0..t {
                    s.extend((0..l.threads(q)).map(|j| send_of(i, l.offset(q) + j)));
                }
            }
            let cnt: Vec<usize> = (0..np).map(|q| t * l.threads(q)).collect();
            let (cd, _) = packed(&cnt);
            let rcnt: Vec<usize> = (0..np).map(|q| l.threads(q) * t).collect();
            let (rdd, _) = packed(&rcnt);
            let bytes = self.layout.most_threads() * p * size_of::<usize>();
            pc.agreed(
                OP,
                Kind::Coll(Collective::Alltoall),
                V_FORM,
                bytes,
                |tr, tag| sched::alltoallv(tr, (&s, &cnt, &cd), (&mut xc, &rcnt, &rdd), tag),
            )
        })?;

        // Every leader's verdict on its threads' counts, and on MPI's message limit.
        let mut verdict = Ok(());
        if leader {
            let wrong = (0..p)
                .flat_map(|r| (0..t).map(move |j| (r, j)))
                .find(|&(r, j)| xc[r * t + j] != expects(j, r));
            if let Some((r, j)) = wrong {
                verdict = Err(self.invalid(
                    OP,
                    format!(
                        "rank {r} sends {} elements to rank {}, which expects {}",
                        xc[r * t + j] / w.max(1),
                        o + j,
                        expects(j, r) / w.max(1)
                    ),
                ));
            } else {
                let out = |q: usize| -> usize {
                    let ranks = l.offset(q)..l.offset(q) + l.threads(q);
                    (0..t)
                        .map(|i| ranks.clone().map(|r| send_of(i, r)).sum::<usize>())
                        .sum()
                };
                let inc = |q: usize| -> usize {
                    let ranks = l.offset(q)..l.offset(q) + l.threads(q);
                    ranks
                        .map(|r| xc[r * t..(r + 1) * t].iter().sum::<usize>())
                        .sum()
                };
                let limit = i32::MAX as usize;
                if let Some(q) = (0..np).find(|&q| out(q) > limit || inc(q) > limit) {
                    verdict = Err(self.fail(Error::Unsupported {
                        rank: self.rank(),
                        op: OP,
                        what: format!(
                            "the exchange with MPI process {q} is above MPI's message limit \
                             of {} bytes",
                            i32::MAX
                        ),
                    }));
                }
            }
        }

        // Stage 2b: the data; `back` holds every thread's received blocks, packed in rank
        // order, thread after thread.
        let rt: Vec<usize> = if leader {
            (0..t)
                .map(|j| (0..p).map(|r| xc[r * t + j]).sum())
                .collect()
        } else {
            Vec::new()
        };
        let (bd, btot) = packed(&rt);
        let mut back = staging(btot);
        self.across(OP, call, FirstStage::agreed(verdict), |pc| {
            // Where thread i's block for rank r starts in `own`.
            let starts: Vec<Vec<usize>> = (0..t)
                .map(|i| {
                    let (d, _) = packed(&(0..p).map(|r| send_of(i, r)).collect::<Vec<_>>());
                    d
                })
                .collect();
            let mut scq = Vec::with_capacity(np);
            let mut s = Vec::with_capacity(tsum);
            for q in 0..np {
                let (first, end) = (l.offset(q), l.offset(q) + l.threads(q));
                let mark = s.len();
                for i in 0..t {
                    let n: usize = (first..end).map(|r| send_of(i, r)).sum();
                    let at = td[i] + starts[i][first];
                    crate::copy::extend(&mut s, &own[at..at + n]);
                }
                scq.push(s.len() - mark);
            }
            let (sdq, _) = packed(&scq);
            let rcq: Vec<usize> = (0..np)
                .map(|q| {
                    let ranks = l.offset(q)..l.offset(q) + l.threads(q);
                    ranks
                        .map(|r| xc[r * t..(r + 1) * t].iter().sum::<usize>())
                        .sum()
                })
                .collect();
            let (rdq, rtot) = packed(&rcq);
            let mut r = staging(rtot);
            // Every message was checked against the limit in the verdict.
            pc.agreed(
                OP,
                Kind::Coll(Collective::Alltoall),
                V_FORM,
                0,
                |tr, tag| sched::alltoallv(tr, (&s, &scq, &sdq), (&mut r, &rcq, &rdq), tag),
            )?;
            // Ranks arrive in increasing order (process by process, thread by thread), so
            // each of this process's threads fills its part of `back` from the front.
            let mut cursor = bd.clone();
            let mut at = 0;
            for rank in 0..p {
                for (j, c) in cursor.iter_mut().enumerate() {
                    let n = xc[rank * t + j];
                    crate::copy::copy_slice(&mut back[*c..*c + n], &r[at..at + n]);
                    *c += n;
                    at += n;
                }
            }
            debug_assert_eq!(at, rtot);
            Ok(())
        })?;

        // Stage 3: each thread's blocks, then placed at its displacements.
        let (pr, rsum) = packed(rc);
        let mut got = staging(rsum);
        local.scatterv(&back, &rt, &bd, &mut got, 0)?;
        for r in 0..p {
            crate::copy::copy_slice(&mut recv[rd[r]..rd[r] + rc[r]], &got[pr[r]..pr[r] + rc[r]]);
        }
        Ok(())
    }
}
