//! Which collective call a row times: one of the library's collectives ([`Collective`], the one
//! list of them, with its names) in one of its forms. The library counts the exclusive scan
//! under `Scan` and the `v` forms under their collectives; the bench times them as calls of
//! their own, and [`VARIANTS`] is the whole of what it adds to the library's list.

use corecoll::Collective;

/// The form of a call: the collective's plain call or one of its variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Form {
    /// The call of the collective's name: `Comm::allreduce_with`, `Comm::scan_with`, …
    Plain,
    /// The exclusive scan, `Comm::exscan_with`.
    Exclusive,
    /// The `v` form, with equal counts on every rank: `Comm::gatherv`, `Comm::scatterv`,
    /// `Comm::allgatherv`, `Comm::alltoallv`.
    Varying,
    /// The non-blocking form (`Scope::iallreduce`, …), which `--collective iallreduce` measures
    /// as the OSU non-blocking benchmarks do (`overlap`), not in the sweep.
    Nonblocking,
}

/// The collectives with a non-blocking form, whose names are `i` + the collective's.
pub const NONBLOCKING: [Collective; 7] = [
    Collective::Allreduce,
    Collective::Broadcast,
    Collective::Reduce,
    Collective::Allgather,
    Collective::Alltoall,
    Collective::ReduceScatter,
    Collective::Barrier,
];

/// The variants the bench times besides the plain calls: the collective, the form and the
/// name on the command line and in the results.
pub const VARIANTS: [(Collective, Form, &str); 5] = [
    (Collective::Scan, Form::Exclusive, "exscan"),
    (Collective::Gather, Form::Varying, "gatherv"),
    (Collective::Scatter, Form::Varying, "scatterv"),
    (Collective::Allgather, Form::Varying, "allgatherv"),
    (Collective::Alltoall, Form::Varying, "alltoallv"),
];

/// A collective call the bench can time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Call {
    /// The collective, as the library lists it.
    pub collective: Collective,
    /// The form of its call.
    pub form: Form,
}

impl Call {
    /// The plain call of `collective`.
    pub const fn plain(collective: Collective) -> Call {
        Call {
            collective,
            form: Form::Plain,
        }
    }

    /// Every call, in the order `--collective all` sweeps them: the library's collectives in
    /// its order, each followed by its variants.
    pub fn all() -> Vec<Call> {
        let mut out = Vec::new();
        for c in Collective::ALL {
            out.push(Call::plain(c));
            out.extend(
                VARIANTS
                    .iter()
                    .filter(|v| v.0 == c)
                    .map(|&(collective, form, _)| Call { collective, form }),
            );
        }
        out
    }

    /// The name on the command line and in the results: the library's name of the
    /// collective for a plain call (`allreduce`, `reduce-scatter`), else the variant's.
    pub fn name(self) -> &'static str {
        match self.form {
            Form::Plain => self.collective.name(),
            Form::Nonblocking => match self.collective {
                Collective::Allreduce => "iallreduce",
                Collective::Broadcast => "ibroadcast",
                Collective::Reduce => "ireduce",
                Collective::Allgather => "iallgather",
                Collective::Alltoall => "ialltoall",
                Collective::ReduceScatter => "ireduce-scatter",
                Collective::Barrier => "ibarrier",
                _ => "?",
            },
            _ => VARIANTS
                .iter()
                .find(|v| (v.0, v.1) == (self.collective, self.form))
                .map_or("?", |v| v.2),
        }
    }

    /// The call named `name` ([`Call::name`]'s spelling; `_` may stand for `-`).
    pub fn from_name(name: &str) -> Option<Call> {
        let name = name.trim().replace('_', "-");
        Collective::from_name(&name)
            .map(Call::plain)
            .or_else(|| {
                VARIANTS
                    .iter()
                    .find(|v| v.2 == name)
                    .map(|&(collective, form, _)| Call { collective, form })
            })
            .or_else(|| {
                let plain = Collective::from_name(name.strip_prefix('i')?)?;
                NONBLOCKING.contains(&plain).then_some(Call {
                    collective: plain,
                    form: Form::Nonblocking,
                })
            })
    }

    /// Whether it combines values with `--op`.
    pub fn reduces(self) -> bool {
        matches!(
            self.collective,
            Collective::Allreduce
                | Collective::Reduce
                | Collective::Scan
                | Collective::ReduceScatter
        )
    }

    /// Whether the buffer of `bytes` holds p blocks (one per rank) rather than one vector.
    pub fn blocked(self) -> bool {
        matches!(
            self.collective,
            Collective::Gather
                | Collective::Scatter
                | Collective::Allgather
                | Collective::Alltoall
                | Collective::ReduceScatter
        )
    }

    /// Whether it is the barrier, which moves no data (its one size is 0).
    pub fn is_barrier(self) -> bool {
        self.collective == Collective::Barrier
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The calls of `--collective`, in the order given (duplicates dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calls(pub Vec<Call>);

/// Parses `--collective`: `all` or a comma-separated list of names.
pub fn parse_calls(s: &str) -> Result<Calls, String> {
    if s.trim() == "all" {
        return Ok(Calls(Call::all()));
    }
    let mut out = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let c = Call::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Call::all().into_iter().map(Call::name).collect();
            format!(
                "unknown collective `{name}` (one of: all, {})",
                names.join(", ")
            )
        })?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err("no collective given".into());
    }
    Ok(Calls(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_is_named_and_found_by_its_name() {
        let all = Call::all();
        assert_eq!(all.len(), Collective::ALL.len() + VARIANTS.len());
        assert_eq!(all[0], Call::plain(Collective::Allreduce));
        for c in &all {
            assert_eq!(Call::from_name(c.name()), Some(*c), "{c}");
        }
        for c in NONBLOCKING {
            let nb = Call {
                collective: c,
                form: Form::Nonblocking,
            };
            assert_eq!(Call::from_name(nb.name()), Some(nb), "{nb}");
        }
        assert_eq!(Call::from_name("iscatter"), None);
        let exscan = Call::from_name("exscan").unwrap();
        assert_eq!(
            (exscan.collective, exscan.form),
            (Collective::Scan, Form::Exclusive)
        );
        assert!(exscan.reduces() && !exscan.blocked());
        let gatherv = Call::from_name("gatherv").unwrap();
        assert!(gatherv.blocked() && !gatherv.reduces());
        assert_eq!(
            Call::from_name("reduce_scatter"),
            Some(Call::plain(Collective::ReduceScatter))
        );
        assert!(Call::from_name("allreduse").is_none());
        assert!(Call::from_name("barrier").unwrap().is_barrier());
    }

    #[test]
    fn collectives_parse() {
        assert_eq!(parse_calls("all").unwrap().0, Call::all());
        let names = |s: &str| -> Vec<&str> {
            parse_calls(s)
                .unwrap()
                .0
                .into_iter()
                .map(Call::name)
                .collect()
        };
        assert_eq!(
            names("broadcast, allreduce,broadcast"),
            ["broadcast", "allreduce"]
        );
        assert_eq!(
            names("reduce_scatter,alltoallv"),
            ["reduce-scatter", "alltoallv"]
        );
        let e = parse_calls("allreduse").unwrap_err();
        assert!(
            e.contains("unknown collective `allreduse`") && e.contains("exscan"),
            "{e}"
        );
        assert!(parse_calls(" , ").is_err());
    }
}
