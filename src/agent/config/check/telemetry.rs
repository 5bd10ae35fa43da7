//! The `telemetry` section: redaction literals long enough to be secrets, variable names
//! that are names, and not too many of either.

use super::brains::is_env_var_name;
use super::{ProblemCode, Problems};
use crate::agent::config::telemetry::{RawTelemetry, TelemetrySettings};
use crate::agent::limits::{REDACT_ENTRIES_MAX, REDACT_LITERAL_CHARS_MIN};

/// The checked section (`None` if it has a problem).
pub(super) fn check_telemetry(
    raw: Option<&RawTelemetry>,
    problems: &mut Problems,
) -> Option<TelemetrySettings> {
    let Some(raw) = raw else { return Some(TelemetrySettings::default()) };
    let before = problems.count();
    problems.over_limit(
        "telemetry.redact",
        None,
        raw.redact.len() + raw.redact_env.len(),
        REDACT_ENTRIES_MAX,
        "entries in redact and redact_env together",
    );
    for (i, literal) in raw.redact.iter().enumerate() {
        if literal.chars().count() < REDACT_LITERAL_CHARS_MIN {
            // The value is not repeated: it is meant to be a secret.
            problems.push(
                format!("telemetry.redact[{i}]"),
                ProblemCode::RedactLiteralTooShort,
                None,
                format!(
                    "a redaction literal shorter than {REDACT_LITERAL_CHARS_MIN} characters would blank out \
                     ordinary words in every event; give the whole secret, or name its variable in `redact_env`"
                ),
            );
        }
    }
    for (i, name) in raw.redact_env.iter().enumerate() {
        if !is_env_var_name(name) {
            problems.push(
                format!("telemetry.redact_env[{i}]"),
                ProblemCode::InvalidEnvVarName,
                None,
                "`redact_env` lists NAMES of environment variables (letters, digits and `_`, not starting \
                 with a digit); put a literal secret in `redact` instead",
            );
        }
    }
    (problems.count() == before)
        .then(|| TelemetrySettings { redact: raw.redact.clone(), redact_env: raw.redact_env.clone() })
}
