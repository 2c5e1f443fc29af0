//! Decision tables: which algorithm `Auto` runs, by collective, rank count and size, read off
//! measurements rather than picked by hand.
//!
//! A [`Table`] says, for one collective measured on `ranks` ranks with or without
//! oversubscribed cores, which algorithm was fastest over each range of sizes, as [`Rules`] in
//! the syntax of oneCCL's `CCL_ALLREDUCE` variable: `recursive-doubling:0-4095;direct:4096-max`
//! (a name alone covers every size). `corecoll-bench --tune` derives the tables from a sweep's
//! measurements (docs/tuning.md) and stores them in a calibration profile
//! ([`Profile::tables`](crate::Profile::tables)); the crate carries the tables measured on the
//! development machine ([`builtin`]), which apply where a profile has none.
//!
//! **Size.** A rule's sizes are bytes per rank as the benchmark counts them: the largest
//! buffer a rank passes — the vector of allreduce, broadcast, reduce and scan, all p blocks of
//! gather, scatter, allgather, alltoall and reduce-scatter (the root's for the rooted ones); 0
//! for the barrier.
//!
//! **Who decides.** For a call with `Auto`, the first of these that covers the call's size
//! gives the algorithm ([`Tuning::decide`]):
//!
//! 1. the environment: `CORECOLL_ALLREDUCE`, `CORECOLL_BROADCAST`, … (`Collective::env_var`),
//!    read when the team is built; the person running the program overrides the program;
//! 2. the program: [`TeamBuilder::algorithm_rules`](crate::TeamBuilder::algorithm_rules);
//! 3. the profile's tables for the collective, if it has any, else the built-in ones: of
//!    those the nearest to the communicator — fewest doublings of p apart, a table of the
//!    other regime (oversubscribed or not) counting one doubling farther — and in it, for a
//!    non-commutative allreduce, the rules among the algorithms that keep rank order;
//! 4. the crate's fixed rules (`select::choose_*`), for anything left uncovered.
//!
//! An override naming an algorithm that cannot serve the call (the ring for a non-commutative
//! allreduce) is passed over for that call, as a range it does not cover is.
//!
//! **What tables can name.** The flat algorithms only: not `auto`, not `native` (MPI's, which
//! between threads is `Auto`), and not the hierarchical ones, which `Auto` takes by the
//! hierarchy rule (`select::prefer_hierarchy`) on a team that spans several L3 groups or
//! packages, a decision no table measured on this one-L3 machine could make. The tables apply
//! between threads; between MPI processes (`hybrid::ProcessComm`) `Auto` keeps its own
//! rules, which weigh MPI's costs.
//!
//! Like `Block::Auto`, the choice depends only on what every rank of the call shares (the
//! team, the communicator's size, the call's size), so all ranks make the same one.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

/// A collective whose `Auto` the tables decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Collective {
    /// `Comm::allreduce`.
    Allreduce,
    /// `Comm::broadcast`.
    Broadcast,
    /// `Comm::reduce`.
    Reduce,
    /// `Comm::scan` and `Comm::exscan`.
    Scan,
    /// `Comm::gather`.
    Gather,
    /// `Comm::scatter`.
    Scatter,
    /// `Comm::allgather`.
    Allgather,
    /// `Comm::alltoall`.
    Alltoall,
    /// `Comm::reduce_scatter_block`.
    ReduceScatter,
    /// `Comm::barrier`.
    Barrier,
}

impl Collective {
    /// Every collective, in the order of the enum.
    pub const ALL: [Collective; 10] = [
        Collective::Allreduce,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::Scan,
        Collective::Gather,
        Collective::Scatter,
        Collective::Allgather,
        Collective::Alltoall,
        Collective::ReduceScatter,
        Collective::Barrier,
    ];

