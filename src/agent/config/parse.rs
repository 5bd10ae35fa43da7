//! The file's top level, and loading it from YAML or TOML.
//!
//! Parsing refuses a text that is not a configuration as a [`ParseError`]. A text that is not
//! well-formed YAML or TOML stops at its first fault (nothing after it can be read). A
//! well-formed one is read into a document first, and then each section and each entry of a
//! list on its own, so that every field of the wrong type and every field the format does not
//! have is reported at once, each on its own line with its path (`profiles[1].window_tokens:
//! …`). Everything else, required values left out included, is the launch check's to report,
//! all at once.

use super::brain_ref::RawBrain;
use super::check::check;
use super::checked::CheckedConfig;
use super::error::{ConfigFormat, LoadError, ParseError};
use super::machine::RawMachine;
use super::profile::RawProfile;
use super::words::plain_words;
use crate::agent::limits::CONFIG_BYTES_MAX;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::io::Read;
use std::path::Path;

/// A configuration as written: brains, profiles and machines, each a list of entries with an
/// `id`. Nothing in it is checked yet; [`check`] turns it into a [`CheckedConfig`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The brains profiles refer to by id.
    #[serde(default)]
    pub brains: Vec<RawBrain>,
    /// The agent profiles (at least one).
    #[serde(default)]
    pub profiles: Vec<RawProfile>,
    /// The declared state machines.
    #[serde(default)]
    pub machines: Vec<RawMachine>,
    /// The cap a root launch gets in each dimension neither a flag nor its profile sets
    /// (default [`crate::agent::limits::DEFAULT_ROOT_BUDGET`]); `--unlimited` drops it.
    pub default_budget: Option<super::budget::RawBudget>,
    /// Secrets agent events never carry (`redact`, `redact_env`).
    pub telemetry: Option<super::telemetry::RawTelemetry>,
}

fn size_check(format: ConfigFormat, text: &str) -> Result<(), ParseError> {
    if text.len() > CONFIG_BYTES_MAX {
        return Err(ParseError::TooLarge { format, bytes: text.len(), limit: CONFIG_BYTES_MAX });
    }
    Ok(())
}

/// Parses a YAML configuration without checking it.
///
/// YAML is read as YAML 1.2: `yes`/`no`/`on`/`off` are strings, not booleans, so a YAML file
/// and a TOML file that look alike mean the same. Duplicate keys are refused, and aliases are
/// expanded within serde-saphyr's default budget.
pub fn parse_yaml(text: &str) -> Result<AgentConfig, ParseError> {
    size_check(ConfigFormat::Yaml, text)?;
    let options = serde_saphyr::options! { strict_booleans: true };
    let document: Value = serde_saphyr::from_str_with_options(text, options).map_err(|e| {
        let message = e.to_string();
        // serde-saphyr opens its messages with "error: "; ours already say so.
        let message = plain_words(message.strip_prefix("error: ").unwrap_or(&message).trim_end());
        ParseError::Syntax { format: ConfigFormat::Yaml, message }
    })?;
    from_document(ConfigFormat::Yaml, document)
}

/// Parses a TOML configuration without checking it.
pub fn parse_toml(text: &str) -> Result<AgentConfig, ParseError> {
    size_check(ConfigFormat::Toml, text)?;
    let document: Value = toml::from_str(text).map_err(|e| ParseError::Syntax {
        format: ConfigFormat::Toml,
        message: plain_words(e.to_string().trim_end()),
    })?;
    from_document(ConfigFormat::Toml, document)
}

/// The top level's sections, in the order a refusal lists them.
const SECTIONS: [&str; 5] = ["brains", "profiles", "machines", "default_budget", "telemetry"];

/// Reads a well-formed document as a configuration, section by section and entry by entry,
/// collecting every problem with its path.
fn from_document(format: ConfigFormat, document: Value) -> Result<AgentConfig, ParseError> {
    let mut top = match document {
        Value::Object(top) => top,
        // An empty file is an empty configuration, for the launch check to refuse.
        Value::Null => Map::new(),
        other => {
            return Err(ParseError::Syntax {
                format,
                message: format!(
                    "the top level is {}; expected a mapping of fields ({})",
                    crate::tools::json_kind(&other),
                    SECTIONS.join(", ")
                ),
            });
        }
    };
    let mut problems = Vec::new();
    let config = AgentConfig {
        brains: entries(&mut top, "brains", &mut problems),
        profiles: entries(&mut top, "profiles", &mut problems),
        machines: entries(&mut top, "machines", &mut problems),
        default_budget: section(&mut top, "default_budget", &mut problems),
        telemetry: section(&mut top, "telemetry", &mut problems),
    };
    for key in top.keys() {
        problems.push(format!(
            "unknown field `{}`, expected one of {}",
            crate::actors::limits::excerpt(key),
            SECTIONS.map(|s| format!("`{s}`")).join(", ")
        ));
    }
    if problems.is_empty() {
        return Ok(config);
    }
    Err(ParseError::Syntax { format, message: problems.join("\n") })
}

