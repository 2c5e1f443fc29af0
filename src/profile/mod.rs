//! Calibration profiles: the cost constants measured on a machine, which teams load so that
//! `Block::Auto` (the pipelining lemma, `select::block::lemma_block`) works with this machine's
//! numbers instead of the development machine's.
//!
//! A [`Profile`] holds, per [`Level`] of the machine (two ranks in one L3 group, in one package
//! across L3 groups, across packages, between MPI processes, and on shared cores), the
//! start-up time α of a message in nanoseconds and the time β per byte, fitted by
//! `corecoll-bench --calibrate` (docs/calibration.md says how) to ping-pong times, except for
//! shared cores, where they come from a busy pipeline of several ranks per core (the step a
//! pipelined schedule pays there; the ping-pong's numbers ride along in
//! [`LevelCosts::pingpong`]); the time γ per byte of
//! a reduction (an `op::Sum` fold over in-cache buffers, for `f64` and `u64`); where it was
//! measured; and a format version. It is written and read as JSON ([`Profile::to_json`],
//! [`Profile::from_json`], [`Profile::load`]).
//!
//! Why levels: a message between cores that share an L3 cache moves through that cache; across
//! L3 groups or packages it crosses the interconnect, and the start-up cost and bandwidth
//! change with it (Träff 2021 leaves open how hierarchy changes the choice of block; a level
//! per hop is the simplest answer). A machine that lacks a level (this one has a single L3
//! group) cannot measure it, so every level may be *not measured*, and then falls back:
//!
//! 1. the level itself, if measured;
//! 2. for the shared-memory levels with a core per rank (`L3`, `Package`, `Machine`), the
//!    nearest measured one of them, the wider on a tie: `L3` → `Package` → `Machine`;
//!    `Package` → `Machine` → `L3`; `Machine` → `Package` → `L3`;
//! 3. the built-in default (the crate's `select::Costs`): α = 100 ns and β = 0.07 ns/B
//!    (`DEDICATED`) for those three, α = 12 µs and β = 0.02 ns/B (`OVERSUBSCRIBED`) for
//!    `Oversubscribed`, α = 1 µs and β = 0.1 ns/B (`MPI`) for `Mpi`.
//!
//! `Oversubscribed` and `Mpi` never borrow another level's numbers: a message that waits for
//! its peer to be scheduled, or that goes through MPI, costs an order of magnitude more than
//! one between two spinning cores, so a shared-memory number would be a worse guess than the
//! built-in one. [`Profile::default`] holds no measurement at all and so gives exactly the
//! built-in constants.
//!
//! Teams: [`crate::TeamBuilder::profile`] sets the team's profile; without it a team loads the
//! file named by the environment variable `CORECOLL_PROFILE` ([`Profile::from_env`]), else uses
//! the default. Each communicator then takes the costs of the level its ranks span
//! ([`Level::spanned`]), once.

use crate::error::{Error, Result};
use crate::select::Costs;
use crate::topology::{Location, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The version of the JSON format [`Profile::to_json`] writes and [`Profile::from_json`]
/// reads; a file of another version is refused rather than misread.
pub const FORMAT_VERSION: u32 = 1;

/// The environment variable naming a profile file that teams load ([`Profile::from_env`]).
pub const ENV_VAR: &str = "CORECOLL_PROFILE";

/// The built-in γ, nanoseconds per byte of an `op::Sum` fold over in-cache buffers, used where
/// a profile measured none: about what the development machine measured for `f64` (a loaded
/// 2-core VM; docs/calibration.md).
pub const DEFAULT_GAMMA_NS: f64 = 0.1;

/// A level of the machine that a message crosses, from the nearest to the farthest, and the
/// case of shared cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Two ranks, each on a core of its own, that share an L3 cache (one L3 group).
    L3,
    /// Two ranks on cores of one package (socket) but of different L3 groups.
    Package,
    /// Two ranks on cores of different packages of one machine.
    Machine,
    /// Two MPI processes (on one node here; over whatever transport MPI picks).
    Mpi,
    /// Ranks that share cores (more ranks than cores, or a passive wait policy): a message
    /// usually waits for its peer to be scheduled.
    Oversubscribed,
}

