//! `Comm::reduce_scatter_block`: validation and dispatch; the schedules are in `algorithms::reduce_scatter`.