    /// The name, as the benchmark's `--collective` and the tables spell it: `allreduce`, …,
    /// `reduce-scatter`, `barrier`.
    pub fn name(self) -> &'static str {
        match self {
            Collective::Allreduce => "allreduce",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::Scan => "scan",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
            Collective::Allgather => "allgather",
            Collective::Alltoall => "alltoall",
            Collective::ReduceScatter => "reduce-scatter",
            Collective::Barrier => "barrier",
        }
    }

    /// The collective's place in [`Collective::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The collective called `name` ([`Collective::name`]'s spelling).
    pub fn from_name(name: &str) -> Option<Collective> {
        Collective::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The environment variable that overrides this collective's tables:
    /// `CORECOLL_ALLREDUCE`, …, `CORECOLL_REDUCE_SCATTER`, `CORECOLL_BARRIER`.
    pub fn env_var(self) -> &'static str {
        match self {
            Collective::Allreduce => "CORECOLL_ALLREDUCE",
            Collective::Broadcast => "CORECOLL_BROADCAST",
            Collective::Reduce => "CORECOLL_REDUCE",
            Collective::Scan => "CORECOLL_SCAN",
            Collective::Gather => "CORECOLL_GATHER",
            Collective::Scatter => "CORECOLL_SCATTER",
            Collective::Allgather => "CORECOLL_ALLGATHER",
            Collective::Alltoall => "CORECOLL_ALLTOALL",
            Collective::ReduceScatter => "CORECOLL_REDUCE_SCATTER",
            Collective::Barrier => "CORECOLL_BARRIER",
        }
    }

    /// The algorithms a rule may name for this collective: the flat ones (module docs).
    pub fn algorithms(self) -> Vec<&'static str> {
        use crate::select::*;
        let names: Vec<&'static str> = match self {
            Collective::Allreduce => Algorithm::ALL.iter().map(|a| a.name()).collect(),
            Collective::Broadcast => Broadcast::ALL.iter().map(|a| a.name()).collect(),
            Collective::Reduce => Reduce::ALL.iter().map(|a| a.name()).collect(),
            Collective::Scan => Scan::ALL.iter().map(|a| a.name()).collect(),
            Collective::Gather => Gather::ALL.iter().map(|a| a.name()).collect(),
            Collective::Scatter => Scatter::ALL.iter().map(|a| a.name()).collect(),
            Collective::Allgather => Allgather::ALL.iter().map(|a| a.name()).collect(),
            Collective::Alltoall => Alltoall::ALL.iter().map(|a| a.name()).collect(),
            Collective::ReduceScatter => ReduceScatter::ALL.iter().map(|a| a.name()).collect(),
            Collective::Barrier => Barrier::ALL.iter().map(|a| a.name()).collect(),
        };
        names
            .into_iter()
            .filter(|n| {
                !matches!(
                    *n,
                    "auto" | "native" | "hierarchical" | "hierarchical-direct" | "ring-leaders"
                )
            })
            .collect()
    }

    /// Whether `algorithm` can serve a call whose op is `commutative` or not: every one but
    /// the allreduce's ring keeps rank order.
    pub fn admits(self, algorithm: &str, commutative: bool) -> bool {
        commutative || !(self == Collective::Allreduce && algorithm == "ring")
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One rule: sizes `from..=to` bytes per rank (`to` = `None`: no bound) run `algorithm`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The smallest size covered, bytes.
    pub from: usize,
    /// The largest size covered, bytes (`None`: every larger size).
    pub to: Option<usize>,
    /// The algorithm's name, one of [`Collective::algorithms`].
    pub algorithm: &'static str,
}

impl Rule {
    /// Whether the rule covers `bytes`.
    pub fn covers(&self, bytes: usize) -> bool {
        bytes >= self.from && self.to.is_none_or(|t| bytes <= t)
    }
}

/// The rules for one collective, in the syntax of oneCCL's algorithm variables:
/// `name:from-to;name:from-to;…`, sizes in bytes (a suffix `K`/`KiB`, `M`/`MiB`, `G`/`GiB`
/// multiplies by 2¹⁰, 2²⁰, 2³⁰), `to` inclusive or `max`; a name alone covers every size.
/// Ranges must not overlap; sizes they leave out fall to the next source of the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// The collective whose algorithms the rules name.
    pub collective: Collective,
    /// The rules, by their first size.
    pub rules: Vec<Rule>,
}

