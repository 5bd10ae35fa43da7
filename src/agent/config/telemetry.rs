//! The `telemetry` section: which secrets agent events never carry.

use serde::Deserialize;

/// The `telemetry` table as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTelemetry {
    /// Literal strings replaced by `[redacted]` in every event field.
    #[serde(default)]
    pub redact: Vec<String>,
    /// Names of environment variables whose values are replaced by `[redacted]` in every
    /// event field (read when an agent host is made, as API keys are).
    #[serde(default)]
    pub redact_env: Vec<String>,
}

/// A checked `telemetry` section: literals of a useful length and valid variable names.
/// The values of the brains' API key variables are redacted besides these, always.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TelemetrySettings {
    pub(super) redact: Vec<String>,
    pub(super) redact_env: Vec<String>,
}

impl TelemetrySettings {
    /// The literal secrets.
    pub fn redact(&self) -> &[String] {
        &self.redact
    }

    /// The names of the variables whose values are secrets.
    pub fn redact_env(&self) -> &[String] {
        &self.redact_env
    }
}
