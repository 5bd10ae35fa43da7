//! [`OpenAiBrain`]: a client of any OpenAI-compatible chat-completions endpoint.
//!
//! One turn is one `POST {base_url}/chat/completions` (HTTP/1.1, rustls for `https`): the body
//! is built from the [`TurnRequest`] (the system slot first, as a `system` message made for
//! this request only), and the answer is read by [`parse_chat_completion`], a pure function that
//! turns every malformed body into a typed [`BrainError`]. The whole exchange, from connecting to
//! the last byte, is bounded by the configured timeout, and the body by
//! [`RESPONSE_BYTES_MAX`]. Redirects are not followed (a redirected `POST` loses its body);
//! requests to a loopback host bypass any proxy from the environment.

mod request;
mod response;

pub use request::NOTE_PREFIX;
pub use response::{ChatCompletion, parse_chat_completion};

use super::error::{BrainError, excerpt};
use super::limits::{ERROR_BODY_EXCERPT_BYTES_MAX, REQUEST_TIMEOUT_DEFAULT, RESPONSE_BYTES_MAX};
use super::message::Usage;
use super::{Brain, Turn, TurnFuture, TurnRequest, tokens};
use reqwest::header::{AUTHORIZATION, HeaderValue};
use reqwest::{Client, Url};
use serde_json::Value;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

/// How to reach a model: endpoint, model name, key, bounds.
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
    /// The bound on one request, from connecting to the last byte of the answer.
    pub timeout: Duration,
    /// `max_tokens` for the answer; `None` leaves it to the server.
    pub max_tokens: Option<u32>,
}

impl OpenAiConfig {
    /// A configuration for `model` at `base_url`, no key, the default timeout
    /// ([`REQUEST_TIMEOUT_DEFAULT`]), no `max_tokens`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiConfig {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: REQUEST_TIMEOUT_DEFAULT,
            max_tokens: None,
        }
    }

    /// This configuration with the API key `key`.
    pub fn with_api_key(mut self, key: impl Into<String>) -> OpenAiConfig {
        self.api_key = Some(key.into());
        self
    }

    /// This configuration with the API key read from the environment variable `var`. An unset
    /// or empty variable is an error naming it (the key itself is never printed).
    pub fn with_api_key_from_env(self, var: &str) -> Result<OpenAiConfig, BrainError> {
        match std::env::var(var) {
            Ok(key) if !key.is_empty() => Ok(self.with_api_key(key)),
            Ok(_) => Err(BrainError::InvalidConfig {
                detail: format!("the environment variable {var} that should hold the API key is empty"),
            }),
            Err(e) => Err(BrainError::InvalidConfig {
                detail: format!("failed to read the API key from the environment variable {var}: {e}"),
            }),
        }
    }

    /// This configuration with the request bound `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> OpenAiConfig {
        self.timeout = timeout;
        self
    }

    /// This configuration with `max_tokens` set.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> OpenAiConfig {
        self.max_tokens = Some(max_tokens);
        self
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

/// A brain that asks an OpenAI-compatible chat-completions endpoint for each turn.
pub struct OpenAiBrain {
    client: Client,
    endpoint: Url,
    model: String,
    authorization: Option<HeaderValue>,
    timeout: Duration,
    max_tokens: Option<u32>,
}

impl OpenAiBrain {
    /// Checks `config` and builds the client. Refuses a base URL that is not `http` or `https`,
    /// an empty model, a zero timeout and a key that cannot be a header value.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiBrain, BrainError> {
        let invalid = |detail: String| BrainError::InvalidConfig { detail };
        let joined = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        let endpoint = Url::parse(&joined)
            .map_err(|e| invalid(format!("the base URL {:?} is not a URL: {e}", config.base_url)))?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(invalid(format!(
                "the base URL {:?} must start with http:// or https://",
                config.base_url
            )));
        }
        if config.model.trim().is_empty() {
            return Err(invalid("the model name is empty".into()));
        }
        if config.timeout.is_zero() {
            return Err(invalid("the request timeout is zero".into()));
        }
        let authorization = match config.api_key.as_deref() {
            None | Some("") => None,
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    invalid("the API key holds a character not allowed in an HTTP header".into())
                })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        // reqwest is built without a crypto provider; use ring unless the host installed one.
        // An `Err` means a provider is installed already, which is what is needed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = Client::builder()
            .connect_timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("agentvisor/", env!("CARGO_PKG_VERSION")));
        if is_loopback(&endpoint) {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| invalid(format!("failed to build the HTTP client: {}", chain(&e))))?;
        Ok(OpenAiBrain {
            client,
            endpoint,
            model: config.model,
            authorization,
            timeout: config.timeout,
            max_tokens: config.max_tokens,
        })
    }

    /// The URL every request is posted to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// The model name sent with every request.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Posts `body` and returns the 2xx response body, bounded in time and size.
    async fn exchange(&self, body: &Value) -> Result<Vec<u8>, BrainError> {
        let mut post = self.client.post(self.endpoint.clone()).json(body);
        if let Some(authorization) = &self.authorization {
            post = post.header(AUTHORIZATION, authorization.clone());
        }
        let exchange = async {
            let mut response = post.send().await.map_err(|e| self.transport(&e))?;
            let status = response.status();
            if !status.is_success() {
                // Only the excerpt is kept, so only a little more than it is read.
                let (body, _) = read_body(&mut response, ERROR_BODY_EXCERPT_BYTES_MAX + 4)
                    .await
                    .map_err(|e| self.transport(&e))?;
                let text = String::from_utf8_lossy(&body);
                return Err(BrainError::HttpStatus {
                    status: status.as_u16(),
                    body_excerpt: excerpt(text.trim(), ERROR_BODY_EXCERPT_BYTES_MAX),
                });
            }
            let (body, complete) =
                read_body(&mut response, RESPONSE_BYTES_MAX).await.map_err(|e| self.transport(&e))?;
            if !complete {
                return Err(BrainError::ResponseTooLarge { limit_bytes: RESPONSE_BYTES_MAX });
            }
            Ok(body)
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(BrainError::Timeout { timeout: self.timeout }),
        }
    }

    fn transport(&self, error: &reqwest::Error) -> BrainError {
        if error.is_timeout() {
            return BrainError::Timeout { timeout: self.timeout };
        }
        BrainError::Transport { url: self.endpoint.to_string(), detail: chain(error) }
    }
}

impl Brain for OpenAiBrain {
    fn turn<'a>(&'a self, request: TurnRequest<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let body = request::body(&self.model, self.max_tokens, &request);
            let bytes = self.exchange(&body).await?;
            let completion = parse_chat_completion(&bytes)?;
            // A server that reports no usage still spent tokens: account the estimate rather
            // than nothing, so budgets stay conservative.
            let usage = completion.usage.unwrap_or_else(|| Usage {
                input_tokens: tokens::request_tokens(&request),
                output_tokens: tokens::assistant_tokens(&completion.message),
                cached_tokens: 0,
                cost_micros: None,
            });
            Ok(Turn { message: completion.message, usage, finish: completion.finish })
        })
    }
}

impl fmt::Debug for OpenAiBrain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiBrain")
            .field("endpoint", &self.endpoint.as_str())
            .field("model", &self.model)
            .field("authorization", &self.authorization.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

/// Reads the body up to `limit` bytes; `false` if there was more.
///
/// Cancel safety: dropping it drops the partial body with the response.
async fn read_body(
    response: &mut reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}

/// Whether the endpoint is on this machine (`localhost`, `127.0.0.0/8`, `::1`).
fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some(host) if host.eq_ignore_ascii_case("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// An error and its causes, `: `-separated.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
