//! The bench's vocabulary, at the bottom of the crate: what a sweep is made of, as values and
//! as the command line spells them. Which collective call ([`Call`], over the library's one
//! list of collectives), which of corecoll's algorithms and with which parameter ([`Alg`],
//! [`AlgSpec`]), the element type and op ([`Dtype`], [`OpName`]), the sizes ([`Sizes`]), and
//! where the ranks run ([`Placement`], [`Machine`]). Every other module builds on these; this
//! one uses only the library.

mod algorithm;
mod call;
mod machine;
mod sizes;
mod types;

pub use algorithm::{
    algorithms, parse_alg_spec, parse_alg_specs, with_param, Alg, AlgSpec, Param, BLOCK_SWEPT,
};
pub use call::{parse_calls, Call, Calls, Form, VARIANTS};
pub use machine::{
    parse_core_list, parse_machine, parse_placement, Machine, Placement, MACHINE_MAX_CORES,
};
pub use sizes::{fmt_bytes, parse_size, parse_sizes, Sizes};
pub use types::{Cache, Dtype, OpName};
