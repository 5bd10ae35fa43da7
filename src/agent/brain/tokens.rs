//! The token estimator: how many tokens a text, a message, a window or a request is, without a
//! tokenizer.
//!
//! # The rule
//!
//! - A text is `ceil(bytes / 4)` tokens ([`BYTES_PER_TOKEN`]). Four bytes per token is the
//!   usual average of BPE tokenizers (cl100k, o200k, Llama 3, Qwen) on English prose and on
//!   ordinary code.
//! - A message adds [`MESSAGE_OVERHEAD_TOKENS`] for its role and delimiters; the system slot,
//!   when not empty, counts as one message.
//! - A tool call adds [`TOOL_CALL_OVERHEAD_TOKENS`] to its name and its arguments (counted as
//!   compact JSON text); a tool result counts as a message whose text is the result.
//! - A tool spec adds [`TOOL_SPEC_OVERHEAD_TOKENS`] to its name, description and parameter
//!   schema (compact JSON).
//! - A request adds [`REPLY_PRIMING_TOKENS`], the tokens that open the model's reply.
//!
//! # Why an estimate
//!
//! The runtime must decide when a window needs compaction before it sends it, for any model,
//! local or hosted, without shipping each model's tokenizer. The estimate is deterministic and
//! cheap (a length, never a scan of the text), which also makes scripted usage reproducible.
//! Real usage comes from the provider when it reports it.
//!
//! # Where it errs
//!
//! - Under-counts dense or unusual text: JSON with short keys, minified code, UUIDs, base64 and
//!   hashes run nearer two or three bytes per token; so does text in languages whose words a
//!   tokenizer splits finely. Counting bytes rather than characters softens this for
//!   non-Latin scripts (a CJK character is three bytes, so 0.75 tokens, where tokenizers
//!   spend one to two).
//! - Over-counts long common English words and repeated whitespace, which tokenizers merge.
//! - Ignores each provider's own framing of tools and messages, which the fixed overheads
//!   only approximate (chosen on the high side of what the OpenAI chat format spends).
//!
//! Callers that must not overflow a window (compaction) should therefore keep a margin below
//! the window limit rather than aim at it exactly.

use super::ToolSpec;
use super::TurnRequest;
use super::message::{AssistantMessage, Message, ToolCall};
use super::window::WindowView;
use serde_json::Value;

/// Bytes of UTF-8 text per token, the estimate's one ratio.
pub const BYTES_PER_TOKEN: u64 = 4;

/// Tokens each message spends on its role and delimiters (the OpenAI chat format spends three
/// or four).
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// Tokens each tool call spends beyond its name and arguments: its id, type and framing.
pub const TOOL_CALL_OVERHEAD_TOKENS: u64 = 8;

/// Tokens each offered tool spends beyond its name, description and schema: its framing in
/// the tool list.
pub const TOOL_SPEC_OVERHEAD_TOKENS: u64 = 8;

/// Tokens that open the model's reply in every request.
pub const REPLY_PRIMING_TOKENS: u64 = 3;

/// The tokens of a text: `ceil(bytes / 4)`; zero for the empty text.
pub fn text_tokens(text: &str) -> u64 {
    bytes_tokens(text.len() as u64)
}

/// The tokens of a JSON value, counted as its compact serialization.
pub fn json_tokens(value: &Value) -> u64 {
    bytes_tokens(json_len(value))
}

/// The tokens of one tool call.
pub fn tool_call_tokens(call: &ToolCall) -> u64 {
    TOOL_CALL_OVERHEAD_TOKENS + text_tokens(&call.name) + json_tokens(&call.arguments)
}

/// The tokens of one offered tool.
pub fn tool_spec_tokens(spec: &ToolSpec) -> u64 {
    TOOL_SPEC_OVERHEAD_TOKENS
        + text_tokens(&spec.name)
        + text_tokens(&spec.description)
        + json_tokens(&spec.parameters)
}

/// The tokens of an assistant message: what a turn writes.
pub fn assistant_tokens(message: &AssistantMessage) -> u64 {
    MESSAGE_OVERHEAD_TOKENS
        + message.text.as_deref().map_or(0, text_tokens)
        + message.tool_calls.iter().map(tool_call_tokens).sum::<u64>()
}

/// The tokens of one message of a window.
pub fn message_tokens(message: &Message) -> u64 {
    match message {
        Message::Assistant(m) => assistant_tokens(m),
        Message::User { text } | Message::Note { text } => MESSAGE_OVERHEAD_TOKENS + text_tokens(text),
        Message::Tool { tool_call_id, text } => {
            MESSAGE_OVERHEAD_TOKENS + text_tokens(tool_call_id) + text_tokens(text)
        }
    }
}

/// The tokens of a whole window: its running total where it keeps one.
pub fn window_tokens(window: &dyn WindowView) -> u64 {
    window.tokens()
}

/// A message weighs its estimated tokens in a window's running total.
impl crate::agent::window::Weigh for Message {
    fn weight(&self) -> u64 {
        message_tokens(self)
    }
}

/// The tokens of the system slot: nothing when empty, otherwise one message.
pub fn system_tokens(system: &str) -> u64 {
    if system.is_empty() { 0 } else { MESSAGE_OVERHEAD_TOKENS + text_tokens(system) }
}

/// The tokens one request reads: the system slot, the window, the offered tools and the
/// reply's opening.
pub fn request_tokens(request: &TurnRequest<'_>) -> u64 {
    system_tokens(request.system)
        + window_tokens(request.window)
        + request.tools.iter().map(tool_spec_tokens).sum::<u64>()
        + REPLY_PRIMING_TOKENS
}

fn bytes_tokens(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// The length of a value's compact JSON, without building the string.
pub(crate) fn json_len(value: &Value) -> u64 {
    struct Counter(u64);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` fails only if the writer does, and this one never does.
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => value.to_string().len() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_rounds_up_and_counts_bytes() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abc"), 1);
        assert_eq!(text_tokens("abcd"), 1);
        assert_eq!(text_tokens("abcde"), 2);
        // Three CJK characters are nine bytes.
        assert_eq!(text_tokens("日本語"), 3);
    }

    #[test]
    fn json_counts_compact_serialization() {
        let value = json!({"path": "/tmp/x", "n": 3});
        assert_eq!(json_len(&value), value.to_string().len() as u64);
    }
}
