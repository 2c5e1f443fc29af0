//! A rank's link to the processes of a hybrid team ([`Bridge`], inside its `Comm`): its own
//! process's threads' communicator, the layout, the leader's stage between processes with its
//! check (`across`), and `Comm::dup` of a communicator that spans processes. The process part
//! it reaches on the leader, and the stages of a collective: `world`.

use crate::algorithms::check;
use crate::error::{Error, Result};
use crate::local::Local;
use crate::process::leaders::check::{Arrival, Call};
use crate::process::mpi::Channels;
use crate::process::node::folds::NodeFolds;
use crate::process::node::mail::NodeMail;
use crate::process::p2p::paths::{AsideQueue, Stages};
use crate::process::p2p::posted::RemotePosted;
use crate::process::p2p::relay::Relay;
use crate::process::shadows::ShadowSet;
use crate::process::world::{Layout, Process};
use crate::process::ProcessComm;
use std::any::Any;
use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A rank's link to the processes of a hybrid team, inside its `Comm`: the plain `Comm` of
/// its own process's threads, the layout, and on rank 0 of each process the process part.
pub(crate) struct Bridge {
    /// The communicator of this process's threads (thread i is its rank i), on which the
    /// stages within the process run.
    pub(crate) local: Local,
    /// Which ranks each process holds.
    pub(crate) layout: Arc<Layout>,
    /// The process part, on the process's rank 0 (the leader) only.
    process: Option<Arc<Process>>,
    /// The communicators of point-to-point between processes, if this thread may call MPI
    /// itself (`Threading::Multiple`).
    pub(crate) channels: Option<Arc<Channels>>,
    /// The process's relay, if its leader relays instead.
    pub(crate) relay: Option<Arc<Relay>>,
    /// Point-to-point with the other processes of this process's node through its segment,
    /// if the node has several (used instead of the channels or the relay).
    pub(crate) mail: Option<Arc<NodeMail>>,
    /// The persistent short allreduces' share of the node's segment, on the world's link
    /// when one node holds every process (`process::node::fold`).
    pub(super) folds: Option<Arc<NodeFolds>>,
    /// The run (numbered as the node's share numbers it) of this link's last persistent
    /// allreduce set up through `folds`, and how many it set up in that run: counted afresh in
    /// each run, for a link kept from run to run as for one made afresh (`Bridge::made_in`).
    pub(super) folds_made: Cell<(u64, u64)>,
    /// This rank's messages from other processes moved aside by its receives.
    pub(crate) aside: AsideQueue,
    /// This rank's staging buffers for messages between processes.
    pub(crate) stages: Stages,
    /// This rank's non-blocking receives posted for messages from other processes.
    pub(crate) posted: RemotePosted,
    /// Where the stage between processes of this rank's last collective ran
    /// (`Comm::auto_choice`).
    between: Cell<Option<&'static str>>,
    /// Which of the team's communicators this is: 0 for the world, k for the k-th duplicate
    /// (`Call`'s context).
    context: u64,
    /// The leaders' communicators of the communicator's shadows (`process::shadows`).
    shadows: ShadowSet,
    /// Which of the communicator's stages between processes this link's collectives use: the
    /// team's leaders' communicator (`None`), or the leaders' shadow k (of `shadows`).
    stage: Option<usize>,
}

/// What a process's threads bring to the stage between processes of a collective
/// ([`Bridge::across`]): the outcome of their first stage, which they run only after agreeing
/// on the call among themselves ([`Bridge::first_stage`]), so that the words the leader
/// compares with the other processes' speak for every thread of its process.
#[must_use]
pub(crate) struct FirstStage(Result<()>);

impl FirstStage {
    /// The arrival of a process whose threads have compared every word of the call already,
    /// some other way or at an earlier check of the same call: `verdict`, the result since.
    pub(crate) fn agreed(verdict: Result<()>) -> FirstStage {
        FirstStage(verdict)
    }

    /// This first stage and then `more`, a further part of it, run only if this part
    /// succeeded.
    pub(crate) fn and_then(self, more: impl FnOnce() -> Result<()>) -> FirstStage {
        FirstStage(self.0.and_then(|()| more()))
    }
}

