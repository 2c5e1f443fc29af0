//! `split` of a `Comm` whose ranks span MPI processes.
//!
//! A communicator whose ranks are threads of several processes needs leaders of its own that
//! call MPI (a process communicator of its processes, and the layout of its ranks), which a
//! split cannot make: MPI's own split of the leaders' communicator would be collective over
//! all the processes and would have to run between threads that do not call MPI. So a hybrid
//! split supports the colors whose ranks all run in one process: every rank's (color, key)
//! reaches every rank (a hybrid allgather), and if any color is passed by ranks of two
//! processes, the call is `Error::Unsupported` on every rank (each decides from the same
//! gathered votes); otherwise each process splits its own threads' communicator with the same
//! (color, key). The result is a plain `Comm` of the process's threads, ordered by key and then
//! by rank, as `Comm::split` orders them (a process's ranks are in thread order).

use crate::error::{Error, Result};
use crate::local::Local;
use crate::process::bridge::Bridge;
use crate::select::Allgather;

impl Bridge {
    /// `Comm::split` across processes (module docs).
    pub(crate) fn split(&self, color: Option<usize>, key: usize) -> Result<Option<Local>> {
        const OP: &str = "split";
        let p = self.size();
        let mine = [usize::from(color.is_some()), color.unwrap_or(0), key];
        let mut all = vec![0usize; 3 * p];
        self.allgather(&mine, &mut all, Allgather::Auto)?;
        // The first rank seen with each color.
        let mut seen: std::collections::HashMap<usize, usize> = Default::default();
        for r in 0..p {
            let vote = &all[3 * r..3 * r + 3];
            if vote[0] == 0 {
                continue;
            }
            let first = *seen.entry(vote[1]).or_insert(r);
            let (qf, qr) = (self.layout.locate(first).0, self.layout.locate(r).0);
            if qf != qr {
                return Err(self.fail(Error::Unsupported {
                    rank: self.rank(),
                    op: OP,
                    what: format!(
                        "color {} is passed by rank {first} (MPI process {qf}) and rank {r} \
                         (MPI process {qr}); a communicator whose ranks span MPI processes \
                         would need leaders of its own calling MPI, which split cannot make: \
                         on a team that spans processes, each color's ranks must run in one \
                         process",
                        vote[1]
                    ),
                }));
            }
        }
        self.local.split(color, key)
    }
}
