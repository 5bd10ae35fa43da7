//! The Messages API request body, built from a [`TurnRequest`].

use super::super::ToolSpec;
use super::super::TurnRequest;
use super::super::message::Message;
use super::super::settings::ModelSettings;
use crate::agent::brain::openai::NOTE_PREFIX;
use serde_json::{Map, Value, json};

/// The JSON body: `model`, `max_tokens`, `system` (one text block, cache-marked), `messages`
/// (consecutive messages of one role merged into one, tool results as `tool_result` blocks of
/// a user message), `tools` (the last cache-marked), the sampling settings that are set, and
/// `stream` when streaming.
pub(super) fn body(
    model: &str,
    max_tokens: u32,
    settings: &ModelSettings,
    request: &TurnRequest<'_>,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(model));
    body.insert("max_tokens".into(), Value::from(max_tokens));
    if !request.system.is_empty() {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]),
        );
    }
    body.insert("messages".into(), Value::Array(messages(request)));
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request.tools.iter().map(tool).collect();
        if let Some(Value::Object(last)) = tools.last_mut() {
            last.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".into(), Value::from(temperature));
    }
    if let Some(top_p) = settings.top_p {
        body.insert("top_p".into(), Value::from(top_p));
    }
    if !settings.stop.is_empty() {
        body.insert("stop_sequences".into(), Value::from(settings.stop.clone()));
    }
    if settings.stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    Value::Object(body)
}

fn messages(request: &TurnRequest<'_>) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in request.window.messages() {
        let (role, block) = match message {
            // The API refuses empty text blocks.
            Message::User { text } if text.is_empty() => continue,
            Message::User { text } => ("user", vec![text_block(text)]),
            Message::Note { text } => ("user", vec![text_block(&format!("{NOTE_PREFIX}{text}"))]),
            Message::Tool { tool_call_id, text } => {
                ("user", vec![json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": text})])
            }
            Message::Assistant(m) => {
                let mut blocks = Vec::new();
                if let Some(text) = m.text.as_deref().filter(|t| !t.is_empty()) {
                    blocks.push(text_block(text));
                }
                for call in &m.tool_calls {
                    // `input` must be an object: arguments the model wrote that were not JSON
                    // (kept as their text) go back as an empty object; the call's result says
                    // what was wrong.
                    let input = if call.arguments.is_object() { call.arguments.clone() } else { json!({}) };
                    blocks
                        .push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
                ("assistant", blocks)
            }
        };
        if block.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, blocks)) if *last == role => blocks.extend(block),
            _ => out.push((role, block)),
        }
    }
    out.into_iter()
        .map(|(role, mut blocks)| {
            // Tool results come first in a user message, as the API requires.
            if role == "user" {
                blocks.sort_by_key(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"));
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn tool(spec: &ToolSpec) -> Value {
    json!({"name": spec.name, "description": spec.description, "input_schema": spec.parameters})
}
