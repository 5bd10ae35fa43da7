//! An HTTP brain's settings (`timeout_ms`, sampling, `stop`, `retries`, `headers`,
//! `prices`): each within its bounds, every problem named at its own path.

use super::super::brain_ref::{BrainKind, HttpSettings, RawBrain, RawFloat};
use super::Problems;
use crate::agent::brain::limits::{
    ANTHROPIC_STOP_MAX, EXTRA_HEADERS_MAX, MAX_TOKENS_MAX, OPENAI_STOP_MAX, REQUEST_TIMEOUT_MAX, RETRIES_MAX,
};
use crate::agent::brain::{Prices, RESERVED_HEADERS};
use crate::agent::config::report::ProblemCode;
use crate::agent::limits::BRAIN_FIELD_BYTES_MAX;
use crate::agent::money::parse_usd_micros;

/// The checked settings, or `None` (with problems) if any is out of bounds.
pub(super) fn check_settings(
    brain: &RawBrain,
    kind: BrainKind,
    path: &str,
    problems: &mut Problems,
) -> Option<HttpSettings> {
    let before = problems.count();
    let timeout_max = u64::try_from(REQUEST_TIMEOUT_MAX.as_millis()).unwrap_or(u64::MAX);
    let mut range = |field: &str, value: Option<u64>, min: u64, max: u64, what: &str| {
        if let Some(v) = value
            && !(min..=max).contains(&v)
        {
            problems.push(
                format!("{path}.{field}"),
                ProblemCode::SettingOutOfRange,
                None,
                format!("`{field}` is {v}, outside {min} to {max} ({what}); write a value in that range"),
            );
        }
    };
    range("timeout_ms", brain.timeout_ms, 1, timeout_max, "milliseconds");
    range("connect_timeout_ms", brain.connect_timeout_ms, 1, timeout_max, "milliseconds");
    range("max_tokens", brain.max_tokens, 1, u64::from(MAX_TOKENS_MAX), "tokens");
    range("retries", brain.retries, 0, u64::from(RETRIES_MAX), "retries after the first attempt");
    let temperature_max = if kind == BrainKind::Anthropic { 1.0 } else { 2.0 };
    float_range(brain.temperature, "temperature", path, 0.0, temperature_max, true, problems);
    float_range(brain.top_p, "top_p", path, 0.0, 1.0, false, problems);
    let stop = brain.stop.clone().unwrap_or_default();
    let stop_max = if kind == BrainKind::Anthropic { ANTHROPIC_STOP_MAX } else { OPENAI_STOP_MAX };
    if !problems.over_limit(&format!("{path}.stop"), None, stop.len(), stop_max, "stop sequences") {
        for (i, s) in stop.iter().enumerate() {
            if s.is_empty() || s.len() > BRAIN_FIELD_BYTES_MAX {
                problems.push(
                    format!("{path}.stop[{i}]"),
                    ProblemCode::SettingOutOfRange,
                    None,
                    format!(
                        "a stop sequence must be 1 to {BRAIN_FIELD_BYTES_MAX} bytes; remove the empty one"
                    ),
                );
            }
        }
    }
    let headers = headers(brain, path, problems);
    let prices = prices(brain, path, problems);
    if problems.count() != before {
        return None;
    }
    Some(HttpSettings {
        timeout_ms: brain.timeout_ms,
        connect_timeout_ms: brain.connect_timeout_ms,
        max_tokens: brain.max_tokens.and_then(|m| u32::try_from(m).ok()),
        temperature: brain.temperature,
        top_p: brain.top_p,
        stop,
        retries: brain.retries.and_then(|r| u32::try_from(r).ok()),
        headers,
        stream: brain.stream,
        prices,
    })
}

fn float_range(
    value: Option<RawFloat>,
    field: &str,
    path: &str,
    min: f64,
    max: f64,
    min_included: bool,
    problems: &mut Problems,
) {
    let Some(RawFloat(v)) = value else { return };
    let above_min = if min_included { v >= min } else { v > min };
    if !(v.is_finite() && above_min && v <= max) {
        let low = if min_included { "from" } else { "above" };
        problems.push(
            format!("{path}.{field}"),
            ProblemCode::SettingOutOfRange,
            None,
            format!("`{field}` is {v}, outside the range {low} {min} to {max} this kind of brain accepts"),
        );
    }
}

/// The extra headers; values are never quoted in a problem (they often carry a token).
fn headers(brain: &RawBrain, path: &str, problems: &mut Problems) -> Vec<(String, String)> {
    let Some(headers) = &brain.headers else { return Vec::new() };
    if problems.over_limit(&format!("{path}.headers"), None, headers.len(), EXTRA_HEADERS_MAX, "headers") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, value) in headers {
        let at = format!("{path}.headers.{name}");
        let token = !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            problems.push(
                at,
                ProblemCode::InvalidHeader,
                None,
                "a header name is letters, digits and `-` (an HTTP token); rename it",
            );
        } else if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            problems.push(
                at,
                ProblemCode::InvalidHeader,
                None,
                format!(
                    "`{name}` is set by the brain itself (the key comes from `api_key_env`); remove this header"
                ),
            );
        } else if value.len() > BRAIN_FIELD_BYTES_MAX
            || !value.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
        {
            problems.push(
                at,
                ProblemCode::InvalidHeader,
                None,
                format!(
                    "the value of `{name}` must be visible ASCII, spaces and tabs, at most {BRAIN_FIELD_BYTES_MAX} bytes"
                ),
            );
        } else {
            out.push((name.clone(), value.clone()));
        }
    }
    out
}

fn prices(brain: &RawBrain, path: &str, problems: &mut Problems) -> Option<Prices> {
    let raw = brain.prices.as_ref()?;
    let mut read = |field: &str, value: Option<&String>, required: bool| -> Option<u64> {
        let at = format!("{path}.prices.{field}");
        match value {
            None if required => {
                problems.push(
                    at,
                    ProblemCode::MissingField,
                    None,
                    format!(
                        "`prices` needs `{field}`, dollars per million tokens as a decimal string (\"3.00\")"
                    ),
                );
                None
            }
            None => None,
            Some(text) => match parse_usd_micros(text) {
                Ok(micros) => Some(micros),
                Err(e) => {
                    problems.push(at, ProblemCode::InvalidMoney, None, format!("{e} per million tokens"));
                    None
                }
            },
        }
    };
    let input = read("input", raw.input.as_ref(), true);
    let output = read("output", raw.output.as_ref(), true);
    let cache_read = read("cache_read", raw.cache_read.as_ref(), false);
    let cache_write = read("cache_write", raw.cache_write.as_ref(), false);
    let (input, output) = (input?, output?);
    Some(Prices {
        input,
        output,
        cache_read: cache_read.unwrap_or(input),
        cache_write: cache_write.unwrap_or(input),
    })
}
