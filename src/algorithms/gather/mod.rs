//! Gather, scatter and allgather schedules (being written).
