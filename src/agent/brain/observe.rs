//! What a brain reports while a turn is under way: each retry, and progress while the model
//! answers. The turn loop watches it to show a live line and to charge tokens as they stream.

use std::time::Duration;

/// Receives a turn's retries and progress. Called from inside the brain's future, so an
/// implementation must not block: send on a channel or store a value and return.
pub trait TurnObserver: Send + Sync {
    /// An attempt failed with a retryable error; the next one starts after `notice.delay`.
    fn retrying(&self, notice: &RetryNotice) {
        let _ = notice;
    }

    /// The model's answer so far (called at the start of each attempt and as a stream grows).
    fn progress(&self, progress: &Progress) {
        let _ = progress;
    }
}

/// One failed attempt that is retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryNotice {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// The wait before the next attempt.
    pub delay: Duration,
    /// Whether the wait is the server's `Retry-After` (otherwise backoff with jitter).
    pub retry_after: bool,
    /// The failure's stable code (`brain_http_status`, `brain_transport`, `brain_timeout`).
    pub code: &'static str,
    /// The failure, for a person.
    pub message: String,
}

/// A turn's progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// The attempt under way, from 1.
    pub attempt: u32,
    /// Since the turn started (all attempts and waits).
    pub elapsed: Duration,
    /// Output tokens of this attempt so far: the server's count when a stream reports one,
    /// otherwise the estimator's over what has arrived.
    pub output_tokens: u64,
    /// The request's input tokens as estimated before sending.
    pub input_tokens: u64,
}
