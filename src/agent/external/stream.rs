//! Reading a session's standard output: Claude Code's `stream-json` and Codex's `--json`
//! events, one JSON object per line, decoded into what the supervisor acts on.
//!
//! - Claude Code: `system`/`init` names the session; each `assistant` message is a turn
//!   (its `text` and `tool_use` blocks; its `usage`, counted once per message id, since the
//!   stream may repeat a message per content block); the `user` message after it carries the
//!   `tool_result`s of that turn's calls; `result` ends the session (`is_error`, `subtype`,
//!   `result`, `total_cost_usd`).
//! - Codex: `thread.started` names the thread; items (`agent_message`, `command_execution`,
//!   `mcp_tool_call`, …) accumulate until `turn.completed`, whose `usage` is the turn's;
//!   `turn.failed` and a final `error` fail the session. The result is the last agent
//!   message.

use crate::agent::brain::Usage;
use crate::agent::config::ExternalRuntime;
use crate::agent::telemetry::{CallError, CallRecord};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// What one line of output means.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    /// The runtime's own id for the session (Claude Code's session id, Codex's thread id).
    Session(String),
    /// Usage to charge now, as it arrives.
    Usage(Usage),
    /// A turn is complete: its text, its calls with their answers, and its usage.
    Turn {
        /// The assistant text.
        text: Option<String>,
        /// The tool calls, with their results where the runtime reported them.
        calls: Vec<CallRecord>,
        /// What the turn used.
        usage: Usage,
    },
    /// The session ended.
    End(SessionEnd),
}

/// How a session ended, as its runtime reported it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionEnd {
    /// The final text.
    pub result: Option<String>,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// The whole session's cost, when the runtime reports one (Claude Code does).
    pub cost_micros: Option<u64>,
}

/// A turn being assembled.
#[derive(Default)]
struct Pending {
    text: Vec<String>,
    calls: Vec<CallRecord>,
    call_ids: Vec<String>,
    usage: Usage,
    open: bool,
}

impl Pending {
    fn take(&mut self) -> Option<StreamEvent> {
        if !std::mem::take(&mut self.open) {
            return None;
        }
        let text = std::mem::take(&mut self.text);
        self.call_ids.clear();
        Some(StreamEvent::Turn {
            text: (!text.is_empty()).then(|| text.join("\n")),
            calls: std::mem::take(&mut self.calls),
            usage: std::mem::take(&mut self.usage),
        })
    }
}

/// Decodes one session's output, line by line.
pub struct Decoder {
    runtime: ExternalRuntime,
    pending: Pending,
    /// Claude Code message ids already charged.
    charged: BTreeSet<String>,
    /// Codex: the last agent message, the session's result.
    last_message: Option<String>,
    /// Codex: the failure a `turn.failed` or `error` reported.
    failure: Option<String>,
    ended: bool,
}

impl Decoder {
    /// A decoder for `runtime`'s stream.
    pub fn new(runtime: ExternalRuntime) -> Decoder {
        Decoder {
            runtime,
            pending: Pending::default(),
            charged: BTreeSet::new(),
            last_message: None,
            failure: None,
            ended: false,
        }
    }