impl Level {
    /// Every level, in the order of the enum (and of the JSON).
    pub const ALL: [Level; 5] = [
        Level::L3,
        Level::Package,
        Level::Machine,
        Level::Mpi,
        Level::Oversubscribed,
    ];

    /// The level's name, as in the JSON: `l3`, `package`, `machine`, `mpi`, `oversubscribed`.
    pub fn name(self) -> &'static str {
        match self {
            Level::L3 => "l3",
            Level::Package => "package",
            Level::Machine => "machine",
            Level::Mpi => "mpi",
            Level::Oversubscribed => "oversubscribed",
        }
    }

    /// The levels this one falls back to when it is not measured, nearest first (see the
    /// module documentation).
    pub fn fallbacks(self) -> &'static [Level] {
        match self {
            Level::L3 => &[Level::Package, Level::Machine],
            Level::Package => &[Level::Machine, Level::L3],
            Level::Machine => &[Level::Package, Level::L3],
            Level::Mpi | Level::Oversubscribed => &[],
        }
    }

    /// The built-in constants of this level, used when neither it nor a fallback is measured.
    pub(crate) fn default_costs(self) -> Costs {
        match self {
            Level::L3 | Level::Package | Level::Machine => Costs::DEDICATED,
            Level::Mpi => Costs::MPI,
            Level::Oversubscribed => Costs::OVERSUBSCRIBED,
        }
    }

    /// The widest level a group of ranks with a core each spans, from their locations: `L3`
    /// if all share one L3 group (or there is at most one rank), `Package` if all share one
    /// package, else `Machine`. A rank whose location is unknown (not pinned) might be
    /// anywhere, so it makes the answer `Machine`.
    pub fn spanned(mut locations: impl Iterator<Item = Option<Location>>) -> Level {
        let Some(first) = locations.next() else {
            return Level::L3;
        };
        let Some(first) = first else {
            return Level::Machine;
        };
        let mut level = Level::L3;
        for loc in locations {
            match loc {
                None => return Level::Machine,
                Some(l) if l.package != first.package => return Level::Machine,
                Some(l) if l.l3 != first.l3 => level = Level::Package,
                Some(_) => {}
            }
        }
        level
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The measured costs of one [`Level`]: α and β, both present when the level was measured,
/// both absent when not (see [`LevelCosts::is_measured`]), with what the fit says of itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelCosts {
    /// Start-up time of a message, nanoseconds (the fit's intercept).
    #[serde(default)]
    pub alpha_ns: Option<f64>,
    /// Time per byte, nanoseconds (the fit's slope; 1/β is the bandwidth in GB/s).
    #[serde(default)]
    pub beta_ns: Option<f64>,
    /// How well t(m) = α + βm fits the measured times (coefficient of determination over the
    /// sizes fitted), if fitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r2: Option<f64>,
    /// Timed round trips behind the numbers.
    #[serde(default)]
    pub samples: u64,
    /// How it was measured (the cores used), or why it was not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// For `oversubscribed`, measured from a busy pipeline: the two-rank ping-pong on one core
    /// that the level used to be fitted to, kept for comparison (informative; never used for a
    /// block). Absent in profiles written before the busy measurement, which still load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pingpong: Option<Box<LevelCosts>>,
}

impl LevelCosts {
    /// A measured level.
    pub fn measured(alpha_ns: f64, beta_ns: f64) -> LevelCosts {
        LevelCosts {
            alpha_ns: Some(alpha_ns),
            beta_ns: Some(beta_ns),
            ..LevelCosts::default()
        }
    }

    /// A level not measured, and why.
    pub fn not_measured(note: impl Into<String>) -> LevelCosts {
        LevelCosts {
            note: note.into(),
            ..LevelCosts::default()
        }
    }

