//! Assembling a streamed Messages API answer: `message_start` (input usage),
//! `content_block_start`/`content_block_delta` (`text_delta`, `input_json_delta`)/
//! `content_block_stop`, `message_delta` (stop reason, output usage), `message_stop`, `ping`
//! and `error`, into the body a non-streaming answer would have had, which
//! [`super::parse_message`] then reads by the same rules.

use super::super::call::Assembler;
use super::super::error::BrainError;
use super::super::http::SseEvent;
use super::response::WireUsage;
use serde_json::{Value, json};
use std::collections::BTreeMap;

#[derive(Default)]
pub(crate) struct Assembly {
    blocks: BTreeMap<u64, Block>,
    stop_reason: Option<Value>,
    usage: WireUsage,
    error: Option<Value>,
    output_bytes: usize,
    reported_output: Option<u64>,
}

struct Block {
    start: Value,
    text: String,
    json: String,
}

impl Assembler for Assembly {
    /// Takes one event; `true` once the stream is done (`message_stop` or `error`).
    fn push(&mut self, event: &SseEvent) -> Result<bool, BrainError> {
        let (event, data) = (event.event.as_deref(), event.data.as_str());
        if data.trim().is_empty() {
            return Ok(false);
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|e| BrainError::malformed(format!("a stream event is not JSON: {e}")))?;
        let kind = value.get("type").and_then(Value::as_str).or(event).unwrap_or_default().to_string();
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind.as_str() {
            "message_start" => {
                if let Some(usage) = value.pointer("/message/usage") {
                    self.merge_usage(usage)?;
                }
            }
            "content_block_start" => {
                let start = value.get("content_block").cloned().unwrap_or(Value::Null);
                self.blocks.insert(index, Block { start, text: String::new(), json: String::new() });
            }
            "content_block_delta" => {
                let block = self.blocks.get_mut(&index).ok_or_else(|| {
                    BrainError::malformed(format!(
                        "a content_block_delta for block {index}, which never started"
                    ))
                })?;
                let delta = value.get("delta").cloned().unwrap_or(Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or_default();
                        self.output_bytes += text.len();
                        block.text.push_str(text);
                    }
                    Some("input_json_delta") => {
                        let part = delta.get("partial_json").and_then(Value::as_str).unwrap_or_default();
                        self.output_bytes += part.len();
                        block.json.push_str(part);
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").filter(|r| !r.is_null()) {
                    self.stop_reason = Some(reason.clone());
                }
                if let Some(usage) = value.get("usage") {
                    self.merge_usage(usage)?;
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                self.error = Some(value.get("error").cloned().unwrap_or(value));
                return Ok(true);
            }
            _ => {}
        }
        Ok(false)
    }

    fn output_tokens(&self) -> u64 {
        let estimated = (self.output_bytes as u64).div_ceil(4);
        self.reported_output.unwrap_or(0).max(estimated)
    }

    fn into_body(self) -> Result<Vec<u8>, BrainError> {
        self.into_message()
    }
}

impl Assembly {
    fn merge_usage(&mut self, usage: &Value) -> Result<(), BrainError> {
        let wire: WireUsage = serde_json::from_value(usage.clone())
            .map_err(|e| BrainError::malformed(format!("a stream event's usage: {e}")))?;
        let u = &mut self.usage;
        u.input_tokens = wire.input_tokens.or(u.input_tokens);
        u.output_tokens = wire.output_tokens.or(u.output_tokens);
        u.cache_creation_input_tokens = wire.cache_creation_input_tokens.or(u.cache_creation_input_tokens);
        u.cache_read_input_tokens = wire.cache_read_input_tokens.or(u.cache_read_input_tokens);
        if wire.output_tokens.is_some() {
            self.reported_output = wire.output_tokens;
        }
        Ok(())
    }

    /// The message body the stream amounts to (output tokens so far, in
    /// [`Assembler::output_tokens`], are the larger of the stream's own count and the estimate
    /// over what arrived: `message_start` reports a token or two before anything is written).
    fn into_message(self) -> Result<Vec<u8>, BrainError> {
        if let Some(error) = self.error {
            return Ok(json!({"type": "error", "error": error}).to_string().into_bytes());
        }
        let mut content = Vec::new();
        for (index, block) in self.blocks {
            let mut start = block.start;
            match start.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let mut text = start.get("text").and_then(Value::as_str).unwrap_or_default().to_string();
                    text.push_str(&block.text);
                    start["text"] = Value::String(text);
                }
                Some("tool_use") if !block.json.trim().is_empty() => {
                    let input: Value = serde_json::from_str(&block.json).unwrap_or(Value::String(block.json));
                    start["input"] = input;
                }
                Some(_) => {}
                None => {
                    return Err(BrainError::malformed(format!("content block {index} has no type")));
                }
            }
            content.push(start);
        }
        let u = self.usage;
        let usage = json!({
            "input_tokens": u.input_tokens.unwrap_or(0),
            "output_tokens": u.output_tokens.unwrap_or(0),
            "cache_creation_input_tokens": u.cache_creation_input_tokens.unwrap_or(0),
            "cache_read_input_tokens": u.cache_read_input_tokens.unwrap_or(0),
        });
        let mut body = json!({"type": "message", "role": "assistant", "content": content, "usage": usage});
        if let Some(reason) = self.stop_reason {
            body["stop_reason"] = reason;
        }
        Ok(body.to_string().into_bytes())
    }
}
