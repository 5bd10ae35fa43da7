//! Retries of a failed model call: exponential backoff with full jitter, the server's
//! `Retry-After` honoured, bounded by a number of retries and by the total time of a turn.
//!
//! Retried: transport failures (refused, reset, a connection dropped mid-answer), timeouts,
//! HTTP 408, 409, 429, 5xx and Anthropic's 529 (`overloaded`). Never retried: any other
//! status (a 400, 401, 403, 404, 422 fails the same way again) and every answer that arrived
//! but cannot be read.

use super::error::BrainError;
use super::limits::{RETRIES_DEFAULT, RETRY_DELAY_BASE, RETRY_DELAY_MAX, RETRY_TOTAL_MAX};
use super::observe::{RetryNotice, TurnObserver};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// Waits between attempts. The default is `tokio::time::sleep`; a test or a simulation may
/// record the waits instead of spending them.
pub trait Sleeper: Send + Sync {
    /// Waits `delay`.
    fn sleep(&self, delay: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, delay: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(tokio::time::sleep(delay))
    }
}

/// How a brain retries a failed call.
#[derive(Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: one attempt only).
    pub retries: u32,
    /// The first retry's backoff ceiling; it doubles per retry.
    pub base_delay: Duration,
    /// The largest backoff ceiling.
    pub max_delay: Duration,
    /// The bound on all attempts and waits of one turn together.
    pub total: Duration,
    /// What waits.
    pub sleeper: Arc<dyn Sleeper>,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            retries: RETRIES_DEFAULT,
            base_delay: RETRY_DELAY_BASE,
            max_delay: RETRY_DELAY_MAX,
            total: RETRY_TOTAL_MAX,
            sleeper: Arc::new(TokioSleeper),
        }
    }
}

impl RetryPolicy {
    /// One attempt, no retry.
    pub fn none() -> RetryPolicy {
        RetryPolicy { retries: 0, ..RetryPolicy::default() }
    }

    /// This policy with `retries` retries.
    pub fn with_retries(mut self, retries: u32) -> RetryPolicy {
        self.retries = retries;
        self
    }

    /// This policy with the backoff ceilings `base` (first retry) and `max`.
    pub fn with_delays(mut self, base: Duration, max: Duration) -> RetryPolicy {
        self.base_delay = base;
        self.max_delay = max;
        self
    }

    /// This policy waiting with `sleeper`.
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> RetryPolicy {
        self.sleeper = sleeper;
        self
    }

    /// The backoff ceiling before retry `retry` (from 1): `base · 2^(retry-1)`, at most `max`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.saturating_sub(1)).unwrap_or(u32::MAX);
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("retries", &self.retries)
            .field("base_delay", &self.base_delay)
            .field("max_delay", &self.max_delay)
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

/// A failed attempt: the error, and the server's `Retry-After` if it sent one.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) error: BrainError,
    pub(crate) retry_after: Option<Duration>,
}

impl From<BrainError> for Failure {
    fn from(error: BrainError) -> Failure {
        Failure { error, retry_after: None }
    }
}

/// Whether an HTTP status may succeed when sent again.
pub(crate) fn status_is_retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500..=599)
}

/// One turn's attempts: decides after each failure whether to wait and try again.
pub(crate) struct Retrier<'a> {
    policy: &'a RetryPolicy,
    observer: Option<&'a dyn TurnObserver>,
    started: Instant,
    waited: Duration,
    attempt: u32,
    /// What the brain is called, for the log (`openai`, `anthropic`).
    label: &'static str,
}

