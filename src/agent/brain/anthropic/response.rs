//! Reading a Messages API answer: pure, total, typed errors for every malformed answer.

use super::super::FinishReason;
use super::super::error::{BrainError, excerpt};
use super::super::limits::ERROR_BODY_EXCERPT_BYTES_MAX;
use super::super::message::{AssistantMessage, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;

/// What a Messages API answer said.
#[derive(Clone, Debug, PartialEq)]
pub struct AnthropicMessage {
    /// The text blocks joined, and the `tool_use` blocks as calls.
    pub message: AssistantMessage,
    /// `stop_reason`: `end_turn` and `stop_sequence` are `stop`, `tool_use` is `tool_calls`,
    /// `max_tokens` is `length`; absent, inferred from the message.
    pub finish: FinishReason,
    /// `usage`, if reported: input counts plain, cache-read and cache-written tokens together.
    pub usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Wire {
    content: Vec<WireBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Value>,
}

/// The `usage` object of a message (and of a stream's `message_start` and `message_delta`).
#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0).saturating_add(read).saturating_add(write),
            output_tokens: self.output_tokens.unwrap_or(0),
            cached_tokens: read,
            cache_write_tokens: write,
            cost_micros: None,
        }
    }
}

/// Reads a Messages API response body. Strict where a wrong reading would mislead: not JSON,
/// no `content`, a block of the wrong shape (named by its index), duplicate `tool_use` ids,
/// an error object, `stop_reason: refusal`. Unknown block types (`thinking`, …) are skipped.
pub fn parse_message(body: &[u8]) -> Result<AnthropicMessage, BrainError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| BrainError::malformed(format!("the body is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(BrainError::malformed("expected a JSON object"));
    }
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        let message = match error.get("message") {
            Some(Value::String(message)) => message.clone(),
            _ => error.to_string(),
        };
        return Err(BrainError::Provider { message: excerpt(&message, ERROR_BODY_EXCERPT_BYTES_MAX) });
    }
    let wire: Wire = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        BrainError::malformed(format!("{path}: {}", e.into_inner()))
    })?;
    if wire.stop_reason.as_deref() == Some("refusal") {
        return Err(BrainError::Refused {
            reason: "the model declined to answer (stop_reason refusal)".into(),
        });
    }
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut ids = HashSet::new();
    for (i, block) in wire.content.into_iter().enumerate() {
        match block.kind.as_str() {
            "text" => text.push_str(block.text.as_deref().unwrap_or_default()),
            "tool_use" => {
                let (Some(id), Some(name)) = (block.id, block.name) else {
                    return Err(BrainError::malformed(format!(
                        "content[{i}]: a tool_use block needs `id` and `name`"
                    )));
                };
                if !ids.insert(id.clone()) {
                    return Err(BrainError::malformed(format!(
                        "content[{i}].id: the id {id:?} is used twice"
                    )));
                }
                let arguments = match block.input {
                    None | Some(Value::Null) => Value::Object(Default::default()),
                    Some(input) => input,
                };
                calls.push(ToolCall { id, name, arguments });
            }
            _ => {}
        }
    }
    let message = AssistantMessage { text: (!text.is_empty()).then_some(text), tool_calls: calls };
    let finish = match wire.stop_reason.as_deref() {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_string()),
        None => FinishReason::inferred(&message),
    };
    Ok(AnthropicMessage { message, finish, usage: wire.usage.map(WireUsage::usage) })
}
