//! One turn's model call, as both HTTP brains make it: attempts under the retry policy, each
//! reported to the observer, the answer read whole or assembled from its stream.

use super::TurnRequest;
use super::error::BrainError;
use super::http::{HttpEndpoint, SseEvent};
use super::observe::Progress;
use super::retry::{Failure, Retrier};
use super::settings::ModelSettings;
use serde_json::Value;

/// Builds a streamed answer from its events into the body a non-streaming answer would have.
pub(crate) trait Assembler: Default {
    /// Takes one event; `true` once the stream is done.
    fn push(&mut self, event: &SseEvent) -> Result<bool, BrainError>;
    /// Output tokens so far.
    fn output_tokens(&self) -> u64;
    /// The whole-answer body.
    fn into_body(self) -> Result<Vec<u8>, BrainError>;
}

/// Posts `body` until an attempt answers or the retry policy gives up; the answer is read by
/// `parse`, from the body or from what a stream assembled with `A` amounts to.
pub(crate) async fn call<A: Assembler, T>(
    http: &HttpEndpoint,
    settings: &ModelSettings,
    request: &TurnRequest<'_>,
    input_tokens: u64,
    label: &'static str,
    body: &Value,
    parse: fn(&[u8]) -> Result<T, BrainError>,
) -> Result<T, BrainError> {
    let mut retrier = Retrier::new(&settings.retry, request.observer, label);
    loop {
        let progress = Progress {
            attempt: retrier.attempt(),
            elapsed: retrier.elapsed(),
            output_tokens: 0,
            input_tokens,
        };
        match attempt::<A, T>(http, settings.stream, request, progress, body, parse).await {
            Ok(answer) => return Ok(answer),
            Err(failure) => retrier.after(failure).await?,
        }
    }
}

async fn attempt<A: Assembler, T>(
    http: &HttpEndpoint,
    stream: bool,
    request: &TurnRequest<'_>,
    progress: Progress,
    body: &Value,
    parse: fn(&[u8]) -> Result<T, BrainError>,
) -> Result<T, Failure> {
    if let Some(observer) = request.observer {
        observer.progress(&progress);
    }
    if !stream {
        let bytes = http.exchange(body).await?;
        return Ok(parse(&bytes)?);
    }
    let response = http.post(body).await?;
    let mut assembly = A::default();
    let started = tokio::time::Instant::now();
    http.read_events(response, |event| {
        let done = assembly.push(&event)?;
        if let Some(observer) = request.observer {
            observer.progress(&Progress {
                elapsed: progress.elapsed + started.elapsed(),
                output_tokens: assembly.output_tokens(),
                ..progress
            });
        }
        Ok(done)
    })
    .await?;
    Ok(parse(&assembly.into_body()?)?)
}
