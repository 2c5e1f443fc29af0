//! Scan and exclusive-scan schedules (being written).
