//! `Comm::gather`, `scatter`, `allgather` and their `v` forms (being written).
