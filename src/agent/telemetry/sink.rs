//! `JsonlSink`: appends records to a file, one JSON object per line.

use super::error::TelemetryError;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// An append-mode event file.
///
/// Each record is serialised to one line, written with a single `write_all` of the whole
/// line (newline included) on an unbuffered file opened with `O_APPEND`, then flushed, so
/// concurrent readers see whole lines and a crash loses at most the line being written.
/// Lines reach the operating system, not the disk: the file is not fsynced (it is an
/// observer's log, not a record the runtime recovers from).
///
/// Fail-stop: after the first failed write, the sink writes nothing more (a part of a line
/// may be at the end of the file) and counts every record it drops.
#[derive(Debug)]
pub(super) struct JsonlSink {
    path: PathBuf,
    file: File,
    failed: bool,
    dropped: u64,
}

impl JsonlSink {
    /// Opens `path` for appending, creating the file (not its directory).
    pub(super) fn open(path: &Path) -> Result<JsonlSink, TelemetryError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| TelemetryError::Open { path: path.to_path_buf(), source })?;
        Ok(JsonlSink { path: path.to_path_buf(), file, failed: false, dropped: 0 })
    }

    /// Appends the record numbered `seq`, serialised as `line` (without its newline). A
    /// failure, serialising included, is logged once, then counted.
    pub(super) fn append(&mut self, seq: u64, line: Result<Vec<u8>, serde_json::Error>) {
        if self.failed {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        let result = line.map_err(std::io::Error::from).and_then(|mut line| {
            line.push(b'\n');
            self.file.write_all(&line)?;
            self.file.flush()
        });
        if let Err(error) = result {
            tracing::warn!(
                target: "agentvisor::agent",
                path = %self.path.display(),
                seq,
                %error,
                "failed to append to the agent event file; later events are kept in memory only"
            );
            self.failed = true;
            self.dropped = self.dropped.saturating_add(1);
        }
    }

    /// Records not written because of a failure.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped
    }
}
