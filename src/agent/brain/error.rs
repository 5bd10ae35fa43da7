//! [`BrainError`]: every way a turn can fail, each with a stable code.

use std::time::Duration;

/// Why a brain produced no turn.
///
/// Every variant has a stable machine code ([`BrainError::code`]) and a lowercase message that
/// says what went wrong and, where it helps, what to do. Nothing a server sends makes a brain
/// panic: every malformed answer is one of these.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BrainError {
    /// The brain's configuration cannot be used (bad base URL, an API key that is not a valid
    /// header value, a client that could not be built).
    #[error("invalid model client configuration: {detail}")]
    InvalidConfig {
        /// What is wrong with it.
        detail: String,
    },
    /// The request did not reach the server or no response came back (connection refused,
    /// DNS, TLS, a connection reset mid-body).
    #[error("failed to reach the model server at {url}: {detail}")]
    Transport {
        /// The endpoint.
        url: String,
        /// The transport's explanation, causes included.
        detail: String,
    },
    /// The server answered with a status other than 2xx.
    #[error("the model server answered HTTP {status}: {body_excerpt}")]
    HttpStatus {
        /// The HTTP status code.
        status: u16,
        /// The start of the response body, lossily decoded and cut at
        /// [`super::limits::ERROR_BODY_EXCERPT_BYTES_MAX`].
        body_excerpt: String,
    },
    /// The server answered 2xx but the body is not a chat completion we can read.
    #[error("failed to read the model server's response: {detail}")]
    MalformedResponse {
        /// What was wrong, with the JSON path where there is one.
        detail: String,
    },
    /// The response body is larger than [`super::limits::RESPONSE_BYTES_MAX`].
    #[error("the model server's response is larger than {limit_bytes} bytes")]
    ResponseTooLarge {
        /// The limit that was passed.
        limit_bytes: usize,
    },
    /// The server answered with an error object instead of a completion (some gateways do
    /// this with status 200).
    #[error("the model server reported an error: {message}")]
    Provider {
        /// The error's message, cut at [`super::limits::ERROR_BODY_EXCERPT_BYTES_MAX`].
        message: String,
    },
    /// The provider declined to answer (a refusal, or a content filter that stopped the
    /// output).
    #[error("the model provider refused to answer: {reason}")]
    Refused {
        /// The provider's refusal text, or which filter stopped it.
        reason: String,
    },
    /// No complete answer within the brain's timeout.
    #[error("no answer from the model server within {} ms", timeout.as_millis())]
    Timeout {
        /// The timeout that passed.
        timeout: Duration,
    },
    /// Every attempt the retry policy allowed failed with a retryable error (a dead or
    /// overloaded server): the turn gives up.
    #[error("the model call failed after {attempts} attempts over {elapsed_ms} ms ({why}); the last: {last}")]
    RetriesExhausted {
        /// Attempts made.
        attempts: u32,
        /// Time spent on them and the waits between them.
        elapsed_ms: u64,
        /// Why no further attempt is made.
        why: String,
        /// The last attempt's error.
        last: Box<BrainError>,
    },
    /// A scripted brain was asked for more turns than its script holds.
    #[error("the script has no turn left: all {turns} were played")]
    ScriptExhausted {
        /// How many turns the script held.
        turns: usize,
    },
    /// A driven brain's turn has no driver to answer it (the driver was dropped, or it
    /// abandoned the asks of a runtime that shut down).
    #[error("the driven brain has no driver: {detail}")]
    DriverGone {
        /// Whose turns went unanswered.
        detail: String,
    },
    /// A scripted turn's expectation about the window did not hold.
    #[error("scripted turn {turn} expected {expected}, but {found}")]
    ScriptExpectation {
        /// The turn's index in the script (from 0).
        turn: usize,
        /// What it expected.
        expected: String,
        /// What was there instead.
        found: String,
    },
}

impl BrainError {
    /// The stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            BrainError::InvalidConfig { .. } => "brain_invalid_config",
            BrainError::Transport { .. } => "brain_transport",
            BrainError::HttpStatus { .. } => "brain_http_status",
            BrainError::MalformedResponse { .. } => "brain_malformed_response",
            BrainError::ResponseTooLarge { .. } => "brain_response_too_large",
            BrainError::Provider { .. } => "brain_provider_error",
            BrainError::Refused { .. } => "brain_refused",
            BrainError::Timeout { .. } => "brain_timeout",
            BrainError::RetriesExhausted { .. } => "brain_retries_exhausted",
            BrainError::ScriptExhausted { .. } => "brain_script_exhausted",
            BrainError::ScriptExpectation { .. } => "brain_script_expectation",
            BrainError::DriverGone { .. } => "brain_driver_gone",
        }
    }

    /// Whether the same request may succeed if sent again: transport failures, timeouts,
    /// HTTP 408, 409, 429 and 5xx (529 included). The brains' [`RetryPolicy`](super::RetryPolicy)
    /// decides how often; this only says whether.
    pub fn is_retryable(&self) -> bool {
        match self {
            BrainError::Transport { .. } | BrainError::Timeout { .. } => true,
            BrainError::HttpStatus { status, .. } => super::retry::status_is_retryable(*status),
            _ => false,
        }
    }

    pub(crate) fn malformed(detail: impl Into<String>) -> BrainError {
        BrainError::MalformedResponse { detail: detail.into() }
    }
}

pub(crate) use crate::actors::text::excerpt;
