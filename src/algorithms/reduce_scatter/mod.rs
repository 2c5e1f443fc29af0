//! Reduce-scatter schedules.
