//! What a profile records of its measurements: the α and β of a level with what the fit says
//! of itself ([`LevelCosts`]), the reduction's γ ([`Gamma`]), and the machine they were taken
//! on ([`Host`]).

use crate::select::Costs;
#[cfg(feature = "unstable")]
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// The measured costs of one [`Level`](super::Level): α and β, both present when the level was
/// measured, both absent when not (see [`LevelCosts::is_measured`]), with what the fit says of
/// itself.
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
    /// For `oversubscribed`, measured from a busy pipeline: the two-rank ping-pong on one core,
    /// kept for comparison (informative; never used for a block). Absent in profiles without
    /// the busy measurement, which still load.
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
    pub(super) fn costs(&self) -> Option<Costs> {
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
    #[cfg(feature = "unstable")]
    pub(crate) fn here(topology: &Topology) -> Host {
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
