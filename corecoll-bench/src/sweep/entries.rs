//! The rows of a sweep: which algorithms and baselines `--algorithms` selects for a
//! collective, with the fixed-block rows that `--blocks` adds beside each pipelined
//! algorithm's `Block::Auto` row, and the check of `--algorithms` against the collectives.

use crate::domain::{
    algorithms, parse_alg_specs, with_param, Alg, AlgSpec, Call, Dtype, Param, BLOCK_SWEPT,
};
use crate::{baselines, peers};

/// What runs one row: a corecoll algorithm or a baseline.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// corecoll's algorithm (with its parameter set).
    Corecoll(Alg),
    /// A baseline, by its name.
    Baseline(&'static str),
    /// A peer, by its name.
    Peer(&'static str),
}

/// One entry of a collective's list: the row's name (with its parameter, e.g.
/// `hierarchical:64KiB`) and what runs it.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// The name in the results.
    pub(super) name: String,
    /// What runs it.
    pub(super) kind: Kind,
}

impl Entry {
    /// The name in the results.
    pub(super) fn name(&self) -> &str {
        &self.name
    }
}

/// The entries of `c` that `--algorithms` selects (`all`, or a list of names, some with
/// parameters, whose block sizes are counted in elements of `dtype`), each pipelined one of
/// [`BLOCK_SWEPT`] followed by its rows with the fixed blocks of `blocks` (bytes; see
/// [`with_blocks`]). The order is the collective's, each name's parameterised rows after it
/// in the order given. An item that does not apply to `c` (another collective's name, a
/// parameter that `c`'s algorithm of that name does not take) selects nothing.
pub(super) fn entries(c: Call, selection: &str, dtype: Dtype, blocks: &[usize]) -> Vec<Entry> {
    with_blocks(selected(c, selection, dtype), blocks, dtype)
}

/// `list` with, after each entry of [`BLOCK_SWEPT`] without a parameter (its `Block::Auto`
/// row), one entry per block of `blocks` (bytes) that the algorithm takes, named as
/// `--algorithms` would name it (`dual-root:4KiB`); a name already in the list is not added
/// twice.
fn with_blocks(list: Vec<Entry>, blocks: &[usize], dtype: Dtype) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for e in list {
        let mut extra = Vec::new();
        if let Kind::Corecoll(a) = e.kind {
            if BLOCK_SWEPT.contains(&e.name.as_str()) {
                for &b in blocks {
                    let param = Param::Bytes(b);
                    if let Some(fixed) = with_param(a, param, dtype) {
                        extra.push(Entry {
                            name: format!("{}:{}", e.name, param.label()),
                            kind: Kind::Corecoll(fixed),
                        });
                    }
                }
            }
        }
        for e in std::iter::once(e).chain(extra) {
            if !out.iter().any(|o| o.name == e.name) {
                out.push(e);
            }
        }
    }
    out
}

