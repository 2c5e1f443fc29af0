//! The schedules: who sends what to whom, when. Written against
//! [`crate::transport::Transport`] only, so that each runs between threads, between MPI
//! processes and in the simulator alike.

pub(crate) mod allreduce;
pub(crate) mod alltoall;
pub(crate) mod barrier;
pub(crate) mod binomial_tree;
pub(crate) mod blocks;
pub(crate) mod broadcast;
pub(crate) mod check;
pub(crate) mod flag_barrier;
pub(crate) mod gather;
pub(crate) mod groups;
pub(crate) mod inorder;
pub(crate) mod pair;
pub(crate) mod reduce;
pub(crate) mod reduce_scatter;
pub(crate) mod scan;
pub(crate) mod tree;