impl Rules {
    /// Parses `text` as rules for `collective`. Errors say which item is wrong: an unknown or
    /// excluded algorithm name (with the names allowed), a malformed size, a range whose end
    /// precedes its start, overlapping ranges, or no rule at all.
    pub fn parse(collective: Collective, text: &str) -> std::result::Result<Rules, String> {
        let allowed = collective.algorithms();
        let mut rules = Vec::new();
        for item in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, range) = match item.split_once(':') {
                Some((n, r)) => (n.trim(), Some(r.trim())),
                None => (item, None),
            };
            let Some(&algorithm) = allowed.iter().find(|&&a| a == name) else {
                return Err(format!(
                    "`{item}`: `{name}` is not a {collective} algorithm a rule may name \
                     (one of: {})",
                    allowed.join(", ")
                ));
            };
            let (from, to) = match range {
                None => (0, None),
                Some(r) => {
                    let (a, b) = r.split_once('-').ok_or_else(|| {
                        format!(
                            "`{item}`: the range `{r}` is not FROM-TO (e.g. 0-4096 or 4097-max)"
                        )
                    })?;
                    let from = parse_size(a).map_err(|e| format!("`{item}`: {e}"))?;
                    let to = match b.trim() {
                        "max" => None,
                        b => Some(parse_size(b).map_err(|e| format!("`{item}`: {e}"))?),
                    };
                    if to.is_some_and(|t| t < from) {
                        return Err(format!("`{item}`: the range ends before it starts"));
                    }
                    (from, to)
                }
            };
            rules.push(Rule {
                from,
                to,
                algorithm,
            });
        }
        if rules.is_empty() {
            return Err("no rule (expected NAME:FROM-TO;…)".into());
        }
        rules.sort_by_key(|r| r.from);
        for w in rules.windows(2) {
            if w[0].to.is_none_or(|t| t >= w[1].from) {
                return Err(format!("the ranges of `{}` and `{}` overlap", w[0], w[1]));
            }
        }
        Ok(Rules { collective, rules })
    }

    /// The algorithm for `bytes`, if a rule covers it.
    pub fn choose(&self, bytes: usize) -> Option<&'static str> {
        self.rules
            .iter()
            .find(|r| r.covers(bytes))
            .map(|r| r.algorithm)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to {
            Some(t) => write!(f, "{}:{}-{}", self.algorithm, self.from, t),
            None => write!(f, "{}:{}-max", self.algorithm, self.from),
        }
    }
}

impl fmt::Display for Rules {
    /// The rules in the syntax [`Rules::parse`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// A size in bytes as rules (and the benchmark's options) write it: digits with an optional
/// suffix `B`, `K`/`KiB`, `M`/`MiB` or `G`/`GiB` (binary multiples, any case).
pub fn parse_size(s: &str) -> std::result::Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    if digits.is_empty() {
        return Err(format!(
            "`{s}` is not a size (digits with an optional B, KiB, MiB or GiB)"
        ));
    }
    let n: usize = digits
        .parse()
        .map_err(|_| format!("`{s}` is too large a size"))?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => return Err(format!("`{s}`: unknown unit `{other}` (B, KiB, MiB, GiB)")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("`{s}` is too large a size"))
}

/// One collective's decision table as measured on `ranks` ranks: the serialised form, in a
/// profile's `tables` (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// The collective.
    pub collective: Collective,
    /// The ranks it was measured on.
    pub ranks: usize,
    /// Whether those ranks shared cores (more ranks than cores).
    pub oversubscribed: bool,
    /// The fastest algorithm per range of sizes ([`Rules`] syntax).
    pub rules: String,
    /// For the allreduce: the fastest of the algorithms that keep rank order, for
    /// non-commutative ops, where it differs from `rules`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noncommutative: Option<String>,
    /// Where the measurement comes from (the command, the machine).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub measured: String,
}

/// A [`Table`] with its rules parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Parsed {
    ranks: usize,
    oversubscribed: bool,
    rules: Rules,
    noncommutative: Option<Rules>,
}

impl Table {
    /// The table's rules parsed and checked: every name an algorithm of the collective that
    /// a rule may name, `noncommutative` only on the allreduce and free of the ring, at least
    /// one rank.
    fn parse(&self) -> std::result::Result<Parsed, String> {
        let at = format!("{} table for {} ranks", self.collective, self.ranks);
        if self.ranks == 0 {
            return Err(format!("{at}: ranks must be at least 1"));
        }
        let rules = Rules::parse(self.collective, &self.rules).map_err(|e| format!("{at}: {e}"))?;
        let noncommutative = match &self.noncommutative {
            None => None,
            Some(_) if self.collective != Collective::Allreduce => {
                return Err(format!(
                    "{at}: `noncommutative` applies to the allreduce only"
                ))
            }
            Some(text) => {
                let r = Rules::parse(self.collective, text).map_err(|e| format!("{at}: {e}"))?;
                if let Some(bad) = r
                    .rules
                    .iter()
                    .find(|r| !self.collective.admits(r.algorithm, false))
                {
                    return Err(format!(
                        "{at}: `noncommutative` names `{}`, which reorders operands",
                        bad.algorithm
                    ));
                }
                Some(r)
            }
        };
        Ok(Parsed {
            ranks: self.ranks,
            oversubscribed: self.oversubscribed,
            rules,
            noncommutative,
        })
    }

