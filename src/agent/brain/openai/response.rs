//! Reading a chat completion body: pure, total, typed errors for every malformed answer.

use super::super::FinishReason;
use super::super::error::{BrainError, excerpt};
use super::super::limits::ERROR_BODY_EXCERPT_BYTES_MAX;
use super::super::message::{AssistantMessage, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// What a chat completion said, before the brain fills in what the server left out.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatCompletion {
    /// `choices[0].message`, tool call arguments parsed.
    pub message: AssistantMessage,
    /// `choices[0].finish_reason`, or inferred from the message when absent.
    pub finish: FinishReason,
    /// `usage`, if the server reported it.
    pub usage: Option<Usage>,
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
    /// Some gateways (OpenRouter) report the request's cost in currency units; read from the
    /// number's decimal text, never through a float.
    #[serde(default)]
    cost: Option<serde_json::Number>,
}

#[derive(Deserialize)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Reads a chat completion response body.
///
/// Lenient where servers differ harmlessly: `content` may be a string, `null` or an array of
/// text parts (joined); empty text is no text; a missing tool call id becomes `call_<index>`;
/// arguments may be a JSON string (parsed), an object, or absent or empty (`{}`); a missing
/// `finish_reason` is inferred. Strict where a wrong reading would mislead: a body that is not
/// JSON, no `choices`, an empty `choices`, a field of the wrong type (the error names its
/// path), duplicate tool call ids, arguments that are not valid JSON (the error names the call),
/// an error object instead of a completion, a refusal or a content filter stop.
pub fn parse_chat_completion(body: &[u8]) -> Result<ChatCompletion, BrainError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| BrainError::malformed(format!("the body is not JSON: {e}")))?;
    let Value::Object(object) = value else {
        return Err(BrainError::malformed(format!(
            "expected a JSON object, found {}",
            crate::tools::json_kind(&value)
        )));
    };
    if !object.contains_key("choices")
        && let Some(error) = object.get("error").filter(|e| !e.is_null())
    {
        return Err(BrainError::Provider { message: provider_message(error) });
    }
    let wire: WireResponse = serde_path_to_error::deserialize(Value::Object(object)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            BrainError::malformed(inner.to_string())
        } else {
            BrainError::malformed(format!("{path}: {inner}"))
        }
    })?;
    let Some(choice) = wire.choices.into_iter().next() else {
        return Err(BrainError::malformed("`choices` is empty"));
    };
    if let Some(refusal) = choice.message.refusal.filter(|r| !r.is_empty()) {
        return Err(BrainError::Refused { reason: excerpt(&refusal, ERROR_BODY_EXCERPT_BYTES_MAX) });
    }
    if choice.finish_reason.as_deref() == Some("content_filter") {
        return Err(BrainError::Refused {
            reason: "the provider's content filter stopped the output (finish_reason content_filter)".into(),
        });
    }
    let text = content_text(choice.message.content)?;
    let tool_calls = tool_calls(choice.message.tool_calls.unwrap_or_default())?;
    let message = AssistantMessage { text, tool_calls };
    let finish = match choice.finish_reason {
        Some(reason) => FinishReason::parse(&reason),
        None => FinishReason::inferred(&message),
    };
    Ok(ChatCompletion { message, finish, usage: wire.usage.map(usage) })
}

fn content_text(content: Option<Value>) -> Result<Option<String>, BrainError> {
    let text = match content {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => text,
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (i, part) in parts.iter().enumerate() {
                match part.get("text") {
                    Some(Value::String(t)) => text.push_str(t),
                    _ => {
                        return Err(BrainError::malformed(format!(
                            "choices[0].message.content[{i}]: expected a text part with a string `text`"
                        )));
                    }
                }
            }
            text
        }
        Some(other) => {
            return Err(BrainError::malformed(format!(
                "choices[0].message.content: expected a string, null or an array of text parts, found {}",
                crate::tools::json_kind(&other)
            )));
        }
    };
    Ok(if text.is_empty() { None } else { Some(text) })
}

fn tool_calls(wire: Vec<WireToolCall>) -> Result<Vec<ToolCall>, BrainError> {
    let mut ids = HashSet::new();
    let mut calls = Vec::with_capacity(wire.len());
    for (i, call) in wire.into_iter().enumerate() {
        let id = call.id.filter(|id| !id.is_empty()).unwrap_or_else(|| format!("call_{i}"));
        if !ids.insert(id.clone()) {
            return Err(BrainError::malformed(format!(
                "choices[0].message.tool_calls[{i}].id: the id {id:?} is used twice"
            )));
        }
        let name = call.function.name;
        let arguments = match call.function.arguments {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::String(text)) if text.trim().is_empty() => Value::Object(Map::new()),
            // Arguments that are not JSON are kept as the text the model wrote: the turn loop
            // answers the call with an error the model can correct.
            Some(Value::String(text)) => match serde_json::from_str::<Value>(&text) {
                Ok(value) => value,
                Err(_) => Value::String(text),
            },
            // Some servers send the arguments as JSON rather than as a string of it.
            Some(value) => value,
        };
        calls.push(ToolCall { id, name, arguments });
    }
    Ok(calls)
}

fn usage(wire: WireUsage) -> Usage {
    Usage {
        input_tokens: wire.prompt_tokens.unwrap_or(0),
        output_tokens: wire.completion_tokens.unwrap_or(0),
        cached_tokens: wire.prompt_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0),
        cache_write_tokens: 0,
        cost_micros: wire.cost.and_then(|c| number_micros(&c)),
    }
}

/// A JSON number of currency units as micro-units, from its decimal text (`0.000123`,
/// `1.5e-4`); `None` for a negative cost. Digits past the sixth decimal round up.
fn number_micros(number: &serde_json::Number) -> Option<u64> {
    if let Some(units) = number.as_u64() {
        return units.checked_mul(1_000_000);
    }
    let text = number.to_string();
    if text.starts_with('-') {
        return None;
    }
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (text.as_str(), 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    // value = digits · 10^(exponent - fraction.len()); micro-units shift it by 6.
    let shift = exponent - i32::try_from(fraction.len()).ok()? + 6;
    let digits: u128 = digits.trim_start_matches('0').parse().unwrap_or(0);
    let micros = if shift >= 0 {
        digits.checked_mul(10u128.checked_pow(u32::try_from(shift).ok()?)?)?
    } else {
        let divisor = 10u128.checked_pow(u32::try_from(-shift).ok()?).unwrap_or(u128::MAX);
        digits.div_ceil(divisor)
    };
    u64::try_from(micros).ok()
}

fn provider_message(error: &Value) -> String {
    let message = match error.get("message") {
        Some(Value::String(message)) => message.clone(),
        _ => error.to_string(),
    };
    excerpt(&message, ERROR_BODY_EXCERPT_BYTES_MAX)
}
