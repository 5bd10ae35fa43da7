//! Assembling a streamed chat completion (`stream: true`): text and tool-call deltas by
//! index, the finish reason, and the usage of the final chunk, into the body a non-streaming
//! answer would have had, which [`super::parse_chat_completion`] then reads by the same rules.

use super::super::call::Assembler;
use super::super::error::BrainError;
use super::super::http::SseEvent;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// A stream's chunks so far.
#[derive(Default)]
pub(crate) struct Assembly {
    text: String,
    refusal: String,
    calls: BTreeMap<u64, PartialCall>,
    finish: Option<Value>,
    usage: Option<Value>,
    error: Option<Value>,
    chunks: u64,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl Assembler for Assembly {
    /// Takes one event's data; `true` once the stream is done (`[DONE]`, or an error object).
    fn push(&mut self, event: &SseEvent) -> Result<bool, BrainError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| BrainError::malformed(format!("stream chunk {} is not JSON: {e}", self.chunks)))?;
        self.chunks += 1;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            self.error = Some(error.clone());
            return Ok(true);
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else {
            return Ok(false);
        };
        if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
            self.finish = Some(reason.clone());
        }
        let Some(delta) = choice.get("delta") else { return Ok(false) };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.text.push_str(text);
        }
        if let Some(text) = delta.get("refusal").and_then(Value::as_str) {
            self.refusal.push_str(text);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, call) in calls.iter().enumerate() {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(position as u64);
                let partial = self.calls.entry(index).or_default();
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    partial.id.push_str(id);
                }
                if let Some(function) = call.get("function") {
                    if let Some(name) = function.get("name").and_then(Value::as_str) {
                        partial.name.push_str(name);
                    }
                    if let Some(arguments) = function.get("arguments").and_then(Value::as_str) {
                        partial.arguments.push_str(arguments);
                    }
                }
            }
        }
        Ok(false)
    }

    /// The estimator's output tokens over what has arrived (a stream reports usage only at
    /// its end): four bytes a token, and eight per call as the estimator counts them.
    fn output_tokens(&self) -> u64 {
        let bytes =
            self.text.len() + self.calls.values().map(|c| c.name.len() + c.arguments.len()).sum::<usize>();
        (bytes as u64).div_ceil(4) + 8 * self.calls.len() as u64
    }

    /// The completion body the stream amounts to.
    fn into_body(self) -> Result<Vec<u8>, BrainError> {
        if let Some(error) = self.error {
            return Ok(json!({"error": error}).to_string().into_bytes());
        }
        let mut message = Map::new();
        message.insert("content".into(), Value::String(self.text));
        if !self.refusal.is_empty() {
            message.insert("refusal".into(), Value::String(self.refusal));
        }
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .into_values()
                .map(|c| {
                    let mut call =
                        json!({"type": "function", "function": {"name": c.name, "arguments": c.arguments}});
                    if !c.id.is_empty() {
                        call["id"] = Value::String(c.id);
                    }
                    call
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        let mut choice = json!({"index": 0, "message": message});
        if let Some(finish) = self.finish {
            choice["finish_reason"] = finish;
        }
        let mut body = json!({"choices": [choice]});
        if let Some(usage) = self.usage {
            body["usage"] = usage;
        }
        Ok(body.to_string().into_bytes())
    }
}
