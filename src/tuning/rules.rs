//! The rule syntax of one collective's decision (oneCCL's `name:from-to;…`): [`Rule`],
//! [`Rules`] with its parser and printer, and the size parser [`parse_size`] that the
//! benchmark's options share.
//!
//! Apart because it is plain text handling, used by every source of the decision alike
//! (environment, program, tables) and by `corecoll-bench`.

use super::Collective;
use std::fmt;

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
