//! The environment variables the crate reads for its own settings, in one list ([`VARS`]),
//! each read strictly: a variable that is set to text the crate does not accept makes the
//! team's build fail ([`check`], called by `TeamBuilder::build` and `TeamBuilder::mpi`) with
//! an [`Error::Environment`] that names the variable, its value and what it takes, instead of
//! being ignored. The readers below are what the rest of the crate calls; after `check` they
//! never meet a bad value. (The algorithm-rule variables, `CORECOLL_ALLREDUCE` and the like,
//! and `CORECOLL_PROFILE` are read and refused by `tuning` and `profile`, with errors of their
//! own; docs/usage.md lists every variable in one table.)

use crate::error::{Error, Result};

/// What the processes of one node use between them on a hybrid team
/// ([`TeamBuilder::node_shm`](crate::TeamBuilder), or `CORECOLL_NODE_SHM`): a segment of
/// shared memory in `/dev/shm`, or MPI. (Declared from the least strict choice to the strictest,
/// the order in which processes that ask differently settle on the strictest.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NodeShm {
    /// Shared memory where `/dev/shm` can hold the node's segment (its pages are reserved
    /// when the team is built); else MPI between the processes, with one warning line that
    /// says how much space was needed and how to make room.
    #[default]
    Auto,
    /// Shared memory, or an error from `TeamBuilder::mpi` on every process.
    Require,
    /// MPI between all processes: no segment is made.
    Off,
}

impl NodeShm {
    /// Every choice, in declaration order: `NodeShm::BY_STRICTNESS[c as usize] == c`.
    #[cfg(any(all(test, not(loom)), feature = "mpi"))]
    pub(crate) const BY_STRICTNESS: [NodeShm; 3] = [NodeShm::Auto, NodeShm::Require, NodeShm::Off];

    /// The choice `text` names (`auto`, `require` or `off`, in any case).
    fn named(text: &str) -> Option<NodeShm> {
        [
            ("auto", NodeShm::Auto),
            ("require", NodeShm::Require),
            ("off", NodeShm::Off),
        ]
        .into_iter()
        .find(|(name, _)| text.eq_ignore_ascii_case(name))
        .map(|(_, choice)| choice)
    }
}

/// One variable: its name, what it takes (for the error), and whether a value is accepted.
pub(crate) struct Var {
    /// The variable's name.
    pub(crate) name: &'static str,
    /// What it takes, in words.
    pub(crate) accepted: &'static str,
    /// Whether `text` (trimmed) is a value it takes.
    valid: fn(&str) -> bool,
}

/// `CORECOLL_WAIT_POLICY`: how waiting ranks treat their core ([`crate::Wait`]).
const WAIT_POLICY: &str = "CORECOLL_WAIT_POLICY";
/// `CORECOLL_SPINS`: polls before a waiting rank yields.
const SPINS: &str = "CORECOLL_SPINS";
/// `CORECOLL_YIELD_US`: microseconds of yielding before a waiting rank parks.
const YIELD_US: &str = "CORECOLL_YIELD_US";
/// `CORECOLL_NODE_SIZE`: processes per node, made believe.
const NODE_SIZE: &str = "CORECOLL_NODE_SIZE";
/// `CORECOLL_NODE_CMA`: the one-copy allreduce between a node's processes.
const NODE_CMA: &str = "CORECOLL_NODE_CMA";
/// `CORECOLL_NODE_SHM`: shared memory between a node's processes ([`NodeShm`]).
const NODE_SHM: &str = "CORECOLL_NODE_SHM";

/// Every variable [`check`] reads.
pub(crate) const VARS: [Var; 6] = [
    Var {
        name: WAIT_POLICY,
        accepted: "active or passive",
        valid: |v| passive(v).is_some(),
    },
    Var {
        name: SPINS,
        accepted: "a whole number of polls from 0 to 4294967295",
        valid: |v| whole::<u32>(v).is_some(),
    },
    Var {
        name: YIELD_US,
        accepted: "a whole number of microseconds",
        valid: |v| whole::<u64>(v).is_some(),
    },
    Var {
        name: NODE_SIZE,
        accepted: "a whole number of processes, at least 1",
        valid: |v| node_count(v).is_some(),
    },
    Var {
        name: NODE_CMA,
        accepted: "0 or 1",
        valid: |v| flag(v).is_some(),
    },
    Var {
        name: NODE_SHM,
        accepted: "auto, require or off",
        valid: |v| NodeShm::named(v).is_some(),
    },
];

