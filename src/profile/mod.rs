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

mod file;
mod level;
mod measurement;
#[cfg(all(test, not(loom)))]
mod tests;

pub use level::Level;
pub use measurement::{Gamma, Host, LevelCosts};

use crate::select::Costs;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of the JSON format [`Profile::to_json`] writes and [`Profile::from_json`]
/// reads; a file of another version is refused rather than misread.
pub const FORMAT_VERSION: u32 = 1;

/// The environment variable naming a profile file that teams load ([`Profile::from_env`]).
pub const ENV_VAR: &str = "CORECOLL_PROFILE";

/// The built-in γ, nanoseconds per byte of an `op::Sum` fold over in-cache buffers, used where
/// a profile measured none: about what the development machine measured for `f64` (a loaded
/// 2-core VM; docs/calibration.md).
pub const DEFAULT_GAMMA_NS: f64 = 0.1;

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
}