    /// Checks every table of `tables` (what [`crate::Profile::from_json`] does with a profile's).
    pub fn check_all(tables: &[Table]) -> std::result::Result<(), String> {
        tables.iter().try_for_each(|t| t.parse().map(drop))
    }
}

/// The decision tables the crate carries, measured on the development machine
/// (docs/tuning.md says how and with which command): the JSON file `src/tuning/builtin.json`.
pub fn builtin() -> &'static [Table] {
    &builtin_parsed().0
}

/// Tables by collective, parsed.
type ParsedTables = Vec<(Collective, Parsed)>;

/// The built-in tables, and parsed.
fn builtin_parsed() -> &'static (Vec<Table>, ParsedTables) {
    static BUILTIN: OnceLock<(Vec<Table>, ParsedTables)> = OnceLock::new();
    BUILTIN.get_or_init(|| {
        // A unit test reads the file the same way, so a bad one fails the tests, not a run;
        // should it still be unreadable, the fixed rules decide (an empty list).
        let tables: Vec<Table> =
            serde_json::from_str(include_str!("builtin.json")).unwrap_or_default();
        let parsed = tables
            .iter()
            .filter_map(|t| Some((t.collective, t.parse().ok()?)))
            .collect();
        (tables, parsed)
    })
}

/// Where a decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The collective's environment variable ([`Collective::env_var`]).
    Environment,
    /// [`TeamBuilder::algorithm_rules`](crate::TeamBuilder::algorithm_rules).
    Program,
    /// A table of the team's profile, measured on `ranks` ranks, `oversubscribed` or not.
    Profile {
        /// The table's ranks.
        ranks: usize,
        /// The table's regime.
        oversubscribed: bool,
    },
    /// A built-in table ([`builtin`]), measured on `ranks` ranks, `oversubscribed` or not.
    BuiltIn {
        /// The table's ranks.
        ranks: usize,
        /// The table's regime.
        oversubscribed: bool,
    },
}

/// What `Auto` runs for one call, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The algorithm's name.
    pub algorithm: &'static str,
    /// Where the decision came from.
    pub source: Source,
}

/// A team's decision procedure: the overrides from its environment and its program, and the
/// tables of its profile (module docs).
#[derive(Debug, Clone, Default)]
pub struct Tuning {
    /// From the environment variables, read when the team was built.
    environment: BTreeMap<Collective, Rules>,
    /// From `TeamBuilder::algorithm_rules`.
    program: BTreeMap<Collective, Rules>,
    /// The profile's tables.
    profile: ParsedTables,
}

impl Tuning {
    /// The tuning of a team: `program`'s overrides (collective, rules text), the environment
    /// variables' ([`Collective::env_var`], unset or empty: none) and `tables` (a profile's).
    /// A rule text or table that does not parse is an [`Error::Tuning`] naming where it came
    /// from.
    pub fn new(tables: &[Table], program: &[(Collective, String)]) -> Result<Tuning> {
        let mut t = Tuning::default();
        for table in tables {
            let parsed = table.parse().map_err(|what| Error::Tuning {
                origin: "profile".into(),
                what,
            })?;
            t.profile.push((table.collective, parsed));
        }
        for (c, text) in program {
            let rules = Rules::parse(*c, text).map_err(|what| Error::Tuning {
                origin: format!("TeamBuilder::algorithm_rules({c})"),
                what,
            })?;
            t.program.insert(*c, rules);
        }
        for c in Collective::ALL {
            match std::env::var(c.env_var()) {
                Ok(text) if !text.trim().is_empty() => {
                    let rules = Rules::parse(c, &text).map_err(|what| Error::Tuning {
                        origin: c.env_var().into(),
                        what,
                    })?;
                    t.environment.insert(c, rules);
                }
                Ok(_) | Err(std::env::VarError::NotPresent) => {}
                Err(std::env::VarError::NotUnicode(_)) => {
                    return Err(Error::Tuning {
                        origin: c.env_var().into(),
                        what: "not valid UTF-8".into(),
                    })
                }
            }
        }
        Ok(t)
    }

