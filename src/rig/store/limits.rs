//! The seat store's bounds, each with why.

/// The most of a failed launch's standard error a seat keeps, in bytes. A runtime that fails
/// can print without end; the end of its output is where the reason is, so the store keeps the
/// last 16 KiB, enough for a stack trace, and marks the cut.
pub const STDERR_BYTES_MAX: usize = 16 * 1024;

/// The longest error sentence a failed seat keeps, in bytes. Errors are written by the runner
/// and name a runtime and an id; 4 KiB holds any of them, and a runaway one is cut at its end.
pub const ERROR_BYTES_MAX: usize = 4 * 1024;

/// The longest failed-step name, in bytes. Steps are short names such as `resolve_source`.
pub const STEP_BYTES_MAX: usize = 128;
