//! All-to-all schedules.
