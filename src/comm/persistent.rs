//! Persistent collectives (MPI-4's `MPI_Allreduce_init` and `MPI_Start`): a collective set up
//! once — its arguments checked, its call agreed between the ranks — and started many times,
//! each start a request of the scope (`scope`) that runs the blocking call on the same
//! buffers.
//!
//! The buffers are borrowed by the [`Persistent`] for the scope's lifetime; between starts the
//! rank reaches them through it (`buffer`, `send_buffer`, `recv_buffer`), which refuses while a
//! start is in flight, so that the rank never touches what its peers may be reading or
//! writing.

use super::request::Request;
use super::scope::{Core, Scope};
use super::Comm;
use crate::collective::Collective;
use crate::error::{Error, Result};
use crate::local::persistent::{Folded, Setup};
use crate::mailbox::Elem;
use crate::op::Op;
use crate::select::{
    Algorithm, Allgather, Alltoall, Barrier, Broadcast, Choice, Reduce, ReduceScatter,
};
use std::marker::PhantomData;
use std::rc::Rc;

/// What a start runs: the blocking call on the shadow given, with the send and receive (or
/// in-place) buffers.
type Start<'scope, T> = Rc<dyn Fn(&Comm, &[T], &mut [T]) -> Result<()> + 'scope>;

/// A persistent collective of a [`Scope`] (MPI-4's persistent requests): [`Persistent::start`]
/// starts it, [`Persistent::test`] and [`Persistent::wait`] complete the start as a
/// [`Request`]'s; between starts, [`Persistent::buffer`] (the in-place collectives) or
/// [`Persistent::send_buffer`] and [`Persistent::recv_buffer`] reach its buffers. A start still
/// in flight when the persistent collective is dropped completes at the end of the scope (a
/// short allreduce folded on slots abandons it instead: the other ranks complete theirs, and
/// this rank's buffer keeps what it held).
pub struct Persistent<'scope, T> {
    core: &'scope Core<'scope>,
    op: &'static str,
    /// Whether the collective works in place (one buffer).
    in_place: bool,
    send: *mut T,
    send_len: usize,
    recv: *mut T,
    recv_len: usize,
    start: Start<'scope, T>,
    /// The start in flight, if one is.
    current: Option<Request<'scope>>,
    /// The setup's start number on the communicator (the same on every rank).
    setup: u64,
    /// A short allreduce that runs folded on slots instead of as requests.
    fold: Option<Fold<'scope, T>>,
    _buffers: PhantomData<&'scope mut [T]>,
}

/// A persistent allreduce folded on slots, with its op.
struct Fold<'scope, T> {
    state: Folding,
    op: Rc<dyn Op<T> + 'scope>,
}

/// Where a persistent allreduce folds: on the slots of the threads of one process
/// (`local::persistent::Folded`), or on those of every rank of a node's processes
/// (`process::node::fold`).
enum Folding {
    Threads(Folded),
    #[cfg(feature = "mpi")]
    Node(crate::process::NodeFold),
}

impl Folding {
    #[inline]
    fn in_flight(&self) -> bool {
        match self {
            Folding::Threads(f) => f.in_flight(),
            #[cfg(feature = "mpi")]
            Folding::Node(f) => f.in_flight(),
        }
    }

    #[inline]
    fn start<T: Copy>(&mut self, comm: &Comm, buf: &[T]) -> Result<()> {
        match self {
            Folding::Threads(f) => comm.local().fold_start(f, buf),
            #[cfg(feature = "mpi")]
            Folding::Node(f) => comm
                .bridge()
                .expect("spans processes")
                .node_fold_start(f, buf),
        }
    }

    /// Whether the start in flight can complete without waiting; an error if its wait would
    /// end in one (the run failed, a process ended or failed its run).
    fn ready(&self, comm: &Comm) -> Result<bool> {
        match self {
            Folding::Threads(f) => comm.local().fold_ready(f),
            #[cfg(feature = "mpi")]
            Folding::Node(f) => comm.bridge().expect("spans processes").node_fold_ready(f),
        }
    }

