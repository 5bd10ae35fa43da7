//! [`AnthropicBrain`]: a client of the Anthropic Messages API (`POST {base_url}/messages`).
//!
//! The system slot travels as `system`, tools as `tools` with `input_schema`, calls and their
//! results as `tool_use` and `tool_result` content blocks. The stable prefix of every request
//! (the tools, then the system prompt) is marked for prompt caching
//! (`cache_control: {type: ephemeral}` on the last tool and on the system block); cache reads
//! and writes are reported in [`Usage`] and priced when the brain has [`Prices`]. Calls are
//! retried on 429, 529 (overloaded), other 5xx, timeouts and transport failures; answers may
//! stream (the Messages API's server-sent events).

mod request;
mod response;
mod stream;

pub use response::{AnthropicMessage, parse_message};

use super::call::call;
use super::error::BrainError;
use super::http::{HttpEndpoint, join_endpoint};
use super::limits::{ANTHROPIC_MAX_TOKENS_DEFAULT, ANTHROPIC_STOP_MAX};
use super::message::Usage;
use super::openai::api_key_from_env;
use super::retry::RetryPolicy;
use super::settings::{ModelSettings, Prices};
use super::{Brain, Turn, TurnFuture, TurnRequest, tokens};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::fmt;

/// The `anthropic-version` header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The default base URL.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";

/// How to reach a model on the Messages API.
#[derive(Clone)]
pub struct AnthropicConfig {
    /// The API's base URL up to the version, `https://api.anthropic.com/v1`; `/messages` is
    /// appended.
    pub base_url: String,
    /// The model name (`claude-sonnet-4-5`, …).
    pub model: String,
    /// The key, sent as `x-api-key`; `None` or empty sends none (a local gateway).
    pub api_key: Option<String>,
    /// Bounds, sampling, headers, retries, streaming, prices.
    pub settings: ModelSettings,
}

impl AnthropicConfig {
    /// A configuration for `model` at `base_url`, no key, default settings.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> AnthropicConfig {
        AnthropicConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            settings: ModelSettings::default(),
        }
    }

    /// This configuration with the key `key`.
    pub fn with_api_key(mut self, key: impl Into<String>) -> AnthropicConfig {
        self.api_key = Some(key.into());
        self
    }

    /// This configuration with the key from the environment variable `var` (unset is an
    /// error naming it; empty is no key).
    pub fn with_api_key_from_env(mut self, var: &str) -> Result<AnthropicConfig, BrainError> {
        self.api_key = api_key_from_env(var)?;
        Ok(self)
    }

    /// This configuration retrying by `retry`.
    pub fn with_retry(mut self, retry: RetryPolicy) -> AnthropicConfig {
        self.settings.retry = retry;
        self
    }

    /// This configuration streaming answers, or not.
    pub fn with_stream(mut self, stream: bool) -> AnthropicConfig {
        self.settings.stream = stream;
        self
    }

    /// This configuration with `prices`.
    pub fn with_prices(mut self, prices: Prices) -> AnthropicConfig {
        self.settings.prices = Some(prices);
        self
    }

    /// This configuration with `settings`.
    pub fn with_settings(mut self, settings: ModelSettings) -> AnthropicConfig {
        self.settings = settings;
        self
    }
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("stream", &self.settings.stream)
            .finish_non_exhaustive()
    }
}

/// A brain on the Anthropic Messages API.
pub struct AnthropicBrain {
    http: HttpEndpoint,
    model: String,
    settings: ModelSettings,
}

impl AnthropicBrain {
    /// Checks `config` and builds the client: an `http`/`https` base URL, a model, at most
    /// [`ANTHROPIC_STOP_MAX`] stop sequences, a key and headers that are header values.
    pub fn new(config: AnthropicConfig) -> Result<AnthropicBrain, BrainError> {
        let invalid = |detail: String| BrainError::InvalidConfig { detail };
        let endpoint = join_endpoint(&config.base_url, "messages")?;
        if config.model.trim().is_empty() {
            return Err(invalid("the model name is empty".into()));
        }
        if config.settings.stop.len() > ANTHROPIC_STOP_MAX {
            return Err(invalid(format!("more than {ANTHROPIC_STOP_MAX} stop sequences")));
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            let mut value = HeaderValue::from_str(key)
                .map_err(|_| invalid("the API key holds a character not allowed in an HTTP header".into()))?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        let http = HttpEndpoint::new(endpoint, headers, &config.settings)?;
        Ok(AnthropicBrain { http, model: config.model, settings: config.settings })
    }

    /// The URL every request is posted to.
    pub fn endpoint(&self) -> &str {
        self.http.url().as_str()
    }
}

impl Brain for AnthropicBrain {
    fn turn<'a>(&'a self, request: TurnRequest<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let max_tokens = self.settings.max_tokens.unwrap_or(ANTHROPIC_MAX_TOKENS_DEFAULT);
            let body = request::body(&self.model, max_tokens, &self.settings, &request);
            let input_tokens = tokens::request_tokens(&request);
            let answer = call::<stream::Assembly, _>(
                &self.http,
                &self.settings,
                &request,
                input_tokens,
                "anthropic",
                &body,
                parse_message,
            )
            .await?;
            let mut usage = answer.usage.unwrap_or_else(|| Usage {
                input_tokens,
                output_tokens: tokens::assistant_tokens(&answer.message),
                ..Usage::default()
            });
            usage.cost_micros = self.settings.prices.map(|p| p.cost_micros(&usage));
            Ok(Turn { message: answer.message, usage, finish: answer.finish })
        })
    }
}

impl fmt::Debug for AnthropicBrain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicBrain")
            .field("endpoint", &self.http.url().as_str())
            .field("model", &self.model)
            .field("stream", &self.settings.stream)
            .finish_non_exhaustive()
    }
}
