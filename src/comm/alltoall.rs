//! `Comm::alltoall` and `alltoallv`: validation and dispatch; the schedules are in `algorithms::alltoall`.
