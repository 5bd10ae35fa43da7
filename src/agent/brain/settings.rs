//! What an HTTP brain (OpenAI-compatible or Anthropic) is configured with besides its
//! endpoint, model and key: bounds, sampling, extra headers, retries, streaming, prices.

use super::limits::{CONNECT_TIMEOUT_DEFAULT, REQUEST_TIMEOUT_DEFAULT};
use super::message::Usage;
use super::retry::RetryPolicy;
use crate::agent::money::token_cost_micros;
use std::time::Duration;

/// Settings shared by the HTTP brains. [`ModelSettings::default`] is what a brain uses when
/// its configuration says nothing.
#[derive(Clone, Debug)]
pub struct ModelSettings {
    /// A non-streaming request: from connecting to the last byte. A stream: to the first
    /// byte, and between any two chunks (a stream that keeps arriving is not cut).
    pub timeout: Duration,
    /// Establishing the connection (TCP and TLS).
    pub connect_timeout: Duration,
    /// `max_tokens` for the answer; `None` leaves it to the server (Anthropic requires it:
    /// [`super::limits::ANTHROPIC_MAX_TOKENS_DEFAULT`]).
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    pub top_p: Option<f64>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Extra request headers (a gateway's routing or tracing headers), name and value.
    pub headers: Vec<(String, String)>,
    /// How failed calls are retried.
    pub retry: RetryPolicy,
    /// Whether answers are streamed (server-sent events), so progress is seen as it comes.
    pub stream: bool,
    /// What tokens cost, when known; a server-reported cost takes precedence.
    pub prices: Option<Prices>,
}

impl Default for ModelSettings {
    fn default() -> ModelSettings {
        ModelSettings {
            timeout: REQUEST_TIMEOUT_DEFAULT,
            connect_timeout: CONNECT_TIMEOUT_DEFAULT,
            max_tokens: None,
            temperature: None,
            top_p: None,
            stop: Vec::new(),
            headers: Vec::new(),
            retry: RetryPolicy::default(),
            stream: false,
            prices: None,
        }
    }
}

/// Token prices in micro-dollars per million tokens (read exactly from decimal strings by
/// [`crate::agent::money::parse_usd_micros`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prices {
    /// Plain input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens served from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
}

impl Prices {
    /// What `usage` costs, in micro-dollars. `input_tokens` counts every input token, cached
    /// ones included; those read from or written to the cache are priced at their own rates.
    pub fn cost_micros(&self, usage: &Usage) -> u64 {
        let cached = usage.cached_tokens.saturating_add(usage.cache_write_tokens);
        let plain = usage.input_tokens.saturating_sub(cached);
        token_cost_micros(plain, self.input)
            .saturating_add(token_cost_micros(usage.output_tokens, self.output))
            .saturating_add(token_cost_micros(usage.cached_tokens, self.cache_read))
            .saturating_add(token_cost_micros(usage.cache_write_tokens, self.cache_write))
    }
}
