//! [`ClaudeCodeAdapter`]: seats on Claude Code, through `claude -p … --output-format json`.
//!
//! A fork runs `claude -p --output-format json <profile flags> --resume <source> --fork-session
//! --session-id <new> -- <prompt>`: Claude Code reads the source conversation and writes a NEW
//! one under the id we chose before launch. A start runs `claude -p --output-format json
//! <profile flags> --session-id <new> -- <prompt>`. A restore continues the seat's own session:
//! `claude -p --output-format json <profile flags> --resume <seat token> -- <prompt>`. The
//! profile's flags are `CliSettings::flags` (model, permission mode, tools, max turns, extra
//! arguments). The prompt comes last, after `--`, so a prompt that begins with `-` is never
//! read as a flag.
//!
//! The outcome is read from the JSON result on standard output (`is_error`, `subtype`,
//! `session_id`), never from the exit code alone: success needs exit status 0, `is_error ==
//! false`, `subtype == "success"` and a `session_id`.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::rig::{NativeId, SeatRuntime};

use super::command::{CommandOutput, run};
use super::error::{AdapterError, Attempt, excerpt};
use super::limits::OUTPUT_EXCERPT_BYTES_MAX;
use super::{BoxFuture, Realized, SeatAdapter, SeatLaunch, says_source_unknown};

const RUNTIME: SeatRuntime = SeatRuntime::ClaudeCode;

/// What Claude Code says, on standard error or in its result, when `--resume` names a session
/// it does not have: "No conversation found with session ID: <id>". Matched ignoring case;
/// any text naming the source id together with "not found" counts too.
const SOURCE_UNKNOWN_PHRASES: [&str; 1] = ["no conversation found"];

/// Starts seats on Claude Code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaudeCodeAdapter {
    /// The `claude` program: a path, or a name looked up on `PATH`.
    pub program: String,
}

impl Default for ClaudeCodeAdapter {
    fn default() -> ClaudeCodeAdapter {
        ClaudeCodeAdapter { program: "claude".to_owned() }
    }
}

impl ClaudeCodeAdapter {
    /// An adapter running `program` as `claude`.
    pub fn new(program: impl Into<String>) -> ClaudeCodeAdapter {
        ClaudeCodeAdapter { program: program.into() }
    }

    async fn launch(&self, seat: &SeatLaunch, attempt: Attempt) -> Result<Realized, AdapterError> {
        let mut args = vec!["-p".to_owned(), "--output-format".to_owned(), "json".to_owned()];
        args.extend(seat.flags.iter().cloned());
        // A new session's id is chosen before launch, so it is known even if the output cannot
        // be read; a restore continues the seat's own.
        let requested = match &attempt {
            Attempt::Fork { source_id } => {
                args.extend(["--resume".to_owned(), source_id.to_string(), "--fork-session".to_owned()]);
                Uuid::now_v7().to_string()
            }
            Attempt::Start => Uuid::now_v7().to_string(),
            Attempt::Restore { token } => {
                args.extend(["--resume".to_owned(), token.to_string()]);
                token.to_string()
            }
        };
        if !matches!(attempt, Attempt::Restore { .. }) {
            args.extend(["--session-id".to_owned(), requested.clone()]);
        }
        args.extend(["--".to_owned(), seat.prompt.clone()]);
        let output = run(&seat.command(&self.program, args))
            .await
            .map_err(|error| AdapterError::from_command(RUNTIME, attempt.clone(), error))?;
        read_outcome(&output, attempt, &requested)
    }
}

impl SeatAdapter for ClaudeCodeAdapter {
    fn runtime(&self) -> SeatRuntime {
        RUNTIME
    }

    fn fork<'a>(
        &'a self,
        seat: &'a SeatLaunch,
        source: &'a NativeId,
    ) -> BoxFuture<'a, Result<Realized, AdapterError>> {
        Box::pin(self.launch(seat, Attempt::Fork { source_id: source.clone() }))
    }

    fn start<'a>(&'a self, seat: &'a SeatLaunch) -> BoxFuture<'a, Result<Realized, AdapterError>> {
        Box::pin(self.launch(seat, Attempt::Start))
    }

    fn restore<'a>(
        &'a self,
        seat: &'a SeatLaunch,
        token: &'a NativeId,
    ) -> BoxFuture<'a, Result<Realized, AdapterError>> {
        Box::pin(self.launch(seat, Attempt::Restore { token: token.clone() }))
    }
}

