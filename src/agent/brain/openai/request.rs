//! The request body of a chat completion, built from a [`TurnRequest`].

use super::super::ToolSpec;
use super::super::TurnRequest;
use super::super::message::{AssistantMessage, Message};
use super::super::settings::ModelSettings;
use serde_json::{Map, Value, json};

/// What a runtime note is prefixed with: the OpenAI format has no role for it, and a `system`
/// message in mid-conversation is refused by several local servers' chat templates, so a note
/// travels as user input marked as the runtime's.
pub const NOTE_PREFIX: &str = "[runtime note] ";

/// The JSON body: `model`, `messages` (the system slot first, when not empty), `tools` (when
/// any), the sampling settings that are set (`max_tokens`, `temperature`, `top_p`, `stop`),
/// and `stream: true` with `stream_options: {include_usage: true}` when streaming.
pub(super) fn body(model: &str, settings: &ModelSettings, request: &TurnRequest<'_>) -> Value {
    let mut messages = Vec::with_capacity(request.window.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    messages.extend(request.window.messages().map(message));
    let mut body = Map::new();
    body.insert("model".into(), Value::from(model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(request.tools.iter().map(ToolSpec::to_openai).collect()));
    }
    if let Some(max_tokens) = settings.max_tokens {
        body.insert("max_tokens".into(), Value::from(max_tokens));
    }
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".into(), Value::from(temperature));
    }
    if let Some(top_p) = settings.top_p {
        body.insert("top_p".into(), Value::from(top_p));
    }
    if !settings.stop.is_empty() {
        body.insert("stop".into(), Value::from(settings.stop.clone()));
    }
    if settings.stream {
        body.insert("stream".into(), Value::Bool(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

fn message(message: &Message) -> Value {
    match message {
        Message::User { text } => json!({"role": "user", "content": text}),
        Message::Assistant(m) => assistant(m),
        Message::Tool { tool_call_id, text } => {
            json!({"role": "tool", "tool_call_id": tool_call_id, "content": text})
        }
        Message::Note { text } => json!({"role": "user", "content": format!("{NOTE_PREFIX}{text}")}),
    }
}

fn assistant(message: &AssistantMessage) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), Value::from("assistant"));
    out.insert("content".into(), message.text.as_deref().map_or(Value::Null, Value::from));
    if !message.tool_calls.is_empty() {
        let calls = message
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    // The format carries arguments as a JSON string; arguments that were not
                    // JSON are kept as the text the model wrote, and sent back as it was.
                    "function": {"name": call.name, "arguments": arguments_text(&call.arguments)},
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(out)
}

/// A call's arguments as the JSON text the format carries: the text itself for arguments the
/// model wrote that were not JSON (kept as a string, see `docs/brains.md`), compact JSON
/// otherwise.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}
