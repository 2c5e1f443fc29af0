//! The stage between nodes: the crate's `Transport` over MPI point-to-point (`transport`),
//! the crate's tags as MPI tags (`tag`), matched receives (`recv`), immediate operations and
//! polite waits (`request`), user point-to-point between threads of different processes
//! (`p2p`), failure notices between processes (`notice`).

mod notice;
mod p2p;
mod recv;
mod request;
mod tag;
mod transport;

pub(crate) use p2p::{new_stage, Arrived, Channels, Receiving, Sending, Stage};
pub(crate) use recv::{scratch_bytes, Chunk, Scratch};
pub(crate) use request::{nudge, poll_politely, wait_all};
pub(crate) use tag::TagCodec;
pub(crate) use transport::MpiTransport;
