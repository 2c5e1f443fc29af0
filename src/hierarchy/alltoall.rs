//! The hierarchical all-to-all and all-to-allv "RingLeaders" (after the Open MPI RFC for a
//! HAN all-to-all, `/work/shared/papers/003_9fbaded9e0bef889.txt`): followers hand their send
//! blocks to their group's leader, the leaders exchange in linear-shift rounds, `f` exchanges
//! at a time, and scatter what they received to their followers after each round.
//!
//! **Groups.** The plan's top leaders and the ranks they cover ([`Plan::covered`] of the
//! unordered plan, the same on every rank without a message): group g's ranks, in rank
//! order, its lowest rank leading. Groups may be of unequal sizes and need not be intervals.
//!
//! **Schedule**, on the whole communicator's collective transport under the call's tag, for
//! L groups G₀ … G_{L−1}, rank r in G_j:
//!
//! 1. *Gather.* A follower sends its p send blocks, packed in destination order, to its
//!    leader (the `v` form sends its 2p send and receive counts first); the leader then
//!    holds the blocks of all its ranks, N_f·P blocks (N_f ranks in its group, P ranks in
//!    all): its followers' in its gathered buffer, its own where they are, in its send buffer.
//! 2. *Own group* (shift 0). The leader sends each of its followers b the blocks a → b for a
//!    in G_j, in rank order, and copies its own (a → leader) into its receive blocks.
//! 3. *Rounds.* For shift s = 1 … L − 1, in batches of f shifts: leader j packs for leader
//!    n = j + s the blocks a → x (a ∈ G_j, x ∈ G_n) ordered by x then a, and receives from
//!    leader m = j − s (mod L) the blocks x → b ordered by b then x, all f exchanges of the
//!    batch in flight at once ([`ShmTransport::exchange_many`]); then it sends each of its
//!    ranks b its slice of each received message — contiguous thanks to the b-major order —
//!    and each rank copies it into its receive blocks in source-rank order (directly into
//!    the receive buffer when the source group's blocks lie there back to back).
//!
//! **Memory at a leader**: the gathered buffer (N_f·P blocks, less the leader's own P, which
//! it reads from its send buffer) plus f send and f receive staging buffers of N_f·(P/N_l)
//! blocks each, ≈ N_f·P·(1 + 2f/N_l) blocks for N_l equal groups (the RFC's figure). A
//! follower needs no buffer when its blocks and the source groups are contiguous, otherwise
//! one of a source group's size (and one of its p send blocks when they are not packed).
//!
//! **Buffers.** Every buffer whose size scales with the message — the gathered buffer, the
//! own group's staging, each batch's f send and f receive staging buffers (consecutive pieces
//! of one scratch buffer each), a follower's packing and unpacking buffers — comes from the
//! communicator's scratch pool (`Comm::scratch`), which keeps them from call to call. Fresh
//! allocations of MiB sizes are fresh `mmap`s, which every call would page-fault in again
//! (≈ 1000 faults per call at 1 MiB per rank on 4 ranks, and a call 45-50 times slower than
//! the flat direct all-to-all); reused ones are faulted in once.
//!
//! **Fan-out.** `Fanout::Exchanges(f)` for f ≥ 1 (0 counts as 1; f ≥ L − 1 means all shifts
//! at once); `Fanout::Auto` is min(L − 1, 4): a few exchanges in flight hide a late partner
//! without the staging of all L − 1.
//!
//! **Checks.** The caller's call check (one hop: block length, element type, algorithm and
//! the fan-out) suffices because every rank's result depends on every rank: a rank's last
//! message comes from its leader after the leader's exchanges with every other leader, each
//! of which has gathered from all its ranks, which sent only after their own checks passed.
//! The `v` form checks counts at the leaders before any data moves: every leader compares its
//! ranks' counts among themselves, and every leader sends every other leader its ranks' send
//! counts for that leader's ranks, which it compares with their receive counts. A leader that
//! finds a difference fails the run before its data exchange, which every other leader
//! needs, so every rank returns an error.

use super::Plan;
use crate::error::{Error, Result};
use crate::mailbox::{Elem, Tag};
use crate::select::Fanout;
use crate::shm::Member;
use crate::transport::shm::ShmTransport;
use crate::transport::Transport;
use std::mem::MaybeUninit;
use std::ops::Range;

