//! [`CodexAdapter`]: seats on Codex, through `codex exec … --json`.
//!
//! A fork runs `codex exec fork <source> --json <profile flags> -- <prompt>`: Codex reads the
//! source thread and starts a NEW thread from it. A start runs `codex exec --json <profile
//! flags> -- <prompt>`. A restore continues the seat's own thread: `codex exec resume <thread
//! id> --json <profile flags> -- <prompt>`. The profile's flags are `CliSettings::flags`
//! (model, sandbox, approval policy, extra arguments). The prompt comes last, after `--`, so a
//! prompt that begins with `-` is never read as a flag.
//!
//! Standard output is JSONL, one event per line; the new thread's id is the `thread_id` of the
//! FIRST `{"type": "thread.started", …}` event. Success needs exit status 0, every line to be
//! a JSON object, no `turn.failed` event, and that first `thread.started` event to
//! carry a `thread_id`.

use serde_json::{Value, json};

use crate::rig::{NativeId, SeatRuntime};

use super::command::{CommandOutput, run};
use super::error::{AdapterError, Attempt, excerpt};
use super::limits::OUTPUT_EXCERPT_BYTES_MAX;
use super::{BoxFuture, Realized, SeatAdapter, SeatLaunch, says_source_unknown};

const RUNTIME: SeatRuntime = SeatRuntime::Codex;

/// What Codex says on standard error (or in an `error` event) when a thread it was asked to
/// fork does not exist, in the forms seen so far: "thread <id> not found", "thread not
/// loaded: <id>", "no rollout found …", "no saved session found …". Matched ignoring case;
/// any text naming the source id together with "not found" counts too.
const SOURCE_UNKNOWN_PHRASES: [&str; 5] = [
    "thread not found",
    "thread not loaded",
    "no rollout found",
    "no saved session found",
    "session not found",
];

/// The event type that reports a failed turn, even when the exit status is 0.
const TURN_FAILED: &str = "turn.failed";

/// The event types whose messages explain a failed run. An `error` event alone does not fail
/// a run that exits 0: Codex also reports retried stream errors that way.
const FAILURE_EVENTS: [&str; 2] = [TURN_FAILED, "error"];

/// Starts seats on Codex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodexAdapter {
    /// The `codex` program: a path, or a name looked up on `PATH`.
    pub program: String,
}

impl Default for CodexAdapter {
    fn default() -> CodexAdapter {
        CodexAdapter { program: "codex".to_owned() }
    }
}

impl CodexAdapter {
    /// An adapter running `program` as `codex`.
    pub fn new(program: impl Into<String>) -> CodexAdapter {
        CodexAdapter { program: program.into() }
    }

    async fn launch(&self, seat: &SeatLaunch, attempt: Attempt) -> Result<Realized, AdapterError> {
        let mut args = vec!["exec".to_owned()];
        match &attempt {
            Attempt::Fork { source_id } => args.extend(["fork".to_owned(), source_id.to_string()]),
            Attempt::Restore { token } => args.extend(["resume".to_owned(), token.to_string()]),
            Attempt::Start => {}
        }
        args.push("--json".to_owned());
        args.extend(seat.flags.iter().cloned());
        args.extend(["--".to_owned(), seat.prompt.clone()]);
        let output = run(&seat.command(&self.program, args))
            .await
            .map_err(|error| AdapterError::from_command(RUNTIME, attempt.clone(), error))?;
        read_outcome(&output, attempt)
    }
}

