//! [`OpenAiBrain`]: a client of any OpenAI-compatible chat-completions endpoint.
//!
//! One turn is one `POST {base_url}/chat/completions` (HTTP/1.1, rustls for `https`), retried
//! on 429, 5xx, timeouts and transport failures by the brain's [`RetryPolicy`]. The body is
//! built from the [`TurnRequest`] (the system slot first, as a `system` message made for this
//! request only), and the answer is read by [`parse_chat_completion`], a pure function that
//! turns every malformed body into a typed [`BrainError`]. With streaming on, the answer
//! arrives as server-sent chunks (`stream: true`, usage from the final chunk), assembled into
//! the same completion and reported as [`Progress`] as it grows.

mod request;
mod response;
mod stream;

pub use request::NOTE_PREFIX;
pub use response::{ChatCompletion, parse_chat_completion};

use super::call::call;
use super::error::BrainError;
use super::http::{HttpEndpoint, join_endpoint};
use super::limits::OPENAI_STOP_MAX;
use super::message::Usage;
use super::retry::RetryPolicy;
use super::settings::ModelSettings;
use super::{Brain, Turn, TurnFuture, TurnRequest, tokens};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use std::fmt;
use std::time::Duration;

/// How to reach a model: endpoint, model name, key, settings.
#[derive(Clone)]
pub struct OpenAiConfig {
    /// The API's base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`;
    /// `/chat/completions` is appended.
    pub base_url: String,
    /// The model name sent as `model`.
    pub model: String,
    /// The API key, sent as `Authorization: Bearer …`; `None` (or empty) sends no header, as
    /// local servers expect. The caller resolves it (see [`OpenAiConfig::with_api_key_from_env`]).
    pub api_key: Option<String>,
    /// Bounds, sampling, headers, retries, streaming, prices.
    pub settings: ModelSettings,
}

impl OpenAiConfig {
    /// A configuration for `model` at `base_url`, no key, default settings (timeout
    /// [`super::limits::REQUEST_TIMEOUT_DEFAULT`], default retries, no streaming).
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiConfig {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            settings: ModelSettings::default(),
        }
    }

    /// This configuration with the API key `key`.
    pub fn with_api_key(mut self, key: impl Into<String>) -> OpenAiConfig {
        self.api_key = Some(key.into());
        self
    }

    /// This configuration with the API key read from the environment variable `var`. An unset
    /// variable is an error naming it (the key itself is never printed); an empty one means
    /// no key (a server without keys).
    pub fn with_api_key_from_env(self, var: &str) -> Result<OpenAiConfig, BrainError> {
        Ok(match api_key_from_env(var)? {
            Some(key) => self.with_api_key(key),
            None => self,
        })
    }

    /// This configuration with the request bound `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> OpenAiConfig {
        self.settings.timeout = timeout;
        self
    }

    /// This configuration with `max_tokens` set.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> OpenAiConfig {
        self.settings.max_tokens = Some(max_tokens);
        self
    }

    /// This configuration retrying by `retry`.
    pub fn with_retry(mut self, retry: RetryPolicy) -> OpenAiConfig {
        self.settings.retry = retry;
        self
    }

    /// This configuration streaming answers, or not.
    pub fn with_stream(mut self, stream: bool) -> OpenAiConfig {
        self.settings.stream = stream;
        self
    }

    /// This configuration with `settings`.
    pub fn with_settings(mut self, settings: ModelSettings) -> OpenAiConfig {
        self.settings = settings;
        self
    }
}

/// The key in the environment variable `var`: `Some` if set and not empty, `None` if set and
/// empty (a server without keys), an error naming the variable if unset or not Unicode.
pub fn api_key_from_env(var: &str) -> Result<Option<String>, BrainError> {
    match std::env::var(var) {
        Ok(key) if key.is_empty() => Ok(None),
        Ok(key) => Ok(Some(key)),
        Err(std::env::VarError::NotPresent) => Err(BrainError::InvalidConfig {
            detail: format!(
                "the environment variable {var} that should hold the API key is not set; set it (to an \
                 empty value for a server without keys)"
            ),
        }),
        Err(e) => Err(BrainError::InvalidConfig {
            detail: format!("failed to read the API key from the environment variable {var}: {e}"),
        }),
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.settings.timeout)
            .field("max_tokens", &self.settings.max_tokens)
            .field("stream", &self.settings.stream)
            .field("retries", &self.settings.retry.retries)
            .finish_non_exhaustive()
    }
}

/// A brain that asks an OpenAI-compatible chat-completions endpoint for each turn.
pub struct OpenAiBrain {
    http: HttpEndpoint,
    model: String,
    settings: ModelSettings,
}

impl OpenAiBrain {
    /// Checks `config` and builds the client. Refuses a base URL that is not `http` or `https`,
    /// an empty model, a zero timeout, more than four stop sequences, a key or extra header
    /// that cannot be a header value.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiBrain, BrainError> {
        let invalid = |detail: String| BrainError::InvalidConfig { detail };
        let endpoint = join_endpoint(&config.base_url, "chat/completions")?;
        if config.model.trim().is_empty() {
            return Err(invalid("the model name is empty".into()));
        }
        if config.settings.stop.len() > OPENAI_STOP_MAX {
            return Err(invalid(format!("more than {OPENAI_STOP_MAX} stop sequences")));
        }
        let mut headers = HeaderMap::new();
        match config.api_key.as_deref() {
            None | Some("") => {}
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    invalid("the API key holds a character not allowed in an HTTP header".into())
                })?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
        }
        let http = HttpEndpoint::new(endpoint, headers, &config.settings)?;
        Ok(OpenAiBrain { http, model: config.model, settings: config.settings })
    }

    /// The URL every request is posted to.
    pub fn endpoint(&self) -> &str {
        self.http.url().as_str()
    }

    /// The model name sent with every request.
    pub fn model(&self) -> &str {
        &self.model
    }
}

impl Brain for OpenAiBrain {
    fn turn<'a>(&'a self, request: TurnRequest<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let body = request::body(&self.model, &self.settings, &request);
            let input_tokens = tokens::request_tokens(&request);
            let completion = call::<stream::Assembly, _>(
                &self.http,
                &self.settings,
                &request,
                input_tokens,
                "openai",
                &body,
                parse_chat_completion,
            )
            .await?;
            // A server that reports no usage still spent tokens: account the estimate rather
            // than nothing, so budgets stay conservative.
            let mut usage = completion.usage.unwrap_or_else(|| Usage {
                input_tokens,
                output_tokens: tokens::assistant_tokens(&completion.message),
                ..Usage::default()
            });
            if usage.cost_micros.is_none() {
                usage.cost_micros = self.settings.prices.map(|p| p.cost_micros(&usage));
            }
            Ok(Turn { message: completion.message, usage, finish: completion.finish })
        })
    }
}

impl fmt::Debug for OpenAiBrain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiBrain")
            .field("endpoint", &self.http.url().as_str())
            .field("model", &self.model)
            .field("timeout", &self.http.timeout())
            .field("max_tokens", &self.settings.max_tokens)
            .field("stream", &self.settings.stream)
            .finish_non_exhaustive()
    }
}