/// [`Bridge::between`] of a collective whose stage between processes ran over MPI.
const BETWEEN_MPI: &str = "MPI between processes";
/// [`Bridge::between`] of one that ran through the node's shared memory.
const BETWEEN_NODE: &str = "node shared memory between processes";
/// [`Bridge::between`] of an allreduce that ran through the node's shared memory reading the
/// other processes' memory in place (`process::node`'s one copy).
const BETWEEN_NODE_ONE_COPY: &str =
    "node shared memory between processes, one copy (process_vm_readv)";
/// [`Bridge::between`] of one that ran through the nodes' shared memory and over MPI between
/// the nodes.
const BETWEEN_NODES: &str = "node shared memory between processes, MPI between nodes";

/// What the ranks of a duplicate of a communicator that spans processes need of MPI besides
/// the team's leaders' communicator: made by each process's leader, and handed to its other
/// threads through the duplicate's shared state (`CommShared::attached`).
pub(super) struct Links {
    /// The duplicate's context (`Call`).
    pub(super) context: u64,
    /// Its point-to-point channels, for threads that call MPI themselves.
    pub(super) channels: Option<Arc<Channels>>,
    /// Its relay, where the leader relays.
    pub(super) relay: Option<Arc<Relay>>,
    /// The leaders' communicators of its shadows.
    pub(super) shadows: ShadowSet,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("layout", &self.layout)
            .field("leader", &self.process.is_some())
            .finish_non_exhaustive()
    }
}

impl Bridge {
    /// The link of the rank whose own process's communicator is `local`, in the team whose
    /// process part is `process` (which the local rank 0 holds).
    pub(crate) fn new(local: Local, process: &Arc<Process>) -> Self {
        let leader = local.rank() == 0;
        Bridge {
            local,
            layout: process.layout.clone(),
            channels: process.direct.then(|| process.channels.clone()),
            relay: process.relay.clone(),
            mail: process.mail.clone(),
            folds: process.folds.clone(),
            folds_made: Cell::new((0, 0)),
            process: leader.then(|| process.clone()),
            aside: AsideQueue::default(),
            stages: Stages::default(),
            posted: RemotePosted::default(),
            between: Cell::new(None),
            context: 0,
            shadows: process.shadow_sets()[0].clone(),
            stage: None,
        }
    }

    /// This link with `local` for its own process's threads, running its stages between
    /// processes on the leaders' shadow `k` (`shadows`).
    pub(super) fn with_stage(&self, local: Local, k: usize) -> Bridge {
        Bridge {
            local,
            layout: self.layout.clone(),
            process: self.process.clone(),
            channels: self.channels.clone(),
            relay: self.relay.clone(),
            mail: self.mail.clone(),
            folds: None,
            folds_made: Cell::new((0, 0)),
            aside: AsideQueue::default(),
            stages: Stages::default(),
            posted: RemotePosted::default(),
            between: Cell::new(None),
            context: self.context,
            shadows: self.shadows.clone(),
            stage: Some(k),
        }
    }

    /// Records that the collective just made ran its stage between processes through the
    /// node's shared memory, if the world's does (`process::node`) and `node` (the collective
    /// and its algorithm run there).
    pub(super) fn note_node(&self, node: bool) {
        if node && self.on_node() {
            let one = self.layout.one_node();
            self.between
                .set(Some(if one { BETWEEN_NODE } else { BETWEEN_NODES }));
        }
    }

    /// [`Bridge::note_node`] for an allreduce of `bytes` bytes per process, which on one node
    /// may copy once.
    pub(super) fn note_node_allreduce(&self, node: bool, bytes: usize) {
        self.note_node(node);
        let one = self
            .layout
            .nodes
            .as_ref()
            .is_some_and(|n| n.single_copy(bytes));
        if node && self.on_node() && one {
            self.between.set(Some(BETWEEN_NODE_ONE_COPY));
        }
    }

    /// Whether this link's stage between processes runs through the node's shared memory: the
    /// world's does (`Layout::on_node`) and the link runs on it (not on a shadow's leaders'
    /// communicator, which a request's is).
    pub(super) fn on_node(&self) -> bool {
        self.layout.on_node() && self.stage.is_none()
    }

