//! corecoll's algorithms of each call ([`Alg`], [`algorithms`]: the one place that pairs a
//! collective with the library's enum of its algorithms), and the parameters that
//! `--algorithms NAME:VALUE` sets on them ([`Param`], [`with_param`]).

use super::{fmt_bytes, parse_size, Call, Dtype, Form};
use corecoll::algorithm::Any;
use corecoll::algorithm::{Alltoall, Broadcast, Fanout, Reduce, Scan};
use corecoll::Collective;
use corecoll::{Algorithm, Block};

/// A corecoll algorithm of some call: one of the library's algorithms of the call's
/// collective, or the one algorithm of a `v` form (whose calls take none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Alg {
    /// The library's value of a collective and one of its algorithms (its cost-model
    /// simulator runs the same values, the schedules among them).
    Library(Any),
    /// The one algorithm of a `v` form.
    Fixed,
}

/// The pipelined algorithms whose block `--blocks` sweeps, and whose `Block::Auto` row the
/// block table compares with their fixed-block rows (the ring's block is its largest piece).
pub const BLOCK_SWEPT: &[&str] = &["chain", "ring", "pipelined-tree", "dual-root", "two-tree"];

/// corecoll's algorithms of `call` between threads, `auto` first, with their names (without
/// `native`, MPI's own collective between processes, which is `auto` between threads); a `v`
/// form's one algorithm.
pub fn algorithms(call: Call) -> Vec<(&'static str, Alg)> {
    if call.form == Form::Varying {
        let name = match call.collective {
            Collective::Allgather => "ring",
            Collective::Alltoall => "pairwise",
            _ => "linear",
        };
        return vec![(name, Alg::Fixed)];
    }
    Any::of(call.collective)
        .into_iter()
        .filter(|a| a.name() != "native")
        .map(|a| (a.name(), Alg::Library(a)))
        .collect()
}

/// `alg` with its parameter set to `param` (a block or segment of `param` bytes, in elements
/// of `dtype`, at least 1; or a ring-leaders fanout), or `None` when `alg` takes no such
/// parameter.
pub fn with_param(alg: Alg, param: Param, dtype: Dtype) -> Option<Alg> {
    let block = match param {
        Param::Bytes(b) => Some(Block::Elements((b / dtype.size()).max(1))),
        Param::Fanout(_) => None,
    };
    use Any as S;
    let Alg::Library(c) = alg else {
        return None;
    };
    Some(Alg::Library(match (c, param) {
        (S::Allreduce(a), Param::Bytes(_)) => S::Allreduce(match a {
            Algorithm::Chain { .. } => Algorithm::Chain { block: block? },
            Algorithm::Ring { .. } => Algorithm::Ring { block: block? },
            Algorithm::PipelinedTree { .. } => Algorithm::PipelinedTree { block: block? },
            Algorithm::DualRoot { .. } => Algorithm::DualRoot { block: block? },
            Algorithm::TwoTree { .. } => Algorithm::TwoTree { block: block? },
            Algorithm::Hierarchical { .. } => Algorithm::Hierarchical { segment: block? },
            _ => return None,
        }),
        (S::Broadcast(Broadcast::PipelinedTree { .. }), Param::Bytes(_)) => {
            S::Broadcast(Broadcast::PipelinedTree { block: block? })
        }
        (S::Reduce(Reduce::PipelinedTree { .. }), Param::Bytes(_)) => {
            S::Reduce(Reduce::PipelinedTree { block: block? })
        }
        (S::Scan(Scan::PipelinedTree { .. }), Param::Bytes(_)) => {
            S::Scan(Scan::PipelinedTree { block: block? })
        }
        (S::Alltoall(Alltoall::RingLeaders { .. }), Param::Fanout(n)) => {
            S::Alltoall(Alltoall::RingLeaders {
                fanout: Fanout::Exchanges(n),
            })
        }
        _ => return None,
    }))
}

/// The parameter of an algorithm in `--algorithms` (`NAME:VALUE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// A block or segment size in bytes (at least 1).
    Bytes(usize),
    /// The fanout of `ring-leaders`: exchanges in flight per round (at least 1).
    Fanout(usize),
}

impl Param {
    /// The spelling in the row's name: `64KiB`, `100B`, `2`.
    pub fn label(self) -> String {
        match self {
            Param::Bytes(b) => fmt_bytes(b).replace(' ', ""),
            Param::Fanout(n) => n.to_string(),
        }
    }
}

/// One item of `--algorithms`: a name and its parameter, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlgSpec {
    /// The algorithm's or baseline's name.
    pub name: String,
    /// The parameter after `:`.
    pub param: Option<Param>,
}

impl AlgSpec {
    /// The row's name: `NAME`, or `NAME:VALUE` with the value in canonical form.
    pub fn label(&self) -> String {
        match self.param {
            None => self.name.clone(),
            Some(p) => format!("{}:{}", self.name, p.label()),
        }
    }
}

/// Parses one item of `--algorithms`: `NAME`, `NAME:SIZE` (bytes, with the size suffixes;
/// `block=` or `segment=` may precede it) or, for `ring-leaders`, `NAME:N` or
/// `NAME:fanout=N`.
pub fn parse_alg_spec(item: &str) -> Result<AlgSpec, String> {
    let item = item.trim();
    let Some((name, value)) = item.split_once(':') else {
        return Ok(AlgSpec {
            name: item.to_string(),
            param: None,
        });
    };
    let (name, value) = (name.trim(), value.trim());
    let param = if name == "ring-leaders" {
        let v = value.strip_prefix("fanout=").unwrap_or(value).trim();
        match v.parse::<usize>() {
            Ok(n) if n >= 1 => Param::Fanout(n),
            _ => {
                return Err(format!(
                    "`{item}`: ring-leaders takes a fanout of at least 1 (`ring-leaders:2` or \
                     `ring-leaders:fanout=2`)"
                ))
            }
        }
    } else {
        let v = value
            .strip_prefix("block=")
            .or_else(|| value.strip_prefix("segment="))
            .unwrap_or(value);
        match parse_size(v) {
            Ok(0) => return Err(format!("`{item}`: the block size must be at least 1 byte")),
            Ok(b) => Param::Bytes(b),
            Err(e) => return Err(format!("`{item}`: the parameter is a block size: {e}")),
        }
    };
    Ok(AlgSpec {
        name: name.to_string(),
        param: Some(param),
    })
}

