//! Decision tables as stored: [`Table`] (a profile's `tables`, serialised), its checked
//! parsed form, and the tables the crate carries (`builtin.json`, [`builtin`]).
//!
//! Apart because it is the storage side (serde, the JSON file, the checks a profile gets
//! when it is read), which the decision procedure only consumes.

use super::{Collective, Rules};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

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
pub(super) struct Parsed {
    pub(super) ranks: usize,
    pub(super) oversubscribed: bool,
    pub(super) rules: Rules,
    pub(super) noncommutative: Option<Rules>,
}

impl Table {
    /// The table's rules parsed and checked: every name an algorithm of the collective that
    /// a rule may name, `noncommutative` only on the allreduce and free of the ring, at least
    /// one rank.
    pub(super) fn parse(&self) -> std::result::Result<Parsed, String> {
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
pub(super) type ParsedTables = Vec<(Collective, Parsed)>;

/// The built-in tables, and parsed.
pub(super) fn builtin_parsed() -> &'static (Vec<Table>, ParsedTables) {
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