    #[inline]
    fn finish<T: Copy>(&mut self, comm: &Comm, buf: &mut [T], op: &dyn Op<T>) -> Result<()> {
        match self {
            Folding::Threads(f) => comm.local().fold_finish(f, buf, op),
            #[cfg(feature = "mpi")]
            Folding::Node(f) => {
                let b = comm.bridge().expect("spans processes");
                b.node_fold_finish(f, buf, op)
            }
        }
    }
}

impl<T> std::fmt::Debug for Persistent<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Persistent")
            .field("op", &self.op)
            .field("in_flight", &self.current.is_some())
            .finish()
    }
}

impl<'scope, T: Elem> Persistent<'scope, T> {
    /// Starts the collective (as `MPI_Start`); an error while a start is in flight.
    #[inline]
    pub fn start(&mut self) -> Result<()> {
        if self.in_flight() {
            return Err(self.refuse("start", "a start is in flight".into()));
        }
        if self.fold.is_some() {
            let (comm, f, buf) = self.fold_parts();
            return f.state.start(comm, buf);
        }
        let (send, send_len, recv, recv_len) = (self.send, self.send_len, self.recv, self.recv_len);
        let start = self.start.clone();
        let req = self.core.start(move |c| {
            // SAFETY: the buffers were borrowed mutably for 'scope when the collective was set
            // up and are reached only through this `Persistent`, which hands them out only
            // while no start is in flight; this start is the only one in flight, and it
            // completes before 'scope ends (the scope's guarantee), so the slices are valid and
            // unaliased for as long as the task uses them. (An in-place collective's send
            // slice is empty, from a dangling pointer, which an empty slice may have.)
            let (send, recv) = unsafe {
                (
                    std::slice::from_raw_parts(send.cast_const(), send_len),
                    std::slice::from_raw_parts_mut(recv, recv_len),
                )
            };
            start(c, send, recv)
        })?;
        self.current = Some(req);
        Ok(())
    }

    /// Advances the scope's requests without blocking: `true` once the start in flight has
    /// completed, or if none is; its error, once, if it failed.
    pub fn test(&mut self) -> Result<bool> {
        if let Some(f) = &self.fold {
            if !f.state.ready(self.core.comm())? {
                return Ok(false);
            }
            // Ready: `wait` completes it without waiting.
            return self.wait().map(|()| true);
        }
        let Some(req) = &mut self.current else {
            return Ok(true);
        };
        let done = req.test();
        if !matches!(done, Ok(false)) {
            self.current = None;
        }
        done
    }

    /// Blocks until the start in flight (if any) has completed: its result.
    #[inline]
    pub fn wait(&mut self) -> Result<()> {
        if self.fold.is_some() {
            let (comm, f, buf) = self.fold_parts();
            return f.state.finish(comm, buf, &*f.op);
        }
        match self.current.take() {
            Some(req) => req.wait(),
            None => Ok(()),
        }
    }

    /// The buffer of an in-place collective (allreduce, broadcast, reduce), between starts: an
    /// error while a start is in flight, or for a collective with send and receive buffers.
    #[inline]
    pub fn buffer(&mut self) -> Result<&mut [T]> {
        if !self.in_place {
            return Err(self.refuse(
                "buffer",
                "this collective has a send and a receive buffer (send_buffer, recv_buffer)".into(),
            ));
        }
        self.recv_buffer()
    }

    /// The send buffer, between starts: an error while a start is in flight, or for an
    /// in-place collective.
    pub fn send_buffer(&mut self) -> Result<&mut [T]> {
        if self.in_place {
            return Err(self.refuse(
                "send_buffer",
                "this collective works in place on one buffer (buffer)".into(),
            ));
        }
        if self.in_flight() {
            return Err(self.refuse("send_buffer", "a start is in flight".into()));
        }
        // SAFETY: the send buffer was borrowed mutably for 'scope at setup, no start is in
        // flight, and the returned borrow of `self` keeps `start` from running until it ends.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.send, self.send_len) })
    }

