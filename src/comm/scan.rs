//! `Comm::scan` and `Comm::exscan` (being written).