/// The entries of `c` that `--algorithms` selects, without `--blocks` (see [`entries`]).
pub(super) fn selected(c: Call, selection: &str, dtype: Dtype) -> Vec<Entry> {
    let all: Vec<(&'static str, Kind)> = algorithms(c)
        .into_iter()
        .map(|(n, a)| (n, Kind::Corecoll(a)))
        .chain(
            baselines::names(c)
                .into_iter()
                .map(|n| (n, Kind::Baseline(n))),
        )
        .chain(peers::names(c).into_iter().map(|n| (n, Kind::Peer(n))))
        .collect();
    if selection.trim() == "all" {
        return all
            .into_iter()
            .map(|(n, kind)| Entry {
                name: n.into(),
                kind,
            })
            .collect();
    }
    // Checked by `check_algorithms` before the sweep.
    let specs = parse_alg_specs(selection).unwrap_or_default();
    let mut out = Vec::new();
    for (name, kind) in all {
        // A peer's family name (`openmp`, `rayon`) selects each of its rows.
        let named = |s: &&AlgSpec| {
            s.name == name
                || matches!(kind, Kind::Peer(_))
                    && peers::family(name).is_some_and(|f| f.eq_ignore_ascii_case(&s.name))
        };
        for spec in specs.iter().filter(named) {
            match (spec.param, kind) {
                (None, _) => out.push(Entry {
                    name: name.into(),
                    kind,
                }),
                (Some(p), Kind::Corecoll(a)) => {
                    if let Some(a) = with_param(a, p, dtype) {
                        out.push(Entry {
                            name: spec.label(),
                            kind: Kind::Corecoll(a),
                        });
                    }
                }
                (Some(_), Kind::Baseline(_) | Kind::Peer(_)) => {}
            }
        }
    }
    out
}

/// Every name `--algorithms` accepts for `collectives` (for its error message).
fn known_names(collectives: &[Call]) -> Vec<String> {
    let mut names: Vec<String> = collectives
        .iter()
        .flat_map(|&c| selected(c, "all", Dtype::F64).into_iter().map(|e| e.name))
        .collect();
    // The MPI libraries' rows and their aliases (a library the build did not find selects
    // nothing), and the peers' families.
    names.extend(crate::mpi_baseline::names());
    names.extend(["openmp".to_string(), "rayon".to_string()]);
    names.sort_unstable();
    names.dedup();
    names
}

/// Checks `--algorithms` against `collectives`: every name is known, and every parameter is
/// taken by the algorithm of that name of at least one of them.
pub(super) fn check_algorithms(collectives: &[Call], selection: &str) -> Result<(), String> {
    if selection.trim() == "all" {
        return Ok(());
    }
    let known = known_names(collectives);
    for spec in parse_alg_specs(selection).map_err(|e| format!("--algorithms: {e}"))? {
        if !known.contains(&spec.name) {
            return Err(format!(
                "unknown algorithm `{}` (known here: {})",
                spec.name,
                known.join(", ")
            ));
        }
        if spec.param.is_some() {
            let label = spec.label();
            let taken = collectives.iter().any(|&c| {
                selected(c, &label, Dtype::F64)
                    .iter()
                    .any(|e| e.name == label)
            });
            if !taken {
                return Err(format!(
                    "`{label}`: `{}` takes no parameter here (parameters: the block size of \
                     chain, ring, pipelined-tree, dual-root and two-tree, the segment size of \
                     allreduce's hierarchical, the fanout of alltoall's ring-leaders)",
                    spec.name
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The call named `name`.
    fn call(name: &str) -> Call {
        Call::from_name(name).unwrap()
    }

    #[test]
    fn parameterised_entries() {
        let names = |c, sel: &str| -> Vec<String> {
            entries(c, sel, Dtype::F64, &[])
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(
            names(
                call("allreduce"),
                "direct,hierarchical:1KiB,auto,hierarchical,dual-root:64"
            ),
            [
                "auto",
                "dual-root:64B",
                "direct",
                "hierarchical:1KiB",
                "hierarchical"
            ]
        );
        // A parameter the collective's algorithm does not take selects nothing there.
        assert!(names(call("broadcast"), "hierarchical:1KiB").is_empty());
        assert_eq!(
            names(call("alltoall"), "ring-leaders:fanout=2,ring-leaders"),
            ["ring-leaders:2", "ring-leaders"]
        );
        let both = [call("allreduce"), call("broadcast")];
        assert!(check_algorithms(&both, "hierarchical:1KiB,pipelined-tree:4KiB").is_ok());
        let e = check_algorithms(&[call("broadcast")], "hierarchical:1KiB").unwrap_err();
        assert!(e.contains("takes no parameter"), "{e}");
        let e = check_algorithms(&both, "limit:8").unwrap_err();
        assert!(e.contains("takes no parameter"), "{e}");
        let e = check_algorithms(&both, "hierarchical:fast").unwrap_err();
        assert!(e.contains("block size"), "{e}");
        let e = check_algorithms(&both, "fastest:8").unwrap_err();
        assert!(e.contains("unknown algorithm `fastest`"), "{e}");
    }

    #[test]
    fn blocks_expand_the_pipelined_algorithms() {
        let names = |c, sel: &str, blocks: &[usize]| -> Vec<String> {
            entries(c, sel, Dtype::F64, blocks)
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(
            names(
                call("allreduce"),
                "ring,dual-root,dual-root:4KiB,direct",
                &[1024, 4096]
            ),
            [
                "ring",
                "ring:1KiB",
                "ring:4KiB",
                "dual-root",
                "dual-root:1KiB",
                "dual-root:4KiB",
                "direct"
            ]
        );
        // Every swept algorithm of allreduce gets its rows; the hierarchy's segment does not.
        let all = names(call("allreduce"), "all", &[64]);
        for n in [
            "chain:64B",
            "ring:64B",
            "pipelined-tree:64B",
            "dual-root:64B",
            "two-tree:64B",
        ] {
            assert!(all.iter().any(|a| a == n), "{n}: {all:?}");
        }
        assert!(!all.iter().any(|a| a.starts_with("hierarchical:")));
        // The block is set, in elements of the type.
        let e = entries(call("broadcast"), "pipelined-tree", Dtype::F32, &[4096]);
        assert_eq!(e.len(), 2);
        assert!(matches!(
            e[1].kind,
            Kind::Corecoll(Alg::Library(corecoll::algorithm::Any::Broadcast(
                corecoll::algorithm::Broadcast::PipelinedTree {
                    block: corecoll::Block::Elements(1024)
                }
            )))
        ));
        // Not pipelined: nothing added.
        assert_eq!(names(call("allgather"), "ring", &[64]), ["ring"]);
    }

    #[test]
    fn algorithm_selection() {
        let names = |sel: &str| -> Vec<String> {
            entries(call("allreduce"), sel, Dtype::F64, &[])
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(names("direct, limit"), ["direct", "limit"]);
        // A peer's family selects its rows.
        assert_eq!(
            names("auto,openmp,rayon-chunks"),
            ["auto", "openmp-reduction", "openmp-slices", "rayon-chunks"]
        );
        assert_eq!(names("rayon"), ["rayon-reduce", "rayon-chunks"]);
        assert_eq!(names("all")[0], "auto");
        assert!(names("all").iter().any(|n| n == "channels"));
        assert!(entries(call("broadcast"), "all", Dtype::F64, &[])
            .iter()
            .all(|e| e.name() != "channels"));
        let known = known_names(&[call("allreduce")]);
        for n in [
            "auto",
            "dual-root",
            "limit",
            "std-naive",
            "channels",
            "mpi",
            "mpi-reduce-bcast",
            "openmpi",
            "mpich-reduce-bcast",
            "openmp",
            "rayon",
        ] {
            assert!(known.iter().any(|k| k == n), "{n}");
        }
    }
}
