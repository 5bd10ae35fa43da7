//! Why a configuration cannot be loaded.

use super::report::LaunchReport;
use std::fmt;
use std::path::PathBuf;

/// The two file formats a configuration is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfigFormat {
    /// YAML 1.2 (`.yaml`, `.yml`).
    Yaml,
    /// TOML 1.1 (`.toml`).
    Toml,
}

impl fmt::Display for ConfigFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigFormat::Yaml => "YAML",
            ConfigFormat::Toml => "TOML",
        })
    }
}

/// A text that is not a configuration at all: the launch check never saw it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The text is longer than [`crate::agent::limits::CONFIG_BYTES_MAX`].
    #[error("failed to parse the {format} configuration: it is {bytes} bytes, over the limit of {limit}")]
    TooLarge {
        /// The format it was read as.
        format: ConfigFormat,
        /// Its length.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The text is not well-formed, has a field of the wrong type, or a field the format does
    /// not have (every table refuses unknown fields). The message names the place.
    #[error("failed to parse the {format} configuration: {message}")]
    Syntax {
        /// The format it was read as.
        format: ConfigFormat,
        /// The parser's message, with the line and column.
        message: String,
    },
}

/// Why [`load_path`](super::load_path), [`load_yaml`](super::load_yaml) or
/// [`load_toml`](super::load_toml) produced no checked configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("failed to read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file's extension names no format.
    #[error("failed to load {}: name a configuration file .yaml, .yml or .toml", path.display())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// The text is not a configuration.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The launch check refused the configuration.
    #[error("the launch check refused the configuration ({count}):\n{report}", count = super::words::problem_count(.0.problems().len()), report = .0)]
    Check(#[from] LaunchReport),
}
