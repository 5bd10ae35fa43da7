//! The request body of a chat completion, built from a [`TurnRequest`].

use super::super::ToolSpec;
use super::super::TurnRequest;
use super::super::message::{AssistantMessage, Message};
use serde_json::{Map, Value, json};

/// What a runtime note is prefixed with: the OpenAI format has no role for it, and a `system`
/// message in mid-conversation is refused by several local servers' chat templates, so a note
/// travels as user input marked as the runtime's.
pub const NOTE_PREFIX: &str = "[runtime note] ";

/// The JSON body: `model`, `messages` (the system slot first, when not empty), `tools` (when
/// any) and `max_tokens` (when set).
pub(super) fn body(model: &str, max_tokens: Option<u32>, request: &TurnRequest<'_>) -> Value {
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
    if let Some(max_tokens) = max_tokens {
        body.insert("max_tokens".into(), Value::from(max_tokens));
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
                    // The format carries arguments as a JSON string.
                    "function": {"name": call.name, "arguments": call.arguments.to_string()},
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(out)
}
