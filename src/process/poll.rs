//! Waits of a rank for other processes: polled, since nothing wakes a thread when a message
//! comes from another process (over MPI or through the node's rings), with the team's spin
//! budget, its timeout, failures of this process's run and other processes' failure notices.

use crate::error::{Error, Result};
use crate::process::bridge::Bridge;
use crate::sync::park::Started;
use crate::sync::{spin_hint, yield_now};

impl Bridge {
    /// Polls `done` until it holds — as the team's waits do, spinning first (the team's spin
    /// budget, `WaitPolicy`) and then yielding the core between polls, but never parking,
    /// since nothing wakes a thread when an MPI message arrives; an error (failing this
    /// process's run) if the run fails or the team's timeout passes first. Inside a task (a
    /// non-blocking send) the task suspends between polls instead (`task::poll_until`).
    pub(super) fn poll_until(
        &self,
        op: &'static str,
        peer: usize,
        mut done: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        let started = self.local.member().wait_start();
        if crate::sync::task::inside() {
            let mut out = None;
            crate::sync::task::poll_until(&mut || {
                if out.is_none() {
                    out = match done() {
                        Ok(false) => self.given_up(op, peer, &started).map(Err),
                        r => Some(r.map(drop)),
                    };
                }
                out.is_some()
            });
            return out.expect("polled until it ended");
        }
        let spins = self.local.run().ranks.policy.spins;
        let mut polls: u32 = 0;
        loop {
            if done()? {
                return Ok(());
            }
            polls = polls.wrapping_add(1);
            if polls < spins {
                spin_hint();
                if !polls.is_multiple_of(64) {
                    continue;
                }
            } else {
                yield_now();
            }
            if let Some(e) = self.given_up(op, peer, &started) {
                return Err(e);
            }
        }
    }

    /// Between two polls of a wait for `peer` begun at `started` (if timed): runs a relaying
    /// leader's relay (its own message may be among what it brings in), and returns the error
    /// that ends the wait, if any — the run failed, another process's failure notice, the
    /// team's timeout.
    pub(super) fn given_up(
        &self,
        op: &'static str,
        peer: usize,
        started: &Started,
    ) -> Option<Error> {
        crate::sync::idle::run();
        let run = self.local.run();
        if run.is_aborted() {
            if let Some(ch) = &self.channels {
                // Threads of other processes may be waiting for this one.
                ch.notices()
                    .notify(self.layout.processes(), self.layout.process());
            }
            return Some(Error::Aborted {
                rank: self.rank(),
                op,
                cause: Box::new(run.cause()),
            });
        }
        if let Some(process) = self.channels.as_ref().and_then(|ch| ch.notices().notice()) {
            return Some(self.local.fail(Error::ProcessFailed {
                rank: self.rank(),
                op,
                process,
            }));
        }
        started.expired().then(|| {
            self.local.fail(Error::Timeout {
                rank: self.rank(),
                peer,
                op,
                waited: started.elapsed(),
            })
        })
    }
}
