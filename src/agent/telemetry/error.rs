//! `TelemetryError`: why an event file could not be opened or read.

use std::path::PathBuf;

/// Why an agent event file could not be opened or read. Emitting never fails: a write that
/// fails is logged and counted instead (see [`Telemetry`](super::Telemetry)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The file could not be opened for appending (its directory is missing, say).
    #[error("failed to open the agent event file {} for appending: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file could not be read.
    #[error("failed to read the agent event file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A line is not an event record.
    #[error("failed to parse line {line} of the agent event file {}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: u64,
        /// What the parser said.
        message: String,
    },
    /// A line is longer than [`EVENT_LINE_BYTES_MAX`](super::EVENT_LINE_BYTES_MAX).
    #[error(
        "failed to read line {line} of the agent event file {}: it is longer than {bytes_max} bytes",
        path.display()
    )]
    LineTooLong {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: u64,
        /// The longest line read.
        bytes_max: usize,
    },
}
