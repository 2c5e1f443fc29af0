//! Point-to-point checks of `process::mpi` that the collectives cannot reach (their call
//! check catches every mismatch before a message is sent). They need MPI processes: the unit
//! test below runs its own test binary under `mpirun -np 2` and, there, the checks.

use crate::collective::Collective;
use crate::error::Error;
use crate::mailbox::{Kind, Tag};
use crate::process::ProcessComm;
use crate::transport::Transport;

/// Process `r`'s element `i` of message `m`: distinct for every (r, m, i).
fn val(r: usize, m: usize, i: usize) -> u64 {
    ((r as u64) << 48) ^ ((m as u64) << 32) ^ i as u64
}

/// A tag of call `seq`.
fn tag(seq: u64) -> Tag {
    Tag {
        kind: Kind::Coll(Collective::Allreduce),
        variant: 3,
        seq,
        op: 0,
    }
}

/// `Some(why)` unless `r` is an [`Error::Mismatch`] whose message mentions every one of
/// `words`.
fn mismatch(r: crate::Result<()>, words: &[&str]) -> Option<String> {
    match r {
        Err(e @ Error::Mismatch { .. }) => {
            let s = e.to_string();
            words
                .iter()
                .find(|w| !s.contains(*w))
                .map(|w| format!("the mismatch does not mention {w:?}: {s}"))
        }
        other => Some(format!("expected a mismatch, got {other:?}")),
    }
}

impl ProcessComm {
    /// Runs the transport's own checks (module docs) on every process (collective: every
    /// process must call it) and returns each check's name and this process's problem with
    /// it, if any. Needs at least two processes for the mismatch cases (skipped on one).
    fn transport_checks(&self) -> Vec<(&'static str, Option<String>)> {
        let t = self.transport("transport check");
        let (r, p) = (self.rank, self.size);
        let (right, left) = ((r + 1) % p, (r + p - 1) % p);
        let mut out = Vec::new();

        // Exchanges around the ring at every size, zero included.
        let mut problem = None;
        for (m, n) in [0usize, 1, 7, 100_003].into_iter().enumerate() {
            let send: Vec<u64> = (0..n).map(|i| val(r, m, i)).collect();
            let mut got = vec![0u64; n];
            if let Err(e) = t.sendrecv(right, &send, left, &mut got, tag(m as u64)) {
                problem = problem.or(Some(format!("n = {n}: {e}")));
            } else if let Some(i) = (0..n).find(|&i| got[i] != val(left, m, i)) {
                problem = problem.or(Some(format!("n = {n}: element {i} is wrong")));
            }
        }
        out.push((
            "transport: sendrecv around the ring, 0 to 100 003 u64",
            problem,
        ));

        // Zero-sized elements travel as their count.
        let mut units = [(); 5];
        let r0 = t.sendrecv(right, &[(); 5], left, &mut units, tag(10));
        out.push((
            "transport: sendrecv of zero-sized elements",
            r0.err().map(|e| e.to_string()),
        ));

        // Many messages at once: to every process (itself included), two on the edge to the
        // right, receives in reverse order on odd ranks.
        let len = |from: usize, to: usize| 10 + 1000 * ((from + 2 * to) % 3);
        let mut problem = None;
        let outgoing: Vec<Vec<u64>> = (0..p)
            .map(|d| (0..len(r, d)).map(|i| val(r, d, i)).collect())
            .collect();
        let extra: Vec<u64> = (0..33).map(|i| val(r, p, i)).collect();
        let mut sends: Vec<(usize, &[u64])> = (0..p).map(|d| (d, &outgoing[d][..])).collect();
        sends.push((right, &extra[..]));
        let mut incoming: Vec<Vec<u64>> = (0..p).map(|s| vec![0; len(s, r)]).collect();
        let mut extra_in = vec![0u64; 33];
        {
            let mut recvs: Vec<(usize, &mut [u64])> = incoming
                .iter_mut()
                .enumerate()
                .map(|(s, b)| (s, &mut b[..]))
                .collect();
            if r % 2 == 1 {
                recvs.reverse();
            }
            recvs.push((left, &mut extra_in[..]));
            if let Err(e) = t.exchange_many(&sends, &mut recvs, tag(11)) {
                problem = Some(e.to_string());
            }
        }
        if problem.is_none() {
            let bad = (0..p).find(|&s| (0..len(s, r)).any(|i| incoming[s][i] != val(s, r, i)));
            if let Some(s) = bad {
                problem = Some(format!("the message from {s} is wrong"));
            } else if (0..33).any(|i| extra_in[i] != val(left, p, i)) {
                problem = Some("the second message from the left is wrong".to_string());
            }
        }
        out.push(("transport: exchange_many with every process", problem));

        // A blocking send to itself would wait for itself.
        let selfsend = t.send(r, tag(12), &[1u64]);
        out.push((
            "transport: a blocking send to itself is refused",
            (!matches!(selfsend, Err(Error::SelfDeadlock { .. })))
                .then(|| format!("got {selfsend:?}")),
        ));

        if p < 2 {
            return out;
        }
        // Another call's message (the sequence number differs): an error at the receiver,
        // and the edge stays in step for the next message.
        let mut problem = None;
        let mut buf = [0u64; 3];
        if r == 0 {
            t.send(1, tag(20), &[1u64, 2, 3]).ok();
            t.send(1, tag(21), &[4u64, 5, 6]).ok();
        } else if r == 1 {
            problem = mismatch(
                t.recv(0, tag(19), &mut buf),
                &["from rank 0", "collective call 20", "collective call 21"],
            );
            if let Err(e) = t.recv(0, tag(21), &mut buf) {
                problem = problem.or(Some(format!("the next message: {e}")));
            } else if buf != [4, 5, 6] {
                problem = problem.or(Some(format!("the next message is {buf:?}")));
            }
        }
        out.push((
            "transport: a message of another call is a mismatch",
            problem,
        ));

        // Another length: both sides of an exchange see it, neither hangs.
        let mut problem = None;
        if r < 2 {
            let peer = 1 - r;
            let n = 4 + r;
            let send = vec![7u64; n];
            let mut acc = vec![0u64; n];
            let mut add = |a: &mut [u64], b: &[u64]| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
            };
            let e = t.sendrecv_reduce(peer, &send, peer, &mut acc, tag(22), &mut add);
            let (mine, theirs) = (8 * n, 8 * (4 + peer));
            problem = mismatch(e, &[&format!("{mine} bytes"), &format!("{theirs} bytes")]);
            if acc.iter().any(|&x| x != 0) {
                problem = problem.or(Some("the mismatched message was combined".to_string()));
            }
        }
        out.push((
            "transport: a reducing exchange of another length is a mismatch on both sides",
            problem,
        ));