    /// On a request's link (a shadow's) of a world whose stage between processes runs through
    /// the nodes, the nodes' first processes: a request's reduction combines over MPI in the
    /// node stage's grouping (`ProcessComm::grouped_allreduce`), so that it gives the blocking
    /// call's bits.
    pub(super) fn grouping(&self) -> Option<&[usize]> {
        let nodes = self
            .layout
            .nodes
            .as_ref()
            .filter(|_| self.stage.is_some())?;
        Some(nodes.starts())
    }

    /// Where the stage between processes of this rank's last collective ran.
    pub(crate) fn between(&self) -> Option<&'static str> {
        self.between.get()
    }

    /// Which of the team's communicators this is (0: the world; k: the k-th duplicate).
    pub(crate) fn context(&self) -> u64 {
        self.context
    }

    /// This rank's number in the world.
    pub(crate) fn rank(&self) -> usize {
        self.layout.offset(self.layout.process()) + self.local.rank()
    }

    /// Number of ranks of the world.
    pub(crate) fn size(&self) -> usize {
        self.layout.size()
    }

    /// Whether this rank is its process's leader (local rank 0), the one that calls MPI.
    pub(crate) fn is_leader(&self) -> bool {
        self.process.is_some()
    }

    /// Stage 1 of a collective `op` described by `call`: the process's threads agree on the
    /// call — every word its leader will compare with the other processes' (collective,
    /// algorithm, length, element type, root, block, op) — and then run `stage`, their part of
    /// the collective within the process.
    ///
    /// Without the agreement a thread whose arguments differ from its leader's (another root,
    /// say) would not be seen by the check between processes, which compares one call per
    /// process, and might take part in a collective that means something else to it. The
    /// agreement is the dissemination check (`check::agree` with every rank), so a leader that
    /// passes it knows that every thread of its process passed; a thread that finds a
    /// difference fails its process's run, and the leader takes that failure to the check
    /// between processes, which then fails on every process. One round among two threads; none
    /// for a process of one thread.
    pub(crate) fn first_stage(
        &self,
        op: &'static str,
        call: &Call,
        stage: impl FnOnce() -> Result<()>,
    ) -> FirstStage {
        let local = &self.local;
        let agreed = if local.size() == 1 {
            Ok(())
        } else {
            let tag = local.next_tag(call.kind());
            check::agree(&local.coll(op), tag, &call.for_threads(op), true)
        };
        FirstStage(agreed.and_then(|()| stage()))
    }

    /// Stage 2 of a collective `op` described by `call`: on the leader, the check between
    /// processes, with `before` (the leader's result of stage 1) as its arrival, then
    /// `stage` on the leaders' communicator; on the other ranks, nothing (`before`).
    ///
    /// On the leader, every failure of the check or of `stage` fails the process's run, so
    /// that its other ranks, waiting in stage 3 for the leader, return it too; the check's
    /// failures are the same on every process, and so are `stage`'s (decided from the agreed
    /// call), so every process stops calling MPI for the rest of the run at the same call.
    pub(crate) fn across(
        &self,
        op: &'static str,
        call: Call,
        before: FirstStage,
        stage: impl FnOnce(&ProcessComm) -> Result<()>,
    ) -> Result<()> {
        let (rank, leaders) = (self.rank(), self.layout.leaders());
        self.across_checked(op, call, before, |pc, call, arrival| {
            pc.agree_across(call, arrival, rank, leaders, op)?;
            stage(pc)
        })
    }

    /// [`Bridge::across`] with the check and the stage in one: `run` gets the leaders'
    /// communicator, the call (in this communicator's context) and the leader's arrival, and
    /// must agree the call between the processes before anything else (with a failed arrival
    /// too, which the agreement then fails everywhere), as a short allreduce through a node's
    /// shared memory does in one round with its data (`process::node`).
    pub(crate) fn across_checked(
        &self,
        op: &'static str,
        call: Call,
        before: FirstStage,
        run: impl FnOnce(&ProcessComm, &Call, Arrival) -> Result<()>,
    ) -> Result<()> {
        let FirstStage(before) = before;
        self.between.set(Some(BETWEEN_MPI));
        let Some(p) = &self.process else {
            return before;
        };
        // A relaying leader sends what its threads sent before it waits in the stage between
        // processes (the hooks' flush: the relay's sending part, a scope's whole hook).
        crate::sync::idle::flush();
        if let Err(e) = p.on_main_thread(op) {
            return Err(self.local.fail(e));
        }
        let (pc, closed) = match self.stage {
            None => (&p.pc, &p.closed),
            Some(k) => (&self.shadows[k].pc, &self.shadows[k].closed),
        };
        let pc = pc.lock();
        if closed.load(Ordering::SeqCst) {
            // An earlier check failed on every process: this run's ranks all fail already.
            return before.and_then(|()| {
                Err(self.local.fail(Error::Aborted {
                    rank: self.rank(),
                    op,
                    cause: Box::new(self.local.run().cause()),
                }))
            });
        }
        let arrival = if before.is_ok() {
            Arrival::Ready
        } else {
            Arrival::Failed
        };
        let call = call.in_context(self.context);
        if self.stage.is_some() {
            p.count_shadow_check();
        }
        let ran = run(&pc, &call, arrival);
        let result = match before {
            Err(e) => Err(e),
            Ok(()) => ran,
        };
        result.map_err(|e| {
            p.close(closed, &e);
            self.local.fail(e)
        })
    }
}

