//! The brains' bounds, each with why.

use std::time::Duration;

/// The largest response body a model server may send, 16 MiB. A chat completion is the
/// assistant message plus a little metadata; even a full 128k-token output is under 1 MiB of
/// text. A server that keeps sending past this is broken or hostile, and reading on would
/// only grow memory.
pub const RESPONSE_BYTES_MAX: usize = 16 * 1024 * 1024;

/// How much of an error body an error keeps, 512 bytes: enough for a provider's error
/// message (`invalid api key`, `model not found`), short enough for a log line.
pub const ERROR_BODY_EXCERPT_BYTES_MAX: usize = 512;

/// The default bound on one model request, from connecting to the last byte of the body:
/// 300 s. Local servers on modest hardware can take minutes for a long answer; a hung server
/// must still not hold an agent forever.
pub const REQUEST_TIMEOUT_DEFAULT: Duration = Duration::from_secs(300);

/// The most turns one script may hold, 100 000: far more than any test or example needs,
/// and a bound on what a script file can make us allocate.
pub const SCRIPT_TURNS_MAX: usize = 100_000;
