//! Reading an event file back: all at once ([`read_jsonl`]) or as it grows
//! ([`EventFileReader`]).

use super::error::TelemetryError;
use super::event::EventRecord;
use super::limits::EVENT_LINE_BYTES_MAX;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Bytes read from the file per `read` call.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Every record in the event file at `path`, in file order.
///
/// A malformed line is [`TelemetryError::Malformed`] with its line number (from 1); blank
/// lines are skipped. A last line without its newline is parsed too.
pub fn read_jsonl(path: impl AsRef<Path>) -> Result<Vec<EventRecord>, TelemetryError> {
    let mut reader = EventFileReader::new(path);
    let mut records: Vec<EventRecord> = reader.read_new()?.into_iter().map(|line| line.record).collect();
    records.extend(reader.finish()?.map(|line| line.record));
    Ok(records)
}

/// One line of an event file: its number, its text as written, and the record it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct EventLine {
    /// The line's number, from 1.
    pub line: u64,
    /// The JSON text, without its newline.
    pub text: String,
    /// The record.
    pub record: EventRecord,
}

/// Reads an event file incrementally: each [`read_new`](EventFileReader::read_new) returns
/// the whole lines appended since the previous one. A file that shrank (was replaced or
/// truncated) is read again from its start, as `tail -F` does.
#[derive(Debug)]
pub struct EventFileReader {
    path: PathBuf,
    /// Bytes consumed so far.
    offset: u64,
    /// Lines completed so far.
    line: u64,
    /// The start of a line whose newline has not been read yet.
    partial: Vec<u8>,
}

impl EventFileReader {
    /// A reader of `path` from its start. Nothing is read until [`read_new`](Self::read_new).
    pub fn new(path: impl AsRef<Path>) -> EventFileReader {
        EventFileReader { path: path.as_ref().to_path_buf(), offset: 0, line: 0, partial: Vec::new() }
    }

    /// The file read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole lines appended since the last call (all of them, the first time).
    ///
    /// A missing file is [`TelemetryError::Read`]; check first if that is expected.
    pub fn read_new(&mut self) -> Result<Vec<EventLine>, TelemetryError> {
        let read_error = |source| TelemetryError::Read { path: self.path.clone(), source };
        let mut file = File::open(&self.path).map_err(read_error)?;
        let len = file.metadata().map_err(read_error)?.len();
        if len < self.offset {
            self.offset = 0;
            self.line = 0;
            self.partial.clear();
        }
        file.seek(SeekFrom::Start(self.offset)).map_err(read_error)?;
        let mut buffer = vec![0; READ_CHUNK_BYTES];
        let mut lines = Vec::new();
        loop {
            let n = file.read(&mut buffer).map_err(read_error)?;
            if n == 0 {
                break;
            }
            self.offset = self.offset.saturating_add(n as u64);
            for piece in buffer[..n].split_inclusive(|&b| b == b'\n') {
                match piece.split_last() {
                    Some((b'\n', body)) => {
                        self.partial.extend_from_slice(body);
                        self.check_length()?;
                        self.line += 1;
                        let bytes = std::mem::take(&mut self.partial);
                        if let Some(line) = self.parse(bytes)? {
                            lines.push(line);
                        }
                    }
                    _ => {
                        self.partial.extend_from_slice(piece);
                        self.check_length()?;
                    }
                }
            }
        }
        Ok(lines)
    }

    /// The last line, if the file ends without a newline. Call it once the file is complete;
    /// while a writer may still be appending, the line may be partly written.
    pub fn finish(&mut self) -> Result<Option<EventLine>, TelemetryError> {
        if self.partial.is_empty() {
            return Ok(None);
        }
        self.line += 1;
        let bytes = std::mem::take(&mut self.partial);
        self.parse(bytes)
    }

    fn check_length(&self) -> Result<(), TelemetryError> {
        if self.partial.len() > EVENT_LINE_BYTES_MAX {
            return Err(TelemetryError::LineTooLong {
                path: self.path.clone(),
                line: self.line + 1,
                bytes_max: EVENT_LINE_BYTES_MAX,
            });
        }
        Ok(())
    }

    fn parse(&self, bytes: Vec<u8>) -> Result<Option<EventLine>, TelemetryError> {
        let malformed =
            |message: String| TelemetryError::Malformed { path: self.path.clone(), line: self.line, message };
        let text = String::from_utf8(bytes).map_err(|e| malformed(e.to_string()))?;
        if text.trim().is_empty() {
            return Ok(None);
        }
        let record = serde_json::from_str::<EventRecord>(&text).map_err(|e| malformed(e.to_string()))?;
        Ok(Some(EventLine { line: self.line, text, record }))
    }
}

/// The `seq` of the last whole record in the event file at `path`, or `None` for a missing or
/// empty file or one without a record.
///
/// The file is read backwards from its end, [`READ_CHUNK_BYTES`] at a time, so a large file
/// costs one read of its tail: a last line cut by a crash (no newline, or not a record) and
/// blank lines are passed over, and the first line before them that holds a record answers.
pub fn last_seq(path: impl AsRef<Path>) -> Result<Option<u64>, TelemetryError> {
    /// The one field wanted; the rest of the record is not parsed.
    #[derive(serde::Deserialize)]
    struct Seq {
        seq: u64,
    }
    let path = path.as_ref();
    let read_error = |source| TelemetryError::Read { path: path.to_path_buf(), source };
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(read_error(e)),
    };
    let mut end = file.metadata().map_err(read_error)?.len();
    // Bytes after the last newline seen so far, in file order: the end of a line whose start
    // is further back.
    let mut tail: Vec<u8> = Vec::new();
    let mut chunk = vec![0; READ_CHUNK_BYTES];
    while end > 0 {
        let start = end.saturating_sub(READ_CHUNK_BYTES as u64);
        let len = usize::try_from(end - start).unwrap_or(READ_CHUNK_BYTES);
        file.seek(SeekFrom::Start(start)).map_err(read_error)?;
        file.read_exact(&mut chunk[..len]).map_err(read_error)?;
        let mut piece = chunk[..len].to_vec();
        piece.extend_from_slice(&tail);
        // Every newline in `piece` closes a line; the part before the first one may be the
        // end of a line that starts in an earlier chunk, so it is kept for the next round.
        let mut lines = piece.rsplit(|&b| b == b'\n');
        let mut whole: Vec<&[u8]> = Vec::new();
        let mut first = lines.next();
        for line in lines {
            whole.push(first.take().unwrap_or_default());
            first = Some(line);
        }
        for line in whole {
            if let Ok(record) = serde_json::from_slice::<Seq>(line) {
                return Ok(Some(record.seq));
            }
        }
        tail = first.unwrap_or_default().to_vec();
        if tail.len() > EVENT_LINE_BYTES_MAX {
            // A line this long is not one this build wrote; stop rather than read it whole.
            tail.clear();
        }
        end = start;
    }
    // The first line of the file, which no newline precedes.
    Ok(serde_json::from_slice::<Seq>(&tail).ok().map(|r| r.seq))
}
