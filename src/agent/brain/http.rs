//! The HTTP side the OpenAI-compatible and Anthropic brains share: one client per brain
//! (HTTP/1.1, rustls, no redirects, loopback bypassing proxies), one bounded exchange per
//! attempt, a server-sent-events reader for streams.

use super::error::{BrainError, excerpt};
use super::limits::{ERROR_BODY_EXCERPT_BYTES_MAX, EXTRA_HEADERS_MAX, RESPONSE_BYTES_MAX};
use super::retry::{Failure, parse_retry_after};
use super::settings::ModelSettings;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use reqwest::{Client, Url};
use serde_json::Value;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

/// Header names a brain sets itself; a configuration may not send its own.
pub const RESERVED_HEADERS: &[&str] =
    &["authorization", "x-api-key", "content-type", "content-length", "host", "anthropic-version", "accept"];

/// Installs `ring` as the process's TLS crypto provider unless one is installed already.
/// reqwest is built without a provider (`rustls-no-provider`), so every HTTP client in this
/// crate (the brains', the span exporter's) calls this before it is built.
pub fn install_tls_provider() {
    // An `Err` means a provider is installed already, which is what is needed.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A brain's connection to its endpoint.
pub(crate) struct HttpEndpoint {
    client: Client,
    endpoint: Url,
    headers: HeaderMap,
    timeout: Duration,
}

impl HttpEndpoint {
    /// Builds the client for `endpoint` with `headers` (the brain's own, sensitive ones marked)
    /// and the configuration's extra headers.
    pub(crate) fn new(
        endpoint: Url,
        mut headers: HeaderMap,
        settings: &ModelSettings,
    ) -> Result<HttpEndpoint, BrainError> {
        let invalid = |detail: String| BrainError::InvalidConfig { detail };
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(invalid(format!(
                "the base URL {:?} must start with http:// or https://",
                endpoint.as_str()
            )));
        }
        if settings.timeout.is_zero() {
            return Err(invalid("the request timeout is zero".into()));
        }
        if settings.connect_timeout.is_zero() {
            return Err(invalid("the connect timeout is zero".into()));
        }
        if settings.headers.len() > EXTRA_HEADERS_MAX {
            return Err(invalid(format!("more than {EXTRA_HEADERS_MAX} extra headers")));
        }
        for (name, value) in &settings.headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid(format!("the header name {name:?} is not a valid HTTP header name")))?;
            if RESERVED_HEADERS.contains(&header.as_str()) {
                return Err(invalid(format!("the header {name:?} is set by the brain itself")));
            }
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                invalid(format!("the value of the header {name:?} is not a valid header value"))
            })?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        install_tls_provider();
        let mut builder = Client::builder()
            .connect_timeout(settings.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("agentvisor/", env!("CARGO_PKG_VERSION")));
        if is_loopback(&endpoint) {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| invalid(format!("failed to build the HTTP client: {}", chain(&e))))?;
        Ok(HttpEndpoint { client, endpoint, headers, timeout: settings.timeout })
    }

    /// The URL requests are posted to.
    pub(crate) fn url(&self) -> &Url {
        &self.endpoint
    }

    /// The request bound.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Posts `body`, bounded by the timeout until the response head: a 2xx response to read
    /// on, or the failure (a non-2xx status with its excerpt and `Retry-After`).
    pub(crate) async fn post(&self, body: &Value) -> Result<reqwest::Response, Failure> {
        let post = self.client.post(self.endpoint.clone()).headers(self.headers.clone()).json(body);
        let sent = async {
            let mut response = post.send().await.map_err(|e| self.transport(&e))?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, SystemTime::now()));
            // Only the excerpt is kept, so only a little more than it is read.
            let (body, _) = read_body(&mut response, ERROR_BODY_EXCERPT_BYTES_MAX + 4)
                .await
                .map_err(|e| self.transport(&e))?;
            let text = String::from_utf8_lossy(&body);
            Err(Failure {
                error: BrainError::HttpStatus {
                    status: status.as_u16(),
                    body_excerpt: excerpt(text.trim(), ERROR_BODY_EXCERPT_BYTES_MAX),
                },
                retry_after,
            })
        };
        match tokio::time::timeout(self.timeout, sent).await {
            Ok(result) => result,
            Err(_) => Err(BrainError::Timeout { timeout: self.timeout }.into()),
        }
    }

    /// Posts `body` and reads the whole 2xx body, the exchange bounded by the timeout and the
    /// body by [`RESPONSE_BYTES_MAX`].
    pub(crate) async fn exchange(&self, body: &Value) -> Result<Vec<u8>, Failure> {
        let exchange = async {
            let mut response = self.post(body).await?;
            let (body, complete) =
                read_body(&mut response, RESPONSE_BYTES_MAX).await.map_err(|e| self.transport(&e))?;
            if !complete {
                return Err(BrainError::ResponseTooLarge { limit_bytes: RESPONSE_BYTES_MAX }.into());
            }
            Ok(body)
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(BrainError::Timeout { timeout: self.timeout }.into()),
        }
    }

    /// Reads a streamed 2xx response as server-sent events, handing each to `on_event` until
    /// it says the stream is done (`Ok(true)`) or the body ends. Each chunk must arrive
    /// within the timeout; the whole stream is bounded by [`RESPONSE_BYTES_MAX`]. A body that
    /// ends before `on_event` said done is a transport failure (the connection dropped).
    pub(crate) async fn read_events(
        &self,
        mut response: reqwest::Response,
        mut on_event: impl FnMut(SseEvent) -> Result<bool, BrainError>,
    ) -> Result<(), Failure> {
        let mut reader = SseReader::default();
        let mut total = 0usize;
        loop {
            let chunk = match tokio::time::timeout(self.timeout, response.chunk()).await {
                Err(_) => return Err(BrainError::Timeout { timeout: self.timeout }.into()),
                Ok(Err(e)) => return Err(self.transport(&e).into()),
                Ok(Ok(None)) => {
                    for event in reader.finish() {
                        if on_event(event)? {
                            return Ok(());
                        }
                    }
                    return Err(BrainError::Transport {
                        url: self.endpoint.to_string(),
                        detail: "the stream ended before the answer was complete".into(),
                    }
                    .into());
                }
                Ok(Ok(Some(chunk))) => chunk,
            };
            total += chunk.len();
            if total > RESPONSE_BYTES_MAX {
                return Err(BrainError::ResponseTooLarge { limit_bytes: RESPONSE_BYTES_MAX }.into());
            }
            for event in reader.push(&chunk) {
                if on_event(event)? {
                    return Ok(());
                }
            }
        }
    }

    pub(crate) fn transport(&self, error: &reqwest::Error) -> BrainError {
        if error.is_timeout() {
            return BrainError::Timeout { timeout: self.timeout };
        }
        BrainError::Transport { url: self.endpoint.to_string(), detail: chain(error) }
    }
}

