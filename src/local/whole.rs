//! Which algorithms give the result of an op that is not pairwise (`Op::pairwise`, the
//! reproducible float sum) among the threads of one process: those that combine every operand
//! of an element at once (the single-copy ones on the board, and `Linear` folded on the
//! communicator's slots), and any at two ranks, where one combining is the whole reduction.
//! `None` sends the call to the communicator's wider state (`comm/exact.rs`).

use super::Local;
use crate::algorithms::allreduce::folded::blocking;
use crate::select::{Algorithm, Reduce, ReduceScatter};

impl Local {
    /// The allreduce of `len` elements of `T` with `algorithm`: `Direct`; `Linear` where it
    /// folds on slots; `Auto` (and `Native`, which is `Auto` here) as whichever of the two fits.
    pub(crate) fn whole_allreduce<T>(&self, len: usize, algorithm: Algorithm) -> Option<Algorithm> {
        use Algorithm::{Auto, Direct, Linear, Native};
        match algorithm {
            _ if self.size() <= 2 => Some(algorithm),
            Direct => Some(Direct),
            Linear | Auto | Native if blocking::fits::<T>(len) => Some(Linear),
            Auto | Native => Some(Direct),
            _ => None,
        }
    }

    /// The reduce with `algorithm`: `Direct`, which `Auto` (and `Native`) becomes.
    pub(crate) fn whole_reduce(&self, algorithm: Reduce) -> Option<Reduce> {
        match algorithm {
            _ if self.size() <= 2 => Some(algorithm),
            Reduce::Direct | Reduce::Auto | Reduce::Native => Some(Reduce::Direct),
            _ => None,
        }
    }

    /// The reduce-scatter with `algorithm`: `Direct`, which `Auto` becomes.
    pub(crate) fn whole_reduce_scatter(&self, algorithm: ReduceScatter) -> Option<ReduceScatter> {
        match algorithm {
            _ if self.size() <= 2 => Some(algorithm),
            ReduceScatter::Direct | ReduceScatter::Auto => Some(ReduceScatter::Direct),
            _ => None,
        }
    }
}
