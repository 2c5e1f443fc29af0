//! Probes on a communicator whose ranks are the threads of several MPI processes: what the
//! next message a receive would take is, without taking it (`hybrid::p2p` for the paths).

use super::bridge::Bridge;
use super::p2p::{Link, Place};
use crate::error::Result;
use crate::mailbox::Elem;
use crate::transport::mpi::Stage;
use crate::transport::shm::{Found, Want};

impl Bridge {
    /// Reports the first message `want` accepts without receiving it, waiting for one if
    /// `block`: from this process, as its threads' probe does; from another (or any), by
    /// moving MPI's next matching message aside and reporting it from there.
    pub(crate) fn probe<T: Elem>(
        &self,
        op: &'static str,
        want: Want,
        block: bool,
    ) -> Result<Option<Found>> {
        if let Some(Place::Here(i)) = want.src.map(|s| self.place(s)) {
            let local = Want {
                src: Some(i),
                ..want
            };
            let f = self.local.probe::<T>(op, local, block)?;
            return Ok(f.map(|f| Found {
                src: self.world(f.src),
                ..f
            }));
        }
        if want.src.is_none() && self.layout.processes() == 1 {
            return self.local.probe::<T>(op, want, block);
        }
        let link = self.link();
        let mut found = None;
        let mut look = || -> Result<bool> {
            found = self.probe_once::<T>(&link, want, op)?;
            Ok(found.is_some() || !block)
        };
        if block {
            self.poll_until(op, want.src.unwrap_or(self.rank()), look)?;
        } else {
            look()?;
        }
        Ok(found)
    }

    /// One look for [`Bridge::probe`].
    fn probe_once<T: Elem>(
        &self,
        link: &Link<'_>,
        want: Want,
        op: &'static str,
    ) -> Result<Option<Found>> {
        if want.src.is_none() {
            let local = Want { src: None, ..want };
            if let Some(f) = self.local.probe::<T>(op, local, false)? {
                return Ok(Some(Found {
                    src: self.world(f.src),
                    ..f
                }));
            }
        }
        let ch = match link {
            Link::Direct(ch) => ch,
            Link::Relay(relay) => {
                let inbox = relay.inbox(self.local.rank());
                let Some(a) = inbox.iter().find(|a| want.takes(a.src, a.tag)) else {
                    return Ok(None);
                };
                self.check::<T>((a.src, a.tag, a.typ, a.count), None, op)?;
                let (src, tag, count) = (a.src, a.tag, a.count);
                return Ok(Some(Found { src, tag, count }));
            }
        };
        let mut stage = self.stages.recv();
        let stage: *mut Stage = &mut **stage;
        loop {
            let seen = {
                let aside = self.aside.borrow();
                aside
                    .iter()
                    .find(|a| want.takes(a.src, a.tag))
                    .map(|a| (a.src, a.tag, a.typ, a.count))
            };
            if let Some((src, tag, typ, count)) = seen {
                self.check::<T>((src, tag, typ, count), None, op)?;
                return Ok(Some(Found { src, tag, count }));
            }
            // SAFETY: the staging buffer is this rank's, borrowed for this call and touched
            // only through `stage`.
            let Some(a) = (unsafe { ch.poll(self.local.rank(), self.mpi_source(want), stage) })
            else {
                return Ok(None);
            };
            self.set_aside(ch, a, stage, op)?;
        }
    }
}
