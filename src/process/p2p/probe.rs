//! Probes on a communicator whose ranks are the threads of several MPI processes: what the
//! next message a receive would take is, without taking it (`process::p2p` for the paths).

use crate::error::Result;
use crate::mailbox::Elem;
use crate::process::bridge::Bridge;
use crate::process::mpi::Stage;
use crate::process::p2p::paths::{Aside, Link, Place};
use crate::transport::shm::{Found, Want};
use std::collections::VecDeque;

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
        let mut stage = match link {
            Link::Direct(_) => Some(self.stages.recv()),
            Link::Relay(_) | Link::Node => None,
        };
        let stage: *mut Stage = stage.as_mut().map_or(std::ptr::null_mut(), |s| &mut ***s);
        // Bring in what has come (into posted receives or aside), then look aside and, behind
        // a message whose payload the relaying leader is still receiving, in the inbox.
        self.pump(want, stage, op)?;
        let seen = |q: &VecDeque<Aside>| {
            q.iter()
                .find(|a| want.takes(a.src, a.tag))
                .map(|a| (a.src, a.tag, a.typ, a.count))
        };
        let mut found = seen(&self.aside.borrow());
        if let (None, Link::Relay(relay)) = (found, link) {
            found = seen(&relay.inbox(self.local.rank()));
        }
        let Some((src, tag, typ, count)) = found else {
            return Ok(None);
        };
        self.check::<T>((src, tag, typ, count), None, op)?;
        Ok(Some(Found { src, tag, count }))
    }
}