/// Fails with the first variable of [`VARS`] that is set to a value it does not take (or to
/// text that is not Unicode).
pub(crate) fn check() -> Result<()> {
    for var in &VARS {
        let Some(raw) = std::env::var_os(var.name) else {
            continue;
        };
        let ok = raw.to_str().is_some_and(|v| (var.valid)(v.trim()));
        if !ok {
            return Err(Error::Environment {
                name: var.name,
                value: raw.to_string_lossy().into_owned(),
                accepted: var.accepted,
            });
        }
    }
    Ok(())
}

/// The value of `name`, trimmed and read by `parse`, if it is set and accepted.
fn read<T>(name: &str, parse: impl FnOnce(&str) -> Option<T>) -> Option<T> {
    std::env::var(name).ok().and_then(|v| parse(v.trim()))
}

/// A whole number of type `T`.
fn whole<T: std::str::FromStr>(text: &str) -> Option<T> {
    text.parse().ok()
}

/// A number of processes: a whole number, at least 1.
fn node_count(text: &str) -> Option<usize> {
    whole(text).filter(|&k| k > 0)
}

/// `0` or `1`.
fn flag(text: &str) -> Option<bool> {
    match text {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// Whether `text` names passive waiting (`passive`) or active (`active`), in any case.
fn passive(text: &str) -> Option<bool> {
    match text {
        t if t.eq_ignore_ascii_case("active") => Some(false),
        t if t.eq_ignore_ascii_case("passive") => Some(true),
        _ => None,
    }
}

/// `CORECOLL_WAIT_POLICY`: `Some(true)` for passive waiting, `Some(false)` for active.
pub(crate) fn wait_passive() -> Option<bool> {
    read(WAIT_POLICY, passive)
}

/// `CORECOLL_SPINS`.
pub(crate) fn spins() -> Option<u32> {
    read(SPINS, whole)
}

/// `CORECOLL_YIELD_US`.
pub(crate) fn yield_us() -> Option<u64> {
    read(YIELD_US, whole)
}

/// `CORECOLL_NODE_SIZE`.
#[cfg(feature = "mpi")]
pub(crate) fn node_size() -> Option<usize> {
    read(NODE_SIZE, node_count)
}

/// `CORECOLL_NODE_CMA` is `1`.
#[cfg(feature = "mpi")]
pub(crate) fn node_cma() -> bool {
    read(NODE_CMA, flag).unwrap_or(false)
}

/// `CORECOLL_NODE_SHM`, if set.
#[cfg(feature = "mpi")]
pub(crate) fn node_shm() -> Option<NodeShm> {
    read(NODE_SHM, NodeShm::named)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_variable_accepts_its_values_and_nothing_else() {
        let takes = |name: &str, v: &str| {
            let var = VARS.iter().find(|var| var.name == name).expect("listed");
            (var.valid)(v)
        };
        for (name, good, bad) in [
            (
                WAIT_POLICY,
                &["active", "PASSIVE"][..],
                &["pasive", "", "1"][..],
            ),
            (
                SPINS,
                &["0", "4294967295"],
                &["lots", "-1", "4294967296", "1.5"],
            ),
            (YIELD_US, &["0", "200"], &["soon", "-5"]),
            (NODE_SIZE, &["1", "4"], &["two", "0", "-1"]),
            (NODE_CMA, &["0", "1"], &["yes", "true", "2"]),
            (NODE_SHM, &["auto", "Require", "OFF"], &["on", "strict", ""]),
        ] {
            for v in good {
                assert!(takes(name, v), "{name} refused {v:?}");
            }
            for v in bad {
                assert!(!takes(name, v), "{name} took {v:?}");
            }
        }
        assert_eq!(NodeShm::named("require"), Some(NodeShm::Require));
        for c in NodeShm::BY_STRICTNESS {
            assert_eq!(NodeShm::BY_STRICTNESS[c as usize], c);
        }
        assert_eq!(passive("Active"), Some(false));
    }
}