    /// Whether the stream reported its end.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// What `line` means. A line that is not a JSON object is an error naming it; an event of
    /// a type the decoder does not know is skipped (runtimes add event types).
    pub fn line(&mut self, line: &str) -> Result<Vec<StreamEvent>, String> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(Vec::new());
        }
        let event: Value = serde_json::from_str(line).map_err(|e| {
            format!("an output line is not a JSON event ({e}): {}", crate::tools::quote(line))
        })?;
        if !event.is_object() {
            return Err(format!("an output line is not a JSON object: {}", crate::tools::quote(line)));
        }
        Ok(match self.runtime {
            ExternalRuntime::ClaudeCode => self.claude(&event),
            ExternalRuntime::Codex => self.codex(&event),
        })
    }

    /// The end to report when the output ended without the runtime reporting one.
    pub fn finish_without_end(&mut self) -> Vec<StreamEvent> {
        let mut out: Vec<StreamEvent> = self.pending.take().into_iter().collect();
        if self.runtime == ExternalRuntime::Codex && !self.ended {
            self.ended = true;
            out.push(StreamEvent::End(SessionEnd {
                result: self.last_message.take(),
                error: self.failure.take(),
                cost_micros: None,
            }));
        }
        out
    }

    fn claude(&mut self, event: &Value) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        match str_at(event, "type") {
            Some("system") if str_at(event, "subtype") == Some("init") => {
                out.extend(str_at(event, "session_id").map(|id| StreamEvent::Session(id.to_owned())));
            }
            Some("assistant") => {
                out.extend(self.pending.take());
                let message = &event["message"];
                self.pending.open = true;
                for block in message["content"].as_array().into_iter().flatten() {
                    match str_at(block, "type") {
                        Some("text") => self.pending.text.extend(str_at(block, "text").map(str::to_owned)),
                        Some("tool_use") => {
                            self.pending.call_ids.push(str_at(block, "id").unwrap_or_default().to_owned());
                            self.pending.calls.push(CallRecord {
                                tool: str_at(block, "name").unwrap_or_default().to_owned(),
                                arguments: block.get("input").cloned().unwrap_or(Value::Null),
                                result: None,
                                error: None,
                                calls: Vec::new(),
                            });
                        }
                        _ => {}
                    }
                }
                let usage = claude_usage(&message["usage"]);
                let id = str_at(message, "id").map(str::to_owned);
                let first = id.is_none_or(|id| self.charged.insert(id));
                if first && usage != Usage::default() {
                    self.pending.usage = self.pending.usage.plus(&usage);
                    out.push(StreamEvent::Usage(usage));
                }
            }
            Some("user") => {
                for block in event["message"]["content"].as_array().into_iter().flatten() {
                    if str_at(block, "type") != Some("tool_result") {
                        continue;
                    }
                    let id = str_at(block, "tool_use_id").unwrap_or_default();
                    let Some(at) = self.pending.call_ids.iter().position(|c| c == id) else { continue };
                    let content = block.get("content").cloned().unwrap_or(Value::Null);
                    let call = &mut self.pending.calls[at];
                    if block.get("is_error") == Some(&Value::Bool(true)) {
                        let message = content.as_str().map_or_else(|| content.to_string(), str::to_owned);
                        call.error = Some(CallError { code: "tool_error".into(), message });
                    } else {
                        call.result = Some(content);
                    }
                }
            }
            Some("result") => {
                out.extend(self.pending.take());
                self.ended = true;
                let is_error = event.get("is_error") != Some(&Value::Bool(false))
                    || str_at(event, "subtype") != Some("success");
                let result = str_at(event, "result").map(str::to_owned);
                let error = is_error.then(|| {
                    let mut parts: Vec<String> =
                        str_at(event, "subtype").map(|s| s.to_owned()).into_iter().collect();
                    parts.extend(result.clone());
                    parts.extend(
                        event["errors"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .map(str::to_owned),
                    );
                    parts.join(": ")
                });
                let cost_micros = reported_cost(event);
                out.push(StreamEvent::End(SessionEnd { result, error, cost_micros }));
            }
            _ => {}
        }
        out
    }

    fn codex(&mut self, event: &Value) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        match str_at(event, "type") {
            Some("thread.started") => {
                out.extend(str_at(event, "thread_id").map(|id| StreamEvent::Session(id.to_owned())));
            }
            Some("turn.started") => self.pending.open = true,
            Some("item.completed") => {
                self.pending.open = true;
                let item = &event["item"];
                match str_at(item, "type") {
                    Some("agent_message") => {
                        if let Some(text) = str_at(item, "text") {
                            self.pending.text.push(text.to_owned());
                            self.last_message = Some(text.to_owned());
                        }
                    }
                    Some("command_execution") => self.pending.calls.push(codex_call(
                        "command_execution",
                        json!({"command": item["command"]}),
                        item,
                        json!({"output": item["aggregated_output"], "exit_code": item["exit_code"]}),
                    )),
                    Some("mcp_tool_call") => {
                        let tool = format!(
                            "{}.{}",
                            str_at(item, "server").unwrap_or("mcp"),
                            str_at(item, "tool").unwrap_or("tool")
                        );
                        let arguments = item.get("arguments").cloned().unwrap_or(Value::Null);
                        let result = item.get("result").cloned().unwrap_or(Value::Null);
                        self.pending.calls.push(codex_call(&tool, arguments, item, result));
                    }
                    Some(kind @ ("file_change" | "web_search")) => {
                        self.pending.calls.push(codex_call(kind, item.clone(), item, Value::Null));
                    }
                    _ => {}
                }
            }
            Some("turn.completed") => {
                let usage = codex_usage(&event["usage"]);
                self.pending.open = true;
                self.pending.usage = usage;
                if usage != Usage::default() {
                    out.push(StreamEvent::Usage(usage));
                }
                out.extend(self.pending.take());
            }
            Some("turn.failed") => {
                out.extend(self.pending.take());
                self.failure = Some(
                    str_at(&event["error"], "message")
                        .unwrap_or("the turn failed (no message given)")
                        .to_owned(),
                );
            }
            Some("error") => {
                self.failure = str_at(event, "message").map(str::to_owned).or(self.failure.take());
            }
            _ => {}
        }
        out
    }
}

fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn count(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The cost a Claude Code `result` reports (`total_cost_usd`), in micro-dollars rounded up.
pub(crate) fn reported_cost(result: &Value) -> Option<u64> {
    result
        .get("total_cost_usd")
        .and_then(Value::as_f64)
        .and_then(|c| crate::agent::money::reported_usd_micros(&c.to_string()).ok())
}

/// Claude Code's `usage`: plain input, cache reads and cache writes are separate counts there;
/// here input counts all three, as the HTTP brains count it.
pub(crate) fn claude_usage(usage: &Value) -> Usage {
    let cached = count(usage, "cache_read_input_tokens");
    let written = count(usage, "cache_creation_input_tokens");
    Usage {
        input_tokens: count(usage, "input_tokens").saturating_add(cached).saturating_add(written),
        output_tokens: count(usage, "output_tokens"),
        cached_tokens: cached,
        cache_write_tokens: written,
        cost_micros: None,
    }
}

/// Codex's `usage`: `input_tokens` already includes `cached_input_tokens`.
fn codex_usage(usage: &Value) -> Usage {
    Usage {
        input_tokens: count(usage, "input_tokens"),
        output_tokens: count(usage, "output_tokens"),
        cached_tokens: count(usage, "cached_input_tokens"),
        cache_write_tokens: 0,
        cost_micros: None,
    }
}

fn codex_call(tool: &str, arguments: Value, item: &Value, result: Value) -> CallRecord {
    let failed = str_at(item, "status") == Some("failed");
    CallRecord {
        tool: tool.to_owned(),
        arguments,
        error: failed.then(|| CallError { code: "tool_error".into(), message: result.to_string() }),
        result: (!failed).then_some(result),
        calls: Vec::new(),
    }
}
