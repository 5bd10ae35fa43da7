//! The console's HTTP surface: the page and its assets, and the JSON endpoints it reads
//! (documented in docs/console.md, stable for other tools).

use super::Console;
use super::auth::require_token;
use super::control::{ControlFailure, ControlRequest, act};
use crate::cli::inspect::inspect_json;
use crate::cli::output::{open_view, resolve_pid};
use agentvisor::agent::telemetry::{EVENTS_FILE, EventFileReader};
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream::{self, Stream};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

const INDEX_HTML: &str = include_str!("assets/index.html");
const CONSOLE_JS: &str = include_str!("assets/console.js");
const CONSOLE_CSS: &str = include_str!("assets/console.css");

/// The console's routes, every one behind the token check.
pub(crate) fn router(console: Arc<Console>) -> Router {
    Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }))
        .route("/console.js", get(|| async { asset("text/javascript; charset=utf-8", CONSOLE_JS) }))
        .route("/console.css", get(|| async { asset("text/css; charset=utf-8", CONSOLE_CSS) }))
        .route("/api/console", get(about))
        .route("/api/snapshot", get(snapshot))
        .route("/api/stream", get(stream_events))
        .route("/api/process/{pid}", get(process))
        .route("/api/conversation/{pid}", get(conversation))
        .route("/api/control/{pid}", post(control))
        .layer(axum::middleware::from_fn_with_state(console.clone(), require_token))
        .with_state(console)
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

fn refused(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    json_response(status, &json!({ "error": { "code": code, "message": message.into() } }))
}

/// `GET /api/console`: what this console serves.
async fn about(State(console): State<Arc<Console>>) -> Response {
    json_response(
        StatusCode::OK,
        &json!({
            "state": console.state.display().to_string(),
            "control": console.control,
            "version": env!("CARGO_PKG_VERSION"),
        }),
    )
}

/// `GET /api/snapshot`: the newest snapshot.
async fn snapshot(State(console): State<Arc<Console>>) -> Response {
    let text = console.frames.snapshot.borrow().clone();
    ([(header::CONTENT_TYPE, "application/json")], text.to_string()).into_response()
}

/// `GET /api/stream`: server-sent events — `snapshot` (the whole snapshot, at once and on
/// every change), `records` (agent event records appended to the file, `[{line, record}]`),
/// and `resync` (this page fell behind the records and should read its conversation again).
async fn stream_events(
    State(console): State<Arc<Console>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut snapshots = console.frames.snapshot.clone();
    snapshots.mark_changed();
    let records = console.frames.records.subscribe();
    let events = stream::unfold((snapshots, records), |(mut snapshots, mut records)| async move {
        let event = tokio::select! {
            changed = snapshots.changed() => {
                changed.ok()?;
                let text = snapshots.borrow_and_update().clone();
                Event::default().event("snapshot").data(text.as_str())
            }
            batch = records.recv() => match batch {
                Ok(batch) => Event::default().event("records").data(Value::from(batch.as_slice().to_vec()).to_string()),
                Err(RecvError::Lagged(_)) => Event::default().event("resync").data("{}"),
                Err(RecvError::Closed) => return None,
            },
        };
        Some((Ok(event), (snapshots, records)))
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// `GET /api/process/{pid}`: the process as `agentvisor inspect --json` prints it.
async fn process(State(console): State<Arc<Console>>, Path(pid): Path<String>) -> Response {
    let state = console.state.clone();
    let found = tokio::task::spawn_blocking(move || -> anyhow::Result<Option<Value>> {
        let view = open_view(&state)?;
        let pid = resolve_pid(&view.rt, &pid)?;
        let Some(row) = view.rt.process(pid)? else { return Ok(None) };
        inspect_json(&state, &view, &row).map(Some)
    })
    .await;
    match found {
        Ok(Ok(Some(value))) => json_response(StatusCode::OK, &value),
        Ok(Ok(None)) => refused(StatusCode::NOT_FOUND, "unknown_process", "no such process"),
        Ok(Err(e)) => refused(StatusCode::NOT_FOUND, "unknown_process", format!("{e:#}")),
        Err(e) => refused(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    }
}

/// `GET /api/conversation/{pid}`: every agent event record of one process, `[{line, record}]`
/// in file order — its incarnations' self-contained streams.
async fn conversation(State(console): State<Arc<Console>>, Path(pid): Path<String>) -> Response {
    let path = console.state.join(EVENTS_FILE);
    let read = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<Value>> {
        if !path.exists() {
            return Ok(Vec::new());
        }
        let mut reader = EventFileReader::new(&path);
        let mut lines = reader.read_new()?;
        lines.extend(reader.finish()?);
        let mut out = Vec::new();
        for line in lines.into_iter().filter(|l| l.record.pid == pid) {
            let record: Value = serde_json::from_str(&line.text)?;
            out.push(json!({ "line": line.line, "record": record }));
        }
        Ok(out)
    })
    .await;
    match read {
        Ok(Ok(records)) => json_response(StatusCode::OK, &Value::from(records)),
        Ok(Err(e)) => refused(StatusCode::INTERNAL_SERVER_ERROR, "events_unreadable", format!("{e:#}")),
        Err(e) => refused(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    }
}

/// `POST /api/control/{pid}` with `{action, reason?}`: a host action, with `--control` only.
async fn control(State(console): State<Arc<Console>>, Path(pid): Path<String>, body: String) -> Response {
    if !console.control {
        return refused(
            StatusCode::FORBIDDEN,
            "control_disabled",
            "this console is read-only: start it with --control to act on processes",
        );
    }
    let request: ControlRequest = match serde_json::from_str(&body) {
        Ok(request) => request,
        Err(e) => {
            return refused(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("the body must be {{\"action\", \"reason\"?}}: {e}"),
            );
        }
    };
    match act(&console.state, &pid, &request).await {
        Ok(answer) => json_response(StatusCode::OK, &answer),
        Err(ControlFailure::Refused(answer)) => {
            json_response(StatusCode::CONFLICT, &json!({ "error": answer }))
        }
        Err(ControlFailure::BadRequest(message)) => refused(StatusCode::BAD_REQUEST, "bad_request", message),
        Err(ControlFailure::Internal(message)) => {
            refused(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
        }
    }
}
