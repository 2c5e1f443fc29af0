//! The decision procedure: [`Tuning`] (a team's overrides and tables), what it decides
//! ([`Decision`], [`Origin`]) and the choice of the nearest table.
//!
//! Apart because it is the one piece with policy: the order of the sources and the distance
//! between a table and a communicator (module docs of `tuning`).

use super::table::{builtin_parsed, Parsed, ParsedTables};
use super::{Collective, Rules, Table};
use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// Where a decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
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
    /// A built-in table ([`builtin`](super::builtin())), measured on `ranks` ranks,
    /// `oversubscribed` or not.
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
    pub origin: Origin,
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
        let over = |map: &BTreeMap<Collective, Rules>, origin| {
            let a = admit(map.get(&collective)?.choose(bytes)?)?;
            Some(Decision {
                algorithm: a,
                origin,
            })
        };
        over(&self.environment, Origin::Environment)
            .or_else(|| over(&self.program, Origin::Program))
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
                    origin: if builtin {
                        Origin::BuiltIn {
                            ranks,
                            oversubscribed,
                        }
                    } else {
                        Origin::Profile {
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