/// Reads a finished `claude` command's outcome.
fn read_outcome(output: &CommandOutput, attempt: Attempt, requested: &str) -> Result<Realized, AdapterError> {
    let result = parse_result(&output.stdout);
    let reported = result.as_ref().and_then(reported_text);
    let marked_success =
        result.as_ref().is_some_and(|result| result.get("is_error") == Some(&Value::Bool(false)));
    if let Attempt::Fork { source_id } = &attempt {
        let unknown = says_source_unknown(&output.stderr, source_id, &SOURCE_UNKNOWN_PHRASES)
            || reported
                .as_deref()
                .is_some_and(|text| says_source_unknown(text, source_id, &SOURCE_UNKNOWN_PHRASES));
        if unknown && !(output.succeeded() && marked_success) {
            return Err(AdapterError::Resolve {
                runtime: RUNTIME,
                source_id: source_id.clone(),
                stderr: output.stderr.clone(),
                reported,
            });
        }
    }
    let Some(result) = result else {
        return Err(if output.succeeded() {
            malformed(output, attempt, "its standard output is not a JSON result")
        } else {
            command_failed(output, attempt, None)
        });
    };
    let Some(is_error) = result.get("is_error").and_then(Value::as_bool) else {
        return Err(malformed(output, attempt, "its JSON result has no is_error flag"));
    };
    let subtype = result.get("subtype").and_then(Value::as_str);
    if is_error || subtype != Some("success") || !output.succeeded() {
        let reported = reported.or_else(|| subtype.map(str::to_owned));
        return Err(command_failed(output, attempt, reported));
    }
    let Some(token) = result.get("session_id").and_then(Value::as_str).and_then(NativeId::from_token) else {
        return Err(malformed(output, attempt, "its JSON result names no session_id"));
    };
    realized(token, attempt, requested, result)
}

/// The realized seat, once the result says success and names a session.
fn realized(
    token: NativeId,
    attempt: Attempt,
    requested: &str,
    result: Value,
) -> Result<Realized, AdapterError> {
    let summary = match &attempt {
        Attempt::Fork { source_id } if *source_id == token => {
            return Err(AdapterError::SourceTokenReturned { runtime: RUNTIME, source_id: source_id.clone() });
        }
        Attempt::Fork { source_id } => {
            format!("forked from source session {source_id} as new Claude Code session {token}")
        }
        Attempt::Start => format!("started Claude Code session {token} with a fresh conversation"),
        Attempt::Restore { token: own } if *own != token => {
            return Err(AdapterError::TokenChanged { runtime: RUNTIME, token: own.clone(), reported: token });
        }
        Attempt::Restore { .. } => format!("continued Claude Code session {token} (the seat's own)"),
    };
    let usage = super::usage::claude(&result);
    let matches = token.as_str() == requested;
    let mut detail = json!({
        "summary": summary,
        "requested_session_id": requested,
        "session_id": token.as_str(),
        "session_id_matches_request": matches,
        "result": result,
    });
    if !matches {
        detail["note"] = Value::String(format!(
            "claude reported session {token}, not the requested {requested}; the reported id \
             is the seat's token"
        ));
    }
    Ok(Realized { token, detail, usage })
}

/// The JSON result on standard output: one object, or (in verbose output) an array of
/// messages whose last `"type": "result"` object is the result.
fn parse_result(stdout: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(stdout.trim()).ok()? {
        result @ Value::Object(_) => Some(result),
        Value::Array(messages) => messages
            .into_iter()
            .rev()
            .find(|message| message.get("type").and_then(Value::as_str) == Some("result")),
        _ => None,
    }
}

/// Claude Code's own account in a result: its `result` text and any `errors`.
fn reported_text(result: &Value) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    if let Some(text) = result.get("result").and_then(Value::as_str) {
        parts.push(text);
    }
    if let Some(errors) = result.get("errors").and_then(Value::as_array) {
        parts.extend(errors.iter().filter_map(Value::as_str));
    }
    (!parts.is_empty()).then(|| excerpt(&parts.join("; "), OUTPUT_EXCERPT_BYTES_MAX))
}

fn command_failed(output: &CommandOutput, attempt: Attempt, reported: Option<String>) -> AdapterError {
    AdapterError::command_failed(RUNTIME, output, attempt, reported)
}

fn malformed(output: &CommandOutput, attempt: Attempt, reason: &str) -> AdapterError {
    AdapterError::malformed(RUNTIME, output, attempt, reason)
}