    /// Whether α and β were both measured.
    pub fn is_measured(&self) -> bool {
        self.alpha_ns.is_some() && self.beta_ns.is_some()
    }

    /// The measured constants, if both are there.
    fn costs(&self) -> Option<Costs> {
        Some(Costs::new(self.alpha_ns?, self.beta_ns?))
    }
}

/// γ: nanoseconds per byte of an `op::Sum` fold (`acc[i] += rhs[i]`) over buffers in cache,
/// per element type measured. `None`: not measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gamma {
    /// `f64` sums.
    #[serde(default)]
    pub f64_sum_ns: Option<f64>,
    /// `u64` (wrapping) sums.
    #[serde(default)]
    pub u64_sum_ns: Option<f64>,
}

/// Where a profile was measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// The machine's host name, if known.
    #[serde(default)]
    pub hostname: Option<String>,
    /// Cores the measuring process could use.
    #[serde(default)]
    pub cores: usize,
    /// The topology, in a line: `1 package, 1 L3 group, 2 cores (sysfs)`; empty for the
    /// built-in defaults.
    #[serde(default)]
    pub topology: String,
}

impl Host {
    /// This machine: its host name (from `/proc/sys/kernel/hostname` or `/etc/hostname`), the
    /// cores this process may use, and `topology` in a line.
    pub fn here(topology: &Topology) -> Host {
        let hostname = ["/proc/sys/kernel/hostname", "/etc/hostname"]
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        Host {
            hostname,
            cores: crate::topology::available_cores().len(),
            topology: format!(
                "{}, {}, {} ({})",
                plural(topology.num_packages(), "package", "packages"),
                plural(topology.num_l3_groups(), "L3 group", "L3 groups"),
                plural(topology.num_cores(), "core", "cores"),
                topology.source()
            ),
        }
    }
}

/// The α–β–γ constants of a machine, per [`Level`]; see the module documentation for what is
/// measured and how a level that was not falls back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The format's version, [`FORMAT_VERSION`].
    pub version: u32,
    /// Where it was measured.
    #[serde(default)]
    pub host: Host,
    /// The costs of each level; a level missing from the map counts as not measured.
    #[serde(default)]
    pub levels: BTreeMap<Level, LevelCosts>,
    /// The reduction's cost per byte.
    #[serde(default)]
    pub gamma: Gamma,
    /// Decision tables for `Auto` (`corecoll-bench --tune`, [`crate::tuning`]); a collective
    /// without one here takes the built-in tables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<crate::tuning::Table>,
}

impl Default for Profile {
    /// The built-in constants: no level measured, so every level resolves to its default.
    fn default() -> Self {
        Profile {
            version: FORMAT_VERSION,
            host: Host::default(),
            levels: Level::ALL
                .iter()
                .map(|&l| {
                    (
                        l,
                        LevelCosts::not_measured("built-in default, not measured"),
                    )
                })
                .collect(),
            gamma: Gamma::default(),
            tables: Vec::new(),
        }
    }
}

/// The constants a profile gives for one level, and where they come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resolved {
    /// Nanoseconds per message.
    pub alpha_ns: f64,
    /// Nanoseconds per byte.
    pub beta_ns: f64,
    /// The measured level they were taken from (the level asked for, or a fallback), or `None`
    /// for the built-in default.
    pub from: Option<Level>,
}

impl Profile {
    /// The measurement of `level`, if the profile has one (measured or not).
    pub fn level(&self, level: Level) -> Option<&LevelCosts> {
        self.levels.get(&level)
    }

    /// Sets the measurement of `level`.
    pub fn set_level(&mut self, level: Level, costs: LevelCosts) {
        self.levels.insert(level, costs);
    }

    /// Whether any level or γ was measured (the default profile: no).
    pub fn is_measured(&self) -> bool {
        self.levels.values().any(LevelCosts::is_measured)
            || self.gamma.f64_sum_ns.is_some()
            || self.gamma.u64_sum_ns.is_some()
    }

