//! A profile as a file: written and read as JSON ([`Profile::to_json`], [`Profile::from_json`])
//! with the checks a file must pass, loaded from a path ([`Profile::load`]) or from the file the
//! environment names ([`Profile::from_env`]).

use super::{Profile, ENV_VAR, FORMAT_VERSION};
use crate::error::{Error, Result};
use std::path::Path;

impl Profile {
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