/// `Fanout::Auto`'s exchanges in flight per round, at most.
const AUTO_FANOUT: usize = 4;

/// The exchanges in flight per round for `fanout` among `leaders` leaders (at least 1, at
/// most L − 1 unless L = 1).
pub(crate) fn exchanges(fanout: Fanout, leaders: usize) -> usize {
    let most = leaders.saturating_sub(1).max(1);
    match fanout {
        Fanout::Auto => AUTO_FANOUT.min(most),
        Fanout::Exchanges(f) => f.clamp(1, most),
    }
}

/// One rank's blocks: counts and displacements per peer rank.
#[derive(Clone, Copy)]
pub(crate) struct Layout<'a> {
    /// Elements per peer.
    pub counts: &'a [usize],
    /// Offset of each peer's block.
    pub displs: &'a [usize],
    /// Whether the counts are the caller's own (`alltoallv`): they are then sent to the
    /// leader and checked there; otherwise every count is the common block length.
    pub v: bool,
}

impl Layout<'_> {
    fn block(&self, i: usize) -> Range<usize> {
        self.displs[i]..self.displs[i] + self.counts[i]
    }
}

/// Views initialised elements as possibly uninitialised ones (same layout).
fn uninit<T>(s: &[T]) -> &[MaybeUninit<T>] {
    // SAFETY: `MaybeUninit<T>` has the layout of `T`, and every `T` is a valid
    // `MaybeUninit<T>`; the view is shared, so nothing can be de-initialised through it.
    unsafe { &*(s as *const [T] as *const [MaybeUninit<T>]) }
}