impl<'a> Retrier<'a> {
    pub(crate) fn new(
        policy: &'a RetryPolicy,
        observer: Option<&'a dyn TurnObserver>,
        label: &'static str,
    ) -> Retrier<'a> {
        Retrier { policy, observer, started: Instant::now(), waited: Duration::ZERO, attempt: 1, label }
    }

    /// The attempt under way, from 1.
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Time spent on this turn: attempts and waits (a recording sleeper's waits included).
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed().max(self.waited)
    }

    /// After a failed attempt: waits and returns `Ok` to try again, or returns the error that
    /// ends the turn (the error itself on its first attempt, or when it is not retryable;
    /// [`BrainError::RetriesExhausted`] once retries were made and the bound is reached).
    pub(crate) async fn after(&mut self, failure: Failure) -> Result<(), BrainError> {
        let Failure { error, retry_after } = failure;
        let retryable = error.is_retryable();
        let retry = self.attempt;
        let delay = retry_after.unwrap_or_else(|| jitter(self.policy.ceiling(retry)));
        let over_time = self.elapsed().saturating_add(delay) > self.policy.total;
        if !retryable || retry > self.policy.retries || over_time {
            tracing::warn!(
                target: "agentvisor::brain",
                brain = self.label,
                attempt = self.attempt,
                code = error.code(),
                "model call failed for good: {error}"
            );
            if !retryable || self.attempt == 1 && self.policy.retries == 0 {
                return Err(error);
            }
            let why = if over_time {
                format!(
                    "the next wait of {} ms would pass the {} s bound",
                    delay.as_millis(),
                    self.policy.total.as_secs()
                )
            } else {
                format!("all {} retries were used", self.policy.retries)
            };
            return Err(BrainError::RetriesExhausted {
                attempts: self.attempt,
                elapsed_ms: u64::try_from(self.elapsed().as_millis()).unwrap_or(u64::MAX),
                why,
                last: Box::new(error),
            });
        }
        tracing::warn!(
            target: "agentvisor::brain",
            brain = self.label,
            attempt = self.attempt,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            retry_after = retry_after.is_some(),
            code = error.code(),
            "model call failed, retrying: {error}"
        );
        if let Some(observer) = self.observer {
            observer.retrying(&RetryNotice {
                attempt: self.attempt,
                delay,
                retry_after: retry_after.is_some(),
                code: error.code(),
                message: error.to_string(),
            });
        }
        self.policy.sleeper.sleep(delay).await;
        self.waited = self.waited.saturating_add(delay);
        self.attempt += 1;
        Ok(())
    }
}

/// Full jitter: uniform in `[0, ceiling]`.
fn jitter(ceiling: Duration) -> Duration {
    let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(fastrand::u64(0..=nanos))
}

/// Reads a `Retry-After` value: delay-seconds (`120`) or an HTTP date
/// (`Sun, 06 Nov 1994 08:49:37 GMT`, as a wait from now; a date past is no wait). `None` for
/// anything else.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return value.parse::<u64>().ok().map(Duration::from_secs);
    }
    let at = parse_http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7) as Unix seconds.
fn parse_http_date(value: &str) -> Option<u64> {
    let rest = value.split_once(", ")?.1;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else { return None };
    let day: u64 = day.parse().ok()?;
    let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        .iter()
        .position(|m| m == month)? as u64
        + 1;
    let year: u64 = year.parse().ok()?;
    let hms: Vec<u64> = time.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else { return None };
    if !(1..=31).contains(&day) || year < 1970 || *h > 23 || *m > 59 || *s > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day)? * 86_400 + h * 3600 + m * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: u64, month: u64, day: u64) -> Option<u64> {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("1", now), Some(Duration::from_secs(1)));
        assert_eq!(parse_retry_after(" 120 ", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now), Some(Duration::from_secs(30)));
        assert_eq!(parse_retry_after("Sat, 05 Nov 1994 08:49:37 GMT", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", UNIX_EPOCH), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("Fri, 29 Feb 2028 00:00:00 GMT", UNIX_EPOCH).map(|d| d.as_secs()),
            Some(1_835_395_200)
        );
        for bad in ["", "soon", "-1", "1.5", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 32 Nov 1994 08:49:37 GMT"]
        {
            assert_eq!(parse_retry_after(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn ceilings_double_up_to_the_cap() {
        let policy =
            RetryPolicy::default().with_delays(Duration::from_millis(100), Duration::from_millis(700));
        let ceilings: Vec<u128> = (1..=6).map(|r| policy.ceiling(r).as_millis()).collect();
        assert_eq!(ceilings, [100, 200, 400, 700, 700, 700]);
        assert_eq!(policy.ceiling(200), Duration::from_millis(700));
        for _ in 0..100 {
            assert!(jitter(Duration::from_millis(5)) <= Duration::from_millis(5));
        }
    }
}
