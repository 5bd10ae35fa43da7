//! The console's token check: with `--token`, every request carries it, as
//! `Authorization: Bearer TOKEN` or as `?token=TOKEN` (an `EventSource` cannot set headers).

use super::Console;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Refuses a request without the console's token (401), when it has one.
pub(crate) async fn require_token(
    State(console): State<Arc<Console>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = &console.token else { return next.run(request).await };
    let bearer = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let query = request
        .uri()
        .query()
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("token="));
    if bearer == Some(token.as_str()) || query == Some(token.as_str()) {
        return next.run(request).await;
    }
    (StatusCode::UNAUTHORIZED, "this console needs its token: add ?token=TOKEN to the address")
        .into_response()
}