/// The list `key`, each entry read on its own (an absent or empty one is empty).
fn entries<T: DeserializeOwned>(
    top: &mut Map<String, Value>,
    key: &str,
    problems: &mut Vec<String>,
) -> Vec<T> {
    match top.remove(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .filter_map(|(i, item)| read(item, &format!("{key}[{i}]"), problems))
            .collect(),
        Some(other) => {
            problems.push(format!("{key}: expected a list, found {}", crate::tools::json_kind(&other)));
            Vec::new()
        }
    }
}

/// The section `key`, if present.
fn section<T: DeserializeOwned>(
    top: &mut Map<String, Value>,
    key: &str,
    problems: &mut Vec<String>,
) -> Option<T> {
    match top.remove(key) {
        None | Some(Value::Null) => None,
        Some(value) => read(value, key, problems),
    }
}

/// The most problems reported for one entry or section: past it the rest of the entry is not
/// read (its count is bounded by the entry's size anyway; this keeps one bad entry's report
/// readable).
const ENTRY_PROBLEMS_MAX: usize = 32;

/// `value` read as a `T`, or every problem in it (at `at`, then the path inside it) added to
/// `problems`: after each problem the value it names is taken out and the rest read again, so
/// a profile with three bad fields gets three lines. Every field of the raw format is optional
/// or defaulted, so taking one out never makes a problem of its own.
fn read<T: DeserializeOwned>(mut value: Value, at: &str, problems: &mut Vec<String>) -> Option<T> {
    let before = problems.len();
    for _ in 0..ENTRY_PROBLEMS_MAX {
        let error = match serde_path_to_error::deserialize::<_, T>(value.clone()) {
            Ok(read) => return (problems.len() == before).then_some(read),
            Err(error) => error,
        };
        let path = error.path().clone();
        let said = plain_words(&crate::actors::text::excerpt(
            &error.into_inner().to_string(),
            crate::actors::limits::ERROR_DETAIL_BYTES_MAX,
        ));
        let shown = path.to_string();
        problems.push(if shown == "." { format!("{at}: {said}") } else { format!("{at}.{shown}: {said}") });
        if !take_out(&mut value, &path.iter().collect::<Vec<_>>()) {
            return None;
        }
    }
    None
}

/// Removes the field `path` names from `value`; `false` if it names no field of a mapping (the
/// whole value, a list item, or something not there), so nothing more can be read. The rig
/// spec reader sets faulty fields aside the same way.
pub(crate) fn take_out(value: &mut Value, segments: &[&serde_path_to_error::Segment]) -> bool {
    use serde_path_to_error::Segment;
    let Some((Segment::Map { key }, parents)) = segments.split_last() else {
        return false;
    };
    let mut at = value;
    for segment in parents {
        at = match (segment, at) {
            (Segment::Map { key }, Value::Object(map)) => match map.get_mut(key) {
                Some(inner) => inner,
                None => return false,
            },
            (Segment::Seq { index }, Value::Array(items)) => match items.get_mut(*index) {
                Some(inner) => inner,
                None => return false,
            },
            _ => return false,
        };
    }
    match at {
        Value::Object(map) => map.remove(key).is_some(),
        _ => false,
    }
}

/// Parses and checks a YAML configuration.
pub fn load_yaml(text: &str) -> Result<CheckedConfig, LoadError> {
    Ok(check(&parse_yaml(text)?)?)
}

/// Parses and checks a TOML configuration.
pub fn load_toml(text: &str) -> Result<CheckedConfig, LoadError> {
    Ok(check(&parse_toml(text)?)?)
}

/// Reads, parses and checks a configuration file; the extension names the format (`.yaml`,
/// `.yml`, `.toml`).
pub fn load_path(path: impl AsRef<Path>) -> Result<CheckedConfig, LoadError> {
    let path = path.as_ref();
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some("yaml" | "yml") => ConfigFormat::Yaml,
        Some("toml") => ConfigFormat::Toml,
        _ => return Err(LoadError::UnknownFormat { path: path.to_owned() }),
    };
    // Read one byte past the limit, so that a huge file (a log named by mistake) is refused
    // by the size check without being read whole.
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(CONFIG_BYTES_MAX as u64 + 1).read_to_string(&mut text))
        .map_err(|source| LoadError::Read { path: path.to_owned(), source })?;
    match format {
        ConfigFormat::Yaml => load_yaml(&text),
        ConfigFormat::Toml => load_toml(&text),
    }
}
