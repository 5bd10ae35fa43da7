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

/// The default bound on establishing a connection (TCP and TLS), 10 s: a server that is up
/// accepts in milliseconds; a dead host is reported (and retried) without waiting for the
/// whole request timeout.
pub const CONNECT_TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);

/// The longest request timeout a brain may configure, 1 hour: a local model on modest
/// hardware may take minutes for one long answer, never an hour; a larger value is a typo.
pub const REQUEST_TIMEOUT_MAX: Duration = Duration::from_secs(3600);

/// Retries after a failed attempt when a brain does not say, 4 (5 attempts in all): with the
/// default delays they span about 15 s before jitter, enough to ride out a server restart or
/// a rate-limit window, short enough that a dead server is reported within a minute.
pub const RETRIES_DEFAULT: u32 = 4;

/// The most retries a brain may configure, 10: with exponential backoff capped at
/// [`RETRY_DELAY_MAX`] that is already several minutes of waiting on one turn.
pub const RETRIES_MAX: u32 = 10;

/// The first retry's backoff ceiling, 1 s; each later retry doubles it (full jitter: the
/// delay is drawn uniformly between zero and the ceiling, so clients that failed together do
/// not retry together).
pub const RETRY_DELAY_BASE: Duration = Duration::from_secs(1);

/// The largest backoff ceiling, 30 s: past this, waiting longer says nothing new about the
/// server.
pub const RETRY_DELAY_MAX: Duration = Duration::from_secs(30);

/// The bound on one turn's attempts and waits together, 10 minutes: retries stop when the next
/// wait (a server's `Retry-After` included) would pass it. A server that asks for longer is
/// reported as failed rather than holding the agent.
pub const RETRY_TOTAL_MAX: Duration = Duration::from_secs(600);

/// The most stop sequences an OpenAI-compatible request may carry, 4: the API's own limit.
pub const OPENAI_STOP_MAX: usize = 4;

/// The most stop sequences an Anthropic request carries here, 16: a list longer than that is
/// a mistake rather than a need.
pub const ANTHROPIC_STOP_MAX: usize = 16;

/// The largest `max_tokens` a brain may configure, 1,048,576: above every model's output
/// limit announced so far.
pub const MAX_TOKENS_MAX: u32 = 1 << 20;

/// `max_tokens` of an Anthropic request when the brain does not set one, 4096: the Messages
/// API requires the field, and 4096 is a long answer that every current model can give.
pub const ANTHROPIC_MAX_TOKENS_DEFAULT: u32 = 4096;

/// Extra headers one brain may send, 32: enough for any gateway's routing and tracing
/// headers.
pub const EXTRA_HEADERS_MAX: usize = 32;