impl SeatAdapter for CodexAdapter {
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

/// Reads a finished `codex exec` command's outcome.
fn read_outcome(output: &CommandOutput, attempt: Attempt) -> Result<Realized, AdapterError> {
    if !output.succeeded() {
        // Events may be cut short or mixed with other text on a failure; read what can be.
        let events: Vec<Value> =
            output.stdout.lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
        let reported = failure_text(&events, &FAILURE_EVENTS);
        if let Attempt::Fork { source_id } = &attempt {
            let unknown = says_source_unknown(&output.stderr, source_id, &SOURCE_UNKNOWN_PHRASES)
                || reported
                    .as_deref()
                    .is_some_and(|text| says_source_unknown(text, source_id, &SOURCE_UNKNOWN_PHRASES));
            if unknown {
                return Err(AdapterError::Resolve {
                    runtime: RUNTIME,
                    source_id: source_id.clone(),
                    stderr: output.stderr.clone(),
                    reported,
                });
            }
        }
        return Err(command_failed(output, attempt, reported));
    }
    let events = match parse_events(&output.stdout) {
        Ok(events) => events,
        Err(line) => {
            let reason = format!("line {line} of its event stream is not a JSON object");
            return Err(malformed(output, attempt, &reason));
        }
    };
    if let Some(reported) = failure_text(&events, &[TURN_FAILED]) {
        return Err(command_failed(output, attempt, Some(reported)));
    }
    let Some(started) = events.iter().find(|event| event_type(event) == Some("thread.started")) else {
        return Err(malformed(output, attempt, "its event stream has no thread.started event"));
    };
    let Some(token) = started.get("thread_id").and_then(Value::as_str).and_then(NativeId::from_token) else {
        return Err(malformed(output, attempt, "its first thread.started event has no thread_id"));
    };
    let summary = match &attempt {
        Attempt::Fork { source_id } if *source_id == token => {
            return Err(AdapterError::SourceTokenReturned { runtime: RUNTIME, source_id: source_id.clone() });
        }
        Attempt::Fork { source_id } => {
            format!("forked from source session {source_id} as new Codex thread {token}")
        }
        Attempt::Start => format!("started Codex thread {token} with a fresh conversation"),
        Attempt::Restore { token: own } if *own != token => {
            return Err(AdapterError::TokenChanged { runtime: RUNTIME, token: own.clone(), reported: token });
        }
        Attempt::Restore { .. } => format!("continued Codex thread {token} (the seat's own)"),
    };
    let detail = json!({
        "summary": summary,
        "thread_id": token.as_str(),
        "thread_started": started,
        "events": events.len(),
        "last_event": events.last(),
    });
    let usage = super::usage::codex(&output.stdout);
    Ok(Realized { token, detail, usage })
}

/// The events, one JSON object per non-blank line; on a line that is not one, its number
/// (from 1).
fn parse_events(stdout: &str) -> Result<Vec<Value>, usize> {
    stdout
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| match serde_json::from_str::<Value>(line) {
            Ok(event @ Value::Object(_)) => Ok(event),
            _ => Err(index + 1),
        })
        .collect()
}

fn event_type(event: &Value) -> Option<&str> {
    event.get("type").and_then(Value::as_str)
}

/// The messages of the events of the given `kinds` (`error`'s `message`, `turn.failed`'s
/// `error.message`), joined, if there are any.
fn failure_text(events: &[Value], kinds: &[&str]) -> Option<String> {
    let messages: Vec<String> = events
        .iter()
        .filter(|event| event_type(event).is_some_and(|kind| kinds.contains(&kind)))
        .map(|event| {
            event
                .get("message")
                .or_else(|| event.get("error").and_then(|error| error.get("message")))
                .and_then(Value::as_str)
                .map_or_else(|| event.to_string(), str::to_owned)
        })
        .collect();
    (!messages.is_empty()).then(|| excerpt(&messages.join("; "), OUTPUT_EXCERPT_BYTES_MAX))
}

fn command_failed(output: &CommandOutput, attempt: Attempt, reported: Option<String>) -> AdapterError {
    AdapterError::command_failed(RUNTIME, output, attempt, reported)
}

fn malformed(output: &CommandOutput, attempt: Attempt, reason: &str) -> AdapterError {
    AdapterError::malformed(RUNTIME, output, attempt, reason)
}