    /// The receive (or in-place) buffer, between starts: an error while a start is in flight.
    #[inline]
    pub fn recv_buffer(&mut self) -> Result<&mut [T]> {
        if self.in_flight() {
            return Err(self.refuse("recv_buffer", "a start is in flight".into()));
        }
        // SAFETY: as in `send_buffer`.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.recv, self.recv_len) })
    }

    /// A folded allreduce's parts: the communicator, the fold, and the buffer (the one its
    /// starts publish and its completions fill).
    #[inline]
    fn fold_parts(&mut self) -> (&Comm, &mut Fold<'scope, T>, &mut [T]) {
        let comm = self.core.comm();
        let fold = self.fold.as_mut().expect("a folded allreduce");
        // SAFETY: the buffer was borrowed mutably for 'scope at setup and only this
        // `Persistent` reaches it; the fold reads and writes it only inside these calls (its
        // peers read the copy in the slots), and the borrow of `self` ends with them.
        let buf = unsafe { std::slice::from_raw_parts_mut(self.recv, self.recv_len) };
        (comm, fold, buf)
    }

    /// Whether a start has not completed yet.
    #[inline]
    fn in_flight(&self) -> bool {
        self.current.is_some() || self.fold.as_ref().is_some_and(|f| f.state.in_flight())
    }

    fn refuse(&self, what: &'static str, why: String) -> Error {
        Error::InvalidArgument {
            rank: self.core.comm().rank(),
            op: self.op,
            what: format!("{what} of a persistent {}: {why}", self.op),
        }
    }
}

/// What sets up a persistent collective: its agreed description (`Setup`'s fields) and what
/// each start runs.
struct Plan<'scope, T, A> {
    setup: Setup<'scope, T, A>,
    start: Start<'scope, T>,
}