/// One server-sent event: its `event:` name (if any) and its `data:` lines joined by `\n`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: Option<String>,
    pub(crate) data: String,
}

/// An incremental server-sent-events parser (the WHATWG rules this needs: `event:` and
/// `data:` fields, comments, `\n` or `\r\n` line ends, a blank line dispatching).
#[derive(Default)]
pub(crate) struct SseReader {
    line: Vec<u8>,
    current: SseEvent,
    has_data: bool,
}

impl SseReader {
    /// Feeds bytes; returns the events completed by them.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.line_done(&String::from_utf8_lossy(&line), &mut out);
            } else {
                self.line.push(b);
            }
        }
        out
    }

    /// The event left when the body ended without a final blank line.
    pub(crate) fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&String::from_utf8_lossy(&line), &mut out);
        }
        self.line_done("", &mut out);
        out
    }

    fn line_done(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(std::mem::take(&mut self.current));
            }
            self.current = SseEvent::default();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.current.event = Some(value.to_string()),
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }
}

/// Reads the body up to `limit` bytes; `false` if there was more.
///
/// Cancel safety: dropping it drops the partial body with the response.
pub(crate) async fn read_body(
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
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The endpoint `base_url` + `path` (a trailing `/` on the base is ignored), or why not.
pub(crate) fn join_endpoint(base_url: &str, path: &str) -> Result<Url, BrainError> {
    let joined = format!("{}/{path}", base_url.trim_end_matches('/'));
    Url::parse(&joined).map_err(|e| BrainError::InvalidConfig {
        detail: format!("the base URL {base_url:?} is not a URL: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_split_across_chunks() {
        let mut reader = SseReader::default();
        let mut events = reader.push(b"event: a\r\ndata: {\"x\"");
        assert!(events.is_empty());
        events.extend(reader.push(b": 1}\r\n\r\n: comment\n\ndata: one\ndata: two\n\ndata: [DONE]"));
        events.extend(reader.finish());
        let got: Vec<(Option<&str>, &str)> =
            events.iter().map(|e| (e.event.as_deref(), e.data.as_str())).collect();
        assert_eq!(got, [(Some("a"), "{\"x\": 1}"), (None, "one\ntwo"), (None, "[DONE]")]);
    }
}