/// Parses the list of `--algorithms` (not `all`): its items in order, duplicates dropped.
pub fn parse_alg_specs(s: &str) -> Result<Vec<AlgSpec>, String> {
    let mut out: Vec<AlgSpec> = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let a = parse_alg_spec(item)?;
        if !out.iter().any(|b| b.label() == a.label()) {
            out.push(a);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_parameters_parse() {
        let a = parse_alg_spec("hierarchical:64KiB").unwrap();
        assert_eq!(a.param, Some(Param::Bytes(64 << 10)));
        assert_eq!(a.label(), "hierarchical:64KiB");
        assert_eq!(parse_alg_spec("direct").unwrap().label(), "direct");
        assert_eq!(
            parse_alg_spec("dual-root:block=100").unwrap().label(),
            "dual-root:100B"
        );
        assert_eq!(
            parse_alg_spec("ring-leaders:2").unwrap().param,
            Some(Param::Fanout(2))
        );
        assert_eq!(
            parse_alg_spec("ring-leaders:fanout=3").unwrap().label(),
            "ring-leaders:3"
        );
        assert!(parse_alg_spec("ring-leaders:0").is_err());
        assert!(parse_alg_spec("ring-leaders:1KiB").is_err());
        assert!(parse_alg_spec("hierarchical:0").is_err());
        assert!(parse_alg_spec("hierarchical:lots").is_err());
        let list =
            parse_alg_specs("auto, hierarchical,hierarchical:1KiB,hierarchical:1024").unwrap();
        let labels: Vec<String> = list.iter().map(AlgSpec::label).collect();
        assert_eq!(labels, ["auto", "hierarchical", "hierarchical:1KiB"]);
    }

    #[test]
    fn every_call_has_algorithms_auto_first_or_its_one() {
        for call in Call::all() {
            let algs = algorithms(call);
            let names: Vec<&str> = algs.iter().map(|a| a.0).collect();
            match call.form {
                Form::Varying => assert_eq!(algs.len(), 1, "{call}"),
                _ => assert_eq!(names[0], "auto", "{call}"),
            }
            assert!(!names.contains(&"native"), "{call}");
        }
        let names = |c: &str| -> Vec<&str> {
            algorithms(Call::from_name(c).unwrap())
                .into_iter()
                .map(|a| a.0)
                .collect()
        };
        assert_eq!(names("alltoallv"), ["pairwise"]);
        assert_eq!(names("allgatherv"), ["ring"]);
        assert_eq!(names("gatherv"), ["linear"]);
        assert_eq!(names("exscan"), names("scan"));
    }

    #[test]
    fn parameters_apply_to_the_algorithms_that_take_them() {
        let find = |c: &str, name| {
            algorithms(Call::from_name(c).unwrap())
                .into_iter()
                .find(|(n, _)| *n == name)
                .unwrap()
                .1
        };
        let h = find("allreduce", "hierarchical");
        assert_eq!(
            with_param(h, Param::Bytes(1024), Dtype::F64),
            Some(Alg::Library(Any::Allreduce(Algorithm::Hierarchical {
                segment: Block::Elements(128)
            })))
        );
        // Less than one element is one element.
        let d = find("allreduce", "dual-root");
        assert_eq!(
            with_param(d, Param::Bytes(3), Dtype::F32),
            Some(Alg::Library(Any::Allreduce(Algorithm::DualRoot {
                block: Block::Elements(1)
            })))
        );
        assert_eq!(with_param(d, Param::Fanout(2), Dtype::F64), None);
        // The chain's block and the ring's largest piece.
        assert_eq!(
            with_param(find("allreduce", "chain"), Param::Bytes(4096), Dtype::F64),
            Some(Alg::Library(Any::Allreduce(Algorithm::Chain {
                block: Block::Elements(512)
            })))
        );
        assert_eq!(
            with_param(find("allreduce", "ring"), Param::Bytes(64), Dtype::F32),
            Some(Alg::Library(Any::Allreduce(Algorithm::Ring {
                block: Block::Elements(16)
            })))
        );
        for c in ["broadcast", "reduce", "scan"] {
            assert!(with_param(find(c, "pipelined-tree"), Param::Bytes(64), Dtype::U8).is_some());
        }
        let rl = find("alltoall", "ring-leaders");
        assert_eq!(
            with_param(rl, Param::Fanout(2), Dtype::F64),
            Some(Alg::Library(Any::Alltoall(Alltoall::RingLeaders {
                fanout: Fanout::Exchanges(2)
            })))
        );
        assert_eq!(with_param(rl, Param::Bytes(8), Dtype::F64), None);
        for (c, name) in [
            ("allreduce", "direct"),
            ("broadcast", "hierarchical"),
            ("barrier", "hierarchical"),
        ] {
            assert_eq!(
                with_param(find(c, name), Param::Bytes(64), Dtype::F64),
                None
            );
        }
        // Every name of BLOCK_SWEPT takes a block in allreduce.
        for name in BLOCK_SWEPT {
            assert!(with_param(find("allreduce", name), Param::Bytes(64), Dtype::F64).is_some());
        }
    }
}