    /// The α and β that apply to `level`: its own if measured, else the nearest measured
    /// fallback's, else the built-in default (module documentation).
    pub fn resolve(&self, level: Level) -> Resolved {
        std::iter::once(level)
            .chain(level.fallbacks().iter().copied())
            .find_map(|l| {
                let c = self.level(l)?.costs()?;
                Some(Resolved {
                    alpha_ns: c.alpha_ns,
                    beta_ns: c.beta_ns,
                    from: Some(l),
                })
            })
            .unwrap_or_else(|| {
                let c = level.default_costs();
                Resolved {
                    alpha_ns: c.alpha_ns,
                    beta_ns: c.beta_ns,
                    from: None,
                }
            })
    }

    /// [`Profile::resolve`] as the pipelining lemma takes it.
    pub(crate) fn costs(&self, level: Level) -> Costs {
        let r = self.resolve(level);
        Costs::new(r.alpha_ns, r.beta_ns)
    }

    /// γ in nanoseconds per byte for floating-point (`float`) or integer elements: the class's
    /// measurement, else the other class's, else [`DEFAULT_GAMMA_NS`].
    pub fn gamma_ns(&self, float: bool) -> f64 {
        let (own, other) = if float {
            (self.gamma.f64_sum_ns, self.gamma.u64_sum_ns)
        } else {
            (self.gamma.u64_sum_ns, self.gamma.f64_sum_ns)
        };
        own.or(other).unwrap_or(DEFAULT_GAMMA_NS)
    }