impl Bridge {
    /// `Comm::dup` of a communicator that spans processes: the ranks of each process duplicate
    /// their own threads' communicator, the leaders agree on the call and make the duplicate's
    /// links between processes (`Links`), and the process's other threads pick them up. The
    /// duplicate shares the team's leaders' communicator (its collectives' stages between
    /// processes are told apart by its context in the check) and has point-to-point channels
    /// of its own, so its messages never match this communicator's.
    pub(crate) fn dup(&self) -> Result<Bridge> {
        const OP: &str = "dup";
        let call = Call::dup();
        let mut split = None;
        let before = self.first_stage(OP, &call, || {
            let s = self.local.split(Some(0), self.local.rank());
            let r = s.as_ref().map(|_| ()).map_err(Clone::clone);
            split = Some(s);
            r
        });
        let mut links = None;
        let agreed = self.across(OP, call, before, |pc| {
            let p = self.process.as_ref().expect("only a leader runs the stage");
            links = Some(p.duplicate(pc)?);
            Ok(())
        });
        let Some(split) = split else {
            // The threads did not agree, and `across` returned their failure.
            return Err(agreed.expect_err("a first stage that did not run failed"));
        };
        let local = split?.expect("every rank passes a color");
        agreed?;
        if let Some(links) = links {
            let links: Arc<dyn Any + Send + Sync> = Arc::new(links);
            let _ = local.shared().attached.set(links);
        }
        // The leader attaches the links before it arrives; a leader that failed has failed the
        // run, and the barrier with it.
        local.barrier_with(crate::select::Barrier::Auto)?;
        let links = local
            .shared()
            .attached
            .get()
            .cloned()
            .and_then(|a| a.downcast::<Links>().ok())
            .expect("the leader attached the duplicate's links before the barrier");
        Ok(Bridge {
            layout: self.layout.clone(),
            process: self.process.clone(),
            channels: links.channels.clone(),
            relay: links.relay.clone(),
            mail: self.mail.clone(),
            folds: None,
            folds_made: Cell::new((0, 0)),
            aside: AsideQueue::default(),
            stages: Stages::default(),
            posted: RemotePosted::default(),
            between: Cell::new(None),
            context: links.context,
            shadows: links.shadows.clone(),
            stage: None,
            local,
        })
    }
}

impl Bridge {
    /// Fails this rank's process run with `e` (so that none of its threads waits for this
    /// one) and returns it.
    pub(crate) fn fail(&self, e: Error) -> Error {
        self.local.fail(e)
    }

    /// `Comm::location` of a rank of the world: known for this process's threads only.
    pub(crate) fn local_location(&self, rank: usize) -> Option<crate::topology::Location> {
        if rank >= self.size() {
            return None;
        }
        let (q, l) = self.layout.locate(rank);
        (q == self.layout.process())
            .then(|| self.local.location(l))
            .flatten()
    }
}