/// The RingLeaders all-to-all(v) of `send` into `recv` on `comm` (layouts checked by the
/// caller, the call check passed, at least two groups), with `f` exchanges in flight.
pub(crate) fn ring_leaders<T: Elem>(
    comm: &Member,
    plan: &Plan,
    t: &ShmTransport<'_>,
    send: (&[T], Layout<'_>),
    recv: (&mut [T], Layout<'_>),
    f: usize,
    tag: Tag,
) -> Result<()> {
    let (send, sl) = send;
    let (recv, rl) = recv;
    let send = uninit(send);
    // SAFETY: same layout as above; through this view the schedule writes only copies of
    // elements that other ranks' send buffers held (initialised `T`s) and never an
    // uninitialised value, so `recv` holds valid `T`s whenever the view is dropped, on
    // every path.
    let recv = unsafe { &mut *(recv as *mut [T] as *mut [MaybeUninit<T>]) };
    let groups = plan.covered();
    let me = comm.rank();
    let gi = groups
        .iter()
        .position(|g| g.contains(&me))
        .expect("every rank is covered");
    let ctx = Ctx {
        comm,
        t,
        groups,
        gi,
        f,
        tag,
    };
    if groups[gi][0] == me {
        ctx.leader(send, sl, recv, rl)
    } else {
        ctx.follower(send, sl, recv, rl)
    }
}

/// A received message to scatter: its source group, its elements, and each local rank's
/// slice bounds (`cuts[b] .. cuts[b + 1]`).
type Part<'m, T> = (usize, &'m [MaybeUninit<T>], &'m [usize]);

/// What both roles need.
struct Ctx<'c, 'a> {
    comm: &'c Member,
    t: &'c ShmTransport<'a>,
    groups: &'c [Vec<usize>],
    /// This rank's group.
    gi: usize,
    /// Exchanges in flight per round.
    f: usize,
    tag: Tag,
}

/// The group a leader receives from at shift `s` (s = 0: its own).
fn source_group(gi: usize, s: usize, l: usize) -> usize {
    (gi + l - s) % l
}

impl Ctx<'_, '_> {
    fn l(&self) -> usize {
        self.groups.len()
    }

    /// A follower: hand the counts (v form) and the packed send blocks to the leader, then
    /// receive from it, per shift, the blocks from the shift's source group.
    fn follower<T: Elem>(
        &self,
        send: &[MaybeUninit<T>],
        sl: Layout<'_>,
        recv: &mut [MaybeUninit<T>],
        rl: Layout<'_>,
    ) -> Result<()> {
        let leader = self.groups[self.gi][0];
        if sl.v {
            let mut counts = sl.counts.to_vec();
            counts.extend_from_slice(rl.counts);
            self.t.send(leader, self.tag, &counts)?;
        }
        let p = self.comm.size();
        let packed = (0..p).all(|j| sl.displs[j] == sl.counts[..j].iter().sum::<usize>());
        if packed {
            self.t
                .send(leader, self.tag, &send[..sl.counts.iter().sum::<usize>()])?;
        } else {
            let mut buf = self.comm.scratch::<T>(sl.counts.iter().sum());
            let mut at = 0;
            for j in 0..p {
                let block = &send[sl.block(j)];
                crate::copy::copy_slice(&mut buf[at..at + block.len()], block);
                at += block.len();
            }
            self.t.send(leader, self.tag, &buf)?;
        }
        for s in 0..self.l() {
            let src = &self.groups[source_group(self.gi, s, self.l())];
            let total: usize = src.iter().map(|&x| rl.counts[x]).sum();
            // Back to back in the receive buffer, in source-rank order?
            let direct = src
                .windows(2)
                .all(|w| w[1] == w[0] + 1 && rl.displs[w[1]] == rl.displs[w[0]] + rl.counts[w[0]]);
            if direct {
                let at = rl.displs[src[0]];
                self.t.recv(leader, self.tag, &mut recv[at..at + total])?;
            } else {
                let mut scratch = self.comm.scratch::<T>(total);
                self.t.recv(leader, self.tag, &mut scratch)?;
                let mut at = 0;
                for &x in src {
                    crate::copy::copy_slice(
                        &mut recv[rl.block(x)],
                        &scratch[at..at + rl.counts[x]],
                    );
                    at += rl.counts[x];
                }
            }
        }
        Ok(())
    }

    /// A leader: gather its ranks' counts and blocks, check the counts (v form), serve its own
    /// group, then run the linear-shift rounds, scattering after each batch.
    fn leader<T: Elem>(
        &self,
        send: &[MaybeUninit<T>],
        sl: Layout<'_>,
        recv: &mut [MaybeUninit<T>],
        rl: Layout<'_>,
    ) -> Result<()> {
        let (t, tag, p, l) = (self.t, self.tag, self.comm.size(), self.l());
        let mine = &self.groups[self.gi];
        let nf = mine.len();
        // Per local rank a: its send and receive counts for every rank.
        let mut sc: Vec<Vec<usize>> = vec![sl.counts.to_vec()];
        let mut rc: Vec<Vec<usize>> = vec![rl.counts.to_vec()];
        if sl.v {
            let mut both: Vec<Vec<usize>> = vec![vec![0; 2 * p]; nf - 1];
            let mut recvs: Vec<(usize, &mut [usize])> = mine[1..]
                .iter()
                .zip(both.iter_mut())
                .map(|(&b, c)| (b, &mut c[..]))
                .collect();
            t.exchange_many::<usize>(&[], &mut recvs, tag)?;
            for c in both {
                sc.push(crate::copy::to_vec(&c[..p]));
                rc.push(crate::copy::to_vec(&c[p..]));
            }
        } else {
            sc.resize(nf, sl.counts.to_vec());
            rc.resize(nf, rl.counts.to_vec());
        }
        // Offsets of block a → x in the gathered buffer: soff[a][x] .. soff[a][x + 1].
        let mut soff: Vec<Vec<usize>> = Vec::with_capacity(nf);
        let mut total = 0;
        for counts in &sc {
            let mut o = Vec::with_capacity(p + 1);
            for &c in counts {
                o.push(total);
                total += c;
            }
            o.push(total);
            soff.push(o);
        }
        // The gathered buffer: the followers' blocks as they send them (the leader's own stay
        // in its send buffer).
        let base = soff[0][p];
        let mut gathered = self.comm.scratch::<T>(total - base);
        {
            let mut rest = &mut gathered[..];
            let mut recvs = Vec::with_capacity(nf - 1);
            for (k, &b) in mine.iter().enumerate().skip(1) {
                let (head, tail) = rest.split_at_mut(soff[k][p] - soff[k][0]);
                recvs.push((b, head));
                rest = tail;
            }
            t.exchange_many::<MaybeUninit<T>>(&[], &mut recvs, tag)?;
        }
        if sl.v {
            self.check_counts(&sc, &rc)?;
        }
        let gathered = &gathered[..];
        // Block a → x of local rank a (a = 0: the leader's own, in its send buffer).
        let block = |a: usize, x: usize| -> &[MaybeUninit<T>] {
            if a == 0 {
                &send[sl.block(x)]
            } else {
                &gathered[soff[a][x] - base..soff[a][x + 1] - base]
            }
        };
        // Elements leader j sends group n: a → x for a in G_j, x in G_n.
        let out_len = |n: usize| -> usize {
            self.groups[n]
                .iter()
                .map(|&x| sc.iter().map(|row| row[x]).sum::<usize>())
                .sum()
        };
        // Elements leader j receives from group m: x → b for x in G_m, b in G_j.
        let inc_len = |m: usize| -> usize {
            rc.iter()
                .map(|row| self.groups[m].iter().map(|&x| row[x]).sum::<usize>())
                .sum()
        };
        // Packs the blocks a → x for x in `xs` into `stage` (ordered by x, then a) and returns
        // the end of each x's blocks.
        let pack = |xs: &[usize], stage: &mut [MaybeUninit<T>]| -> Vec<usize> {
            let mut at = 0;
            let mut ends = Vec::with_capacity(xs.len());
            for &x in xs {
                for a in 0..nf {
                    let b = block(a, x);
                    crate::copy::copy_slice(&mut stage[at..at + b.len()], b);
                    at += b.len();
                }
                ends.push(at);
            }
            ends
        };
        // Own group: rank b gets a → b for every a of the group, in rank order; the leader
        // copies its own straight from the blocks, and stages only its followers'.
        for (a, &x) in mine.iter().enumerate() {
            crate::copy::copy_slice(&mut recv[rl.block(x)], block(a, self.comm.rank()));
        }
        {
            let own: usize = sc.iter().map(|row| row[mine[0]]).sum();
            let mut stage = self.comm.scratch::<T>(out_len(self.gi) - own);
            let ends = pack(&mine[1..], &mut stage);
            let sends: Vec<(usize, &[MaybeUninit<T>])> = mine[1..]
                .iter()
                .zip(&ends)
                .scan(0, |from, (&b, &end)| {
                    let slice = &stage[*from..end];
                    *from = end;
                    Some((b, slice))
                })
                .collect();
            t.exchange_many(&sends, &mut [], tag)?;
        }
        // The rounds, f shifts at a time: the batch's f send and f receive staging buffers
        // are consecutive pieces of one scratch buffer each.
        let shifts: Vec<usize> = (1..l).collect();
        for batch in shifts.chunks(self.f) {
            let dests: Vec<usize> = batch.iter().map(|&s| (self.gi + s) % l).collect();
            let srcs: Vec<usize> = batch.iter().map(|&s| source_group(self.gi, s, l)).collect();
            let out_lens: Vec<usize> = dests.iter().map(|&n| out_len(n)).collect();
            let inc_lens: Vec<usize> = srcs.iter().map(|&m| inc_len(m)).collect();
            let mut out = self.comm.scratch::<T>(out_lens.iter().sum());
            let mut inc = self.comm.scratch::<T>(inc_lens.iter().sum());
            let mut sends = Vec::with_capacity(batch.len());
            let mut rest = &mut out[..];
            for (&n, &len) in dests.iter().zip(&out_lens) {
                let (stage, tail) = rest.split_at_mut(len);
                pack(&self.groups[n], stage);
                sends.push((self.groups[n][0], &*stage));
                rest = tail;
            }
            let mut recvs: Vec<(usize, &mut [MaybeUninit<T>])> = Vec::with_capacity(batch.len());
            let mut rest = &mut inc[..];
            for (&m, &len) in srcs.iter().zip(&inc_lens) {
                let (buf, tail) = rest.split_at_mut(len);
                recvs.push((self.groups[m][0], buf));
                rest = tail;
            }
            t.exchange_many(&sends, &mut recvs, tag)?;
            drop(recvs);
            let cuts: Vec<Vec<usize>> = srcs
                .iter()
                .map(|&m| {
                    let mut c = vec![0];
                    for row in &rc {
                        let len: usize = self.groups[m].iter().map(|&x| row[x]).sum();
                        c.push(c.last().copied().unwrap_or(0) + len);
                    }
                    c
                })
                .collect();
            let mut parts: Vec<Part<'_, T>> = Vec::with_capacity(batch.len());
            let mut rest = &inc[..];
            for ((&m, &len), c) in srcs.iter().zip(&inc_lens).zip(&cuts) {
                let (data, tail) = rest.split_at(len);
                parts.push((m, data, &c[..]));
                rest = tail;
            }
            self.scatter(&parts, recv, rl)?;
        }
        Ok(())
    }

    /// Sends each follower b its slice `cuts[b] .. cuts[b + 1]` of every part (source group,
    /// message, cuts), all at once and in part order on each edge, and copies the leader's
    /// own slices into its receive blocks in source-rank order.
    fn scatter<T: Elem>(
        &self,
        parts: &[Part<'_, T>],
        recv: &mut [MaybeUninit<T>],
        rl: Layout<'_>,
    ) -> Result<()> {
        let mine = &self.groups[self.gi];
        let mut sends = Vec::with_capacity(parts.len() * mine.len());
        for &(m, data, cuts) in parts {
            let mut at = cuts[0];
            for &x in &self.groups[m] {
                crate::copy::copy_slice(&mut recv[rl.block(x)], &data[at..at + rl.counts[x]]);
                at += rl.counts[x];
            }
            for (b, &rank) in mine.iter().enumerate().skip(1) {
                sends.push((rank, &data[cuts[b]..cuts[b + 1]]));
            }
        }
        self.t.exchange_many(&sends, &mut [], self.tag)
    }

    /// The `v` form's count check at a leader: its ranks' counts among themselves, then with
    /// every other leader at once (each sends each the send counts of its ranks for the
    /// other's ranks, compared there with their receive counts). A difference fails the run.
    fn check_counts(&self, sc: &[Vec<usize>], rc: &[Vec<usize>]) -> Result<()> {
        let (l, mine) = (self.l(), &self.groups[self.gi]);
        let differ = |a: usize, b: usize, sent: usize, want: usize| {
            self.comm.fail(Error::Mismatch {
                rank: self.comm.rank(),
                peer: a,
                op: "alltoallv",
                expected: format!("rank {b} expects {want} elements from rank {a}"),
                found: format!("rank {a} sends {sent} elements to rank {b}"),
            })
        };
        for (ai, &a) in mine.iter().enumerate() {
            for (bi, &b) in mine.iter().enumerate() {
                if sc[ai][b] != rc[bi][a] {
                    return Err(differ(a, b, sc[ai][b], rc[bi][a]));
                }
            }
        }
        let outs: Vec<Vec<usize>> = (1..l)
            .map(|s| {
                let n = &self.groups[(self.gi + s) % l];
                n.iter()
                    .flat_map(|&x| sc.iter().map(move |row| row[x]))
                    .collect()
            })
            .collect();
        let mut ins: Vec<Vec<usize>> = (1..l)
            .map(|s| vec![0; self.groups[source_group(self.gi, s, l)].len() * mine.len()])
            .collect();
        let sends: Vec<(usize, &[usize])> = (1..l)
            .zip(&outs)
            .map(|(s, o)| (self.groups[(self.gi + s) % l][0], &o[..]))
            .collect();
        let mut recvs: Vec<(usize, &mut [usize])> = (1..l)
            .zip(ins.iter_mut())
            .map(|(s, i)| (self.groups[source_group(self.gi, s, l)][0], &mut i[..]))
            .collect();
        self.t.exchange_many(&sends, &mut recvs, self.tag)?;
        for (s, got) in (1..l).zip(&ins) {
            let src = &self.groups[source_group(self.gi, s, l)];
            let mut it = got.iter();
            for (bi, &b) in mine.iter().enumerate() {
                for &x in src {
                    let sent = *it.next().expect("one count per pair");
                    if sent != rc[bi][x] {
                        return Err(differ(x, b, sent, rc[bi][x]));
                    }
                }
            }
        }
        Ok(())
    }
}