    /// The profile as pretty-printed JSON (every level listed, measured or not).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a profile always serialises")
    }

    /// Reads a profile from JSON. Fails with [`Error::Profile`] if the text is not a profile of
    /// format [`FORMAT_VERSION`], or if a level has α without β (or β without α), or a
    /// constant that is negative or not finite, or an α of zero (the lemma divides by it).
    pub fn from_json(text: &str) -> Result<Profile> {
        Profile::parse(text).map_err(|what| Error::Profile { path: None, what })
    }

    /// Reads the profile in the file at `path` ([`Profile::from_json`]); an unreadable file or
    /// bad contents are an [`Error::Profile`] naming the file.
    pub fn load(path: impl AsRef<Path>) -> Result<Profile> {
        let path = path.as_ref();
        let named = |what: String| Error::Profile {
            path: Some(path.display().to_string()),
            what,
        };
        let text = std::fs::read_to_string(path).map_err(|e| named(e.to_string()))?;
        Profile::parse(&text).map_err(named)
    }

    /// The profile named by the environment variable `CORECOLL_PROFILE` ([`ENV_VAR`]): `None`
    /// if it is unset or empty, the loaded file if it names one ([`Profile::load`]), an error
    /// if that file cannot be read or is not a profile.
    pub fn from_env() -> Result<Option<Profile>> {
        match std::env::var_os(ENV_VAR) {
            Some(path) if !path.is_empty() => Profile::load(path).map(Some),
            _ => Ok(None),
        }
    }

    /// The parser and checks behind [`Profile::from_json`], with the problem as text.
    fn parse(text: &str) -> std::result::Result<Profile, String> {
        // The version first, so that a file of another version says so rather than failing on
        // a field this build does not know.
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        match value.get("version").map(serde_json::Value::as_u64) {
            Some(Some(v)) if v == u64::from(FORMAT_VERSION) => {}
            Some(Some(v)) => {
                return Err(format!(
                    "format version {v}, but this build reads version {FORMAT_VERSION}"
                ))
            }
            Some(None) => return Err("`version` is not a whole number".into()),
            None => return Err("no `version` field: not a corecoll profile".into()),
        }
        let profile: Profile =
            serde_json::from_value(value).map_err(|e| format!("not a profile: {e}"))?;
        for (level, c) in &profile.levels {
            match (c.alpha_ns, c.beta_ns) {
                (Some(a), Some(b)) => {
                    if !(a.is_finite() && a > 0.0) {
                        return Err(format!(
                            "level `{level}`: alpha_ns must be a positive number, not {a}"
                        ));
                    }
                    if !(b.is_finite() && b >= 0.0) {
                        return Err(format!(
                            "level `{level}`: beta_ns must be zero or positive, not {b}"
                        ));
                    }
                }
                (None, None) => {}
                _ => {
                    return Err(format!(
                        "level `{level}`: alpha_ns and beta_ns go together (one is missing)"
                    ))
                }
            }
        }
        for (name, g) in [
            ("f64_sum_ns", profile.gamma.f64_sum_ns),
            ("u64_sum_ns", profile.gamma.u64_sum_ns),
        ] {
            if let Some(g) = g {
                if !(g.is_finite() && g >= 0.0) {
                    return Err(format!("gamma.{name} must be zero or positive, not {g}"));
                }
            }
        }
        crate::tuning::Table::check_all(&profile.tables)?;
        Ok(profile)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn measured() -> Profile {
        let mut p = Profile {
            host: Host {
                hostname: Some("test".into()),
                cores: 2,
                topology: "1 package, 1 L3 group, 2 cores (synthetic)".into(),
            },
            ..Profile::default()
        };
        let mut l3 = LevelCosts::measured(150.0, 0.05);
        l3.r2 = Some(0.99);
        l3.samples = 1200;
        l3.note = "cores 0 and 1".into();
        p.set_level(Level::L3, l3);
        p.set_level(Level::Oversubscribed, LevelCosts::measured(2500.0, 0.06));
        p.gamma.f64_sum_ns = Some(0.12);
        p
    }

    #[test]
    fn json_round_trip() {
        for p in [Profile::default(), measured()] {
            let text = p.to_json();
            let back = Profile::from_json(&text).unwrap();
            assert_eq!(back, p, "{text}");
        }
        // Every level is written, measured or not.
        let text = Profile::default().to_json();
        for l in Level::ALL {
            assert!(text.contains(&format!("\"{}\"", l.name())), "{text}");
        }
    }

    /// A profile as `--calibrate` wrote it before the oversubscribed level was measured from a
    /// busy pipeline (no `pingpong` record) still loads, with the same constants; one with the
    /// record round-trips, and the record never changes what the level resolves to.
    #[test]
    fn profiles_before_and_after_the_busy_pipeline_load() {
        let old = r#"{
  "version": 1,
  "host": { "hostname": "vm", "cores": 2, "topology": "1 package, 1 L3 group, 2 cores (sysfs)" },
  "levels": {
    "l3": { "alpha_ns": 110.1, "beta_ns": 0.0287, "r2": 0.865, "samples": 114417,
            "note": "cores 0 and 1" },
    "package": { "alpha_ns": null, "beta_ns": null, "samples": 0,
                 "note": "no package with two L3 groups on this machine" },
    "machine": { "alpha_ns": null, "beta_ns": null, "samples": 0,
                 "note": "one package on this machine" },
    "mpi": { "alpha_ns": 389.5, "beta_ns": 1.31, "r2": 0.971, "samples": 97226,
             "note": "2 processes, mpirun --bind-to none" },
    "oversubscribed": { "alpha_ns": 1576.3, "beta_ns": 0.0213, "r2": 1.0, "samples": 139568,
                        "note": "both ranks on core 0" }
  },
  "gamma": { "f64_sum_ns": 0.0213, "u64_sum_ns": 0.0213 }
}"#;
        let p = Profile::from_json(old).unwrap();
        let o = p.level(Level::Oversubscribed).unwrap();
        assert_eq!(o.pingpong, None);
        assert_eq!(p.costs(Level::Oversubscribed), Costs::new(1576.3, 0.0213));
        // Written again, the old file has no `pingpong` either.
        assert!(!p.to_json().contains("pingpong"));

        let mut q = p.clone();
        let mut busy = LevelCosts::measured(9500.0, 0.2);
        busy.pingpong = Some(Box::new(o.clone()));
        q.set_level(Level::Oversubscribed, busy);
        let text = q.to_json();
        assert!(text.contains("\"pingpong\""), "{text}");
        let back = Profile::from_json(&text).unwrap();
        assert_eq!(back, q);
        assert_eq!(back.costs(Level::Oversubscribed), Costs::new(9500.0, 0.2));
        // A misspelt field inside the record is still an error.
        let bad = text.replace("\"note\": \"both", "\"notes\": \"both");
        assert!(Profile::from_json(&bad).is_err());
    }

    #[test]
    fn defaults_are_the_built_in_constants() {
        let p = Profile::default();
        assert!(!p.is_measured());
        for l in Level::ALL {
            assert!(!p.level(l).unwrap().is_measured());
            assert_eq!(p.costs(l), l.default_costs());
            assert_eq!(p.resolve(l).from, None);
        }
        assert_eq!(p.costs(Level::L3), Costs::DEDICATED);
        assert_eq!(p.costs(Level::Oversubscribed), Costs::OVERSUBSCRIBED);
        assert_eq!(p.costs(Level::Mpi), Costs::MPI);
        assert_eq!(p.gamma_ns(true), DEFAULT_GAMMA_NS);
        // A profile with only a version reads as the defaults.
        let bare = Profile::from_json(r#"{"version": 1}"#).unwrap();
        for l in Level::ALL {
            assert_eq!(bare.costs(l), l.default_costs());
        }
    }

    #[test]
    fn fallback_order() {
        let p = measured();
        let l3 = Costs::new(150.0, 0.05);
        assert_eq!(p.costs(Level::L3), l3);
        // The wider levels take the only measured shared-memory level.
        assert_eq!(p.resolve(Level::Package).from, Some(Level::L3));
        assert_eq!(p.costs(Level::Machine), l3);
        // MPI never borrows a shared-memory level; oversubscribed has its own.
        assert_eq!(p.costs(Level::Mpi), Costs::MPI);
        assert_eq!(
            p.resolve(Level::Oversubscribed).from,
            Some(Level::Oversubscribed)
        );
        // Nearest first, the wider on a tie.
        let mut q = p.clone();
        q.set_level(Level::Machine, LevelCosts::measured(900.0, 0.2));
        assert_eq!(q.resolve(Level::Package).from, Some(Level::Machine));
        assert_eq!(q.resolve(Level::L3).from, Some(Level::L3));
        q.set_level(Level::L3, LevelCosts::not_measured("gone"));
        assert_eq!(q.resolve(Level::L3).from, Some(Level::Machine));
        q.set_level(Level::Package, LevelCosts::measured(400.0, 0.1));
        assert_eq!(q.resolve(Level::L3).from, Some(Level::Package));
        assert_eq!(q.resolve(Level::Machine).from, Some(Level::Machine));
        // Gamma: the class's own, else the other's.
        assert_eq!(p.gamma_ns(true), 0.12);
        assert_eq!(p.gamma_ns(false), 0.12);
    }

    #[test]
    fn bad_profiles_are_errors() {
        let cases = [
            ("", "not JSON"),
            ("{", "not JSON"),
            ("[1, 2]", "no `version`"),
            (r#"{"version": 2}"#, "format version 2"),
            (r#"{"version": "1"}"#, "whole number"),
            (r#"{"version": 1, "levels": {"l4": {}}}"#, "unknown variant"),
            (
                r#"{"version": 1, "levels": {"l3": {"alpha": 1}}}"#,
                "unknown field",
            ),
            (
                r#"{"version": 1, "levels": {"l3": {"alpha_ns": 100}}}"#,
                "go together",
            ),
            (
                r#"{"version": 1, "levels": {"l3": {"alpha_ns": 0, "beta_ns": 0.1}}}"#,
                "positive",
            ),
            (
                r#"{"version": 1, "levels": {"mpi": {"alpha_ns": 10, "beta_ns": -1}}}"#,
                "zero or positive",
            ),
            (r#"{"version": 1, "gamma": {"f64_sum_ns": -0.5}}"#, "gamma"),
        ];
        for (text, expected) in cases {
            let e = Profile::from_json(text).unwrap_err();
            let msg = e.to_string();
            assert!(
                matches!(e, Error::Profile { path: None, .. }),
                "{text}: {msg}"
            );
            assert!(msg.contains(expected), "{text}: {msg}");
        }
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");
        let e = Profile::load(&missing).unwrap_err();
        assert!(e.to_string().contains("missing.json"), "{e}");
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"version\": 1, \"levels\": 3}").unwrap();
        let e = Profile::load(&bad).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("bad.json") && msg.contains("not a profile"),
            "{msg}"
        );
        let good = dir.path().join("good.json");
        std::fs::write(&good, measured().to_json()).unwrap();
        assert_eq!(Profile::load(&good).unwrap(), measured());
    }

    #[test]
    fn levels_spanned_by_locations() {
        let t = Topology::synthetic_groups(vec![vec![2, 2], vec![2]]).unwrap();
        let leaves = t.leaves();
        let span = |idx: &[usize]| Level::spanned(idx.iter().map(|&i| Some(leaves[i])));
        assert_eq!(span(&[]), Level::L3);
        assert_eq!(span(&[3]), Level::L3);
        assert_eq!(span(&[0, 1]), Level::L3);
        assert_eq!(span(&[0, 1, 2]), Level::Package);
        assert_eq!(span(&[1, 4]), Level::Machine);
        assert_eq!(span(&[0, 2, 5]), Level::Machine);
        assert_eq!(
            Level::spanned([Some(leaves[0]), None].into_iter()),
            Level::Machine
        );
    }

    #[test]
    fn teams_take_the_costs_of_the_level_their_ranks_span() {
        use crate::{Pinning, Team, Wait};
        let mut p = Profile::default();
        p.set_level(Level::L3, LevelCosts::measured(111.0, 0.01));
        p.set_level(Level::Package, LevelCosts::measured(222.0, 0.02));
        p.set_level(Level::Machine, LevelCosts::measured(333.0, 0.03));
        p.set_level(Level::Oversubscribed, LevelCosts::measured(4444.0, 0.04));
        // Two ranks in one L3 group, across L3 groups, across packages.
        for (groups, level) in [
            (vec![vec![2]], Level::L3),
            (vec![vec![1, 1]], Level::Package),
            (vec![vec![1], vec![1]], Level::Machine),
        ] {
            let team = Team::builder()
                .ranks(2)
                .topology(Topology::synthetic_groups(groups).unwrap())
                .pinning(Pinning::Compact)
                .wait(Wait::Active)
                .profile(p.clone())
                .build()
                .unwrap();
            assert_eq!(team.profile(), &p);
            let costs = team.run(|comm| comm.local().costs()).unwrap();
            assert_eq!(costs, vec![p.costs(level); 2], "{level}");
            // A sub-communicator of one rank is within one L3 group.
            let solo = team
                .run(|comm| {
                    comm.split(Some(comm.rank()), 0)
                        .unwrap()
                        .unwrap()
                        .local()
                        .costs()
                })
                .unwrap();
            assert_eq!(solo, vec![p.costs(Level::L3); 2]);
        }
        // Shared cores: the oversubscribed level, whatever the locations.
        let team = Team::builder()
            .ranks(2)
            .wait(Wait::Passive)
            .profile(p.clone())
            .build()
            .unwrap();
        let costs = team.run(|comm| comm.local().costs()).unwrap();
        assert_eq!(costs, vec![p.costs(Level::Oversubscribed); 2]);
        // The block the lemma picks follows: DualRoot at p = 8 over 1 Mi f64 with the default
        // constants and with this profile's L3 ones.
        let alg = crate::Algorithm::DualRoot {
            block: crate::Block::Auto,
        };
        let n = 1 << 20;
        assert_ne!(
            alg.block_elements(8, n, 8, p.costs(Level::L3)),
            alg.block_elements(8, n, 8, Profile::default().costs(Level::L3))
        );
    }
}