    /// [`Tuning::decide`] for every size at once: disjoint ranges `(from, to)` in order, each
    /// with the algorithm decided there (`None`: nothing covers it), over all sizes. A
    /// communicator computes this once per collective and looks sizes up in it, which costs
    /// a few comparisons instead of a walk through the sources on every call.
    pub fn flatten(
        &self,
        collective: Collective,
        p: usize,
        oversubscribed: bool,
        commutative: bool,
    ) -> Vec<(usize, Option<&'static str>)> {
        // Every size where some source's rules start or stop is a possible change.
        let mut starts = vec![0usize];
        let mut add = |r: &Rules| {
            for rule in &r.rules {
                starts.push(rule.from);
                if let Some(t) = rule.to.and_then(|t| t.checked_add(1)) {
                    starts.push(t);
                }
            }
        };
        for map in [&self.environment, &self.program] {
            if let Some(r) = map.get(&collective) {
                add(r);
            }
        }
        for (c, t) in self.profile.iter().chain(&builtin_parsed().1) {
            if *c == collective {
                add(&t.rules);
                if let Some(nc) = &t.noncommutative {
                    add(nc);
                }
            }
        }
        starts.sort_unstable();
        starts.dedup();
        let mut out: Vec<(usize, Option<&'static str>)> = Vec::new();
        for s in starts {
            let a = self
                .decide(collective, p, oversubscribed, s, commutative)
                .map(|d| d.algorithm);
            if out.last().is_none_or(|&(_, prev)| prev != a) {
                out.push((s, a));
            }
        }
        out
    }

    /// What `Auto` runs for `collective` on `p` ranks (sharing cores if `oversubscribed`) with
    /// `bytes` bytes per rank and an op that is `commutative` (or not): the first source of the
    /// module docs' order that covers the call, `None` if none does.
    pub fn decide(
        &self,
        collective: Collective,
        p: usize,
        oversubscribed: bool,
        bytes: usize,
        commutative: bool,
    ) -> Option<Decision> {
        let admit = |a: &'static str| collective.admits(a, commutative).then_some(a);
        let over = |map: &BTreeMap<Collective, Rules>, source| {
            let a = admit(map.get(&collective)?.choose(bytes)?)?;
            Some(Decision {
                algorithm: a,
                source,
            })
        };
        over(&self.environment, Source::Environment)
            .or_else(|| over(&self.program, Source::Program))
            .or_else(|| {
                let own = self.profile.iter().any(|(c, _)| *c == collective);
                let (list, builtin) = if own {
                    (&self.profile[..], false)
                } else {
                    (&builtin_parsed().1[..], true)
                };
                let t = nearest(list, collective, p, oversubscribed)?;
                let rules = match (&t.noncommutative, commutative) {
                    (Some(nc), false) => nc,
                    _ => &t.rules,
                };
                let a = admit(rules.choose(bytes)?)?;
                let (ranks, oversubscribed) = (t.ranks, t.oversubscribed);
                Some(Decision {
                    algorithm: a,
                    source: if builtin {
                        Source::BuiltIn {
                            ranks,
                            oversubscribed,
                        }
                    } else {
                        Source::Profile {
                            ranks,
                            oversubscribed,
                        }
                    },
                })
            })
    }
}

/// The table of `collective` in `list` nearest to `p` ranks in the regime `oversubscribed`:
/// fewest doublings apart, the other regime one doubling farther; on a tie the same regime,
/// then the larger table.
fn nearest(
    list: &[(Collective, Parsed)],
    collective: Collective,
    p: usize,
    oversubscribed: bool,
) -> Option<&Parsed> {
    let distance = |t: &Parsed| {
        let d = ((p.max(1) as f64).log2() - (t.ranks as f64).log2()).abs();
        d + if t.oversubscribed == oversubscribed {
            0.0
        } else {
            1.0
        }
    };
    list.iter()
        .filter(|(c, _)| *c == collective)
        .map(|(_, t)| t)
        .min_by(|a, b| {
            distance(a)
                .total_cmp(&distance(b))
                .then(
                    (b.oversubscribed == oversubscribed).cmp(&(a.oversubscribed == oversubscribed)),
                )
                .then(b.ranks.cmp(&a.ranks))
        })
}

/// The algorithm enums a decision names, by [`Collective::algorithms`]' names.
pub(crate) trait Named: Sized + crate::select::Choice {
    /// The algorithm called `name` (blocks `Auto`).
    fn named(name: &str) -> Option<Self>;
    /// The algorithm with id `id` (blocks `Auto`).
    fn with_id(id: u8) -> Option<Self>;
}

macro_rules! named {
    ($($ty:ident),*) => {
        $(impl Named for crate::select::$ty {
            fn named(name: &str) -> Option<Self> {
                crate::select::$ty::from_name(name)
            }
            fn with_id(id: u8) -> Option<Self> {
                crate::select::$ty::from_id(id)
            }
        })*
    };
}

named!(
    Algorithm,
    Broadcast,
    Reduce,
    Scan,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    ReduceScatter,
    Barrier
);

#[cfg(all(test, not(loom)))]
mod tests;