        // Zero-sized elements: the count is compared.
        let mut problem = None;
        if r == 0 {
            t.send(1, tag(23), &[(); 3]).ok();
        } else if r == 1 {
            problem = mismatch(
                t.recv(0, tag(23), &mut [(); 4]),
                &["4 zero-sized", "3 zero-sized"],
            );
        }
        out.push(("transport: a zero-sized count mismatch", problem));
        out
    }
}

mod tests {
    use crate::process::ProcessComm;
    use std::process::Command;

    /// Set in the environment of the processes that `mpirun` starts.
    const UNDER_MPIRUN: &str = "CORECOLL_TRANSPORT_CHECKS";

    /// Outside MPI, runs this very test in two processes under `mpirun`; there, the
    /// transport's checks, every problem a failure.
    #[test]
    fn transport_between_processes() {
        if std::env::var_os(UNDER_MPIRUN).is_some() {
            let universe = ::mpi::initialize().expect("MPI initialises once");
            let pc = ProcessComm::new(&universe.world()).expect("a communicator of processes");
            let problems: Vec<String> = pc
                .transport_checks()
                .into_iter()
                .filter_map(|(check, problem)| problem.map(|p| format!("{check}: {p}")))
                .collect();
            drop(pc);
            assert!(problems.is_empty(), "{problems:#?}");
            return;
        }
        let me = std::env::current_exe().expect("the test binary's path");
        let mut cmd = Command::new("mpirun");
        cmd.args(["-np", "2"])
            .arg(me)
            .args([
                "process::selftest::tests::transport_between_processes",
                "--exact",
                "--test-threads=1",
            ])
            .env(UNDER_MPIRUN, "1");
        // SAFETY: geteuid(2) takes no arguments, cannot fail and touches no memory of ours.
        if unsafe { libc::geteuid() } == 0 {
            cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        }
        let out = cmd
            .output()
            .expect("mpirun starts (the `mpi` feature needs Open MPI)");
        assert!(
            out.status.success(),
            "the transport's checks under mpirun failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // A renamed test would run nothing under mpirun and pass.
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("1 passed"),
            "the checks did not run under mpirun:\n{stdout}"
        );
    }
}