impl<'scope> Scope<'scope, '_> {
    /// Sets up the persistent collective of `plan` on `send` and `recv` (`recv` alone, in
    /// place, when `send` is `None`): every rank must set up the same call, which a check on
    /// the communicator's next shadow compares (so that the setup keeps its place among the
    /// scope's starts); an error on every rank if they differ.
    fn persistent<T, A>(
        &'scope self,
        plan: Plan<'scope, T, A>,
        send: Option<&'scope mut [T]>,
        recv: &'scope mut [T],
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
        A: Choice + 'scope,
    {
        let Plan { setup, start } = plan;
        let op = setup.op;
        let check = self.core().start(move |c| c.agree_setup(&setup))?;
        let setup = check.start_number();
        check.wait()?;
        let in_place = send.is_none();
        let (send, send_len) = match send {
            Some(s) => (s.as_mut_ptr(), s.len()),
            None => (std::ptr::NonNull::dangling().as_ptr(), 0),
        };
        Ok(Persistent {
            core: self.core(),
            op,
            in_place,
            send,
            send_len,
            recv: recv.as_mut_ptr(),
            recv_len: recv.len(),
            start,
            current: None,
            setup,
            fold: None,
            _buffers: PhantomData,
        })
    }

    /// [`Comm::allreduce`] as a persistent collective on `buf` (in place: [`Persistent::buffer`]).
    pub fn allreduce_init<T, O>(
        &'scope self,
        buf: &'scope mut [T],
        op: O,
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.allreduce_init_with(buf, op, Algorithm::Auto)
    }

    /// [`Comm::allreduce_with`] as a persistent collective.
    pub fn allreduce_init_with<T, O>(
        &'scope self,
        buf: &'scope mut [T],
        op: O,
        algorithm: Algorithm,
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        let op = Rc::new(op);
        let o = op.clone();
        let kept = op.clone();
        let plan = Plan {
            setup: Setup {
                op: "allreduce",
                kind: Collective::Allreduce,
                alg: algorithm,
                len: buf.len(),
                root: None,
                combine: Some(op),
            },
            start: Rc::new(move |c, _, b| c.allreduce_with(b, &*o, algorithm)),
        };
        let len = buf.len();
        let commutative = kept.is_commutative();
        let mut persistent = self.persistent(plan, None, buf)?;
        // Decided from what every rank agreed and the layout, so the same on every rank.
        let comm = self.comm();
        let state = if comm.is_threads() {
            let local = comm.local();
            let folds = local.folds::<T>(len, algorithm, commutative);
            folds.then(|| Folding::Threads(local.folded(persistent.setup)))
        } else if kept.pairwise() || comm.size() <= 2 {
            Self::node_folding::<T>(comm, len, algorithm, commutative)?
        } else {
            // The node's fold hands partial results between processes (`Op::pairwise`).
            None
        };
        persistent.fold = state.map(|state| Fold { state, op: kept });
        Ok(persistent)
    }

    /// Where a persistent allreduce of a communicator that spans processes folds, if it does
    /// (`process::node::fold`).
    #[cfg_attr(
        not(feature = "mpi"),
        allow(clippy::extra_unused_type_parameters, unused_variables)
    )]
    fn node_folding<T>(
        comm: &Comm,
        len: usize,
        algorithm: Algorithm,
        commutative: bool,
    ) -> Result<Option<Folding>> {
        #[cfg(feature = "mpi")]
        if let Some(b) = comm.bridge() {
            if b.node_folds::<T>(len, algorithm, commutative) {
                return b.node_folded().map(|f| Some(Folding::Node(f)));
            }
        }
        Ok(None)
    }

    /// [`Comm::broadcast`] as a persistent collective on `buf` (in place).
    pub fn broadcast_init<T>(
        &'scope self,
        buf: &'scope mut [T],
        root: usize,
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
    {
        self.broadcast_init_with(buf, root, Broadcast::Auto)
    }

    /// [`Comm::broadcast_with`] as a persistent collective.
    pub fn broadcast_init_with<T>(
        &'scope self,
        buf: &'scope mut [T],
        root: usize,
        algorithm: Broadcast,
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
    {
        self.comm().check_root("broadcast", root)?;
        let plan = Plan {
            setup: Setup {
                op: "broadcast",
                kind: Collective::Broadcast,
                alg: algorithm,
                len: buf.len(),
                root: Some(root),
                combine: None,
            },
            start: Rc::new(move |c, _, b| c.broadcast_with(b, root, algorithm)),
        };
        self.persistent(plan, None, buf)
    }

    /// [`Comm::reduce`] as a persistent collective on `buf` (in place).
    pub fn reduce_init<T, O>(
        &'scope self,
        buf: &'scope mut [T],
        op: O,
        root: usize,
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.reduce_init_with(buf, op, root, Reduce::Auto)
    }

    /// [`Comm::reduce_with`] as a persistent collective.
    pub fn reduce_init_with<T, O>(
        &'scope self,
        buf: &'scope mut [T],
        op: O,
        root: usize,
        algorithm: Reduce,
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.comm().check_root("reduce", root)?;
        let op = Rc::new(op);
        let o = op.clone();
        let plan = Plan {
            setup: Setup {
                op: "reduce",
                kind: Collective::Reduce,
                alg: algorithm,
                len: buf.len(),
                root: Some(root),
                combine: Some(op),
            },
            start: Rc::new(move |c, _, b| c.reduce_with(b, &*o, root, algorithm)),
        };
        self.persistent(plan, None, buf)
    }

    /// [`Comm::allgather`] as a persistent collective from `send` into `recv`
    /// ([`Persistent::send_buffer`], [`Persistent::recv_buffer`]).
    pub fn allgather_init<T>(
        &'scope self,
        send: &'scope mut [T],
        recv: &'scope mut [T],
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
    {
        self.allgather_init_with(send, recv, Allgather::Auto)
    }

    /// [`Comm::allgather_with`] as a persistent collective.
    pub fn allgather_init_with<T>(
        &'scope self,
        send: &'scope mut [T],
        recv: &'scope mut [T],
        algorithm: Allgather,
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
    {
        self.comm()
            .check_whole("allgather", "recv", recv.len(), send.len())?;
        let plan = Plan {
            setup: Setup {
                op: "allgather",
                kind: Collective::Allgather,
                alg: algorithm,
                len: send.len(),
                root: None,
                combine: None,
            },
            start: Rc::new(move |c, s, r| c.allgather_with(s, r, algorithm)),
        };
        self.persistent(plan, Some(send), recv)
    }

    /// [`Comm::alltoall`] as a persistent collective from `send` into `recv`.
    pub fn alltoall_init<T>(
        &'scope self,
        send: &'scope mut [T],
        recv: &'scope mut [T],
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
    {
        self.alltoall_init_with(send, recv, Alltoall::Auto)
    }

    /// [`Comm::alltoall_with`] as a persistent collective.
    pub fn alltoall_init_with<T>(
        &'scope self,
        send: &'scope mut [T],
        recv: &'scope mut [T],
        algorithm: Alltoall,
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
    {
        self.comm()
            .check_alltoall("alltoall", send.len(), recv.len())?;
        let plan = Plan {
            setup: Setup {
                op: "alltoall",
                kind: Collective::Alltoall,
                alg: algorithm,
                len: send.len(),
                root: None,
                combine: None,
            },
            start: Rc::new(move |c, s, r| c.alltoall_with(s, r, algorithm)),
        };
        self.persistent(plan, Some(send), recv)
    }

    /// [`Comm::reduce_scatter_block`] as a persistent collective from `send` into `recv`.
    pub fn reduce_scatter_block_init<T, O>(
        &'scope self,
        send: &'scope mut [T],
        recv: &'scope mut [T],
        op: O,
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.reduce_scatter_block_init_with(send, recv, op, ReduceScatter::Auto)
    }

    /// [`Comm::reduce_scatter_block_with`] as a persistent collective.
    pub fn reduce_scatter_block_init_with<T, O>(
        &'scope self,
        send: &'scope mut [T],
        recv: &'scope mut [T],
        op: O,
        algorithm: ReduceScatter,
    ) -> Result<Persistent<'scope, T>>
    where
        T: Elem,
        O: Op<T> + 'scope,
    {
        self.comm()
            .check_whole("reduce_scatter_block", "send", send.len(), recv.len())?;
        let op = Rc::new(op);
        let o = op.clone();
        let plan = Plan {
            setup: Setup {
                op: "reduce_scatter_block",
                kind: Collective::ReduceScatter,
                alg: algorithm,
                len: recv.len(),
                root: None,
                combine: Some(op),
            },
            start: Rc::new(move |c, s, r| c.reduce_scatter_block_with(s, r, &*o, algorithm)),
        };
        self.persistent(plan, Some(send), recv)
    }

    /// [`Comm::barrier`] as a persistent collective (no buffers).
    pub fn barrier_init(&'scope self) -> Result<Persistent<'scope, ()>> {
        self.barrier_init_with(Barrier::Auto)
    }

    /// [`Comm::barrier_with`] as a persistent collective.
    pub fn barrier_init_with(&'scope self, algorithm: Barrier) -> Result<Persistent<'scope, ()>> {
        let plan = Plan {
            setup: Setup {
                op: "barrier",
                kind: Collective::Barrier,
                alg: algorithm,
                len: 0,
                root: None,
                combine: None,
            },
            start: Rc::new(move |c, _, _| c.barrier_with(algorithm)),
        };
        self.persistent(plan, None, &mut [])
    }
}
