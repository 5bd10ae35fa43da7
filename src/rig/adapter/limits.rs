//! The seat adapters' bounds, each with why.

use std::time::Duration;

/// The most bytes of one stream (stdout or stderr) a seat command's output keeps, 8 MiB. A
/// Claude Code JSON result or a Codex JSONL event stream for one turn is well under 1 MiB; a
/// command that writes past this is broken or runaway, and keeping more would only grow
/// memory. The excess is still read (so the child never blocks on a full pipe) but dropped,
/// and a marker saying how much was cut ends the kept text.
pub const OUTPUT_BYTES_MAX: usize = 8 * 1024 * 1024;

/// How long, after a timed-out command was killed, its pipes are still read for output it
/// wrote before the kill, 200 ms. Once the child is gone the pipes normally reach end of file
/// at once; only a grandchild that inherited them keeps them open, and it must not turn one
/// bounded command into an unbounded one.
pub const DRAIN_AFTER_KILL: Duration = Duration::from_millis(200);

/// The largest single argument a seat command passes, 128 KiB less one byte: Linux refuses any
/// one argument longer than `MAX_ARG_STRLEN` (32 pages) with `E2BIG`. A longer prompt is
/// refused by name before anything is spawned, rather than as an opaque spawn failure.
pub const ARGUMENT_BYTES_MAX: usize = 128 * 1024 - 1;

/// How much of a runtime's output an error keeps as an excerpt when the output could not be
/// read, 2 KiB: enough to see what the runtime printed instead, short enough for a log line.
pub const OUTPUT_EXCERPT_BYTES_MAX: usize = 2048;
