//! The stage between processes: the leaders' communicator ([`ProcessComm`], one thread per
//! process), the check that every process makes the same call (`check`), MPI's own
//! collectives beside the crate's schedules (`native`).

pub(in crate::process) mod check;
pub(in crate::process) mod comm;
pub(in crate::process) mod native;

pub(crate) use comm::ProcessComm;
